"""`hippograph bench concurrency`: the HTTP API under concurrent clients, then an exact read-back.

`--writers` threads post 1-3 messages at a time (`POST /v1/memories`) and `--readers` threads ask
`POST /v1/context` (1000-token budget) or `POST /v1/search` (half each) for `--duration` seconds, each
thread with its own connection, over `--users` users. The text comes from the personas and templates of
`bench scale`; every message has a client id unique to the run, so what the server acknowledged can be
read back exactly. Latency is the client's wall time per request.

Without `--url` the command starts `hippograph serve` itself on a free loopback port and a fresh data
folder (or `--workdir`), with the environment it was given: the `HIPPOGRAPH_*` settings choose the
backends. Each user gets one untimed write first (so that readers never ask about an unknown user),
and one context and one search call warm the server up.

With `--no-wait` the writes are sent with `"wait": false` (answered once stored); after the load the
status route is asked until every acknowledged message is searchable, and the report says how many
were pending when the load ended and how many seconds later none was (the run fails if some never is).

After the load, every acknowledged message (in `stored` or `duplicates` of a 2xx answer) is fetched by
its id (`GET /v1/users/{user}/memories/{id}`) and counted found when its content is what was sent; the
user's audit log counts the memories the server created (`listed`, at most 10,000 per user), which
exceeds `acknowledged` when a write was stored but its answer never reached the client. The run fails
(exit 1) when an acknowledged message is lost or the server answered a 5xx.
"""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

import hippograph
from hippograph.bench.common import command_line, machine, markdown_table, percentile, write_report
from hippograph.bench.scale import ASIDES, CHAT, EVENTS, QUESTIONS, SMALL_TALK, _persona, _slots
from hippograph.errors import BackendUnavailable, InvalidInput

WRITE, CONTEXT, SEARCH = "POST /v1/memories", "POST /v1/context", "POST /v1/search"
COLUMNS = ("requests", "per_s", "p50_ms", "p95_ms", "max_ms", "errors")
READBACK_COLUMNS = ("acknowledged", "found", "lost", "listed", "pending_at_ack")
TIMEOUT_S, START_TIMEOUT_S, AUDIT_LIMIT = 120.0, 180.0, 10_000


@dataclass(frozen=True)
class Load:
    writers: int
    readers: int
    users: int
    duration: float
    messages: tuple[int, int]  # per write, inclusive
    seed: int
    wait: bool = True  # False: writes are answered once stored, extracted afterwards

    def check(self) -> None:
        lo, hi = self.messages
        if self.writers < 0 or self.readers < 0 or self.writers + self.readers == 0:
            raise InvalidInput("--writers and --readers cannot be negative, and at least one must be positive")
        if self.users < 1 or self.duration <= 0 or not 1 <= lo <= hi <= 2000:
            raise InvalidInput("--users must be positive, --duration more than 0 s, --messages LO-HI within 1-2000")


def parse_range(text: str) -> tuple[int, int]:
    lo, _, hi = text.partition("-")
    try:
        return int(lo), int(hi or lo)
    except ValueError:
        raise InvalidInput(f"--messages: expected N or LO-HI, e.g. 1-3, got {text!r}") from None


@dataclass
class Tally:
    """One thread's requests to one route: latencies, and failures by status code or exception."""

    latency_ms: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)

    def merge(self, other: Tally) -> None:
        self.latency_ms += other.latency_ms
        self.errors.update(other.errors)


@dataclass
class Client:
    """One thread's connection and tallies, and the messages the server acknowledged to it."""

    http: httpx.Client
    tallies: dict[str, Tally] = field(default_factory=lambda: {r: Tally() for r in (WRITE, CONTEXT, SEARCH)})
    acked: dict[tuple[str, str], str] = field(default_factory=dict)  # (user, message id) -> content
    pending: Counter[str] = field(default_factory=Counter)  # per user: acknowledged but not yet searchable

    def post(self, route: str, body: dict) -> Any:
        """The answer's JSON on a 2xx, else None; the request counted either way."""
        tally, start = self.tallies[route], time.perf_counter()
        try:
            resp = self.http.post(route.split(" ", 1)[1], json=body)
        except httpx.HTTPError as exc:
            tally.latency_ms.append((time.perf_counter() - start) * 1000)
            tally.errors[type(exc).__name__] += 1
            return None
        tally.latency_ms.append((time.perf_counter() - start) * 1000)
        if not resp.is_success:
            tally.errors[str(resp.status_code)] += 1
            return None
        return resp.json()

    def write(self, user: str, session: str, messages: list[dict], wait: bool = True) -> None:
        answer = self.post(WRITE, {"user_id": user, "session_id": session, "messages": messages, "wait": wait})
        if answer is not None:
            sent = {m["id"]: m["content"] for m in messages}
            for mid in answer["stored"] + answer["duplicates"]:
                self.acked[(user, mid)] = sent[mid]
            self.pending[user] += len(answer.get("pending", []))


def _exchange(rng: random.Random, persona: dict[str, str]) -> list[tuple[str, str]]:
    """A user turn and the assistant's reply, drawn as `bench scale` draws them (a persona change 5 %
    of the time, small talk 12 %, an everyday exchange otherwise, an aside in 30 % of those)."""
    roll = rng.random()
    if roll < 0.05:
        slot = rng.choice(list(EVENTS))
        persona[slot] = _persona(rng)[slot]
        pair = EVENTS[slot]
    else:
        pair = rng.choice(SMALL_TALK if roll < 0.17 else CHAT)
    slots = _slots(rng, persona)
    text, reply = (t.format(**slots) for t in pair)
    if roll >= 0.17 and rng.random() < 0.3:
        text += " " + rng.choice(ASIDES).format(**slots)
    return [("user", text), ("assistant", reply)]


class Messages:
    """One writer's messages: `n` at a time, alternating user and assistant, ids unique to the run."""

    def __init__(self, rng: random.Random, personas: dict[str, dict[str, str]], prefix: str) -> None:
        self.rng, self.personas, self.prefix, self.count = rng, {u: dict(p) for u, p in personas.items()}, prefix, 0

    def take(self, user: str, n: int) -> list[dict]:
        turns: list[tuple[str, str]] = []
        while len(turns) < n:
            turns += _exchange(self.rng, self.personas[user])
        out = []
        for role, text in turns[:n]:
            out.append({"id": f"{self.prefix}-{self.count:06d}", "role": role, "content": text,
                        **({"name": self.personas[user]["name"]} if role == "user" else {})})
            self.count += 1
        return out


def _writer(client: Client, k: int, load: Load, run: str, personas: dict, deadline: float) -> None:
    rng = random.Random(f"{load.seed}-writer-{k}")
    messages, users, writes = Messages(rng, personas, f"{run}-w{k}"), sorted(personas), 0
    while time.monotonic() < deadline:
        user = rng.choice(users)
        session = f"{run}-w{k}-s{writes // 10}"  # a new session every 10 writes of this writer
        client.write(user, session, messages.take(user, rng.randint(*load.messages)), load.wait)
        writes += 1


def _reader(client: Client, k: int, load: Load, personas: dict, deadline: float) -> None:
    rng, users = random.Random(f"{load.seed}-reader-{k}"), sorted(personas)
    while time.monotonic() < deadline:
        user = rng.choice(users)
        query = rng.choice(QUESTIONS).format(**_slots(rng, personas[user]))
        if rng.random() < 0.5:
            client.post(CONTEXT, {"user_id": user, "query": query, "token_budget": 1000})
        else:
            client.post(SEARCH, {"user_id": user, "query": query, "limit": 10})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def _server(workdir: Path | None) -> Iterator[tuple[str, Path]]:
    """`hippograph serve` in a subprocess on a free loopback port, as a user runs it: its URL and log."""
    with tempfile.TemporaryDirectory(prefix="hippograph-concurrency-") as tmp:
        data, log = workdir or Path(tmp) / "data", Path(tmp) / "server.log"
        port = _free_port()
        package_root = str(Path(hippograph.__file__).resolve().parents[1])  # the same code as this command
        env = {**os.environ, "PYTHONUNBUFFERED": "1",
               "PYTHONPATH": os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)}
        with log.open("wb") as out:
            proc = subprocess.Popen([sys.executable, "-m", "hippograph.cli", "serve", "--host", "127.0.0.1",
                                     "--port", str(port), "--data-dir", str(data), "--log-level", "warning"],
                                    env=env, stdout=out, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + START_TIMEOUT_S
            while proc.poll() is None and time.monotonic() < deadline:
                try:
                    if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(0.2)
            else:
                raise BackendUnavailable(f"the server did not start (exit code {proc.poll()}): {_tail(log)}")
            yield url, log
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _tail(log: Path, chars: int = 3000) -> str:
    return log.read_text(errors="replace")[-chars:] if log.exists() else ""


def read_back(http: httpx.Client, acked: dict[tuple[str, str], str], users: list[str],
              threads: int = 4) -> tuple[dict[str, dict[str, int]], list[str]]:
    """Per user: acknowledged messages, those found by id with the content sent, those lost, and the
    memories the user's audit log says were created; and the lost ones as `user/id`."""

    def found(item: tuple[tuple[str, str], str]) -> bool:
        (user, mid), content = item
        try:
            resp = http.get(f"/v1/users/{quote(user, safe='')}/memories/{quote(mid, safe='')}")
        except httpx.HTTPError:
            return False  # not retrievable, whatever the reason
        return resp.status_code == 200 and any(p["content"] == content for p in resp.json()["parts"])

    def listed(user: str) -> int:
        resp = http.get(f"/v1/users/{quote(user, safe='')}/audit", params={"kind": "memory", "limit": AUDIT_LIMIT})
        return sum(e["action"] == "create" for e in resp.json()["events"]) if resp.status_code == 200 else 0

    items = sorted(acked.items())
    with ThreadPoolExecutor(max(1, threads)) as pool:
        hits = list(pool.map(found, items))
        counts = dict(zip(users, pool.map(listed, users), strict=True))
    out = {u: {"acknowledged": 0, "found": 0, "lost": 0, "listed": counts[u]} for u in users}
    lost = []
    for ((user, mid), _), hit in zip(items, hits, strict=True):
        out[user]["acknowledged"] += 1
        out[user]["found" if hit else "lost"] += 1
        if not hit:
            lost.append(f"{user}/{mid}")
    return out, lost


def settle(http: httpx.Client, acked: dict[tuple[str, str], str], timeout: float = 600.0) -> tuple[float, int, int]:
    """Seconds until none of the acknowledged messages is pending any more (`POST /v1/memories/status`),
    how many were pending when it started, and how many still were at the end (after `timeout`)."""
    by_user: dict[str, list[str]] = {}
    for user, mid in acked:
        by_user.setdefault(user, []).append(mid)
    started, first = time.monotonic(), None
    while True:
        pending = 0
        for user, ids in by_user.items():
            for i in range(0, len(ids), 2000):
                resp = http.post("/v1/memories/status", json={"user_id": user, "ids": ids[i:i + 2000]})
                pending += len(resp.json()["pending"]) if resp.status_code == 200 else len(ids[i:i + 2000])
        first = pending if first is None else first
        if not pending or time.monotonic() - started > timeout:
            return time.monotonic() - started, first, pending
        time.sleep(0.2)


def _row(tally: Tally, elapsed: float) -> dict[str, Any]:
    lat, errors = tally.latency_ms, dict(sorted(tally.errors.items()))
    return {"requests": len(lat), "per_s": round(len(lat) / elapsed, 1),
            "p50_ms": round(percentile(lat, 0.5), 1), "p95_ms": round(percentile(lat, 0.95), 1),
            "max_ms": round(max(lat), 1) if lat else 0.0,
            "errors": ", ".join(f"{k}: {v}" for k, v in errors.items()) or "0", "errors_by_status": errors}


def _headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def run(load: Load, url: str | None, api_key: str | None, out: Path | None, workdir: Path | None) -> dict:
    load.check()
    if url is not None:
        return _measure(load, url.rstrip("/"), api_key, out, None)
    with _server(workdir) as (started, log):
        return _measure(load, started, api_key, out, log)


def _warm_up(client: Client, load: Load, run_id: str, personas: dict, log: Path | None) -> Client:
    """One untimed write per user (readers then never ask about an unknown user) and a call of each
    read route (the models have run once); the acknowledged writes are read back with the rest."""
    warm = Client(client.http)
    first = Messages(random.Random(f"{load.seed}-warm-up"), personas, f"{run_id}-warm")
    for user in personas:
        warm.write(user, f"{run_id}-warm", first.take(user, 1))
    user = next(iter(personas))
    warm.post(CONTEXT, {"user_id": user, "query": "Where do I live?"})
    warm.post(SEARCH, {"user_id": user, "query": "Where do I live?"})
    if len(warm.acked) < load.users:
        errors = dict(warm.tallies[WRITE].errors)
        raise BackendUnavailable(f"the server did not store the warm-up writes ({errors}){' ' + _tail(log) if log else ''}")
    return warm


def _drive(clients: list[Client], load: Load, run_id: str, personas: dict) -> float:
    """The load: writers then readers, one thread per client, until the deadline; the elapsed seconds
    (until the last request under way at the deadline has its answer)."""
    started = time.monotonic()
    deadline = started + load.duration
    threads = [threading.Thread(target=_writer, args=(c, k, load, run_id, personas, deadline))
               for k, c in enumerate(clients[:load.writers])]
    threads += [threading.Thread(target=_reader, args=(c, k, load, personas, deadline))
                for k, c in enumerate(clients[load.writers:])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.monotonic() - started


def _measure(load: Load, url: str, api_key: str | None, out: Path | None, log: Path | None) -> dict:
    run_id = f"cc{load.seed}-{os.urandom(3).hex()}"  # a reused server or data folder keeps earlier runs apart
    rng = random.Random(load.seed)
    personas = {f"{run_id}-u{i:02d}": _persona(rng) for i in range(load.users)}
    clients = [Client(httpx.Client(base_url=url, headers=_headers(api_key), timeout=TIMEOUT_S))
               for _ in range(load.writers + load.readers)]
    try:
        ready = clients[0].http.get("/readyz")
        server = ready.json() if ready.status_code == 200 else {"readyz": ready.status_code}
        warm = _warm_up(clients[0], load, run_id, personas, log)
        load_start = os.getloadavg()[0]
        elapsed = _drive(clients, load, run_id, personas)
        load_end = os.getloadavg()[0]
        everyone = [warm, *clients]
        acked = {k: v for c in everyone for k, v in c.acked.items()}
        searchable_after, pending_after_load, never = settle(clients[0].http, acked) if not load.wait else (0.0, 0, 0)
        per_user, lost = read_back(clients[0].http, acked, sorted(personas), threads=len(clients))
    finally:
        for c in clients:
            c.http.close()
    for user, row in per_user.items():
        row["pending_at_ack"] = sum(c.pending[user] for c in everyone)
    results: dict[str, dict[str, Any]] = {}
    everything = Tally()
    for route in (WRITE, CONTEXT, SEARCH):
        tally = Tally()
        for c in clients:
            tally.merge(c.tallies[route])
        everything.merge(tally)
        results[route] = _row(tally, elapsed)
    results["all"] = _row(everything, elapsed)
    written = sum(len(c.acked) for c in clients)
    totals = {col: sum(r[col] for r in per_user.values()) for col in READBACK_COLUMNS}
    server_errors = sum(n for code, n in everything.errors.items() if code.startswith("5"))
    passed = totals["lost"] == 0 and server_errors == 0 and never == 0
    report = {
        "benchmark": "concurrency",
        "command": command_line(),
        "seed": load.seed,
        "load": {"writers": load.writers, "readers": load.readers, "users": load.users,
                 "duration_s": load.duration, "messages_per_write": list(load.messages), "wait": load.wait},
        "url": url if log is None else None,  # None: a server this command started
        "server": server,
        "machine": {**machine(), "loadavg_1m_start": round(load_start, 2), "loadavg_1m_end": round(load_end, 2)},
        "metric": "client wall time per request while the load ran (warm-up excluded); per_s = requests / "
                  "elapsed; read-back: every acknowledged message, warm-up included, fetched by id after the load",
        "elapsed_s": round(elapsed, 2),
        "messages_acknowledged_per_s": round(written / elapsed, 1),
        # "wait": false: when the load ended, how many acknowledged messages were not searchable yet,
        # and how many seconds later all of them were
        "pending_after_load": pending_after_load,
        "searchable_after_s": round(searchable_after, 2),
        "never_searchable": never,
        "results": results,
        "readback": {"total": totals, "per_user": per_user, "lost_ids": lost[:100]},
        "server_errors_5xx": server_errors,
        "passed": passed,
    }
    write_report(report, out, COLUMNS, label="route")
    print()
    print(markdown_table({**per_user, "total": totals}, READBACK_COLUMNS, label="user"))
    if not load.wait:
        print(f"\n{pending_after_load} acknowledged messages were pending when the load ended; all were "
              f"searchable {searchable_after:.1f} s later")
    print(f"\n{elapsed:.1f} s, {written / elapsed:.1f} messages acknowledged/s; load average (1 min) "
          f"{load_start:.2f} at start, {load_end:.2f} at end; {'passed' if passed else 'FAILED'}: "
          f"{totals['lost']} acknowledged messages lost, {server_errors} 5xx answers")
    if server_errors and log is not None:
        print(f"the server's log ends with:\n{_tail(log)}", file=sys.stderr)
    return report
