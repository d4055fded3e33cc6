"""Episodic summaries of long sessions: what the in-context window leaves out, in a few lines.

A summary is a list of lines, each one sentence quoted from one message (extractive), so every line
keeps the message it came from as provenance. Summaries roll: the next one is the previous lines plus
lines from the messages that aged out of the window since, cut to a hard token cap by dropping the
least salient lines (older ones first), so a summary never grows and is never a summary of a summary.
Exact facts are not kept only here: extraction turns them into long-term notes from the messages.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from pydantic import BaseModel

from hippograph.models import Episode, Role
from hippograph.tokens import TokenCounter

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’-]*")
_SMALL_TALK = re.compile(
    r"^(hi|hello|hey|thanks|thank you|ok|okay|sure|great|cool|nice|bye|good (morning|night|evening)|"
    r"you're welcome|no problem|sounds good|got it)\b[\s,.!]*$", re.IGNORECASE)
_CUES = re.compile(
    r"\b(decid\w*|agree\w*|will|won't|need\w*|must|prefer\w*|plan\w*|want\w*|should|because|problem\w*|"
    r"error\w*|fail\w*|deadline|budget|moved?|started?|switch\w*|chose|choose|booked|bought|promis\w*)\b",
    re.IGNORECASE)
_STOP = frozenset({
    "a", "an", "the", "and", "or", "but", "if", "of", "to", "in", "on", "at", "for", "with",
    "from", "by", "is", "are", "was", "were", "be", "been", "am", "i", "you", "we", "it", "this",
    "that", "these", "those", "my", "your", "our", "me", "us", "he", "she", "they", "them", "his", "her",
    "their", "its", "so", "do", "did", "does", "have", "has", "had", "just", "really", "very",
})


class SummaryLine(BaseModel):
    text: str
    source: str  # the episode id the sentence was taken from
    client_id: str | None = None
    at: datetime
    score: float


class Summarizer(Protocol):
    name: str

    def summarize(self, previous: Sequence[SummaryLine], episodes: Sequence[Episode], max_tokens: int
                  ) -> list[SummaryLine]:
        """The previous summary rolled forward over `episodes` (oldest first), within `max_tokens`."""
        ...


def salience(sentence: str, role: Role | None) -> float:
    """How much a sentence is worth keeping: content words, decisions and plans, numbers and names."""
    words = _WORD.findall(sentence)
    content = [w for w in words if w.lower() not in _STOP]
    score = min(len(content), 12) * 0.1
    score += 1.0 if _CUES.search(sentence) else 0.0
    score += 0.5 if any(ch.isdigit() for ch in sentence) else 0.0
    score += min(sum(1 for w in words[1:] if w[:1].isupper()), 3) * 0.2
    score += 0.3 if sentence.rstrip().endswith("?") else 0.0
    score += 0.2 if role == Role.user else 0.0
    return round(score, 4)


def best_sentence(ep: Episode) -> tuple[str, float] | None:
    """The message's most salient sentence, or None for small talk and one-word turns."""
    best: tuple[str, float] | None = None
    for sentence in _SENTENCE.split(ep.content.strip()):
        sentence = " ".join(sentence.split())
        if len(_WORD.findall(sentence)) < 4 or _SMALL_TALK.match(sentence):
            continue
        if len(sentence) > 300:
            sentence = sentence[:297].rstrip() + "…"
        score = salience(sentence, ep.role)
        if best is None or score > best[1]:
            best = (sentence, score)
    return best


def speaker(ep: Episode) -> str:
    return ep.name or (ep.role.value if ep.role else ep.kind.value)


def line_of(ep: Episode) -> SummaryLine | None:
    if ep.role not in (Role.user, Role.assistant):  # tool results have their own log; system rules are pinned
        return None
    found = best_sentence(ep)
    if found is None:
        return None
    text, score = found
    return SummaryLine(text=f"{speaker(ep)}: {text}", source=ep.id, client_id=ep.client_id, at=ep.timestamp,
                       score=score)


def render(lines: Sequence[SummaryLine]) -> str:
    return "\n".join(f"- {line.text}" for line in lines)


class ExtractiveSummarizer:
    """No model: the most salient sentence of each substantive message, cut to the cap."""

    name = "extractive"

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter

    def summarize(self, previous: Sequence[SummaryLine], episodes: Sequence[Episode], max_tokens: int
                  ) -> list[SummaryLine]:
        lines = list(previous) + [line for ep in episodes if (line := line_of(ep)) is not None]
        return cap(lines, self.counter, max_tokens)


def cap(lines: list[SummaryLine], counter: TokenCounter, max_tokens: int) -> list[SummaryLine]:
    """Drop the least salient lines until the rendering fits; older lines weigh less, so the summary
    keeps more detail about what happened recently and only the salient points of the distant past."""
    kept = list(lines)
    costs = [counter.count(f"- {line.text}") + 1 for line in kept]
    total = sum(costs)
    while kept and (total > max_tokens or counter.count(render(kept)) > max_tokens):
        n = len(kept)
        weakest = min(range(n), key=lambda i: kept[i].score * (0.5 + 0.5 * (i + 1) / n))
        kept.pop(weakest)
        total -= costs.pop(weakest)
    return kept
