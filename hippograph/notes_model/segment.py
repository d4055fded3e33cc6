"""A user message cut into clauses, from spaCy's parse, and what the parse says of each clause.

The judgement of what a message says about its speaker is made clause by clause: "we moved hosting to
Hetzner but I'm still on Eastern time" holds a decision and a fact. A clause is a sentence, cut again
where a coordinated or paratactic verb with a subject of its own starts ("..., but I'm still ..."), or at
a semicolon. The same cut is made when the models are trained (on the corpus's messages, each piece
taking the label of the labelled clause it overlaps most) and when they are used, so the models see at
training what they see in use, whatever the writers' own cuts were.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spacy.tokens import Doc, Span, Token

_SUBJECTS = frozenset({"nsubj", "nsubjpass", "expl", "csubj"})
_SPLIT_DEPS = frozenset({"conj", "parataxis"})
_JOINERS = frozenset({"cc", "punct"})
_MODALS = frozenset({"might", "could", "would", "should", "may", "maybe", "perhaps", "probably"})
_FIRST = frozenset({"i", "me", "my", "mine", "we", "us", "our", "ours", "i'm", "im"})
_SECOND = frozenset({"you", "your", "yours", "u"})
_THIRD = frozenset({"he", "she", "they", "him", "her", "his", "their", "them"})
_NEGATIONS = frozenset({"neg"})


@dataclass(frozen=True)
class Piece:
    """A clause of a message: its character span and the words."""
    start: int
    end: int
    text: str


def _starts_clause(tok: Token) -> bool:
    return (tok.dep_ in _SPLIT_DEPS and tok.pos_ in ("VERB", "AUX")
            and any(c.dep_ in _SUBJECTS for c in tok.children))


def pieces(doc: Doc) -> list[Piece]:
    """The clauses of a parsed message, in order, covering its words."""
    out: list[Piece] = []
    for sent in doc.sents:
        cuts = {sent.start}
        for tok in sent:
            if tok.i > sent.start and tok.text == ";":
                cuts.add(tok.i + 1)
            elif tok.i > sent.start and _starts_clause(tok):
                at = tok.left_edge.i
                # the joining word or comma before the new clause goes with it ("but I moved")
                while at - 1 > sent.start and doc[at - 1].dep_ in _JOINERS and doc[at - 1].text not in ".!?":
                    at -= 1
                if at > sent.start:
                    cuts.add(at)
        bounds = sorted(c for c in cuts if c < sent.end) + [sent.end]
        for a, b in itertools.pairwise(bounds):
            span = doc[a:b]
            text = span.text.strip()
            if text and any(not t.is_punct and not t.is_space for t in span):
                out.append(Piece(span.start_char, span.end_char, text))
    return out


#: The names of `parse_features`'s values, in order.
FEATURES = ("first_person", "second_person", "third_person", "question", "modal", "condition", "future",
            "negated", "past", "imperative", "proper_noun", "number", "words_log", "exclamation")


def parse_features(span: Span) -> list[float]:
    """What the parse says of a clause, as numbers: who speaks of whom, mood, tense, polarity."""
    words = [t for t in span if not t.is_punct and not t.is_space]
    lower = {t.lower_ for t in words}
    root = span.root
    subjects = [c for c in root.children if c.dep_ in _SUBJECTS]
    text = span.text.rstrip()
    return [
        float(bool(lower & _FIRST)),
        float(bool(lower & _SECOND)),
        float(bool(lower & _THIRD)),
        float(text.endswith("?") or root.tag_ in ("WRB", "WP") or any(t.tag_ in ("WRB", "WP") for t in words[:2])),
        float(bool(lower & _MODALS) or any(t.tag_ == "MD" and t.lower_ not in ("will", "'ll", "can") for t in words)),
        float(any(t.lower_ in ("if", "unless", "whether") for t in words)),
        float(any(t.lower_ in ("will", "'ll", "gonna") for t in words) or "going to" in span.text.lower()),
        float(any(t.dep_ in _NEGATIONS for t in words)),
        float(root.tag_ in ("VBD", "VBN") or any(c.tag_ == "VBD" for c in root.children if c.dep_ == "aux")),
        float(root.tag_ == "VB" and not subjects and root.i == span.start),
        float(any(t.pos_ == "PROPN" for t in words)),
        float(any(t.like_num for t in words)),
        math.log1p(len(words)),
        float("!" in text),
    ]


def clauses(doc: Doc) -> list[tuple[Piece, list[float]]]:
    """The clauses of a parsed message, each with `parse_features` of its words."""
    out = []
    for p in pieces(doc):
        span = doc.char_span(p.start, p.end, alignment_mode="expand")
        assert span is not None  # a piece is cut at token bounds
        out.append((p, parse_features(span)))
    return out
