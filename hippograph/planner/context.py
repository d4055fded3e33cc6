"""Assembling the context block: ordered sections fitted into a token budget.

Order in the block (attention favours the beginning and the end):
summary -> long-term notes -> relevant memories -> the session's tool-call log -> pinned messages ->
recent messages (with a gap marker where messages were left out) -> the current query.

Memories are chosen by relevance and shown in time order, grouped under the date they were said, so
the block reads as dated excerpts and each date costs its tokens once.

Each tool result is shown once: in the conversation when the window shows its message, else on its
call's line in the tool-call log; the other places refer to it in a few words (`Draft.shown_by`).

Budget: the query is always kept. The recent window, pinned messages, notes, the tool log and the
summary take what they need up to their share, in that priority; what their shares leave goes to
those of them that needed more, in the same order, keeping a tenth for memories; memories get all
the room left; whatever is still free goes back to what did not fit. An item is left out only when
it no longer fits whole; it is cut only when its section would otherwise show nothing, and then to
fill what is left. The final text is counted again, so `tokens <= token_budget` always holds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache

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
    # an item of the tool log or the window whose content other items show: its id -> (their ids, the
    # first preferred, and the short text it shows instead while one of them is in the block in full)
    shown_by: dict[str, tuple[list[str], str]] = field(default_factory=dict)


def render_item(item: ContextItem, dated: bool, text: str | None = None) -> str:
    """The item's line; `text` in place of the item's own text."""
    text = item.text if text is None else text
    if item.section == "query":
        return text
    stamp = ""
    if item.timestamp is not None and item.section == "notes":
        stamp = f"(since {item.timestamp:%Y-%m-%d}) "
    elif item.timestamp is not None and dated and item.section != "memories":  # memories sit under a date
        stamp = f"[{item.timestamp:%Y-%m-%d}] "
    prefix = "- " if item.section in ("notes", "memories", "summary", "tools") else ""
    return f"{prefix}{stamp}{text}"


def date_header(item: ContextItem) -> str:
    return _day(item.timestamp) if item.timestamp is not None else "[undated]"


@lru_cache(maxsize=4096)
def _day(at: datetime) -> str:
    return f"[{at:%Y-%m-%d}]"


def _memory_lines(items: list[ContextItem], text: Callable[[ContextItem], str]) -> list[str]:
    """Memories in time order under one line per date."""
    lines: list[str] = []
    last = None
    for item in sorted(items, key=lambda i: (i.timestamp is None, i.timestamp or _EPOCH)):
        header = date_header(item)
        if header != last:
            lines.append(header)
            last = header
        lines.append(render_item(item, False, text(item)))
    return lines


def render(draft: Draft, text: Callable[[ContextItem], str] | None = None) -> str:
    """The block; `text` gives each item's text in place of its own."""
    text_of = text or (lambda i: i.text)
    blocks: list[str] = []
    for section in SECTION_ORDER:
        items = draft.items[section]
        if not items:
            continue
        lines = [SECTION_TITLES[section]]
        if section == "recent" and draft.gap_before_recent:
            lines.append(f"[{draft.gap_before_recent} earlier messages omitted]")
        lines += (_memory_lines(items, text_of) if section == "memories"
                  else [render_item(i, draft.dated, text_of(i)) for i in items])
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


SHARES = {"recent": 0.35, "pinned": 0.15, "notes": 0.2, "tools": 0.1, "summary": 0.1}
PRIORITY = (*SHARES, "memories")
MEMORY_FLOOR = 1 - sum(SHARES.values())  # what the other sections' overflow leaves memories at least
WINDOWS = ("recent", "pinned")  # never holed: the newest messages, the first ones
CUT_MARK = " […]"  # says that an item was cut to fit
MIN_CUT = 3  # tokens: a shorter piece of an item says nothing


class _Packing:
    """How much of each item the block keeps: all of it (None) or the first n tokens of its text.

    Costs are estimated line by line (each line with its newline, a section title with its blank line,
    the gap marker reserved), which counts a little more than the rendered block: `settle` then counts
    the block itself and hands what the estimate held back to the items that did not fit."""

    def __init__(self, draft: Draft, counter: TokenCounter, budget: int) -> None:
        self.draft, self.counter, self.budget = draft, counter, budget
        self.order = {s: draft.items[s][::-1] if s == "recent" else list(draft.items[s]) for s in PRIORITY}
        self.kept: dict[int, int | None] = {}  # by id() of the item; change it with `set` and `unset`
        self.sizes = dict.fromkeys(PRIORITY, 0)  # items kept per section
        self.dates: Counter[str] = Counter()  # memories kept per date line
        self.header = {id(i): date_header(i) for i in draft.items["memories"]}
        self.section = {id(i): s for s in PRIORITY for i in draft.items[s]}
        linked = [i for s in ("tools", *WINDOWS) for i in draft.items[s]]
        by_id = {i.id: i for i in linked}
        self.homes = {id(i): [by_id[h] for h in draft.shown_by[i.id][0] if h in by_id]
                      for i in linked if i.id in draft.shown_by}
        self.counts: dict[str, int] = {}
        self.floors: dict[int, int] = {}
        marker = self.count("[100 earlier messages omitted]\n")
        self.head = {s: self.count(SECTION_TITLES[s] + "\n") + 1 + (marker if s == "recent" else 0)
                     for s in PRIORITY}
        # what the estimate of an item may count more than it adds: a newline counted alone where a
        # section ends (the block writes two as one token), and the gap marker a message can make go
        self.slack = {s: 2 + (marker if s in WINDOWS else 0) for s in PRIORITY}
        self.spent = 0  # the estimate while packing
        self.block, self.tokens = "", 0  # the block counted, while settling

    def count(self, text: str) -> int:
        if text not in self.counts:
            self.counts[text] = self.counter.count(text)
        return self.counts[text]

    def set(self, item: ContextItem, n: int | None) -> None:
        """Keep n tokens of the item, all of it with None."""
        if id(item) not in self.kept:
            self.sizes[self.section[id(item)]] += 1
            if id(item) in self.header:
                self.dates[self.header[id(item)]] += 1
        self.kept[id(item)] = n

    def unset(self, item: ContextItem) -> None:
        if id(item) in self.kept:
            self.sizes[self.section[id(item)]] -= 1
            if id(item) in self.header:
                self.dates[self.header[id(item)]] -= 1
            del self.kept[id(item)]

    def whole(self, item: ContextItem) -> bool:
        return id(item) in self.kept and self.kept[id(item)] is None

    def cut_at(self, item: ContextItem) -> int | None:
        """How many tokens of a cut item are kept; None for an item kept whole or not at all."""
        return self.kept.get(id(item))

    def refers(self, item: ContextItem) -> bool:
        """Whether another item shows the item's content in full, so that it shows its short text."""
        return any(self.whole(h) and not self.refers(h) for h in self.homes.get(id(item), ()))

    def text(self, item: ContextItem, n: int | None = None) -> str:
        """The item's text in the block, cut to its first n tokens unless n is None."""
        if self.refers(item):  # a reference is shown whole where it fits in what a cut left
            text = self.draft.shown_by[item.id][1]
            return text if n is None or self.count(text) <= n else self.counter.truncate(text, n) + CUT_MARK
        return item.text if n is None else self.counter.truncate(item.text, n) + CUT_MARK

    def shown(self, item: ContextItem) -> str:
        return self.text(item, self.cut_at(item))

    def _kept(self, section: str) -> list[ContextItem]:
        return [i for i in self.order[section] if id(i) in self.kept]

    def cost(self, section: str, item: ContextItem, n: int | None = None) -> int:
        """What the item adds to the block with n tokens of its text (all of it with None): its line,
        and the section title or a memory's date line if no other item brings them."""
        mine = 1 if id(item) in self.kept else 0
        cost = self.count(render_item(item, self.draft.dated, self.text(item, n)) + "\n")
        cost += 0 if self.sizes[section] > mine else self.head[section]
        if section == "memories" and self.dates[self.header[id(item)]] <= mine:
            cost += self.count(self.header[id(item)] + "\n")
        return cost

    def floor(self, item: ContextItem) -> int:
        """The least the item can add whole: its line alone, with its own text or as a reference."""
        if (n := self.floors.get(id(item))) is None:
            texts = [item.text] + ([self.draft.shown_by[item.id][1]] if id(item) in self.homes else [])
            n = self.floors[id(item)] = min(self.count(render_item(item, self.draft.dated, t) + "\n")
                                            for t in texts)
        return n

    def cost_now(self, section: str, item: ContextItem) -> int:
        return self.cost(section, item, self.cut_at(item)) if id(item) in self.kept else 0

    def total(self) -> int:
        """The estimate for the whole block as kept now (what `cost` adds up to, item by item)."""
        spent = 0
        for s in PRIORITY:
            kept = self._kept(s)
            spent += self.head[s] if kept else 0
            spent += sum(self.count(render_item(i, self.draft.dated, self.shown(i)) + "\n") for i in kept)
            if s == "memories":
                spent += sum(self.count(h + "\n") for h in {self.header[id(i)] for i in kept})
        return spent

    def grow(self, section: str, limit: int, cut_first: bool = False) -> None:
        """Keep more of the section, whole items in its order, while the block's estimate stays within
        `limit`: a window stops at the first item that does not fit, another section tries the next.
        With `cut_first`, a section that would show nothing shows its first item cut to fit."""
        for item in self.order[section]:
            if self.whole(item):
                continue
            if id(item) not in self.kept and self.spent + self.floor(item) > limit:  # cannot fit whole
                if cut_first and not self.sizes[section]:
                    self.cut(section, item, limit)
                if section in WINDOWS:
                    return
                continue
            if self.refers(item) and id(item) in self.kept:  # cut before what it refers to came in
                self.spent -= self.cost_now(section, item)
                self.unset(item)
            more = self.cost(section, item) - self.cost_now(section, item)
            if self.spent + more <= limit:
                self.set(item, None)
                self.spent += more
                continue
            if cut_first and not self.sizes[section]:
                self.cut(section, item, limit)
            if section in WINDOWS:
                return

    def grow_all(self, sections: tuple[str, ...], limit: int) -> None:
        """`grow` until nothing changes: an item kept whole can shorten the items that refer to it."""
        while True:
            self.spent = self.total()
            before = dict(self.kept)
            for s in sections:
                self.grow(s, limit)
            if self.kept == before:
                return

    def cut(self, section: str, item: ContextItem, limit: int) -> None:
        """Keep as much of the item as the estimate allows within `limit`, marked as cut: at least
        MIN_CUT tokens, and more than it keeps already. A reference is never cut: it is a few words."""
        if self.refers(item):
            return
        now = self.cost_now(section, item)
        free = limit - self.spent + now
        n = min(self.count(self.text(item)) - 1, free - self.cost(section, item, 0))
        while n >= MIN_CUT and self.cost(section, item, n) > free:
            n -= 1
        if n < MIN_CUT or n <= (self.cut_at(item) or 0):
            return
        self.set(item, n)
        self.spent += self.cost(section, item, n) - now

    def pack(self, room: int) -> None:
        for s, share in SHARES.items():  # each section up to its share
            self.grow(s, self.spent + int(room * share), cut_first=True)
        floor = int(room * MEMORY_FLOOR) if self.order["memories"] else 0
        self.grow_all(tuple(SHARES), room - floor)  # what the shares left, to those that needed more
        self.grow("memories", room, cut_first=True)  # memories: all the room left
        self.grow_all(PRIORITY, room)  # what memories left, to anything that did not fit
        for s in PRIORITY:  # a cut item fills what is left
            for item in self._kept(s):
                if self.cut_at(item) is not None:
                    self.cut(s, item, room)

    def render(self) -> tuple[str, int]:
        left_out = sum(id(i) not in self.kept for s in WINDOWS for i in self.order[s])
        shown = Draft(dated=self.draft.dated, gap_before_recent=self.draft.gap_before_recent + left_out)
        shown.items = {s: [i for i in self.draft.items[s] if id(i) in self.kept] for s in PRIORITY}
        shown.items["query"] = self.draft.items["query"]
        text = render(shown, lambda i: i.text if i.section == "query" else self.shown(i))
        return text, self.counter.count(text)

    def attempt(self, item: ContextItem, n: int | None) -> int:
        """Keep n tokens of the item (None: all of it) if the block then fits the budget, else leave the
        item as it was; returns the block's tokens with n."""
        present, had = id(item) in self.kept, self.cut_at(item)
        self.set(item, n)
        text, tokens = self.render()
        if tokens <= self.budget:
            self.block, self.tokens = text, tokens
        elif present:
            self.set(item, had)
        else:
            self.unset(item)
        return tokens

    def settle(self) -> tuple[str, int]:
        """Count the block itself: shorten the least important item while it is over the budget (the
        estimate counts more than the block, so this is rare), then give what the estimate held back
        to the items that did not fit, in priority order."""
        self.block, self.tokens = self.render()
        while self.tokens > self.budget and self.kept:
            item = next(self._kept(s)[-1] for s in DROP_ORDER if self._kept(s))  # recent: its oldest
            n = (self.cut_at(item) or self.count(self.text(item))) - (self.tokens - self.budget)
            if n >= MIN_CUT:
                self.set(item, n)
            else:
                self.unset(item)
            self.block, self.tokens = self.render()
        for s in PRIORITY:
            for item in self.order[s]:
                if self.whole(item):
                    continue
                free = self.budget - self.tokens
                if (self.cost(s, item) - self.cost_now(s, item) <= free + self.slack[s]
                        and self.attempt(item, None) <= self.budget):
                    continue
                if (had := self.cut_at(item)) is not None:  # a cut item: as much more of it as fits
                    n = min(had + free, self.count(self.text(item)) - 1)
                    while n > had and (over := self.attempt(item, n) - self.budget) > 0:
                        n -= over
                if s in WINDOWS:
                    break
        return self.block, self.tokens

    def apply(self) -> None:
        """Write what was kept into the draft: the items in the block, with their texts as shown."""
        texts = {id(i): self.shown(i) for s in PRIORITY for i in self._kept(s)}
        self.draft.gap_before_recent += sum(id(i) not in self.kept for s in WINDOWS for i in self.order[s])
        for s in PRIORITY:
            self.draft.items[s] = [i for i in self.draft.items[s] if id(i) in self.kept]
            for i in self.draft.items[s]:
                i.text = texts[id(i)]


def fit(draft: Draft, counter: TokenCounter, budget: int) -> tuple[str, int]:
    """Trim the draft in place until its rendering fits the budget; returns (text, tokens)."""
    title = counter.count(SECTION_TITLES["query"] + "\n") + 1
    query_tokens = sum(counter.count(render_item(i, draft.dated)) for i in draft.items["query"])
    if query_tokens + title > budget:  # the query alone is too long: keep its end, it holds the question
        q = draft.items["query"][0]
        limit = max(1, budget - title)
        text = q.text[-limit * 3:]
        while counter.count(text) > limit:
            text = text[len(text) // 10 + 1:]
        q.text = text
        query_tokens = counter.count(text)
    packing = _Packing(draft, counter, budget)
    packing.pack(max(0, budget - query_tokens - title))
    text, tokens = packing.settle()
    packing.apply()
    return text, tokens
