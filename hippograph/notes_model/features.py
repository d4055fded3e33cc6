"""What the notes judgement reads of a clause: the MiniLM vectors of the clause, of its whole message and of
the assistant turn before it, and the parse's numbers (`segment.parse_features`).

`clause_rows` turns corpus sequences into training rows: each message is read as the spaCy extractor reads
it (`rules.normalise`, `bounds.precut`) and cut as it is in use (`segment.pieces`), and each piece takes the label of the labelled clause it overlaps most (a clause
that gives a note wins when the piece holds most of it), so the models learn on the cuts they will see.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from hippograph.extraction.bounds import precut
from hippograph.extraction.rules import normalise as said
from hippograph.notes_model.corpus import Clause, Message
from hippograph.notes_model.corpus import Sequence as CorpusSequence
from hippograph.notes_model.segment import FEATURES, Bounds, clauses, first_words

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc

DIM = 384
Embed = Callable[[Sequence[str]], Sequence[Sequence[float]]]


@dataclass
class Row:
    """A piece of a user message, what it says and where it comes from."""
    writer: str
    sequence: str
    message: str  # message id
    index: int  # the piece's place in its message
    text: str
    content: str  # the whole message
    previous: str  # the assistant turn before it ('' when none)
    parse: list[float]
    label: Clause | None = None  # the labelled clause it stands for
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def act(self) -> str:
        return self.label.act if self.label else "small_talk"

    @property
    def slot(self) -> str | None:
        return self.label.slot if self.label else None


def _located(message: Message) -> list[tuple[int, int, Clause]]:
    """Each labelled clause with its character span in the message as the extractor reads it (`said`),
    found from the last one's end on."""
    low, at, out = said(message.content).casefold(), 0, []
    for c in message.clauses:
        needle = " ".join(said(c.text).split()).casefold()
        i = low.find(needle, at)
        if i < 0:
            i = low.find(needle)
        if i < 0:  # whitespace differs inside: fall back to its first word
            i = max(low.find(needle.split(" ")[0], at), 0)
        out.append((i, i + len(needle), c))
        at = max(at, i)
    return out


def _label_of(start: int, end: int, spans: list[tuple[int, int, Clause]]) -> Clause | None:
    """The label of the clause the piece overlaps most; a clause that gives a note, when the piece holds
    at least half of it, wins over the others (a piece holding "I moved to Leeds" and a greeting is a note)."""
    best: tuple[bool, int] | None = None
    found: Clause | None = None
    for a, b, c in spans:
        overlap = min(b, end) - max(a, start)
        if overlap <= 0:
            continue
        key = (c.gives_note and overlap >= 0.5 * (b - a), overlap)
        if best is None or key > best:
            best, found = key, c
    return found


def parsed(seqs: Sequence[CorpusSequence], nlp: Language) -> list[Doc]:
    """The sequences' user messages parsed as the spaCy extractor parses them, in order."""
    users = [m for s in seqs for m, _ in _with_previous(s.messages)]
    return list(nlp.pipe((precut(nlp.make_doc(said(m.content))) for m in users), batch_size=64))


def clause_starts(seqs: Sequence[CorpusSequence], docs: Sequence[Doc]) -> list[tuple[str, Doc, set[int]]]:
    """(writer, parsed message, the words its labelled clauses start at): what `segment.fit_bounds` learns from."""
    users = [(s, m) for s in seqs for m, _ in _with_previous(s.messages)]
    return [(s.writer, doc, first_words(doc, [(a, b) for a, b, _ in _located(m)]))
            for (s, m), doc in zip(users, docs, strict=True)]


def clause_rows(seqs: Sequence[CorpusSequence], nlp: Language, bounds: Bounds | None = None,
                docs: Sequence[Doc] | None = None) -> list[Row]:
    """The pieces of the sequences' user messages (cut by the rule or by `bounds`), labelled; `docs`: the
    messages already `parsed`."""
    rows: list[Row] = []
    users = [(s, m, prev) for s in seqs for m, prev in _with_previous(s.messages)]
    docs = docs if docs is not None else parsed(seqs, nlp)
    for (s, m, prev), doc in zip(users, docs, strict=True):
        spans = _located(m)
        for i, (p, parse) in enumerate(clauses(doc, bounds)):
            rows.append(Row(writer=s.writer, sequence=s.id, message=m.id, index=i, text=p.text, content=m.content,
                            previous=prev, parse=parse, label=_label_of(p.start, p.end, spans)))
    return rows


def _with_previous(messages: Sequence[Message]) -> list[tuple[Message, str]]:
    out, prev = [], ""
    for m in messages:
        if m.role == "assistant":
            prev = m.content
        elif m.role == "user":
            out.append((m, prev))
    return out


def matrix(rows: Sequence[Row], embed: Embed) -> np.ndarray:
    """One row of numbers per piece: clause, message and previous-turn vectors, then the parse's."""
    texts = sorted({r.text for r in rows} | {r.content for r in rows} | {r.previous for r in rows if r.previous})
    vectors = dict(zip(texts, np.asarray(embed(texts), dtype=np.float32), strict=True))
    zero = np.zeros(DIM, dtype=np.float32)
    out = np.empty((len(rows), 3 * DIM + len(FEATURES)), dtype=np.float32)
    for i, r in enumerate(rows):
        out[i] = np.concatenate([vectors[r.text], vectors[r.content], vectors[r.previous] if r.previous else zero,
                                 np.asarray(r.parse, dtype=np.float32)])
    return out
