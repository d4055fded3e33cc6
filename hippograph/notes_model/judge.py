"""The notes judgement at work: from the models' answers for each clause of a user's messages, in order, what
becomes a note, what it replaces, and what is taken back.

- A clause whose act is `states` or `changes` (their probabilities together at least `note`) is a note of
  the slot the slot model gives it. It replaces the current note of a single-valued slot; in a multi-valued
  or keyed slot (pets, decisions) it replaces a current note the pair model judges to be about the same
  thing (at least `same`) and is added otherwise (a second pet is added, a new CI tool does not replace the
  hosting decision).
- A clause whose act is `retracts` (at least `retract`) retires the current note it is most surely about
  (at least `same`); none, when no note is.
- A note records its confidence (the act's probability times the slot's); `Thresholds.stated` is the least
  a note needs to be stated to the agent (below it, it is a candidate).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hippograph.notes_model.corpus import KEYED_SLOTS, NOTE_ACTS


@dataclass(frozen=True)
class Thresholds:
    note: float = 0.5
    retract: float = 0.5
    same: float = 0.5
    stated: float = 0.0


@dataclass
class HeldNote:
    """A note as the judgement holds it: the clause it came from, its numbers, and whether it is current."""
    text: str
    slot: str
    kind: str
    confidence: float
    source: str  # the message id
    x: np.ndarray  # the clause's features
    slots: np.ndarray  # its slot probabilities
    current: bool = True
    replaced_by: int | None = None
    history: list[str] = field(default_factory=list)


@dataclass
class Answer:
    """What the models said of one clause."""
    acts: dict[str, float]
    slots: np.ndarray  # probabilities, in the slot model's class order
    x: np.ndarray

    @property
    def note(self) -> float:
        return sum(self.acts.get(a, 0.0) for a in NOTE_ACTS)

    @property
    def retract(self) -> float:
        return self.acts.get("retracts", 0.0)


def decide(answer: Answer, text: str, source: str, notes: list[HeldNote], slot_names: list[str],
           kinds: dict[str, str], same_thing, limits: Thresholds, multi: frozenset[str] = frozenset()) -> str | None:
    """Apply one clause to `notes` (changed in place); what it did: 'added', 'replaced', 'retired' or None.
    `same_thing(answer, note) -> float`: the pair model's probability that the clause is about the note."""
    if answer.note >= limits.note and answer.note >= answer.retract:
        k = int(answer.slots.argmax())
        slot = slot_names[k]
        held = HeldNote(text=text, slot=slot, kind=kinds.get(slot, "fact"),
                        confidence=float(answer.note * answer.slots[k]), source=source, x=answer.x,
                        slots=answer.slots)
        if slot in multi or slot in KEYED_SLOTS:  # which value, which subject: the pair model says
            best, score = _most_same(answer, notes, same_thing)
        else:  # one value: the slot's current note, whatever its words
            best = next((n for n in reversed(notes) if n.current and n.slot == slot), None)
            score = 1.0
        notes.append(held)
        if best is not None and score >= limits.same:
            best.current = False
            best.replaced_by = len(notes) - 1
            return "replaced"
        return "added"
    if answer.retract >= limits.retract:
        best, score = _most_same(answer, notes, same_thing)
        if best is not None and score >= limits.same:
            best.current = False
            return "retired"
    return None


def _most_same(answer: Answer, notes: list[HeldNote], same_thing) -> tuple[HeldNote | None, float]:
    best, score = None, 0.0
    for n in notes:
        if n.current:
            p = float(same_thing(answer, n))
            if p > score:
                best, score = n, p
    return best, score
