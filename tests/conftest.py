from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from hippograph.config import Settings
from hippograph.server.app import create_app
from tests.apps import LOCAL

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def client(tmp_path_factory) -> Iterator[TestClient]:
    """The real app over the real embedded stores in a fresh data dir, shared by a test module."""
    settings = Settings(data_dir=tmp_path_factory.mktemp("data"))
    with TestClient(create_app(settings), base_url=LOCAL) as c:
        yield c


@pytest.fixture(scope="module")
def rules_client(tmp_path_factory) -> Iterator[TestClient]:
    """The same over the hand-written notes rules alone (`HIPPOGRAPH_EXTRACTION__NOTES=rules`)."""
    base = Settings(data_dir=tmp_path_factory.mktemp("data"))
    settings = base.model_copy(update={"extraction": base.extraction.model_copy(update={"notes": "rules"})})
    with TestClient(create_app(settings), base_url=LOCAL) as c:
        yield c


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """`hippograph serve` in a subprocess, as a user runs it."""

    def __init__(self, data_dir: Path, env: dict[str, str] | None = None) -> None:
        self.data_dir = data_dir
        self.env = env or {}  # settings of its own, over the test's environment
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self._drainer: threading.Thread | None = None

    def start(self, timeout: float = 120) -> None:
        env = {**os.environ, **self.env, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hippograph.cli", "serve", "--port", str(self.port),
             "--data-dir", str(self.data_dir), "--log-level", "warning"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.proc.stderr.read().decode()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise TimeoutError("server did not become ready")

    def drained(self) -> list[bytes]:
        """The server's log lines, read as they come into the list returned: a pipe nobody reads fills
        and stalls the server at its next log line. `stop` waits for the last of them."""
        assert self.proc is not None and self.proc.stderr is not None
        lines: list[bytes] = []
        self._drainer = threading.Thread(target=lambda: lines.extend(iter(self.proc.stderr.readline, b"")),  # type: ignore[union-attr]
                                         daemon=True)
        self._drainer.start()
        return lines

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.kill()  # SIGKILL
        self.proc.wait()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        if self._drainer is not None:
            self._drainer.join(timeout=30)


@pytest.fixture
def server_factory(tmp_path) -> Iterator:
    started: list[ServerProcess] = []

    def make(data_dir: Path | None = None) -> ServerProcess:
        srv = ServerProcess(data_dir or tmp_path / "data")
        srv.start()
        started.append(srv)
        return srv

    yield make
    for srv in started:
        srv.stop()
