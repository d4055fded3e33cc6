"""`bench/tenant_slots.py` on two of the four domains, cut short: the threshold of each domain is chosen on the
other one, among those tried, and each domain is measured through the write path with it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.scripts import ROOT, load


def _bench():
    return load(ROOT / "bench" / "tenant_slots.py", "tenant_slots_bench")


def test_each_domain_is_measured_with_the_threshold_chosen_without_it(tmp_path: Path) -> None:
    bench = _bench()
    for domain in ("logistics", "vet"):
        slots = json.loads((ROOT / "bench" / "notes" / "custom" / domain / "slots.json").read_text())["slots"]
        cut = [{**s, "held_out": s["held_out"][:4], "changes": s["changes"][:1], "near_misses": s["near_misses"][:3]}
               for s in slots]
        (tmp_path / "data" / domain).mkdir(parents=True)
        (tmp_path / "data" / domain / "slots.json").write_text(json.dumps({"writer": domain, "slots": cut}))
    out = tmp_path / "report.json"
    assert bench.main(["--data", str(tmp_path / "data"), "--general", "20", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert set(report["domains"]) == {"logistics", "vet"}
    for domain, measured in report["domains"].items():
        tried = report["objective_tried"][domain]
        # chosen on the other domain alone: its objective there is the best of those tried
        assert measured["threshold"] == report["chosen_without"][domain] in bench.TRIED
        assert tried[str(measured["threshold"])] == max(tried.values())
        assert 0.0 <= measured["recall"] <= 1.0 and 0.0 <= measured["near_miss_false_rate"] <= 1.0
    # a statement of a slot is found at least sometimes: held-out recall over both domains is not nil
    assert sum(m["recall"] for m in report["domains"].values()) > 0
    one = tmp_path / "one"
    (one / "vet").mkdir(parents=True)
    (one / "vet" / "slots.json").write_text((tmp_path / "data" / "vet" / "slots.json").read_text())
    assert bench.main(["--data", str(one)]) == 2  # one domain: nothing to choose a threshold on
