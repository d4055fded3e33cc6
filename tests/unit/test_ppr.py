"""Personalised PageRank over entities and the episodes that mention them."""

from __future__ import annotations

import pytest

from hippograph.graph.ppr import PageRankGraph


def test_rank_spreads_from_seeds_and_sums_to_one() -> None:
    g = PageRankGraph([("ep1", "acme"), ("ep2", "acme"), ("ep3", "lisbon")], [("acme", "dana")])
    ranks = g.rank({"acme": 1.0})
    assert sum(ranks.values()) == pytest.approx(1.0)
    assert ranks["acme"] > ranks["ep1"] > 0 and ranks["ep1"] == pytest.approx(ranks["ep2"])
    assert "ep3" not in ranks and "lisbon" not in ranks  # not connected to the seed


def test_specific_entities_carry_more_than_common_ones() -> None:
    # ep0 mentions a rare entity (shared with ep1 only) and a common one (shared with ten episodes)
    mentions = [("ep0", "rare"), ("ep1", "rare"), ("ep0", "common")] + [(f"c{i}", "common") for i in range(10)]
    ranked = PageRankGraph(mentions, []).rank_episodes({"ep0": 1.0}, limit=5)
    assert ranked[0][0] == "ep1"
    assert all(eid != "ep0" for eid, _ in ranked)  # a seed is not its own result


def test_unknown_or_zero_seeds_rank_nothing() -> None:
    g = PageRankGraph([("ep1", "acme")], [])
    assert g.rank({"nobody": 1.0}) == {} and g.rank({"acme": 0.0}) == {}
    assert PageRankGraph([], []).rank_episodes({"x": 1.0}, 3) == []
