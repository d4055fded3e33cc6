"""A user's long-term notes over several sessions through the HTTP API, said the way people say things:
an introduction without "I'm", wishes, a move and a new job in other words, a retraction, and messages
that must give nothing."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

SESSIONS = [
    ("s1", "2025-01-13T08:30:00Z", [
        ("u1", "user", "morning! backend dev at a logistics startup in Porto, mostly Go these days"),
        ("a1", "assistant", "Good morning! Happy to help with your Go work."),
        ("u2", "user", "pls keep answers short, I read them between meetings"),
        ("u3", "user", "my sister runs a bakery in Braga, she wants a website someday"),
        ("u4", "user", "should I learn Rust next, do you think?"),
    ]),
    ("s2", "2025-03-03T09:00:00Z", [
        ("u5", "user", "big news: left the startup, started at Farfetch on Monday"),
        ("u6", "user", "also we moved, I'm in Lisbon now"),
        ("t1", "tool", '{"weather": "Lisbon 17C"}'),
        ("u7", "user", "our team is 14 people now, hiring like crazy"),
    ]),
    ("s3", "2025-04-22T18:00:00Z", [
        ("u8", "user", "you can go into more detail again, I have more time now"),
        ("u9", "user", "thanks, that's all for today!"),
    ]),
]  # fmt: skip


@pytest.mark.parametrize("notes", ["rules", "learned"])
def test_a_users_notes_follow_what_they_say(notes: str, request: pytest.FixtureRequest) -> None:
    client: TestClient = request.getfixturevalue("rules_client" if notes == "rules" else "client")
    user = "rita-natural"
    for session, at, messages in SESSIONS:
        body = {"user_id": user, "session_id": session, "messages": [
            {"id": mid, "role": role, "content": text, "timestamp": at, **({"name": "weather"} if role == "tool" else {})}
            for mid, role, text in messages]}
        resp = client.post("/v1/memories", json=body)
        assert resp.status_code == 200, resp.text

    profile = client.get(f"/v1/users/{user}/profile").json()
    facts = [f["fact"] for f in profile["facts"]]
    prefs = [p["pref"] for p in profile["preferences"]]
    assert any("Farfetch" in f for f in facts), facts  # the new employer
    assert any("Lisbon" in f for f in facts), facts  # the new city
    # the old ones are history ("left the startup" may be said in the new one)
    assert not any("Porto" in f or "logistics startup" in f for f in facts), facts
    assert not any("bakery" in f or "Braga" in f or "14" in f for f in facts), facts  # not the user's
    assert any("detail" in p for p in prefs), prefs  # the later wish replaced "keep answers short"
    assert not any("short" in p for p in prefs), prefs

    history = client.get(f"/v1/users/{user}/profile/history").json()["facts"]
    old = [h for h in history if "Porto" in h["fact"] or "logistics startup" in h["fact"]]
    assert old and all(h["current"] is False for h in old), history
