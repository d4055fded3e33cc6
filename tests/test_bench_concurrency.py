"""`hippograph bench concurrency` against a real server subprocess, and its read-back catching a loss."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from hippograph.bench import concurrency
from hippograph.cli import main

ROUTES = {concurrency.WRITE, concurrency.CONTEXT, concurrency.SEARCH}


def test_a_short_run_reads_back_every_acknowledged_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report.json"
    code = main(["bench", "concurrency", "--writers", "1", "--readers", "1", "--users", "2", "--duration", "3",
                 "--messages", "2", "--seed", "3", "--out", str(out)])
    report = json.loads(out.read_text())
    assert code == 0 and report["passed"] is True
    assert set(report["results"]) == ROUTES | {"all"}
    for row in report["results"].values():
        assert set(concurrency.COLUMNS) <= set(row) and row["p50_ms"] <= row["p95_ms"] <= row["max_ms"]
    writes = report["results"][concurrency.WRITE]
    assert writes["requests"] > 0 and writes["errors_by_status"] == {}
    reads = report["results"][concurrency.CONTEXT]["requests"] + report["results"][concurrency.SEARCH]["requests"]
    assert reads > 0 and report["results"]["all"]["requests"] == writes["requests"] + reads
    assert report["load"] == {"writers": 1, "readers": 1, "users": 2, "duration_s": 3.0, "messages_per_write": [2, 2],
                              "wait": True}
    assert report["server"]["graph"] and "loadavg_1m_start" in report["machine"] and report["command"]
    # every write of the load acknowledged 2 messages, and the warm-up 1 per user: all of them come back,
    # and the server's audit log created exactly as many
    total = report["readback"]["total"]
    acknowledged = 2 * writes["requests"] + 2
    assert total == {"acknowledged": acknowledged, "found": acknowledged, "lost": 0, "listed": acknowledged,
                     "pending_at_ack": 0}
    assert sum(u["found"] for u in report["readback"]["per_user"].values()) == acknowledged
    assert report["readback"]["lost_ids"] == [] and report["server_errors_5xx"] == 0

    printed = capsys.readouterr().out
    assert "| POST /v1/memories |" in printed and "| total |" in printed and "passed" in printed


def test_read_back_counts_a_deleted_or_altered_message_as_lost(client: TestClient) -> None:
    messages = [{"id": f"rb-{i}", "role": "user", "content": f"I moved to Lisbon in month {i}."} for i in range(3)]
    assert client.post("/v1/memories", json={"user_id": "rb", "session_id": "s", "messages": messages}).status_code == 200
    assert client.delete("/v1/users/rb/memories/rb-0").status_code == 200
    acked = {("rb", m["id"]): m["content"] for m in messages}
    acked[("rb", "rb-2")] = "something else"  # stored, but not what was acknowledged
    per_user, lost = concurrency.read_back(client, acked, ["rb"], threads=1)
    assert per_user["rb"] == {"acknowledged": 3, "found": 1, "lost": 2, "listed": 3}
    assert lost == ["rb/rb-0", "rb/rb-2"]


def test_bad_options_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "concurrency", "--messages", "x"]) == 2
    assert main(["bench", "concurrency", "--writers", "0", "--readers", "0"]) == 2
    assert main(["bench", "concurrency", "--url", "http://127.0.0.1:9", "--workdir", "/tmp/x"]) == 2
    assert "--messages" in capsys.readouterr().err


def test_a_short_unwaited_run_waits_until_every_acknowledged_message_is_searchable(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    code = main(["bench", "concurrency", "--writers", "2", "--readers", "1", "--users", "2", "--duration", "3",
                 "--messages", "1-3", "--seed", "4", "--no-wait", "--out", str(out)])
    report = json.loads(out.read_text())
    assert code == 0 and report["passed"] is True and report["load"]["wait"] is False
    total = report["readback"]["total"]
    assert total["lost"] == 0 and total["found"] == total["acknowledged"] > 0
    # the answers listed what was not searchable yet; afterwards none of it was left pending
    assert total["pending_at_ack"] > 0 and report["never_searchable"] == 0
    assert report["pending_after_load"] <= total["acknowledged"] and report["searchable_after_s"] >= 0
