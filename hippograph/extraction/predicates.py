"""What a token of the parse is in a clause: a predicate and its first word, its arguments and
prepositional objects, a kin word's name, the noun phrase a name is read from (for the spaCy reader)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from hippograph.extraction import rules
from hippograph.extraction.rules import lemma, word_set

if TYPE_CHECKING:
    from spacy.tokens import Token

# Object types implied by a predicate, used when NER gives nothing better.
TYPE_HINTS = {"WORKS_AT": "Organization", "WORKS_FOR": "Organization", "LIVES_IN": "Location",
              "MOVES_TO": "Location", "MOVES_FROM": "Location", "IS_FROM": "Location",
              "IS_BORN_IN": "Location"}  # fmt: skip
WEAK_TYPES = word_set("Thing Concept Event Product Work Group")
LANGUAGE_VERBS = ("SPEAK", "LEARN", "TEACH", "STUD", "PRACTI")
PARTICLE_ADVERBS = word_set("forward back away out up down off")
TRIM_DEPS = word_set("det poss predet punct cc nummod case neg prep advmod")


def object_type(predicate: str, found: str) -> str:
    """NER types corrected by the predicate: 'works at Acme' is an organization, 'learns Spanish' a
    language."""
    hint = TYPE_HINTS.get(predicate)
    if hint and found in WEAK_TYPES:
        return hint
    return "Language" if found == "Group" and any(v in predicate for v in LANGUAGE_VERBS) else found


def child_of(tok: Token, dep: str) -> Token | None:
    return next((c for c in tok.children if c.dep_ == dep), None)


def with_conj(tok: Token) -> list[Token]:
    return [tok, *(c for c in tok.conjuncts if c.i > tok.i)]


def has_no(obj: Token) -> bool:
    """'I have no kids': the negation is on the object."""
    return any(c.dep_ == "det" and c.lower_ == "no" for c in obj.children)


def particle_adverb(tok: Token) -> bool:
    return tok.dep_ == "advmod" and tok.lower_ in PARTICLE_ADVERBS and tok.i == tok.head.i + 1


def is_predicate(tok: Token) -> bool:
    if tok.pos_ in ("VERB", "AUX"):
        return tok.dep_ not in ("aux", "auxpass")
    if tok.pos_ != "NOUN" or tok.tag_ != "NN":  # the small model tags some verbs as nouns: "and work at"
        return False
    if tok.dep_ == "ROOT":
        return child_of(tok, "nsubj") is not None
    plain = not any(c.dep_ in ("det", "poss", "amod", "compound") for c in tok.children)
    return tok.dep_ == "conj" and tok.head.pos_ == "VERB" and plain and child_of(tok, "prep") is not None


def has_arguments(verb: Token) -> bool:
    return any(c.dep_ in ("dobj", "prep", "xcomp", "attr", "acomp", "ccomp", "prt") for c in verb.children)


def head_part(verb: Token) -> tuple[str, str]:
    """The first predicate word: MANAGES/manage, IS_BORN/be_born (passive), PLANS/plan ('going to')."""
    if child_of(verb, "auxpass") is not None and verb.tag_ == "VBN":
        return f"IS_{verb.lower_.upper()}", f"be_{verb.lower_}"
    if lemma(verb) == "go" and verb.tag_ == "VBG" and child_of(verb, "xcomp") is not None:
        return "PLANS", "plan"
    if lemma(verb) == "use" and verb.tag_ == "VBD" and child_of(verb, "xcomp") and not child_of(verb, "dobj"):
        return "USED", "used"  # "I used to live in Boston"
    return rules.third_person(lemma(verb)).upper(), lemma(verb)


def step(verb: Token) -> tuple[str, str]:
    """A controlled verb in a predicate: TO_USE (decided to use), WORKING (thinking of working)."""
    if any(c.dep_ == "aux" and c.tag_ == "TO" for c in verb.children):
        return f"TO_{lemma(verb).upper()}", lemma(verb)
    return (verb.lower_ if verb.tag_ == "VBG" else lemma(verb)).upper(), lemma(verb)


def prep_objects(tok: Token) -> Iterator[tuple[str, Token]]:
    for prep in (c for c in tok.children if c.dep_ == "prep"):
        for pobj in (c for c in prep.children if c.dep_ == "pobj"):
            yield from ((prep.lower_, obj) for obj in with_conj(pobj))


def kin_name(tok: Token) -> Token | None:
    appos = next((c for c in tok.children if c.dep_ == "appos" and c.pos_ == "PROPN"), None)
    if appos is None and tok.dep_ in ("appos", "compound") and tok.head.pos_ == "PROPN":
        return tok.head
    return appos


def chunk_name(tok: Token) -> str:
    """The noun phrase ending at `tok` without determiners and possessives: 'the whole country' -> ..."""
    span = tok.doc[tok.left_edge.i : tok.i + 1]
    start = 0
    while start < len(span) - 1 and (span[start].dep_ in TRIM_DEPS or span[start].pos_ in ("DET", "PRON")):
        start += 1
    return clean(span[start:].text)


def clean(name: str) -> str:
    name = re.sub(r"^(the|a|an)\s+", "", name.strip(), flags=re.IGNORECASE)
    return re.sub(r"('s|’s)$", "", name).strip(" \t\n\"'“”‘’.,;:!?()[]")
