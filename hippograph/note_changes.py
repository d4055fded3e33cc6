"""Notes that change other notes rather than add one: a retraction ("forget what I said about tables")
retires the current notes it names; a revision ("change of plan: Postgres instead", "switched my editor
to Neovim") takes the slot of the current note it most resembles, so it replaces that note even though
the two are worded apart. The extractor marks them by slot prefix; ingest asks this module what to do."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from hippograph.extraction.rules import word_set
from hippograph.models import Note, NoteKind

RETRACT = "retract:"
REVISE = "revise:"  # "revise:<kind>:<own slot>"; the kind is the one of the notes it may replace
# Both on MiniLM's cosine scale; another embedder's cosines are read on it through its `cosine_zero`.
MIN_SIMILARITY = 0.35  # below it, a revision resembles no current note and keeps its own slot
MIN_RETRACT_SIMILARITY = 0.3  # below it, a retraction names no current note (chosen on the tuning parts)
_STOP = word_set("the a an my our your their of in on at to for with and or about thing stuff what i said "
                 "before earlier")

Embed = Callable[[Sequence[str]], list[list[float]]]


def _similarities(embed: Embed, text: str, notes: Sequence[Note], cosine_zero: float = 0.0) -> list[float]:
    """The cosine of each note's text to `text` (the embedder's vectors are unit length), rescaled so
    that `cosine_zero`, the cosine that means no likeness for this embedder, reads as 0 and 1 stays 1."""
    vectors = embed([text, *(n.text for n in notes)])
    cosines = [sum(a * b for a, b in zip(vectors[0], v, strict=True)) for v in vectors[1:]]
    return [(c - cosine_zero) / (1.0 - cosine_zero) for c in cosines]


def _stems(text: str) -> set[str]:
    return {w[:5] for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP and len(w) > 2}


def retracted(
    topic: str, current: Sequence[Note], embed: Embed | None = None, cosine_zero: float = 0.0,
) -> list[Note]:
    """The current notes a retraction names. Candidates share a content word with its topic (compared
    on the first five letters, so 'tables' names 'table' and 'deploys' names 'deploy'). With an embedder
    the one closest in meaning goes ("you don't need to keep it brief anymore" retires "keep your
    replies short"); without one, those sharing the most words, at least half of the topic's. Either way
    'scratch the late pizza night plan' retires the plan about pizza nights, not the note that the user
    runs a pizza place."""
    words = _stems(topic)
    candidates = [n for n in current if words & _stems(n.text)] if words else []
    if not candidates:
        return []
    if embed is not None:
        scores = _similarities(embed, topic, candidates, cosine_zero)
        best = max(range(len(candidates)), key=lambda i: scores[i])
        return [candidates[best]] if scores[best] >= MIN_RETRACT_SIMILARITY else []
    shared = {n.id: len(words & _stems(n.text)) for n in candidates}
    most = max(shared.values())
    return [n for n in candidates if shared[n.id] == most] if most >= len(words) / 2 else []


def revised(kind: NoteKind, text: str, current: Sequence[Note], embed: Embed | None,
            cosine_zero: float = 0.0) -> Note | None:
    """The current note of this kind a revision replaces: the most similar one, by the embedder when
    there is one (paraphrase: 'docs go into the wiki' vs 'documentation lives in Notion'), else by shared
    words; none when nothing is close enough."""
    same = [n for n in current if n.kind == kind]
    if not same:
        return None
    if embed is not None:
        scores = _similarities(embed, text, same, cosine_zero)
    else:
        words = _stems(text)
        scores = [len(words & _stems(n.text)) / max(1, len(words | _stems(n.text))) for n in same]
    best = max(range(len(same)), key=lambda i: scores[i])
    return same[best] if scores[best] >= MIN_SIMILARITY else None


def revision_kind(slot: str) -> NoteKind | None:
    if not slot.startswith(REVISE):
        return None
    kind = slot[len(REVISE):].split(":", 1)[0]
    return NoteKind(kind) if kind in {k.value for k in NoteKind} else None


# "left acme, been at initech", "moved all my invoices over to Xero, QuickBooks is gone", "Linear instead
# of Jira", "not checkout anymore": a message that states a new note and names the old one's value in
# words of change replaces that note, however differently the two are worded.
_CHANGE = re.compile(r"\b(?:instead|anymore|any more|no longer|switch\w*|mov(?:e|ed|ing)|chang\w*|left|leav\w*|"
                     r"quit|gone|off|replac\w*|rather|not|no|update\w*|dropp\w*|ditch\w*|done with|scrap\w*|kill\w*|"
                     r"cancel\w*|again|transferr\w*|obsolete|fell through|off the table|scratch\w*|pivot\w*|"
                     r"didn't work out)\b",
                     re.IGNORECASE)
_NOTE_FRAME = word_set("is are was were has have had wants want the assistant them they their prefers prefer "
                       "likes decided decide works work lives live uses use based being been does not doesn't "
                       "don't no than every always never")


_FUNCTION = word_set("all any some every each more most less much many very just also only even still then than this "
                     "that these those there here with from into onto over under again never always now new old")


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[\w'-]+", text.lower())
            if len(w) > 2 and w not in _STOP and w not in _NOTE_FRAME and w not in _FUNCTION}


def _known(slot: str) -> bool:
    """A slot of a known subject ('fact:live_in', 'preference:name'), not one named after an object."""
    return slot.count(":") == 1


def distinct_subjects(a: str, b: str) -> bool:
    """Two slots of different known subjects: a note of one never replaces a note of the other."""
    return _known(a) and _known(b) and a != b


def named_old(kind: NoteKind, slot: str, text: str, message: str, current: Sequence[Note],
              episode_id: str) -> Note | None:
    """The current note of this kind whose own words the message names in a change ("left X", "X is
    gone", "Y instead of X"), when the message states `text`; none when the message speaks of no change.
    Two known subjects never replace each other: 'call me Sam, not Samantha' leaves the wish for texts
    over calls alone."""
    if not _CHANGE.search(message):
        return None
    said, new = _words(message), _words(text)
    for note in current:
        if note.kind != kind or episode_id in note.source_episode_ids or distinct_subjects(slot, note.slot):
            continue
        names = {w.lower() for w in re.findall(r"(?<=\s)[A-Z][\w'-]+", note.text)}  # "Jira" even if said anew
        value = (_words(note.text) - new) | (names & _words(note.text))
        if value & said:
            return note
    return None


# The user's role is said two ways, as a title ("I'm a sales director") or as what they lead ("I run
# inbound logistics"): a new role said with a change ("got promoted, running the whole site now")
# replaces the current one said the other way.
ROLE_SLOTS = ("fact:title", "fact:manage")
_NEW_ROLE = re.compile(r"\b(?:now|promot\w*|made me|new (?:role|job|position)|moved (?:me )?up|took over|"
                       r"taking over|step(?:ped|ping)? up)\b", re.IGNORECASE)


def role_changed(slot: str, message: str, current: Sequence[Note], episode_id: str) -> Note | None:
    if slot not in ROLE_SLOTS or not (_NEW_ROLE.search(message) or _CHANGE.search(message)):
        return None
    return next((n for n in current if n.slot in ROLE_SLOTS and n.slot != slot
                 and episode_id not in n.source_episode_ids), None)
