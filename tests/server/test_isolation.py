"""Randomized isolation: 3 tenants x 3 users (the same user ids in every tenant), each with secrets of
its own; every operation that takes a user or an object id is tried by every other identity, with the
victim's user id and the victim's object ids. A leak is any response that carries another identity's
secret or one of its object ids, or a write that changes what the victim has. The count is printed and
must be zero, on the embedded stores and on Neo4j."""

from __future__ import annotations

import itertools
import json
import random
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from fastapi.testclient import TestClient

from hippograph.auth import Scope
from hippograph.config import GraphSettings, Settings
from hippograph.server.app import create_app
from tests.apps import LOCAL
from tests.contracts.conftest import drop_keys, neo4j_uri, wipe_neo4j

TENANTS = ("acme", "globex", "initech")
USERS = ("alice", "bob", "carol")
CITIES = ("Lisbon", "Oslo", "Denver", "Kyoto", "Lyon", "Austin", "Porto", "Leeds", "Turin")
FIRMS = ("Umbrella", "Cyberdyne", "Soylent", "Hooli", "Vandelay", "Wonka", "Stark", "Wayne", "Tyrell")

# Every operation of the spec that reads or changes a user's memory, and how the test fills it. An
# operation the spec has and this table lacks fails the test: a new route must be tried too.
NOT_PER_USER = {("get", "/healthz"), ("get", "/readyz"), ("post", "/v1/keys"), ("get", "/v1/keys"),
                ("delete", "/v1/keys/{key_id}")}


@dataclass
class Identity:
    tenant: str
    user: str
    key: str
    secrets: list[str]
    session: str
    ids: dict[str, list[str]] = field(default_factory=dict)  # notes, entities, memories

    @property
    def name(self) -> str:
        return f"{self.tenant}/{self.user}"

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


def world(client: TestClient, rng: random.Random, admin: dict[str, str]) -> list[Identity]:
    people: list[Identity] = []
    places = rng.sample(CITIES, len(CITIES))
    firms = rng.sample(FIRMS, len(FIRMS))
    for i, (tenant, user) in enumerate(itertools.product(TENANTS, USERS)):
        key = admin[tenant]
        code, pet = f"zq{secrets.token_hex(5)}", f"Pet{secrets.token_hex(3)}"
        session = f"s-{secrets.token_hex(3)}"
        me = Identity(tenant, user, key, [code, pet], session)
        msgs = [{"id": f"m{j}-{secrets.token_hex(4)}", "role": "user", "content": c} for j, c in enumerate([
            f"My locker code is {code}.", f"I live in {places[i]} and I work at {firms[i]}.",
            f"My dog is called {pet}.", "I prefer short answers."])]
        resp = client.post("/v1/memories", headers=me.headers,
                           json={"user_id": user, "session_id": session, "messages": msgs})
        assert resp.status_code == 200, resp.text
        notes = client.get(f"/v1/users/{user}/profile", headers=me.headers).json()
        me.ids["notes"] = [n["id"] for group in ("facts", "preferences", "decisions") for n in notes[group]]
        ents = client.get("/v1/graph/entities", headers=me.headers, params={"user_id": user}).json()
        me.ids["entities"] = [e["id"] for e in ents]
        me.ids["memories"] = [m["id"] for m in msgs]
        # the internal key both stores file this user under: no answer to anybody may carry it
        me.ids["owner"] = [client.app.state.service.tenancy.owner(tenant, user)]
        assert me.ids["notes"] and me.ids["entities"], (me.name, notes, ents)
        people.append(me)
    return people


def attempts(attacker: Identity, victim: Identity) -> Iterator[tuple[str, str, dict]]:
    """(method, path, kwargs): the attacker's key with the victim's user id and object ids."""
    u, a = victim.user, attacker.user
    for user in {u, a}:  # the victim's id, and the attacker's own user holding the victim's object ids
        yield "get", f"/v1/users/{user}/profile", {}
        yield "get", f"/v1/users/{user}/profile/history", {}
        yield "get", f"/v1/users/{user}/audit", {}
        yield "get", f"/v1/users/{user}/sessions", {}
        yield "post", "/v1/search", {"json": {"user_id": user, "query": f"locker code dog {victim.secrets[0]}"}}
        yield "post", "/v1/context", {"json": {"user_id": user, "query": "Where do I live and what is my locker code?",
                                               "session_id": victim.session}}
        yield "post", "/v1/handoffs", {"json": {"user_id": user, "session_id": victim.session, "task": "continue"}}
        yield "get", "/v1/graph/entities", {"params": {"user_id": user, "q": victim.secrets[1]}}
        for mem in victim.ids["memories"]:
            yield "get", f"/v1/users/{user}/memories/{mem}", {}
            yield "delete", f"/v1/users/{user}/memories/{mem}", {}
        for ent in victim.ids["entities"]:
            yield "get", f"/v1/graph/entities/{ent}/neighbors", {"params": {"user_id": user, "depth": 2}}
            yield "get", "/v1/graph/neighbors", {"params": {"user_id": user, "entity": ent, "depth": 2}}
        yield "get", "/v1/graph/neighbors", {"params": {"user_id": user, "entity": victim.secrets[1]}}  # by name
        for note in victim.ids["notes"]:
            yield "get", f"/v1/users/{user}/audit", {"params": {"item_id": note}}
            yield "patch", f"/v1/users/{user}/profile/{note}", {"json": {"text": "overwritten"}}
            yield "delete", f"/v1/users/{user}/profile/{note}", {}
        yield "delete", f"/v1/users/{user}/sessions/{victim.session}", {}
        # the victim's message id again, under the same user id: a message of the attacker's own user
        yield "post", "/v1/memories", {"json": {"user_id": user, "session_id": victim.session, "messages": [
            {"id": victim.ids["memories"][0], "role": "user", "content": "Thanks!"}]}}
        yield "post", "/v1/memories", {"json": {"user_id": user, "session_id": victim.session, "wait": False,
                                                "messages": [{"id": victim.ids["memories"][-1], "role": "user",
                                                              "content": "Thanks again!"}]}}
        yield "post", "/v1/memories/status", {"json": {"user_id": user, "ids": victim.ids["memories"]}}
        yield "post", "/v1/admin/quarantine/release", {"json": {"user_id": user, "ids": victim.ids["memories"]}}
    yield "get", "/v1/usage", {"params": {"user_id": u}}
    yield "get", "/v1/users", {"params": {"q": victim.user[:1]}}
    yield "get", "/v1/me", {}
    yield "get", "/v1/admin/quarantine", {}
    yield "get", "/metrics", {}


def covered(client: TestClient) -> None:
    tried = {(m, p) for m, p, _ in attempts(*_two())} | {("delete", "/v1/users/{user_id}")} | NOT_PER_USER
    templated = {(m, _template(p)) for m, p in tried}
    spec = client.get("/openapi.json").json()["paths"]
    missing = [(m, p) for p, ops in spec.items() for m in ops if (m, p) not in templated]
    assert not missing, f"operations the isolation test does not try: {missing}"


def _two() -> tuple[Identity, Identity]:
    ids = {"memories": ["m"], "entities": ["e"], "notes": ["n"]}
    return (Identity("t1", "a", "k", ["x", "y"], "s", ids), Identity("t2", "b", "k", ["x", "y"], "s", ids))


def _template(path: str) -> str:
    parts = path.split("/")
    names = {3: "{user_id}", 5: None}
    if path.startswith("/v1/users/"):
        parts[3] = names[3]
        if len(parts) == 6 and parts[5] != "history":
            parts[5] = {"profile": "{item_id}", "memories": "{memory_id}", "sessions": "{session_id}"}[parts[4]]
    if path.startswith("/v1/graph/entities/") and len(parts) == 6:
        parts[4] = "{entity_id}"
    return "/".join(parts)


def leaks_in(resp_text: str, victim: Identity) -> list[str]:
    found = [s for s in victim.secrets if s in resp_text]
    found += [i for kind in ("notes", "entities", "owner") for i in victim.ids[kind] if i in resp_text]
    return found


def run_isolation(client: TestClient, seed: int) -> None:
    rng = random.Random(seed)
    covered(client)
    # each tenant's key, made as `hippograph keys create` makes it
    tenancy = client.app.state.service.tenancy
    admin = {t: tenancy.create_key(t, [Scope.read, Scope.write, Scope.admin])[1] for t in TENANTS}
    people = world(client, rng, admin)
    before = {p.name: snapshot(client, p) for p in people}
    # a key lists its own tenant's users only (before the attempts below store some under victims' ids),
    # and says it is its own tenant's
    for p in people:
        listed = client.get("/v1/users", headers=p.headers, params={"limit": 1000}).json()["users"]
        assert set(listed) == {o.user for o in people if o.tenant == p.tenant}, (p.name, listed)
        assert client.get("/v1/me", headers=p.headers).json()["tenant"] == p.tenant
    pairs = [(a, v) for a in people for v in people if a.tenant != v.tenant]
    rng.shuffle(pairs)
    leaks: list[str] = []
    tried = 0
    for attacker, victim in pairs:
        for method, path, kwargs in attempts(attacker, victim):
            resp = client.request(method, path, headers=attacker.headers, **kwargs)
            tried += 1
            assert resp.status_code < 500, (method, path, resp.text)
            sent = path + json.dumps(kwargs)  # an id the attacker sent may come back in "no such item"
            leaked = [x for x in leaks_in(resp.text, victim) if x not in sent]
            if any(i in path for kind in ("notes", "entities") for i in victim.ids[kind]) and resp.status_code != 404:
                leaked.append(f"answered {resp.status_code}, not 404")
            if leaked:
                leaks.append(f"{attacker.name} -> {victim.name}: {method.upper()} {path} showed {leaked}")
    # nothing the attackers sent changed a victim: same profile, same memories, same sessions
    changed = [p.name for p in people if snapshot(client, p) != before[p.name]]
    # within a tenant, a user's path never reaches another user's objects
    same_tenant = [(a, v) for a in people for v in people if a.tenant == v.tenant and a.user != v.user]
    for attacker, victim in same_tenant:
        for mem in victim.ids["memories"][:2]:
            # message ids are the client's: the same "m0" of the attacker is the attacker's own message
            got = client.get(f"/v1/users/{attacker.user}/memories/{mem}", headers=attacker.headers)
            tried += 1
            leaks += [f"{attacker.name} read {victim.name}'s {mem}"] if leaks_in(got.text, victim) else []
        for ent in victim.ids["entities"]:
            got = client.get(f"/v1/graph/entities/{ent}/neighbors", headers=attacker.headers,
                             params={"user_id": attacker.user})
            tried += 1
            leaks += [f"{attacker.name} walked {victim.name}'s {ent}"] if got.status_code != 404 else []
        for note in victim.ids["notes"]:
            got = client.patch(f"/v1/users/{attacker.user}/profile/{note}", headers=attacker.headers,
                               json={"text": "overwritten"})
            tried += 1
            leaks += [f"{attacker.name} corrected {victim.name}'s {note}"] if got.status_code != 404 else []
    changed += [p.name for p in people if snapshot(client, p) != before[p.name] and p.name not in changed]
    print(f"\nisolation (seed {seed}): {len(people)} identities, {tried} requests by other identities, "
          f"{len(leaks)} leaks, {len(changed)} victims changed")
    assert not leaks, "\n".join(leaks[:20])
    assert not changed, changed
    # and each identity still sees all of its own, under its own user id, never the internal key
    for p in people:
        hits = client.post("/v1/search", headers=p.headers, json={"user_id": p.user, "query": "locker code"}).text
        assert p.secrets[0] in hits, p.name
        own = [hits, snapshot(client, p),
               client.get(f"/v1/users/{p.user}/audit", headers=p.headers).text,
               client.post("/v1/context", headers=p.headers, json={"user_id": p.user, "session_id": p.session,
                                                                   "query": "Where do I live?"}).text,
               client.get("/v1/usage", headers=p.headers).text]
        assert not [t for t in own if p.ids["owner"][0] in t], p.name


def snapshot(client: TestClient, p: Identity) -> str:
    profile = client.get(f"/v1/users/{p.user}/profile/history", headers=p.headers).json()
    sessions = client.get(f"/v1/users/{p.user}/sessions", headers=p.headers).json()["sessions"]
    memories = [client.get(f"/v1/users/{p.user}/memories/{m}", headers=p.headers).json() for m in p.ids["memories"]]
    return json.dumps([profile, p.session in [s["session_id"] for s in sessions], memories], sort_keys=True)


def _settings(tmp_path, backend: str) -> Settings:
    graph = GraphSettings(backend="neo4j", uri=neo4j_uri()) if backend == "neo4j" else GraphSettings()
    return Settings(data_dir=tmp_path / "data", graph=graph)


@pytest.mark.parametrize("backend", ["embedded", "neo4j"])
def test_no_identity_reads_or_changes_another(tmp_path, backend: str) -> None:
    if backend == "neo4j":
        wipe_neo4j()
    settings = _settings(tmp_path, backend)
    try:
        with TestClient(create_app(settings), base_url=LOCAL) as client:
            run_isolation(client, seed=random.SystemRandom().randrange(10**6))
    finally:
        if backend == "neo4j":
            drop_keys()
