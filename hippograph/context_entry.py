"""The read entry of the service for agents (`Hippograph` takes it in): the context block an agent is given
(the session's window, its tool log and summary, the user's notes and the memories the plan recalls, within a
token budget), the recall behind it, and where each item came from."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel

from hippograph.config import ContextSettings, SessionSettings
from hippograph.graph.base import GraphStore
from hippograph.lifecycle import SessionKeeper, covered_through, stored_summary, summary_lines
from hippograph.models import Episode, EpisodeKind, MemoryKind, Role, utcnow
from hippograph.planner.context import ContextItem, Draft, fit
from hippograph.planner.plans import PLANS, Plan, choose_plan
from hippograph.planner.retrieval import Candidate, Retriever
from hippograph.planner.summary import cap, line_of
from hippograph.planner.world import observation_text, tool_log
from hippograph.records import episode_text
from hippograph.tokens import TokenCounter
from hippograph.write_entry import for_user

#: a note in the context block cites its latest sayings (the profile endpoint lists them all)
PROVENANCE_IN_CONTEXT = 5


class ContextResult(BaseModel):
    context: str
    sections: dict[str, list[ContextItem]]
    items: list[ContextItem]
    plan: dict
    tokens: int
    token_budget: int


class ContextEntry:
    """What `Hippograph.context` and `.recall` need, set by `Hippograph.__init__`."""

    graph: GraphStore
    retriever: Retriever
    counter: TokenCounter
    context_settings: ContextSettings
    session_settings: SessionSettings
    sessions: SessionKeeper

    @for_user
    def recall(
        self, user_id: str, query: str, plan_name: str | None = None, exclude_ids: set[str] | None = None,
        overrides: dict | None = None,
    ) -> tuple[Plan, str, list[Candidate], dict]:
        """The plan for the query, why it was chosen, and the user's messages and documents ranked by it
        (best first) with a trace of each step."""
        plan, reason = _choose(query, plan_name, self._ranked(overrides))
        if not self.graph.user_exists(user_id):
            return plan, reason, [], {}
        cands, trace = self.retriever.recall(plan, user_id, query, exclude_ids or set())
        return plan, reason, cands, trace

    # --- the context block ---------------------------------------------------------------------
    @for_user
    def context(
        self, user_id: str, query: str, session_id: str | None = None, token_budget: int | None = None,
        plan_name: str | None = None, overrides: dict | None = None,
    ) -> ContextResult:
        cfg = self.context_settings
        budget = token_budget or cfg.token_budget
        known = self.graph.user_exists(user_id)
        if known:
            self.sessions.expire(user_id)
        plan, reason = _choose(query, plan_name, self._ranked(overrides))
        draft = Draft(dated=plan.dated)
        everything = self.graph.session_episodes(user_id, session_id) if (known and session_id) else []
        session = [e for e in everything if e.kind == EpisodeKind.message]
        pinned = session[: cfg.pinned_messages]
        recent = session[len(pinned):][-cfg.recent_messages:] if cfg.recent_messages else []
        omitted = session[len(pinned): len(session) - len(recent)]
        draft.gap_before_recent = len(omitted)
        now = utcnow()
        draft.items["pinned"] = [self._message_item(e, "pinned", now) for e in pinned]
        draft.items["recent"] = [self._message_item(e, "recent", now) for e in recent]
        draft.items["tools"], draft.shown_by = tool_log([e for e in session if e.role == Role.tool], now,
                                                        shown={e.id for e in pinned + recent})
        stored = stored_summary(everything)
        if omitted and (stored is not None or len(session) >= self.session_settings.summary_threshold):
            draft.items["summary"] = self._summary(stored, omitted)
        trace: dict = {}
        if known:
            # the window's messages are shown, and every tool result of the session is in the tool log
            shown = {e.id for e in pinned + recent} | {e.id for e in session if e.role == Role.tool}
            cands, trace = self.retriever.recall(plan, user_id, query, exclude_ids=shown)
            if plan.block_limit:
                cands = cands[: math.ceil(plan.block_limit * budget / 1000)]
            notes = self.retriever.relevant_notes(plan, user_id, trace.get("notes", []))
            latest = {n.id: n.source_episode_ids[-PROVENANCE_IN_CONTEXT:] for n in notes}
            client = self._client_ids(user_id, [ep for eps in latest.values() for ep in eps])
            draft.items["notes"] = [ContextItem(id=n.id, section="notes", kind="note", text=n.text,
                                                timestamp=n.valid_at, via=["notes"],
                                                provenance=[client[ep] for ep in latest[n.id] if ep in client])
                                    for n in notes]
            outdated = self._outdated_episodes(user_id, [c.id for c in cands])
            draft.items["memories"] = [self._memory_item(user_id, c, outdated.get(c.id)) for c in cands]
        draft.items["query"] = [ContextItem(id="query", section="query", kind="query", text=query)]
        text, tokens = fit(draft, self.counter, budget)
        items = [i for s in draft.items.values() for i in s]
        plan_info = {**plan.as_dict(), "reason": reason, "trace": trace, "known_user": known,
                     "messages_left_out": draft.gap_before_recent, "tokenizer": self.counter.name}
        return ContextResult(context=text, sections=draft.items, items=items, plan=plan_info, tokens=tokens,
                             token_budget=budget)

    def _ranked(self, overrides: dict | None) -> dict | None:
        """The overrides with the configured ranker, unless they name one themselves."""
        if not self.context_settings.ranker or (overrides and "ranker" in overrides):
            return overrides
        return {**(overrides or {}), "ranker": self.context_settings.ranker}

    def _message_item(self, e: Episode, section: str, now: datetime) -> ContextItem:
        text = observation_text(e, now) if e.role == Role.tool else episode_text(e)
        return ContextItem(id=e.id, section=section, kind="message", text=text, timestamp=e.timestamp,
                           provenance=[e.client_id or e.id])

    def _memory_item(self, user_id: str, c: Candidate, outdated: str | None) -> ContextItem:
        prov = self._hit_provenance(user_id, MemoryKind(c.kind), c.source_ids)
        text = c.shown_text()
        text = f"{text} [{outdated}]" if outdated else text
        return ContextItem(id=c.id, section="memories", kind=c.kind, text=text, score=round(c.score, 6),
                           timestamp=c.timestamp, provenance=prov, via=c.via)

    def _outdated_episodes(self, user_id: str, episode_ids: Sequence[str]) -> dict[str, str]:
        """Of these episodes, those that said something since replaced, with what replaced it: shown as
        history, never as current (a memory block must not let a stale statement pass for today's truth)."""
        notes, relations = self.graph.superseded(user_id, episode_ids)
        now = self._latest({n.superseded_by for n in notes if n.superseded_by})
        out: dict[str, str] = {}
        for n in notes:
            if n.invalid_at is not None and n.superseded_by in now:
                for ep in n.source_episode_ids:
                    out[ep] = f"outdated since {n.invalid_at:%Y-%m-%d}; now: {now[n.superseded_by]}"
        for r in relations:
            if r.invalid_at is not None:
                for ep in r.source_episode_ids:
                    out.setdefault(ep, f"outdated since {r.invalid_at:%Y-%m-%d}")
        return out

    def _latest(self, ids: set[str], hops: int = 20) -> dict[str, str]:
        """For each of these notes, the text of the note that holds now: the end of its chain of
        replacements (a note replaced again points past itself), followed at most `hops` steps."""
        step: dict[str, str] = {}
        text: dict[str, str] = {}
        todo = set(ids)
        for _ in range(hops):
            if not todo:
                break
            found = self.graph.notes_by_ids(list(todo))
            text.update({n.id: n.text for n in found})
            step.update({n.id: n.superseded_by for n in found if n.superseded_by})
            todo = {n.superseded_by for n in found if n.superseded_by and n.superseded_by not in text}
        out: dict[str, str] = {}
        for start in ids:
            at, seen = start, {start}
            while at in step and step[at] in text and step[at] not in seen:
                at = step[at]
                seen.add(at)
            if at in text:
                out[start] = text[at]
        return out

    def _summary(self, stored: Episode | None, omitted: list[Episode]) -> list[ContextItem]:
        """The stored summary's lines about messages the window leaves out, then lines for those left
        out since it was written (extractive: no model runs while a block is built), within the cap."""
        left_out = {e.id for e in omitted}
        through = covered_through(stored)
        lines = [line for line in summary_lines(stored) if line.source in left_out]
        lines += [line for e in omitted if e.seq > through and (line := line_of(e)) is not None]
        lines = cap(lines, self.counter, self.session_settings.summary_max_tokens)
        return [ContextItem(id=line.source, section="summary", kind="summary", text=line.text, timestamp=line.at,
                            provenance=[line.client_id or line.source], via=[stored.id] if stored else [])
                for line in lines]

    def _provenance(self, user_id: str, episode_ids: Sequence[str]) -> list[str]:
        """Client ids (message/document ids) of the episodes, where the client gave them; an episode
        that was deleted is not listed (one that expired still is)."""
        client = self._client_ids(user_id, episode_ids)
        return [client[i] for i in episode_ids if i in client]

    def _client_ids(self, user_id: str, episode_ids: Sequence[str]) -> dict[str, str]:
        return self.graph.client_ids(user_id, list(dict.fromkeys(episode_ids)))

    def _hit_provenance(self, user_id: str, kind: MemoryKind, source_ids: list[str]) -> list[str]:
        """An episode's source ids are already client ids; notes and relations point at episodes."""
        return source_ids if kind == MemoryKind.episode else self._provenance(user_id, source_ids)


def _choose(query: str, plan_name: str | None, overrides: dict | None = None) -> tuple[Plan, str]:
    """The requested plan or the heuristic's, with any parameters overridden (benchmark ablations)."""
    plan, reason = (PLANS[plan_name], "requested") if plan_name else choose_plan(query)
    return (dataclasses.replace(plan, **overrides), reason) if overrides else (plan, reason)

