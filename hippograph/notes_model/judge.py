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

import itertools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hippograph.notes_model.corpus import KEYED_SLOTS, NOTE_ACTS
from hippograph.notes_model.features import DIM
from hippograph.notes_model.linear import LinearModel

#: Where the package keeps the weights (`python -m hippograph.notes_model.train` writes them).
WEIGHTS = Path(__file__).with_name("weights")


@dataclass
class Judgement:
    """The three models: the act of a clause, its slot, and whether two statements are about the same thing;
    the words the act and slot models read beside the clause's vector (`words`); and, with a `lead` model,
    the acts that plain regression over vectors and parse gives the clauses before it in its message
    (`context`)."""
    act: LinearModel
    slot: LinearModel
    pair: LinearModel
    vocabulary: list[str] = field(default_factory=list)
    lead: LinearModel | None = None

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("act", "slot", "pair"):
            getattr(self, name).save(folder / f"{name}.npz")
        (folder / "words.json").write_text(json.dumps(self.vocabulary, indent=0) + "\n")
        (folder / "lead.npz").unlink(missing_ok=True)
        if self.lead is not None:
            self.lead.save(folder / "lead.npz")

    @classmethod
    def load(cls, folder: Path = WEIGHTS) -> Judgement:
        words, lead = folder / "words.json", folder / "lead.npz"
        act, slot, pair = (LinearModel.load(folder / f"{name}.npz") for name in ("act", "slot", "pair"))
        return cls(act, slot, pair, json.loads(words.read_text()) if words.is_file() else [],
                   LinearModel.load(lead) if lead.is_file() else None)

    def clause_features(self, x: np.ndarray, texts: Sequence[str], messages: Sequence[object] | None = None
                        ) -> np.ndarray:
        """`clause_features` of rows of `features.matrix`, as this judgement reads them."""
        base = clause_x(x)
        return with_context(base, self.context(base, messages), texts, self.vocabulary)

    def context(self, base: np.ndarray, messages: Sequence[object] | None) -> list[np.ndarray]:
        """What the act and slot models read of the clauses before each (`base`: rows of `clause_x`, in message
        order; `messages`: each row's message, None: none is before another)."""
        return context(messages, self.lead.probabilities(base) if self.lead is not None else None)


def limits_of(folder: Path) -> Thresholds:
    """The thresholds chosen with the weights (`limits.json`), or the defaults."""
    path = folder / "limits.json"
    if not path.is_file():
        return Thresholds()
    return Thresholds(**json.loads(path.read_text()))


def clause_x(x: np.ndarray) -> np.ndarray:
    """What the act and slot models read of a row of `features.matrix`: the clause's vector and its parse.
    Not the message's (another clause's slot) nor the assistant turn's before it: left one writer out,
    the act model without them found notes with precision 0.720 and recall 0.727 (mean of 13 writers),
    with them 0.712 and 0.714."""
    return np.concatenate([x[:, :DIM], x[:, 3 * DIM:]], axis=1)


_TERM = re.compile(r"[a-z]+(?:'[a-z]+)?")


def terms(text: str) -> set[str]:
    """The words of a clause as the act and slot models read them: lower case, letters (and an apostrophe), and
    each two words that stand side by side ("this report", "from now"), joined by a space: the scope of an
    instruction is often in a pair of words whose single words say nothing ("this" and "report")."""
    found = _TERM.findall(text.lower())
    return set(found) | {f"{a} {b}" for a, b in itertools.pairwise(found)}


def vocabulary(texts: Sequence[str], writers: Sequence[str], least_writers: int = 3, least_count: int = 5,
               pair_writers: int | None = None, pair_count: int = 20) -> list[str]:
    """The words used by at least `least_writers` writers and `least_count` times, and the pairs of words used by
    at least `pair_writers` writers and `pair_count` times (None: no pairs): what the models may read beside the
    vectors. Words of one writer's domain or voice would fit that writer and no other."""
    by: dict[str, set[str]] = {}
    count: dict[str, int] = {}
    for text, writer in zip(texts, writers, strict=True):
        for t in terms(text):
            by.setdefault(t, set()).add(writer)
            count[t] = count.get(t, 0) + 1

    def kept(t: str) -> bool:
        if " " not in t:
            return len(by[t]) >= least_writers and count[t] >= least_count
        return pair_writers is not None and len(by[t]) >= pair_writers and count[t] >= pair_count

    return sorted(t for t in by if kept(t))


def words(texts: Sequence[str], vocab: Sequence[str]) -> np.ndarray:
    """One row per text: 1 for each word of `vocab` it holds (read unscaled: `linear.fit(raw=...)`)."""
    at = {t: k for k, t in enumerate(vocab)}
    out = np.zeros((len(texts), len(vocab)), dtype=np.float32)
    for i, text in enumerate(texts):
        for t in terms(text):
            if (k := at.get(t)) is not None:
                out[i, k] = 1.0
    return out


def before(values: np.ndarray, messages: Sequence[object] | None) -> np.ndarray:
    """For each clause (rows of numbers, in message order, a message's side by side, `messages` naming each row's
    message): the highest of each number over the clauses before it in its message, and 1 when there is one.
    "Can you pull the quarterly report together? Please leave out the drafts": an instruction follows the
    request for the task it is about. None: no clause is before another."""
    out = np.zeros((len(values), values.shape[1] + 1), dtype=np.float32)
    if messages is None:
        return out
    seen: np.ndarray | None = None
    for i, m in enumerate(messages):
        if i == 0 or m != messages[i - 1]:
            seen = None
        if seen is not None:
            out[i, :-1], out[i, -1] = seen, 1.0
        seen = values[i] if seen is None else np.maximum(seen, values[i])
    return out


def context(messages: Sequence[object] | None, lead: np.ndarray | None) -> list[np.ndarray]:
    """What the act and slot models read of the clauses before each in its message (`before`): with `lead`
    (each row's act probabilities by `Judgement.lead`), the highest of those; else nothing."""
    return [before(lead, messages)] if lead is not None else []


def with_context(base: np.ndarray, parts: Sequence[np.ndarray], texts: Sequence[str], vocab: Sequence[str]
                 ) -> np.ndarray:
    """What the act and slot models read: `clause_x`'s numbers, those of the clauses before (`context`), and
    the words (last: read unscaled)."""
    return np.concatenate([base, *parts, words(texts, vocab)], axis=1)


def clause_features(x: np.ndarray, texts: Sequence[str], vocab: Sequence[str], messages: Sequence[object] | None = None,
                    lead: np.ndarray | None = None) -> np.ndarray:
    """What the act and slot models read of rows of `features.matrix` and their clauses' words, and of the
    clauses before each in its message (`context`)."""
    return with_context(clause_x(x), context(messages, lead), texts, vocab)


_WORD = re.compile(r"[a-z0-9]+")
_NAME = re.compile(r"\b[A-Z][\w'-]*")
_STOP = frozenset(["a", "an", "the", "at", "for", "in", "on", "of", "to", "with", "from", "by", "now", "still", "really", "very", "also", "just", "my", "our", "and", "or", "but", "i", "i'm", "me", "is", "am", "are", "was", "be", "been", "has", "have", "had", "do", "we", "we're", "it", "it's", "that", "this", "so"])


def _content(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def _names(text: str) -> set[str]:
    return {m.group().lower() for m in _NAME.finditer(text) if m.start() > 0 and m.group() not in ("I", "I'm")}


def lexical(a: str, b: str) -> list[float]:
    """What two statements share in words: the share of their content words in common, whether they share
    a content word, a name (a capitalised word past the first) or a number. Left one writer out, these
    raised the pair model's precision from 0.493 to 0.519 and its recall from 0.650 to 0.659 (mean of 13)."""
    wa, wb = _content(a), _content(b)
    return [len(wa & wb) / max(len(wa | wb), 1), float(bool(wa & wb)), float(bool(_names(a) & _names(b))),
            float(bool(set(re.findall(r"\d+", a)) & set(re.findall(r"\d+", b))))]


def pair_features(xa: np.ndarray, xb: np.ndarray, sa: np.ndarray, sb: np.ndarray, ta: Sequence[str],
                  tb: Sequence[str], same_slot: np.ndarray | None = None) -> np.ndarray:
    """An earlier note's and a new clause's vectors (rows), slot probabilities (rows) and words: what the
    pair model reads. The note's slot counts as sure (a stored note keeps its slot, not the probabilities).
    `same_slot`: whether each pair is of one slot, when it is a slot outside the catalogue (a tenant's)."""
    ea, eb = xa[:, :DIM], xb[:, :DIM]
    if sa.size:
        sa = ((sa >= sa.max(axis=1, keepdims=True)) & (sa > 0)).astype(np.float32)
    cos = (ea * eb).sum(axis=1, keepdims=True)
    same_slot = (sa * sb).sum(axis=1, keepdims=True) if same_slot is None else same_slot.reshape(-1, 1)
    words = np.array([lexical(a, b) for a, b in zip(ta, tb, strict=True)], dtype=np.float32).reshape(len(ta), 4)
    return np.concatenate([ea * eb, np.abs(ea - eb), cos, same_slot, sa * sb, words], axis=1)


@dataclass(frozen=True)
class Thresholds:
    note: float = 0.5
    retract: float = 0.5
    same: float = 0.5
    stated: float = 0.0
    # a note of a single-valued slot also replaces the current note of another single-valued slot its clause
    # gives at least this probability ("I now manage the whole country", a job title, replaces "I manage the
    # Northwest region", a responsibility); above 1: never
    related: float = 1.01
    # a note of a single-valued slot also replaces a current note of another single-valued slot whose own
    # clause gave its slot at least this ("backend dev at a startup in Porto" is a job, an employer and a
    # city: a move to Lisbon ends it); above 1: never
    covers: float = 1.01


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
    # its slot probabilities read from its words alone, as they are read of a stored note (`covers`)
    covers: np.ndarray | None = None
    current: bool = True
    replaced_by: int | None = None
    history: list[str] = field(default_factory=list)


@dataclass
class Answer:
    """What the models said of one clause."""
    acts: dict[str, float]
    slots: np.ndarray  # probabilities, in the slot model's class order
    x: np.ndarray
    text: str = ""  # the clause
    covers: np.ndarray | None = None  # the slot probabilities of its words alone (`HeldNote.covers`)

    @property
    def note(self) -> float:
        return sum(self.acts.get(a, 0.0) for a in NOTE_ACTS)

    @property
    def retract(self) -> float:
        return self.acts.get("retracts", 0.0)

    @property
    def confidence(self) -> float:
        """A note's confidence: its act's probability times its slot's (the likeliest)."""
        return float(self.note * self.slots.max())


def act_of(note: float, retract: float, limits: Thresholds) -> str | None:
    """What a clause's act probabilities make of it: a note ("note": it states or changes something at least
    `note`, and more surely than it takes something back), a retraction ("retract"), or nothing (None). The
    one rule of the write path (`learned`) and of the simulation the thresholds are chosen on."""
    if note >= limits.note and note >= retract:
        return "note"
    return "retract" if retract >= limits.retract else None


def related(slot_names: Sequence[str], slots: Sequence[float] | np.ndarray, slot: str, by_pair: frozenset[str] | set[str],
            limits: Thresholds) -> set[str]:
    """The single-valued slots a new note of single-valued `slot` replaces the current notes of: its own, and
    those its clause gives at least `limits.related` (but a note of another slot said in the same message:
    "I live in Lisbon and I work at Globex" is two notes)."""
    return {s for s, p in zip(slot_names, slots, strict=True) if p >= limits.related and s not in by_pair} | {slot}


def decide(answer: Answer, text: str, source: str, notes: list[HeldNote], slot_names: list[str],
           kinds: dict[str, str], same_thing, limits: Thresholds, multi: frozenset[str] = frozenset()) -> str | None:
    """Apply one clause to `notes` (changed in place); what it did: 'added', 'replaced', 'retired' or None.
    `same_thing(answer, note) -> float`: the pair model's probability that the clause is about the note."""
    act = act_of(answer.note, answer.retract, limits)
    if act == "note":
        k = int(answer.slots.argmax())
        slot = slot_names[k]
        held = HeldNote(text=text, slot=slot, kind=kinds.get(slot, "fact"),
                        confidence=answer.confidence, source=source, x=answer.x,
                        slots=answer.slots, covers=answer.covers)
        by_pair = multi | KEYED_SLOTS
        if slot in by_pair:  # which value, which subject: the pair model says
            best, score = _most_same(answer, [n for n in notes if n.slot == slot], same_thing)
            gone = [best] if best is not None and score >= limits.same else []
        else:  # one value: the slot's current note, whatever its words (and those of related slots)
            near = related(slot_names, answer.slots, slot, by_pair, limits)
            gone = [n for n in notes if n.current and (n.slot == slot or n.source != source) and (
                n.slot in near or (n.slot not in by_pair and _covered(n)[k] >= limits.covers))]
        notes.append(held)
        for n in gone:
            n.current = False
            n.replaced_by = len(notes) - 1
        return "replaced" if gone else "added"
    if act == "retract":
        best, score = _most_same(answer, notes, same_thing)
        if best is not None and score >= limits.same:
            best.current = False
            return "retired"
    return None


def _covered(n: HeldNote) -> np.ndarray:
    return n.covers if n.covers is not None else n.slots


def _most_same(answer: Answer, notes: list[HeldNote], same_thing) -> tuple[HeldNote | None, float]:
    best, score = None, 0.0
    for n in notes:
        if n.current:
            p = float(same_thing(answer, n))
            if p > score:
                best, score = n, p
    return best, score
