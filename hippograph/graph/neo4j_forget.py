"""The Neo4j store's part in forgetting (the cascade itself is `graph.forget`): its Cypher, and the
methods of `Neo4jGraphStore` that run it. Expired episodes cited by notes or relations keep their
client id, and nothing else, in (:EpisodeRef {id, user_id, client_id}) nodes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from hippograph.graph import neo4j_cypher as cy
from hippograph.models import Note, Relation

Tx = cy.Tx
Rows = cy.Rows


_data = cy.data


# --- Cypher --------------------------------------------------------------------------------------
# (:EpisodeRef {id, user_id, client_id}): an expired episode's client id, without its content
MENTIONED_IN = """
MATCH (ep:Episode)-[:MENTIONS]->(x:Entity) WHERE ep.id IN $ids AND ep.user_id = $user RETURN DISTINCT x.id AS id
"""
KEEP_CLIENT_IDS = """
UNWIND $rows AS row
MERGE (r:EpisodeRef {id: row.id}) SET r.user_id = $user, r.client_id = row.client
"""
CLIENT_IDS = """
UNWIND $ids AS id
OPTIONAL MATCH (e:Episode {id: id}) WHERE e.user_id = $user
OPTIONAL MATCH (r:EpisodeRef {id: id}) WHERE r.user_id = $user
WITH id, e, r WHERE e IS NOT NULL OR r IS NOT NULL
RETURN id, CASE WHEN e IS NOT NULL THEN e.client_id ELSE r.client_id END AS client
"""
DROP_ORPHANS = """
UNWIND $ids AS id
MATCH (e:Entity {id: id}) WHERE e.user_id = $user AND NOT coalesce(e.is_user, false) AND NOT EXISTS { (e)--() }
WITH e, e.id AS id DELETE e RETURN id
"""
DELETE_RELATIONS = """
UNWIND $rows AS row
MATCH (:Entity {id: row.source})-[r]->(:Entity) WHERE r.id = row.id AND r.user_id = $user DELETE r
"""
REWRITE_RELATIONS = """
UNWIND $rows AS row
MATCH (:Entity {id: row.source})-[r]->(:Entity) WHERE r.id = row.id SET r.fact = row.fact, r.episodes = row.episodes
"""
SET_NOTE_SOURCES = """
MATCH (n:Note {id: $id, user_id: $user}) SET n.episodes = $episodes
WITH n
CALL (n) { MATCH (n)-[x:FROM]->() DELETE x }
CALL (n) {
  UNWIND n.episodes AS id
  MATCH (e:Episode {id: id, user_id: n.user_id})
  MERGE (n)-[x:FROM]->(e) SET x.user_id = n.user_id
}
"""
DERIVED_NOTES = """
MATCH (n:Note {user_id: $user}) WHERE any(x IN n.episodes WHERE x IN $ids) RETURN n {.*} AS n ORDER BY n.valid_at, n.id
"""
DERIVED_RELATIONS = """
MATCH (:Entity {user_id: $user})-[r]->(:Entity)
WHERE r.predicate IS NOT NULL AND r.user_id = $user AND any(x IN r.episodes WHERE x IN $ids)
RETURN r {.*, source_id: startNode(r).id, target_id: endNode(r).id} AS r ORDER BY r.id
"""
REDACT_AUDIT = "MATCH (a:Audit {user_id: $user}) WHERE a.item_id IN $ids AND a.text IS NOT NULL SET a.text = null"

class Neo4jForgetting:
    """Mixed into Neo4jGraphStore, which provides the queries, the transactions and the relation cache."""

    _rel_sources: dict[str, tuple[str, str]]
    _query: Callable[..., Rows]
    _update: Callable[..., Rows]
    _call: Callable[..., Any]
    _relations: Callable[[Rows], list[Relation]]
    _relations_by_ids: Callable[..., Awaitable[dict[str, Relation]]]

    def mentioned_in(self, user_id: str, episode_ids: Sequence[str]) -> list[str]:
        return [r["id"] for r in self._query(MENTIONED_IN, user=user_id, ids=list(episode_ids))] if episode_ids else []

    def keep_client_ids(self, user_id: str, client_ids: Mapping[str, str | None]) -> None:
        if client_ids:
            self._update(KEEP_CLIENT_IDS, user=user_id,
                         rows=[{"id": ep, "client": client} for ep, client in client_ids.items()])

    def client_ids(self, user_id: str, episode_ids: Sequence[str]) -> dict[str, str]:
        rows = self._query(CLIENT_IDS, user=user_id, ids=list(dict.fromkeys(episode_ids))) if episode_ids else []
        return {r["id"]: r["client"] or r["id"] for r in rows}

    def drop_orphan_entities(self, user_id: str, entity_ids: Sequence[str]) -> list[str]:
        if not entity_ids:
            return []
        return [r["id"] for r in self._update(DROP_ORPHANS, user=user_id, ids=list(dict.fromkeys(entity_ids)))]

    def delete_relations(self, user_id: str, ids: Sequence[str]) -> None:
        if ids:
            self._call(True, self._delete_relations, user_id, ids)

    async def _delete_relations(self, tx: Tx, user_id: str, ids: Sequence[str]) -> None:
        rows = [{"id": r.id, "source": r.source_id} for r in (await self._relations_by_ids(tx, ids)).values()]
        await _data(tx, DELETE_RELATIONS, rows=rows, user=user_id)
        for row in rows:
            self._rel_sources.pop(row["id"], None)

    def rewrite_relations(self, relations: Sequence[Relation]) -> None:
        if relations:
            self._update(REWRITE_RELATIONS, rows=[{"id": r.id, "source": r.source_id, "fact": r.fact,
                                                      "episodes": list(r.source_episode_ids)} for r in relations])

    def set_note_sources(self, user_id: str, note_id: str, episode_ids: Sequence[str]) -> None:
        self._update(SET_NOTE_SOURCES, user=user_id, id=note_id, episodes=list(episode_ids))

    def derived_from(self, user_id: str, episode_ids: Sequence[str]) -> tuple[list[Note], list[Relation]]:
        if not episode_ids:
            return [], []
        ids = list(episode_ids)
        notes = [cy.to_note(r["n"]) for r in self._query(DERIVED_NOTES, user=user_id, ids=ids)]
        return notes, self._relations(self._query(DERIVED_RELATIONS, user=user_id, ids=ids))

    def redact_audit(self, user_id: str, item_ids: Sequence[str]) -> None:
        if item_ids:
            self._update(REDACT_AUDIT, user=user_id, ids=list(item_ids))

    def compact(self, full: bool = False) -> None:
        """Nothing to do from here: Neo4j manages its own store files (deleted records are reused)."""
