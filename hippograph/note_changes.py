"""Notes that change other notes rather than add one: a retraction ("forget what I said about tables")
retires the current notes it names; a revision ("change of plan: Postgres instead", "switched my editor
to Neovim") takes the slot of the current note it most resembles, so it replaces that note even though
the two are worded apart. The extractor marks them by slot prefix; ingest asks this module what to do."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from hippograph.extraction.rules import word_set
from hippograph.models import Note, NoteKind

RETRACT = "retract:"
REVISE = "revise:"  # "revise:<kind>:<own slot>"; the kind is the one of the notes it may replace
MIN_SIMILARITY = 0.35  # below it, a revision resembles no current note and keeps its own slot
_STOP = word_set("the a an my our your their of in on at to for with and or about thing stuff what i said "
                 "before earlier")

Embed = Callable[[Sequence[str]], list[list[float]]]


def _stems(text: str) -> set[str]:
    return {w[:5] for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP and len(w) > 2}


def retracted(topic: str, current: Sequence[Note]) -> list[Note]:
    """The current notes a retraction names: they share a content word with its topic (compared on the
    first five letters, so 'tables' names 'table' and 'deploys' names 'deploy')."""
    words = _stems(topic)
    return [n for n in current if words & _stems(n.text)] if words else []


def revised(kind: NoteKind, text: str, current: Sequence[Note], embed: Embed | None) -> Note | None:
    """The current note of this kind a revision replaces: the most similar one, by the embedder when
    there is one (paraphrase: 'docs go into the wiki' vs 'documentation lives in Notion'), else by shared
    words; the only note of its kind when nothing is closer."""
    same = [n for n in current if n.kind == kind]
    if not same:
        return None
    if embed is not None:
        vectors = embed([text, *(n.text for n in same)])
        scores = [sum(a * b for a, b in zip(vectors[0], v, strict=True)) for v in vectors[1:]]
    else:
        words = _stems(text)
        scores = [len(words & _stems(n.text)) / max(1, len(words | _stems(n.text))) for n in same]
    best = max(range(len(same)), key=lambda i: scores[i])
    if scores[best] >= MIN_SIMILARITY or len(same) == 1:
        return same[best]
    return None


def revision_kind(slot: str) -> NoteKind | None:
    if not slot.startswith(REVISE):
        return None
    kind = slot[len(REVISE):].split(":", 1)[0]
    return NoteKind(kind) if kind in {k.value for k in NoteKind} else None
