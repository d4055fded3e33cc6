"""Slots a deployment adds for its own domain (`hippograph.notes_model.tenant_slots`), measured on phrasings
held apart from their examples, through the write path of the embedded default (`Hippograph.remember`).

`bench/notes/custom/<domain>/slots.json`: each domain's writer defined three slots, each with 20 examples
(what the deployment gives), 25 further statements worded otherwise (`held_out`), 6 changes (a statement,
then a later one that changes the value) and 15 near misses (questions, another person's value,
hypotheticals, tool results, a statement of another of the domain's slots). Each domain is a tenant whose
slots file holds the examples only.

The threshold (the least mean similarity of a clause to a slot's nearest examples) is chosen leave-one-
domain-out: for each domain, the one that scores best on the other three domains (the mean of held-out
recall, one less the near misses' false rate, and one less the share of the general notes corpus's notes
a domain's slots take from the catalogue), then that domain is measured through the pipeline with it:

- recall: held-out statements, each from a fresh user, that leave a current note of their slot;
- near-miss false rate: near misses that leave a note of the slot they are near;
- changes: the later statement's note is current in the slot and the earlier one is not (single-valued
  slots; for a multi-valued slot the later one is current, and replacing the earlier is reported apart);
- taken from the catalogue: notes of the general corpus's messages (`bench/notes/w*`) that one of the
  domain's slots takes.

    python bench/tenant_slots.py --out bench/results/tenant-slots.json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from hippograph.bench.common import bench_service
from hippograph.config import Settings
from hippograph.models import Episode, MessageIn, Role, utcnow
from hippograph.notes_model import corpus
from hippograph.notes_model.features import DIM
from hippograph.notes_model.tenant_slots import SlotSpec, TenantSlots

#: what a deployment's slots file holds of a domain's slot (the rest is what it is measured on)
SPEC = ("slot", "kind", "multi", "description", "examples")
TRIED = (0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7)
DATA = REPO / "bench" / "notes" / "custom"


def domains(folder: Path) -> dict[str, list[dict]]:
    return {p.parent.name: json.loads(p.read_text())["slots"] for p in sorted(folder.glob("*/slots.json"))}


def general_messages(n: int, seed: int = 7) -> list[str]:
    """A sample of the general corpus's user messages that give a note."""
    files = [f for f in corpus.corpus_files(REPO / "bench" / "notes") if f.parent.name.startswith("w")]
    said = [m.content for s in corpus.load_all(files) for m in s.user_messages() if any(c.gives_note for c in m.clauses)]
    return random.Random(seed).sample(said, min(n, len(said)))


class Reader:
    """The clauses of a message as the write path judges them: each with its vector and whether it is a note."""

    def __init__(self, service) -> None:
        self.service, self.learned = service, service.ingestor.notes.learned

    def clauses(self, texts: list[str]) -> list[list[tuple[np.ndarray, bool]]]:
        out = []
        for text in texts:
            ep = Episode(id="e", user_id="u", content=text, role=Role.user, timestamp=utcnow())
            cl = self.service.extractor.extract([ep]).clauses.get("e", [])
            if not cl:
                out.append([])
                continue
            x = self.learned.features(cl)
            acts = self.learned.j.act.probabilities(x)
            out.append([(row[:DIM], self.learned.act(a)[0] == "note") for row, a in zip(x, acts, strict=True)])
        return out


def scores(slots: TenantSlots, clauses: list[list[tuple[np.ndarray, bool]]]) -> list[tuple[str | None, float]]:
    """For each message: the slot its best note clause is nearest to and how near (None, 0: no note clause)."""
    out: list[tuple[str | None, float]] = []
    for cl in clauses:
        notes = [v for v, is_note in cl if is_note]
        if not notes:
            out.append((None, 0.0))
            continue
        best = slots.scores(np.stack(notes)).max(axis=0)  # each slot's nearest clause
        k = int(best.argmax())
        out.append((slots.specs[k].slot, float(best[k])))
    return out


def clause_level(reader: Reader, data: dict[str, list[dict]], general: list[str]) -> dict[str, dict]:
    """Per domain: the scores of its held-out statements, near misses and the general corpus's messages."""
    general_clauses = reader.clauses(general)
    out = {}
    for d, slots in data.items():
        specs = [SlotSpec.model_validate({k: s[k] for k in SPEC}) for s in slots]
        own = TenantSlots.of(specs, reader.learned.embed)
        out[d] = {"held": [(s["slot"], sc) for s in slots for sc in scores(own, reader.clauses(s["held_out"]))],
                  "near": [(s["slot"], sc) for s in slots for sc in scores(own, reader.clauses(s["near_misses"]))],
                  "general": scores(own, general_clauses)}
    return out


def objective(part: dict, t: float) -> float:
    recall = np.mean([got == want and s >= t for want, (got, s) in part["held"]])
    false = np.mean([got == want and s >= t for want, (got, s) in part["near"]])
    taken = np.mean([got is not None and s >= t for got, s in part["general"]])
    return float((recall + (1 - false) + (1 - taken)) / 3)


def through_pipeline(data: dict[str, list[dict]], chosen: dict[str, float], general: list[str]) -> dict[str, dict]:
    """Each domain measured through `Hippograph.remember`, its slots at the threshold chosen without it."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "slots"
        folder.mkdir()
        for d, slots in data.items():
            (folder / f"{d}.json").write_text(json.dumps({"slots": [
                {**{k: s[k] for k in SPEC}, "threshold": chosen[d]}
                for s in slots]}))
        base = Settings()
        settings = base.model_copy(update={"extraction": base.extraction.model_copy(
            update={"separate_process": False, "slots_dir": folder})})
        report = {}
        with bench_service(None, settings) as service:
            n = iter(range(10**9))

            def say(d: str, *texts: str) -> list:
                """The user's notes, each with the client id of the message it was said in."""
                owner = service.tenancy.owner(d, f"u{next(n)}", create=True)
                for k, t in enumerate(texts):
                    service.remember(owner, f"s{k}", None, [MessageIn(id=f"m{k}", role=Role.user, content=t)])
                notes = service.graph.list_notes(owner, include_history=True)
                said = {e.id: e.client_id for e in service.graph.get_episodes(
                    owner, [i for nt in notes for i in nt.source_episode_ids])}
                return [(nt, {said.get(i) for i in nt.source_episode_ids}) for nt in notes]

            def family(note) -> str:
                return note.slot.split(":", 1)[0]

            for d, slots in data.items():
                held = near = total_near = total_held = 0
                changes = {"single": [0, 0], "multi current": [0, 0], "multi replaced": [0, 0]}
                for s in slots:
                    for t in s["held_out"]:
                        total_held += 1
                        held += any(nt.current and family(nt) == s["slot"] for nt, _ in say(d, t))
                    for t in s["near_misses"]:
                        total_near += 1
                        near += any(family(nt) == s["slot"] for nt, _ in say(d, t))
                    for c in s["changes"]:
                        notes = [(nt, ids) for nt, ids in say(d, c["before"], c["after"]) if family(nt) == s["slot"]]
                        now = any(nt.current for nt, ids in notes if "m1" in ids)
                        before_current = any(nt.current for nt, ids in notes if ids == {"m0"})
                        if s["multi"]:
                            changes["multi current"][0] += now
                            changes["multi current"][1] += 1
                            changes["multi replaced"][0] += now and not before_current
                            changes["multi replaced"][1] += 1
                        else:
                            changes["single"][0] += now and not before_current
                            changes["single"][1] += 1
                taken = 0
                for t in general[:200]:
                    taken += any(family(nt) in {s["slot"] for s in slots} for nt, _ in say(d, t))
                report[d] = {"threshold": chosen[d], "recall": round(held / total_held, 3),
                             "near_miss_false_rate": round(near / total_near, 3),
                             **{f"changes {k}": round(a / b, 3) if b else None for k, (a, b) in changes.items()},
                             "taken_from_catalogue": round(taken / min(len(general), 200), 3)}
        return report


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--general", type=int, default=600, help="general corpus messages the thresholds are chosen with")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    data = domains(args.data)
    if len(data) < 2:
        print(f"need two domains or more under {args.data}", file=sys.stderr)
        return 2
    t0 = time.time()
    general = general_messages(args.general)
    base = Settings()
    with bench_service(None, base.model_copy(update={"extraction": base.extraction.model_copy(
            update={"separate_process": False})})) as service:
        parts = clause_level(Reader(service), data, general)
    chosen, tried = {}, {}
    for d in data:
        others = [parts[o] for o in data if o != d]
        tried[d] = {t: round(float(np.mean([objective(p, t) for p in others])), 4) for t in TRIED}
        chosen[d] = max(tried[d], key=lambda t: tried[d][t])
    everyone = {t: round(float(np.mean([objective(p, t) for p in parts.values()])), 4) for t in TRIED}
    report = {"chosen_without": chosen, "objective_tried": tried, "objective_all_domains": everyone,
              "threshold_all_domains": max(everyone, key=lambda t: everyone[t]),
              "domains": through_pipeline(data, chosen, general)}
    keys = ["recall", "near_miss_false_rate", "changes single", "changes multi current", "changes multi replaced",
            "taken_from_catalogue"]
    report["mean"] = {k: round(float(np.mean([r[k] for r in report["domains"].values() if r[k] is not None])), 3)
                      for k in keys}
    report["seconds"] = round(time.time() - t0, 1)
    print(json.dumps(report, indent=1))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
