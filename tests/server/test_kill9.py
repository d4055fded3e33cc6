"""A server killed with SIGKILL right after acknowledging writes loses none of them."""

from __future__ import annotations

import httpx


def test_acknowledged_writes_survive_sigkill(server_factory, tmp_path) -> None:
    data = tmp_path / "data"
    srv = server_factory(data)
    acked: list[str] = []
    with httpx.Client(base_url=srv.url, timeout=60) as c:
        for i in range(12):
            body = {"user_id": "k", "session_id": "s1", "messages": [
                {"id": f"k{i}", "role": "user", "content": f"I visited city number {i} called Town{i}ville."}]}
            assert c.post("/v1/memories", json=body).status_code == 200
            acked.append(f"k{i}")
        assert c.post("/v1/memories", json={"user_id": "k", "session_id": "s1", "messages": [
            {"id": "last", "role": "user", "content": "I live in Reykjavik now."}]}).status_code == 200
        acked.append("last")
    srv.kill9()

    again = server_factory(data)
    with httpx.Client(base_url=again.url, timeout=60) as c:
        ctx = c.post("/v1/context", json={"user_id": "k", "session_id": "s1", "query": "where?",
                                          "token_budget": 8000}).json()
        shown = {p for section in ("pinned", "recent") for i in ctx["sections"][section] for p in i["provenance"]}
        assert set(acked) <= shown, set(acked) - shown  # 3 pinned + 10 recent = all 13
        hits = c.post("/v1/search", json={"user_id": "k", "query": "Reykjavik", "limit": 5}).json()
        assert any(h["provenance"] == ["last"] for h in hits)
        for i in (0, 7, 11):
            hits = c.post("/v1/search", json={"user_id": "k", "query": f"Town{i}ville", "limit": 3}).json()
            assert any(h["provenance"] == [f"k{i}"] for h in hits), i
        facts = [f["fact"] for f in c.get("/v1/users/k/profile").json()["facts"]]
        assert any("Reykjavik" in f for f in facts)
