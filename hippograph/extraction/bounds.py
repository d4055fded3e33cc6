"""What keeps one message's extraction bounded: pieces for the parser, sentences cut for the rules, and
a time budget.

- **Pieces.** A message longer than `PIECE_CHARS` is parsed piece by piece (cut after a sentence's end
  where it can be, else at a space) and the pieces' parses are joined into one `Doc`, so that the
  time a message takes can be checked between pieces. spaCy's tokenizer strips punctuation off a run
  without a space one character at a time, copying the rest, so it is quadratic in the length of such
  a run ("$$$$...": 2,000 of them take over a second): a run longer than `RUN_CHARS` is cut into
  pieces of its own, unless the tokenizer reads it as one token at once (a URL, a long number). Real
  messages are one piece: the longest LoCoMo turn has 438 characters, the longest message of the
  labelled extraction cases 490.
- **Sentences.** The rules walk a sentence's tree (subtrees, heads, children), which spaCy scans
  token by token, so their cost grows faster than the sentence. No sentence the rules read is longer
  than `SENTENCE_TOKENS`: a stretch of that many tokens without a sentence's end ('.', '!', '?', a line
  break) is cut before the parse (`precut`, after a comma or before a conjunction where it can be),
  and a longer sentence the parser makes across such ends is cut and parsed again (`bounded`). Real
  messages have far shorter sentences: in the LoCoMo conversations (2,760 turns, 8,905 sentences) the
  longest has 39 tokens and 99.9% have at most 32; in the labelled extraction cases (2,225 messages)
  the longest said in words has 80 tokens, a tool output in JSON 180.
- **Budget.** `Budget` is the time one message may take. A long message's pieces are parsed while
  `PARSE_SHARE` of it lasts, and its sentences are read until it is spent (its first piece is read in
  any case); what was not read gives nothing, and `Extraction.incomplete` says so.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hippograph.extraction.rules import word_set

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc

SENTENCE_TOKENS = 120
PIECE_CHARS = 2_000
RUN_CHARS = 200
#: The share of a long message's budget its parse may take; the rules read what was parsed in the rest.
PARSE_SHARE = 0.7
_SENTENCE_END = re.compile(r"(?:[.!?]+[\"')\]]*\s+|\n\s*)")
_RUN = re.compile(rf"(?<!\S)\S{{{RUN_CHARS + 1},}}")  # tried at a run's start only: linear
_STRETCH_END = re.compile(r"[.!?\u2026]$|\n")
_BEFORE = word_set("and but or so because then while when which who that")  # a cut goes before these


def pieces(text: str, one_token: Callable[[str], bool] = lambda run: False) -> list[str]:
    """The text in pieces that join to it again: one piece when it is short and has no long run of
    non-space characters. `one_token(run)`: the tokenizer reads the run as one token at once (a URL, a
    long number), so it is left whole, in a piece of its own."""
    runs = [(run, one_token(run.group())) for run in _RUN.finditer(text)]
    if len(text) <= PIECE_CHARS and all(whole for _, whole in runs):
        return [text]
    out: list[str] = []
    start = 0
    for run, whole in runs:  # a long run is a piece of its own, or cut into pieces of RUN_CHARS
        out += _cut_words(text[start:run.start()])
        step = len(run.group()) if whole else RUN_CHARS
        out += [text[i:min(i + step, run.end())] for i in range(run.start(), run.end(), step)]
        start = run.end()
    return [p for p in out + _cut_words(text[start:]) if p]


def one_token(nlp: Language, run: str) -> bool:
    """Whether spaCy's tokenizer makes one token of a run of non-space characters without stripping
    anything off it (which it does one character at a time): a URL, or a run with no prefix, suffix or
    infix."""
    tokenizer: Any = nlp.tokenizer
    if tokenizer.url_match is not None and tokenizer.url_match(run):
        return True
    return ((tokenizer.prefix_search is None or tokenizer.prefix_search(run) is None)
            and (tokenizer.suffix_search is None or tokenizer.suffix_search(run) is None)
            and (tokenizer.infix_finditer is None or next(tokenizer.infix_finditer(run), None) is None))


def _cut_words(text: str) -> list[str]:
    out: list[str] = []
    while len(text) > PIECE_CHARS:
        window = text[PIECE_CHARS // 2 : PIECE_CHARS]
        ends = [m.end() for m in _SENTENCE_END.finditer(window)]
        at = PIECE_CHARS // 2 + ends[-1] if ends else None
        if at is None:
            space = max(window.rfind(" "), window.rfind("\n"), window.rfind("\t"))
            at = PIECE_CHARS // 2 + space + 1 if space >= 0 else PIECE_CHARS
        out.append(text[:at])
        text = text[at:]
    return [*out, text]


def _cuts(doc: Doc, start: int, end: int) -> list[int]:
    """Where to start new sentences in doc[start:end] so that none is longer than SENTENCE_TOKENS."""
    out = []
    while end - start > SENTENCE_TOKENS:
        at = start + SENTENCE_TOKENS
        for i in range(at, start + SENTENCE_TOKENS // 2, -1):
            if doc[i - 1].is_punct or doc[i].lower_ in _BEFORE:
                at = i
                break
        out.append(at)
        start = at
    return out


def precut(doc: Doc) -> Doc:
    """A tokenized doc with sentence starts set where a stretch without a sentence's end ('.', '!', '?', a
    line break) is longer than SENTENCE_TOKENS, so that the parse itself makes no longer sentence."""
    start = 0
    for tok in doc:
        if _STRETCH_END.search(tok.text):
            if tok.i + 1 - start > SENTENCE_TOKENS:
                _start_at(doc, _cuts(doc, start, tok.i + 1))
            start = tok.i + 1
    if len(doc) - start > SENTENCE_TOKENS:
        _start_at(doc, _cuts(doc, start, len(doc)))
    return doc


def _start_at(doc: Doc, cuts: list[int]) -> None:
    for i in cuts:
        doc[i].is_sent_start = True


def bounded(nlp: Language, doc: Doc) -> Doc:
    """The doc, or when a sentence of it is longer than SENTENCE_TOKENS (the parser joined stretches
    `precut` left whole) its text parsed again with that sentence cut in shorter ones; the other
    sentences keep their boundaries."""
    sents = [(s.start, s.end) for s in doc.sents]
    if all(end - start <= SENTENCE_TOKENS for start, end in sents):
        return doc
    again = nlp.make_doc(doc.text)
    for start, end in sents:
        again[start].is_sent_start = True
        if end - start > SENTENCE_TOKENS:
            cuts = set(_cuts(doc, start, end))
            for i in range(start + 1, end):
                again[i].is_sent_start = i in cuts
    return nlp(again)


class Budget:
    """The time one message may take, from when it is made."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started = time.monotonic()
        self.deadline = self.started + seconds

    def spent(self, share: float = 1.0) -> bool:
        return time.monotonic() - self.started >= self.seconds * share

    def reason(self, read: int, total: int) -> str:
        return (f"extraction stopped at its {self.seconds:g} s budget, {read:,} of {total:,} characters in (the "
                "message is stored and searchable; no notes, relations or entities were taken from the rest of it)")
