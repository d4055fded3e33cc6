"""How a notes judgement is scored and its thresholds chosen: the end-to-end measures of the notes kept over
a writer's sequences (`NOTE_MEASURES`), the one number a choice is judged by (`objective`), the choice of
thresholds out of writer (`choose`), and the tables the benches print.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from hippograph.notes_model import judge

#: the thresholds tried, one at a time from the defaults (`choose`)
LIMITS_TRIED = {"note": (0.35, 0.5, 0.65, 0.8), "retract": (0.2, 0.3, 0.4, 0.5), "same": (0.3, 0.5, 0.7),
                "stated": (0.0, 0.2, 0.3, 0.4, 0.5), "related": (1.01, 0.3, 0.2, 0.1, 0.05),
                "covers": (1.01, 0.4, 0.3, 0.2, 0.1)}


def objective(measures: dict) -> float:
    """What a choice of thresholds is judged by: the mean of note precision and recall, replacement and
    retirement accuracy, and one less the false-note rate (each target counts the same)."""
    values = [value(measures, path) for _, path in NOTE_MEASURES]
    got = [v for v in values[:4] if v is not None] + ([1.0 - values[4]] if values[4] is not None else [])
    return float(np.mean(got)) if got else 0.0


def choose(score_of: Callable[[judge.Thresholds], np.ndarray]) -> tuple[judge.Thresholds, dict]:
    """The thresholds chosen by `score_of` (each writer's `objective` at a choice of thresholds, scored out of
    writer): each threshold tried at the values of `LIMITS_TRIED`, one at a time (twice over, unless the first
    pass changed nothing); a value is taken if it raises the mean over writers and gains on more than half of
    them, the best such value by the mean. Returns the chosen thresholds and the mean of each try."""
    scored: dict[judge.Thresholds, np.ndarray] = {}

    def score(limits: judge.Thresholds) -> np.ndarray:
        if limits not in scored:
            scored[limits] = score_of(limits)
        return scored[limits]

    best = judge.Thresholds()
    tried = {"default": float(score(best).mean())}
    for round_ in (1, 2):  # a second pass: a threshold's best value may move once the later ones have
        before = best
        for name, values in LIMITS_TRIED.items():
            now = score(best)
            results = {}
            for v in values:
                key = f"{name}={v}" if round_ == 1 else f"{name}={v} (again)"
                results[v] = score(judge.Thresholds(**{**best.__dict__, name: v}))
                tried[key] = float(results[v].mean())
            chosen = taken(now, results)
            if chosen is not None:
                best = judge.Thresholds(**{**best.__dict__, name: chosen})
        if best == before:
            break
    return best, tried


def taken(now: np.ndarray, tries: dict[float, np.ndarray]) -> float | None:
    """Of the values tried, the one taken over the current (`now`: each writer's objective): the best by the
    mean over writers of those that raise the mean and gain on more than half of the writers; None if none
    does. A change that gains on a few writers only is not taken, however much it gains there."""
    gains = [v for v, got in tries.items() if got.mean() > now.mean() and (got > now).sum() > len(now) / 2]
    return max(gains, key=lambda v: float(tries[v].mean())) if gains else None


NOTE_MEASURES = (("all precision", ("all", "precision")), ("all recall", ("all", "recall")),
                 ("replacement accuracy", ("replacement_accuracy",)), ("retirement accuracy", ("retirement_accuracy",)),
                 ("false-note rate", ("false_note_rate",)))


def value(measures: dict, path: tuple[str, ...]) -> float | None:
    """A measure of a report, by its keys ("all", "precision"); None where there is none."""
    v: Any = measures
    for key in path:
        v = v.get(key) if isinstance(v, dict) else None
    return None if v is None else float(v)


def spread(report: dict[str, dict]) -> dict[str, dict[str, float]]:
    """Each end-to-end measure over the writers: mean, lowest and highest."""
    out = {}
    for name, path in NOTE_MEASURES:
        values = [v for measures in report.values() if (v := value(measures, path)) is not None]
        if values:
            out[name] = {"mean": round(float(np.mean(values)), 3), "min": round(min(values), 3),
                         "max": round(max(values), 3)}
    return out


def table(report: dict[str, dict]) -> str:
    writers = list(report)
    lines = ["| measure | " + " | ".join(writers) + " | mean (min-max) |", "|---" * (len(writers) + 2) + "|"]
    summary = spread(report)
    for name, path in NOTE_MEASURES:
        cells = ["-" if (v := value(report[w], path)) is None else f"{v:.3f}" for w in writers]
        s = summary.get(name)
        lines.append(f"| {name} | " + " | ".join(cells) + (
            f" | {s['mean']:.3f} ({s['min']:.3f}-{s['max']:.3f}) |" if s else " | - |"))
    return "\n".join(lines)
