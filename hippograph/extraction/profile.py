"""Work and place facts with one current value, read from how people introduce themselves: "I'm a GP at a
practice in Bristol", "data analyst at Maple & Pine, based in Toronto" give the city ("fact:live_in") and
the employer ("fact:work_at"); "new boss is Rachel", "I now report to Anne" give the manager
("fact:manager"). A later statement on the same slot replaces the note whatever its wording."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from hippograph.extraction.rules import (
    UNIT_NOUNS,
    Draft,
    is_first_person,
    is_hypothetical,
    is_irrealis,
    is_negated,
    lemma,
    word_set,
)
from hippograph.models import NoteKind
from hippograph.note_changes import RETRACT

if TYPE_CHECKING:
    from spacy.tokens import Span, Token

# Verbs of a self-introduction whose place or organisation is the user's own.
_INTRO_VERBS = word_set("be work lecture teach coach run base stay study practise practice")
_PLACE_PREPS = word_set("in outside near")
_ORG_PREPS = word_set("at for")
_NOT_PLACES = word_set("ORG DATE TIME NORP LANGUAGE CARDINAL ORDINAL MONEY PERCENT QUANTITY EVENT PRODUCT")
MANAGERS = word_set("manager boss supervisor")
_MANAGING_PARTNER = word_set("supervising managing")


def _clause_of(tok: Token) -> Token:
    """The clause head above a token, passing noun phrases and participles ('lawyer based in')."""
    head = tok.head
    while head.head.i != head.i and (head.pos_ not in ("VERB", "AUX") or head.dep_ in ("acl", "amod")):
        head = head.head
    return head


def _own_clause(verb: Token) -> bool:
    """The user speaks of themselves: 'I' is the subject, or a subjectless fragment ('plumber in Sydney')."""
    subjects = [c for c in verb.children if c.dep_ in ("nsubj", "nsubjpass")]
    if subjects:
        return all(is_first_person(s) and s.lower_ in ("i", "me") for s in subjects)
    return verb.dep_ == "ROOT" and verb.pos_ in ("NOUN", "PROPN")


def _name(tok: Token) -> str:
    if tok.ent_iob_ in ("B", "I"):  # the entity it is in (read from its neighbours, not from all of doc.ents)
        doc, start, end = tok.doc, tok.i, tok.i + 1
        while doc[start].ent_iob_ == "I" and start > 0:
            start -= 1
        while end < len(doc) and doc[end].ent_iob_ == "I":
            end += 1
        return doc[start:end].text
    words = [t for t in tok.subtree if t.dep_ in ("compound", "nmod", "flat") or t == tok]
    return " ".join(t.text for t in words if t.pos_ == "PROPN" or t == tok)


def _label(tok: Token) -> str:
    return tok.ent_type_ or ""


def self_intro_notes(sent: Span) -> list[tuple[Draft, Token]]:
    """City and employer from a self-introduction, with the token each came from."""
    out: list[tuple[Draft, Token]] = []
    for prep in sent:
        if prep.dep_ != "prep" or prep.lower_ not in _PLACE_PREPS | _ORG_PREPS | {"on"}:
            continue
        pobj = next((c for c in prep.children if c.dep_ == "pobj"), None)
        if pobj is None:
            continue
        verb = _clause_of(prep)
        if verb.pos_ in ("VERB", "AUX") and (lemma(verb) not in _INTRO_VERBS or is_irrealis(verb) or
                                             is_negated(verb)):
            continue
        if not _own_clause(verb):
            continue
        if prep.lower_ in ("on", "in") and pobj.lemma_.lower() in UNIT_NOUNS and verb.pos_ in ("VERB", "AUX"):
            inner = {t.i for c in pobj.children if c.dep_ == "prep" for t in c.subtree}  # not "at St Thomas's"
            phrase = " ".join(t.text for t in pobj.subtree if t.dep_ != "punct" and t.i not in inner)
            out.append(((NoteKind.fact, f"Is {prep.lower_} {phrase}", "fact:team"), prep))
            continue
        named = [t for t in pobj.subtree if t.pos_ == "PROPN" and t.dep_ in ("compound", "nmod", "pobj")
                 and (t == pobj or t.head == pobj)]  # not "in linguistics at UofT"
        if not named:
            continue
        proper = named[-1] if pobj.pos_ != "PROPN" else pobj
        if prep.lower_ in _PLACE_PREPS and _label(proper) not in _NOT_PLACES and not proper.text.isupper():
            phrase = " ".join(t.text for t in pobj.subtree if t.dep_ != "punct")
            slot = "fact:work_location" if pobj.lemma_.lower() == "office" else "fact:live_in"
            out.append(((NoteKind.fact, f"Is based {prep.lower_} {phrase}", slot), prep))
        elif prep.lower_ in _ORG_PREPS and _label(proper) in ("ORG", "FAC", "") and proper.is_title:
            out.append(((NoteKind.fact, f"Works at {_name(proper)}", "fact:work_at"), prep))
    return out


# "Dana's my manager now", which the parser often reads as a possessive.
_NAMED_MINE = re.compile(r"\b(?P<name>[A-Z][\w-]+(?: [A-Z][\w-]+)?)(?:'s| is)\s+(?:now\s+)?my\s+(?:new\s+)?(?:line\s+)?"
                         r"(?:manager|boss|supervisor)\b")


def manager_notes(sent: Span) -> list[tuple[Draft, Token]]:
    """'new boss is Rachel Nguyen', 'my supervising partner is Luc', 'I now report to Anne Claes'."""
    out: list[tuple[Draft, Token]] = []
    if (named := _NAMED_MINE.search(sent.text)) is not None:
        start = sent.start_char + named.start()
        tok = next(t for t in sent if t.idx >= start)
        return [((NoteKind.fact, f"Manager is {named['name']}", "fact:manager"), tok)]
    for verb in sent:
        if lemma(verb) not in ("be", "report") or is_irrealis(verb) or is_negated(verb):
            continue
        if lemma(verb) == "be":
            subj = next((c for c in verb.children if c.dep_ == "nsubj"), None)
            attr = next((c for c in verb.children if c.dep_ == "attr" and c.pos_ == "PROPN"), None)
            role = next((c for c in verb.children if c.dep_ == "attr" and c.lemma_.lower() in MANAGERS), None)
            if subj is not None and subj.pos_ == "PROPN" and role is not None and \
                    any(c.lower_ == "my" for c in role.children):  # "Dana's my manager now"
                out.append(((NoteKind.fact, f"Manager is {_name(subj)}", "fact:manager"), verb))
                continue
            if subj is None or attr is None:
                continue
            mods = {c.lower_ for c in subj.children}
            mine = "my" in mods or ("new" in mods and not any(c.dep_ in ("poss", "det") for c in subj.children))
            word = subj.lemma_.lower()
            if mine and (word in MANAGERS or (word == "partner" and mods & _MANAGING_PARTNER)):
                out.append(((NoteKind.fact, f"Manager is {_name(attr)}", "fact:manager"), subj))
                out.append(((NoteKind.fact, "", ""), verb))  # claims the clause
        elif lemma(verb) == "report":
            subj = next((c for c in verb.children if c.dep_ == "nsubj"), None)
            to = next((c for c in verb.children if c.dep_ == "prep" and c.lower_ in ("to", "into")), None)
            who = next((c for c in to.children if c.dep_ == "pobj"), None) if to else None
            if who is not None and who.pos_ != "PROPN":  # "reporting into our CEO, Mark"
                who = next((c for c in who.children if c.dep_ == "appos" and c.pos_ == "PROPN"), None)
            # "I report to Anne", and in an introduction "..., reporting to Lena"
            mine = subj is not None and subj.lower_ == "i" or subj is None and verb.tag_ == "VBG" and any(
                t.dep_ == "nsubj" and t.lower_ == "i" for t in sent)
            if mine and who is not None:
                out.append(((NoteKind.fact, f"Reports to {_name(who)}", "fact:manager"), verb))
    return out


# Lasting states people say with an adjective: a diet, a family status, retirement. Each is one slot, so
# "I'm pescatarian now" replaces "I'm vegan"; moods and passing states ("I'm tired") give nothing.
ATTRIBUTES = {
    "diet": word_set("vegetarian vegan pescatarian pescetarian veggie flexitarian halal kosher keto gluten-free "
                     "dairy-free"),
    "family_status": word_set("married divorced single widowed engaged separated"),
    "title": word_set("retired unemployed self-employed freelance"),
}


def attribute_notes(sent: Span) -> list[tuple[Draft, Token]]:
    """'also im vegetarian', "I'm not vegan anymore", 'I'm retired now'."""
    out: list[tuple[Draft, Token]] = []
    for comp in sent:
        word = comp.lower_
        slot = next((name for name, words in ATTRIBUTES.items() if word in words), None)
        if slot is None or any(c.dep_ in ("prep", "det") for c in comp.children):
            continue  # "a single mother of two" says more than the status
        if comp.dep_ in ("acomp", "attr") and lemma(comp.head) == "be":
            verb, subj = comp.head, next((c for c in comp.head.children if c.dep_ == "nsubj"), None)
        elif comp.pos_ == "VERB" and any(c.dep_ == "auxpass" for c in comp.children):  # "I'm retired"
            verb, subj = comp, next((c for c in comp.children if c.dep_ == "nsubjpass"), None)
        else:
            continue
        if subj is None or subj.lower_ != "i" or is_hypothetical(verb):
            continue
        if is_negated(verb):  # "I'm not vegan anymore": the note that said so ends
            if any(m in sent.text.lower() for m in ("anymore", "any more", "no longer")):
                out.append(((NoteKind.fact, f"Retracted: {word}", RETRACT + word), verb))
            continue
        out.append(((NoteKind.fact, f"Is {word}", f"fact:{slot}"), verb))
    return out
