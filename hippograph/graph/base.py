"""The graph-store protocol: episodes, entities, directed relations and long-term notes of each user.

The graph store is the system of record. Everything acknowledged to a caller is in it; the vector
store is an index over it that can be rebuilt from it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from hippograph.auth import ApiKey
from hippograph.graph.names import Synonyms
from hippograph.models import AuditEvent, Entity, Episode, Note, Relation, SessionInfo


@dataclass(frozen=True)
class Subgraph:
    entities: list[Entity]
    relations: list[Relation]


@runtime_checkable
class GraphStore(Protocol):
    def open(self) -> None:
        """Create schema/indexes and load what is needed; raises BackendUnavailable on failure."""

    def close(self) -> None: ...

    def write_lease(self, user_id: str) -> AbstractContextManager[None]:
        """Hold the user's write lease for the block: writes of that user by any other process on the
        same store wait until it ends (API replicas on one database apply a user's writes one after
        another). Taken outside `batch()`. A store that only one process can open needs none."""
        ...

    def batch(self) -> AbstractContextManager[None]:
        """Group the writes made inside into one transaction: all of them land, or none."""

    # --- users -------------------------------------------------------------------------------
    def ensure_user(self, user_id: str, name: str | None = None) -> Entity:
        """The user's own entity (created on first use)."""

    def user_exists(self, user_id: str) -> bool: ...

    def delete_user(self, user_id: str) -> None:
        """Forget the user: episodes, notes, entities, relations, and its owner key."""

    # --- tenants and keys ----------------------------------------------------------------------
    def owner_of(self, tenant: str, user_id: str, new_owner: str | None = None) -> str | None:
        """The owner key under which the stores keep the data of `user_id` of `tenant`. With `new_owner`,
        a pair that has none is registered with it (concurrent callers all get the one that won)."""
        ...

    def owners(self, owner_keys: Sequence[str]) -> dict[str, tuple[str, str]]:
        """For each registered owner key: its (tenant, user id)."""
        ...

    def tenant_users(self, tenant: str, prefix: str = "", limit: int = 100) -> list[str]:
        """The tenant's user ids (those anything was stored for and not forgotten), in order, those
        starting with `prefix` only, at most `limit`."""
        ...

    def add_key(self, key: ApiKey) -> None: ...

    def key_by_hash(self, key_hash: str) -> ApiKey | None:
        """The key (active or revoked) with this hash."""
        ...

    def list_keys(self, tenant: str | None = None) -> list[ApiKey]: ...

    def revoke_key(self, key_id: str, at: datetime, tenant: str | None = None) -> ApiKey | None:
        """Revoke the key (of `tenant`, when given); the key as stored now, None when there is no such key."""
        ...

    def has_keys(self) -> bool:
        """Whether a key was ever stored, active or revoked: a store that has had a key never lets a
        server run open again, whatever is revoked."""
        ...

    # --- episodes (tier 1, the raw record) -----------------------------------------------------
    def add_episodes(self, episodes: Sequence[Episode]) -> list[Episode]:
        """Insert episodes atomically; ids already stored are skipped. Returns the new ones."""

    def get_episodes(self, user_id: str, ids: Sequence[str]) -> list[Episode]: ...

    def episodes_by_ids(self, ids: Sequence[str]) -> list[Episode]:
        """Episodes of any user by id (the index repair path)."""

    def session_episodes(self, user_id: str, session_id: str) -> list[Episode]:
        """A session's episodes in order (by seq)."""

    def next_seq(self, user_id: str, session_id: str | None) -> int: ...

    def next_episodes(self, user_id: str, ids: Sequence[str]) -> dict[str, Episode]:
        """For each episode id, the episode that follows it in its session (the reply to a message)."""
        ...

    def pending_episodes(self, limit: int = 1000, user_id: str | None = None) -> list[Episode]:
        """Episodes stored but not yet fully processed (extracted and indexed), oldest first."""

    def mark_processed(self, ids: Sequence[str], extractor: str) -> None: ...

    def record_failure(self, ids: Sequence[str], reason: str, at: datetime, quarantine_after: int) -> list[str]:
        """Count a failed attempt at processing these pending episodes, with why it failed; those that
        reach `quarantine_after` attempts are quarantined at `at`: kept, no longer pending (nor retried
        by anyone) until released. Returns the ids quarantined now."""
        ...

    def quarantined_episodes(self, limit: int = 1000, user_id: str | None = None) -> list[Episode]:
        """Quarantined episodes (of one user, or of all), oldest first."""
        ...

    def release_episodes(self, user_id: str, ids: Sequence[str]) -> list[str]:
        """Make these quarantined episodes of the user pending again, their attempts counted afresh;
        returns the ids released."""
        ...

    def set_indexed(self, ids: Sequence[str], indexed: bool) -> None:
        """Whether an episode belongs in the vector index (small talk does not)."""

    def delete_episodes(self, user_id: str, ids: Sequence[str]) -> list[str]:
        """Delete these episodes of the user and their mention links, and forget the client ids kept for
        any of them that expired; returns the ids of the stored ones. Notes and relations that came
        from them stay (see `graph.forget` for the cascade)."""
        ...

    def mentioned_in(self, user_id: str, episode_ids: Sequence[str]) -> list[str]:
        """Ids of the entities these episodes mention."""
        ...

    def keep_client_ids(self, user_id: str, client_ids: Mapping[str, str | None]) -> None:
        """Remember episode id -> client id (no content) for episodes about to expire, so notes and
        relations that stay keep citing the client's message ids."""
        ...

    def client_ids(self, user_id: str, episode_ids: Sequence[str]) -> dict[str, str]:
        """For each of these episode ids still known (stored, or expired and remembered by
        `keep_client_ids`): the client's id for it, or the episode id where the client gave none."""
        ...

    # --- sessions (tier 1 lives and dies by them) ----------------------------------------------
    def touch_sessions(self, user_id: str, session_ids: Sequence[str], at: datetime) -> None:
        """Record activity in these sessions at `at` (server time), creating them on first use."""
        ...

    def list_sessions(self, user_id: str) -> list[SessionInfo]:
        """The user's sessions, most recently active first."""
        ...

    def expired_sessions(self, before: datetime, user_id: str | None = None, limit: int = 100
                         ) -> list[SessionInfo]:
        """Sessions (of one user, or of all) last active before `before`, oldest first."""
        ...

    def delete_session(self, user_id: str, session_id: str) -> list[str]:
        """Delete the session and every episode in it (messages, summaries, tool observations) with
        their mention links; returns the deleted episode ids. Notes and relations stay, and so do the
        client ids kept for its episodes (`keep_client_ids`)."""
        ...

    def all_item_ids(self, user_id: str | None = None) -> dict[str, list[str]]:
        """Ids of everything the vector store should hold, by kind (episode, note, relation)."""

    # --- entities and relations ----------------------------------------------------------------
    def drop_orphan_entities(self, user_id: str, entity_ids: Sequence[str]) -> list[str]:
        """Delete those of these entities (never the user's own) that no relation and no episode
        touches any more; returns their ids."""
        ...

    def resolve_entities(self, user_id: str, entities: Sequence[Entity]) -> list[Entity]:
        """Merge each entity with a stored one of the same normalised name or alias, else insert.
        Returns the stored entities in input order."""

    def get_entity(self, user_id: str, entity_id: str) -> Entity | None: ...

    def find_entities(self, user_id: str, q: str | None, limit: int = 20) -> list[Entity]: ...

    def entities_named(self, user_id: str, norms: Sequence[str]) -> dict[str, list[Entity]]:
        """Exact lookup by normalised name (see `schema.normalise`): for each norm found, its entities."""
        ...

    def speakers_named(self, user_id: str, names: Sequence[str]) -> list[str]:
        """Which of these names (compared without case) have spoken in the user's messages, as stored."""
        ...

    def add_relations(self, relations: Sequence[Relation]) -> list[Relation]:
        """Insert relations; an identical current relation (same ends and predicate) only gains the
        new source episode ids. Returns the stored relations in input order."""

    def invalidate_relations(self, ids: Sequence[str], at: datetime) -> None: ...

    def delete_relations(self, user_id: str, ids: Sequence[str]) -> None:
        """Delete these relations of the user outright (not just invalidate them)."""
        ...

    def rewrite_relations(self, relations: Sequence[Relation]) -> None:
        """Store new `fact` and `source_episode_ids` for these (stored) relations."""
        ...

    def current_relations(self, user_id: str, source_id: str, predicate: str) -> list[Relation]: ...

    def get_relations(self, ids: Sequence[str]) -> list[Relation]: ...

    def relations_of(
        self, user_id: str, entity_ids: Sequence[str], include_invalid: bool = False
    ) -> list[Relation]:
        """Relations touching any of these entities."""

    def link_mentions(self, episode_id: str, entity_ids: Sequence[str]) -> None: ...

    def mentions_of(self, user_id: str, entity_ids: Sequence[str], limit: int | None = None
                    ) -> dict[str, list[str]]:
        """For each entity id, the ids of the user's episodes that mention it; with `limit`, an entity
        more episodes mention is left out."""
        ...

    def neighbors(self, user_id: str, entity_id: str, depth: int = 1, include_invalid: bool = False) -> Subgraph:
        """Entities within `depth` hops (either direction) and the relations among them."""

    def rank_episodes(self, user_id: str, seeds: Mapping[str, float], limit: int = 30,
                      synonyms: Synonyms | None = None) -> list[tuple[str, float]]:
        """Personalised PageRank over the user's entities and the episodes mentioning them, seeded with
        entity and/or episode ids and weights; the best-ranked episodes that are not seeds, with their
        scores. Dates and numbers are not entities of this graph: they would tie unrelated episodes.
        With `synonyms`, entities whose names mean the same are tied too (see `graph.names`)."""
        ...

    def entity_names(self, user_id: str) -> dict[str, str]:
        """Id -> name of the entities of that ranking graph (those episodes mention, dates and numbers
        left out), ordered by id: what a query is linked to by meaning."""
        ...

    def personalized_pagerank(
        self, user_id: str, seeds: Sequence[str], limit: int = 20
    ) -> list[tuple[str, float]]:
        """Entity ids ranked by personalised PageRank from the seed entities (current relations)."""

    # --- notes (tier 2) ------------------------------------------------------------------------
    def add_note(self, note: Note) -> None: ...

    def supersede_note(self, old_id: str, new_id: str | None, at: datetime) -> None:
        """The note stops being current at `at`: replaced by `new_id`, or retired when it is None."""
        ...

    def notes_by_ids(self, ids: Sequence[str]) -> list[Note]: ...

    def current_note_by_slot(self, user_id: str, slot: str) -> Note | None: ...

    def list_notes(self, user_id: str, include_history: bool = False) -> list[Note]: ...

    def delete_note(self, user_id: str, note_id: str) -> bool:
        """Delete the note; notes it had superseded keep their history but no longer point at it
        (`superseded_by` cleared). False when there was no such note."""
        ...

    def set_note_sources(self, user_id: str, note_id: str, episode_ids: Sequence[str]) -> None:
        """Replace the note's source episode ids (and their links)."""
        ...

    def derived_from(self, user_id: str, episode_ids: Sequence[str]) -> tuple[list[Note], list[Relation]]:
        """The user's notes and relations, current or not, that came from any of these episodes."""
        ...

    def redact_audit(self, user_id: str, item_ids: Sequence[str]) -> None:
        """Drop the text of the user's audit events about these items (action, time and actor stay)."""
        ...

    def compact(self, full: bool = False) -> None:
        """Make deleted data leave the store's files where the store can (e.g. a WAL checkpoint);
        `full` also rewrites what older versions left behind (offline: may take a while)."""
        ...

    def add_audit(self, events: Sequence[AuditEvent]) -> None:
        """Append to the user's audit log (part of the surrounding batch(), like any write)."""
        ...

    def audit_log(self, user_id: str, item_id: str | None = None, limit: int = 1000,
                  item_kind: str | None = None) -> list[AuditEvent]:
        """The user's audit events, oldest first (only those about `item_id`, or of one kind, when given)."""
        ...

    def superseded(self, user_id: str, episode_ids: Sequence[str]) -> tuple[list[Note], list[Relation]]:
        """The user's notes and relations that are no longer current and came from any of these episodes."""
        ...
