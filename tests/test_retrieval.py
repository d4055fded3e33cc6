"""The planner's retrieval routes on the real stores and models: replies, named dates, second hop,
graph facts, and the plan reported with its trace."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from hippograph.bench.common import bench_service
from hippograph.models import DocumentIn, MessageIn, Role
from hippograph.service import Hippograph

T0 = datetime(2024, 5, 1, 18, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def service() -> Iterator[Hippograph]:
    with bench_service(None) as svc:
        talk = [
            ("d1", "u", "I had pasta with friends for dinner tonight.", T0),
            ("d1", "a", "Sounds nice! Was it a special occasion?", T0 + timedelta(minutes=1)),
            ("d2", "u", "I had sushi with friends for dinner tonight.", T0 + timedelta(days=33)),
            ("d3", "a", "Lovely. Where did you adopt your puppy, by the way?", T0 + timedelta(days=40)),
            ("d3", "u", "From a shelter in Porto, she was two months old.", T0 + timedelta(days=40, minutes=1)),
            ("d4", "u", "The weather is grey and my tea went cold.", T0 + timedelta(days=41)),
        ]
        for i, (session, role, text, when) in enumerate(talk):
            svc.remember("ana", session, None, [MessageIn(id=f"m{i}", role=Role.user if role == "u" else Role.assistant,
                                                         content=text, timestamp=when)])
        group = [  # two friends talk; the question is about what one of them does
            ("Melanie", "I'm off to go swimming with the kids, talk soon!"),
            ("Caroline", "Have fun, Melanie! Activities like that are what I love doing on weekends too."),
            ("Melanie", "I just signed up for a pottery class, it's like therapy for me."),
            ("Caroline", "Melanie, which activities do you take part in the most? I like all sorts of activities."),
        ]
        svc.remember("pair", "g1", None, [MessageIn(id=f"g{i}", role=Role.user, name=name, content=text,
                                                    timestamp=T0 + timedelta(minutes=i))
                                          for i, (name, text) in enumerate(group)])
        docs = {
            "Leland": "Leland is a town in Brunswick County. Maximum Overdrive was filmed in Leland in 1986.",
            "Maximum Overdrive": "Maximum Overdrive is a 1986 horror film written and directed by Stephen King.",
            "Lisbon": "Lisbon is the capital of Portugal, on the Tagus river.",
            "Tea": "Tea is an aromatic drink prepared by pouring hot water over cured leaves.",
            "Harbor": "A harbor is a sheltered body of water where ships can be docked.",
        }
        svc.remember("lib", None, None, documents=[DocumentIn(id=k.replace(" ", "_"), title=k, text=v)  # ids: no spaces
                                                   for k, v in docs.items()])
        firm = {
            "Acme": "Acme Corporation opened its first office in Lisbon in 2019.",
            "Harbor": "A harbor is a sheltered body of water where ships can be docked.",
        }
        svc.remember("firm", None, None, documents=[DocumentIn(id=k, title=k, text=v) for k, v in firm.items()])
        yield svc


def test_the_answer_comes_with_the_question_it_answers(service: Hippograph) -> None:
    _, _, cands, trace = service.recall("ana", "Where did Ana adopt her puppy?")
    reply = next(c for c in cands if c.source_ids == ["m4"])
    assert "reply" in reply.via and trace["replies"] >= 0
    assert [c.source_ids for c in cands[:3]].count(["m4"]) == 1


def test_a_named_day_finds_what_was_said_that_day(service: Hippograph) -> None:
    _, _, cands, trace = service.recall("ana", "What did I have for dinner on 3 June, 2024?")
    assert trace["dated"] == ["2024-06-03..2024-06-03"]
    assert cands[0].source_ids == ["m2"] and "dated" in cands[0].via


def test_second_hop_finds_what_the_first_hit_names(service: Hippograph) -> None:
    _plan, _, cands, trace = service.recall("lib", "Who directed the film that was shot in Leland?")
    top2 = {c.source_ids[0] for c in cands[:2]}
    assert top2 == {"Leland", "Maximum_Overdrive"}
    assert trace["expanded"] >= 0 and any("expansion" in c.via for c in cands[:2])


def test_graph_plan_reports_linked_entities_and_facts(service: Hippograph) -> None:
    result = service.context("lib", "Which film of Stephen King was shot in Leland?", plan_name="graph")
    trace = result.plan["trace"]
    assert result.plan["name"] == "graph" and "Leland" in trace["linked_entities"]
    assert isinstance(trace["graph_facts"], list) and trace["graph_episodes"] > 0
    assert "Maximum Overdrive was filmed in Leland" in result.context


def test_a_question_links_the_entity_its_words_mean(service: Hippograph) -> None:
    question = "In which city did Acme open an office?"
    _, _, _, exact = service.recall("firm", question, overrides={"graph": True})
    assert "Acme Corporation" not in exact["linked_entities"]  # no name or alias of it is "Acme"
    # "Acme" and "Acme Corporation" score 0.79 (int8 MiniLM) to 0.82 (fp32)
    _, _, cands, meant = service.recall("firm", question, overrides={"graph": True, "link_threshold": 0.7})
    assert "Acme Corporation" in meant["linked_entities"]
    assert "graph" in next(c for c in cands if c.source_ids == ["Acme"]).via
    _, _, _, far = service.recall("firm", question, overrides={"graph": True, "link_threshold": 0.99})
    assert "Acme Corporation" not in far["linked_entities"]


def test_overrides_switch_a_route_off(service: Hippograph) -> None:
    _, _, _, full = service.recall("lib", "Who directed the film that was shot in Leland?")
    plan, _, _, without = service.recall("lib", "Who directed the film that was shot in Leland?",
                                         overrides={"expand_hits": 0})
    assert "expanded" in full and "expanded" not in without and plan.expand_hits == 0


def test_a_named_speaker_is_searched_in_what_they_said(service: Hippograph) -> None:
    # the route's weight in the hand-set sum (the learned ranker gives the person route no weight)
    question = "What activities does melanie take part in?"
    _, _, without, trace = service.recall("pair", question, overrides={"person_weight": 0.0, "ranker": ""})
    assert "people" not in trace
    assert {c.source_ids[0] for c in without[:2]} != {"g0", "g2"}  # the whole question is closer to her friend's
    _, _, cands, trace = service.recall("pair", question, overrides={"person_weight": 2.0, "ranker": ""})
    assert trace["people"] == ["Melanie"]
    said_by_her = {"g0", "g2"}
    rank = {c.source_ids[0]: i for i, c in enumerate(cands)}
    rank_without = {c.source_ids[0]: i for i, c in enumerate(without)}
    assert without[0].source_ids[0] not in said_by_her
    assert all(rank[m] < rank_without[m] for m in said_by_her)
    assert all("person" in c.via for c in cands if c.source_ids[0] in said_by_her)
    assert not any("person" in c.via for c in cands if c.source_ids[0] not in said_by_her)
    # nobody of that name has spoken: no such search
    _, _, _, trace = service.recall("pair", "What activities does Gina take part in?", overrides={"person_weight": 2.0})
    assert trace["people"] == []


def test_each_route_records_its_rank_and_a_ranker_can_reorder(service: Hippograph) -> None:
    from hippograph.planner.ranker import FEATURES, ROUTES, LinearRanker, ranking_features

    _, _, cands, _ = service.recall("ana", "Where did Ana adopt her puppy?")
    assert all(c.ranks for c in cands)  # every candidate was ranked by some route
    reply = next(c for c in cands if c.source_ids == ["m4"])
    assert "reply" in reply.ranks and reply.ranks["hybrid"] >= 0
    rows = ranking_features(cands, "Where did Ana adopt her puppy?", [], {})
    assert rows.shape == (len(cands), len(FEATURES))
    assert rows[0, FEATURES.index("fused")] == 1.0  # the first in the hand-set order
    # a ranker that knows only recency puts the newest message first
    newest = [0.0] * len(FEATURES)
    newest[FEATURES.index("newest")] = 1.0
    ones = [1.0] * len(FEATURES)
    service.retriever.rankers["newest"] = LinearRanker([0.0] * len(FEATURES), ones, newest, 0.0)
    _, _, ordered, trace = service.recall("ana", "Where did Ana adopt her puppy?", overrides={"ranker": "newest"})
    assert trace["ranker"] == "newest"
    stamps = [c.timestamp for c in ordered]
    assert stamps == sorted(stamps, reverse=True) and len(ordered) == len(cands)
    assert len(ROUTES) < len(FEATURES)


def test_a_ranker_orders_only_the_best_of_the_sum_when_given_a_depth(service: Hippograph) -> None:
    from hippograph.planner.ranker import FEATURES, LinearRanker

    newest = [0.0] * len(FEATURES)
    newest[FEATURES.index("newest")] = 1.0
    service.retriever.rankers["newest"] = LinearRanker([0.0] * len(FEATURES), [1.0] * len(FEATURES), newest, 0.0)
    question = "What did Ana have for dinner?"
    _, _, summed, _ = service.recall("ana", question, overrides={"ranker": ""})
    _, _, top, _ = service.recall("ana", question, overrides={"ranker": "newest", "rerank_depth": 3})
    assert len(summed) > 3 and len(top) == len(summed)
    assert {c.id for c in top[:3]} == {c.id for c in summed[:3]}  # the best three of the sum, reordered
    stamps = [c.timestamp for c in top[:3]]
    assert stamps == sorted(stamps, reverse=True) and [c.timestamp for c in summed[:3]] != stamps
    assert [c.id for c in top[3:]] == [c.id for c in summed[3:]]  # the rest in the sum's order


def test_a_message_said_again_word_for_word_is_one_candidate_before_the_ranker_sees_it() -> None:
    with bench_service(None) as svc:
        said = ["I moved to Porto last spring.", "The tea went cold."] * 2
        svc.remember("rep", "s", None, [MessageIn(id=f"r{i}", role=Role.user, content=text,
                                                   timestamp=T0 + timedelta(days=i))
                                         for i, text in enumerate(said)])
        for ranker in ("", "learned"):
            _, _, cands, _ = svc.recall("rep", "Where did I move?", overrides={"ranker": ranker})
            texts = [c.text.lower() for c in cands]
            assert len(texts) == len(set(texts)) == 2, ranker


def test_the_speaker_feature_reads_who_said_it_not_the_text(service: Hippograph) -> None:
    from hippograph.planner.ranker import FEATURES, ranking_features

    _, _, cands, _ = service.recall("pair", "Which class did Melanie sign up for?", overrides={"ranker": ""})
    rows = ranking_features(cands, "Which class did Melanie sign up for?", [], {})
    named = rows[:, FEATURES.index("speaker_named")]
    assert {c.speaker for c in cands} == {"melanie", "caroline"}
    assert all(bool(n) == (c.speaker == "melanie") for c, n in zip(cands, named, strict=True))
    _, _, docs, _ = service.recall("lib", "Who directed Maximum Overdrive?", overrides={"ranker": ""})
    assert docs and all(c.speaker == "" for c in docs)  # a document's title is no speaker
    rows = ranking_features(docs, "Who directed Maximum Overdrive?", [], {})
    assert not rows[:, FEATURES.index("speaker_named")].any()


def test_a_ranker_is_saved_and_read_back_and_refuses_other_features(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import numpy as np

    from hippograph.planner.ranker import FEATURES, LinearRanker

    n = len(FEATURES)
    ranker = LinearRanker(list(range(n)), [2.0] * n, [0.5] * n, -1.0, about={"writers": ["w1"]})
    path = tmp_path / "r.json"
    ranker.save(path)
    import json

    back = LinearRanker.from_dict(json.loads(path.read_text()))
    rows = np.arange(2 * n, dtype=np.float32).reshape(2, n)
    assert np.allclose(back(rows), ranker(rows)) and back.about == {"writers": ["w1"]}
    with pytest.raises(ValueError, match="train it again"):
        LinearRanker.from_dict({**ranker.as_dict(), "features": ["other"]})


def test_the_entity_route_walks_from_a_named_thing_to_the_messages_that_mention_it(service: Hippograph) -> None:
    query = "Which animal came from Porto?"
    # the route's weight in the sum
    _, _, off, trace_off = service.recall("ana", query, overrides={"entity_weight": 0.0, "ranker": ""})
    assert "entities" not in trace_off
    _, _, cands, trace = service.recall("ana", query, overrides={"ranker": ""})  # on in the shipped plans
    assert trace["entities"] == ["Porto"]
    walked = [c for c in cands if "entity" in c.via]
    assert [c.source_ids for c in walked] == [["m4"]]  # the one message that mentions Porto
    before = next(c.score for c in off if c.source_ids == ["m4"])
    assert walked[0].score > before and walked[0].ranks["entity"] == 0


def test_the_entity_route_does_not_walk_from_a_thing_said_everywhere() -> None:
    with bench_service(None) as svc:
        said = [f"I drove to Porto again for a client meeting, trip number {i}." for i in range(6)]
        said.append("My cat Mimi came from Lisbon.")
        svc.remember("busy", "s", None, [MessageIn(id=f"b{i}", role=Role.user, content=text,
                                                    timestamp=T0 + timedelta(days=i)) for i, text in enumerate(said)])
        ids = [e.id for e in svc.retriever.link_entities("busy", "Porto and Lisbon")]
        mentions = svc.graph.mentions_of("busy", ids)
        assert sorted(len(v) for v in mentions.values()) == [1, 6]
        _, _, _, trace = svc.recall("busy", "What came from Porto or Lisbon?",
                                    overrides={"ranker": "", "entity_mentions": 5})  # fewer than Porto's six
        assert trace["entities"] == ["Lisbon"]
        _, _, _, trace = svc.recall("busy", "What came from Porto or Lisbon?", overrides={"ranker": ""})
        assert sorted(trace["entities"]) == ["Lisbon", "Porto"]


def test_the_packaged_ranker_orders_the_plans_candidates(service: Hippograph) -> None:
    from hippograph.planner.plans import PLANS
    from hippograph.planner.ranker import FEATURES, LinearRanker

    assert {p.ranker for p in PLANS.values()} == {""}  # on by HIPPOGRAPH_CONTEXT__RANKER (below)
    packaged = LinearRanker.packaged()
    assert len(packaged.weights) == len(FEATURES) and len(packaged.about["writers"]) >= 2
    _, _, summed, trace = service.recall("ana", "Where did Ana adopt her puppy?")
    assert "ranker" not in trace
    _, _, learned, trace = service.recall("ana", "Where did Ana adopt her puppy?", overrides={"ranker": "learned"})
    assert trace["ranker"] == "learned"
    assert {c.id for c in learned} == {c.id for c in summed}  # the same candidates, ordered otherwise
    scores = [c.score for c in learned]
    assert scores == sorted(scores, reverse=True)
    assert learned[0].source_ids == ["m4"]  # the answer; the sum has it next to the question it answers
    assert ["m4"] in [c.source_ids for c in summed[:2]]


def test_the_setting_turns_the_learned_ranker_on_for_every_block(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from hippograph.config import ContextSettings, Settings

    settings = Settings().model_copy(update={"context": ContextSettings(ranker="learned")})
    with bench_service(tmp_path / "d", settings) as svc:
        svc.remember("bo", "s1", None, [MessageIn(id="b1", role=Role.user, content="My bike is a red Gazelle.",
                                                  timestamp=T0)])
        res = svc.context("bo", "What bike do I ride?", token_budget=300)
        assert res.plan["ranker"] == "learned" and res.plan["trace"]["ranker"] == "learned"
        assert "red Gazelle" in res.context
        assert svc.context("bo", "What bike do I ride?", overrides={"ranker": ""}).plan["ranker"] == ""


def test_the_block_is_packed_from_the_best_candidates_only() -> None:
    with bench_service(None) as svc:
        said = [f"Short note {i} about the garden shed and its paint." for i in range(8)]
        svc.remember("shed", "s", None, [MessageIn(id=f"g{i}", role=Role.user, content=text,
                                                    timestamp=T0 + timedelta(days=i)) for i, text in enumerate(said)])
        question = "What about the garden shed paint?"
        _, _, cands, _ = svc.recall("shed", question, overrides={"ranker": ""})
        everything = svc.context("shed", question, token_budget=1000, overrides={"ranker": ""})
        assert len(everything.sections["memories"]) == len(cands) == 8  # all fit within the budget
        assert svc.context("shed", question, token_budget=1000,
                           overrides={"ranker": "", "block_limit": 0}).sections["memories"] == everything.sections["memories"]
        best = svc.context("shed", question, token_budget=1000, overrides={"ranker": "", "block_limit": 3})
        assert [i.id for i in best.sections["memories"]] == [c.id for c in cands[:3]]
        more = svc.context("shed", question, token_budget=2000, overrides={"ranker": "", "block_limit": 3})
        assert [i.id for i in more.sections["memories"]] == [c.id for c in cands[:6]]  # 3 per 1,000 tokens
