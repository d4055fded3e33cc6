"""The notes of one clause in which the user speaks about themselves: a fact ("I live in Seattle" ->
fact:live_in), a liking ("I love hiking" -> preference:like:hiking), a decision ("we'll go with Postgres"),
or a possession ("my birthday is May 5"). What is not worth keeping gives none: a need, what the user is
doing right now, the team's state, what a colleague does."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hippograph.extraction.base import ExtractedNote
from hippograph.extraction.rules import (
    DECIDING,
    KIN,
    KIN_MULTI,
    PLACE_KEY,
    SENTIMENT,
    VOWELS,
    Draft,
    Frame,
    argument_tokens,
    fact_slot,
    gerund,
    head_tokens,
    is_past,
    lemma,
    phrase_tokens,
    render,
    retracts,
    slug,
    word_set,
)
from hippograph.models import NoteKind

if TYPE_CHECKING:
    from spacy.tokens import Span, Token

_NOT_PLANS = word_set("be have miss need get happen say tell cry die feel")


def clause_notes(
    verb: Token, subject: Token, frames: list[Frame], sent: Span, negated: bool, episode_id: str,
    said_apart: frozenset[int] = frozenset(),
) -> list[ExtractedNote]:
    """The notes of one clause in which the user speaks about themselves (usually zero or one)."""
    drafts: list[Draft | None]
    if frames and frames[0].kind == "possessive":
        drafts = [_possessive_note(f, subject) for f in frames]
    elif (decision := _decision_note(verb, frames, negated)) is not None:
        drafts = [decision]
    elif lemma(verb) in SENTIMENT or lemma(verb) == "prefer":
        drafts = [_preference_note(verb, f) for f in frames]
    else:
        drafts = [_fact_note(verb, frames, sent, negated, subject, said_apart)]
    return [ExtractedNote(kind=k, text=t, slot=s, episode_id=episode_id) for k, t, s in filter(None, drafts)]


def kin_note(noun: str, name: str) -> Draft:
    slot = f"fact:{noun}:{slug(name)}" if noun in KIN_MULTI else f"fact:{noun}"
    return NoteKind.fact, f"Has {'an' if noun[0] in VOWELS else 'a'} {noun} named {name}", slot


def _possessive_note(frame: Frame, subject: Token) -> Draft | None:
    """'My birthday is May 5' -> fact:birthday; 'My favourite food is sushi' -> preference:favourite:food."""
    words = [key for _, key in frame.parts[1:]]
    if frame.negated or (words[-1] in KIN and frame.ref is None):
        return None
    if any(c.dep_ == "poss" and c.lower_ in ("our", "we") for c in subject.children):
        return None  # "our platform team is 9 people now": the team's state, the world's to keep
    if words[-1] in KIN and frame.ref is not None:
        return kin_note(words[-1], frame.ref.name)
    owner = {t for c in subject.children if c.dep_ == "poss" for t in c.subtree}
    tokens = [t for t in subject.subtree if t not in owner] + [frame.verb, *argument_tokens(frame.verb)]
    text = render(tokens, conjugate=False)  # "my birthday is May 5" -> "Birthday is May 5"
    if words[0] == "favourite" and len(words) > 1:
        return NoteKind.preference, text, f"preference:favourite:{' '.join(words[1:])}"
    return NoteKind.fact, text, f"fact:{'_'.join(words)}"


def _decision_note(verb: Token, frames: list[Frame], negated: bool) -> Draft | None:
    """'I decided to ...', 'I chose X', "let's use X", "we'll go with X", "I'm going to learn X"."""
    if negated:
        return None
    word, children = lemma(verb), list(verb.children)
    xcomp = next((c for c in children if c.dep_ in ("xcomp", "ccomp") and c.pos_ == "VERB"), None)
    future = any(c.dep_ == "aux" and c.lower_ in ("will", "'ll", "shall") for c in children)
    with_prep = any(c.dep_ == "prep" and c.lower_ == "with" for c in children)
    named = any(c.dep_ in ("dobj", "prep") and c.pos_ != "PRON" for c in children)  # not "I chose them"
    if word in DECIDING and (xcomp is not None or named):
        text = render(head_tokens(verb) + argument_tokens(verb))
    elif verb.head.lemma_ == "let" and verb.dep_ == "ccomp":
        text = render(argument_tokens(verb), lead=f"Decided to {word}")
    elif word == "go" and with_prep and (future or verb.tag_ == "VBG"):
        text = render(argument_tokens(verb), lead="Decided to go")
    elif word == "go" and verb.tag_ == "VBG" and xcomp is not None and lemma(xcomp) not in _NOT_PLANS:
        text = render(argument_tokens(verb), lead="Plans")
    else:
        return None
    frame = next((f for f in frames if f.ref is not None), None)
    if frame is None or frame.ref is None:
        return NoteKind.decision, text, f"decision:{slug(text)}"
    first, _, rest = frame.key.partition("_")
    key = rest if first in DECIDING | {"plan"} and rest else frame.key
    return NoteKind.decision, text, f"decision:{key}:{slug(frame.ref.name)}"


def _preference_note(verb: Token, frame: Frame) -> Draft | None:
    """'I like hiking' -> preference:like:hiking (love, enjoy, hate ... share it); 'I prefer X' -> prefer."""
    if frame.ref is None:
        return None
    topic = slug(" ".join([*(gerund(v) for v in frame.via), frame.ref.name]))
    slot = "preference:prefer" if lemma(verb) == "prefer" else f"preference:like:{topic}"
    return NoteKind.preference, render(head_tokens(verb) + phrase_tokens(frame.obj, verb)), slot


# What the user needs or wants now is a request ("I need a quiz", "want answers"), not who they are.
_REQUEST_VERBS = word_set("need want")
_POINTING = word_set("it them these those this that")
_ONGOING = word_set("work live stay study teach do run lead manage head cover think consider plan")  # "I'm working at X", "doing a PhD"


def _lasting(verb: Token, frame: Frame, subject: Token, slot: str) -> bool:
    """Whether a statement about the user is worth keeping. Outside the known subjects (home, job ...):
    not a need ("I need a template"), not what one is doing now ("I'm building a tool", "reading these
    on my laptop"), not about something only the conversation names ("stick them on the wall"), and not
    the team's or company's state ("we just hit 11 people", "we're open Mondays again"), which is the
    world's and changes."""
    home = slot == "fact:live_in" or bool(PLACE_KEY.fullmatch(frame.key))  # "we moved house, we're in Bend"
    if slot.count(":") == 1 or home:
        return home or subject.lower_ not in ("we", "us")
    pointing = frame.obj.lower_ in _POINTING or (frame.ref is not None and frame.ref.type != "Location" and any(
        c.dep_ == "dobj" and c.lower_ in _POINTING for c in verb.children))  # but "I run it from Istanbul"
    if subject.lower_ in ("we", "us") or lemma(verb) in _REQUEST_VERBS or pointing:
        return False  # "I read them between meetings": about what only the conversation names
    if any(c.dep_ == "poss" and c.lower_ in ("her", "his", "their") for c in frame.obj.children):
        return False  # "I'm covering her calendar": about her
    if frame.ref is not None and frame.ref.type == "Date":
        return False  # "so stressed for next year": a feeling about a date
    if lemma(verb) == "get" and is_past(verb):
        return False  # "got a weird crash in the build": what happened, not who the user is
    progressive = verb.tag_ == "VBG" and any(c.dep_ == "aux" and c.lemma_ == "be" for c in verb.children)
    return not progressive or lemma(verb) in _ONGOING


def _fact_note(verb: Token, frames: list[Frame], sent: Span, negated: bool, subject: Token,
               said_apart: frozenset[int] = frozenset()) -> Draft | None:
    """'I live in Seattle' -> fact:live_in; 'I have a dog' -> fact:have:dog; negations keep the slot.
    `said_apart`: tokens other notes of the clause already say ('at St Mary's' is the employer's note), left
    out of this one so that each changes on its own."""
    frame = next((f for f in frames if f.ref is not None and f.ref.name != f.subject.name), None)
    if frame is None or frame.ref is None:
        return None
    slot = fact_slot(frame.key, frame.ref.name, is_past(verb), frame.ref.type)
    if not _lasting(verb, frame, subject, slot):
        return None
    if (negated or frame.negated) and slot.count(":") == 1 and not retracts(sent):
        return None  # "I don't live in Paris" says nothing about where the user lives
    arguments = argument_tokens(verb)
    if slot == "fact:title":  # "a nurse at St Mary's": the employer has a note of its own
        arguments = [t for t in arguments if t.i not in said_apart] or arguments
    return NoteKind.fact, render(head_tokens(verb) + arguments), slot
