"""`--folds K`: evaluation that cannot flatter itself.

The planner's tuned choices (its weights and limits, which routes run, the plan heuristic) are the
`CHOICES` below: the shipped default and, for each choice, the values it could have taken instead. With
folds, every item (a question) is scored under every candidate; then, fold by fold, the candidate with
the best mean score on the *other* folds is chosen and scored on this fold. The pooled held-out scores
are the out-of-fold result, reported beside the in-fold one (the candidate best on all the data, scored
on the same data: what tuning on everything would claim) and the shipped default, with the spread across
folds. Each route's ablation is measured the same way: on each fold, the fold's chosen configuration with
the route switched off (or, for a route the default plans leave out, on), against the same configuration
as chosen. A route earns its place in the default plans only when it gains out of fold: switching it off
loses, or switching it on gains, `MIN_GAIN` points or more, in more folds than not.

The fold's choice is not what ships, and a route can matter to one configuration and not to another
(a weight raised elsewhere can stand in for it). So each route is also switched off (on) in the shipped
plan, fold by fold: the `shipped_*` figures, judged by the same rule. The shipped plan was itself chosen on
this data, so those figures are in-fold for its settings; the fold-chosen ones are the out-of-fold test.

Folds are the groups the data comes in (LoCoMo: leave one conversation out, K = the conversations) or,
for a flat list of questions, K interleaved slices."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hippograph.bench.common import ABLATIONS


@dataclass(frozen=True)
class Candidate:
    """One configuration of the planner: plan parameters overridden, and/or one plan for every question."""

    name: str
    overrides: tuple[tuple[str, object], ...] = ()
    plan: str | None = None  # None: the plan heuristic picks

    def variant(self, route: str) -> Candidate:
        """This configuration with one route of `ABLATIONS` switched off ("-x") or on ("+x")."""
        more = dict(self.overrides) | ABLATIONS[route]
        return Candidate(f"{self.name} {route.removeprefix('hippograph ')}", tuple(sorted(more.items())),
                         self.plan)

    @property
    def params(self) -> dict[str, object] | None:
        return dict(self.overrides) or None


DEFAULT = Candidate("default")
# the values each tuned choice could take instead of the shipped one (the routes' "off" values are the
# ablations, measured apart)
GRID: dict[str, tuple[object, ...]] = {
    "recall_limit": (30, 120),
    "reply_weight": (0.25, 1.0),
    "derived_weight": (0.15, 0.6),
    "notes_limit": (1, 6),
    "expand_hits": (1, 4),
    "expand_weight": (0.25, 1.0),
    "entity_weight": (0.25, 1.0),
    "dated_weight": (0.5, 2.0),
    "person_weight": (0.5, 1.0),
    "graph_weight": (0.25, 1.0),
    "graph_limit": (15, 60),
    "hit_seeds": (0, 10),
}
CHOICES: tuple[Candidate, ...] = (
    DEFAULT,
    *(Candidate(f"{k}={v}", ((k, v),)) for k, values in GRID.items() for v in values),
    # lexical pseudo-relevance feedback, off in the shipped plans: the settings it could be switched on
    # with, and on without the second hop (does the second hop, which adds whole hits, already do its work?)
    *(Candidate(", ".join(f"{k}={v}" for k, v in o), o) for o in (
        (("prf_terms", 5),), (("prf_terms", 10),), (("prf_terms", 10), ("prf_weight", 0.25)),
        (("prf_terms", 10), ("prf_weight", 1.0)), (("expand_hits", 0), ("prf_terms", 10)))),
    # the graph route by meaning, off in the shipped plans as the graph route itself is: the thresholds it
    # could be switched on with (HippoRAG 2's 0.8, and stricter for synonyms: MiniLM puts "Michael
    # Henderson" and "David Henderson" at 0.86)
    *(Candidate(", ".join(f"{k}={v}" for k, v in o), o) for o in (
        (("graph", True), ("link_threshold", 0.8)), (("graph", True), ("synonym_threshold", 0.8)),
        (("graph", True), ("synonym_threshold", 0.9)),
        (("graph", True), ("link_threshold", 0.8), ("synonym_threshold", 0.8)))),
    # the plan heuristic itself: one plan for every question instead
    *(Candidate(f"plan={p}", plan=p) for p in ("single_hop", "multi_hop", "graph", "temporal")),
)

Score = Callable[[int, Candidate], float]
# a route earns its place when switching it off loses at least this much out of fold (points), and loses
# in more folds than it gains: less is within what one question more or less moves
MIN_GAIN = 0.5


def fold_slices(n: int, k: int) -> list[list[int]]:
    """K interleaved slices of n items (item i in fold i mod k)."""
    return [list(range(f, n, k)) for f in range(k)]


def _mean(values: Sequence[float]) -> float:
    return 100 * statistics.mean(values) if values else 0.0


def _earns(route: str, delta: float, per_fold: Sequence[float]) -> bool:
    """Does the route gain: switched off it loses (switched on it gains) `MIN_GAIN` points or more over
    all the items, and in more folds than the other way?"""
    worse, better = sum(d < 0 for d in per_fold), sum(d > 0 for d in per_fold)
    if route.removeprefix("hippograph ").startswith("+"):  # a route the default leaves out, switched on
        return delta >= MIN_GAIN and better > worse
    return delta <= -MIN_GAIN and worse > better


def cross_validate(folds: Sequence[Sequence[int]], score: Score, groups: Sequence[str], pooled: Sequence[str],
                   candidates: Sequence[Candidate] = CHOICES, routes: Sequence[str] = tuple(ABLATIONS)) -> dict:
    """Out-of-fold, in-fold and default results. `score(i, c)` is item i's score under candidate c (memoised
    here); `groups[i]` its category; the selection maximises the mean over items of the `pooled` groups."""
    memo: dict[tuple[int, Candidate], float] = {}

    def s(i: int, c: Candidate) -> float:
        if (i, c) not in memo:
            memo[(i, c)] = score(i, c)
        return memo[(i, c)]

    def objective(items: Sequence[int], c: Candidate) -> float:
        return _mean([s(i, c) for i in items if groups[i] in pooled])

    def table(picks: Sequence[tuple[int, Candidate]]) -> dict[str, float]:
        out = {g: round(_mean([s(i, c) for i, c in picks if groups[i] == g]), 1)
               for g in dict.fromkeys(groups)}
        out["overall"] = round(_mean([s(i, c) for i, c in picks if groups[i] in pooled]), 1)
        return out

    def best(items: Sequence[int]) -> Candidate:
        # ties go to the earlier candidate (the default first): a change must gain to be chosen
        return max(candidates, key=lambda c: (round(objective(items, c), 6), -candidates.index(c)))

    every = [i for fold in folds for i in fold]
    tuned = best(every)
    per_fold: list[dict] = []
    held_out: list[tuple[int, Candidate]] = []
    deltas: dict[str, list[float]] = {r: [] for r in routes}
    shipped: dict[str, list[float]] = {r: [] for r in routes}
    picks: dict[str, tuple[list[tuple[int, Candidate]], list[tuple[int, Candidate]]]] = {r: ([], []) for r in routes}
    for f, test in enumerate(folds):
        train = [i for g, fold in enumerate(folds) if g != f for i in fold]
        chosen = best(train)
        held_out += [(i, chosen) for i in test]
        per_fold.append({"fold": f, "items": len(test), "chosen": chosen.name,
                         "overall": round(objective(test, chosen), 1),
                         "default_overall": round(objective(test, DEFAULT), 1)})
        for r in routes:
            without = chosen.variant(r)
            deltas[r].append(round(objective(test, without) - objective(test, chosen), 1))
            picks[r][0].extend((i, chosen) for i in test)
            picks[r][1].extend((i, without) for i in test)
            shipped[r].append(round(objective(test, DEFAULT.variant(r)) - objective(test, DEFAULT), 1))
    out_of_fold = table(held_out)
    overall_per_fold = [float(p["overall"]) for p in per_fold]
    routes_out = {}
    for r in routes:
        delta = round(table(picks[r][1])["overall"] - table(picks[r][0])["overall"], 1)
        on_shipped = round(objective(every, DEFAULT.variant(r)) - objective(every, DEFAULT), 1)
        routes_out[r] = {"out_of_fold_delta": delta, "per_fold": deltas[r],
                         "in_fold_delta": round(objective(every, tuned.variant(r)) - objective(every, tuned), 1),
                         "earns_its_place": _earns(r, delta, deltas[r]),
                         "shipped_delta": on_shipped, "shipped_per_fold": shipped[r],
                         "earns_on_shipped": _earns(r, on_shipped, shipped[r])}
    return {
        "folds": len(folds),
        "candidates": [c.name for c in candidates],
        "default": table([(i, DEFAULT) for i in every]),
        "in_fold": {"chosen": tuned.name, **table([(i, tuned) for i in every])},
        "out_of_fold": {**out_of_fold, "spread": {
            "min": min(overall_per_fold), "max": max(overall_per_fold),
            "stdev": round(statistics.stdev(overall_per_fold), 1) if len(overall_per_fold) > 1 else 0.0}},
        "per_fold": per_fold,
        "ablations": routes_out,
        "scored": len(memo),
    }


def markdown(cv: dict, label: str = "overall") -> str:
    """The fold results as a table: default, in-fold, out-of-fold (per category), then the ablations."""
    groups = [g for g in cv["default"] if g != "overall"] + ["overall"]
    rows = ["| | " + " | ".join(groups) + " |", "|---|" + "---|" * len(groups)]
    for name, key in (("default (shipped)", "default"), (f"in-fold ({cv['in_fold']['chosen']})", "in_fold"),
                      ("out-of-fold", "out_of_fold")):
        rows.append(f"| {name} | " + " | ".join(f"{cv[key].get(g, 0.0):.1f}" for g in groups) + " |")
    spread = cv["out_of_fold"]["spread"]
    rows.append("")
    rows.append(f"out-of-fold {label} per fold: " + ", ".join(
        f"{p['overall']:.1f} ({p['chosen']})" for p in cv["per_fold"]) +
        f"; min {spread['min']:.1f}, max {spread['max']:.1f}, stdev {spread['stdev']:.1f}")
    rows.append("")
    rows.append("| route off (-) / on (+) | out-of-fold Δ | in-fold Δ | per fold | earns its place "
                "| on the shipped plan Δ | per fold | earns there |")
    rows.append("|---|---|---|---|---|---|---|---|")
    for r, a in cv["ablations"].items():
        rows.append(f"| {r} | {a['out_of_fold_delta']:+.1f} | {a['in_fold_delta']:+.1f} | "
                    f"{', '.join(f'{d:+.1f}' for d in a['per_fold'])} | {'yes' if a['earns_its_place'] else 'no'} | "
                    f"{a['shipped_delta']:+.1f} | {', '.join(f'{d:+.1f}' for d in a['shipped_per_fold'])} | "
                    f"{'yes' if a['earns_on_shipped'] else 'no'} |")
    return "\n".join(rows)
