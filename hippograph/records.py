"""What the stores keep of an episode besides the record itself: the text that is embedded and shown,
a document's pieces, a tool call's normalised arguments, and the vector records of episodes, notes and
relations (the write path makes them, and so do the repairs and the forgetting cascade)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hippograph.dates import dates_said
from hippograph.models import Episode, EpisodeKind, MemoryKind, Note, Relation, VectorRecord
from hippograph.vectors.indexer import Indexer

DOCUMENT_CHUNK_CHARS = 1200
#: the field of a message's vector record that keeps what its relative dates mean (`dates.dates_said`)
DATES_FIELD = "dates"


def episode_text(ep: Episode) -> str:
    """What gets embedded and shown: the speaker (or title) with the content."""
    if ep.kind == EpisodeKind.document:
        return f"{ep.title}: {ep.content}" if ep.title else ep.content
    speaker = ep.name or (ep.role.value if ep.role else "")
    return f"{speaker}: {ep.content}" if speaker else ep.content


def chunk_text(text: str, limit: int = DOCUMENT_CHUNK_CHARS) -> list[str]:
    """Split a document at paragraph or sentence ends into pieces of at most ~limit characters."""
    if len(text) <= limit:
        return [text]
    pieces, current = [], ""
    for para in text.replace("\r", "").split("\n"):
        for sent in para.replace(". ", ".\n").split("\n"):
            if current and len(current) + len(sent) + 1 > limit:
                pieces.append(current.strip())
                current = ""
            current += sent + " "
    if current.strip():
        pieces.append(current.strip())
    return [p[i:i + limit] for p in pieces for i in range(0, len(p), limit)]


def normalise_arguments(args: Any) -> str:
    """Tool arguments as canonical JSON (keys sorted, strings trimmed and case-folded), so the same call
    written differently is recognised as the same call."""
    def canon(value: Any) -> Any:
        if isinstance(value, dict):
            return {str(k).strip().casefold(): canon(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [canon(v) for v in value]
        return " ".join(value.split()).casefold() if isinstance(value, str) else value
    if args is None:
        return "{}"
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return json.dumps(canon(args))
    return json.dumps(canon(args), sort_keys=True, separators=(",", ":"), default=str)


def lemma_words(indexer: Indexer, episodes: Sequence[Episode],
                known: dict[str, list[tuple[str, str]]] | None = None) -> dict[str, str]:
    """Each episode's lemma words for the lexical index (`hippograph.vectors.lemmas`), from the (word,
    lemma) pairs the extractor already found, or tagged now for the episodes it did not tag; empty when
    lemmas are not indexed."""
    if indexer.lemmas is None or not episodes:
        return {}
    known = known or {}
    untagged = [e for e in episodes if e.id not in known]
    pairs = dict(known) | dict(zip((e.id for e in untagged), indexer.lemmas.pairs_of([e.content for e in untagged]),
                                   strict=True))
    return {e.id: indexer.lemmas.words(pairs[e.id]) for e in episodes}


def episode_record(e: Episode, lemmas: str = "") -> VectorRecord:
    """A message is also searched by the dates its relative ones mean ("yesterday" said on 8 May 2023:
    7 May 2023), and an episode by its `lemmas` (`lemma_words`); by words only: the embedding is of what
    was said. A message's record keeps those dates (`DATES_FIELD`, "" for none), so that a context block
    shows them without reading the message again."""
    extra: dict[str, str] = episode_extra(e)
    dates = ""
    if e.kind == EpisodeKind.message:
        dates = extra[DATES_FIELD] = dates_said(e.content, e.timestamp)
    return VectorRecord(id=e.id, user_id=e.user_id, kind=MemoryKind.episode, text=episode_text(e),
                        session_id=e.session_id, timestamp=e.timestamp, source_ids=[e.client_id or e.id],
                        extra=extra, lexical_extra=" ".join(w for w in (dates, lemmas) if w))


def episode_extra(e: Episode) -> dict[str, str]:
    """The filterable fields of a message or document: its role, and who said it (lower-cased)."""
    extra = {"role": e.role.value if e.role else e.kind.value}
    if e.name and e.kind == EpisodeKind.message:
        extra["speaker"] = e.name.lower()
    return extra


def note_record(n: Note) -> VectorRecord:
    return VectorRecord(id=n.id, user_id=n.user_id, kind=MemoryKind.note, text=n.text, timestamp=n.valid_at,
                        source_ids=n.source_episode_ids, extra={"note_kind": n.kind.value})


def relation_record(r: Relation) -> VectorRecord:
    return VectorRecord(id=r.id, user_id=r.user_id, kind=MemoryKind.relation, text=r.fact, timestamp=r.valid_at,
                        source_ids=r.source_episode_ids, extra={"predicate": r.predicate})
