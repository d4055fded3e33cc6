"""How long a server killed with an extraction backlog takes to be ready again, and to finish the backlog.

A `hippograph serve` on a fresh embedded data folder takes `--messages` messages in writes of 500 sent
with `"wait": false` (answered once stored), is killed with SIGKILL right after the last answer, and is
started again on the same folder: the seconds until `/readyz` answers 200, how many of the messages
were still pending then, and the seconds until every one was searchable (`POST /v1/memories/status`).
`--source DIR` runs the `hippograph` package of another checkout (an earlier revision, say) on the same
kind of data, with the same models; the default is this one.

    python bench/restart_backlog.py --messages 5000 --out bench/results/restart-backlog.json
    git worktree add /tmp/before <revision> && python bench/restart_backlog.py --source /tmp/before
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(source: Path, data: Path, port: int) -> tuple[subprocess.Popen, float]:
    """The server, and the seconds until it was ready."""
    env = {**os.environ, "PYTHONPATH": str(source)}
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "hippograph.cli", "serve", "--port", str(port), "--data-dir",
                             str(data), "--log-level", "warning"], cwd=source, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while time.monotonic() - started < 1800:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with {proc.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                return proc, time.monotonic() - started
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise SystemExit("the server did not become ready in 30 minutes")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=5000)
    ap.add_argument("--source", default=str(REPO), help="the checkout whose hippograph runs (default: this one)")
    ap.add_argument("--out")
    args = ap.parse_args()
    source = Path(args.source).resolve()
    revision = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=source, capture_output=True, text=True,
                              check=False).stdout.strip()
    ids = [f"b{i}" for i in range(args.messages)]
    owners = {m: f"u{i // 500 % 4}" for i, m in enumerate(ids)}  # four users, writes of 500 in turn
    mine = {u: [m for m in ids if owners[m] == u] for u in sorted(set(owners.values()))}
    with tempfile.TemporaryDirectory() as tmp:
        data, port = Path(tmp) / "data", free_port()
        proc, first_ready = start(source, data, port)
        url = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=url, timeout=600) as c:
            for i in range(0, len(ids), 500):
                body = {"user_id": owners[ids[i]], "session_id": "s", "wait": False, "messages": [
                    {"id": m, "role": "user", "content": f"Note {m}: the meeting moved to room {m[1:]} on Friday."}
                    for m in ids[i:i + 500]]}
                resp = c.post("/v1/memories", json=body)
                if resp.status_code not in (200, 202):
                    raise SystemExit(f"write answered {resp.status_code}: {resp.text[:300]}")
        proc.kill()
        proc.wait()
        proc, ready = start(source, data, port)
        try:
            with httpx.Client(base_url=url, timeout=600) as c:
                def pending() -> int:
                    return sum(len(c.post("/v1/memories/status", json={"user_id": u, "ids": m}).json()["pending"])
                               for u, m in mine.items())
                at_ready = pending()
                t = time.monotonic()
                while (left := pending()) and time.monotonic() - t < 1800:
                    time.sleep(0.5)
                done = time.monotonic() - t
        finally:
            proc.terminate()
            proc.wait(60)
    report = {"revision": revision, "messages": args.messages, "first_start_ready_s": round(first_ready, 1),
              "restart_ready_s": round(ready, 1), "pending_when_ready": at_ready,
              "backlog_done_after_ready_s": round(done, 1) if not left else None,
              "loadavg": os.getloadavg(), "cpus": os.cpu_count(),
              "command": "python bench/restart_backlog.py " + " ".join(sys.argv[1:])}
    print(json.dumps(report, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
