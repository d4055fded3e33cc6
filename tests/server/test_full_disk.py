"""A full disk, on a small real tmpfs under a real `hippograph serve`: writes get 507 with a message that
says what is full and what to do, the process lives on, reads show everything acknowledged before,
writes resume by themselves when space returns, and a restart on the full disk serves reads. And the
start-up repairs, deferred on a full disk, run once space returns."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from hippograph.config import Settings
from hippograph.errors import InsufficientStorage
from hippograph.models import Episode, MessageIn, Role, utcnow
from hippograph.wiring import build
from tests.conftest import ServerProcess

MiB = 2**20
DISK = 320 * MiB
# Above what loading the shard from tmpfs populates at once the first time (the unwritten parts of its
# cached files, some 50 MiB for a small store, see hippograph/storage_guard.py), so that the restart
# below can open.
RESERVE = 96 * MiB
LEFT = RESERVE - 16 * MiB  # "nearly full": this much free, below the reserve


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of DISK bytes, unmounted afterwards. Skips (loudly) only where mounting is impossible."""
    where = tmp_path / "disk"
    where.mkdir()
    if os.geteuid() != 0:
        reason = "NOT RUN: the full-disk test mounts a small tmpfs and needs root (euid 0)"
        print(reason, file=sys.stderr)
        pytest.skip(reason)
    out = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK}", "tmpfs", str(where)],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        reason = f"NOT RUN: cannot mount a tmpfs for the full-disk test: {out.stderr.strip() or out.returncode}"
        print(reason, file=sys.stderr)
        pytest.skip(reason)
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


def fill(disk: Path, leave: int) -> Path:
    """Allocate a filler file so that `leave` bytes stay free on `disk`."""
    filler = disk / "filler"
    filler.unlink(missing_ok=True)
    st = os.statvfs(disk)
    size = st.f_bavail * st.f_frsize - leave
    assert size > 0, "the disk is already fuller than wanted"
    with filler.open("wb") as f:
        os.posix_fallocate(f.fileno(), 0, size)
    return filler


def remember(client: httpx.Client, mid: str, text: str) -> httpx.Response:
    return client.post("/v1/memories", json={"user_id": "alice", "session_id": "s1",
                                             "messages": [{"id": mid, "role": "user", "content": text}]})


def assert_refused(resp: httpx.Response, data: Path) -> None:
    assert resp.status_code == 507, resp.text
    body = resp.json()
    detail = body["detail"]
    assert body["error"] == "InsufficientStorage"
    assert str(data) in detail and "MiB free" in detail and "HIPPOGRAPH_MIN_FREE_BYTES" in detail, detail
    assert "free space" in detail and "resume by themselves" in detail, detail


def assert_reads(client: httpx.Client, profile: dict, words: list[str]) -> None:
    resp = client.get("/v1/users/alice/profile")
    assert resp.status_code == 200, resp.text
    assert resp.json() == profile
    for word in words:
        ctx = client.post("/v1/context", json={"user_id": "alice", "query": f"What about {word}?"})
        assert ctx.status_code == 200, ctx.text
        assert word in ctx.json()["context"]
        hits = client.post("/v1/search", json={"user_id": "alice", "query": word})
        assert hits.status_code == 200, hits.text
        assert any(word in h["text"] for h in hits.json()), hits.json()


def test_full_disk_refuses_writes_and_keeps_serving_reads(small_disk: Path, monkeypatch) -> None:
    monkeypatch.setenv("HIPPOGRAPH_MIN_FREE_BYTES", str(RESERVE))
    data = small_disk / "data"
    first, second = ServerProcess(data), ServerProcess(data)
    try:
        first.start()
        c = httpx.Client(base_url=first.url, timeout=60)
        assert remember(c, "m1", "I live in Seattle and I love hiking.").status_code == 200
        assert remember(c, "m2", "I manage the Northwest region at Acme Corp.").status_code == 200
        profile = c.get("/v1/users/alice/profile").json()
        item = next(f["id"] for f in profile["facts"] if "Seattle" in f["fact"])

        filler = fill(small_disk, LEFT)
        assert_refused(remember(c, "m3", "We decided to use Postgres for the billing service."), data)
        assert_refused(c.patch(f"/v1/users/alice/profile/{item}", json={"text": "Lives in Portland"}), data)
        assert_refused(c.delete(f"/v1/users/alice/profile/{item}"), data)
        assert_refused(c.delete("/v1/users/alice/memories/m1"), data)
        assert_refused(c.delete("/v1/users/alice/sessions/s1"), data)
        assert_refused(c.delete("/v1/users/alice"), data)
        assert first.proc is not None and first.proc.poll() is None, "the server died on the full disk"
        assert_reads(c, profile, ["Seattle", "Northwest"])
        ready = c.get("/readyz")
        assert ready.status_code == 200 and ready.json()["storage"]["writable"] is False, ready.text

        filler.unlink()  # space returns: the next write goes through, no restart
        assert remember(c, "m3", "We decided to use Postgres for the billing service.").status_code == 200
        assert c.get("/readyz").json()["storage"]["writable"] is True
        profile = c.get("/v1/users/alice/profile").json()
        assert any("Postgres" in d["decision"] for d in profile["decisions"]), profile

        fill(small_disk, LEFT)
        first.stop()
        c.close()

        second.start()  # on the nearly full disk: it starts, serves reads, refuses writes
        c = httpx.Client(base_url=second.url, timeout=60)
        ready = c.get("/readyz")
        assert ready.status_code == 200, ready.text
        assert ready.json()["status"] == "ready" and "writes refused with 507" in ready.json()["storage"]["warning"]
        assert_reads(c, profile, ["Seattle", "Northwest", "Postgres"])
        assert_refused(remember(c, "m4", "I moved to Portland."), data)
        assert second.proc is not None and second.proc.poll() is None
        c.close()
    finally:
        first.stop()
        second.stop()
    assert second.proc is not None and second.proc.stderr is not None
    log = second.proc.stderr.read().decode()
    said = [line for line in log.splitlines() if "start-up repairs" in line]
    assert len(said) == 1 and "HIPPOGRAPH_MIN_FREE_BYTES" in said[0], log[-3000:]


def test_start_up_repairs_wait_for_space_and_run_when_it_returns(tmp_path: Path) -> None:
    """Opened on a disk below the reserve, the service leaves what a crash left pending as it is, and
    the sweep's retry finishes it once space returns (here: once the reserve is lowered)."""
    data = tmp_path / "data"
    svc = build(Settings(data_dir=data))
    svc.open()
    svc.remember("alice", "s1", messages=[MessageIn(id="m1", role=Role.user, content="I live in Seattle.")])
    crashed = Episode(id="ep-left-pending", user_id="alice", session_id="s1", role=Role.user,
                      content="I love hiking in the Cascades.", timestamp=utcnow(), seq=5)
    svc.graph.add_episodes([crashed])  # stored, never extracted nor indexed: as a crash leaves it
    svc.close()

    svc = build(Settings(data_dir=data, min_free_bytes=2**60))
    svc.open()
    try:
        assert [e.id for e in svc.graph.pending_episodes()] == [crashed.id]  # not repaired on a full disk
        assert svc.describe()["storage"]["writable"] is False
        assert "Seattle" in svc.context("alice", "Where does Alice live?").context
        with pytest.raises(InsufficientStorage, match="HIPPOGRAPH_MIN_FREE_BYTES"):
            svc.remember("alice", "s1", messages=[MessageIn(role=Role.user, content="I moved to Portland.")])
        assert svc.retry_pending() == 0 and svc.graph.pending_episodes()

        svc.guard.min_free_bytes = 0  # space returns
        svc.retry_pending()
        assert svc.graph.pending_episodes() == []
        assert any("Cascades" in h.text for h in svc.search("alice", "hiking in the Cascades"))
    finally:
        svc.close()
