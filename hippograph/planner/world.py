"""The world tier in the context block: tool results shown as of their time, and the session's
tool-call log (one line per distinct call) so an agent sees it need not call again."""

from __future__ import annotations

from collections.abc import Collection
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


def tool_log(calls: list[Episode], now: datetime, shown: Collection[str] = (),
             ) -> tuple[list[ContextItem], dict[str, tuple[list[str], str]]]:
    """One line per distinct call (tool + normalised arguments) in the session: how often and when it
    was made, and its latest result as of then, so the agent need not call it again while it holds.

    With it, for `Draft.shown_by`, what stands in for a result that another item shows in full, so the
    block shows each result once: the line of a call whose latest result is in the conversation shown
    refers to that message, and a call of the same tool and arguments that got the very same result
    as a later one refers to the later ones (and to the line when the latest is one of them). Results
    are matched by message id within one call, never by text alone: two different calls that answered
    alike are both shown.

    `shown`: the ids of the tool messages in the conversation shown (pinned and recent); only they and
    the lines can refer to one another, so only theirs are worked out (a session of thousands of calls of
    one tool costs one pass over them per message shown, not one per call)."""
    groups: dict[tuple[str, str], list[Episode]] = {}
    for e in calls:
        groups.setdefault((_tool(e), str(e.metadata.get("arguments", "{}"))), []).append(e)
    items, shown_by = [], {}
    for (tool, args), eps in groups.items():
        eps.sort(key=lambda e: (e.timestamp, e.seq))
        last = eps[-1]
        times = f"called {len(eps)} times, last" if len(eps) > 1 else "called"
        call = f"{tool}({args}) {times} at {last.timestamp:%Y-%m-%d %H:%M} UTC"
        line = ContextItem(id=f"tool:{last.id}", section="tools", kind="tool_call",
                           text=f"{call} → ({_as_of(last, now)}) {last.content}",
                           timestamp=last.timestamp, provenance=[e.client_id or e.id for e in eps])
        items.append(line)
        shown_by[line.id] = ([last.id], f"{call} → its result is in the conversation below")
        for k, e in enumerate(eps[:-1]):
            if e.id not in shown:
                continue
            later = [x.id for x in reversed(eps[k + 1:]) if (x.id in shown or x is last) and x.content == e.content]
            if later:  # whichever of them the block keeps in full shows it
                shown_by[e.id] = (later + ([line.id] if later[0] == last.id else []),
                                  f"{tool} ({_as_of(e, now)}): the same result as a later call, shown with it")
    return sorted(items, key=lambda i: i.timestamp or now), shown_by
