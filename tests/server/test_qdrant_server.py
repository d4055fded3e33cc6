"""The API on a real Qdrant server (the binary scripts/test finds): a server of this test's own, with
an API key, so it can be killed and started again under the running API."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from qdrant_client import QdrantClient

from hippograph.config import Settings, VectorSettings
from hippograph.errors import ConfigurationError
from hippograph.server.app import create_app
from hippograph.vectors.payload import SPEAKER_FIELD, TIME_FIELD
from hippograph.vectors.qdrant_store import QdrantVectorStore
from hippograph.wiring import build
from tests.apps import LOCAL
from tests.conftest import ROOT, free_port

SCRIPT = ROOT / "scripts" / "qdrant-server"
NO_BINARY = 4  # scripts/qdrant-server's exit code when there is no qdrant binary


@dataclass
class QdrantProcess:
    home: Path
    port: int
    key: str

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _run(self, command: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "QDRANT_HOME_DIR": str(self.home), "QDRANT_HTTP_PORT": str(self.port),
               "QDRANT_GRPC_PORT": str(free_port()), "QDRANT_API_KEY": self.key}
        return subprocess.run([str(SCRIPT), command], env=env, capture_output=True, text=True, timeout=120,
                              check=False)

    def start(self) -> None:
        done = self._run("start")
        if done.returncode == NO_BINARY and not os.environ.get("HIPPOGRAPH_TEST_QDRANT_URL"):
            pytest.skip(f"SKIPPED: no Qdrant server binary to start: {done.stderr.strip()}")
        assert done.returncode == 0, done.stdout + done.stderr

    def kill(self) -> None:
        """SIGKILL: nothing is flushed or closed on the way out."""
        pid = int((self.home / "qdrant-server.pid").read_text())
        os.kill(pid, signal.SIGKILL)
        for _ in range(100):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)

    def stop(self) -> None:
        self._run("stop")

    def client(self) -> QdrantClient:
        return QdrantClient(url=self.url, api_key=self.key, check_compatibility=False)


@pytest.fixture
def qdrant(tmp_path: Path) -> Iterator[QdrantProcess]:
    server = QdrantProcess(tmp_path / "qdrant", free_port(), "key-" + os.urandom(8).hex())
    server.start()
    yield server
    server.stop()


def _settings(tmp_path: Path, qdrant: QdrantProcess) -> Settings:
    return Settings(data_dir=tmp_path / "data", vectors=VectorSettings(
        backend="qdrant", url=qdrant.url, api_key=qdrant.key, collection="memories", check_compatibility=False))


def _write(client: TestClient, ids: list[str], texts: list[str]):
    return client.post("/v1/memories", json={"user_id": "q", "session_id": "s1", "messages": [
        {"id": i, "role": "user", "content": t} for i, t in zip(ids, texts, strict=True)]})


def _found(client: TestClient, query: str) -> set[str]:
    hits = client.post("/v1/search", json={"user_id": "q", "query": query, "limit": 20}).json()
    return {p for h in hits for p in h["provenance"]}


def test_the_api_on_a_qdrant_server_that_is_killed_and_comes_back(tmp_path: Path, qdrant: QdrantProcess) -> None:
    service = build(_settings(tmp_path, qdrant))
    with TestClient(create_app(service=service), base_url=LOCAL) as client:
        acked = _write(client, ["m1", "m2"], ["I moved to Nairobi in May.", "My sister Ines plays the cello."])
        assert acked.status_code == 200, acked.text
        assert "m1" in _found(client, "Where do I live? Nairobi")
        block = client.post("/v1/context", json={"user_id": "q", "query": "What does Ines play?"}).json()
        assert "cello" in block["context"]

        # the collection was made with the payload indexes the filters need, the tenant one first
        schema = qdrant.client().get_collection("memories").payload_schema
        assert {"user_id", "kind", "session_id", TIME_FIELD, SPEAKER_FIELD} <= set(schema)

        qdrant.kill()
        down = _write(client, ["m3"], ["I started a new job at Safaricom."])
        assert down.status_code == 503 and down.json()["error"] == "BackendUnavailable", down.text
        assert client.post("/v1/search", json={"user_id": "q", "query": "Nairobi"}).status_code == 503

        qdrant.start()  # the same storage folder
        assert {"m1", "m2"} <= _found(client, "Nairobi cello")  # acknowledged before the kill: still there
        retry = _write(client, ["m3"], ["I started a new job at Safaricom."])
        assert retry.status_code == 200 and retry.json()["duplicates"] == ["m3"], retry.text
        assert "m3" in _found(client, "Where do I work? Safaricom")  # stored at the 503, indexed now

        assert client.delete("/v1/users/q").status_code in (200, 204)
        assert qdrant.client().count("memories").count == 0  # the user's text is gone from the server too


def test_wrong_key_and_other_vector_size_are_configuration_errors(qdrant: QdrantProcess) -> None:
    for key in ("not-the-key", None):
        store = QdrantVectorStore({"url": qdrant.url, "api_key": key, "check_compatibility": False}, "m", 8)
        with pytest.raises(ConfigurationError, match="credentials"):
            store.open()
    good = {"url": qdrant.url, "api_key": qdrant.key, "check_compatibility": False}
    first = QdrantVectorStore(good, "m", 8)
    first.open()
    first.close()
    with pytest.raises(ConfigurationError, match="8"):
        QdrantVectorStore(good, "m", 16).open()
