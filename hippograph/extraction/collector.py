"""What the spaCy extractor's readers find, deduplicated, and the Extraction built from it."""

from __future__ import annotations

from hippograph.extraction.base import (
    USER,
    Clause,
    ExtractedEntity,
    ExtractedNote,
    ExtractedRelation,
    Extraction,
)
from hippograph.extraction.rules import merged
from hippograph.models import NoteKind


class Collector:
    """Deduplicates what the readers find and builds the Extraction."""

    def __init__(self) -> None:
        self.entities: dict[str, ExtractedEntity] = {}
        self.relations: dict[tuple[str, str, str], ExtractedRelation] = {}
        self.notes: dict[str, ExtractedNote] = {}
        self.mentions: dict[str, dict[str, None]] = {}
        self.small_talk: list[str] = []
        self.lemmas: dict[str, list[tuple[str, str]]] = {}
        self.incomplete: dict[str, str] = {}
        self.clauses: dict[str, list[Clause]] = {}

    def entity(self, name: str, type_: str, episode_id: str, strong: bool = False) -> None:
        """Record an entity; a specific type beats Thing/Concept, a `strong` one beats NER's guess."""
        if name == USER:
            return
        known = self.entities.setdefault(name.lower(), ExtractedEntity(name=name, type=type_))
        if strong or (known.type in ("Thing", "Concept") and type_ not in ("Thing", "Concept")):
            known.type = type_
        self.mentions.setdefault(episode_id, {})[known.name] = None

    def relation(self, relation: ExtractedRelation) -> None:
        key = (relation.subject.lower(), relation.predicate, relation.object.lower())
        self.relations.setdefault(key, relation)

    def note(self, note: ExtractedNote) -> None:
        same = self.notes.pop(note.slot, None)  # the last note of a slot wins, in its own position
        merge = same is not None and same.episode_id == note.episode_id and note.kind == same.kind == NoteKind.preference
        if merge and same is not None and same.text.lower() != note.text.lower():  # "CSV please. I can't stand xlsx"
            note = note.model_copy(update={"text": merged(same.text, note.text[:1].lower() + note.text[1:])})
        self.notes[note.slot] = note

    def result(self, extractor: str) -> Extraction:
        mentions = {episode: list(names) for episode, names in self.mentions.items()}
        return Extraction(entities=list(self.entities.values()), relations=list(self.relations.values()),
                          notes=list(self.notes.values()), mentions=mentions, small_talk=self.small_talk,
                          lemmas=self.lemmas, incomplete=self.incomplete, clauses=self.clauses,
                          extractor=extractor)  # fmt: skip
