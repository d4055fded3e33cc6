"""A store that fails mid-request gives a clear 503; the retried write is then stored once, in full."""

from __future__ import annotations

from fastapi.testclient import TestClient

from hippograph.config import Settings
from hippograph.server.app import create_app
from hippograph.wiring import build
from tests.apps import LOCAL


def test_vector_store_down_then_back(tmp_path) -> None:
    service = build(Settings(data_dir=tmp_path / "data"))
    body = {"user_id": "f", "session_id": "s", "messages": [
        {"id": "f1", "role": "user", "content": "I live in Nairobi and I work at Safaricom."}]}
    with TestClient(create_app(service=service), base_url=LOCAL) as client:
        service.indexer.store.close()  # the vector store goes away under the running server
        down = client.post("/v1/memories", json=body)
        assert down.status_code == 503
        assert down.json()["error"] == "BackendUnavailable" and down.json()["detail"]
        search_down = client.post("/v1/search", json={"user_id": "f", "query": "Nairobi"})
        assert search_down.status_code == 503

        service.indexer.store.open()  # back
        retry = client.post("/v1/memories", json=body)
        assert retry.status_code == 200 and retry.json()["duplicates"] == ["f1"]
        hits = client.post("/v1/search", json={"user_id": "f", "query": "Nairobi"}).json()
        assert any(h["provenance"] == ["f1"] for h in hits)
        facts = [f["fact"] for f in client.get("/v1/users/f/profile").json()["facts"]]
        assert any("Nairobi" in f for f in facts)
        notes = client.post("/v1/search", json={"user_id": "f", "query": "Lives in Nairobi", "limit": 20}).json()
        assert any(h["kind"] == "note" and "Nairobi" in h["text"] for h in notes)
