"""The world tier in the context block: tool results shown as of their time, and the session's
tool-call log (one line per distinct call) so an agent sees it need not call again."""

from __future__ import annotations

from datetime import datetime

from hippograph.models import Episode
from hippograph.planner.context import ContextItem


def _expiry(e: Episode) -> datetime | None:
    raw = e.metadata.get("expires_at")
    try:
        return datetime.fromisoformat(raw) if isinstance(raw, str) else None
    except ValueError:
        return None


def _as_of(e: Episode, now: datetime) -> str:
    until = _expiry(e)
    state = "" if until is None else (f"; expired {until:%Y-%m-%d %H:%M} UTC" if until <= now
                                      else f"; valid until {until:%Y-%m-%d %H:%M} UTC")
    return f"as of {e.timestamp:%Y-%m-%d %H:%M} UTC{state}"


def _tool(e: Episode) -> str:
    return str(e.metadata.get("tool") or e.name or "tool")


def observation_text(e: Episode, now: datetime) -> str:
    """A tool result with the moment it describes, and whether it still holds."""
    return f"{_tool(e)} ({_as_of(e, now)}): {e.content}"


def tool_log(calls: list[Episode], now: datetime) -> list[ContextItem]:
    """One line per distinct call (tool + normalised arguments) in the session: how often and when it
    was made, and its latest result as of then, so the agent need not call it again while it holds."""
    groups: dict[tuple[str, str], list[Episode]] = {}
    for e in calls:
        groups.setdefault((_tool(e), str(e.metadata.get("arguments", "{}"))), []).append(e)
    items = []
    for (tool, args), eps in groups.items():
        last = max(eps, key=lambda e: (e.timestamp, e.seq))
        times = f"called {len(eps)} times, last" if len(eps) > 1 else "called"
        short = last.content if len(last.content) <= 200 else last.content[:200] + " …"
        text = f"{tool}({args}) {times} at {last.timestamp:%Y-%m-%d %H:%M} UTC → ({_as_of(last, now)}) {short}"
        items.append(ContextItem(id=f"tool:{last.id}", section="tools", kind="tool_call", text=text,
                                 timestamp=last.timestamp, provenance=[e.client_id or e.id for e in eps]))
    return sorted(items, key=lambda i: i.timestamp or now)
