from __future__ import annotations

import pytest

from hippograph.planner.plans import PLANS, choose_plan


@pytest.mark.parametrize(
    ("query", "plan"),
    [
        ("What do you know about me?", "profile"),
        ("What is my favourite food?", "profile"),
        ("Which city does the manager of the Northwest region live in?", "multi_hop"),
        ("Who manages the region Bob's project is in?", "multi_hop"),
        ("When did Caroline go to the LGBTQ support group?", "temporal"),
        ("How long ago did Melanie run the charity race?", "temporal"),
        ("What does Alice prefer for breakfast?", "single_hop"),
        ("Where do I live?", "single_hop"),
    ],
)
def test_choose_plan(query: str, plan: str) -> None:
    chosen, reason = choose_plan(query)
    assert chosen.name == plan and reason


def test_plans_are_data() -> None:
    assert set(PLANS) == {"single_hop", "multi_hop", "graph", "temporal", "profile"}
    # the graph route is asked for, not chosen: out of fold it gained nothing (BENCHMARKS.md, "Folds")
    assert PLANS["graph"].graph and not any(p.graph for n, p in PLANS.items() if n != "graph")
    assert PLANS["multi_hop"].expand_hits > 0
    assert PLANS["temporal"].dated and PLANS["profile"].all_notes
    assert all(p.as_dict()["steps"] for p in PLANS.values())
