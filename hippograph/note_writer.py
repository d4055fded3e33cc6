"""Tier-2 notes written from an extraction: created, confirmed, superseded by a newer statement about
the same thing (by slot, by near-duplicate wording, by the old value named in a change, by a new role),
retired by a retraction or by the profile cap. Every change goes to the audit log with the notes."""

from __future__ import annotations

import re
from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel

from hippograph.audit import audit_event
from hippograph.config import ProfileSettings
from hippograph.extraction.base import ExtractedNote, Extraction
from hippograph.graph.base import GraphStore
from hippograph.models import AuditEvent, Note, new_id, utcnow
from hippograph.note_changes import (
    RETRACT,
    distinct_subjects,
    named_old,
    retracted,
    revised,
    revision_kind,
    role_changed,
)
from hippograph.vectors.base import Embedder, cosine_zero

if TYPE_CHECKING:
    from hippograph.notes_model.learned import LearnedNotes

_NOTE_STOP = frozenset({"a", "an", "the", "at", "for", "in", "on", "of", "to", "with", "from", "by", "now", "still",
                        "really", "very", "also", "just", "my", "our", "and", "or", "but", "than", "more", "over"})


_SPACE_BEFORE = re.compile(r"\s+([,;:.!?)\]])")


def tidy(text: str) -> str:
    """A note's text as a person writes it: no space before a comma or a closing bracket ("a nurse , mostly
    nights" -> "a nurse, mostly nights"), whoever left it there (the words of the message, or the rules'
    rewriting of them)."""
    return _SPACE_BEFORE.sub(r"\1", text)


class NoteChange(BaseModel):
    id: str
    kind: str
    text: str
    superseded: str | None = None


def note_words(text: str) -> set[str]:
    """The content words of a note, lower-cased, a plural or third-person s dropped."""
    out = set()
    for w in re.findall(r"[a-z0-9]+", text.lower()):
        if w not in _NOTE_STOP:
            out.add(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w)
    return out


def near_duplicates(a: set[str], b: set[str]) -> bool:
    """One note's content words contain the other's (two or more of them), or they share three in four."""
    common = len(a & b)
    if common < 2:
        return False
    return a <= b or b <= a or common / len(a | b) >= 0.75


def confirmed(confidence: float) -> float:
    """An item said again is surer: half the remaining doubt goes, up to 0.99 (1.0 is for a person)."""
    return round(min(0.99, confidence + (1.0 - confidence) / 2), 4)


class NoteWriter:
    def __init__(self, graph: GraphStore, embedder: Embedder, profile: ProfileSettings,
                 learned: LearnedNotes | None = None) -> None:
        self.graph, self.embedder, self.profile = graph, embedder, profile
        self.learned = learned  # decides what a judged note replaces (`ExtractedNote.judged`)

    @staticmethod
    def _near_duplicate(n: ExtractedNote, current: list[Note]) -> Note | None:
        """A current note of the same kind that says nearly the same ("Works at Acme Corp" and "Works
        for Acme Corp now"): the new note replaces it instead of piling up next to it. Two notes of one
        message, or of two known subjects (the city and the job title), are two things said."""
        words = note_words(n.text)
        for note in current:
            if note.kind != n.kind or n.episode_id in note.source_episode_ids or distinct_subjects(n.slot, note.slot):
                continue
            if near_duplicates(words, note_words(note.text)):
                return note
        return None

    def _said_after(self, user_id: str, current: Note, at: datetime) -> bool:
        """Was the current note last said in a message later than `at`? Compared by the messages' own
        times on both sides (a correction is timed by the server, messages may carry the client's);
        a note whose messages are gone counts as said before."""
        said = [e.timestamp for e in self.graph.get_episodes(user_id, current.source_episode_ids)]
        return bool(said) and max(said) > at

    def write(
        self, user_id: str, ex: Extraction, when: dict[str, datetime], changes: list[NoteChange], stale: list[str],
        actor: str, texts: dict[str, str],
    ) -> list[Note]:
        """Create, supersede or confirm notes; returns every one touched, all to be (re)indexed
        (re-indexing an unchanged note is idempotent, and repairs one whose indexing failed). Creations
        and supersessions go to the audit log in the same transaction."""
        touched: list[Note] = []
        events: list[AuditEvent] = []
        for n in ex.notes:
            n = n.model_copy(update={"text": tidy(n.text)})  # compared with the current notes as it is stored
            at = when.get(n.episode_id, utcnow())
            also: list[Note] = []  # more current notes the new one replaces (the judgement's related slots)
            if n.judged is not None and n.judged.vector and self.learned is not None:
                user_notes = self.graph.list_notes(user_id)
                found = [c for c in self.learned.replaced(n.judged, n.text, user_notes)
                         if c.slot == n.slot or n.episode_id not in c.source_episode_ids]  # another slot, same message
                if not found and n.judged.act != "retracts":  # said again in the same words, however unsure
                    found = [c for c in user_notes if note_words(c.text) == note_words(n.text)][:1]
                if n.judged.act == "retracts":
                    for note in found:
                        events += self._retire(user_id, note, at, stale, actor)
                    continue
                current, also = (found[0], found[1:]) if found else (None, [])
            elif n.slot.startswith(RETRACT):
                events += self._retract(user_id, n.slot[len(RETRACT):], at, stale, actor)
                continue
            else:
                current, slot = self._rules_current(user_id, n, texts)
                n = n.model_copy(update={"slot": slot})
            said_again = current is not None and (current.text.lower() == n.text.lower() or (
                n.judged is not None and note_words(current.text) == note_words(n.text)))  # "I live in Seattle."
            if current is not None and said_again:
                if n.episode_id not in current.source_episode_ids:
                    current.source_episode_ids.append(n.episode_id)
                    current.confidence = confirmed(current.confidence)
                    self.graph.add_note(current)
                touched.append(current)
                continue
            note = Note(id=new_id("note"), user_id=user_id, kind=n.kind, text=n.text, slot=n.slot,
                        valid_at=at, source_episode_ids=[n.episode_id], confidence=n.confidence)
            if current is not None and self._said_after(user_id, current, at):
                # said before what the current note was last said in (a message extracted late: its
                # replica died, or the model was down): it joins the history, and the current one stays
                self.graph.add_note(note)
                self.graph.supersede_note(note.id, current.id, current.valid_at)
                stale.append(note.id)
                # (an audit event is dated when it happens; when the note holds is its valid_at)
                events += [audit_event(user_id, actor, "create", note.id, note.text, None),
                           audit_event(user_id, actor, "supersede", note.id, note.text, current.id)]
                continue
            self.graph.add_note(note)
            events.append(audit_event(user_id, actor, "create", note.id, note.text, current.id if current else None))
            for old in [current, *also] if current is not None else []:
                self.graph.supersede_note(old.id, note.id, at)
                stale.append(old.id)
                events.append(audit_event(user_id, actor, "supersede", old.id, old.text, note.id))
            touched.append(note)
            changes.append(NoteChange(id=note.id, kind=note.kind.value, text=note.text,
                                           superseded=current.id if current else None))
        if touched:
            events += self._retire_over_cap(user_id, stale)
        self.graph.add_audit(events)
        return touched

    def _rules_current(self, user_id: str, n: ExtractedNote, texts: dict[str, str]) -> tuple[Note | None, str]:
        """The current note the rules find a new note replaces (or says again), and the new note's slot."""
        now = self.graph.list_notes(user_id)  # the current notes, as the notes before this one left them
        slot = n.slot
        if (kind := revision_kind(slot)) is not None:
            old = revised(kind, n.text, now, self.embedder.embed, cosine_zero(self.embedder))
            slot = old.slot if old else slot.split(":", 2)[-1]
            n = n.model_copy(update={"slot": slot})
        current = self.graph.current_note_by_slot(user_id, slot) or self._near_duplicate(n, now)
        if current is None and n.episode_id in texts:
            said = texts[n.episode_id]
            current = named_old(n.kind, slot, n.text, said, now, n.episode_id) or \
                role_changed(slot, said, now, n.episode_id)
        return current, slot

    def _retire(self, user_id: str, note: Note, at: datetime, stale: list[str], actor: str) -> list[AuditEvent]:
        self.graph.supersede_note(note.id, None, at)
        stale.append(note.id)
        return [audit_event(user_id, actor, "retire", note.id, note.text, at=at)]

    def _retract(self, user_id: str, topic: str, at: datetime, stale: list[str], actor: str) -> list[AuditEvent]:
        """'Forget what I said about tables': the current notes about it are retired, kept in the history."""
        events = []
        for note in retracted(topic, self.graph.list_notes(user_id), self.embedder.embed,
                              cosine_zero(self.embedder)):
            events += self._retire(user_id, note, at, stale, actor)
        return events

    def _retire_over_cap(self, user_id: str, stale: list[str]) -> list[AuditEvent]:
        """Keep the profile small: past the cap, the least sure and then the oldest items are retired
        (no longer current, kept in the history), and recorded as such."""
        current = self.graph.list_notes(user_id)
        over = len(current) - self.profile.max_items
        if over <= 0:
            return []
        now = utcnow()
        events = []
        for note in sorted(current, key=lambda n: (n.confidence, n.valid_at, n.created_at))[:over]:
            self.graph.supersede_note(note.id, None, now)
            stale.append(note.id)
            events.append(audit_event(user_id, "profile-cap", "retire", note.id, note.text, at=now))
        return events
