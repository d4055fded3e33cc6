"""Extraction time of pathological messages, and of normal ones, against the parse alone.

- **Pathological messages**: each input of `INPUTS` (a run-on "word word ...", one sentence of 5,000
  different words, a long comma list, deep nesting, coordinated clauses, long numbers and URLs, no
  space at all, runs of punctuation, many short sentences, chained orders) at each `--sizes`
  (characters), one message of the user's, timed three ways in this process: `nlp(text)` of the same
  spaCy model and pipes (the baseline: the parse alone, in one piece), `SpacyExtractor.extract` with
  its default per-message budget, and with no budget (`--no-budget-max`: up to which size), which
  shows what the rules cost when they read every sentence. The baseline is not run at a size where
  its time, projected at the rate it grew between the two sizes before, is over `--baseline-cap`
  seconds (spaCy's tokenizer is quadratic in a run of punctuation without a space: "!" * 50,000 takes
  minutes).
- **Normal messages**: the LoCoMo turns (`--locomo`), one batch per session as the ingest extracts
  them, as said (speaker_a as the user) and all as the user's (every note rule runs): `extract` against
  `nlp.pipe` of the same texts, alternating, `--rounds` times each; turns/s and the ratio.

    python bench/pathological_text.py --out bench/results/pathological-text.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from hippograph.datasets import locomo_batches
from hippograph.extraction import rules
from hippograph.extraction.spacy_extractor import DEFAULT_BUDGET_SECONDS, SpacyExtractor
from hippograph.models import Episode, EpisodeKind, Role


def _fill(unit: str) -> Callable[[int], str]:
    return lambda chars: (unit * (chars // len(unit) + 1))[:chars]


def _distinct(chars: int) -> str:
    syllables = ["ba", "ke", "lo", "mi", "nu", "ra", "si", "to", "ve", "zo"]
    words = ("".join(w) for n in (3, 4, 5) for w in itertools.product(syllables, repeat=n))
    return " ".join(words)[:chars]


INPUTS: dict[str, Callable[[int], str]] = {
    "run-on 'word word ...'": _fill("word "),
    "different words, one sentence": _distinct,
    "long comma list": lambda n: "I like " + _fill("apples, pears, plums, figs, ")(n - 7),
    "deep nesting 'the friend of'": lambda n: "I met " + _fill("the friend of ")(n - 10) + "Bob.",
    "coordinated 'and I' clauses": _fill("I love hiking and I "),
    "long number": _fill("1234567890"),
    "long URL": lambda n: "see https://example.com/" + _fill("path/")(n - 24),
    "no space at all": _fill("x"),
    "'I love it!!!...'": lambda n: "I love it" + "!" * (n - 9),
    "'I paid $$$...'": lambda n: "I paid " + "$" * (n - 7),
    "many short sentences": _fill("I live in Paris. "),
    "chained orders": _fill("please always keep it short and "),
}


def _episode(text: str, n: int = 0) -> Episode:
    return Episode(id=f"e{n}", user_id="u", kind=EpisodeKind.message, role=Role.user, content=text,
                   timestamp=datetime(2026, 5, 1, tzinfo=UTC), seq=n)


def _timed(fn: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def pathological(sizes: list[int], no_budget_max: int, baseline_cap: float) -> list[dict]:
    budgeted, unbounded = SpacyExtractor(), SpacyExtractor(budget_seconds=float("inf"))
    nlp = budgeted.load()
    unbounded.load()
    rows = []
    print(f"{'input':32} {'chars':>8} {'nlp(text) s':>12} {'extract s':>10} {'ratio':>6} {'read':>6} "
          f"{'no budget s':>12} {'ratio':>6}")
    for name, make in INPUTS.items():
        runs: list[tuple[int, float]] = []  # (size, seconds) of the baseline
        for size in sizes:
            text = make(size)
            parse = None
            if _projected(runs, size) <= baseline_cap:
                parse, _ = _timed(lambda: nlp(text))  # noqa: B023 - called at once
                runs.append((size, parse))
            seconds, result = _timed(lambda: budgeted.extract([_episode(text)]))  # noqa: B023
            read = _read_share(result.incomplete.get("e0"), len(text))  # type: ignore[attr-defined]
            free = _timed(lambda: unbounded.extract([_episode(text)]))[0] if size <= no_budget_max else None  # noqa: B023
            row = {"input": name, "chars": size, "parse_s": _round(parse), "extract_s": round(seconds, 2),
                   "ratio": _ratio(seconds, parse), "read_share": read, "extract_no_budget_s": _round(free),
                   "ratio_no_budget": _ratio(free, parse)}
            rows.append(row)
            print(f"{name:32} {size:>8,} {_show(parse):>12} {seconds:>10.2f} {_show(row['ratio']):>6} "
                  f"{read:>6.0%} {_show(free):>12} {_show(row['ratio_no_budget']):>6}", flush=True)
    return rows


def _projected(runs: list[tuple[int, float]], size: int) -> float:
    """The baseline's time at `size` from its last two runs, at the rate it grew between them."""
    if len(runs) < 2:
        return 0.0 if not runs else runs[-1][1] * size / runs[-1][0]
    (s1, t1), (s2, t2) = runs[-2:]
    growth = math.log(max(t2, 1e-3) / max(t1, 1e-3)) / math.log(s2 / s1)
    return t2 * (size / s2) ** max(growth, 1.0)


def _read_share(reason: str | None, total: int) -> float:
    """The share of the message read: all of it, or what its budget's reason says ('36,000 of 100,000')."""
    if not reason:
        return 1.0
    read = reason.split(" budget, ", 1)[1].split(" of ", 1)[0]
    return round(int(read.replace(",", "")) / total, 3)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _ratio(value: float | None, parse: float | None) -> float | None:
    return None if value is None or not parse else round(value / parse, 2)


def _show(value: object) -> str:
    return "-" if value is None else f"{value:.2f}"


def normal(path: Path, rounds: int) -> dict:
    batches = locomo_batches(json.loads(path.read_text()))
    extractor = SpacyExtractor()
    nlp = extractor.load()
    sets = {}
    for as_user in (False, True):
        sets["as said" if not as_user else "all as the user's"] = [
            [Episode(id=m.id or f"m{i}", user_id=b.user_id, session_id=b.session_id, kind=EpisodeKind.message,
                     role=Role.user if as_user else m.role, name=m.name, content=m.content,
                     timestamp=m.timestamp or datetime(2023, 1, 1, tzinfo=UTC), seq=i)
             for i, m in enumerate(b.messages)] for b in batches]
    out = {}
    print(f"\n{'LoCoMo turns':20} {'turns':>6} {'nlp.pipe turns/s':>17} {'extract turns/s':>16} {'ratio':>6}")
    for name, sessions in sets.items():
        texts = [[rules.normalise(rules.split_speaker(e.content)[1]) for e in s] for s in sessions]
        turns = sum(len(s) for s in sessions)
        parse_s, extract_s = [], []
        for _ in range(rounds):  # alternating, so that both see the same machine
            parse_s.append(_timed(lambda: [list(nlp.pipe(t, batch_size=128)) for t in texts])[0])  # noqa: B023
            extract_s.append(_timed(lambda: [extractor.extract(s) for s in sessions])[0])  # noqa: B023
        parse, extract = min(parse_s), min(extract_s)
        out[name] = {"turns": turns, "rounds": rounds, "parse_s": [round(x, 2) for x in parse_s],
                     "extract_s": [round(x, 2) for x in extract_s], "parse_turns_per_s": round(turns / parse, 1),
                     "extract_turns_per_s": round(turns / extract, 1), "ratio_best": round(extract / parse, 2)}
        print(f"{name:20} {turns:>6} {turns / parse:>17.1f} {turns / extract:>16.1f} {extract / parse:>6.2f}", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,100000", help="message lengths in characters")
    parser.add_argument("--no-budget-max", type=int, default=10_000, help="largest size also run without a budget")
    parser.add_argument("--baseline-cap", type=float, default=60.0)
    parser.add_argument("--locomo", type=Path, default=REPO.parent / "shared" / "data" / "locomo" / "locomo_dev5.json")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    load_before = Path("/proc/loadavg").read_text().strip() if Path("/proc/loadavg").exists() else ""
    report: dict = {"command": " ".join(["python", *sys.argv]), "budget_seconds": DEFAULT_BUDGET_SECONDS}
    report["pathological"] = pathological([int(s) for s in args.sizes.split(",")], args.no_budget_max,
                                          args.baseline_cap)
    report["normal"] = normal(args.locomo, args.rounds)
    report["machine"] = {"cpus": os.cpu_count(), "loadavg_before": load_before,
                         "loadavg_after": Path("/proc/loadavg").read_text().strip() if load_before else ""}
    print(f"\nload average before: {load_before}; after: {report['machine']['loadavg_after']}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
