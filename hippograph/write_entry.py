"""The write entry of the service (`Hippograph` takes it in): a write stored and extracted before the
answer, or stored and left to the background threads ("wait": false), and what follows a write (the
session summary rolled forward)."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

from hippograph.background import Background
from hippograph.errors import HippographError, InvalidInput
from hippograph.extraction.tool_output import essentials
from hippograph.ingest import Ingestor, IngestResult, QueuedWrite
from hippograph.inputs import check_words
from hippograph.lifecycle import SessionKeeper
from hippograph.llm.usage import acting_for
from hippograph.models import DocumentIn, MessageIn, Role
from hippograph.storage_guard import StorageGuard

log = logging.getLogger("hippograph.service")

F = TypeVar("F", bound=Callable[..., Any])


def for_user(method: F) -> F:
    """Model calls made inside count for the user the method serves (its first argument)."""
    @functools.wraps(method)
    def wrapper(self: Any, user_id: str, *args: Any, **kwargs: Any) -> Any:
        with acting_for(user_id):
            return method(self, user_id, *args, **kwargs)
    return cast(F, wrapper)


class WriteEntry:
    """What `Hippograph.remember` needs, set by `Hippograph.__init__`."""

    ingestor: Ingestor
    sessions: SessionKeeper
    background: Background
    guard: StorageGuard
    max_backlog: int
    max_content_chars: int
    max_word_chars: int
    _queued_sessions: dict[str, set[str]]  # user -> sessions written to without waiting
    _queued_lock: threading.Lock

    @for_user
    def remember(
        self, user_id: str, session_id: str | None = None, agent_id: str | None = None,
        messages: Sequence[MessageIn] = (), documents: Sequence[DocumentIn] = (), metadata: dict | None = None,
        wait: bool = True,
    ) -> IngestResult:
        """Store a write and, with `wait`, extract and index it before returning. Without: return once
        it is stored (acknowledged; `pending` lists what is not searchable yet) and leave extraction to
        the background threads; `memory_status` says when it is done."""
        self.check_sizes(messages, documents)
        self.guard.check("storing messages")
        self.sessions.expire(user_id)  # an idle session is gone before anything new joins it
        queued = None
        with self.ingestor.user_write(user_id):
            if (not wait and self.background.queued_episodes < self.max_backlog) or self.background.has(user_id):
                # stored now; extracted by the background, after the user's writes queued there before it
                result, episode_ids = self.ingestor.persist(user_id, session_id, agent_id, messages, documents,
                                                            metadata)
                if result.pending:
                    if session_id is not None:
                        with self._queued_lock:
                            self._queued_sessions.setdefault(user_id, set()).add(session_id)
                    queued = QueuedWrite(episode_ids)
                    self.background.submit(user_id, queued)
                if not wait or queued is None:
                    return result
            else:
                # waited for (or past max_backlog messages waiting for the background already, which slows
                # this client down instead of letting the backlog grow): extracted before the answer
                result = self.ingestor.ingest(user_id, session_id, agent_id, messages, documents, metadata)
                if session_id is not None and result.stored:
                    self._summarize(user_id, session_id)
                return result
        queued.done.wait()  # a waited write behind unwaited ones of the same user
        return self.ingestor.merge_queued(user_id, result, queued)

    def _process_queued(self, user_id: str, writes: Sequence[QueuedWrite]) -> int:
        with acting_for(user_id):
            return self.ingestor.process_writes(user_id, writes)

    def _summarize_queued(self, user_id: str) -> None:
        with self._queued_lock:
            sessions = self._queued_sessions.pop(user_id, set())
        for session_id in sorted(sessions):
            self._summarize(user_id, session_id)

    def check_sizes(self, messages: Sequence[MessageIn] = (), documents: Sequence[DocumentIn] = ()) -> None:
        """A message or document over HIPPOGRAPH_MAX_CONTENT_CHARS, or with a word (a run without whitespace)
        over HIPPOGRAPH_MAX_WORD_CHARS as it would be stored, is refused before anything is written (the API
        checks before it registers a new user, too)."""
        limit = self.max_content_chars
        cut = self.ingestor.tool_output_chars
        for field_name, items, attr in (("messages", messages, "content"), ("documents", documents, "text")):
            for i, item in enumerate(items):
                text = getattr(item, attr)
                if len(text) > limit:
                    raise InvalidInput(
                        f"{field_name}[{i}].{attr}: {len(text)} characters is over the limit of "
                        f"{limit} (HIPPOGRAPH_MAX_CONTENT_CHARS); split it into several messages or documents"
                    )
                if getattr(item, "role", None) == Role.tool and len(text) > cut:
                    text = essentials(text, cut)  # what is stored of a long tool result
                check_words(f"{field_name}[{i}].{attr}", text, self.max_word_chars)

    def _summarize(self, user_id: str, session_id: str) -> None:
        """Roll the session summary forward; the write is already stored, so a failure here is logged
        and retried by the next write to the session, never reported as a failed write."""
        try:
            self.sessions.summarize(user_id, session_id)
        except HippographError as exc:
            log.warning("summary of session %r of user %r not updated: %s", session_id, user_id, exc)
