"""Choosing on some folds and scoring on the others: the selection never sees the fold it is scored on."""

from __future__ import annotations

from hippograph.bench.folds import CHOICES, DEFAULT, Candidate, cross_validate, fold_slices

A = Candidate("a", (("reply_weight", 1.0),))
B = Candidate("b", (("expand_hits", 4),))


def test_fold_slices_cover_every_item_once() -> None:
    folds = fold_slices(10, 3)
    assert sorted(i for f in folds for i in f) == list(range(10)) and len(folds) == 3


def test_the_choice_is_made_on_the_other_folds() -> None:
    # fold 0 (items 0-3) likes A, fold 1 (items 4-7) likes B; the default is middling everywhere
    def score(i: int, c: Candidate) -> float:
        if c.name.startswith("a"):
            return 1.0 if i < 4 else 0.0
        if c.name.startswith("b"):
            return 0.0 if i < 4 else 0.9
        return 0.4

    folds = [[0, 1, 2, 3], [4, 5, 6, 7]]
    cv = cross_validate(folds, score, ["x"] * 8, ["x"], candidates=(DEFAULT, A, B), routes=())
    assert [p["chosen"] for p in cv["per_fold"]] == ["b", "a"]  # each fold gets what the other preferred
    assert cv["in_fold"]["chosen"] == "a" and cv["in_fold"]["overall"] == 50.0
    assert cv["out_of_fold"]["overall"] == 0.0  # tuned elsewhere, it fails on both folds
    assert cv["default"]["overall"] == 40.0
    assert cv["out_of_fold"]["spread"] == {"min": 0.0, "max": 0.0, "stdev": 0.0}


def test_ties_keep_the_default_and_ablations_are_measured_on_the_held_out_fold() -> None:
    def score(i: int, c: Candidate) -> float:
        graph_on = dict(c.overrides).get("graph") is True
        replies_off = dict(c.overrides).get("reply_weight") == 0.0
        if graph_on:
            return 0.8 if i % 2 else 0.6  # switching the graph on gains on odd items (every fold)
        return 0.4 if replies_off and i % 2 else 0.6  # switching the replies off loses on odd items

    cv = cross_validate(fold_slices(6, 3), score, ["x"] * 6, ["x"], candidates=(DEFAULT, A),
                        routes=("hippograph +graph", "hippograph -replies", "hippograph -facts"))
    assert all(p["chosen"] == "default" for p in cv["per_fold"])  # A is no better: the default stays
    graph, replies = cv["ablations"]["hippograph +graph"], cv["ablations"]["hippograph -replies"]
    assert graph["out_of_fold_delta"] == 10.0 and graph["earns_its_place"]  # on, it gains
    assert replies["out_of_fold_delta"] == -10.0 and replies["earns_its_place"]  # off, it loses
    assert not cv["ablations"]["hippograph -facts"]["earns_its_place"]  # no loss without it


def test_a_route_is_also_judged_on_the_shipped_plan() -> None:
    # B (a wider second hop) wins in every fold and does not need the facts; the shipped plan does
    def score(i: int, c: Candidate) -> float:
        o = dict(c.overrides)
        if o.get("expand_hits") == 4:
            return 0.9
        return 0.4 if o.get("derived_weight") == 0.0 else 0.6

    cv = cross_validate(fold_slices(6, 3), score, ["x"] * 6, ["x"], candidates=(DEFAULT, B),
                        routes=("hippograph -facts",))
    facts = cv["ablations"]["hippograph -facts"]
    assert facts["out_of_fold_delta"] == 0.0 and not facts["earns_its_place"]  # B does not miss them
    assert facts["shipped_delta"] == -20.0 and facts["shipped_per_fold"] == [-20.0] * 3
    assert facts["earns_on_shipped"]


def test_every_candidate_is_a_valid_plan_setting() -> None:
    import dataclasses

    from hippograph.planner.plans import PLANS, SINGLE_HOP

    fields = {f.name for f in dataclasses.fields(SINGLE_HOP)}
    for c in CHOICES:
        assert set(dict(c.overrides)) <= fields, c.name
        assert c.plan is None or c.plan in PLANS, c.name
        dataclasses.replace(SINGLE_HOP, **dict(c.overrides))
