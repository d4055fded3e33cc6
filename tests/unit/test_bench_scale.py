from __future__ import annotations

import json
from collections import Counter

import pytest

from hippograph.bench import scale
from hippograph.errors import InvalidInput
from hippograph.models import Role


def test_generator_is_deterministic_and_well_formed() -> None:
    a = scale.generate(3, 2500)
    assert a.messages == scale.generate(3, 2500).messages
    assert a.messages != scale.generate(4, 2500).messages
    assert len(a.messages) == 2500
    assert len({m.id for _, _, m in a.messages}) == 2500
    assert all(m.role in (Role.user, Role.assistant) and m.content.strip() for _, _, m in a.messages)
    stamps = [m.timestamp for _, _, m in a.messages if m.timestamp is not None]
    assert len(stamps) == 2500 and all(t.tzinfo is not None for t in stamps)
    assert stamps == sorted(stamps)
    words = [len(m.content.split()) for _, _, m in a.messages]
    assert 10 <= sum(words) / len(words) <= 30
    # a smaller run is a prefix of a larger one, so sizes can grow one store
    assert scale.generate(3, 1000).messages == a.messages[:1000]


def test_sessions_alternate_and_one_user_is_heavy() -> None:
    stream = scale.generate(5, 6000)
    sessions: dict[str, list[Role]] = {}
    for _, session, m in stream.messages:
        sessions.setdefault(session, []).append(m.role)
    for roles in list(sessions.values())[:-1]:  # the last one may be cut at the size
        assert 10 <= len(roles) <= 40
        assert roles[::2] == [Role.user] * len(roles[::2])
        assert roles[1::2] == [Role.assistant] * len(roles[1::2])
    counts = Counter(u for u, _, _ in stream.messages)
    assert len(counts) == scale.MIN_USERS
    assert counts.most_common(1)[0][0] == scale.HEAVY
    assert counts[scale.HEAVY] > 0.2 * len(stream.messages)


def test_no_sizes_is_an_error() -> None:
    with pytest.raises(InvalidInput):
        scale.run([], seed=1, out=None, workdir=None, queries=5)


def test_small_run_end_to_end(tmp_path) -> None:
    report = scale.run([300], seed=1, out=tmp_path / "s.json", workdir=None, queries=5)
    saved = json.loads((tmp_path / "s.json").read_text())
    assert saved == json.loads(json.dumps(report))
    assert saved["benchmark"] == "scale" and saved["seed"] == 1
    assert {"command", "machine", "messages_per_user", "plans"} <= saved.keys()
    row = saved["results"]["300"]
    assert row["memories"] == 300
    assert sum(saved["messages_per_user"]["300"].values()) == 300
    assert sum(saved["plans"]["300"].values()) == 5
    for key in ("ingest_messages_per_s", "latency_p50_ms", "latency_p95_ms", "tokens_mean", "rss_mb",
                "peak_rss_mb", "disk_mb", "disk_allocated_mb"):
        assert row[key] > 0, key
    assert row["latency_p95_ms"] >= row["latency_p50_ms"]
