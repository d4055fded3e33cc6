"""The subject people leave out when they write about themselves: "moved to Trondheim last week",
"update: left infosys, been at paytrail for ten days now", "Started at Lumo Bank in May". In a user's
message a clause that opens with a past-tense verb and has no subject is the user's own statement; the
parser reads it right only once the "I" is back, so the message is parsed again with it restored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hippograph.extraction.rules import word_set

if TYPE_CHECKING:
    from spacy.tokens import Doc, Token

# Words that may open a clause before its verb: "also finally moved ...", "update: left ...".
_OPENERS = word_set("also finally just so and then oh ok okay well anyway btw actually recently")
_BOUNDARY = frozenset({".", "!", "?", ":", ";", "\n"})
_SUBJECTS = frozenset({"nsubj", "nsubjpass", "expl", "csubj"})


def _opens_clause(doc: Doc, i: int) -> bool:
    """Token i starts a clause: at the start, after a sentence mark or a colon, past openers only."""
    j = i - 1
    while j >= 0 and doc[j].lower_ in _OPENERS:
        j -= 1
    return j < 0 or doc[j].text in _BOUNDARY or doc[j].text.endswith("\n")


def _subjectless_past(tok: Token) -> bool:
    if tok.tag_ not in ("VBD", "VBN") or not tok.is_alpha:
        return False
    clause = tok if tok.dep_ not in ("amod", "compound") else tok.head
    return not any(c.dep_ in _SUBJECTS and c.i < tok.i for c in clause.children)


def restore_subjects(doc: Doc) -> str | None:
    """The message with 'I' put back before each subjectless past-tense clause, or None when it has none.
    A clause after a comma counts only in a chain of them ("left infosys, been at paytrail")."""
    out: list[str] = []
    changed, chain = False, False
    for tok in doc:
        after_comma = tok.i > 0 and doc[tok.i - 1].text == "," and chain
        if (_opens_clause(doc, tok.i) or after_comma) and _subjectless_past(tok):
            lead = "I've " if tok.lower_ == "been" else "I "
            word = tok.text if tok.text.isupper() or tok.ent_type_ else tok.text.lower()
            out.append(lead + word + tok.whitespace_)
            changed = chain = True
            continue
        if tok.text in _BOUNDARY:
            chain = False
        out.append(tok.text_with_ws)
    return "".join(out) if changed else None
