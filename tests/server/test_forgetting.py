"""Deleting forgets: over HTTP, a deleted memory, session or note takes what was derived from it out of
search, context, profile and audit text, provenance keeps the client's ids, and after the sweep (or
`hippograph optimize`) the deleted text is in no file of the data folder."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from hippograph.bench.common import bench_service
from hippograph.config import SessionSettings, Settings
from hippograph.errors import BackendUnavailable
from hippograph.extraction.base import Extraction, Extractor
from hippograph.models import Episode, MessageIn, Role, stable_id, utcnow
from hippograph.server.app import create_app
from hippograph.service import Hippograph
from tests.apps import LOCAL

PROBE = "I live in Seattle and I love hiking."
SECRET = "Qorvexhaven"  # a town no one else mentions: its only source is the message under test


@pytest.fixture
def client(tmp_path) -> Iterator[TestClient]:
    with TestClient(create_app(Settings(data_dir=tmp_path / "data")), base_url=LOCAL) as c:
        yield c


def say(client: TestClient, user: str, session: str, mid: str, content: str) -> None:
    body = {"user_id": user, "session_id": session, "messages": [{"id": mid, "role": "user", "content": content}]}
    assert client.post("/v1/memories", json=body).status_code == 200


def search(client: TestClient, user: str, query: str) -> list[dict]:
    resp = client.post("/v1/search", json={"user_id": user, "query": query, "limit": 50})
    assert resp.status_code == 200
    return resp.json()


def everything(client: TestClient, user: str, query: str) -> str:
    """All a client can read about the user, as one text (the context block is asked a question that
    does not itself contain the query's words: a block echoes its question)."""
    ask = {"user_id": user, "query": "Where do I live and what do I love doing?"}
    parts = [client.get(f"/v1/users/{user}/profile/history").text, client.get(f"/v1/users/{user}/audit").text,
             str(search(client, user, query)), client.post("/v1/context", json=ask).text]
    return "\n".join(parts)


def test_the_probe_deleted_note_and_ended_session_leave_nothing(client: TestClient) -> None:
    say(client, "pat", "s1", "m1", PROBE)
    say(client, "pat", "s2", "m2", "Remind me to water the plants.")
    facts = client.get("/v1/users/pat/profile").json()["facts"]
    home = next(f for f in facts if "Seattle" in f["fact"])
    assert home["source"] == ["m1"]
    assert client.delete(f"/v1/users/pat/profile/{home['id']}?actor=user:pat").status_code == 200
    # the relation saying the same thing went with the note (the message itself stays until deleted)
    svc: Hippograph = client.app.state.service
    pat = svc.tenancy.owner("default", "pat")  # the stores keep pat's data under pat's owner key
    me = svc.graph.ensure_user(pat)
    assert [r.predicate for r in svc.graph.relations_of(pat, [me.id])] == ["LOVES"]
    assert client.delete("/v1/users/pat/sessions/s1?actor=user:pat").status_code == 200

    seen = everything(client, "pat", "Where do I live? Seattle hiking")
    assert "Seattle" not in seen and "hiking" not in seen
    assert client.get("/v1/users/pat/profile").json()["preferences"] == []  # derived only from s1
    events = client.get("/v1/users/pat/audit").json()["events"]
    deletes = {(e["item_kind"], e["actor"]) for e in events if e["action"] == "delete"}
    assert deletes == {("note", "user:pat"), ("relation", "user:pat"), ("memory", "user:pat")}
    assert all(e["text"] is None for e in events if e["action"] == "delete")
    assert client.get("/v1/graph/entities", params={"user_id": "pat", "q": "seattle"}).json() == []


def test_a_memory_delete_leaves_other_sources_and_rewords_the_relation(client: TestClient) -> None:
    say(client, "quin", "s1", "q1", PROBE)
    say(client, "quin", "s2", "q2", "I live in Seattle.")
    home = next(f for f in client.get("/v1/users/quin/profile").json()["facts"] if "Seattle" in f["fact"])
    assert home["source"] == ["q1", "q2"]
    assert client.delete("/v1/users/quin/memories/q1").json() == {"deleted": ["q1"]}

    home = next(f for f in client.get("/v1/users/quin/profile").json()["facts"] if "Seattle" in f["fact"])
    assert home["source"] == ["q2"]  # the deleted source is not listed at all
    hits = search(client, "quin", "Seattle hiking")
    assert all("hiking" not in h["text"] for h in hits)
    relation = next(h for h in hits if h["kind"] == "relation")
    assert relation["text"] == "I live in Seattle." and relation["provenance"] == ["q2"]
    assert all("q1" not in h["provenance"] and not any(p.startswith("ep_") for p in h["provenance"]) for h in hits)
    ctx = client.post("/v1/context", json={"user_id": "quin", "query": "Where do I live?"}).json()
    assert all(not any(p.startswith("ep_") or p == "q1" for p in i["provenance"]) for i in ctx["items"])
    assert "hiking" not in ctx["context"]


def test_a_deleted_message_leaves_the_session_summary(tmp_path) -> None:
    settings = Settings(data_dir=tmp_path, sessions=SessionSettings(summary_threshold=6, summary_keep_recent=2))
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        for i in range(8):
            city = SECRET if i == 1 else f"town number {i}"
            say(client, "rae", "s", f"r{i}", f"Step {i}: we decided the offsite moves to {city} in May.")
        svc: Hippograph = client.app.state.service
        rae = svc.tenancy.owner("default", "rae")
        summary = next(e for e in svc.graph.session_episodes(rae, "s") if e.kind.value == "summary")
        assert SECRET in summary.content
        assert client.delete("/v1/users/rae/memories/r1").status_code == 200
        summary = next(e for e in svc.graph.session_episodes(rae, "s") if e.kind.value == "summary")
        assert SECRET not in summary.content and "town number 2" in summary.content
        assert all(line["source"] != "r1" for line in summary.metadata["lines"])
        ctx = client.post("/v1/context", json={"user_id": "rae", "session_id": "s", "query": "offsite?"}).json()
        assert SECRET not in ctx["context"]


def test_expiry_keeps_the_client_ids_of_what_it_cites(tmp_path) -> None:
    settings = Settings(data_dir=tmp_path, sessions=SessionSettings(ttl_seconds=3600))
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        say(client, "sam", "s1", "x1", PROBE)
        svc: Hippograph = client.app.state.service
        assert svc.expire_sessions(now=utcnow() + timedelta(hours=2)) == 1
        facts = client.get("/v1/users/sam/profile").json()["facts"]
        assert [f["source"] for f in facts if "Seattle" in f["fact"]] == [["x1"]]  # not an internal ep_ id
        hits = search(client, "sam", "Seattle")
        assert hits and all(h["provenance"] == ["x1"] for h in hits if h["kind"] in ("note", "relation"))
        ctx = client.post("/v1/context", json={"user_id": "sam", "query": "Where do I live?"}).json()
        assert [i["provenance"] for i in ctx["sections"]["notes"] if "Seattle" in i["text"]] == [["x1"]]
        # the expired message can still be deleted by its id: what it taught goes too
        assert client.delete("/v1/users/sam/memories/x1?actor=user:sam").json() == {"deleted": ["x1"]}
        events = client.get("/v1/users/sam/audit?kind=memory").json()["events"]
        assert [(e["action"], e["actor"]) for e in events][-1] == ("delete", "user:sam")
        assert client.delete("/v1/users/sam/memories/x1").status_code == 404
        assert "Seattle" not in everything(client, "sam", "Seattle")


def test_history_and_conflicts_never_name_a_deleted_item(client: TestClient) -> None:
    say(client, "tia", "s1", "t1", "I work at Initech.")
    old = next(f for f in client.get("/v1/users/tia/profile").json()["facts"] if "Initech" in f["fact"])
    new = client.patch(f"/v1/users/tia/profile/{old['id']}", json={"text": "Works at Initrode"}).json()
    assert client.delete(f"/v1/users/tia/profile/{new['id']}").status_code == 200
    history = client.get("/v1/users/tia/profile/history").json()["facts"]
    ids = {f["id"] for f in history}
    assert new["id"] not in ids and all(f["superseded_by"] in ids | {None} for f in history)
    resp = client.patch(f"/v1/users/tia/profile/{old['id']}", json={"text": "Works at Hooli"})
    assert resp.status_code == 409 and new["id"] not in resp.text
    assert "Initrode" not in client.get("/v1/users/tia/audit").text


class DeletingWhileExtracting:
    """The real extractor, while the memory it reads is deleted (as by a concurrent request)."""

    def __init__(self, inner: Extractor, svc: Hippograph, memory_id: str) -> None:
        self.inner, self.svc, self.memory_id, self.name = inner, svc, memory_id, inner.name

    def load(self) -> object:
        return self.inner.load()

    def extract(self, episodes: Sequence[Episode], user_name: str | None = None) -> Extraction:
        found = self.inner.extract(episodes, user_name)
        self.svc.delete_memory(episodes[0].user_id, self.memory_id)  # no lock is held while extracting
        return found


def test_a_memory_deleted_while_it_is_extracted_does_not_come_back(tmp_path) -> None:
    with bench_service(tmp_path) as svc:
        svc.remember("uma", "s1", None, [MessageIn(id="u0", role=Role.user, content="Hello there, my friend.")])
        svc.ingestor.extractor = DeletingWhileExtracting(svc.ingestor.extractor, svc, "u1")
        svc.remember("uma", "s1", None, [MessageIn(id="u1", role=Role.user, content=PROBE),
                                         MessageIn(id="u2", role=Role.user, content="I work at Initech.")])
        assert svc.graph.get_episodes("uma", [stable_id("ep", "uma", "u1")]) == []
        notes = [n.text for n in svc.graph.list_notes("uma", include_history=True)]
        assert not any("Seattle" in t or "hiking" in t for t in notes) and any("Initech" in t for t in notes)
        assert all("Seattle" not in h.text for h in svc.search("uma", "Seattle hiking", 20))
        assert [e.name for e in svc.graph.find_entities("uma", "seattle")] == []


def test_a_delete_the_index_cannot_follow_changes_nothing(tmp_path) -> None:
    with bench_service(tmp_path) as svc:
        svc.remember("vic", "s1", None, [MessageIn(id="w1", role=Role.user, content=PROBE)])
        notes = svc.graph.list_notes("vic")
        svc.indexer.store.close()  # the vector store is down
        with pytest.raises(BackendUnavailable):
            svc.delete_memory("vic", "w1")
        assert svc.graph.list_notes("vic") == notes and svc.get_memory("vic", "w1")["parts"]  # nothing went
        svc.indexer.store.open()
        assert svc.delete_memory("vic", "w1") == ["w1"]  # tried again, it goes
        assert svc.graph.list_notes("vic") == [] and svc.search("vic", "Seattle hiking", 10) == []


def test_a_note_deleted_while_the_index_is_repaired_does_not_come_back(tmp_path) -> None:
    """The start-up repair reads what the index lacks, then puts it back under the user's lease, which
    a delete holds too: a note deleted between the two is not indexed again."""
    with bench_service(tmp_path) as svc:
        svc.remember("wes", "s1", None, [MessageIn(id="x1", role=Role.user, content=PROBE),
                                         MessageIn(id="x2", role=Role.user, content="I work at Initech.")])
        home = next(n for n in svc.graph.list_notes("wes") if "Seattle" in n.text)
        svc.indexer.store.delete([home.id])  # lost from the index (a crash between the two stores)
        done: list[int] = []
        with svc.ingestor.user_write("wes"):  # a delete of this user's is under way
            repair = threading.Thread(target=lambda: done.append(svc.reindex_missing()))
            repair.start()
            repair.join(timeout=3)
            assert repair.is_alive() and not svc.indexer.store.has([home.id])  # it waits for the lease
            svc.delete_note("wes", home.id)
        repair.join(timeout=60)
        assert done == [0] and not svc.indexer.store.has([home.id])
        assert all("Seattle" not in h.text for h in svc.search("wes", "Seattle", 20) if h.kind == "note")
        # with nothing deleted meanwhile, what the index lacks goes back
        work = next(n for n in svc.graph.list_notes("wes") if "Initech" in n.text)
        svc.indexer.store.delete([work.id])
        assert svc.reindex_missing() == 1 and svc.indexer.store.has([work.id]) == {work.id}


# --- the bytes on disk --------------------------------------------------------------------------
def files_holding(folder: Path, secret: str) -> list[str]:
    needles = [secret.encode(), secret.encode("utf-16-le"), secret.lower().encode()]
    return sorted(str(f.relative_to(folder)) for f in folder.rglob("*")
                  if f.is_file() and any(n in f.read_bytes() for n in needles))


def store_secret(client: TestClient, user: str = "val") -> None:
    say(client, user, "s1", "v1", f"I live in {SECRET} and I love hiking.")
    say(client, user, "s2", "v2", "Remind me to water the plants.")
    assert any(SECRET in f["fact"] for f in client.get(f"/v1/users/{user}/profile").json()["facts"])
    assert any(SECRET in h["text"] for h in search(client, user, SECRET))


@pytest.mark.parametrize("how", ["memory", "session", "user"])
def test_deleted_text_leaves_every_file_after_the_sweep(tmp_path, how: str) -> None:
    data = tmp_path / "data"
    with TestClient(create_app(Settings(data_dir=data)), base_url=LOCAL) as client:
        store_secret(client)
        svc: Hippograph = client.app.state.service
        svc.close()  # everything written reaches the files, as after a restart
        svc.open()
        assert files_holding(data, SECRET)  # the scan does find it while it is stored
        path = {"memory": "/v1/users/val/memories/v1", "session": "/v1/users/val/sessions/s1",
                "user": "/v1/users/val"}[how]
        assert client.delete(path).status_code == 200
        if how != "user":
            assert SECRET not in everything(client, "val", SECRET)
        svc.expire_sessions()  # what the server's periodic sweep runs
        svc.retry_pending()
    assert files_holding(data, SECRET) == []


def test_optimize_compacts_what_was_deleted(tmp_path) -> None:
    data = tmp_path / "data"
    settings = Settings(data_dir=data)
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        store_secret(client)
        assert client.delete("/v1/users/val/memories/v1").status_code == 200
    from hippograph.cli import main

    assert main(["optimize", "--data-dir", str(data)]) == 0
    assert files_holding(data, SECRET) == []
