"""Messages whose processing fails: counted, retried a bounded number of times, then quarantined.

A failure of a backend (a store or a model server down, the disk full) says nothing of the messages:
their episodes stay pending and are tried again, however often, with no attempt counted. Any other
failure may come from the messages themselves (a text that meets a bug, a value a store refuses): the
ingestor then processes each message of the batch alone, so that one message cannot fail its
neighbours, and a message that fails alone has the attempt counted here. After `max_attempts` it is
quarantined: kept (still readable and deletable by id), listed by GET /v1/admin/quarantine and
`hippograph doctor`, and no longer tried by the user's later writes, the sweep or a start-up, until an
admin releases it. One log line says which message and why.
"""

from __future__ import annotations

import logging

from hippograph.errors import BackendUnavailable, ExtractionStalled, HippographError, InsufficientStorage
from hippograph.graph.base import GraphStore
from hippograph.models import Episode, utcnow

log = logging.getLogger("hippograph.ingest")

REASON_CHARS = 500  # of an error's message, kept with the episode


def transient(exc: BaseException) -> bool:
    """A failure of a backend or the disk, not of the messages (the extraction process stalling on a
    call may be the messages' doing, so it counts)."""
    return isinstance(exc, BackendUnavailable | InsufficientStorage) and not isinstance(exc, ExtractionStalled)


def reason_of(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    text = text if len(text) <= REASON_CHARS else text[:REASON_CHARS - 1] + "…"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Failures:
    def __init__(self, graph: GraphStore, max_attempts: int = 3) -> None:
        self.graph = graph
        self.max_attempts = max_attempts

    def count(self, episode: Episode, exc: BaseException) -> str:
        """Count a failed attempt at one episode; returns the warning for the write's answer."""
        reason = reason_of(exc)
        quarantined = self.graph.record_failure([episode.id], reason, utcnow(), self.max_attempts)
        attempt = min(episode.attempts + 1, self.max_attempts)
        name = episode.client_id or episode.id
        tenant, user = self.graph.owners([episode.user_id]).get(episode.user_id, ("?", episode.user_id))
        if quarantined:
            log.error("message %r of user %r (tenant %r) quarantined after %d failed attempts: %s",
                      name, user, tenant, attempt, reason)
            return (f"{name}: quarantined after {attempt} failed attempts at processing it ({reason}); it is kept "
                    "but not searchable, an admin sees it at GET /v1/admin/quarantine")
        log.warning("processing message %r of user %r (tenant %r) failed, attempt %d of %d: %s",
                    name, user, tenant, attempt, self.max_attempts, reason,
                    exc_info=None if isinstance(exc, HippographError) else exc)  # a bug: where it is
        return (f"{name}: processing failed ({reason}); it is stored and tried again later (attempt {attempt} of "
                f"{self.max_attempts})")
