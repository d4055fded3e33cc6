"""Keys and owner keys in the system of record: the same behaviour on SQLite and on Neo4j."""

from __future__ import annotations

import sqlite3
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest

from hippograph.auth import DEFAULT_TENANT, Scope, hash_key, new_key, new_owner
from hippograph.graph.base import GraphStore
from hippograph.models import Episode, Role, utcnow
from hippograph.tenancy import NOBODY, Tenancy
from tests.contracts.conftest import cypher


def test_keys_are_stored_as_hashes_and_revoked_at_once(store: GraphStore) -> None:
    record, key = new_key("acme", [Scope.read, Scope.write], "ingest bot")
    store.add_key(record)
    assert key not in record.model_dump_json()  # the record never carries the key
    found = store.key_by_hash(hash_key(key))
    assert found is not None and (found.id, found.tenant, found.scopes, found.name) == (
        record.id, "acme", [Scope.read, Scope.write], "ingest bot")
    assert store.key_by_hash(hash_key(key + "x")) is None
    assert store.has_keys()
    other, _ = new_key("globex", [Scope.admin])
    store.add_key(other)
    assert [k.id for k in store.list_keys("acme")] == [record.id]
    assert {k.id for k in store.list_keys()} == {record.id, other.id}
    # a tenant cannot revoke another tenant's key: it is not there for it
    assert store.revoke_key(other.id, utcnow(), tenant="acme") is None
    assert store.key_by_hash(other.key_hash).active
    revoked = store.revoke_key(record.id, utcnow(), tenant="acme")
    assert revoked is not None and not revoked.active
    assert not store.key_by_hash(hash_key(key)).active
    store.revoke_key(other.id, utcnow())
    assert store.has_keys()  # every key revoked: the store still has had keys, and never runs open again


def test_owner_keys_are_per_tenant_and_registered_once(store: GraphStore) -> None:
    assert store.owner_of("acme", "alice") is None
    first = store.owner_of("acme", "alice", new_owner=new_owner())
    again = store.owner_of("acme", "alice", new_owner=new_owner())  # a second writer gets the first key
    assert first == again == store.owner_of("acme", "alice")
    other = store.owner_of("globex", "alice", new_owner=new_owner())
    assert other != first and "alice" not in first and "acme" not in first
    assert store.owners([first, other, "nope"]) == {first: ("acme", "alice"), other: ("globex", "alice")}


def test_a_tenant_lists_its_own_users_only(store: GraphStore) -> None:
    tenancy = Tenancy(store)
    for tenant, user in (("acme", "bob"), ("acme", "alice"), ("acme", "al"), ("globex", "alma"), ("acme", "zed")):
        tenancy.owner(tenant, user, create=True)
    assert store.tenant_users("acme") == ["al", "alice", "bob", "zed"]
    assert store.tenant_users("acme", prefix="al") == ["al", "alice"]
    assert store.tenant_users("acme", limit=2) == ["al", "alice"]
    assert store.tenant_users("globex") == ["alma"] and store.tenant_users("initech") == []
    assert store.tenant_users("acme", prefix="%") == [] and store.tenant_users("acme", prefix="_") == []
    store.delete_user(store.owner_of("acme", "bob") or "")
    assert store.tenant_users("acme") == ["al", "alice", "zed"]


def test_concurrent_first_writes_agree_on_the_owner(store: GraphStore) -> None:
    with ThreadPoolExecutor(8) as pool:
        got = set(pool.map(lambda _: store.owner_of("acme", "bob", new_owner=new_owner()), range(16)))
    assert len(got) == 1


def test_forgetting_a_user_drops_their_owner_key(store: GraphStore) -> None:
    tenancy = Tenancy(store)
    owner = tenancy.owner("acme", "carol", create=True)
    assert store.user_exists(owner) and store.ensure_user(owner).name == "carol"
    store.delete_user(owner)
    assert store.owner_of("acme", "carol") is None
    assert tenancy.owner("acme", "carol", must_exist=False) == NOBODY
    assert tenancy.owner("acme", "carol", create=True) != owner  # a new user, with a new key


def _legacy(store: GraphStore, backend: str, tmp_path) -> None:
    """Make the store look like one written before tenants existed: users without owner records."""
    store.ensure_user("dave")
    store.add_episodes([Episode(id="ep-d1", user_id="dave", session_id="s", role=Role.user, content="hi",
                                timestamp=utcnow() - timedelta(days=1))])
    store.close()
    if backend == "embedded":
        with sqlite3.connect(tmp_path / "g.sqlite3") as conn:
            conn.execute("DROP TABLE owners")
    else:
        cypher("MATCH (u:User) REMOVE u.tenant, u.external_id")


@pytest.mark.parametrize("backend", ["embedded", "neo4j"])
def test_an_older_store_is_upgraded_into_the_default_tenant(backend: str, graph_store, tmp_path) -> None:
    store = graph_store(backend)
    store.open()
    _legacy(store, backend, tmp_path)
    upgraded = graph_store(backend, fresh=False)
    upgraded.open()
    try:
        # the user keeps the data it had, now as a user of the default tenant
        assert upgraded.owner_of(DEFAULT_TENANT, "dave") == "dave"
        assert [e.id for e in upgraded.get_episodes("dave", ["ep-d1"])] == ["ep-d1"]
        assert upgraded.owner_of("acme", "dave") is None
    finally:
        upgraded.close()
