"""What one tenant's pathological writes cost another tenant, through the HTTP API of a real
`hippograph serve` on a fresh embedded data folder.

Tenant `bystander` writes one short waited message after another (a few sentences about a person, as
a chat client sends them) for `--seconds`, alone, then while tenant `mallory` sends pathological
messages back to back in another thread (each waited for): a run-on sentence of 2,000 words, a run-on
text of 100,000 characters, and 2,000 messages of one comma-list each. The two phases alternate
`--rounds` times (alone, beside, alone, beside ...) so both see the same machine. Reported: the
bystander's write latency (p50, p95, max) alone and beside mallory, their ratio, how long each of
mallory's writes took, and the load average.

    python bench/hostile_load.py --rounds 2 --seconds 30 --out bench/results/hostile-load.json
    git worktree add /tmp/before <revision>    # an earlier revision, with what it can finish:
    python bench/hostile_load.py --source /tmp/before --hostile commas
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
ADMIN = "hostile-load-" + "k" * 32
SAYINGS = ["I moved to Porto last spring and I work at Initech now.", "My manager is Priya Shah.",
           "We decided to use Postgres for the billing service.", "Please keep answers short.",
           "I have a dog called Rex and I am allergic to peanuts.", "The retro moved to Thursdays."]


HOSTILE = ("run-on", "long", "commas")


def hostile(which: tuple[str, ...] = HOSTILE) -> list[tuple[str, dict]]:
    run_on = " ".join(["word"] * 2000)
    long_text = " ".join(f"word{i % 97}" for i in range(14_000))[:99_000]
    commas = [{"role": "user", "content": ", ".join(f"item {j}" for j in range(40))} for _ in range(2000)]
    found = {"run-on": ("run-on, 2,000 words", {"messages": [{"role": "user", "content": run_on}]}),
             "long": ("run-on, 100,000 characters", {"messages": [{"role": "user", "content": long_text}]}),
             "commas": ("2,000 comma lists in one write", {"messages": commas})}
    return [found[w] for w in which]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(source: Path, data: Path, port: int) -> subprocess.Popen:
    env = {**os.environ, "HIPPOGRAPH_AUTH__BOOTSTRAP_KEY": ADMIN, "HIPPOGRAPH_AUTH__BOOTSTRAP_TENANT": "mallory",
           "PYTHONPATH": str(source)}
    proc = subprocess.Popen([sys.executable, "-m", "hippograph.cli", "serve", "--port", str(port), "--data-dir",
                             str(data), "--log-level", "warning"], cwd=source, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit("the server did not become ready")


def quantiles(xs: list[float]) -> dict:
    xs = sorted(xs)
    return {"n": len(xs), "p50": round(statistics.median(xs), 4),
            "p95": round(xs[min(len(xs) - 1, int(0.95 * len(xs)))], 4), "max": round(xs[-1], 4)}


def bystander(client: httpx.Client, key: str, seconds: float, tag: str) -> list[float]:
    took: list[float] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        body = {"user_id": f"b-{len(took) % 5}", "messages": [
            {"role": "user", "content": f"{SAYINGS[len(took) % len(SAYINGS)]} ({tag} {len(took)})"}]}
        t = time.monotonic()
        resp = client.post("/v1/memories", json=body, headers={"Authorization": f"Bearer {key}"})
        took.append(time.monotonic() - t)
        if resp.status_code != 200:
            raise SystemExit(f"bystander write answered {resp.status_code}: {resp.text[:300]}")
    return took


def attack(port: int, stop: threading.Event, took: dict[str, list[float]], which: tuple[str, ...]) -> None:
    """Mallory's writes, back to back, until `stop`."""
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=600,
                      headers={"Authorization": f"Bearer {ADMIN}"}) as own:
        while not stop.is_set():
            for name, body in hostile(which):
                t = time.monotonic()
                resp = own.post("/v1/memories", json={"user_id": "mallory", **body})
                took.setdefault(name, []).append(time.monotonic() - t)
                if resp.status_code != 200:
                    raise SystemExit(f"{name}: {resp.status_code} {resp.text[:300]}")
                if stop.is_set():
                    return


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=30.0, help="of each phase")
    ap.add_argument("--hostile", default=",".join(HOSTILE), help=f"which of {', '.join(HOSTILE)} mallory sends")
    ap.add_argument("--source", default=str(REPO), help="the checkout whose hippograph runs (default: this one)")
    ap.add_argument("--out")
    args = ap.parse_args()
    which = tuple(args.hostile.split(","))
    source = Path(args.source).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        made = subprocess.run([sys.executable, "-m", "hippograph.cli", "keys", "create", "--tenant", "bystander",
                               "--scopes", "read,write", "--json", "--data-dir", str(data)], cwd=source,
                              env={**os.environ, "PYTHONPATH": str(source)},
                              capture_output=True, text=True, check=True)
        key = json.loads(made.stdout.strip().splitlines()[-1])["key"]
        port = free_port()
        proc = start(source, data, port)
        alone: list[float] = []
        beside: list[float] = []
        mallory: dict[str, list[float]] = {}
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=600) as client:
                bystander(client, key, 5, "warm-up")
                for r in range(args.rounds):
                    alone += bystander(client, key, args.seconds, f"alone {r}")
                    stop = threading.Event()
                    worker = threading.Thread(target=attack, args=(port, stop, mallory, which), daemon=True)
                    worker.start()
                    time.sleep(0.5)  # the first hostile write is under way
                    beside += bystander(client, key, args.seconds, f"beside {r}")
                    stop.set()
                    worker.join(600)
        finally:
            proc.terminate()
            proc.wait(60)
    report = {"bystander_alone_s": quantiles(alone), "bystander_beside_mallory_s": quantiles(beside),
              "p50_ratio": round(statistics.median(beside) / statistics.median(alone), 2),
              "p95_ratio": round(quantiles(beside)["p95"] / quantiles(alone)["p95"], 2),
              "mallory_write_s": {k: quantiles(v) for k, v in mallory.items()},
              "revision": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=source, capture_output=True,
                                         text=True, check=False).stdout.strip(),
              "loadavg": os.getloadavg(), "cpus": os.cpu_count(), "python": platform.python_version(),
              "command": "python bench/hostile_load.py " + " ".join(sys.argv[1:])}
    print(json.dumps(report, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
