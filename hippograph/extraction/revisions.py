"""Statements that revise an earlier one: "change of plan: Postgres instead", "we switched our ATS to
Greenhouse", "moved my invoicing over to Fergus", "went with Grafana Cloud. final.", "got promoted to
project manager". Their notes carry a `revise:<kind>:` slot, so ingest gives them the slot of the
current note of that kind they most resemble (see `hippograph.note_changes`); a promotion replaces the
job title ("fact:title")."""

from __future__ import annotations

import re

from hippograph.dates import _RELATIVE
from hippograph.extraction.rules import Draft, Frame, slug
from hippograph.models import NoteKind
from hippograph.note_changes import RETRACT, REVISE

_CHANGE = re.compile(r"\bchange of plans?(?:\s+(?:on|for|about)\s+(?P<about>[^:,.!?]+))?\s*[:,-]?\s*"
                     r"(?:(?:i'm afraid|sorry|unfortunately|i fear|alas)\W+)*(?P<what>[^,.!?;]+)", re.IGNORECASE)
_SWITCH = re.compile(r"(?:^|\b(?P<who>i|we|i've|we've|i'm|we're|just|also|so|and)\s+)(?:have\s+)?(?:just\s+)?"
                     r"(?P<verb>switched|moved|migrated|changed|switching|moving|migrating)\s+(?P<poss>my|our|the)(?P<owner>\s+[\w-]+'s)?\s+"
                     r"(?P<what>[\w' -]+?)\s+(?:over\s+)?(?:from\s+[\w' .-]+?\s+)?to\s+(?P<to>[^,.!?;]+?)(?=\s+(?:and|but|because|so)\b|[,.!?;]|$)",
                     re.IGNORECASE)
_WENT_WITH = re.compile(r"(?:^|[.!?]\s*|\b(?:ok|so|we|i)\s+)went with\s+(?P<what>[^,.!?;]+)", re.IGNORECASE)
_DECIDED = re.compile(r"(?:^|[.!?:]\s*)(?:it's|it is|that's|that is)?\s*(?:decided|final)\s*[.!]*\s*$|"
                      r"\b(?:it's|it is) decided\b", re.IGNORECASE)
_AGREED = re.compile(r"\b(?:i|we) (?:agreed|decided|voted)\s*:\s*(?P<what>[^.!?;]+)", re.IGNORECASE)
_PROMOTED = re.compile(r"\bpromoted(?:\s+to\s+(?P<title>[\w -]+?))?(?=\s+(?:at|in|last|this|from|on)\b|[.,!?\s]*$|[.,!?])"
                       r"(?P<rest>[^.!?]*)[.!?]*\s*(?:(?P<after>[\w -]+?)\s+now\b)?", re.IGNORECASE)
_MADE_ME = re.compile(r"\b(?:they|she|he|we)(?:'ve| have)?\s+(?:made|named|appointed|moved)\s+me\s+(?:up\s+to\s+)?"
                      r"(?:the\s+|a\s+|an\s+|our\s+)?(?P<title>[\w&/ -]{2,40}?)(?=[!.,;]|\s+(?:this|last|from|since|at|in)\b|$)",
                      re.IGNORECASE)  # "they made me VP Marketing!", "they moved me up to AP chem"
_GOT_POST = re.compile(r"(?:^|[.!?]\s+|\b(?:i|i've|finally|just)\s+)(?:got|landed)\s+my\s+"
                       r"(?!(?:old|new|first|dream|staff|full-time|part-time)\b)(?P<title>[\w&/ -]{2,40}?)\s+"
                       r"(?P<what>post|role|position)\b", re.IGNORECASE)  # "fwiw got my registrar post"
_SWAP = {"my": "their", "our": "their", "me": "them", "i": "they", "us": "them", "we": "they"}


def in_third_person(text: str) -> str:
    """The user's words about themselves as a note says them: "I'm moving our backups" -> "they're
    moving their backups"."""
    text = re.sub(r"\b(?:i|we)'(m|re)\b", "they're", text.strip(), flags=re.IGNORECASE)
    text = re.sub(r"\b(?:i|we)'(ve|ll|d)\b", lambda m: f"they'{m.group(1)}", text, flags=re.IGNORECASE)
    return re.sub(r"\b(my|our|me|i|us|we)\b", lambda m: _SWAP[m.group(1).lower()], text, flags=re.IGNORECASE)


def _when(text: str) -> str:
    found = _RELATIVE.search(text)
    return f" {found.group(0)}" if found else ""


def revision_notes(text: str, has_preference: bool) -> list[Draft]:
    """The revisions one user message states (usually none)."""
    out: list[Draft] = []
    change = _CHANGE.search(text)
    if change is not None and not has_preference and change["what"].strip():
        about = f" on {in_third_person(change['about'])}" if change["about"] else ""
        what = in_third_person(change["what"])
        out.append((NoteKind.decision, f"Decided{about}: {what}", f"{REVISE}decision:decision:{slug(what)}"))
    if (switch := _SWITCH.search(text)) is not None:
        ours = switch["poss"].lower() == "our" or bool(switch["owner"]) or (switch["who"] or "").lower() in ("we", "we've", "we're")
        kind = NoteKind.decision if ours else NoteKind.fact
        owner = " ".join(in_third_person(w) for w in (switch["poss"], (switch["owner"] or "").strip()) if w)
        note = f"Switched {owner} {switch['what']} to {switch['to'].strip()}"
        out.append((kind, note, f"{REVISE}{kind.value}:{kind.value}:switch:{slug(switch['what'])}"))
    if (went := _WENT_WITH.search(text)) is not None:
        what = went["what"].strip()
        out.append((NoteKind.decision, f"Went with {in_third_person(what)}", f"decision:go_with:{slug(what)}"))
    if not out and _DECIDED.search(text) and (agreed := _AGREED.search(text)) is not None:
        what = in_third_person(agreed["what"])
        out.append((NoteKind.decision, f"Decided: {what}", f"{REVISE}decision:decision:{slug(what)}"))
    if (post := _GOT_POST.search(text)) is not None:
        out.append((NoteKind.fact, f"Got the {post['title'].strip()} {post['what'].lower()}{_when(text)}", "fact:title"))
        return out
    if (made := _MADE_ME.search(text)) is not None:
        out.append((NoteKind.fact, f"Was made {made['title'].strip()}{_when(text)}", "fact:title"))
        return out
    promoted = _PROMOTED.search(text)
    if promoted is not None and (title := promoted["title"] or promoted["after"]):
        title = re.sub(r"^(?:a|an|the)\s+", "", title.strip(), flags=re.IGNORECASE)
        out.append((NoteKind.fact, f"Was promoted to {title}{_when(text)}", "fact:title"))
    return out


def departure(frames: list[Frame]) -> Draft | None:
    """'left Globex', 'I quit the choir': the user's notes about what they left end (a retraction of it),
    however the new state is worded. 'Leaving for Paris' names a destination, not what ends."""
    for frame in frames:
        if frame.key in ("leave", "quit") and frame.ref is not None and not frame.negated:
            return NoteKind.fact, f"Left {frame.ref.name}", RETRACT + slug(frame.ref.name)
    return None
