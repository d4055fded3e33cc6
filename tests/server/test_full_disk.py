"""A full disk, on a small real tmpfs under a real `hippograph serve`: writes get 507 with a message that
says what is full and what to do, the process lives on, reads show everything acknowledged before,
writes resume by themselves when space returns, and a restart on the full disk serves reads. The same
under load, with the disk filled to the last byte while writes acknowledged without waiting are still
being extracted. And the start-up repairs, deferred on a full disk, run once space returns."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Self

import httpx
import pytest

from hippograph.config import Settings
from hippograph.errors import InsufficientStorage
from hippograph.models import Episode, MessageIn, Role, utcnow
from hippograph.storage_guard import DEFAULT_MIN_FREE_BYTES, StorageGuard, allocated_bytes
from hippograph.vectors.base import VectorFilter
from hippograph.vectors.edge_store import EdgeVectorStore
from hippograph.wiring import build
from tests.conftest import ServerProcess
from tests.contracts.test_vector_contract import DIM, put, record, unit
from tests.server.test_unwaited_writes import settled

MiB = 2**20
DISK = 320 * MiB
# Above what loading the shard from tmpfs populates at once the first time (the unwritten parts of its
# cached files, some 50 MiB for a small store, see hippograph/storage_guard.py), so that the restart
# below can open.
RESERVE = 96 * MiB
LEFT = RESERVE - 16 * MiB  # "nearly full": this much free, below the reserve


@contextmanager
def mounted(where: Path, size: int) -> Iterator[Path]:
    """A tmpfs of `size` bytes at `where`, unmounted afterwards. Skips (loudly) only where mounting is
    impossible."""
    where.mkdir()
    if os.geteuid() != 0:
        reason = "NOT RUN: the full-disk test mounts a small tmpfs and needs root (euid 0)"
        print(reason, file=sys.stderr)
        pytest.skip(reason)
    out = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        reason = f"NOT RUN: cannot mount a tmpfs for the full-disk test: {out.stderr.strip() or out.returncode}"
        print(reason, file=sys.stderr)
        pytest.skip(reason)
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    with mounted(tmp_path / "disk", DISK) as where:
        yield where


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
    # one record, however the log handler wrapped it (its width and the path's length decide where)
    said = " ".join(log.split()).split("start-up repairs")
    assert len(said) == 2 and "HIPPOGRAPH_MIN_FREE_BYTES" in said[1][:1500], log[-3000:]


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


def test_the_vector_index_touches_no_file_the_disk_cannot_take(tmp_path: Path) -> None:
    """Below the floor (a quarter of the reserve) a change of Qdrant Edge's memory-mapped files is
    refused before it is made, whoever asks: the files stay as they were, reads go on, and changes go
    through again as soon as there is room."""
    folder = tmp_path / "vectors"
    guard = StorageGuard([folder], min_free_bytes=0, mapped=folder)
    store = EdgeVectorStore(folder, DIM, guard=guard)
    store.open()
    try:
        put(store, [record("a", "the harbour at dawn")], [unit(1)])
        guard.min_free_bytes = 2**60  # the disk is full
        held = allocated_bytes(tmp_path, ["vectors"])
        for change in (lambda: put(store, [record("b", "the boat")], [unit(0, 1)]), lambda: store.delete(["a"]),
                       lambda: store.delete_user("u1"), store.compact, store.maintain, store.flush):
            with pytest.raises(InsufficientStorage, match="HIPPOGRAPH_MIN_FREE_BYTES"):
                change()
        assert allocated_bytes(tmp_path, ["vectors"]) == held
        assert [h.id for h in store.query(VectorFilter(user_id="u1"), 5, dense=unit(1))] == ["a"]

        guard.min_free_bytes = 0  # space returns
        put(store, [record("b", "the boat")], [unit(0, 1)])
        assert store.count() == 2
    finally:
        guard.min_free_bytes = 0
        store.close()


# --- a disk filled to the last byte under load ------------------------------------------------------
LOADED_DISK = 200 * MiB  # with the default reserve (64 MiB)
QUEUE_SECONDS = 6  # writes acknowledged without waiting pile up for the background threads
HOLD_SECONDS = 3  # the load goes on with LAST free, then as long again with nothing free
LAST = 2 * MiB  # a disk filling up spends a while with a little left: enough for SQLite's next steps
USERS = ("ann", "bob", "cy")
PLACES = ("Seattle", "Lisbon", "Osaka", "Denver", "Nairobi", "Oslo")
TOPICS = ("the billing service", "the launch", "the Q3 budget", "the vendor contract", "the migration")


def said(rng: random.Random, mid: str) -> str:
    """A message of some 30 to 150 words that names its own id, with facts for the extractor."""
    sentences = [f"Message {mid}."]
    for _ in range(rng.randint(2, 12)):
        sentences.append(rng.choice([
            f"I moved to {rng.choice(PLACES)} and I love hiking there with {rng.choice(USERS).title()}.",
            f"We decided to use Postgres for {rng.choice(TOPICS)} because it is cheaper.",
            f"My manager at Acme asked me about {rng.choice(TOPICS)} on Friday.",
        ]))
    return " ".join(sentences)


def take(disk: Path, filler: Path, leave: int = 0) -> None:
    """Another process fills the disk until `leave` bytes are free, as a growing log or download
    would: half of what is to go at a time, a few milliseconds apart."""
    with filler.open("ab") as f:
        for _ in range(400):
            st = os.statvfs(disk)
            free = st.f_bavail * st.f_frsize - leave
            if free <= 0:
                return
            try:
                os.posix_fallocate(f.fileno(), 0, os.fstat(f.fileno()).st_size + max(free // 2, st.f_frsize))
            except OSError:
                pass  # the disk's last pages went elsewhere meanwhile
            time.sleep(0.005)


class Load:
    """2 writers and 1 reader (context and profile) until stopped; what came back, and every
    acknowledged message with its text. One writer sends "wait": false, so its writes pile up for the
    background threads, the other waits for each write to be extracted."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.stop = threading.Event()
        self.answers: Counter[str] = Counter()
        self.wrong: list[str] = []  # answers no full disk may give, and requests that got none
        self.acked: dict[str, tuple[str, str]] = {}  # message id -> (user, text)
        self.last_ack = 0.0
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.writer, args=(n,), daemon=True) for n in range(2)]
        self.threads.append(threading.Thread(target=self.reader, daemon=True))

    def __enter__(self) -> Self:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=120)

    def _answer(self, kind: str, resp: httpx.Response | Exception, fine: set[int]) -> None:
        status = resp.status_code if isinstance(resp, httpx.Response) else type(resp).__name__
        with self.lock:
            self.answers[f"{kind} {status}"] += 1
            if status not in fine:
                text = resp.text[:300] if isinstance(resp, httpx.Response) else str(resp)
                self.wrong.append(f"{kind} {status}: {text}")

    def writer(self, n: int) -> None:
        rng = random.Random(n)
        with httpx.Client(base_url=self.url, timeout=120) as c:
            for i in range(10**6):
                if self.stop.is_set():
                    return
                user, ids = rng.choice(USERS), [f"w{n}-{i}-{k}" for k in range(rng.randint(1, 3))]
                texts = {m: said(rng, m) for m in ids}
                body = {"user_id": user, "session_id": f"s{i % 2}", "wait": n == 1,
                        "messages": [{"id": m, "role": "user", "content": t} for m, t in texts.items()]}
                try:
                    resp = c.post("/v1/memories", json=body)
                except httpx.HTTPError as exc:
                    self._answer("write", exc, set())
                    time.sleep(0.5)
                    continue
                self._answer("write", resp, {200, 202, 507})
                if resp.status_code in (200, 202):
                    with self.lock:
                        self.acked.update({m: (user, t) for m, t in texts.items()})
                        self.last_ack = time.monotonic()
                else:
                    time.sleep(0.05)

    def reader(self) -> None:
        rng = random.Random(7)
        with httpx.Client(base_url=self.url, timeout=120) as c:
            while not self.stop.is_set():
                user = rng.choice(USERS)
                try:
                    if rng.random() < 0.5:
                        resp = c.post("/v1/context", json={"user_id": user, "query": f"Where is {rng.choice(PLACES)}?"})
                    else:
                        resp = c.get(f"/v1/users/{user}/profile")
                except httpx.HTTPError as exc:
                    self._answer("read", exc, set())
                    time.sleep(0.5)
                    continue
                self._answer("read", resp, {200})


def tail(lines: list[bytes], n: int = 60) -> str:
    return b"".join(lines[-n:]).decode(errors="replace")


def unreadable(url: str, acked: dict[str, tuple[str, str]], processed: bool = False) -> list[str]:
    """The acknowledged messages that cannot be read back as sent (or, with `processed`, that are not
    extracted and searchable yet)."""
    out = []
    with httpx.Client(base_url=url, timeout=60) as c:
        for mid, (user, text) in sorted(acked.items()):
            resp = c.get(f"/v1/users/{user}/memories/{mid}")
            parts = resp.json().get("parts", []) if resp.status_code == 200 else []
            if [p["content"] for p in parts] != [text]:
                out.append(f"{mid}: {resp.status_code} {resp.text[:200]}")
            elif processed and parts[0]["status"] != "processed":
                out.append(f"{mid}: {parts[0]['status']}")
    return out


def fill_under_load(url: str, disk: Path, alive: Callable[[], bool]) -> tuple[Load, dict]:
    """The scenario, against the server at `url` on the fresh tmpfs `disk`: three users, the disk filled
    to 24 MiB above the default reserve, then the load; QUEUE_SECONDS later another process takes the
    disk down to LAST free, HOLD_SECONDS later to nothing, HOLD_SECONDS later it gives everything back.
    The load, and whether the server was `alive` on the full disk, how little was free at the least,
    and whether a write went through once space returned (waited for up to a minute)."""
    with httpx.Client(base_url=url, timeout=60) as c:  # the reader's users exist
        for user in USERS:
            c.post("/v1/memories", json={"user_id": user, "messages": [
                {"id": f"{user}-0", "role": "user", "content": f"I am {user.title()}."}]}).raise_for_status()
    filler = fill(disk, DEFAULT_MIN_FREE_BYTES + 24 * MiB)
    with Load(url) as load:
        time.sleep(QUEUE_SECONDS)
        take(disk, filler, LAST)
        time.sleep(HOLD_SECONDS)
        take(disk, filler)
        outcome: dict = {"least_free": os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize}
        time.sleep(HOLD_SECONDS)
        outcome["alive_when_full"] = alive()
        filler.unlink()  # space returns: writes resume, with no restart
        freed = time.monotonic()
        while alive() and load.last_ack < freed and time.monotonic() - freed < 60:
            time.sleep(0.2)
        outcome["writes_resumed"] = load.last_ack > freed
    return load, outcome


@pytest.fixture
def loaded_disk(tmp_path: Path) -> Iterator[Path]:
    with mounted(tmp_path / "disk", LOADED_DISK) as where:
        yield where


def test_a_disk_filled_under_load_never_kills_the_server(loaded_disk: Path, monkeypatch) -> None:
    """The background threads extract and index writes acknowledged without waiting while another
    process fills the disk to the last byte. Each such change of Qdrant Edge's memory-mapped files on
    the full disk was a SIGBUS that killed the server; now every write is 2xx or 507, reads go on, and
    everything acknowledged is there after space returns and after a restart."""
    monkeypatch.delenv("HIPPOGRAPH_MIN_FREE_BYTES", raising=False)  # the default reserve
    monkeypatch.setenv("HIPPOGRAPH_SESSIONS__SWEEP_SECONDS", "2")  # deferred extraction retried soon
    monkeypatch.setenv("PYTHONFAULTHANDLER", "1")  # a SIGBUS leaves the threads' stacks in the log
    data = loaded_disk / "data"
    first, second = ServerProcess(data), ServerProcess(data)
    try:
        first.start()
        log = first.drained()

        def alive() -> bool:
            return first.proc is not None and first.proc.poll() is None

        load, outcome = fill_under_load(first.url, loaded_disk, alive)
        assert outcome["alive_when_full"] and alive(), \
            f"the server died (exit code {first.proc and first.proc.returncode}): {load.answers}\n{tail(log)}"
        assert outcome["least_free"] == 0
        assert outcome["writes_resumed"], f"no write went through once space returned: {load.answers}"
        assert not load.wrong, f"{len(load.wrong)} answers neither 2xx nor 507 (writes) or 200 (reads), " \
                               f"{dict(load.answers)}: {load.wrong[:5]}"
        assert load.answers["write 507"] and load.answers["read 200"], load.answers
        assert unreadable(first.url, load.acked) == []
        first.stop()

        second.start()  # what the full disk held back is finished by the start-up repairs, which the
        second.drained()  # sweep runs once the server is ready: waited for through the status route
        with httpx.Client(base_url=second.url, timeout=60) as c:
            for user in USERS:
                settled(c, user, [m for m, (u, _) in load.acked.items() if u == user], timeout=300)
        assert unreadable(second.url, load.acked, processed=True) == []
    finally:
        first.stop()
        second.stop()
