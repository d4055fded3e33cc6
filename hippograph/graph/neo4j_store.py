"""The Neo4j graph store: the embedded store's behaviour, kept as a graph that reads well in Neo4j Browser.

Model (every node and relationship carries `user_id`; every query is scoped by it or by a global id):
  (:User {user_id, name})-[:IS]->(:Entity:Person {is_user: true})      the user's own entity
  (:Entity:<Type> {id, user_id, name, type, aliases, norm, is_user})   norm = the resolution key
  (:Entity)-[:<PREDICATE> {id, user_id, predicate, fact, valid_at, invalid_at, episodes}]->(:Entity)
  (:Episode {id, user_id, session_id, ..., ts, seq, metadata (JSON), processed, indexed, extractor, ord})
  (:Episode)-[:MENTIONS]->(:Entity)
  (:User)-[:HAS_NOTE]->(:Note {id, user_id, kind, text, slot, valid_at, invalid_at, superseded_by, ...})
  (:Note)-[:SUPERSEDED_BY]->(:Note), (:Note)-[:FROM]->(:Episode)
  (:Session {user_id, session_id, started_at, last_active_at, name})   activity, for the session TTL
  (:Audit {id, user_id, at, actor, action, item_kind, item_id, text, related_id, name, ord})
  (:EpisodeRef {id, user_id, client_id})   an expired episode's client id (see neo4j_forget.py)
Episodes hang off their entities (MENTIONS), not off the user: no super-node, and a User node exists
only once `ensure_user` ran, as the SQLite `users` row does. `ord` is the insertion order (SQLite's rowid).

The official async driver does the work on a private event loop (a daemon thread); the public methods
are a synchronous facade over it, one caller at a time under a lock, as in the SQLite store.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime
from typing import Any, TypeVar

import networkx as nx
from neo4j import AsyncDriver, AsyncGraphDatabase, AsyncSession, AsyncTransaction
from neo4j.exceptions import AuthError, DriverError, Neo4jError, ServiceUnavailable, SessionExpired
from neo4j.exceptions import ConfigurationError as DriverConfigurationError

from hippograph.auth import DEFAULT_TENANT
from hippograph.errors import BackendUnavailable, ConfigurationError, DataRejected, InvalidInput
from hippograph.graph import lease
from hippograph.graph import neo4j_cypher as cy
from hippograph.graph.base import Subgraph
from hippograph.graph.names import Synonyms
from hippograph.graph.neo4j_forget import Neo4jForgetting
from hippograph.graph.neo4j_lease import Neo4jLease
from hippograph.graph.neo4j_tenancy import Neo4jTenancy
from hippograph.graph.ppr import ATTRIBUTE_TYPES, PageRankGraph
from hippograph.graph.schema import normalise
from hippograph.graph.sqlite_store import USER_ENTITY_KEY
from hippograph.models import AuditEvent, Entity, Episode, Note, Relation, SessionInfo, stable_id, utcnow

Tx = cy.Tx
Rows = cy.Rows
T = TypeVar("T")
DELETE_CHUNK = 5000  # nodes per delete_user transaction
REL_CACHE_MAX = 1_000_000
NO_LIMIT = 2**62  # SQLite reads a negative LIMIT as none


_data = cy.data


async def _cypher(tx: Tx, query: str, params: dict[str, Any]) -> Rows:
    return await _data(tx, query, **params)


class Neo4jGraphStore(Neo4jForgetting, Neo4jTenancy, Neo4jLease):
    def __init__(self, uri: str, user: str | None = None, password: str | None = None,
                 database: str = "neo4j", lease_ms: int = lease.LEASE_MS) -> None:
        self.uri = uri
        self.database = database
        self.lease_ms = lease_ms  # a user's write lease, unless renewed (graph.lease)
        self._auth = (user, password or "") if user else None
        self._lock = threading.RLock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._driver: AsyncDriver | None = None
        self._session: AsyncSession | None = None  # of the open batch(), if any
        self._tx: AsyncTransaction | None = None
        self._depth = 0
        # relation id -> (source entity id, user id). Relations never move, so this stays true, and a
        # lookup by id expands from the indexed source node: no index can find a relationship by a
        # property whatever its type (Neo4j indexes one relationship type each).
        self._rel_sources: dict[str, tuple[str, str]] = {}
        self._warm_users: set[str] = set()

    # --- lifecycle -----------------------------------------------------------------------------
    def open(self) -> None:
        with self._lock:
            if self._driver is not None:
                return
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._loop.run_forever, name="neo4j-graph", daemon=True)
            self._thread.start()
            try:
                self._run(self._open())
            except BaseException:
                self._stop_loop()
                raise

    async def _open(self) -> None:
        try:
            driver = AsyncGraphDatabase.driver(self.uri, auth=self._auth, notifications_min_severity="OFF")
        except (DriverConfigurationError, ValueError) as exc:
            raise ConfigurationError(f"cannot use the Neo4j URI {self.uri!r}: {exc}") from exc
        try:
            await driver.verify_connectivity()
            async with driver.session(database=self.database) as session:
                for statement in [*cy.SCHEMA, "CALL db.awaitIndexes(300)"]:
                    await (await session.run(statement)).consume()
                found = await (await session.run(cy.HAS_SESSIONS)).single()
                if found is not None and found["episodes"] and not found["sessions"]:
                    await (await session.run(cy.BACKFILL_SESSIONS, now=cy.to_neo(utcnow()))).consume()
                await (await session.run(cy.BACKFILL_TENANTS, tenant=DEFAULT_TENANT)).consume()
        except (Neo4jError, DriverError, OSError) as exc:
            await driver.close()
            raise self._unavailable(exc) from exc
        self._driver = driver

    def close(self) -> None:
        with self._lock:
            if self._loop is None:
                return
            with suppress(Exception):  # closing what may already be gone
                self._run(self._close())
            self._stop_loop()
            self._rel_sources.clear()
            self._warm_users.clear()

    async def _close(self) -> None:
        driver, self._driver = self._driver, None
        try:
            await self._finish(commit=False)
        finally:
            if driver is not None:
                await driver.close()

    def _stop_loop(self) -> None:
        loop, thread = self._loop, self._thread
        self._loop = self._thread = None
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=10)
            loop.close()

    def _unavailable(self, exc: BaseException) -> BackendUnavailable | DataRejected:
        where = f"Neo4j at {self.uri} (database {self.database!r})"
        if isinstance(exc, Neo4jError) and "too large to index" in str(exc.message or ""):
            return DataRejected(f"{where} refused a value too large for one of its indexes: {exc.message}")
        if isinstance(exc, AuthError):
            return BackendUnavailable(f"{where} refused the credentials: {exc}")
        if isinstance(exc, ServiceUnavailable | SessionExpired | OSError):
            return BackendUnavailable(f"cannot reach {where}: {exc}")
        if isinstance(exc, Neo4jError) and exc.code == "Neo.ClientError.Database.DatabaseNotFound":
            return BackendUnavailable(f"{where} does not exist (Community edition has only 'neo4j'): {exc}")
        return BackendUnavailable(f"{where} failed: {exc}")

    # --- running work on the loop ----------------------------------------------------------------
    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        loop = self._loop
        if loop is None:
            coro.close()
            raise BackendUnavailable("the graph store is not open")
        try:
            return asyncio.run_coroutine_threadsafe(coro, loop).result()
        except (Neo4jError, DriverError) as exc:
            raise self._unavailable(exc) from exc

    def _call(self, write: bool, work: Callable[..., Awaitable[T]], *args: Any) -> T:
        """`work(tx, *args)` in the open batch's transaction, else in its own (retried on transient errors)."""
        with self._lock:
            return self._run(self._execute(write, work, *args))

    async def _execute(self, write: bool, work: Callable[..., Awaitable[T]], *args: Any) -> T:
        if self._tx is not None:
            return await work(self._tx, *args)
        if self._driver is None:
            raise BackendUnavailable("the graph store is not open")
        async with self._driver.session(database=self.database) as session:
            run = session.execute_write if write else session.execute_read
            return await run(work, *args)

    def _query(self, query: str, **params: Any) -> Rows:
        return self._call(False, _cypher, query, params)

    def _update(self, query: str, **params: Any) -> Rows:
        return self._call(True, _cypher, query, params)

    @contextmanager
    def batch(self) -> Iterator[None]:
        """One explicit transaction for everything this thread does inside (nested batches join it),
        committed at the end, rolled back on error. Other threads wait, as with the SQLite store."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            self._run(self._begin())
            self._depth = 1
            try:
                yield
            except BaseException:
                with suppress(Exception):  # the body's error is the one to report
                    self._run(self._finish(commit=False))
                raise
            else:
                self._run(self._finish(commit=True))
            finally:
                self._depth = 0

    async def _begin(self) -> None:
        if self._driver is None:
            raise BackendUnavailable("the graph store is not open")
        session = self._driver.session(database=self.database)
        try:
            self._tx = await session.begin_transaction()
        except BaseException:
            await session.close()
            raise
        self._session = session

    async def _finish(self, commit: bool) -> None:
        tx, session = self._tx, self._session
        self._tx = self._session = None
        try:
            if tx is not None and not tx.closed():
                await (tx.commit() if commit else tx.rollback())
        finally:
            if session is not None:
                await session.close()

    # --- users ---------------------------------------------------------------------------------
    def ensure_user(self, user_id: str, name: str | None = None) -> Entity:
        return self._call(True, self._ensure_user, user_id, name)

    async def _ensure_user(self, tx: Tx, user_id: str, name: str | None) -> Entity:
        eid = stable_id("ent", user_id, USER_ENTITY_KEY)
        if found := await _data(tx, cy.ENTITIES_BY_IDS, ids=[eid]):
            return cy.to_entity(found[0]["e"])
        ent = Entity(id=eid, user_id=user_id, name=name or user_id, type="Person", is_user=True)
        await _data(tx, cy.ENSURE_USER, user=user_id, props=cy.entity_props(ent, USER_ENTITY_KEY),
                    labels=cy.labels(ent.type, True))
        return ent

    def user_exists(self, user_id: str) -> bool:
        return bool(self._query(cy.USER_EXISTS, user=user_id)[0]["ok"])

    def delete_user(self, user_id: str) -> None:
        """Chunked DETACH DELETE, a transaction per chunk (one for all inside batch()); the User node
        goes last, so a delete that failed half-way still shows the user and can be run again."""
        with self._lock:
            for label in cy.DELETE_ORDER:
                query = cy.DELETE_CHUNK.format(label)
                while self._update(query, user=user_id, chunk=DELETE_CHUNK)[0]["n"] >= DELETE_CHUNK:
                    pass
            self._rel_sources = {k: v for k, v in self._rel_sources.items() if v[1] != user_id}
            self._warm_users.discard(user_id)

    # --- episodes ------------------------------------------------------------------------------
    def add_episodes(self, episodes: Sequence[Episode]) -> list[Episode]:
        first: dict[str, Episode] = {}
        for ep in episodes:
            first.setdefault(ep.id, ep)
        if not first:
            return []
        rows = [{"i": i, "props": cy.episode_props(ep)} for i, ep in enumerate(first.values(), 1)]
        created = {r["id"] for r in self._update(cy.ADD_EPISODES, rows=rows)}
        return [ep for ep in first.values() if ep.id in created]

    def get_episodes(self, user_id: str, ids: Sequence[str]) -> list[Episode]:
        rows = self._query(cy.GET_EPISODES, user=user_id, ids=list(ids)) if ids else []
        return [cy.to_episode(r["e"]) for r in rows]

    def episodes_by_ids(self, ids: Sequence[str]) -> list[Episode]:
        return [cy.to_episode(r["e"]) for r in (self._query(cy.EPISODES_BY_IDS, ids=list(ids)) if ids else [])]

    def session_episodes(self, user_id: str, session_id: str) -> list[Episode]:
        return [cy.to_episode(r["e"]) for r in self._query(cy.SESSION_EPISODES, user=user_id, session=session_id)]

    def next_episodes(self, user_id: str, ids: Sequence[str]) -> dict[str, Episode]:
        rows = self._query(cy.NEXT_EPISODES, user=user_id, ids=list(ids)) if ids else []
        return {r["after_id"]: cy.to_episode(r["e"]) for r in rows}

    def next_seq(self, user_id: str, session_id: str | None) -> int:
        return int(self._query(cy.NEXT_SEQ, user=user_id, session=session_id)[0]["n"])

    def pending_episodes(self, limit: int = 1000, user_id: str | None = None) -> list[Episode]:
        limit = limit if limit >= 0 else NO_LIMIT
        rows = (self._query(cy.PENDING_OF_USER, user=user_id, limit=limit) if user_id
                else self._query(cy.PENDING, limit=limit))
        return [cy.to_episode(r["e"]) for r in rows]

    def record_failure(self, ids: Sequence[str], reason: str, at: datetime, quarantine_after: int) -> list[str]:
        if not ids:
            return []
        rows = self._update(cy.RECORD_FAILURE, ids=list(ids), reason=reason, at=cy.to_neo(at), after=quarantine_after)
        return [r["id"] for r in rows]

    def quarantined_episodes(self, limit: int = 1000, user_id: str | None = None) -> list[Episode]:
        rows = (self._query(cy.QUARANTINED_OF_USER, user=user_id, limit=limit) if user_id
                else self._query(cy.QUARANTINED, limit=limit))
        return [cy.to_episode(r["e"]) for r in rows]

    def release_episodes(self, user_id: str, ids: Sequence[str]) -> list[str]:
        if not ids:
            return []
        return [r["id"] for r in self._update(cy.RELEASE_EPISODES, user=user_id, ids=list(ids))]

    def mark_processed(self, ids: Sequence[str], extractor: str) -> None:
        if ids:
            self._update(cy.MARK_PROCESSED, ids=list(ids), extractor=extractor)

    def set_indexed(self, ids: Sequence[str], indexed: bool) -> None:
        if ids:
            self._update(cy.SET_INDEXED, ids=list(ids), indexed=bool(indexed))

    def delete_episodes(self, user_id: str, ids: Sequence[str]) -> list[str]:
        if not ids:
            return []
        return [r["id"] for r in self._update(cy.DELETE_EPISODES, user=user_id, ids=list(ids))]

    # --- sessions ------------------------------------------------------------------------------
    def touch_sessions(self, user_id: str, session_ids: Sequence[str], at: datetime) -> None:
        if session_ids:
            self._update(cy.TOUCH_SESSIONS, user=user_id, sessions=list(dict.fromkeys(session_ids)), at=cy.to_neo(at))

    def list_sessions(self, user_id: str) -> list[SessionInfo]:
        return [cy.to_session(r["s"]) for r in self._query(cy.LIST_SESSIONS, user=user_id)]

    def expired_sessions(self, before: datetime, user_id: str | None = None, limit: int = 100) -> list[SessionInfo]:
        rows = self._query(cy.EXPIRED_SESSIONS, before=cy.to_neo(before), user=user_id, limit=limit)
        return [cy.to_session(r["s"]) for r in rows]

    def delete_session(self, user_id: str, session_id: str) -> list[str]:
        rows = self._update(cy.DELETE_SESSION, user=user_id, session=session_id)
        return list(rows[0]["ids"]) if rows else []

    def all_item_ids(self, user_id: str | None = None) -> dict[str, list[str]]:
        node, rel, entity = ("AND e.user_id = $user", "AND r.user_id = $user", "{user_id: $user}") if user_id \
            else ("", "", "")
        queries = {"episode": cy.ITEM_EPISODES.format(node), "note": cy.ITEM_NOTES.format(node),
                   "relation": cy.ITEM_RELATIONS.format(entity, rel)}
        return {kind: [r["id"] for r in self._query(query, user=user_id)] for kind, query in queries.items()}

    # --- entities ------------------------------------------------------------------------------
    def resolve_entities(self, user_id: str, entities: Sequence[Entity]) -> list[Entity]:
        return self._call(True, self._resolve, user_id, list(entities)) if entities else []

    async def _resolve(self, tx: Tx, user_id: str, entities: list[Entity]) -> list[Entity]:
        """One read, the SQLite store's one-by-one merge replayed in memory, two UNWIND writes."""
        keys = [USER_ENTITY_KEY if e.is_user else normalise(e.name) for e in entities]
        ids = {k: stable_id("ent", user_id, k) for k in keys}
        rows = await _data(tx, cy.ENTITIES_BY_IDS, ids=list(set(ids.values())))
        stored = {r["e"]["id"]: cy.to_entity(r["e"]) for r in rows}
        out, created, retyped = cy.replay_resolution(user_id, entities, keys, ids, stored)
        if created:
            await _data(tx, cy.CREATE_ENTITIES, rows=[
                {"props": cy.entity_props(e, k), "labels": cy.labels(e.type, e.is_user)} for k, e in created.items()])
        if retyped:
            await _data(tx, cy.RETYPE_ENTITIES, rows=[
                {"id": e.id, "type": e.type, "drop": sorted(drop), "labels": cy.labels(e.type, e.is_user)}
                for drop, e in retyped.values()])
        return out

    def get_entity(self, user_id: str, entity_id: str) -> Entity | None:
        rows = self._query(cy.ENTITY_OF_USER, id=entity_id, user=user_id)
        return cy.to_entity(rows[0]["e"]) if rows else None

    def find_entities(self, user_id: str, q: str | None, limit: int = 20) -> list[Entity]:
        limit = limit if limit >= 0 else NO_LIMIT
        if q:  # the SQLite store's LIKE patterns, as regular expressions
            rows = self._query(cy.SEARCH_ENTITIES, user=user_id, limit=limit,
                               norm=cy.like(f"%{normalise(q)}%"), name=cy.like(f"%{q.lower()}%"))
        else:
            rows = self._query(cy.FIND_ENTITIES, user=user_id, limit=limit)
        return [cy.to_entity(r["e"]) for r in rows]

    def entities_named(self, user_id: str, norms: Sequence[str]) -> dict[str, list[Entity]]:
        out: dict[str, list[Entity]] = {}
        for r in self._query(cy.ENTITIES_NAMED, user=user_id, norms=list(dict.fromkeys(norms))) if norms else []:
            out.setdefault(r["hit"], []).append(cy.to_entity(r["e"]))
        return out

    def speakers_named(self, user_id: str, names: Sequence[str]) -> list[str]:
        keys = list(dict.fromkeys(n.lower() for n in names if n))[:500]
        return [r["name"] for r in self._query(cy.SPEAKERS_NAMED, user=user_id, keys=keys)] if keys else []

    # --- relations -----------------------------------------------------------------------------
    def add_relations(self, relations: Sequence[Relation]) -> list[Relation]:
        for rel in relations:
            cy.check_predicate(rel.predicate)
        return self._call(True, self._add_relations, list(relations)) if relations else []

    async def _add_relations(self, tx: Tx, relations: list[Relation]) -> list[Relation]:
        """Like `_resolve`: one read of the ends and of the current identical relations, a replay, writes."""
        ends = list({i for r in relations for i in (r.source_id, r.target_id)})
        owner = {r["e"]["id"]: r["e"]["user_id"] for r in await _data(tx, cy.ENTITIES_BY_IDS, ids=ends)}
        for rel in relations:
            if owner.get(rel.source_id) != rel.user_id or owner.get(rel.target_id) != rel.user_id:
                raise InvalidInput(f"relation {rel.id}: both ends must be stored entities of user {rel.user_id!r}")
        keys = [dict(zip(("user", "source", "target", "predicate"), k, strict=True))
                for k in dict.fromkeys(map(cy.relation_key, relations))]
        current: dict[tuple[str, str, str, str], Relation] = {}
        for row in await _data(tx, cy.CURRENT_IDENTICAL, keys=keys):
            stored = cy.to_relation(row["r"])
            current.setdefault(cy.relation_key(stored), stored)
        out, created, merged = cy.replay_relations(relations, current)
        if created:
            await _data(tx, cy.CREATE_RELATIONS, rows=[
                {"source": r.source_id, "target": r.target_id, "props": cy.relation_props(r)} for r in created.values()])
        if merged:
            await _data(tx, cy.SET_RELATION_EPISODES, rows=[
                {"id": r.id, "source": r.source_id, "episodes": r.source_episode_ids} for r in merged.values()])
        self._remember(out)
        return out

    def _remember(self, relations: Iterable[Relation]) -> None:
        if len(self._rel_sources) > REL_CACHE_MAX:
            self._rel_sources.clear()
            self._warm_users.clear()
        for r in relations:
            self._rel_sources[r.id] = (r.source_id, r.user_id)

    async def _relations_by_ids(self, tx: Tx, ids: Sequence[str]) -> dict[str, Relation]:
        """Relations by id, whatever their type: ids seen before are found from their source node,
        the rest by a scan, after which all of that user's relation ids are remembered."""
        wanted = list(dict.fromkeys(ids))
        cached = [{"id": i, "source": self._rel_sources[i][0]} for i in wanted if i in self._rel_sources]
        rows = await _data(tx, cy.RELATIONS_VIA_SOURCE, rows=cached) if cached else []
        found = {r.id: r for r in (cy.to_relation(row["r"]) for row in rows)}
        for row in cached:
            if row["id"] not in found:  # deleted: relations never move
                self._rel_sources.pop(row["id"], None)
        seen = {row["id"] for row in cached}
        if missing := [i for i in wanted if i not in seen]:
            scanned = [cy.to_relation(row["r"]) for row in await _data(tx, cy.RELATIONS_SCAN, ids=missing)]
            found.update((r.id, r) for r in scanned)
            for user in {r.user_id for r in scanned} - self._warm_users:
                self._warm_users.add(user)
                for row in await _data(tx, cy.RELATION_SOURCES, user=user):
                    self._rel_sources[row["id"]] = (row["source"], user)
        self._remember(found.values())
        return found

    def get_relations(self, ids: Sequence[str]) -> list[Relation]:
        found = self._call(False, self._relations_by_ids, ids) if ids else {}
        return [found[i] for i in sorted(found)]

    def invalidate_relations(self, ids: Sequence[str], at: datetime) -> None:
        if ids:
            self._call(True, self._invalidate, ids, at)

    async def _invalidate(self, tx: Tx, ids: Sequence[str], at: datetime) -> None:
        rows = [{"id": r.id, "source": r.source_id} for r in (await self._relations_by_ids(tx, ids)).values()]
        await _data(tx, cy.INVALIDATE, rows=rows, at=cy.to_neo(at))

    def current_relations(self, user_id: str, source_id: str, predicate: str) -> list[Relation]:
        if not cy.PREDICATE.match(predicate):
            return []  # no stored relation can have it
        return self._relations(self._query(cy.CURRENT_RELATIONS, user=user_id, source=source_id,
                                           predicate=predicate))

    def _relations(self, rows: Rows) -> list[Relation]:
        out = [cy.to_relation(row["r"]) for row in rows]
        with self._lock:
            self._remember(out)
        return out

    def relations_of(self, user_id: str, entity_ids: Sequence[str], include_invalid: bool = False) -> list[Relation]:
        """Relations touching any of these entities."""
        if not entity_ids:
            return []
        return self._relations(self._query(cy.RELATIONS_OF, user=user_id, ids=list(entity_ids),
                                           all=include_invalid))

    def link_mentions(self, episode_id: str, entity_ids: Sequence[str]) -> None:
        if entity_ids:
            self._update(cy.LINK_MENTIONS, episode=episode_id, ids=list(dict.fromkeys(entity_ids)))

    def mentions_of(self, user_id: str, entity_ids: Sequence[str], limit: int | None = None
                    ) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for r in self._query(cy.MENTIONS_OF, user=user_id, ids=list(entity_ids), limit=limit) if entity_ids else []:
            out.setdefault(r["entity_id"], []).append(r["episode_id"])
        return out

    # --- traversal -----------------------------------------------------------------------------
    def neighbors(self, user_id: str, entity_id: str, depth: int = 1, include_invalid: bool = False) -> Subgraph:
        query = cy.NEIGHBORS.replace("__DEPTH__", str(max(int(depth), 1)))  # an int: bounds take no $param
        rows = self._query(query, id=entity_id, user=user_id, expand=int(depth) >= 1, all=include_invalid)
        if not rows:
            return Subgraph([], [])
        return Subgraph([cy.to_entity(e) for e in rows[0]["ents"]],
                        self._relations([{"r": r} for r in rows[0]["rels"]]))

    def personalized_pagerank(self, user_id: str, seeds: Sequence[str], limit: int = 20) -> list[tuple[str, float]]:
        """Community has no GDS: the user's graph comes over and networkx ranks it, as embedded."""
        nodes, edges = self._call(False, self._user_graph, user_id)
        nodes = list(dict.fromkeys(nodes + [n for a, b, _ in edges for n in (a, b)]))
        present = set(nodes)
        seeds = [s for s in seeds if s in present]
        if not seeds:
            return []
        simple = nx.Graph()
        simple.add_nodes_from(nodes)
        simple.add_edges_from((a, b) for a, b, current in edges if current)
        ranks = nx.pagerank(simple, personalization={s: 1.0 for s in seeds}, max_iter=200)
        return sorted(ranks.items(), key=lambda kv: -kv[1])[:limit]

    def rank_episodes(self, user_id: str, seeds: Mapping[str, float], limit: int = 30,
                      synonyms: Synonyms | None = None) -> list[tuple[str, float]]:
        """The user's mentions and current relations come over and are ranked as in the embedded store
        (the graph is not kept between calls: another replica may have changed it; synonym edges are
        kept by the names they were computed from)."""
        mentions, edges, names = self._call(False, self._mention_graph, user_id)
        return PageRankGraph(mentions, edges, names).rank_episodes(seeds, limit, synonyms=synonyms)

    def entity_names(self, user_id: str) -> dict[str, str]:
        return {r["id"]: r["name"] for r in self._query(cy.GRAPH_NAMES, user=user_id, skip=list(ATTRIBUTE_TYPES))}

    async def _mention_graph(self, tx: Tx, user_id: str
                             ) -> tuple[list[tuple[str, str]], list[tuple[str, str]], dict[str, str]]:
        rows = await _data(tx, cy.GRAPH_MENTIONS, user=user_id, skip=list(ATTRIBUTE_TYPES))
        edges = [(r["a"], r["b"]) for r in await _data(tx, cy.GRAPH_EDGES, user=user_id) if r["current"]]
        return [(r["a"], r["b"]) for r in rows], edges, {r["b"]: r["name"] for r in rows}

    async def _user_graph(self, tx: Tx, user_id: str) -> tuple[list[str], list[tuple[str, str, bool]]]:
        nodes = [r["id"] for r in await _data(tx, cy.GRAPH_NODES, user=user_id)]
        return nodes, [(r["a"], r["b"], r["current"]) for r in await _data(tx, cy.GRAPH_EDGES, user=user_id)]

    # --- notes ---------------------------------------------------------------------------------
    def add_note(self, note: Note) -> None:
        self._update(cy.ADD_NOTE, props=cy.note_props(note))

    def supersede_note(self, old_id: str, new_id: str | None, at: datetime) -> None:
        self._update(cy.SUPERSEDE_NOTE, old=old_id, new=new_id, at=cy.to_neo(at))

    def notes_by_ids(self, ids: Sequence[str]) -> list[Note]:
        return [cy.to_note(r["n"]) for r in (self._query(cy.NOTES_BY_IDS, ids=list(ids)) if ids else [])]

    def current_note_by_slot(self, user_id: str, slot: str) -> Note | None:
        rows = self._query(cy.CURRENT_NOTE_BY_SLOT, user=user_id, slot=slot)
        return cy.to_note(rows[0]["n"]) if rows else None

    def list_notes(self, user_id: str, include_history: bool = False) -> list[Note]:
        return [cy.to_note(r["n"]) for r in self._query(cy.LIST_NOTES, user=user_id, history=include_history)]

    def add_audit(self, events: Sequence[AuditEvent]) -> None:
        if events:
            rows = [{"i": i + 1, "props": {**e.model_dump(), "at": cy.to_neo(e.at)}} for i, e in enumerate(events)]
            self._update(cy.ADD_AUDIT, rows=rows)

    def audit_log(self, user_id: str, item_id: str | None = None, limit: int = 1000,
                  item_kind: str | None = None) -> list[AuditEvent]:
        rows = self._query(cy.AUDIT_LOG, user=user_id, item=item_id, kind=item_kind,
                           limit=limit if limit >= 0 else NO_LIMIT)
        return [AuditEvent.model_validate({k: cy.from_neo(v) for k, v in r["a"].items() if k not in ("ord", "name")})
                for r in rows]

    def superseded(self, user_id: str, episode_ids: Sequence[str]) -> tuple[list[Note], list[Relation]]:
        if not episode_ids:
            return [], []
        ids = list(episode_ids)
        notes = [cy.to_note(r["n"]) for r in self._query(cy.SUPERSEDED_NOTES, user=user_id, ids=ids)]
        return notes, self._relations(self._query(cy.INVALID_RELATIONS, user=user_id, ids=ids))

    def delete_note(self, user_id: str, note_id: str) -> bool:
        return bool(self._update(cy.DELETE_NOTE, user=user_id, id=note_id)[0]["n"])
