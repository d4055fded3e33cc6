from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hippograph.planner.context import ContextItem, Draft, fit
from hippograph.tokens import get_counter

T = datetime(2024, 5, 1, tzinfo=UTC)


def draft(n_recent: int = 30, n_mem: int = 30) -> Draft:
    d = Draft()
    d.items["summary"] = [ContextItem(id="s", section="summary", kind="summary", text="Earlier: planning a trip.")]
    d.items["notes"] = [ContextItem(id=f"n{i}", section="notes", kind="note", text=f"Likes thing {i}", timestamp=T)
                        for i in range(5)]
    d.items["memories"] = [ContextItem(id=f"m{i}", section="memories", kind="episode",
                                       text=f"memory {i} " + "detail " * 20, timestamp=T) for i in range(n_mem)]
    d.items["pinned"] = [ContextItem(id=f"p{i}", section="pinned", kind="message", text=f"user: pinned {i}")
                         for i in range(3)]
    d.items["recent"] = [ContextItem(id=f"r{i}", section="recent", kind="message", text=f"user: recent {i} " * 5)
                         for i in range(n_recent)]
    d.items["query"] = [ContextItem(id="query", section="query", kind="query", text="What next?")]
    return d


@pytest.mark.parametrize("budget", [64, 100, 250, 600, 1500, 5000])
def test_fits_the_budget_exactly_and_keeps_order(budget: int) -> None:
    counter = get_counter()
    d = draft()
    text, tokens = fit(d, counter, budget)
    assert tokens == counter.count(text) and tokens <= budget
    assert text.endswith("What next?")
    titles = [t for t in ("## Summary", "## What I know", "## Relevant memories", "## Start of this session",
                          "## Recent messages", "## Current query") if t in text]
    assert [text.index(t) for t in titles] == sorted(text.index(t) for t in titles)


def test_recent_window_keeps_newest_and_counts_the_gap() -> None:
    d = draft(n_recent=30)
    d.gap_before_recent = 7
    text, _ = fit(d, get_counter(), 600)
    kept = [i.id for i in d.items["recent"]]
    assert kept and kept[-1] == "r29"
    assert kept == [f"r{i}" for i in range(30 - len(kept), 30)]
    dropped_pinned = 3 - len(d.items["pinned"])
    assert f"[{7 + 30 - len(kept) + dropped_pinned} earlier messages omitted]" in text


def test_large_budget_keeps_everything() -> None:
    d = draft(n_recent=5, n_mem=3)
    text, _tokens = fit(d, get_counter(), 50_000)
    assert len(d.items["memories"]) == 3 and len(d.items["recent"]) == 5
    assert "earlier messages omitted" not in text


def test_memories_take_the_room_left_and_sit_under_their_dates() -> None:
    counter = get_counter()
    d = Draft()
    d.items["memories"] = [
        ContextItem(id=f"m{i}", section="memories", kind="episode", text=f"Dana: fact number {i}",
                    timestamp=datetime(2024, 5, 1 + i % 3, tzinfo=UTC)) for i in range(200)]
    d.items["query"] = [ContextItem(id="query", section="query", kind="query", text="What next?")]
    text, tokens = fit(d, counter, 500)
    assert 450 < tokens <= 500  # no other section: memories fill the budget, not a fixed share of it
    body = text.split("## Relevant memories\n")[1].split("\n\n")[0].splitlines()
    assert [line for line in body if line.startswith("[")] == ["[2024-05-01]", "[2024-05-02]", "[2024-05-03]"]
    kept = [i.id for i in d.items["memories"]]
    assert kept == [f"m{i}" for i in range(len(kept))]  # chosen by rank, shown by date


def test_a_memory_too_long_for_the_rest_is_skipped_not_cut() -> None:
    counter = get_counter()
    d = Draft()
    d.items["memories"] = [
        ContextItem(id="short1", section="memories", kind="episode", text="short one", timestamp=T),
        ContextItem(id="long", section="memories", kind="episode", text="word " * 400, timestamp=T),
        ContextItem(id="short2", section="memories", kind="episode", text="short two", timestamp=T)]
    d.items["query"] = [ContextItem(id="query", section="query", kind="query", text="q")]
    _text, tokens = fit(d, counter, 120)
    assert [i.id for i in d.items["memories"]] == ["short1", "short2"] and tokens <= 120
