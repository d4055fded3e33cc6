"""Entity names compared by meaning on the real MiniLM embedder: linking, synonym edges, the caches."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from hippograph.graph.names import NameVectors, Synonyms
from hippograph.graph.ppr import PageRankGraph
from hippograph.vectors.embedders import OnnxMiniLMEmbedder

NAMES = {"e1": "Acme Corporation", "e2": "Dana Kim", "e3": "Lisbon", "e4": "Acme"}
#: "Acme" and "Acme Corporation" score 0.79 (int8 MiniLM) to 0.82 (fp32); unrelated names below 0.25
NEAR = 0.7


class Counting:
    """The real embedder, counting the texts it is asked to embed."""

    def __init__(self, inner: OnnxMiniLMEmbedder) -> None:
        self.inner, self.name, self.texts = inner, inner.name, 0

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts += len(texts)
        return self.inner.embed(texts)


@pytest.fixture(scope="module")
def minilm() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder()


def test_a_phrase_links_the_entity_it_means(minilm: OnnxMiniLMEmbedder) -> None:
    names = NameVectors(minilm)
    three = {k: v for k, v in NAMES.items() if k != "e4"}
    assert names.link(["Acme", "the weather"], three, NEAR) == ["e1"]
    assert names.link(["Acme"], three, 0.95) == []  # close, not that close
    assert names.link([], three, 0.8) == [] and names.link(["Acme"], {}, 0.8) == []


def test_names_are_embedded_once(minilm: OnnxMiniLMEmbedder) -> None:
    counting = Counting(minilm)
    names = NameVectors(counting, capacity=3)  # type: ignore[arg-type]
    names.link(["ACME"], NAMES, 0.8)
    assert counting.texts == 5
    names.link(["ACME"], NAMES, 0.8)  # the names' matrix is kept, and the phrase's vector
    assert counting.texts == 5
    names.synonym_edges(NAMES, 0.8)
    assert counting.texts == 5
    assert len(names._vectors) == 3  # bounded: the least recently used names are dropped


def test_synonym_edges_tie_near_names_only(minilm: OnnxMiniLMEmbedder) -> None:
    names = NameVectors(minilm)
    edges = names.synonym_edges(NAMES, NEAR)
    assert [(a, b) for a, b, _ in edges] == [("e1", "e4")] and NEAR <= edges[0][2] < 1
    assert names.synonym_edges(NAMES, 0.9) == []
    assert names.synonym_edges({"e1": "Acme"}, 0.8) == []


def test_synonym_edges_carry_rank_to_a_near_synonym_mention(minilm: OnnxMiniLMEmbedder) -> None:
    graph = PageRankGraph([("ep0", "e1"), ("ep1", "e4"), ("ep2", "e2")], [], NAMES)
    assert [ep for ep, _ in graph.rank_episodes({"e1": 1.0}, 5)] == ["ep0"]
    synonyms = Synonyms(NameVectors(minilm), NEAR)
    ranked = [ep for ep, _ in graph.rank_episodes({"e1": 1.0}, 5, synonyms=synonyms)]
    assert ranked == ["ep0", "ep1"]
    assert graph.rank_episodes({"e1": 1.0}, 5, synonyms=synonyms) == graph.rank_episodes({"e1": 1.0}, 5,
                                                                                          synonyms=synonyms)
