"""Correcting and deleting profile items over the API: history kept, never shown as current, and
every change in the audit log with its actor."""

from __future__ import annotations

from fastapi.testclient import TestClient


def remember(client: TestClient, user: str, mid: str, text: str, ts: str) -> None:
    resp = client.post("/v1/memories", json={"user_id": user, "session_id": "s1", "messages": [
        {"id": mid, "role": "user", "content": text, "timestamp": ts}]})
    assert resp.status_code == 200, resp.text


def fact_about(client: TestClient, user: str, word: str) -> dict:
    facts = client.get(f"/v1/users/{user}/profile").json()["facts"]
    return next(f for f in facts if word in f["fact"])


def test_an_outdated_marker_names_the_note_that_holds_now(client: TestClient) -> None:
    """A note replaced twice: the message it came from points at the latest note, not at the one between."""
    remember(client, "mia", "m1", "I manage the Northwest region at Acme Corp.", "2024-02-01T10:00:00Z")
    first = fact_about(client, "mia", "Northwest")
    second = client.patch(f"/v1/users/mia/profile/{first['id']}", json={"text": "Manages the whole country"}).json()
    third = client.patch(f"/v1/users/mia/profile/{second['id']}",
                         json={"text": "Manages the whole country and Canada"}).json()
    assert third["replaces"] == second["id"]
    # the note between says so of another message only (as when a later message, not a person, replaced it)
    remember(client, "mia", "m2", "I travel a lot for work.", "2024-03-01T10:00:00Z")
    service = client.app.state.service
    owner = service.tenancy.owner("default", "mia")
    other = client.get("/v1/users/mia/memories/m2").json()["parts"][0]["id"]
    service.graph.set_note_sources(owner, second["id"], [other])
    ctx = client.post("/v1/context", json={"user_id": "mia", "query": "What does Mia manage at Acme?"}).json()
    said = [i["text"] for i in ctx["sections"]["memories"] if i["provenance"] == ["m1"]]
    assert said and said[0].endswith("now: Manages the whole country and Canada]"), said


def test_correct_an_item_keeps_history_and_audits(client: TestClient) -> None:
    remember(client, "carol", "c1", "I live in Seattle.", "2024-02-01T10:00:00Z")
    old = fact_about(client, "carol", "Seattle")
    resp = client.patch(f"/v1/users/carol/profile/{old['id']}", json={"text": "Lives in Portland",
                                                                       "actor": "user:carol"})
    assert resp.status_code == 200, resp.text
    new = resp.json()
    assert new["replaces"] == old["id"] and new["text"] == "Lives in Portland" and new["id"] != old["id"]
    assert old["confidence"] < 1.0 and new["confidence"] == 1.0  # a person's correction is sure

    facts = [f["fact"] for f in client.get("/v1/users/carol/profile").json()["facts"]]
    assert "Lives in Portland" in facts and not any("Seattle" in f for f in facts)
    history = {f["id"]: f for f in client.get("/v1/users/carol/profile/history").json()["facts"]}
    assert history[old["id"]]["current"] is False and history[old["id"]]["superseded_by"] == new["id"]
    assert history[new["id"]]["current"] is True and history[new["id"]]["source"] == old["source"]

    ctx = client.post("/v1/context", json={"user_id": "carol", "query": "Where does Carol live?"}).json()
    assert "Lives in Portland" in ctx["context"]
    assert "outdated since" in ctx["context"]  # the old message is shown as history, not as today's truth

    events = client.get("/v1/users/carol/audit?kind=note").json()["events"]
    assert [(e["action"], e["actor"]) for e in events] == [
        ("create", "extractor:spacy"), ("correct", "user:carol"), ("supersede", "user:carol")]
    memories = client.get("/v1/users/carol/audit?kind=memory").json()["events"]
    assert [(e["action"], e["actor"], e["text"]) for e in memories] == [("create", "api", None)]
    assert memories[0]["session_id"] == "s1"
    assert events[1]["item_id"] == new["id"] and events[1]["related_id"] == old["id"]
    one = client.get(f"/v1/users/carol/audit?item_id={old['id']}").json()["events"]
    assert {e["action"] for e in one} == {"create", "correct", "supersede"}

    again = client.patch(f"/v1/users/carol/profile/{old['id']}", json={"text": "Lives in Denver"})
    assert again.status_code == 409 and new["id"] in again.json()["detail"]


def test_bad_corrections_are_refused(client: TestClient) -> None:
    remember(client, "dave", "d1", "I work at Initech.", "2024-02-01T10:00:00Z")
    item = fact_about(client, "dave", "Initech")
    assert client.patch("/v1/users/dave/profile/note_nope", json={"text": "x"}).status_code == 404
    assert client.patch("/v1/users/nobody/profile/note_nope", json={"text": "x"}).status_code == 404
    for body in ({"text": "   "}, {"text": ""}, {}, {"text": "ok", "extra": 1}, {"text": "x" * 2001}):
        resp = client.patch(f"/v1/users/dave/profile/{item['id']}", json=body)
        assert resp.status_code == 422, (body, resp.text)
    assert fact_about(client, "dave", "Initech")["id"] == item["id"]  # nothing changed


def test_delete_is_audited_with_its_actor(client: TestClient) -> None:
    remember(client, "erin", "e1", "I prefer email over phone calls.", "2024-02-01T10:00:00Z")
    prefs = client.get("/v1/users/erin/profile").json()["preferences"]
    item = prefs[0]
    assert client.delete(f"/v1/users/erin/profile/{item['id']}?actor=agent:support").status_code == 200
    assert client.delete(f"/v1/users/erin/profile/{item['id']}").status_code == 404
    events = client.get("/v1/users/erin/audit").json()["events"]
    deletes = [(e["item_kind"], e["item_id"], e["actor"]) for e in events if e["action"] == "delete"]
    assert ("note", item["id"], "agent:support") in deletes
    assert any(kind == "relation" for kind, _, _ in deletes)  # "PREFERS email" said the same thing: it went too
    about = [e for e in events if e["item_id"] == item["id"]]
    assert [e["action"] for e in about] == ["create", "delete"]  # what happened, when and by whom stays
    assert all(e["text"] is None for e in about)  # but never what it said
    assert client.get("/v1/users/nobody/audit").status_code == 404


def test_leaving_an_employer_ends_the_note(client: TestClient) -> None:
    remember(client, "gwen", "g1", "We use Trello for the sprint board.", "2024-02-01T10:00:00Z")
    remember(client, "gwen", "g2", "I work at Globex.", "2024-02-01T10:01:00Z")
    before = {f["id"]: f["fact"] for f in client.get("/v1/users/gwen/profile").json()["facts"]}
    assert any("Globex" in f for f in before.values()), before
    remember(client, "gwen", "g3", "quick update: left Globex, started at Initech on Monday",
             "2024-03-04T09:00:00Z")
    facts = [f["fact"] for f in client.get("/v1/users/gwen/profile").json()["facts"]]
    assert any("Initech" in f for f in facts), facts
    assert not any("Globex" in f and "Initech" not in f for f in facts), facts  # no note says Globex is the job
    history = {f["id"]: f for f in client.get("/v1/users/gwen/profile/history").json()["facts"]}
    old = next(f for i, f in history.items() if i in before and "Globex" in f["fact"])  # "I work at Globex."
    assert old["current"] is False  # kept in the history, no longer today's truth
    assert "Initech" in history[old["superseded_by"]]["fact"]


def test_a_statement_said_earlier_but_stored_later_joins_the_history(client: TestClient) -> None:
    # the move to Lima was said last; the one to Oslo, said a week before it, arrives after it (a
    # message extracted late, or sent late): Lima stays current, Oslo is history replaced by Lima
    remember(client, "hana", "h2", "I just moved to Lima.", "2024-05-20T10:00:00Z")
    remember(client, "hana", "h1", "I just moved to Oslo.", "2024-05-13T10:00:00Z")
    facts = [f["fact"] for f in client.get("/v1/users/hana/profile").json()["facts"]]
    assert any("Lima" in f for f in facts) and not any("Oslo" in f for f in facts), facts
    history = client.get("/v1/users/hana/profile/history").json()["facts"]
    lima, oslo = (next(f for f in history if city in f["fact"]) for city in ("Lima", "Oslo"))
    assert oslo["current"] is False and oslo["superseded_by"] == lima["id"] and lima["current"] is True
    # and a correction (timed by the server) is still replaced by what is said after the messages it cites
    fixed = client.patch(f"/v1/users/hana/profile/{lima['id']}", json={"text": "Lives in Lima, Peru"}).json()
    remember(client, "hana", "h3", "I just moved to Quito.", "2024-06-02T10:00:00Z")
    facts = [f["fact"] for f in client.get("/v1/users/hana/profile").json()["facts"]]
    assert any("Quito" in f for f in facts) and fixed["text"] not in facts, facts


def test_a_note_has_no_space_before_its_commas(client: TestClient, rules_client: TestClient) -> None:
    for c in (client, rules_client):
        remember(c, "nell", "n1", "I'm a pediatric nurse , mostly night shifts.", "2024-02-01T10:00:00Z")
        texts = [f["fact"] for f in c.get("/v1/users/nell/profile").json()["facts"]]
        assert any("nurse, mostly night shifts" in t for t in texts) and not any(" ," in t for t in texts), texts


def test_a_notes_audit_entry_comes_after_the_message_it_came_from(client: TestClient) -> None:
    """The audit log says when things happened to the memory: a note is made after its message is stored,
    whenever the message says it was said (its valid_at says that)."""
    remember(client, "otto", "o1", "I live in Graz.", "2021-05-01T10:00:00Z")  # said long ago
    events = client.get("/v1/users/otto/audit").json()["events"]
    stored = next(e["at"] for e in events if e["item_kind"] == "memory" and e["action"] == "create")
    notes = [e for e in events if e["item_kind"] == "note"]
    assert notes and all(e["at"] >= stored for e in notes), events
    history = client.get("/v1/users/otto/profile/history").json()["facts"]
    assert next(f for f in history if "Graz" in f["fact"])["valid_at"].startswith("2021-05-01")


def test_a_correction_ends_the_relation_that_said_the_old_thing(client: TestClient) -> None:
    """'I live in Seattle' corrected to Portland: the graph's LIVES_IN Seattle is no longer current (it stays,
    dated, as history), and a relation the new text still says stays current."""
    remember(client, "ines", "i1", "I live in Seattle.", "2024-02-01T10:00:00Z")
    remember(client, "ines", "i2", "I manage the Northwest region at Acme Corp.", "2024-02-02T10:00:00Z")

    def relations() -> dict[str, dict]:
        user = next(e for e in client.get("/v1/graph/entities", params={"user_id": "ines", "limit": 500}).json()
                    if e["is_user"])
        around = client.get(f"/v1/graph/entities/{user['id']}/neighbors",
                            params={"user_id": "ines", "history": "true"}).json()
        names = {e["id"]: e["name"] for e in around["entities"]}
        return {f"{r['predicate']} {names[r['target_id']]}": r for r in around["relations"]}

    before = relations()
    assert before["LIVES_IN Seattle"]["invalid_at"] is None
    kept = [k for k in before if "Acme" in k]
    assert kept and all(before[k]["invalid_at"] is None for k in kept)
    city = fact_about(client, "ines", "Seattle")
    assert client.patch(f"/v1/users/ines/profile/{city['id']}", json={"text": "I live in Portland"}).status_code == 200
    job = fact_about(client, "ines", "Northwest")
    assert client.patch(f"/v1/users/ines/profile/{job['id']}",
                        json={"text": "I manage the Northwest and Southwest regions at Acme Corp"}).status_code == 200
    after = relations()
    assert after["LIVES_IN Seattle"]["invalid_at"] is not None  # history, not today's truth
    assert all(after[k]["invalid_at"] is None for k in kept)  # still said by the corrected text
    current = client.get("/v1/graph/neighbors", params={"user_id": "ines", "entity": "Seattle"})
    assert current.status_code == 200 and current.json()["relations"] == []  # without history: current only
