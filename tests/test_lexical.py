"""The lexical side on the real stores and models: lemmas indexed and searched (irregular forms the
stemmer misses), taken from the extractor's parse at ingest, put back by a reindex and removed by a
delete; and pseudo-relevance feedback, which finds a passage that shares no word with the query."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from hippograph.bench.common import bench_service
from hippograph.config import Settings, VectorSettings
from hippograph.models import DocumentIn, MemoryKind, MessageIn, Role
from hippograph.planner.plans import SINGLE_HOP
from hippograph.service import Hippograph
from hippograph.vectors.base import VectorFilter

T0 = datetime(2024, 5, 1, 18, 0, tzinfo=UTC)
TALK = ["I bought two mice for the lab last week.", "The weather is grey and my tea is cold.",
        "We watched a film about sharks on Sunday."]


def _with_talk(lemmas: bool) -> Iterator[Hippograph]:
    with bench_service(None, Settings(vectors=VectorSettings(lemmas=lemmas))) as svc:
        svc.remember("ana", "s1", None, [MessageIn(id=f"m{i}", role=Role.user, content=text,
                                                   timestamp=T0 + timedelta(minutes=i))
                                         for i, text in enumerate(TALK)])
        yield svc


@pytest.fixture(scope="module")
def lemmas() -> Iterator[Hippograph]:
    yield from _with_talk(True)


@pytest.fixture(scope="module")
def stems() -> Iterator[Hippograph]:
    yield from _with_talk(False)


def lexical(svc: Hippograph, query: str) -> list[str]:
    flt = VectorFilter(user_id="ana", kinds=[MemoryKind.episode])
    return [h.source_ids[0] for h in svc.indexer.search(flt, query, 5, mode="lexical")]


def test_ingest_takes_the_lemmas_from_the_extractors_parse(lemmas: Hippograph) -> None:
    # the lemma pipeline has not been loaded: the messages were tagged once, by the extractor
    assert lemmas.indexer.lemmas is not None and lemmas.indexer.lemmas._nlp is None


def test_irregular_forms_are_found_only_with_lemmas(lemmas: Hippograph, stems: Hippograph) -> None:
    assert lexical(lemmas, "buy mouse") == ["m0"]
    assert lexical(stems, "buy mouse") == []
    assert lexical(lemmas, "bought mice") == ["m0"]  # the words themselves still match
    assert lemmas.indexer.query_words("watch a shark film") == "watch a shark film"  # regular forms add nothing


def test_a_query_in_irregular_forms_finds_the_dictionary_form(lemmas: Hippograph) -> None:
    lemmas.remember("ana", "s2", None, [MessageIn(id="m9", role=Role.user, content="Which child should I ask?",
                                                  timestamp=T0 + timedelta(days=1))])
    assert lemmas.indexer.query_words("the children") == "the children child"
    assert lexical(lemmas, "children") == ["m9"]


def test_reindex_and_delete_keep_the_lemmas_with_the_message(lemmas: Hippograph) -> None:
    point = [h.id for h in lemmas.indexer.store.query(VectorFilter(user_id="ana"), 50,
                                                      sparse=lemmas.indexer.sparse.encode_query("bought"))]
    lemmas.indexer.store.delete(point)
    assert lexical(lemmas, "buy mouse") == []
    assert len(point) >= 1 and lemmas.reindex_missing("ana") == len(point)  # the message and what came of it
    assert lexical(lemmas, "buy mouse") == ["m0"]  # tagged again, without the extractor
    lemmas.delete_memory("ana", "m0")
    assert lexical(lemmas, "buy mouse") == [] and lexical(lemmas, "mice") == []
    assert not lemmas.indexer.store.has(point)


PASSAGES = {
    "Eruption": "The volcano eruption of 1995 on Montserrat buried Plymouth under ash.",
    "Evacuation": "The eruption of the Soufriere Hills volcano forced the evacuation of Montserrat and Plymouth.",
    "Soufriere": "Soufriere Hills is an active volcano; its eruption destroyed Plymouth, on Montserrat.",
    "Ghost town": "Plymouth, once the capital of Montserrat, is a ghost town today.",
    "Tea": "Tea is an aromatic drink prepared by pouring hot water over cured leaves.",
    "Harbor": "A harbor is a sheltered body of water where ships can be docked.",
    "Lisbon": "Lisbon is the capital of Portugal, on the Tagus river.",
    "Sharks": "Sharks are fish with a skeleton of cartilage and five to seven gill slits.",
}
LEXICAL_ONLY = {"recall_mode": "lexical", "expand_hits": 0, "derived_weight": 0.0, "reply_weight": 0.0,
                "notes_limit": 0, "recall_limit": 10}


@pytest.fixture(scope="module")
def library() -> Iterator[Hippograph]:
    with bench_service(None) as svc:
        svc.remember("lib", None, None, documents=[DocumentIn(id=k.replace(" ", "_"), title=k, text=v)
                                                   for k, v in PASSAGES.items()])
        yield svc


def test_feedback_finds_what_the_best_hits_share_and_the_query_does_not_say(library: Hippograph) -> None:
    query = "volcano eruption"
    _, _, plain, trace = library.recall("lib", query, overrides=LEXICAL_ONLY)
    assert "Ghost_town" not in [c.source_ids[0] for c in plain] and "feedback_terms" not in trace
    _, _, fed, trace = library.recall("lib", query, overrides=LEXICAL_ONLY | {"prf_terms": 3, "prf_docs": 3})
    ids = [c.source_ids[0] for c in fed]
    assert trace["feedback_terms"] == 3
    assert "Ghost_town" in ids and set(ids[:3]) == {"Eruption", "Evacuation", "Soufriere"}
    assert {"Tea", "Harbor", "Sharks"}.isdisjoint(ids)


def test_feedback_terms_weigh_less_than_the_query(library: Hippograph) -> None:
    plan = dataclasses.replace(SINGLE_HOP, **LEXICAL_ONLY)  # type: ignore[arg-type]
    sparse = library.indexer.sparse.encode_query("volcano eruption")
    found = library.retriever.recall(plan, "lib", "volcano eruption", set())[0]
    fed, added = library.retriever._feedback(dataclasses.replace(plan, prf_terms=3, prf_docs=3), sparse, found)
    assert added == 3 and fed.indices[:2] == sparse.indices and fed.values[:2] == [1.0, 1.0]
    assert max(fed.values[2:]) == pytest.approx(0.5) and all(0 < v <= 0.5 for v in fed.values[2:])
