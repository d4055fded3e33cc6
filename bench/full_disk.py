"""The full-disk reproduction of tests/server/test_full_disk.py, in rounds: does `hippograph serve` live?

    .venv/bin/python bench/full_disk.py [--rounds 4] [--gdb] [--out bench/results/full_disk.json]

Needs root (each round mounts a tmpfs). A round is the test's scenario: a fresh 200 MiB tmpfs and a real
server with the default reserve (HIPPOGRAPH_MIN_FREE_BYTES, 64 MiB), three users, the disk filled by
a filler file to 24 MiB above the reserve, then 2 writers (one sends "wait": false, so its writes pile
up for the background threads; the other waits for each) and 1 reader (context and profile). After
6 s another process takes the disk down to 2 MiB free, 3 s later to nothing, 3 s later the filler is
removed. The round reports whether the server died (and of which signal), the answers by status,
and the acknowledged messages that cannot be read back as sent, once space returned (if it lived) and
after a restart.

The server runs with PYTHONFAULTHANDLER=1, which prints every thread's Python stack on SIGBUS. With
--gdb it runs under gdb, which first prints the faulting address, the native backtrace and the
mappings (`info proc mappings`), so that the file the address belongs to can be named.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.conftest import free_port
from tests.server.test_full_disk import LOADED_DISK, fill_under_load, unreadable


class Server:
    """`hippograph serve` on `data`, its output in `log`, under gdb if asked."""

    def __init__(self, data: Path, log: Path, gdb: bool = False) -> None:
        self.url = f"http://127.0.0.1:{free_port()}"
        self.log = log
        cmd = [sys.executable, "-m", "hippograph.cli", "serve", "--port", self.url.rsplit(":", 1)[1],
               "--data-dir", str(data), "--log-level", "warning"]
        if gdb:
            cmd = ["gdb", "-q", "-batch", "-ex", "handle SIGPIPE nostop noprint pass", "-ex", "run",
                   "-ex", "p $_siginfo._sifields._sigfault.si_addr", "-ex", "bt 30", "-ex", "info proc mappings",
                   "-ex", "signal SIGBUS",  # on to the server: faulthandler prints the Python stacks
                   "--args", *cmd]
        env = {**os.environ, "PYTHONFAULTHANDLER": "1", "PYTHONUNBUFFERED": "1"}
        with log.open("ab") as out:
            self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                if httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"the server did not start: {self.tail()}")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.proc.poll() is None:  # the group: under gdb the server is gdb's child
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def tail(self, lines: int = 80) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def one_round(n: int, work: Path, gdb: bool) -> dict:
    disk = work / f"disk{n}"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={LOADED_DISK}", "tmpfs", str(disk)], check=True)
    out: dict = {"round": n}
    try:
        env_reserve = os.environ.pop("HIPPOGRAPH_MIN_FREE_BYTES", None)  # the default reserve
        server = Server(disk / "data", work / f"server{n}.log", gdb)
        try:
            load, outcome = fill_under_load(server.url, disk, server.alive)
            out.update(outcome)
            out["died"] = not server.alive()
            out["exit"] = server.proc.returncode
            out["answers"] = dict(sorted(load.answers.items()))
            out["acknowledged"] = len(load.acked)
            if not out["died"]:
                out["unreadable_after_space_returned"] = len(unreadable(server.url, load.acked))
        finally:
            server.stop()
            if env_reserve is not None:
                os.environ["HIPPOGRAPH_MIN_FREE_BYTES"] = env_reserve
        again = Server(disk / "data", work / f"server{n}-restart.log")
        try:
            out["unreadable_after_restart"] = len(unreadable(again.url, load.acked))
        finally:
            again.stop()
    finally:
        subprocess.run(["umount", str(disk)], check=False)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--gdb", action="store_true", help="run the server under gdb (faulting address, mappings)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root: each round mounts a tmpfs")
    work = Path(tempfile.mkdtemp(prefix="hg-full-disk-"))
    rounds = []
    for n in range(args.rounds):
        rounds.append(one_round(n, work, args.gdb))
        print(json.dumps(rounds[-1]), flush=True)
    died = sum(r["died"] for r in rounds)
    print(f"the server died in {died} of {len(rounds)} rounds; logs in {work}")
    if args.out:
        args.out.write_text(json.dumps({"rounds": rounds, "died": died, "logs": str(work)}, indent=2) + "\n")


if __name__ == "__main__":
    main()
