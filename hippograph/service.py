"""The Hippograph service: what the HTTP API, the CLI and the benchmarks call.

It holds the stores it is given (see `wiring.build`), never builds them, and never knows which
backend runs behind a protocol.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, cast

from pydantic import BaseModel, Field

from hippograph.audit import audit_event
from hippograph.background import Background
from hippograph.config import ContextSettings, ProfileSettings, SessionSettings, WorldSettings
from hippograph.context_entry import ContextEntry
from hippograph.errors import Conflict, NotFound
from hippograph.extraction.base import Extraction, Extractor
from hippograph.forgetting import Compactor, Forgetting
from hippograph.graph.base import GraphStore, Subgraph
from hippograph.graph.forget import relations_stating
from hippograph.ingest import Ingestor
from hippograph.lifecycle import SessionKeeper
from hippograph.llm.usage import UsageMeter
from hippograph.models import (
    AuditEvent,
    Entity,
    Episode,
    EpisodeKind,
    Note,
    NoteKind,
    Relation,
    VectorRecord,
    new_id,
    stable_id,
    utcnow,
)
from hippograph.planner.handoff import Turn, build_packet
from hippograph.planner.retrieval import Retriever
from hippograph.planner.summary import ExtractiveSummarizer, Summarizer
from hippograph.records import (
    DOCUMENT_CHUNK_CHARS,
    episode_record,
    lemma_words,
    note_record,
    relation_record,
)
from hippograph.storage_guard import StorageGuard
from hippograph.sweeper import Sweeper
from hippograph.tenancy import Tenancy
from hippograph.tokens import TokenCounter
from hippograph.vectors.base import VectorFilter
from hippograph.vectors.indexer import Indexer
from hippograph.write_entry import WriteEntry, for_user

if TYPE_CHECKING:
    from hippograph.notes_model.learned import LearnedNotes

log = logging.getLogger("hippograph.service")

class SearchHit(BaseModel):
    id: str
    kind: str
    score: float
    text: str
    timestamp: str
    session_id: str | None = None
    provenance: list[str] = Field(default_factory=list)


class Hippograph(WriteEntry, ContextEntry):
    def __init__(
        self, graph: GraphStore, indexer: Indexer, extractor: Extractor, counter: TokenCounter,
        context: ContextSettings, tool_output_chars: int = 500, max_content_chars: int = 100_000, max_word_chars: int = 2048,
        world: WorldSettings | None = None, sessions: SessionSettings | None = None,
        profile: ProfileSettings | None = None, summarizer: Summarizer | None = None,
        fallback_extractor: Extractor | None = None, usage: UsageMeter | None = None,
        resolver: Callable[[GraphStore, str, Extraction], Extraction] | None = None,
        guard: StorageGuard | None = None, phrases: Callable[[str], list[str]] | None = None,
        background_workers: int = 2, max_backlog: int = 10_000, concurrent_reads: int = 0, concurrent_writes: int = 0,
        max_attempts: int = 3, learned: LearnedNotes | None = None,
    ) -> None:
        self.graph = graph
        self.indexer = indexer
        self.extractor = extractor
        self.counter = counter
        self.context_settings = context
        self.session_settings = sessions or SessionSettings()
        self.max_content_chars = max_content_chars
        self.max_word_chars = max_word_chars
        self.ingestor = Ingestor(graph, indexer, extractor, tool_output_chars, world, profile,
                                 fallback=fallback_extractor, resolver=resolver, max_attempts=max_attempts,
                                 learned=learned)
        profile = profile or ProfileSettings()
        self.stated = profile.stated_confidence if profile.stated_confidence is not None else \
            learned.limits.stated if learned is not None else 0.0
        self.retriever = Retriever(graph, indexer, phrases, self.stated)
        self.guard = guard or StorageGuard()  # free disk space, checked before every write
        extractive = ExtractiveSummarizer(counter)
        self.compactor = Compactor(graph, indexer)
        self.forgetting = Forgetting(graph, indexer, self.compactor)
        self.sessions = SessionKeeper(graph, indexer, summarizer or extractive, self.session_settings,
                                      self.ingestor.lock, fallback=extractive, guard=self.guard,
                                      on_delete=self.compactor.mark, user_write=self.ingestor.user_write)
        self.usage = usage or UsageMeter()  # model calls and tokens, per user and operation
        self.tenancy = Tenancy(graph, self.guard)  # API keys, and the owner key each tenant's user is filed under
        # writes acknowledged before extraction ("wait": false) are finished by these threads
        self.background = Background(self._process_queued, self._summarize_queued, background_workers)
        self._queued_sessions: dict[str, set[str]] = {}  # user -> sessions written to without waiting
        self._queued_lock = threading.Lock()
        self.max_backlog = max_backlog
        # requests carried out at once, reads and writes apart (0: no limit); the others wait their turn
        # instead of taking the interpreter lock from each other (`slot`)
        self._slots = {"read": threading.BoundedSemaphore(concurrent_reads) if concurrent_reads else None,
                       "write": threading.BoundedSemaphore(concurrent_writes) if concurrent_writes else None}
        self._ready = threading.Event()
        self._repair_due = True  # what a crash left half done: repaired by the first sweep with room on the disk
        self.sweeper: Sweeper | None = None

    # --- lifecycle -----------------------------------------------------------------------------
    def open(self) -> None:
        """Open both stores and load the models. What a crash left half done (pending extraction,
        expired sessions, re-indexing) is repaired by the first `retry_pending`, which the sweep runs
        as soon as it starts: a start never replays a backlog before it is ready."""
        self.guard.before_open()
        self.graph.open()
        self.indexer.store.open()
        self.indexer.embedder.embed(["warm-up"])
        self.extractor.load()
        self.background.start()
        self._ready.set()

    def start_sweeping(self, every: float) -> Sweeper:
        """The periodic sweep (`hippograph.sweeper`): expired sessions and compaction, the start-up
        repairs, and what failed or waited to be extracted; stopped by `close`."""
        if self.sweeper is None:
            # the start-up repairs first (`retry_pending`), then expiry and compaction
            self.sweeper = Sweeper([self.retry_pending, self.expire_sessions], every)
            self.sweeper.start()
        return self.sweeper

    def close(self) -> None:
        self._ready.clear()
        if self.sweeper is not None:
            self.sweeper.stop()
            self.sweeper = None
        self.background.stop()  # what it did not get to stays pending: the next start finishes it
        try:
            self.indexer.store.close()
        finally:  # a vector store that cannot flush (a full disk) replays its WAL at the next open
            self.graph.close()

    @contextmanager
    def slot(self, scope: str, short: bool = False) -> Iterator[None]:
        """One of the `concurrent_reads` (scope read) or `concurrent_writes` (write, admin) places: more
        threads than cores running Python at once only take the interpreter lock from each other, and
        a write that waits behind twenty reads for every step takes seconds."""
        sem = self._slots["read" if scope == "read" else "write"]
        if sem is None or short:
            yield
            return
        with sem:
            yield

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def describe(self) -> dict:
        """Which backends and models are running (for /readyz and logs)."""
        return {
            "graph": type(self.graph).__name__,
            "vectors": type(self.indexer.store).__name__,
            "embedder": self.indexer.embedder.name,
            "extractor": self.extractor.name,
            "tokenizer": self.counter.name,
            "storage": self.guard.status(),
        }

    def reindex_missing(self, user_id: str | None = None) -> int:
        """Put back into the vector index anything the system of record has and the index lacks.
        Returns how many items went back."""
        ids = self.graph.all_item_ids(user_id)
        missing = 0
        for kind, wanted in ids.items():
            for i in range(0, len(wanted), 512):
                chunk = wanted[i:i + 512]
                present = self.indexer.store.has(chunk)
                owners: dict[str, list[str]] = {}
                for item in self._items(kind, [x for x in chunk if x not in present]):
                    owners.setdefault(item.user_id, []).append(item.id)
                for user, absent in owners.items():
                    # read again and indexed under the user's lease, which a delete takes too (on any
                    # replica): an item deleted since the read above must not come back to the index
                    with self.ingestor.user_write(user):
                        present = self.indexer.store.has(absent)
                        records = self._records(kind, [x for x in absent if x not in present])
                        self.indexer.index(records)
                        missing += len(records)
        return missing

    def _items(self, kind: str, ids: list[str]) -> list[Note] | list[Relation] | list[Episode]:
        """The items of a kind the index should hold, from the system of record."""
        if kind == "note":
            return [n for n in self.graph.notes_by_ids(ids) if n.current]
        if kind == "relation":
            return [r for r in self.graph.get_relations(ids) if r.invalid_at is None]
        return self.graph.episodes_by_ids(ids)

    def _records(self, kind: str, ids: list[str]) -> list[VectorRecord]:
        items = self._items(kind, ids)
        if kind == "note":
            return [note_record(n) for n in cast(list[Note], items)]
        if kind == "relation":
            return [relation_record(r) for r in cast(list[Relation], items)]
        episodes = cast(list[Episode], items)
        lemmas = lemma_words(self.indexer, episodes)
        return [episode_record(e, lemmas.get(e.id, "")) for e in episodes]

    # --- writes (storing them: WriteEntry) -----------------------------------------------------
    def memory_status(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, list[str]]:
        """Which of these messages or documents (the client's ids or ours) are extracted and searchable
        (`processed`), stored but not yet (`pending`), set aside after failing too often
        (`quarantined`), or not stored for this user (`unknown`)."""
        self._live_user(user_id)
        wanted = list(dict.fromkeys(memory_ids))
        first = {m: self._episode_ids(user_id, m, pieces=1) for m in wanted}  # a message, or a first piece
        found = {e.id: e for e in self.graph.get_episodes(user_id, [i for ids in first.values() for i in ids])}
        documents = [m for m in wanted if first[m][2] in found]  # a document's other pieces, too
        rest = {m: self._episode_ids(user_id, m)[3:] for m in documents}
        found |= {e.id: e for e in self.graph.get_episodes(user_id, [i for ids in rest.values() for i in ids])}
        out: dict[str, list[str]] = {"processed": [], "pending": [], "quarantined": [], "unknown": []}
        for m in wanted:
            parts = [found[i] for i in first[m] + rest.get(m, []) if i in found]
            out[_state(parts) if parts else "unknown"].append(m)
        return out

    def quarantine(self, limit: int = 1000) -> list[Episode]:
        """The messages and documents (their pieces) set aside after failing too often, of every user."""
        return self.graph.quarantined_episodes(limit)

    def release(self, user_id: str, memory_ids: Sequence[str]) -> list[str]:
        """Put these quarantined messages or documents of the user back in line: the sweep tries them
        again (their attempts counted afresh). Returns the ids released."""
        self._require_user(user_id)
        wanted = list(dict.fromkeys(memory_ids))
        released = set(self.graph.release_episodes(user_id, [i for m in wanted for i in self._episode_ids(user_id, m)]))
        return [m for m in wanted if released & set(self._episode_ids(user_id, m))]

    def retry_pending(self) -> int:
        """Extract and index what is stored but not yet processed (after a crash, an LLM or store
        failure), but messages quarantined after failing too often; the first time, also expire the
        sessions that went idle while no server ran and put back into the index what it lacks."""
        action = ("the start-up repairs (pending extraction, expired sessions, re-indexing)" if self._repair_due
                  else "extracting pending messages")
        if not self.guard.allows(action):
            return 0
        stop = self.sweeper.stopping.is_set if self.sweeper is not None else None
        done = self.ingestor.process_pending(skip=self.background.has, stop=stop)
        if self._repair_due and not (stop and stop()):
            self.sessions.expire()
            self.reindex_missing()
            self._repair_due = False
        return done

    def expire_sessions(self, now: datetime | None = None) -> int:
        """Delete every session idle longer than the TTL, then compact the stores if anything was
        deleted since the last sweep (the server runs this periodically)."""
        expired = self.sessions.expire(now=now)
        if self.guard.allows("compacting the stores"):  # it rewrites files: not on a full disk
            self.compact()
        return expired

    def compact(self, force: bool = False) -> bool:
        """Make what was deleted leave the stores' files (WAL checkpoint, vector segments rewritten);
        runs only when something was deleted since the last compaction, unless forced. True if it ran."""
        return self.compactor.compact(force)

    def list_sessions(self, user_id: str) -> list[dict]:
        self._live_user(user_id)
        ttl = self.session_settings.ttl_seconds
        return [{**s.model_dump(mode="json", exclude={"user_id"}),
                 "expires_at": _iso(s.last_active_at + timedelta(seconds=ttl)) if ttl else None}
                for s in self.graph.list_sessions(user_id)]

    def end_session(self, user_id: str, session_id: str, actor: str = "api") -> int:
        """Forget a session now: its messages, summaries and tool observations, and what was derived
        only from them (notes and relations with other sources just lose these). Unlike the TTL, which
        keeps what was extracted."""
        self._require_user(user_id)
        if not any(s.session_id == session_id for s in self.graph.list_sessions(user_id)):
            raise NotFound(f"this user has no session {session_id!r}")
        self.guard.check("ending the session")
        with self.ingestor.user_write(user_id), self.ingestor.lock:
            return self.forgetting.session(user_id, session_id, actor)

    def _episode_ids(self, user_id: str, memory_id: str, pieces: int | None = None) -> list[str]:
        """The episode ids a message, or a document's pieces (its first `pieces`, or all it can have),
        may have: our id, or the client's."""
        chunks = 2 * self.max_content_chars // DOCUMENT_CHUNK_CHARS + 2  # a document's pieces, at most
        chunks = chunks if pieces is None else min(pieces, chunks)
        return [memory_id, stable_id("ep", user_id, memory_id),
                *(stable_id("ep", user_id, memory_id, str(i)) for i in range(chunks))]

    def _memory(self, user_id: str, memory_id: str) -> list[Episode]:
        """A message, or a document's pieces, by the client's id or ours (of a user known to exist)."""
        found = sorted(self.graph.get_episodes(user_id, self._episode_ids(user_id, memory_id)), key=lambda e: e.seq)
        if not found:
            raise NotFound(f"this user has no memory {memory_id!r}")
        return found

    def _expired_memory(self, user_id: str, memory_id: str) -> dict[str, str]:
        """An expired message or document that notes or relations still cite: episode id -> client id."""
        found = self.graph.client_ids(user_id, self._episode_ids(user_id, memory_id))
        if not found:
            raise NotFound(f"this user has no memory {memory_id!r}")
        return found

    def get_memory(self, user_id: str, memory_id: str) -> dict:
        """A stored message or document as the record keeps it: whether it is extracted and indexed
        yet (`pending` until then) and which extractor did it."""
        self._live_user(user_id)
        found = self._memory(user_id, memory_id)
        return {"id": memory_id, "user_id": user_id, "parts": [
            {"id": e.id, "client_id": e.client_id, "session_id": e.session_id, "agent_id": e.agent_id,
             "kind": e.kind.value, "role": e.role.value if e.role else None, "name": e.name, "title": e.title,
             "content": e.content, "timestamp": e.timestamp.isoformat(), "metadata": e.metadata,
             "status": _state([e]), "extractor": e.extractor,
             **({"attempts": e.attempts, "failure": e.failure} if e.failure else {})} for e in found]}

    def delete_memory(self, user_id: str, memory_id: str, actor: str = "api") -> list[str]:
        """Delete one message or document (by the client's id or ours) from every store, with the notes
        and relations derived only from it; those with other sources lose it (and a relation worded in
        its sentence is reworded), session summaries lose its lines. A message that already expired
        but is still cited by notes or relations can be deleted the same way."""
        self._require_user(user_id)
        try:
            found = self._memory(user_id, memory_id)
            ids, names = [e.id for e in found], [e.client_id or e.id for e in found]
        except NotFound:
            expired = self._expired_memory(user_id, memory_id)
            ids, names = list(expired), list(expired.values())
        self.guard.check("deleting the memory")
        with self.ingestor.user_write(user_id), self.ingestor.lock:
            self.forgetting.episodes(user_id, ids, actor)
        return names

    @for_user
    def handoff(self, user_id: str, session_id: str, task: str, to_agent: str | None = None) -> dict:
        """The packet agent A hands agent B: the session's conclusions, never its transcript. Ideas
        raised and then rejected appear only as what was decided instead."""
        self._live_user(user_id)
        episodes = [e for e in self.graph.session_episodes(user_id, session_id) if e.kind == EpisodeKind.message]
        if not episodes:
            raise NotFound(f"this user has no session {session_id!r} (or it expired)")
        turns = [Turn(id=e.client_id or e.id, role=e.role.value if e.role else "user", content=e.content,
                      timestamp=e.timestamp) for e in episodes]
        packet = build_packet(task.strip(), turns, source_session=session_id)
        agents = [e.agent_id for e in episodes if e.agent_id]
        return {**packet.model_dump(mode="json"), "user_id": user_id, "from_agent": agents[-1] if agents else None,
                "to_agent": to_agent, "created_at": utcnow().isoformat()}

    def forget_user(self, user_id: str) -> None:
        self._require_user(user_id)
        self.guard.check("forgetting the user")
        with self.ingestor.user_write(user_id), self.ingestor.lock:
            self.forgetting.user(user_id)

    def delete_note(self, user_id: str, item_id: str, actor: str = "api") -> None:
        """Delete a profile item: its text leaves every store and the audit log, the relations that
        say the same thing go with it, and an item it had replaced no longer points at it."""
        self._require_user(user_id)
        note = self._own_note(user_id, item_id)
        self.guard.check("deleting the profile item")
        with self.ingestor.user_write(user_id), self.ingestor.lock:
            self.forgetting.note(user_id, note, actor)

    @for_user
    def correct_note(self, user_id: str, item_id: str, text: str, actor: str = "api") -> Note:
        """Replace a current profile item with the corrected text: the old item keeps its history
        (valid until now, superseded by the correction), the new one keeps the old one's sources."""
        self._require_user(user_id)
        with self.ingestor.user_write(user_id):  # read and replaced under the user's lease: one correction wins
            old = self._own_note(user_id, item_id)
            if not old.current:
                raise Conflict(f"profile item {item_id!r} was already replaced by {old.superseded_by!r}: "
                               "correct the current item" if old.superseded_by else
                               f"profile item {item_id!r} is no longer current: correct a current item")
            self.guard.check("correcting the profile item")
            now = utcnow()
            new = Note(id=new_id("note"), user_id=user_id, kind=old.kind, text=text.strip(), slot=old.slot,
                       valid_at=now, source_episode_ids=list(old.source_episode_ids), confidence=1.0)
            # the graph's relations that said what the old text said, and the new one no longer says ("lives in
            # Seattle" corrected to Portland), stop being current with it
            still = {r.id for r in relations_stating(self.graph, new)}
            ended = [r.id for r in relations_stating(self.graph, old) if r.invalid_at is None and r.id not in still]
            with self.graph.batch():
                self.graph.add_note(new)
                self.graph.supersede_note(old.id, new.id, now)
                self.graph.invalidate_relations(ended, now)
                self.graph.add_audit([audit_event(user_id, actor, "correct", new.id, new.text, old.id, now),
                                      audit_event(user_id, actor, "supersede", old.id, old.text, new.id, now)])
            self.indexer.store.delete([old.id, *ended])
            self.indexer.index([note_record(new)])
        return new

    def _own_note(self, user_id: str, item_id: str) -> Note:
        found = [n for n in self.graph.notes_by_ids([item_id]) if n.user_id == user_id]
        if not found:
            raise NotFound(f"this user has no profile item {item_id!r}")
        return found[0]

    def audit(self, user_id: str, item_id: str | None = None, limit: int = 1000,
              item_kind: str | None = None) -> list[AuditEvent]:
        self._require_user(user_id)
        return self.graph.audit_log(user_id, item_id, limit, item_kind)

    # --- reads ---------------------------------------------------------------------------------
    def _require_user(self, user_id: str) -> None:
        if not self.graph.user_exists(user_id):
            raise NotFound("unknown user: nothing has been stored for this user id")

    def _live_user(self, user_id: str) -> None:
        """The user exists, and their idle sessions are gone before anything of them is read."""
        self._require_user(user_id)
        self.sessions.expire(user_id)

    def profile(self, user_id: str, include_history: bool = False) -> dict:
        self._require_user(user_id)
        out: dict = {"user_id": user_id, "facts": [], "preferences": [], "decisions": []}
        keys = {NoteKind.fact: ("facts", "fact"), NoteKind.preference: ("preferences", "pref"),
                NoteKind.decision: ("decisions", "decision")}
        for n in self.graph.list_notes(user_id, include_history=include_history):
            group, field_name = keys[n.kind]
            item: dict[str, object] = {"id": n.id, field_name: n.text, "updated": n.valid_at.isoformat(),
                                       "confidence": n.confidence, "candidate": n.confidence < self.stated,
                                       "slot": n.slot,
                                       "source": self._provenance(user_id, n.source_episode_ids)}
            if include_history:
                item.update(current=n.current, valid_at=n.valid_at.isoformat(),
                            invalid_at=n.invalid_at.isoformat() if n.invalid_at else None,
                            superseded_by=n.superseded_by)
            out[group].append(item)
        return out

    @for_user
    def search(self, user_id: str, query: str, limit: int = 10) -> list[SearchHit]:
        self._live_user(user_id)
        flt = VectorFilter(user_id=user_id)
        hits = self.indexer.search(flt, query, limit)
        return [SearchHit(id=h.id, kind=h.kind.value, score=h.score, text=h.text, timestamp=h.timestamp.isoformat(),
                          session_id=h.session_id, provenance=self._hit_provenance(user_id, h.kind, h.source_ids))
                for h in hits]

    def entities(self, user_id: str, q: str | None, limit: int = 50) -> list[Entity]:
        self._require_user(user_id)
        return self.graph.find_entities(user_id, q, limit)

    def neighbors(self, user_id: str, entity_id: str, depth: int = 1, include_invalid: bool = False) -> Subgraph:
        """The user's entities within `depth` hops of one of theirs (another user's entity is unknown), by
        current relations (`include_invalid`: by those that no longer hold too)."""
        if self.graph.get_entity(user_id, entity_id) is None:
            raise NotFound(f"this user has no entity {entity_id!r}")
        return self.graph.neighbors(user_id, entity_id, depth=depth, include_invalid=include_invalid)

def _state(parts: Sequence[Episode]) -> str:
    """A message's, or a document's (its pieces together), processing state."""
    if all(e.processed for e in parts):
        return "processed"
    return "quarantined" if any(e.quarantined_at is not None for e in parts) else "pending"


def _iso(at: datetime) -> str:
    """As pydantic writes datetimes in the API (UTC as Z)."""
    return at.isoformat().replace("+00:00", "Z")
