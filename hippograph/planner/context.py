"""Assembling the context block: ordered sections fitted into a token budget.

Order in the block (attention favours the beginning and the end):
summary -> long-term notes -> relevant memories -> the session's tool-call log -> pinned messages ->
recent messages (with a gap marker where messages were left out) -> the current query.

Memories are chosen by relevance and shown in time order, grouped under the date they were said, so
the block reads as dated excerpts and each date costs its tokens once.

Budget: the query is always kept; then the recent window, pinned messages, notes and the summary take
what they need up to their share, in that priority, and memories get all the room left. The final
text is counted again and trimmed from the lowest-priority items until it fits, so
`tokens <= token_budget` always holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from pydantic import BaseModel, Field

from hippograph.tokens import TokenCounter

_EPOCH = datetime(1970, 1, 1).astimezone()

SECTION_ORDER = ("summary", "notes", "memories", "tools", "pinned", "recent", "query")
SECTION_TITLES = {
    "summary": "## Summary of earlier conversation",
    "notes": "## What I know about the user (long-term notes)",
    "memories": "## Relevant memories",
    "tools": "## Tool calls in this session (results hold only as of their time)",
    "pinned": "## Start of this session (pinned)",
    "recent": "## Recent messages",
    "query": "## Current query",
}
# what is dropped first when the block is over budget (first = dropped first)
DROP_ORDER = ("summary", "memories", "tools", "notes", "pinned", "recent")


class ContextItem(BaseModel):
    id: str
    section: str
    kind: str
    text: str
    score: float | None = None
    timestamp: datetime | None = None
    provenance: list[str] = Field(default_factory=list, description="Source message/document ids.")
    via: list[str] = Field(default_factory=list, description="Retrieval routes that found it.")


@dataclass
class Draft:
    """Items per section before fitting; lines are rendered item texts."""

    items: dict[str, list[ContextItem]] = field(default_factory=lambda: {s: [] for s in SECTION_ORDER})
    gap_before_recent: int = 0
    dated: bool = False


def render_item(item: ContextItem, dated: bool) -> str:
    if item.section == "query":
        return item.text
    stamp = ""
    if item.timestamp is not None and item.section == "notes":
        stamp = f"(since {item.timestamp:%Y-%m-%d}) "
    elif item.timestamp is not None and dated and item.section != "memories":  # memories sit under a date
        stamp = f"[{item.timestamp:%Y-%m-%d}] "
    prefix = "- " if item.section in ("notes", "memories", "summary", "tools") else ""
    return f"{prefix}{stamp}{item.text}"


def date_header(item: ContextItem) -> str:
    return f"[{item.timestamp:%Y-%m-%d}]" if item.timestamp is not None else "[undated]"


def _memory_lines(items: list[ContextItem]) -> list[str]:
    """Memories in time order under one line per date."""
    lines: list[str] = []
    last = None
    for item in sorted(items, key=lambda i: (i.timestamp is None, i.timestamp or _EPOCH)):
        header = date_header(item)
        if header != last:
            lines.append(header)
            last = header
        lines.append(render_item(item, False))
    return lines


def render(draft: Draft) -> str:
    blocks: list[str] = []
    for section in SECTION_ORDER:
        items = draft.items[section]
        if not items:
            continue
        lines = [SECTION_TITLES[section]]
        if section == "recent" and draft.gap_before_recent:
            lines.append(f"[{draft.gap_before_recent} earlier messages omitted]")
        lines += _memory_lines(items) if section == "memories" else [render_item(i, draft.dated) for i in items]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def fit(draft: Draft, counter: TokenCounter, budget: int) -> tuple[str, int]:
    """Trim the draft in place until its rendering fits the budget; returns (text, tokens)."""
    shares = {"recent": 0.35, "pinned": 0.15, "notes": 0.2, "tools": 0.1, "summary": 0.1, "memories": 1.0}
    query_tokens = sum(counter.count(render_item(i, draft.dated)) for i in draft.items["query"])
    if query_tokens > budget:  # the query alone is too long: keep its end, it holds the question
        q = draft.items["query"][0]
        text = q.text[-budget * 3:]
        while counter.count(text) > budget:
            text = text[len(text) // 10 + 1:]
        q.text = text
    room = max(0, budget - query_tokens)
    spent = 0
    for section, share in shares.items():
        # memories take whatever the other sections left; a section title costs its tokens too
        cap = room - spent if section == "memories" else int(room * share)
        kept: list[ContextItem] = []
        used = counter.count(SECTION_TITLES[section]) + 2 if draft.items[section] else 0
        dates: set[str] = set()
        items = draft.items[section]
        ordered = list(reversed(items)) if section == "recent" else items  # keep the newest messages
        for item in ordered:
            cost = counter.count(render_item(item, draft.dated)) + 1
            if section == "memories" and date_header(item) not in dates:
                cost += counter.count(date_header(item)) + 1
            if used + cost > cap and kept:
                if section in ("recent", "pinned"):  # a window stays contiguous
                    break
                continue  # a shorter memory or note further down may still fit
            if used + cost > cap:
                cut = counter.truncate(item.text, max(0, cap - used - 8))
                if not cut:
                    break
                item.text = f"{cut} […]"  # say that the item was cut to fit
                cost = counter.count(render_item(item, draft.dated)) + 1
            kept.append(item)
            used += cost
            dates.add(date_header(item))
        spent += used if kept else 0
        dropped = len(items) - len(kept)
        draft.items[section] = list(reversed(kept)) if section == "recent" else kept
        if section in ("recent", "pinned"):
            draft.gap_before_recent += dropped
    text = render(draft)
    tokens = counter.count(text)
    while tokens > budget:
        droppable = next((s for s in DROP_ORDER if draft.items[s]), None)
        if droppable is None:
            break
        draft.items[droppable].pop(0 if droppable == "recent" else -1)
        if droppable in ("recent", "pinned"):
            draft.gap_before_recent += 1
        text = render(draft)
        tokens = counter.count(text)
    return text, tokens
