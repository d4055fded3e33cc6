"""A user message cut into clauses, from spaCy's parse, and what the parse says of each clause.

The judgement of what a message says about its speaker is made clause by clause: "we moved hosting to
Hetzner but I'm still on Eastern time" holds a decision and a fact. A clause is a sentence, cut again
where a coordinated or paratactic verb with a subject of its own starts ("..., but I'm still ..."), or at
a semicolon. Or, given `Bounds` (a regression over each word's neighbours and parse, learned from where the
corpus's writers start their clauses), cut again wherever a clause most likely starts. The same cut is made
when the models are trained (on the corpus's messages, each piece taking the label of the labelled clause it
overlaps most) and when they are used, so the models see at training what they see in use, whatever the
writers' own cuts were.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

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


def joins(tok: Token) -> bool:
    """A word that joins two clauses rather than saying anything: a comma, a dash, "and", "but"."""
    return tok.is_punct or tok.is_space or tok.dep_ == "cc"


def _bucket(n: int) -> str:
    return str(n) if n < 4 else "4-7" if n < 8 else "8-15" if n < 16 else "16+"


def bound_features(doc: Doc, sent: Span, i: int) -> list[str]:
    """What `Bounds` reads to tell whether a clause starts at word `i` of a sentence (past its first word, not
    a joining word): the words and parse around it, and the phrase it starts (the largest subtree whose first
    word it is: its head's part of speech and relation, and whether that head has a subject of its own)."""
    t, p = doc[i], doc[i - 1]
    n = doc[i + 1] if i + 1 < sent.end else None
    pp = doc[i - 2] if i - 2 >= sent.start else None
    h = t
    while h.head.i != h.i and h.head.left_edge.i == i:
        h = h.head
    subject = any(c.dep_ in _SUBJECTS for c in h.children)
    where = "self" if h.i == i else "right" if h.i > i else "left"
    return [f"w={t.lower_}", f"pw={p.lower_}", f"nw={n.lower_ if n else '</s>'}", f"ppw={pp.lower_ if pp else '<s>'}",
            f"pos={t.pos_}", f"ppos={p.pos_}", f"npos={n.pos_ if n else '</s>'}", f"dep={t.dep_}", f"pdep={p.dep_}",
            f"ndep={n.dep_ if n else '</s>'}", f"pw|w={p.lower_}|{t.lower_}", f"ppos|pos={p.pos_}|{t.pos_}",
            f"pw|pos={p.lower_}|{t.pos_}", f"hpos={h.pos_}", f"hdep={h.dep_}", f"hsubj={subject}",
            f"hdep|subj={h.dep_}|{subject}", f"hrel={where}", f"rule={_starts_clause(h)}",
            f"since={_bucket(i - sent.start)}", f"left={_bucket(sent.end - i)}", f"title={t.is_title}",
            f"pdep|hdep={p.dep_}|{h.dep_}", f"ppunct|hsubj={p.is_punct}|{subject}|{h.pos_}"]


def candidates(sent: Span) -> Iterable[int]:
    """The words of a sentence a clause may start at (`Bounds`): past its first, not joining words."""
    return (t.i for t in sent if t.i > sent.start and not joins(t))


def first_words(doc: Doc, spans: Iterable[tuple[int, int]]) -> set[int]:
    """The word each character span (a writer's clause) starts at, past its joining words."""
    out = set()
    for start, _ in spans:
        tok = next((t for t in doc if t.idx + len(t.text) > start), None)
        while tok is not None and tok.i + 1 < len(doc) and joins(tok):
            tok = doc[tok.i + 1]
        if tok is not None:
            out.add(tok.i)
    return out


@dataclass
class Bounds:
    """Where clauses start inside a sentence: a logistic regression over `bound_features` (one weight each),
    learned from where the writers of the notes corpus start theirs (`fit_bounds`); a clause starts where its
    probability is at least `threshold`."""
    features: list[str]
    weights: np.ndarray
    intercept: float
    threshold: float = 0.5
    index: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.index = {f: k for k, f in enumerate(self.features)}

    def probability(self, doc: Doc, sent: Span, i: int) -> float:
        z = self.intercept + sum(float(self.weights[k]) for f in bound_features(doc, sent, i)
                                 if (k := self.index.get(f)) is not None)
        return 1.0 / (1.0 + math.exp(-z))

    def starts(self, doc: Doc, sent: Span) -> list[int]:
        return [i for i in candidates(sent) if self.probability(doc, sent, i) >= self.threshold]

    def save(self, path: Path) -> None:
        np.savez_compressed(path, features=np.array(self.features), weights=self.weights.astype(np.float32),
                            intercept=np.float32(self.intercept), threshold=np.float32(self.threshold))

    @classmethod
    def load(cls, path: Path) -> Bounds:
        with np.load(path, allow_pickle=False) as z:
            return cls([str(f) for f in z["features"]], z["weights"].astype(np.float32), float(z["intercept"]),
                       float(z["threshold"]))


def fit_bounds(examples: Iterable[tuple[str, Doc, set[int]]], threshold: float = 0.5, c: float = 0.3,
               least_writers: int = 3) -> Bounds:
    """`Bounds` from (writer, parsed message, the words its clauses start at): every candidate word of every
    sentence is an example. A feature is kept if at least `least_writers` writers' messages have it (a word of
    one writer's domain would fit that writer only). The same examples give the same weights."""
    import scipy.sparse as sp
    from sklearn.linear_model import LogisticRegression

    feats: list[list[str]] = []
    ys: list[bool] = []
    by: dict[str, set[str]] = {}
    for writer, doc, starts in examples:
        for sent in doc.sents:
            for i in candidates(sent):
                f = bound_features(doc, sent, i)
                feats.append(f)
                ys.append(i in starts)
                for name in f:
                    by.setdefault(name, set()).add(writer)
    kept = sorted(f for f, ws in by.items() if len(ws) >= least_writers)
    index = {f: k for k, f in enumerate(kept)}
    rows, cols = [], []
    for r, f in enumerate(feats):
        for name in f:
            if (k := index.get(name)) is not None:
                rows.append(r)
                cols.append(k)
    x = sp.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)), shape=(len(feats), len(kept)))
    model = LogisticRegression(C=c, solver="liblinear", max_iter=300, random_state=0).fit(x, np.array(ys))
    return Bounds(kept, model.coef_[0].astype(np.float32), float(model.intercept_[0]), threshold)


def pieces(doc: Doc, bounds: Bounds | None = None) -> list[Piece]:
    """The clauses of a parsed message, in order, covering its words: cut by the rule (a coordinated verb with
    its own subject, a semicolon), or where `bounds` says a clause starts."""
    out: list[Piece] = []
    for sent in doc.sents:
        cuts = {sent.start}
        found = bounds.starts(doc, sent) if bounds is not None else [
            tok.left_edge.i for tok in sent if tok.i > sent.start and _starts_clause(tok)]
        for at in found:
            # the joining word or comma before the new clause goes with it ("but I moved")
            while at - 1 > sent.start and doc[at - 1].dep_ in _JOINERS and doc[at - 1].text not in ".!?":
                at -= 1
            if at > sent.start:
                cuts.add(at)
        if bounds is None:
            cuts.update(tok.i + 1 for tok in sent if tok.i > sent.start and tok.text == ";")
        edges = sorted(c for c in cuts if c < sent.end) + [sent.end]
        for a, b in itertools.pairwise(edges):
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


def clauses(doc: Doc, bounds: Bounds | None = None) -> list[tuple[Piece, list[float]]]:
    """The clauses of a parsed message (`pieces`), each with `parse_features` of its words."""
    out = []
    for p in pieces(doc, bounds):
        span = doc.char_span(p.start, p.end, alignment_mode="expand")
        assert span is not None  # a piece is cut at token bounds
        out.append((p, parse_features(span)))
    return out
