"""Decisions said the way people announce them: "decision made: the report goes out on Fridays", "so
Postgres it is", "we're going all in on video, that's the plan", "we dropped the beta, going with a
waitlist instead. final", "we've settled on two releases a month", "from May I'm only taking remote work".

A message marked as a decision by such words states the decision in the user's (or their team's) own
clause next to the marker; the note keeps that clause, in the third person. A decision that names the
value it replaces ("instead of Jira", "scrap the improvement plan") replaces it at ingest (see
`hippograph.note_changes.named_old`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from hippograph.extraction.revisions import in_third_person
from hippograph.extraction.rules import Draft, is_first_person, is_question, slug
from hippograph.models import NoteKind

if TYPE_CHECKING:
    from spacy.tokens import Span

# When a plan starts: "from April", "starting next month", "from 2025".
_WHEN = (r"(?:next \w+|this \w+|\d{4}|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)\w*|mon\w*|tue\w*|"
         r"wed\w*|thu\w*|fri\w*|sat\w*|sun\w*|today|tomorrow)")
# Words that mark what is said as settled (a marker alone, "final.", states nothing by itself).
_MARKED = re.compile(
    r"\b(?:decided|decision(?: is|'s)? made|(?:it's|that's|is) (?:final|decided|settled|locked(?: in)?)|final(?: call| answer)?"
    r"\s*[.!]*\s*$|(?:locked(?: in)?|committed)\s*[.!]*\s*$|that settles it|settled on|we(?:'re| are) settling|made the call|"
    r"(?:that's|that is) the plan|going (?:all in|ahead) (?:on|with)|(?:^|\W)(?:ok\s+|so\s+)?going with|"
    r"we(?:'re|'ve| are| have)?\b[^.;!?]*\binstead\b|changed (?:my|our) minds?|on second thought|"
    r"we(?:'re| are) (?:off|done with|moving off|dropping|ditching)\b|\bwill be\b[^.;!?]*\bfrom now on\b|"
    r"change of heart|(?:we|i) (?:ditched|dropped|scrapped|killed|binned)\b|(?:we|i)(?:'re| are|'m| am) (?:switching|moving|changing) (?:over )?to\b|"
    rf"(?:i'm|i am|we're|we are) (?:only )?\w+ing\b[^.;!?]*\b(?:from|starting(?: in| from)?) {_WHEN}\b|"
    rf"\b(?:from|starting(?: in| from)?) {_WHEN},? (?:i'm|i am|we're|we are) (?:only )?\w+ing\b)",
    re.IGNORECASE,
)
_CLAUSE_DECIDES = frozenset({"decide", "choose", "pick", "opt", "select"})  # the clause rules read these
_IT_IS = re.compile(r"(?:^|[,;:.!]\s*|\bso\s+|\bthen\s+)(?P<what>[\w][\w .&'+-]{0,40}?)\s+it is\s*[.!]*\s*$", re.IGNORECASE)
_OWN = re.compile(r"\b(?:we|i|we've|i've|we're|i'm|we'll|i'll|our|my|me|us)\b", re.IGNORECASE)
_ONLY_MARKER = re.compile(r"^\W*(?:ok|okay|so|right|and|yes)?\W*(?:it's |that's )?(?:final|decided|locked|settled|committed|"
                          r"that settles it|that's the plan|decision made)\W*(?:locked|final)?\W*$", re.IGNORECASE)
_LEAD = re.compile(r"^(?:ok(?:ay)?|so|right|well|and|but|ugh|yeah|alright)\b[\s,]*", re.IGNORECASE)


def _clause(sent: Span) -> str:
    """The sentence without the marker's own words before a colon ("decision made: X" -> "X")."""
    text = sent.text.strip()
    if ":" in text and _MARKED.search(text.split(":", 1)[0]):
        text = text.split(":", 1)[1]
    return _LEAD.sub("", text.strip(" .!-—–")).strip()


def stated_decision(said: Sequence[Span]) -> Draft | None:
    """The decision a user message announces (`said`: its sentences, or as many as were read), or None."""
    sents = [s for s in said if not is_question(s)]
    if any(t.lemma_.lower() in _CLAUSE_DECIDES and any(c.dep_ == "nsubj" and is_first_person(c) for c in t.children)
           and any(c.dep_ in ("xcomp", "ccomp", "dobj", "prep") for c in t.children) for s in said for t in s):
        return None  # "we decided to move the backlog to Jira": the clause's own decision note
    if (it_is := next((m for s in sents if (m := _IT_IS.search(s.text.strip()))), None)) is not None:
        what = re.sub(r"^(?:so|then|ok|okay)\s+", "", it_is["what"].strip(), flags=re.IGNORECASE)
        if re.search(r"\b(?:it|what|that|this|there|who|how)\b", what, re.IGNORECASE):
            return None  # "it is what it is"
        return NoteKind.decision, f"Decided: {in_third_person(what)}", f"decision:chose:{slug(what)}"
    if not any(_MARKED.search(s.text) for s in sents):
        return None
    said = [s for s in sents if not _ONLY_MARKER.match(s.text.strip()) and (
        _OWN.search(_clause(s)) or (":" in s.text and _MARKED.search(s.text.split(":", 1)[0]))
        or re.search(r"\bgoing with\b", _clause(s), re.IGNORECASE))]  # "ok decided, going with X"
    if not said:
        return None
    text = "; ".join(in_third_person(_clause(s)) for s in said[:2])
    if len(text) > 200:
        text = text[:200].rsplit(" ", 1)[0]
    return NoteKind.decision, f"Decided: {text}", f"decision:said:{slug(text)[:60]}"
