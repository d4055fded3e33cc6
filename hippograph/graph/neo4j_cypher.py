"""Cypher of the Neo4j graph store (the model is in neo4j_store.py): query text, values to and from
Neo4j, and the in-memory replays that turn one read into the writes of a batched call.

Every query is parameterised. Labels and relationship types are set with the dynamic `$(...)` syntax
of Neo4j 5.26 from values checked against LABEL / PREDICATE first, so no caller text is ever spliced
into a query; the only interpolations are fixed fragments of this module and a var-length bound (int).
Needs Neo4j >= 5.26 (dynamic labels/types; `CALL (x) {}` subqueries).
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from typing import Any

from neo4j import AsyncManagedTransaction, AsyncTransaction
from neo4j.time import DateTime

from hippograph.errors import InvalidInput
from hippograph.models import Entity, Episode, EpisodeKind, Note, NoteKind, Relation, Role, SessionInfo

Tx = AsyncManagedTransaction | AsyncTransaction
Rows = list[dict[str, Any]]


async def data(tx: Tx, query: str, **params: Any) -> Rows:
    """Run one query in the transaction; its rows as dicts."""
    return await (await tx.run(query, params)).data()


LABEL = re.compile(r"^[A-Z][A-Za-z0-9]{0,39}$")
PREDICATE = re.compile(r"^[A-Z][A-Z0-9_]{0,49}$")
RESERVED_LABELS = frozenset({"Entity", "User", "Episode", "Note", "Person", "Session", "Audit", "ApiKey",
                             "EpisodeRef"})

SCHEMA = [
    "CREATE CONSTRAINT hg_user_id IF NOT EXISTS FOR (u:User) REQUIRE u.user_id IS UNIQUE",
    "CREATE CONSTRAINT hg_entity_id IF NOT EXISTS FOR (e:Entity) REQUIRE e.id IS UNIQUE",
    "CREATE CONSTRAINT hg_episode_id IF NOT EXISTS FOR (e:Episode) REQUIRE e.id IS UNIQUE",
    "CREATE CONSTRAINT hg_note_id IF NOT EXISTS FOR (n:Note) REQUIRE n.id IS UNIQUE",
    "CREATE INDEX hg_entity_user IF NOT EXISTS FOR (e:Entity) ON (e.user_id)",
    "CREATE INDEX hg_entity_norm IF NOT EXISTS FOR (e:Entity) ON (e.user_id, e.norm)",
    "CREATE INDEX hg_episode_user IF NOT EXISTS FOR (e:Episode) ON (e.user_id)",
    "CREATE INDEX hg_episode_session IF NOT EXISTS FOR (e:Episode) ON (e.user_id, e.session_id)",
    "CREATE INDEX hg_episode_speaker IF NOT EXISTS FOR (e:Episode) ON (e.user_id, e.speaker_key)",
    "CREATE INDEX hg_episode_processed IF NOT EXISTS FOR (e:Episode) ON (e.processed)",
    "CREATE INDEX hg_episode_ord IF NOT EXISTS FOR (e:Episode) ON (e.ord)",
    "CREATE INDEX hg_note_user IF NOT EXISTS FOR (n:Note) ON (n.user_id)",
    "CREATE CONSTRAINT hg_audit_id IF NOT EXISTS FOR (a:Audit) REQUIRE a.id IS UNIQUE",
    "CREATE INDEX hg_audit_user IF NOT EXISTS FOR (a:Audit) ON (a.user_id, a.ord)",
    "CREATE INDEX hg_note_slot IF NOT EXISTS FOR (n:Note) ON (n.user_id, n.slot)",
    "CREATE INDEX hg_note_ord IF NOT EXISTS FOR (n:Note) ON (n.ord)",
    "CREATE INDEX hg_note_superseded IF NOT EXISTS FOR (n:Note) ON (n.superseded_by)",
    "CREATE CONSTRAINT hg_session_key IF NOT EXISTS FOR (s:Session) REQUIRE (s.user_id, s.session_id) IS UNIQUE",
    "CREATE INDEX hg_session_active IF NOT EXISTS FOR (s:Session) ON (s.last_active_at)",
    "CREATE CONSTRAINT hg_user_ref IF NOT EXISTS FOR (u:User) REQUIRE (u.tenant, u.external_id) IS UNIQUE",
    "CREATE CONSTRAINT hg_key_id IF NOT EXISTS FOR (k:ApiKey) REQUIRE k.id IS UNIQUE",
    "CREATE CONSTRAINT hg_key_hash IF NOT EXISTS FOR (k:ApiKey) REQUIRE k.key_hash IS UNIQUE",
    "CREATE CONSTRAINT hg_episode_ref_id IF NOT EXISTS FOR (r:EpisodeRef) REQUIRE r.id IS UNIQUE",
    "CREATE INDEX hg_episode_ref_user IF NOT EXISTS FOR (r:EpisodeRef) ON (r.user_id)",
    "CREATE CONSTRAINT hg_write_lease IF NOT EXISTS FOR (l:WriteLease) REQUIRE l.user_id IS UNIQUE",
]
# A database made before tenants: each of its users becomes a user of the default tenant, its data
# filed under the user id it always had.
BACKFILL_TENANTS = """
MATCH (u:User) WHERE u.tenant IS NULL
SET u.tenant = $tenant, u.external_id = u.user_id
"""
# A store made before sessions were tracked: its sessions start counting from the upgrade.
HAS_SESSIONS = """
RETURN EXISTS { MATCH (:Session) } AS sessions, EXISTS { MATCH (e:Episode) WHERE e.session_id IS NOT NULL } AS episodes
"""
BACKFILL_SESSIONS = """
MATCH (e:Episode) WHERE e.session_id IS NOT NULL
WITH DISTINCT e.user_id AS user, e.session_id AS session
CALL (user, session) {
  MERGE (s:Session {user_id: user, session_id: session})
  ON CREATE SET s.started_at = $now, s.last_active_at = $now, s.name = session
} IN TRANSACTIONS OF 5000 ROWS
"""

# The insertion order (SQLite's rowid): one above the highest so far, found by an index seek.
_TOP_ORD = "coalesce(COLLECT {{ MATCH (l:{0}) WHERE l.ord IS NOT NULL RETURN l.ord ORDER BY l.ord DESC LIMIT 1 }}[0], 0)"
_ENTITY = "{.id, .user_id, .name, .type, .aliases, .is_user}"
_REL = "r {.*, source_id: a.id, target_id: b.id}"
_RELATION_EDGE = "r.predicate IS NOT NULL"  # an Entity-Entity relationship that is a relation

# --- users ---------------------------------------------------------------------------------------
USER_EXISTS = "RETURN EXISTS { MATCH (:User {user_id: $user}) } AS ok"
ENSURE_USER = """
MERGE (u:User {user_id: $user}) ON CREATE SET u.name = $props.name
MERGE (e:Entity {id: $props.id}) ON CREATE SET e += $props, e:$($labels)
MERGE (u)-[i:IS]->(e) ON CREATE SET i.user_id = $user
WITH u
CALL (u) {
  MATCH (n:Note {user_id: $user}) MERGE (u)-[h:HAS_NOTE]->(n) ON CREATE SET h.user_id = $user
}
"""
DELETE_CHUNK = "MATCH (n:{0} {{user_id: $user}}) WITH n LIMIT $chunk DETACH DELETE n RETURN count(*) AS n"
DELETE_ORDER = ("Audit", "Session", "Note", "Episode", "EpisodeRef", "Entity", "User")  # the User node last: a failed delete can be rerun

# --- episodes ------------------------------------------------------------------------------------
ADD_EPISODES = f"""
WITH {_TOP_ORD.format("Episode")} AS top
UNWIND $rows AS row
OPTIONAL MATCH (x:Episode {{id: row.props.id}})
WITH top, row WHERE x IS NULL
MERGE (e:Episode {{id: row.props.id}})
ON CREATE SET e += row.props, e.ord = top + row.i, e.processed = false, e.indexed = true
RETURN row.props.id AS id
"""
_EP = "RETURN e {.*} AS e"
GET_EPISODES = f"MATCH (e:Episode) WHERE e.id IN $ids AND e.user_id = $user {_EP} ORDER BY e.id"
EPISODES_BY_IDS = f"MATCH (e:Episode) WHERE e.id IN $ids {_EP} ORDER BY e.id"
SPEAKERS_NAMED = """
MATCH (e:Episode {user_id: $user}) WHERE e.speaker_key IN $keys AND e.kind = 'message'
RETURN DISTINCT e.speaker AS name ORDER BY name
"""
SESSION_EPISODES = f"MATCH (e:Episode {{user_id: $user, session_id: $session}}) {_EP} ORDER BY e.seq, e.ts, e.ord"
NEXT_EPISODES = """
MATCH (a:Episode) WHERE a.id IN $ids AND a.user_id = $user AND a.session_id IS NOT NULL
MATCH (e:Episode {user_id: $user, session_id: a.session_id, seq: a.seq + 1})
RETURN a.id AS after_id, e {.*} AS e
"""
NEXT_SEQ = """
MATCH (e:Episode {user_id: $user})
WHERE e.session_id = $session OR ($session IS NULL AND e.session_id IS NULL)
RETURN coalesce(max(e.seq), -1) + 1 AS n
"""
PENDING = f"MATCH (e:Episode) WHERE e.processed = false AND e.quarantined_at IS NULL {_EP} ORDER BY e.ord LIMIT $limit"
PENDING_OF_USER = (f"MATCH (e:Episode {{user_id: $user}}) WHERE e.processed = false AND e.quarantined_at IS NULL {_EP} "
                   "ORDER BY e.ord LIMIT $limit")
MARK_PROCESSED = ("MATCH (e:Episode) WHERE e.id IN $ids SET e.processed = true, e.extractor = $extractor "
                  "REMOVE e.quarantined_at")
RECORD_FAILURE = """
MATCH (e:Episode) WHERE e.id IN $ids AND e.processed = false
SET e.attempts = coalesce(e.attempts, 0) + 1, e.failure = $reason
WITH e WHERE e.quarantined_at IS NULL AND e.attempts >= $after
SET e.quarantined_at = $at
RETURN e.id AS id
"""
QUARANTINED = f"MATCH (e:Episode) WHERE e.quarantined_at IS NOT NULL {_EP} ORDER BY e.ord LIMIT $limit"
QUARANTINED_OF_USER = (f"MATCH (e:Episode {{user_id: $user}}) WHERE e.quarantined_at IS NOT NULL {_EP} "
                       "ORDER BY e.ord LIMIT $limit")
RELEASE_EPISODES = """
MATCH (e:Episode) WHERE e.id IN $ids AND e.user_id = $user AND e.quarantined_at IS NOT NULL
SET e.attempts = 0 REMOVE e.quarantined_at
RETURN e.id AS id
"""
SET_INDEXED = "MATCH (e:Episode) WHERE e.id IN $ids SET e.indexed = $indexed"
DELETE_EPISODES = """
CALL () { MATCH (r:EpisodeRef) WHERE r.id IN $ids AND r.user_id = $user DELETE r }
MATCH (e:Episode) WHERE e.id IN $ids AND e.user_id = $user
WITH e, e.id AS id DETACH DELETE e RETURN id
"""
# --- sessions: (:Session {user_id, session_id, started_at, last_active_at, name}) -----------------
TOUCH_SESSIONS = """
UNWIND $sessions AS session
MERGE (s:Session {user_id: $user, session_id: session})
ON CREATE SET s.started_at = $at, s.last_active_at = $at, s.name = session
ON MATCH SET s.last_active_at = CASE WHEN s.last_active_at < $at THEN $at ELSE s.last_active_at END
"""
_SESSION = "RETURN s {.user_id, .session_id, .started_at, .last_active_at} AS s"
LIST_SESSIONS = f"MATCH (s:Session {{user_id: $user}}) {_SESSION} ORDER BY s.last_active_at DESC, s.session_id"
EXPIRED_SESSIONS = f"""
MATCH (s:Session) WHERE s.last_active_at < $before AND ($user IS NULL OR s.user_id = $user)
{_SESSION} ORDER BY s.last_active_at, s.user_id, s.session_id LIMIT $limit
"""
DELETE_SESSION = """
OPTIONAL MATCH (e:Episode {user_id: $user, session_id: $session})
WITH collect(e) AS eps
WITH eps, [e IN eps | e.id] AS ids
FOREACH (e IN eps | DETACH DELETE e)
WITH ids
OPTIONAL MATCH (s:Session {user_id: $user, session_id: $session})
DETACH DELETE s
RETURN ids
"""
ITEM_EPISODES = "MATCH (e:Episode) WHERE e.processed AND e.indexed {0} RETURN e.id AS id ORDER BY e.ord"
ITEM_NOTES = "MATCH (e:Note) WHERE e.invalid_at IS NULL {0} RETURN e.id AS id ORDER BY e.ord"
ITEM_RELATIONS = f"""
MATCH (a:Entity {{0}})-[r]->(:Entity) WHERE {_RELATION_EDGE} AND r.invalid_at IS NULL {{1}}
RETURN r.id AS id ORDER BY r.id
"""

# --- entities ------------------------------------------------------------------------------------
ENTITIES_BY_IDS = f"UNWIND $ids AS id MATCH (e:Entity {{id: id}}) RETURN e {_ENTITY} AS e"
ENTITY_OF_USER = f"MATCH (e:Entity {{id: $id, user_id: $user}}) RETURN e {_ENTITY} AS e"
CREATE_ENTITIES = """
UNWIND $rows AS row
MERGE (e:Entity {id: row.props.id}) ON CREATE SET e += row.props, e:$(row.labels)
"""
RETYPE_ENTITIES = """
UNWIND $rows AS row
MATCH (e:Entity {id: row.id}) SET e.type = row.type REMOVE e:$(row.drop) SET e:$(row.labels)
"""
ENTITIES_NAMED = f"""
MATCH (e:Entity {{user_id: $user}}) WHERE e.norm IN $norms RETURN e.norm AS hit, e {_ENTITY} AS e ORDER BY e.id
"""
FIND_ENTITIES = f"MATCH (e:Entity {{user_id: $user}}) RETURN e {_ENTITY} AS e ORDER BY e.name, e.id LIMIT $limit"
SEARCH_ENTITIES = f"""
MATCH (e:Entity {{user_id: $user}}) WHERE e.norm =~ $norm OR e.name =~ $name
RETURN e {_ENTITY} AS e ORDER BY e.name, e.id LIMIT $limit
"""

# --- relations -----------------------------------------------------------------------------------
CURRENT_IDENTICAL = f"""
UNWIND $keys AS k
MATCH (a:Entity {{id: k.source}})-[r]->(b:Entity {{id: k.target}})
WHERE r.predicate = k.predicate AND r.user_id = k.user AND r.invalid_at IS NULL
RETURN {_REL} AS r
"""
CREATE_RELATIONS = """
UNWIND $rows AS row
MATCH (a:Entity {id: row.source}), (b:Entity {id: row.target})
CREATE (a)-[r:$(row.props.predicate)]->(b) SET r = row.props
"""
SET_RELATION_EPISODES = """
UNWIND $rows AS row
MATCH (:Entity {id: row.source})-[r]->(:Entity) WHERE r.id = row.id SET r.episodes = row.episodes
"""
INVALIDATE = """
UNWIND $rows AS row
MATCH (:Entity {id: row.source})-[r]->(:Entity) WHERE r.id = row.id SET r.invalid_at = $at
"""
RELATIONS_VIA_SOURCE = f"""
UNWIND $rows AS row
MATCH (a:Entity {{id: row.source}})-[r]->(b:Entity) WHERE r.id = row.id
RETURN {_REL} AS r
"""
# No index can find a relationship by id whatever its type (Neo4j indexes one type each), so ids
# the store has not seen yet are looked up with a scan; see Neo4jGraphStore._relations_by_ids.
RELATIONS_SCAN = f"MATCH (a:Entity)-[r]->(b:Entity) WHERE r.id IN $ids RETURN {_REL} AS r"
RELATION_SOURCES = f"""
MATCH (a:Entity {{user_id: $user}})-[r]->(:Entity) WHERE {_RELATION_EDGE} RETURN r.id AS id, a.id AS source
"""
CURRENT_RELATIONS = f"""
MATCH (a:Entity {{id: $source}})-[r]->(b:Entity)
WHERE r.predicate = $predicate AND r.user_id = $user AND r.invalid_at IS NULL
RETURN {_REL} AS r ORDER BY r.id
"""
RELATIONS_OF = f"""
UNWIND $ids AS id
MATCH (x:Entity {{id: id}})-[r]-(:Entity)
WHERE {_RELATION_EDGE} AND r.user_id = $user AND ($all OR r.invalid_at IS NULL)
WITH DISTINCT r
RETURN r {{.*, source_id: startNode(r).id, target_id: endNode(r).id}} AS r ORDER BY r.id
"""
LINK_MENTIONS = """
MATCH (ep:Episode {id: $episode})
UNWIND $ids AS id
MATCH (x:Entity {id: id}) WHERE x.user_id = ep.user_id
MERGE (ep)-[m:MENTIONS]->(x) ON CREATE SET m.user_id = ep.user_id
"""
MENTIONS_OF = """
UNWIND $ids AS id
MATCH (x:Entity {id: id})
WITH x, [(ep:Episode)-[:MENTIONS]->(x) WHERE ep.user_id = $user | ep.id] AS eps
WHERE size(eps) > 0 AND ($limit IS NULL OR size(eps) <= $limit)
UNWIND eps AS episode_id
RETURN x.id AS entity_id, episode_id ORDER BY episode_id
"""

# --- traversal -----------------------------------------------------------------------------------
# Breadth-first (the planner's pruning var-expand) in both directions over the user's relations,
# then the subgraph induced on the nodes reached, as networkx's subgraph view gives.
NEIGHBORS = f"""
MATCH (s:Entity {{id: $id, user_id: $user}})
OPTIONAL MATCH (s)-[rs*1..__DEPTH__]-(x:Entity)
WHERE $expand AND all(r IN rs WHERE r.user_id = s.user_id AND {_RELATION_EDGE} AND ($all OR r.invalid_at IS NULL))
WITH s, collect(DISTINCT x) AS found
WITH s.user_id AS user, [s] + [x IN found WHERE x <> s] AS nodes
CALL (nodes, user) {{
  UNWIND nodes AS a
  MATCH (a)-[r]->(b:Entity)
  WHERE b IN nodes AND r.user_id = user AND {_RELATION_EDGE} AND ($all OR r.invalid_at IS NULL)
  WITH {_REL} AS r ORDER BY r.id
  RETURN collect(r) AS rels
}}
UNWIND nodes AS e
WITH e, rels ORDER BY e.id
RETURN collect(e {_ENTITY}) AS ents, rels
"""
GRAPH_MENTIONS = """
MATCH (ep:Episode {user_id: $user})-[:MENTIONS]->(x:Entity) WHERE NOT x.type IN $skip
RETURN ep.id AS a, x.id AS b, x.name AS name
"""
GRAPH_NAMES = """
MATCH (:Episode {user_id: $user})-[:MENTIONS]->(x:Entity) WHERE NOT x.type IN $skip
RETURN DISTINCT x.id AS id, x.name AS name ORDER BY id
"""
GRAPH_NODES = "MATCH (e:Entity {user_id: $user}) RETURN e.id AS id ORDER BY e.name, e.id"
GRAPH_EDGES = f"""
MATCH (a:Entity {{user_id: $user}})-[r]->(b:Entity) WHERE r.user_id = $user AND {_RELATION_EDGE}
RETURN a.id AS a, b.id AS b, r.invalid_at IS NULL AS current
"""

# --- notes ---------------------------------------------------------------------------------------
# A note is replaced whole (like SQLite's INSERT OR REPLACE, which also gives it a new rowid); its
# links follow its properties: HAS_NOTE from its user, SUPERSEDED_BY both ways, FROM its episodes.
ADD_NOTE = f"""
MERGE (n:Note {{id: $props.id}})
WITH n, {_TOP_ORD.format("Note")} AS top
SET n = $props, n.ord = top + 1
WITH n
CALL (n) {{ MATCH (n)-[x:SUPERSEDED_BY|FROM]->() DELETE x }}
CALL (n) {{ MATCH ()-[x:HAS_NOTE]->(n) DELETE x }}
CALL (n) {{ MATCH (u:User {{user_id: n.user_id}}) MERGE (u)-[x:HAS_NOTE]->(n) SET x.user_id = n.user_id }}
CALL (n) {{
  MATCH (m:Note {{id: n.superseded_by, user_id: n.user_id}})
  MERGE (n)-[x:SUPERSEDED_BY]->(m) SET x.user_id = n.user_id
}}
CALL (n) {{
  MATCH (o:Note {{superseded_by: n.id, user_id: n.user_id}})
  MERGE (o)-[x:SUPERSEDED_BY]->(n) SET x.user_id = n.user_id
}}
CALL (n) {{
  UNWIND n.episodes AS id
  MATCH (e:Episode {{id: id, user_id: n.user_id}})
  MERGE (n)-[x:FROM]->(e) SET x.user_id = n.user_id
}}
"""
SUPERSEDE_NOTE = """
MATCH (o:Note {id: $old})
SET o.invalid_at = $at, o.superseded_by = $new
WITH o
CALL (o) { MATCH (o)-[x:SUPERSEDED_BY]->() DELETE x }
CALL (o) { MATCH (m:Note {id: $new, user_id: o.user_id}) MERGE (o)-[x:SUPERSEDED_BY]->(m) SET x.user_id = o.user_id }
"""
_NOTE = "RETURN n {.*} AS n"
NOTES_BY_IDS = f"MATCH (n:Note) WHERE n.id IN $ids {_NOTE} ORDER BY n.id"
CURRENT_NOTE_BY_SLOT = f"""
MATCH (n:Note {{user_id: $user, slot: $slot}}) WHERE n.invalid_at IS NULL
{_NOTE} ORDER BY n.valid_at DESC, n.ord LIMIT 1
"""
# Ties in valid_at come out as SQLite's index gives them: by slot, current first, then insertion.
LIST_NOTES = f"""
MATCH (n:Note {{user_id: $user}}) WHERE $history OR n.invalid_at IS NULL
{_NOTE} ORDER BY n.valid_at, n.slot, n.invalid_at IS NOT NULL, n.invalid_at, n.ord
"""
# --- audit ---------------------------------------------------------------------------------------
# Audit events are nodes of their own (label Audit), in append order (ord), captioned by their action.
ADD_AUDIT = f"""
WITH {_TOP_ORD.format("Audit")} AS top
UNWIND $rows AS row
MERGE (a:Audit {{id: row.props.id}})
ON CREATE SET a += row.props, a.ord = top + row.i, a.name = row.props.action + ' ' + row.props.item_kind
"""
AUDIT_LOG = """
MATCH (a:Audit {user_id: $user})
WHERE ($item IS NULL OR a.item_id = $item OR a.related_id = $item) AND ($kind IS NULL OR a.item_kind = $kind)
RETURN a {.*} AS a ORDER BY a.ord LIMIT $limit
"""
SUPERSEDED_NOTES = f"""
MATCH (n:Note {{user_id: $user}}) WHERE n.invalid_at IS NOT NULL AND any(x IN n.episodes WHERE x IN $ids)
{_NOTE} ORDER BY n.valid_at, n.ord
"""
INVALID_RELATIONS = f"""
MATCH (:Entity {{user_id: $user}})-[r]->(:Entity)
WHERE {_RELATION_EDGE} AND r.user_id = $user AND r.invalid_at IS NOT NULL AND any(x IN r.episodes WHERE x IN $ids)
RETURN r {{.*, source_id: startNode(r).id, target_id: endNode(r).id}} AS r ORDER BY r.id
"""
DELETE_NOTE = """
CALL () { MATCH (o:Note {user_id: $user, superseded_by: $id}) SET o.superseded_by = null }
MATCH (n:Note {id: $id, user_id: $user}) DETACH DELETE n RETURN count(*) AS n
"""


# --- values --------------------------------------------------------------------------------------
def to_neo(dt: datetime | None) -> datetime | None:
    """Aware datetimes go out with a fixed offset: the driver mishandles zoneinfo zones (wrong
    instants in DST, and a crash in the C zoneinfo code when handed its own DateTime)."""
    if dt is None or dt.tzinfo is None:
        return dt
    offset = dt.utcoffset()
    return dt if offset is None else dt.replace(tzinfo=timezone(offset))


def from_neo(value: Any) -> Any:
    """Neo4j temporal values back to what the SQLite store returns (fromisoformat of isoformat)."""
    if isinstance(value, DateTime):
        dt = value.to_native()
        offset = dt.utcoffset()
        return dt if offset is None else dt.replace(tzinfo=timezone(offset))
    return value


def _dt(value: Any) -> datetime:
    dt = from_neo(value)
    assert isinstance(dt, datetime)
    return dt


def check_predicate(predicate: str) -> None:
    """Predicates become relationship types: only UPPER_SNAKE_CASE ones, never anything else."""
    if not PREDICATE.match(predicate):
        raise InvalidInput(f"predicate {predicate!r} is not UPPER_SNAKE_CASE ([A-Z][A-Z0-9_]{{0,49}})")


def labels(type_: str, is_user: bool) -> list[str]:
    """`Entity`, the type if it makes a label (and is not one of ours), `Person` for the user."""
    out = ["Entity"]
    if LABEL.match(type_) and type_ not in RESERVED_LABELS:
        out.append(type_)
    if is_user or type_ == "Person":
        out.append("Person")
    return out


def caption(text: str, limit: int = 40) -> str:
    """A node's `name`, which Neo4j Browser shows as its caption."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def entity_props(ent: Entity, norm: str) -> dict[str, Any]:
    return {"id": ent.id, "user_id": ent.user_id, "name": ent.name, "type": ent.type,
            "aliases": list(ent.aliases), "norm": norm, "is_user": ent.is_user}


def episode_props(ep: Episode) -> dict[str, Any]:
    return {"id": ep.id, "user_id": ep.user_id, "session_id": ep.session_id, "agent_id": ep.agent_id,
            "kind": ep.kind.value, "role": ep.role.value if ep.role else None, "speaker": ep.name,
            "speaker_key": ep.name.lower() if ep.name else None,
            "name": caption(f"{ep.name or ep.title or ep.role or ep.kind.value}: {ep.content}"),
            "title": ep.title, "content": ep.content, "client_id": ep.client_id, "ts": to_neo(ep.timestamp),
            "seq": ep.seq, "metadata": json.dumps(ep.metadata)}


def relation_props(rel: Relation) -> dict[str, Any]:
    return {"id": rel.id, "user_id": rel.user_id, "predicate": rel.predicate, "fact": rel.fact,
            "valid_at": to_neo(rel.valid_at), "invalid_at": to_neo(rel.invalid_at),
            "episodes": list(rel.source_episode_ids)}


def note_props(note: Note) -> dict[str, Any]:
    return {"id": note.id, "user_id": note.user_id, "kind": note.kind.value, "text": note.text, "slot": note.slot,
            "name": caption(note.text),
            "valid_at": to_neo(note.valid_at), "invalid_at": to_neo(note.invalid_at),
            "superseded_by": note.superseded_by, "episodes": list(note.source_episode_ids),
            "created_at": to_neo(note.created_at), "confidence": note.confidence}


def to_entity(r: dict[str, Any]) -> Entity:
    return Entity(id=r["id"], user_id=r["user_id"], name=r["name"], type=r["type"],
                  aliases=list(r.get("aliases") or []), is_user=bool(r.get("is_user")))


def to_episode(r: dict[str, Any]) -> Episode:
    return Episode(
        id=r["id"], user_id=r["user_id"], session_id=r.get("session_id"), agent_id=r.get("agent_id"),
        kind=EpisodeKind(r["kind"]), role=Role(r["role"]) if r.get("role") else None, name=r.get("speaker"),
        title=r.get("title"), content=r["content"], client_id=r.get("client_id"), timestamp=_dt(r["ts"]),
        seq=r.get("seq", 0), metadata=json.loads(r.get("metadata") or "{}"), processed=r.get("processed"),
        extractor=r.get("extractor"), attempts=r.get("attempts") or 0, failure=r.get("failure"),
        quarantined_at=_dt(r["quarantined_at"]) if r.get("quarantined_at") else None,
    )


def to_relation(r: dict[str, Any]) -> Relation:
    return Relation(id=r["id"], user_id=r["user_id"], source_id=r["source_id"], target_id=r["target_id"],
                    predicate=r["predicate"], fact=r["fact"], valid_at=_dt(r["valid_at"]),
                    invalid_at=from_neo(r.get("invalid_at")), source_episode_ids=list(r.get("episodes") or []))


def to_note(r: dict[str, Any]) -> Note:
    return Note(id=r["id"], user_id=r["user_id"], kind=NoteKind(r["kind"]), text=r["text"], slot=r["slot"],
                valid_at=_dt(r["valid_at"]), invalid_at=from_neo(r.get("invalid_at")),
                superseded_by=r.get("superseded_by"), source_episode_ids=list(r.get("episodes") or []),
                created_at=_dt(r["created_at"]), confidence=r.get("confidence", 0.7))


def to_session(r: dict[str, Any]) -> SessionInfo:
    return SessionInfo(user_id=r["user_id"], session_id=r["session_id"], started_at=_dt(r["started_at"]),
                       last_active_at=_dt(r["last_active_at"]))


def like(pattern: str) -> str:
    """SQLite's LIKE as a Java regex: % and _ wildcards, case folded for ASCII letters only."""
    out = []
    for ch in pattern:
        if ch == "%":
            out.append(".*")
        elif ch == "_":
            out.append(".")
        elif ch.isascii() and ch.isalnum():
            out.append(ch)
        else:
            out.append(f"\\x{{{ord(ch):x}}}")
    return "(?is)" + "".join(out)


# --- the SQLite store's one-by-one merges, replayed in memory over what one read found ------------
GENERIC_TYPES = ("Thing", "Concept")
EntityPlan = tuple[list[Entity], dict[str, Entity], dict[str, tuple[set[str], Entity]]]


def replay_resolution(user_id: str, entities: list[Entity], keys: list[str], ids: dict[str, str],
                      stored: dict[str, Entity]) -> EntityPlan:
    """(outputs: snapshots in input order, entities to create by key, retyped: key -> (labels to drop,
    entity)). Later inputs see earlier ones; a generic type gives way to the first specific one."""
    known = {k: stored[i] for k, i in ids.items() if i in stored}
    created: dict[str, Entity] = {}
    retyped: dict[str, tuple[set[str], Entity]] = {}
    out: list[Entity] = []
    for key, ent in zip(keys, entities, strict=True):
        cur = known.get(key)
        if cur is None:
            cur = known[key] = created[key] = ent.model_copy(update={"id": ids[key], "user_id": user_id})
            out.append(cur)
            continue
        if cur.type in GENERIC_TYPES and ent.type not in GENERIC_TYPES:
            drop = set(labels(cur.type, cur.is_user)) - set(labels(ent.type, cur.is_user))
            cur = known[key] = cur.model_copy(update={"type": ent.type})
            if key in created:
                created[key] = cur
            else:
                retyped[key] = (retyped.get(key, (set(), cur))[0] | drop, cur)
        out.append(cur.model_copy())
    return out, created, retyped


def relation_key(r: Relation) -> tuple[str, str, str, str]:
    return r.user_id, r.source_id, r.target_id, r.predicate


def replay_relations(relations: list[Relation], current: dict[tuple[str, str, str, str], Relation]
                     ) -> tuple[list[Relation], dict[str, Relation], dict[str, Relation]]:
    """(outputs in input order, relations to create, relations whose episodes grew): an identical
    current relation, stored or created earlier in the call, only gains the new episode ids."""
    created: dict[str, Relation] = {}
    merged: dict[str, Relation] = {}
    out: list[Relation] = []
    for rel in relations:
        cur = current.get(relation_key(rel))
        if cur is None:
            created[rel.id] = rel
            if rel.invalid_at is None:
                current[relation_key(rel)] = rel
            out.append(rel)
            continue
        episodes = list(dict.fromkeys(cur.source_episode_ids + rel.source_episode_ids))
        cur = current[relation_key(rel)] = cur.model_copy(update={"source_episode_ids": episodes})
        (created if cur.id in created else merged)[cur.id] = cur
        out.append(cur)
    return out, created, merged
