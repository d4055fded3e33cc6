"""Extraction by an LLM behind any OpenAI-compatible endpoint, into the same `Extraction` as spaCy's.

Messages go in batches (`batch_messages` per call, the batches of one write in parallel up to the
client's concurrency limit) with short ids; the answer is checked against the batch: unknown message
ids, empty names and predicates that cannot be relationship types are dropped, never trusted. Any
failure raises (BackendUnavailable for the endpoint, ExtractionError for unusable answers): the write
path then falls back to spaCy or keeps the messages pending, as configured.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache

from hippograph.extraction.base import (
    USER,
    ExtractedEntity,
    ExtractedNote,
    ExtractedRelation,
    Extraction,
    Judged,
)
from hippograph.extraction.prompts import extract as p
from hippograph.extraction.rules import is_small_talk, slug, split_speaker
from hippograph.llm.client import LLMClient
from hippograph.llm.usage import acting_for, current_user
from hippograph.models import Episode, NoteKind

_PREDICATE = re.compile(r"^[A-Z][A-Z0-9_]{0,49}$")
_SLOT = re.compile(r"[^a-z0-9:_]+")


def predicate(raw: str) -> str | None:
    """'works at' / 'worksAt' / 'WORKS-AT' -> 'WORKS_AT'; None if nothing usable is left."""
    text = re.sub(r"([a-z])([A-Z])", r"\1_\2", raw.strip())
    text = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").upper()
    return text if _PREDICATE.match(text) else None


def slot(kind: str, raw: str) -> str:
    text = _SLOT.sub("_", raw.strip().lower()).strip("_:")
    return text if text.startswith(f"{kind}:") else f"{kind}:{text or 'general'}"


def catalogued(note: p.LLMNote, text: str, episode_id: str) -> ExtractedNote:
    """A note of the model's answer in the catalogue's terms (`notes_model/catalogue.json`, the learned
    judgement's): its slot ("city"; "pets:rex" and "decision:hosting", by value or subject, for a slot of
    several values or a keyed one), and what the model said of it (`judged`, the act and slot, read by the
    note writer as the learned judgement's own). A slot outside the catalogue keeps the model's own name,
    and the learned slot model, when there is one, gives it its slot (`LearnedNotes.adopt`)."""
    raw = _SLOT.sub("_", note.slot.strip().lower()).strip("_:")
    name = raw.split(":", 1)[-1] if raw.split(":", 1)[0] in ("fact", "preference", "decision") and ":" in raw else raw
    known = _catalogue()
    key = slug(note.subject or text)[:80]
    if note.act == "retracts":
        return ExtractedNote(kind=NoteKind(note.kind), text=text, slot=f"retract:{note.subject or text}",
                             episode_id=episode_id, confidence=note.confidence,
                             judged=Judged(act="retracts", slot=name if name in known else "", by_pair=True,
                                           key=slug(note.subject)[:80] if note.subject else "", vector=[], slots=[]))
    if name not in known:
        return ExtractedNote(kind=NoteKind(note.kind), text=text, slot=slot(note.kind, note.slot), episode_id=episode_id,
                             confidence=note.confidence,
                             judged=Judged(act="states", slot="", by_pair=False, vector=[], slots=[]))
    keyed = known[name]
    return ExtractedNote(kind=NoteKind(note.kind), text=text, slot=f"{name}:{key}" if keyed else name,
                         episode_id=episode_id, confidence=note.confidence,
                         judged=Judged(act="states", slot=name, by_pair=keyed, key=key if keyed else "", vector=[],
                                       slots=[]))


@cache
def _catalogue() -> dict[str, bool]:
    """The catalogue's slots, each with whether its notes are told apart by value or subject."""
    from hippograph.notes_model.corpus import catalogue, paired_slots

    paired = paired_slots()
    return {s["slot"]: s["slot"] in paired for s in catalogue()["slots"]}


class LLMExtractor:
    def __init__(self, client: LLMClient, batch_messages: int = 16) -> None:
        self.client = client
        self.batch_messages = batch_messages
        self.name = client.name

    def load(self) -> object:
        return self.client

    def extract(self, episodes: Sequence[Episode], user_name: str | None = None) -> Extraction:
        batches = [list(episodes[i:i + self.batch_messages]) for i in range(0, len(episodes), self.batch_messages)]
        if not batches:
            return Extraction(extractor=self.name)
        user = current_user.get()

        def run(batch: list[Episode]) -> Extraction:
            with acting_for(user):
                return self._batch(batch, user_name)

        if len(batches) == 1:
            parts = [run(batches[0])]
        else:
            with ThreadPoolExecutor(max_workers=min(len(batches), self.client.settings.max_concurrency)) as pool:
                parts = list(pool.map(run, batches))
        out = Extraction(extractor=self.name)
        for part in parts:
            out.entities += part.entities
            out.relations += part.relations
            out.notes += part.notes
            out.mentions.update(part.mentions)
            out.small_talk += part.small_talk
        return out

    def _batch(self, batch: list[Episode], user_name: str | None) -> Extraction:
        answer = self.client.structured("extract", p.SYSTEM, p.prompt(batch, user_name), p.LLMExtraction)
        return to_extraction(answer, batch, self.name)


def to_extraction(answer: p.LLMExtraction, batch: Sequence[Episode], extractor: str) -> Extraction:
    """The model's answer checked against the batch it was asked about."""
    ids = {p.message_key(i): ep.id for i, ep in enumerate(batch)}
    texts = {ep.id: ep.content for ep in batch}
    user_words = {p.USER_NAME.lower(), "user", "i", "me", "<user>"}

    def name(raw: str) -> str | None:
        text = " ".join(str(raw).split()).strip(" .,;:\"'")
        if not text:
            return None
        return USER if text.lower() in user_words else text[:200]

    entities: dict[str, ExtractedEntity] = {}
    for e in answer.entities:
        n = name(e.name)
        if n is not None and n != USER:
            entities.setdefault(n, ExtractedEntity(name=n, type=(e.type or "Thing").strip()[:40] or "Thing"))
    relations = []
    for r in answer.relations:
        subj, obj, pred, ep = name(r.subject), name(r.object), predicate(r.predicate), ids.get(r.message.strip())
        if subj and obj and pred and ep and subj != obj:
            relations.append(ExtractedRelation(subject=subj, predicate=pred, object=obj,
                                               fact=(r.fact or f"{subj} {pred} {obj}")[:500], episode_id=ep))
            for n in (subj, obj):
                if n != USER:
                    entities.setdefault(n, ExtractedEntity(name=n))
    notes = []
    for note in answer.notes:
        ep = ids.get(note.message.strip())
        text = " ".join(note.text.split())
        if ep and text:
            notes.append(catalogued(note, text[:300], ep))
    mentions: dict[str, list[str]] = {}
    small_talk = []
    for m in answer.messages:
        ep = ids.get(m.message.strip())
        if ep is None:
            continue
        if m.small_talk and is_small_talk(split_speaker(texts[ep])[1]):  # a model may confirm small talk, never drop a message
            small_talk.append(ep)
        names = [n for raw in m.entities if (n := name(raw)) and n != USER]
        for n in names:
            entities.setdefault(n, ExtractedEntity(name=n))
        mentions[ep] = list(dict.fromkeys(mentions.get(ep, []) + names))
    return Extraction(entities=list(entities.values()), relations=relations, notes=notes, mentions=mentions,
                      small_talk=small_talk, extractor=extractor)
