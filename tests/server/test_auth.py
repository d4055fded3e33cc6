"""API keys, scopes and tenants through the HTTP API, tried as an attacker and as a new user would."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from hippograph.config import AuthSettings, Settings
from hippograph.server.app import create_app
from tests.apps import LOCAL
from tests.conftest import ROOT


def cli(*args: str, data_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hippograph.cli", *args, "--data-dir", str(data_dir)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)


def create_key(data_dir: Path, tenant: str, scopes: str) -> dict:
    done = cli("keys", "create", "--tenant", tenant, "--scopes", scopes, "--json", data_dir=data_dir)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def bearer(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="module")
def keyed(tmp_path_factory) -> Iterator[tuple[TestClient, dict[str, dict], Path]]:
    """A server whose keys were made with the CLI before it started: acme (admin, writer, reader), globex."""
    data = tmp_path_factory.mktemp("keyed")
    keys = {name: create_key(data, tenant, scopes) for name, tenant, scopes in (
        ("admin", "acme", "read,write,admin"), ("writer", "acme", "read,write"), ("reader", "acme", "read"),
        ("globex", "globex", "read,write,admin"))}
    with TestClient(create_app(Settings(data_dir=data)), base_url=LOCAL) as client:
        yield client, keys, data


def remember(client: TestClient, key: str, user: str, text: str, session: str = "s1") -> dict:
    resp = client.post("/v1/memories", headers=bearer(key), json={
        "user_id": user, "session_id": session, "messages": [{"role": "user", "content": text}]})
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_cli_json_names_the_key_once(keyed) -> None:
    _, keys, data = keyed
    assert set(keys["writer"]) == {"id", "key", "tenant", "scopes"}
    assert keys["writer"]["tenant"] == "acme" and keys["writer"]["scopes"] == ["read", "write"]
    assert keys["writer"]["key"].startswith("hg_")
    listed = cli("keys", "list", "--json", data_dir=data)
    assert listed.returncode == 0 and keys["writer"]["key"] not in listed.stdout
    assert {k["id"] for k in json.loads(listed.stdout)} == {k["id"] for k in keys.values()}


def test_a_key_says_who_it_is_and_lists_its_tenants_users_only(keyed) -> None:
    client, keys, _ = keyed
    me = client.get("/v1/me", headers=bearer(keys["reader"]["key"]))
    assert me.status_code == 200, me.text
    assert me.json() == {"tenant": "acme", "scopes": ["read"], "key_id": keys["reader"]["id"], "key_name": None,
                         "auth": "keys"}
    assert client.get("/v1/me").status_code == 401
    remember(client, keys["writer"]["key"], "ulla", "I live in Oslo.")
    remember(client, keys["writer"]["key"], "uwe", "I live in Bonn.")
    remember(client, keys["globex"]["key"], "uma", "I live in Lima.")
    assert client.get("/v1/users?q=u", headers=bearer(keys["reader"]["key"])).json() == {"users": ["ulla", "uwe"]}
    assert client.get("/v1/users?q=u", headers=bearer(keys["globex"]["key"])).json() == {"users": ["uma"]}
    assert client.get("/v1/users?q=u&limit=1", headers=bearer(keys["reader"]["key"])).json() == {"users": ["ulla"]}
    assert client.get("/v1/users?limit=0", headers=bearer(keys["reader"]["key"])).status_code == 422


def test_an_open_server_says_so(tmp_path) -> None:
    with TestClient(create_app(Settings(data_dir=tmp_path / "d")), base_url=LOCAL) as client:
        assert client.get("/v1/me").json() == {"tenant": "default", "scopes": ["read", "write", "admin"],
                                               "key_id": None, "key_name": None, "auth": "open"}


def test_a_key_is_stored_only_as_its_hash(tmp_path) -> None:
    # (files are read with no store open: closing any descriptor of an open SQLite file drops its locks)
    made = create_key(tmp_path, "acme", "read")
    raw = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert made["id"].encode() in raw and made["key"].encode() not in raw


def test_requests_without_a_valid_key_are_refused(keyed) -> None:
    client, keys, _ = keyed
    body = {"user_id": "alice", "query": "anything"}
    for headers, detail in (({}, "missing API key"), (bearer("hg_0000000000000000_" + "x" * 43), "unknown API key"),
                            ({"Authorization": "Basic YWxpY2U6c2VjcmV0"}, "must be `Bearer <key>`"),
                            (bearer(keys["writer"]["key"][:-1]), "unknown API key")):
        resp = client.post("/v1/search", json=body, headers=headers)
        assert resp.status_code == 401, resp.text
        assert resp.json()["error"] == "Unauthorized" and detail in resp.json()["detail"]
        assert resp.headers["www-authenticate"] == "Bearer"
    assert client.get("/healthz").status_code == 200  # health stays open to probes
    assert client.get("/readyz").json()["auth"] == "keys"


def test_scopes_are_enforced_and_named(keyed) -> None:
    client, keys, _ = keyed
    reader, writer = bearer(keys["reader"]["key"]), bearer(keys["writer"]["key"])
    resp = client.post("/v1/memories", headers=reader, json={
        "user_id": "alice", "messages": [{"role": "user", "content": "I live in Oslo."}]})
    assert resp.status_code == 403 and "lacks the 'write' scope" in resp.json()["detail"]
    remember(client, keys["writer"]["key"], "alice", "I live in Oslo.")
    assert client.get("/v1/users/alice/profile", headers=reader).status_code == 200
    for method, url in (("delete", "/v1/users/alice"), ("get", "/v1/usage"), ("get", "/v1/keys"),
                        ("get", "/metrics")):
        resp = client.request(method, url, headers=writer)
        assert resp.status_code == 403 and "'admin'" in resp.json()["detail"], (url, resp.text)
    assert client.get("/v1/users/alice/profile", headers=reader).status_code == 200  # nothing was deleted


def test_the_same_user_id_in_two_tenants_is_two_users(keyed) -> None:
    client, keys, _ = keyed
    acme, globex = keys["writer"]["key"], keys["globex"]["key"]
    remember(client, acme, "sam", "I work at Initech with Priya Raman.")
    remember(client, globex, "sam", "I work at Umbrella with Oskar Lind.")
    for key, mine, theirs in ((acme, "Initech", "Umbrella"), (globex, "Umbrella", "Initech")):
        hits = client.post("/v1/search", headers=bearer(key), json={"user_id": "sam", "query": "work"}).json()
        text = json.dumps(hits)
        assert mine in text and theirs not in text
        ents = client.get("/v1/graph/entities", headers=bearer(key), params={"user_id": "sam"}).json()
        assert theirs not in json.dumps(ents)
    # an entity id of the other tenant's sam is unknown here, exactly like one that does not exist
    theirs = client.get("/v1/graph/entities", headers=bearer(globex), params={"user_id": "sam"}).json()
    oskar = next(e["id"] for e in theirs if e["name"] == "Oskar Lind")
    resp = client.get(f"/v1/graph/entities/{oskar}/neighbors", headers=bearer(acme), params={"user_id": "sam"})
    missing = client.get("/v1/graph/entities/ent_0123456789abcdef0123/neighbors", headers=bearer(acme),
                         params={"user_id": "sam"})
    assert resp.status_code == missing.status_code == 404
    assert resp.json()["detail"].replace(oskar, "X") == missing.json()["detail"].replace(
        "ent_0123456789abcdef0123", "X")
    # and a user only the other tenant has is as unknown as one nobody has
    remember(client, globex, "gina", "I live in Lyon.")
    here = client.get("/v1/users/gina/profile", headers=bearer(acme))
    nobody = client.get("/v1/users/nobody-at-all/profile", headers=bearer(acme))
    assert here.status_code == nobody.status_code == 404
    assert client.delete("/v1/users/gina", headers=bearer(keys["admin"]["key"])).status_code == 404
    assert client.get("/v1/users/gina/profile", headers=bearer(globex)).status_code == 200


def test_admin_api_manages_the_tenants_keys_only(keyed) -> None:
    client, keys, _ = keyed
    admin = bearer(keys["admin"]["key"])
    remember(client, keys["writer"]["key"], "alice", "I live in Oslo.")
    made = client.post("/v1/keys", headers=admin, json={"scopes": ["read"], "name": "dashboard"})
    assert made.status_code == 201, made.text
    new = made.json()
    assert new["tenant"] == "acme" and new["scopes"] == ["read"] and new["key"].startswith("hg_")
    assert client.get("/v1/users/alice/profile", headers=bearer(new["key"])).status_code == 200
    listed = client.get("/v1/keys", headers=admin).json()["keys"]
    assert {k["tenant"] for k in listed} == {"acme"} and new["key"] not in json.dumps(listed)
    other = client.post("/v1/keys", headers=admin, json={"scopes": ["read"], "tenant": "globex"})
    assert other.status_code == 403 and "another tenant" in other.json()["detail"]
    assert client.delete(f"/v1/keys/{keys['globex']['id']}", headers=admin).status_code == 404
    revoked = client.delete(f"/v1/keys/{new['id']}", headers=admin)
    assert revoked.status_code == 200 and revoked.json()["active"] is False
    resp = client.get("/v1/users/alice/profile", headers=bearer(new["key"]))
    assert resp.status_code == 401 and "revoked" in resp.json()["detail"]


def test_revoking_with_the_cli_takes_effect_at_once(keyed) -> None:
    client, keys, data = keyed
    remember(client, keys["writer"]["key"], "rita", "I live in Rome.")
    key = create_key(data, "acme", "read")  # made while the server runs, by another process
    assert client.get("/v1/users/rita/profile", headers=bearer(key["key"])).status_code == 200
    done = cli("keys", "revoke", key["id"], data_dir=data)
    assert done.returncode == 0, done.stderr
    assert client.get("/v1/users/rita/profile", headers=bearer(key["key"])).status_code == 401


def test_the_audit_log_names_the_key(keyed) -> None:
    client, keys, _ = keyed
    out = remember(client, keys["writer"]["key"], "audited", "I prefer email over phone calls.")
    note = out["notes"][0]["id"]
    resp = client.delete(f"/v1/users/audited/profile/{note}", headers=bearer(keys["writer"]["key"]),
                         params={"actor": "user:audited"})
    assert resp.status_code == 200
    events = client.get("/v1/users/audited/audit", headers=bearer(keys["reader"]["key"])).json()["events"]
    deleted = [e for e in events if e["action"] == "delete"]
    assert deleted and deleted[0]["actor"] == f"user:audited (key {keys['writer']['id']})"
    assert {e["user_id"] for e in events} == {"audited"}


def test_open_on_loopback_until_the_first_key(tmp_path) -> None:
    with TestClient(create_app(Settings(data_dir=tmp_path / "d")), base_url=LOCAL) as client:
        assert client.get("/readyz").json()["auth"] == "open"
        remember_open = client.post("/v1/memories", json={
            "user_id": "ann", "messages": [{"role": "user", "content": "I live in Porto."}]})
        assert remember_open.status_code == 200
        # a key that is sent must be valid, even while the server is open
        bogus = client.get("/v1/users/ann/profile", headers=bearer("nonsense"))
        assert bogus.status_code == 401
        made = client.post("/v1/keys", json={"scopes": ["read", "write", "admin"], "tenant": "default"})
        assert made.status_code == 201
        assert client.get("/v1/users/ann/profile").status_code == 401  # keys are required from now on
        assert client.get("/v1/users/ann/profile", headers=bearer(made.json()["key"])).status_code == 200
        assert client.get("/readyz").json()["auth"] == "keys"


def test_a_non_loopback_app_without_keys_serves_nobody(tmp_path) -> None:
    # create_app on a non-loopback host (as another ASGI server might run it): no key, no service
    with TestClient(create_app(Settings(data_dir=tmp_path / "d", host="0.0.0.0")), base_url=LOCAL) as client:
        resp = client.post("/v1/search", json={"user_id": "x", "query": "q"})
        assert resp.status_code == 401 and client.get("/readyz").json()["auth"] == "keys"


def test_serve_refuses_a_non_loopback_address_without_a_key(tmp_path) -> None:
    proc = subprocess.run([sys.executable, "-m", "hippograph.cli", "serve", "--host", "0.0.0.0", "--port", "1",
                           "--data-dir", str(tmp_path / "d")], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 2
    last = proc.stderr.strip().splitlines()[-1]
    assert "refusing to listen on 0.0.0.0 without an API key" in last and "hippograph keys create" in last
    assert "HIPPOGRAPH_AUTH__DISABLED=true" in last
    assert not (tmp_path / "d").exists()  # said before anything is opened, loaded or made


def test_a_bootstrap_key_from_the_environment(tmp_path) -> None:
    secret = "k" * 40
    settings = Settings(data_dir=tmp_path / "d", auth=AuthSettings(bootstrap_key=secret, bootstrap_tenant="ops"))
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        assert client.get("/v1/keys").status_code == 401
        listed = client.get("/v1/keys", headers=bearer(secret))
        assert listed.status_code == 200 and [k["name"] for k in listed.json()["keys"]] == ["bootstrap"]
        assert listed.json()["keys"][0]["tenant"] == "ops"
    assert secret.encode() not in (tmp_path / "d" / "graph.sqlite3").read_bytes()


def test_rate_limits_per_key(tmp_path) -> None:
    secret = "r" * 40
    settings = Settings(data_dir=tmp_path / "d", auth=AuthSettings(bootstrap_key=secret, rate_limit_per_minute=30,
                                                                   rate_limit_burst=3))
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        codes = [client.get("/v1/keys", headers=bearer(secret)).status_code for _ in range(4)]
        assert codes == [200, 200, 200, 429]
        limited = client.get("/v1/keys", headers=bearer(secret))
        assert limited.status_code == 429 and limited.json()["error"] == "RateLimited"
        assert 1 <= int(limited.headers["retry-after"]) <= 2  # one request every 2 s at 30 a minute
        time.sleep(2.1)
        assert client.get("/v1/keys", headers=bearer(secret)).status_code == 200


def test_unknown_keys_are_limited_per_address(tmp_path) -> None:
    """Guessing keys costs a store lookup each: past the limit an address gets 429 for everything, with
    Retry-After, until its minute refills (a valid key sent from there waits too, or guessing would tell
    a valid key by its answer)."""
    secret = "g" * 40
    settings = Settings(data_dir=tmp_path / "d", auth=AuthSettings(bootstrap_key=secret, failed_per_minute=6))
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        codes = [client.get("/v1/keys", headers=bearer(f"hg_{i:016x}_{'x' * 40}")).status_code for i in range(7)]
        assert codes == [401] * 6 + [429]
        limited = client.get("/v1/keys", headers=bearer(secret))
        assert limited.status_code == 429 and "missing, unknown or revoked API key" in limited.json()["detail"]
        assert 1 <= int(limited.headers["retry-after"]) <= 10  # one attempt back every 10 s at 6 a minute
        assert client.get("/v1/keys").status_code == 429  # no key at all counts as a failed attempt too
        time.sleep(10.1)
        assert client.get("/v1/keys", headers=bearer(secret)).status_code == 200


def test_valid_keys_are_never_counted_as_failures(tmp_path) -> None:
    secret = "v" * 40
    settings = Settings(data_dir=tmp_path / "d", auth=AuthSettings(bootstrap_key=secret, failed_per_minute=2))
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        assert {client.get("/v1/keys", headers=bearer(secret)).status_code for _ in range(20)} == {200}


def test_the_last_admin_key_is_revoked_only_on_purpose_and_the_server_stays_closed(tmp_path) -> None:
    data = tmp_path / "d"
    admin = create_key(data, "acme", "read,write,admin")
    reader = create_key(data, "acme", "read")
    refused = cli("keys", "revoke", admin["id"], data_dir=data)
    assert refused.returncode == 2 and "last active admin key of tenant 'acme'" in refused.stderr
    assert "--force" in refused.stderr
    assert cli("keys", "revoke", reader["id"], data_dir=data).returncode == 0  # not an admin key: no question
    forced = cli("keys", "revoke", admin["id"], "--force", data_dir=data)
    assert forced.returncode == 0, forced.stderr
    with TestClient(create_app(Settings(data_dir=data)), base_url=LOCAL) as client:  # every key revoked, on loopback
        assert client.get("/readyz").json()["auth"] == "keys"
        assert client.post("/v1/keys", json={"scopes": ["admin"], "tenant": "acme"}).status_code == 401
        assert client.get("/v1/keys", headers=bearer(admin["key"])).status_code == 401
    with TestClient(create_app(Settings(data_dir=data, auth=AuthSettings(disabled=True))), base_url=LOCAL) as client:
        assert client.get("/readyz").json()["auth"] == "disabled"  # the operator's explicit act
        assert client.get("/v1/keys").status_code == 200
