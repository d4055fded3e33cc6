"""The subject people leave out when they write about themselves: "moved to Leeds last week",
"update: left acme, been at initech for ten days now", "Started at Globex in May". In a user's
message a clause that opens with a past-tense verb and has no subject is the user's own statement; the
parser reads it right only once the "I" is back, so the message is parsed again with it restored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hippograph.extraction.rules import is_role_noun, word_set

if TYPE_CHECKING:
    from spacy.tokens import Doc, Token

# Words that may open a clause before its verb: "also finally moved ...", "update: left ...".
_OPENERS = word_set("also finally just so and then oh ok okay well anyway btw actually recently")
_BOUNDARY = frozenset({".", "!", "?", ":", ";", "\n", "-", "—", "–"})
_SUBJECTS = frozenset({"nsubj", "nsubjpass", "expl", "csubj"})


def _clause_openings(doc: Doc) -> list[bool]:
    """Per token: whether it starts a clause: at the start, after a sentence mark or a colon, past
    openers only."""
    out, after_boundary = [], True
    for tok in doc:
        out.append(after_boundary)
        if tok.lower_ not in _OPENERS:
            after_boundary = tok.text in _BOUNDARY or tok.text.endswith("\n")
    return out


def _subjectless_past(tok: Token) -> bool:
    if tok.tag_ not in ("VBD", "VBN") or not tok.is_alpha or tok.lower_ == tok.lemma_.lower():
        return False  # "Cut the em dashes", "Read this first": the same as the order, so maybe one
    if all(t.is_punct or t.i == tok.i for t in tok.sent):
        return False  # "committed." alone is a remark, not a statement with its subject left out
    if tok.i + 1 < len(tok.doc) and tok.doc[tok.i + 1].text in (":", "-", "—"):
        return False  # "Decided: ...", "Update - ...": a label, not a clause
    clause = tok if tok.dep_ not in ("amod", "compound") else tok.head
    return not any(c.dep_ in _SUBJECTS and c.i < tok.i for c in clause.children)


_GREETINGS = word_set("hi hiya hey heya hello yo hola morning evening afternoon good g'day howdy ok so oi")
_ROLE_PREPS = word_set("at in on for with from based")


def _intro_start(doc: Doc) -> int | None:
    """Where a self-introduction without its 'I'm' starts: 'yo. gameplay programmer at a studio in
    leeds', 'Freelance editor based in Lyon', 'nurse here, on nights at the county hospital'."""
    i = 0
    while i < len(doc) and (doc[i].lower_ in _GREETINGS or doc[i].is_punct or doc[i].pos_ == "INTJ"):
        i += 1
    piece: list[Token] = []
    for tok in doc[i:]:
        if tok.text in (",", ".", "!", "?", ";", ":", "—", "–", "-") and piece or len(piece) > 12:
            break
        piece.append(tok)
    if not piece or len(piece) > 12 or any(t.pos_ in ("VERB", "AUX", "PRON") and t.lower_ != "based" for t in piece):
        return None
    nouns = [t for t in piece if t.pos_ in ("NOUN", "PROPN")]
    head = next((t for t in piece if t.lower_ in _ROLE_PREPS or t.lower_ == "here"), None)
    before = [t for t in nouns if head is None or t.i < head.i]
    if before and is_role_noun(before[-1].text) and head is not None:
        return i
    return None


def restore_subjects(doc: Doc) -> str | None:
    """The message with 'I' put back before each subjectless past-tense clause, or None when it has none.
    A clause after a comma counts only in a chain of them ("left acme, been at initech")."""
    out: list[str] = []
    changed, chain = False, False
    intro = _intro_start(doc)
    opens = _clause_openings(doc)
    for tok in doc:
        if tok.i == intro:
            out.append("I'm " + tok.text_with_ws)
            changed = True
            continue
        after_comma = tok.i > 0 and doc[tok.i - 1].text == "," and chain
        if (opens[tok.i] or after_comma) and _subjectless_past(tok):
            lead = {"been": "I've ", "done": "I'm "}.get(tok.lower_, "I ")
            word = tok.text if tok.text.isupper() or tok.ent_type_ else tok.text.lower()
            out.append(lead + word + tok.whitespace_)
            changed = chain = True
            continue
        if tok.text in _BOUNDARY:
            chain = False
        out.append(tok.text_with_ws)
    return "".join(out) if changed else None
