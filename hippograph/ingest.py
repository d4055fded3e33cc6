"""Accept, persist, extract: the write path.

1. Incoming messages/documents become episodes and are committed to the graph store (the system of
   record) in one transaction. That commit is what makes a write acknowledged.
2. The new episodes are processed: extraction, entity resolution, relation and note supersession,
   provenance links, and indexing into the vector store. Episodes stay `pending` until this is done,
   so a crash in between is repaired at the next start (`process_pending`).
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, ValidationError

from hippograph.audit import audit_event
from hippograph.config import ProfileSettings, WorldSettings
from hippograph.errors import Conflict, HippographError, InvalidInput
from hippograph.extraction.base import (
    SINGLE_VALUED_PREDICATES,
    USER,
    Extraction,
    Extractor,
    bounded,
    only_from,
)
from hippograph.extraction.tool_output import essentials
from hippograph.failures import Failures, reason_of, transient
from hippograph.graph.base import GraphStore
from hippograph.inputs import plus_seconds
from hippograph.llm.usage import acting_for
from hippograph.models import (
    DocumentIn,
    Entity,
    Episode,
    EpisodeKind,
    MemoryKind,
    MessageIn,
    Relation,
    Role,
    VectorRecord,
    new_id,
    stable_id,
    utcnow,
)
from hippograph.note_writer import NoteChange, NoteWriter
from hippograph.records import (
    chunk_text,
    episode_record,
    episode_text,
    lemma_words,
    normalise_arguments,
    note_record,
    relation_record,
)
from hippograph.vectors.indexer import Indexer

if TYPE_CHECKING:
    from hippograph.notes_model.learned import LearnedNotes

log = logging.getLogger("hippograph.ingest")

PROCESS_BATCH = 1000  # episodes extracted and stored in one step (the store lock is let go in between)
BACKLOG = 1000  # earlier unfinished episodes of the user a write also finishes; the sweep does the rest


class QueuedWrite:
    """A write stored and waiting for the background: its episode ids and, once processed, its result
    (`done` is set then, or when the background stops without it: the result stays empty)."""

    def __init__(self, episode_ids: Sequence[str]) -> None:
        self.episode_ids = list(episode_ids)
        self.result = IngestResult()
        self.done = threading.Event()


class IngestResult(BaseModel):
    stored: list[str] = Field(
        default_factory=list, description="Newly stored messages/documents: the client's ids, else ours."
    )
    duplicates: list[str] = Field(default_factory=list, description="Ids already stored (an idempotent retry).")
    notes: list[NoteChange] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    relations: list[str] = Field(default_factory=list)
    skipped_small_talk: list[str] = Field(default_factory=list)
    extractor: str | None = Field(None, description="What extracted this write: spacy, llm:<model>, or "
                                                    "spacy:fallback when the LLM failed.")
    pending: list[str] = Field(
        default_factory=list, description="Stored and acknowledged, but not yet extracted or searchable (the "
                                          "extractor failed, or another request is processing them): the "
                                          "server's sweep finishes them.")
    warnings: list[str] = Field(default_factory=list)


class Ingestor:
    def __init__(
        self, graph: GraphStore, indexer: Indexer, extractor: Extractor, tool_output_chars: int,
        world: WorldSettings | None = None, profile: ProfileSettings | None = None,
        fallback: Extractor | None = None,
        resolver: Callable[[GraphStore, str, Extraction], Extraction] | None = None, max_attempts: int = 3,
        learned: LearnedNotes | None = None,
    ) -> None:
        self.graph = graph
        self.indexer = indexer
        self.extractor = extractor
        # when the extractor fails (an LLM endpoint down, answers unusable): extract with `fallback`
        # now, or, without one, keep the episodes pending and try the extractor again later
        self.fallback = fallback
        self.resolver = resolver  # e.g. LLM-assisted entity resolution, run before the store lock is taken
        self._claimed: set[str] = set()  # episodes some thread is processing (under self.lock)
        # one write at a time per user, from persist to the last derived write, so a user's statements
        # supersede each other in the order they came even while an LLM extracts for seconds; other
        # users' writes go on meanwhile (self.lock is held only for the short store steps)
        self._users: dict[str, threading.Lock] = defaultdict(threading.Lock)
        self._holding = threading.local()  # the users whose writes this thread holds
        self.tool_output_chars = tool_output_chars
        self.world = world or WorldSettings()
        self.profile = profile or ProfileSettings()
        self.notes = NoteWriter(graph, indexer.embedder, self.profile, learned)
        self.failures = Failures(graph, max_attempts)
        self.lock = threading.Lock()  # one writer: sequence numbers and supersession stay consistent
        self._ahead = ThreadPoolExecutor(max_workers=2, thread_name_prefix="hippograph-embed")
        self._next = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hippograph-extract-next")

    # --- step 1: persist -----------------------------------------------------------------------
    def build_episodes(
        self, user_id: str, session_id: str | None, agent_id: str | None,
        messages: Sequence[MessageIn], documents: Sequence[DocumentIn], metadata: dict,
    ) -> list[Episode]:
        now = utcnow()
        seq = self.graph.next_seq(user_id, session_id)
        out: list[Episode] = []
        for i, m in enumerate(messages):
            # a message without a time of its own is said now, a microsecond after the one before it: the
            # write's order is kept by everything that orders by time (the block's memories, a session)
            said = m.timestamp or now + timedelta(microseconds=i)
            content, meta = m.content, {**metadata, **(m.metadata or {})}
            if m.role == Role.tool:
                if len(content) > self.tool_output_chars:
                    meta["original_chars"] = len(content)
                    content = essentials(content, self.tool_output_chars)
                meta.update(self._observation(m, said))
            key = m.id or new_id("msg")
            out.append(Episode(
                id=stable_id("ep", user_id, key) if m.id else key, user_id=user_id, session_id=session_id,
                agent_id=agent_id, kind=EpisodeKind.message, role=m.role, name=m.name, content=content,
                client_id=m.id, timestamp=said, seq=seq, metadata=meta,
            ))
            seq += 1
        for d in documents:
            for i, piece in enumerate(chunk_text(d.text)):
                out.append(Episode(
                    id=stable_id("ep", user_id, d.id, str(i)), user_id=user_id, session_id=session_id,
                    agent_id=agent_id, kind=EpisodeKind.document, title=d.title, content=piece,
                    client_id=d.id, timestamp=d.timestamp or now, seq=seq, metadata={**metadata, "chunk": i},
                ))
                seq += 1
        return out

    def _observation(self, m: MessageIn, at: datetime) -> dict[str, Any]:
        """A tool result is the world at one moment: which tool, its normalised arguments, and until
        when the result holds (the tool's TTL, else the default)."""
        tool = (m.name or "tool").strip()
        ttl = self.world.tool_ttl.get(tool, self.world.tool_ttl_seconds)
        args = (m.metadata or {}).get("arguments", (m.metadata or {}).get("args"))
        return {"tool": tool, "arguments": normalise_arguments(args),
                "expires_at": plus_seconds(at, ttl).isoformat()}

    def ingest(
        self, user_id: str, session_id: str | None, agent_id: str | None,
        messages: Sequence[MessageIn], documents: Sequence[DocumentIn], metadata: dict | None = None,
    ) -> IngestResult:
        with self.user_write(user_id):
            return self._ingest(user_id, session_id, agent_id, messages, documents, metadata)

    def persist(
        self, user_id: str, session_id: str | None, agent_id: str | None,
        messages: Sequence[MessageIn], documents: Sequence[DocumentIn], metadata: dict | None = None,
    ) -> tuple[IngestResult, list[str]]:
        """Step 1 only: store and acknowledge. `pending` lists every message or document of the write
        that is not extracted and searchable yet (all of it, unless a retry of what is); returned with
        the write's episode ids, for `process_writes` (or the sweep) to do the rest."""
        with self.user_write(user_id):
            with self.lock:
                episodes, result = self._persist(user_id, session_id, agent_id, messages, documents, metadata or {})
            self._report_pending(user_id, episodes, result)
            return result, list(dict.fromkeys(e.id for e in episodes))

    def process_writes(self, user_id: str, writes: Sequence[QueuedWrite]) -> int:
        """Extract and index these writes of the user (each the episode ids one request stored, in
        order), each as one batch, as if it had been waited for, and put each one's result in it. The
        next write is extracted (no lock held: it reads no store) while the one before is stored and
        indexed under the user's write, which is let go in between: a new write of the user is stored
        meanwhile, and queued behind these. What is processed already or gone is skipped. Returns how
        many episodes were finished."""
        with self.lock:
            found = {e.id: e for e in self.graph.get_episodes(user_id, [i for w in writes for i in w.episode_ids])}
            batches = [(w, self._claim([found[i] for i in dict.fromkeys(w.episode_ids)
                                        if i in found and not found[i].processed])) for w in writes]
        batches = [(w, b) for w, b in batches if b]
        done = 0
        upcoming: Future | None = None
        try:
            for k, (write, batch) in enumerate(batches):
                prepared = upcoming if upcoming is not None else _now(self._prepare, batch, write.result)
                upcoming = None
                if k + 1 < len(batches):
                    following, after = batches[k + 1]
                    upcoming = self._next.submit(self._prepare, after, following.result)
                with self.user_write(user_id):
                    try:
                        ex, ahead = prepared.result()
                        if ex is None:
                            continue  # the extractor's backend is down: pending, for the sweep
                        self._finish(batch, ex, ahead, write.result)
                    except Exception as exc:
                        if transient(exc):
                            raise
                        self._failed(batch, exc, write.result, retried=False)
                done += len(batch)
        finally:
            if upcoming is not None and not upcoming.cancel():
                upcoming.exception()  # a running extraction ends before its episodes are released
            self._release([e for _, b in batches for e in b])
        return done

    def merge_queued(self, user_id: str, stored: IngestResult, write: QueuedWrite) -> IngestResult:
        """The answer to a waited write the background processed: what `persist` stored, with what
        the processing found, and `pending` for what is still not searchable."""
        found = write.result
        result = stored.model_copy(update={
            "pending": [], "notes": found.notes, "entities": found.entities, "relations": found.relations,
            "skipped_small_talk": found.skipped_small_talk, "extractor": found.extractor,
            "warnings": stored.warnings + found.warnings})
        self._report_pending(user_id, self.graph.get_episodes(user_id, write.episode_ids), result)
        return result

    @contextmanager
    def user_write(self, user_id: str) -> Iterator[None]:
        """The user's writes one at a time: in this process (a lock per user) and across the processes
        on the same store (its write lease, e.g. API replicas on one Neo4j). Taken before `self.lock`.
        A thread that holds it already (a delete asked for while its own write extracts) goes on."""
        held = self._holding.__dict__.setdefault("users", set())
        if user_id in held:
            yield
            return
        with self._user_lock(user_id), self.graph.write_lease(user_id):
            held.add(user_id)
            try:
                yield
            finally:
                held.discard(user_id)

    def _user_lock(self, user_id: str) -> threading.Lock:
        with self.lock:
            return self._users[user_id]

    def _ingest(
        self, user_id: str, session_id: str | None, agent_id: str | None,
        messages: Sequence[MessageIn], documents: Sequence[DocumentIn], metadata: dict | None = None,
    ) -> IngestResult:
        with self.lock:
            episodes, result = self._persist(user_id, session_id, agent_id, messages, documents, metadata or {})
            # the whole write is processed now, with what earlier requests stored but could not finish
            # (a store failed mid-way) up to BACKLOG of them, oldest first; the sweep does the rest
            todo = self._claim(self.graph.pending_episodes(BACKLOG + len(episodes), user_id=user_id)
                               if result.stored or result.duplicates else [])
        try:
            self._process_all(todo, result)
        finally:
            self._release(todo)
        # what another thread had, and all of it after a failure (which always warns), as stored now
        mine = {e.id for e in todo}
        self._report_pending(user_id, episodes if result.warnings else [e for e in episodes if e.id not in mine],
                             result)
        return result

    def _persist(
        self, user_id: str, session_id: str | None, agent_id: str | None,
        messages: Sequence[MessageIn], documents: Sequence[DocumentIn], metadata: dict,
    ) -> tuple[list[Episode], IngestResult]:
        """Store the write's episodes in one transaction (call under self.lock): once this returns,
        the write is acknowledged."""
        episodes = self.build_episodes(user_id, session_id, agent_id, messages, documents, metadata)
        self._check_conflicts(user_id, episodes)
        self.graph.ensure_user(user_id)
        received = utcnow()  # server time: a session's TTL runs from it, whatever the client's timestamps
        with self.graph.batch():
            added = self.graph.add_episodes(episodes)
            if session_id is not None:
                self.graph.touch_sessions(user_id, [session_id], received)
            actor = f"agent:{agent_id}" if agent_id else "api"
            self.graph.add_audit([audit_event(user_id, actor, "create", e.id, None, at=received,
                                              item_kind="memory", session_id=e.session_id) for e in added])
        added_ids = {e.id for e in added}
        return episodes, IngestResult(
            stored=list(dict.fromkeys(e.client_id or e.id for e in added)),
            duplicates=list(dict.fromkeys(e.client_id or e.id for e in episodes if e.id not in added_ids)),
        )

    def _process_all(self, todo: list[Episode], result: IngestResult) -> None:
        """Process claimed episodes PROCESS_BATCH at a time; stops when the extractor's backend is down
        (the rest waits for the sweep too)."""
        for start in range(0, len(todo), PROCESS_BATCH):
            if not self._process(todo[start:start + PROCESS_BATCH], result):
                break

    def _report_pending(self, user_id: str, unsure: list[Episode], result: IngestResult) -> None:
        """Add to `result.pending` every episode of the write that is still not processed: the
        acknowledgement says what is not searchable yet, whatever the reason."""
        if not unsure:
            return
        left = {e.id for e in self.graph.get_episodes(user_id, list(dict.fromkeys(e.id for e in unsure)))
                if not e.processed}
        result.pending = list(dict.fromkeys(result.pending + [e.client_id or e.id for e in unsure if e.id in left]))

    def _claim(self, episodes: list[Episode]) -> list[Episode]:
        """The episodes no other thread is processing, now claimed by this one (call under self.lock)."""
        mine = [e for e in episodes if e.id not in self._claimed]
        self._claimed.update(e.id for e in mine)
        return mine

    def _release(self, episodes: list[Episode]) -> None:
        with self.lock:
            self._claimed.difference_update(e.id for e in episodes)

    def _check_conflicts(self, user_id: str, episodes: Sequence[Episode]) -> None:
        seen: dict[str, str] = {}
        for ep in episodes:
            if ep.id in seen and seen[ep.id] != ep.content:
                raise Conflict(f"id {ep.client_id!r} appears twice in the request with different content")
            seen[ep.id] = ep.content
        keyed = [e for e in episodes if e.client_id]
        # a message's and a document's id name one memory each (GET /v1/users/{u}/memories/{id})
        messages = {e.client_id or "" for e in keyed if e.kind == EpisodeKind.message}
        both = sorted(messages & {e.client_id or "" for e in keyed if e.kind == EpisodeKind.document})
        if both:
            raise InvalidInput(f"id {both[0]!r} is given to a message and to a document; each needs an id of its own")
        other = {_other_kind(user_id, e): e.client_id for e in keyed}
        taken = self.graph.get_episodes(user_id, list(other))
        if taken:
            kind = "document" if taken[0].kind == EpisodeKind.document else "message"
            raise Conflict(f"id {other[taken[0].id]!r} was already given to a {kind} of this user; a message and a "
                           "document need ids of their own")
        stored = {e.id: e for e in self.graph.get_episodes(user_id, [e.id for e in keyed])}
        for ep in keyed:
            old = stored.get(ep.id)
            if old is not None and old.content != ep.content:
                raise Conflict(
                    f"id {ep.client_id!r} was already stored for this user with different content; "
                    "ids are idempotency keys, use a new id for new content"
                )

    # --- step 2: process -----------------------------------------------------------------------
    def process_pending(self, skip: Callable[[str], bool] = lambda user_id: False,
                        stop: Callable[[], bool] | None = None) -> int:
        """Finish episodes left pending by a crash or a failed extraction, but those of users `skip`
        says someone else is on (the background, in order) and quarantined ones; each is tried once,
        and `stop` (asked between batches) ends it early. Returns how many were finished."""
        done = 0
        tried: set[str] = set()
        while not (stop and stop()):
            with self.lock:
                batch = self._claim([e for e in self.graph.pending_episodes(500)
                                     if e.id not in tried and not skip(e.user_id)])
            if not batch:
                return done
            tried.update(e.id for e in batch)
            try:
                by_user: dict[str, list[Episode]] = defaultdict(list)
                for ep in batch:
                    by_user[ep.user_id].append(ep)
                for user_id, eps in by_user.items():
                    with self.user_write(user_id), acting_for(user_id):
                        self._process(eps, IngestResult())
                    done += sum(1 for e in self.graph.get_episodes(user_id, [e.id for e in eps]) if e.processed)
            finally:
                self._release(batch)
        return done

    def _extract(self, episodes: list[Episode], result: IngestResult) -> Extraction | None:
        """The extractor's output; on its failure the fallback's, or None to retry later. Runs with no
        lock held: an LLM call may take seconds, and other writes go on meanwhile."""
        # tool results are observations of the world: no notes, relations or entities come from them;
        # nor does any extractor read metadata (which then need not travel to an extraction process)
        source = [e.model_copy(update={"metadata": {}}) for e in episodes if e.role != Role.tool]
        try:
            return self.extractor.extract(source)
        except (HippographError, ValidationError) as exc:
            reason = f"{self.extractor.name} failed: {exc}"
            if self.fallback is None:
                if not transient(exc):
                    raise  # the messages may be the cause: `_failed` finds which
                log.warning("extraction of %d episodes deferred: %s", len(episodes), reason)
                result.pending += [e.client_id or e.id for e in episodes]
                result.warnings.append(f"extraction deferred, retried later ({reason})")
                return None
            log.warning("extracting %d episodes with %s instead: %s", len(episodes), self.fallback.name, reason)
            result.warnings.append(f"extracted with {self.fallback.name} instead ({reason})")
            ex = self.fallback.extract(source)
            ex.extractor = f"{self.fallback.name}:fallback"
            return ex

    def _process(self, episodes: list[Episode], result: IngestResult, retried: bool = False) -> bool:
        """Extract, store what was found, index it, mark the episodes processed. The caller holds the
        user's write (`user_write`); `self.lock` is held only for the graph store steps, so other users'
        writes extract and embed meanwhile. False when the extractor's backend is down (the episodes
        stay pending); a failure of the episodes themselves is `_failed`'s, a store's is raised."""
        try:
            ex, ahead = self._prepare(episodes, result)
            if ex is None:
                return False
            self._finish(episodes, ex, ahead, result)
        except Exception as exc:
            if transient(exc):
                raise
            self._failed(episodes, exc, result, retried)
        return True

    def _failed(self, episodes: list[Episode], exc: Exception, result: IngestResult, retried: bool) -> None:
        """Processing these episodes failed, not for a backend: they are processed again in halves, so
        that the one that fails them (if one does) holds back none of the others and is found in a few
        steps, and a failure of one alone counts towards its quarantine (`hippograph.failures`)."""
        if len(episodes) == 1:  # still pending (or quarantined): the write's answer says so from the store
            result.warnings.append(self.failures.count(episodes[0], exc))
            return
        if not retried:
            log.warning("processing %d episodes of user %r failed (%s): processed again in halves", len(episodes),
                        episodes[0].user_id, reason_of(exc))
            result.warnings.append(f"{len(episodes)} messages were processed again in smaller batches after: "
                                   f"{reason_of(exc)}")
        half = len(episodes) // 2
        for part in (episodes[:half], episodes[half:]):
            self._process(part, result, retried=True)

    def _tenant(self, user_id: str) -> str | None:
        """The tenant of a user (owner key), when a deployment gave any tenant slots of its own."""
        if self.notes.learned is None or not self.notes.learned.tenant_slots:
            return None
        found = self.graph.owners([user_id]).get(user_id)
        return found[0] if found else None

    def _prepare(self, episodes: list[Episode], result: IngestResult) -> tuple[Extraction | None, Future | None]:
        """The extraction (None: it failed, the episodes stay pending) and the messages' vectors, made
        meanwhile on another core (the model runs without the interpreter lock). Reads no store."""
        said = [episode_text(e) for e in episodes if e.role != Role.tool]
        judged = [e.content for e in episodes if e.role == Role.user and e.kind == EpisodeKind.message] if (
            self.notes.learned is not None and self.extractor.name == "spacy") else []  # its clauses are judged
        ahead = self._ahead.submit(self._embed_ahead, said, judged) if said else None
        return self._extract(episodes, result), ahead

    def _embed_ahead(self, said: list[str], judged: list[str]) -> dict[str, list[float]]:
        """The messages' vectors; before them, those the learned judgement will read of the `judged` messages'
        clauses (`LearnedNotes.foresee`: it reads them first), which it makes again if this fails."""
        if judged and self.notes.learned is not None:
            try:
                self.notes.learned.foresee(judged)
            except HippographError as exc:
                log.warning("embedding the clauses ahead failed: %s", exc)
        return self.indexer.embed(said)

    def _finish(self, episodes: list[Episode], ex: Extraction, ahead: Future | None, result: IngestResult) -> None:
        if self.notes.learned is not None and ex.clauses:  # which clauses are notes: the learned judgement says
            ex = ex.model_copy(update={"notes": self.notes.learned.notes(episodes, ex, self._tenant(episodes[0].user_id),
                                                                         helper=self._ahead)})
        elif self.notes.learned is not None:  # an LLM's notes on the catalogue: written as the judgement's own
            ex = ex.model_copy(update={"notes": self.notes.learned.adopt(ex.notes)})
        ex = bounded(ex)
        names = {e.id: e.client_id or e.id for e in episodes}
        result.warnings += [f"{names.get(ep, ep)}: {why}" for ep, why in ex.incomplete.items()]
        if self.resolver is not None:
            ex = self.resolver(self.graph, episodes[0].user_id, ex)
        with self.lock:
            # an episode deleted while it was being extracted (no lock held) must not come back, and one
            # another process finished meanwhile (its sweep, under the user's lease) is not stored twice
            alive = {e.id for e in self.graph.get_episodes(episodes[0].user_id, [e.id for e in episodes])
                     if not e.processed}
            if len(alive) < len(episodes):
                episodes, ex = [e for e in episodes if e.id in alive], only_from(ex, alive)
            if not episodes:
                return
            records, stale = self._store(episodes, ex, result)
        # embedding is the slow part: done with no store lock held (the user's write still is, so
        # nothing of this user's changes meanwhile); the episodes stay pending until it is done
        known: dict[str, list[float]] = {}
        if ahead is not None:
            try:
                known = ahead.result()
            except HippographError as exc:  # embedded again below, where a failure fails the step
                log.warning("embedding ahead failed: %s", exc)
        if self.notes.learned is not None:  # the judgement's vectors: of the clauses, and kept of the notes
            rest = [r for r in records if r.text not in known]
            known = {**known, **self.notes.learned.known(
                [r.text for r in rest], [r.text for r in rest if r.kind == MemoryKind.note], helper=self._ahead)}
        self.indexer.store.delete(stale)
        # the notes and relation facts are embedded once the parse is done, when its core is free: half
        # of them there
        self.indexer.index(records, known, helper=self._ahead)
        self.graph.mark_processed([e.id for e in episodes], result.extractor or self.extractor.name)

    def _store(self, episodes: list[Episode], ex: Extraction, result: IngestResult) -> tuple[list[VectorRecord], list[str]]:
        """Write what the extraction found to the graph store; returns the records to index and the
        ids (superseded notes and relations) to take out of the index."""
        user_id = episodes[0].user_id
        extractor = ex.extractor or self.extractor.name
        user = self.graph.ensure_user(user_id)
        when = {e.id: e.timestamp for e in episodes}
        small = set(ex.small_talk)
        observations = {e.id for e in episodes if e.role == Role.tool}  # nor are they indexed as memories
        stale: list[str] = []  # superseded notes and relations, to leave the index
        with self.graph.batch():
            by_name = self._resolve(user_id, user, ex)
            relations = self._relations(user_id, user, ex, by_name, when, stale)
            texts = {e.id: e.content for e in episodes if e.role == Role.user}
            notes = self.notes.write(user_id, ex, when, result.notes, stale, f"extractor:{extractor}", texts)
            for ep_id, names in ex.mentions.items():
                self.graph.link_mentions(ep_id, [by_name[n].id for n in names if n in by_name])
            self.graph.set_indexed(list(small | observations), False)
        indexed = [e for e in episodes if e.id not in small and e.id not in observations]
        lemmas = lemma_words(self.indexer, indexed, ex.lemmas)
        records = [episode_record(e, lemmas.get(e.id, "")) for e in indexed]
        records += [note_record(n) for n in notes if n.id not in stale]
        records += [relation_record(r) for r in relations if r.id not in stale]
        result.extractor = extractor
        result.entities = sorted({e.name for e in by_name.values() if not e.is_user})
        result.relations = list(dict.fromkeys(r.id for r in relations))
        result.skipped_small_talk = [e.client_id or e.id for e in episodes if e.id in small]
        return records, stale

    def _resolve(self, user_id: str, user: Entity, ex: Extraction) -> dict[str, Entity]:
        types = {e.name: e.type for e in ex.entities}
        names = list(dict.fromkeys(
            [e.name for e in ex.entities]
            + [n for r in ex.relations for n in (r.subject, r.object)]
        ))
        names = [n for n in names if n != USER]
        stored = self.graph.resolve_entities(
            user_id, [Entity(id="", user_id=user_id, name=n, type=types.get(n, "Thing")) for n in names]
        )
        by_name = dict(zip(names, stored, strict=True))
        by_name[USER] = user
        return by_name

    def _relations(
        self, user_id: str, user: Entity, ex: Extraction, by_name: dict[str, Entity], when: dict[str, datetime],
        stale: list[str],
    ) -> list[Relation]:
        """Store the relations; returns every one touched (new or merged), all to be (re)indexed."""
        touched: list[Relation] = []
        for r in ex.relations:
            src, tgt = by_name[r.subject], by_name[r.object]
            at = when.get(r.episode_id, utcnow())
            if src.id == user.id and r.predicate in SINGLE_VALUED_PREDICATES:
                old = [x.id for x in self.graph.current_relations(user_id, src.id, r.predicate)
                       if x.target_id != tgt.id]
                self.graph.invalidate_relations(old, at)
                stale += old
            rel = Relation(id=new_id("rel"), user_id=user_id, source_id=src.id, target_id=tgt.id,
                           predicate=r.predicate, fact=r.fact, valid_at=at, source_episode_ids=[r.episode_id])
            touched.append(self.graph.add_relations([rel])[0])
        return touched

def _now(work: Callable[..., Any], *args: Any) -> Future:
    """`work(*args)` run here, as a finished future: its result, or what it raised."""
    done: Future = Future()
    try:
        done.set_result(work(*args))
    except Exception as exc:  # noqa: BLE001 - handed over with the future, as a thread pool would
        done.set_exception(exc)
    return done


def _other_kind(user_id: str, ep: Episode) -> str:
    """The episode id the client's id of `ep` has as the other kind: a message's first document piece,
    or a document's message."""
    assert ep.client_id is not None
    if ep.kind == EpisodeKind.message:
        return stable_id("ep", user_id, ep.client_id, "0")
    return stable_id("ep", user_id, ep.client_id)

