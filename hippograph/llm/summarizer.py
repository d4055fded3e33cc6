"""Session summaries written by an LLM: the same rolling lines as the extractive summary, each line
still pointing at the message it comes from (or carried over from the previous summary)."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from hippograph.llm.client import LLMClient
from hippograph.models import Episode
from hippograph.planner.summary import SummaryLine, cap, speaker
from hippograph.tokens import TokenCounter

SYSTEM = """You keep a running summary of a conversation for an assistant that can no longer see its older
messages. You get the current summary lines (p1, p2, ...) and the messages that just left the assistant's
view (m1, m2, ...). Return the new summary as lines, most important first: what was decided, asked, agreed
or left open, and by whom. Keep a previous line by citing it (source "p3"); write a new line for new
messages and cite the message (source "m2"). Short lines, no line about small talk, at most 12 lines.
Exact numbers and names are kept elsewhere; the summary is for orientation."""


class Line(BaseModel):
    text: str
    source: str


class Summary(BaseModel):
    lines: list[Line] = Field(default_factory=list)


def prompt(previous: Sequence[SummaryLine], episodes: Sequence[Episode]) -> str:
    out = ["Current summary:"] + ([f"p{i + 1}: {line.text}" for i, line in enumerate(previous)] or ["(none)"])
    out.append("\nMessages that left the view:")
    out += [f"m{i + 1} ({speaker(e)}, {e.timestamp:%Y-%m-%d %H:%M}): {e.content}" for i, e in enumerate(episodes)]
    return "\n".join(out)


class LLMSummarizer:
    def __init__(self, client: LLMClient, counter: TokenCounter) -> None:
        self.client = client
        self.counter = counter
        self.name = client.name

    def summarize(self, previous: Sequence[SummaryLine], episodes: Sequence[Episode], max_tokens: int
                  ) -> list[SummaryLine]:
        answer = self.client.structured("summarize", SYSTEM, prompt(previous, episodes), Summary)
        kept = {f"p{i + 1}": line for i, line in enumerate(previous)}
        new = {f"m{i + 1}": e for i, e in enumerate(episodes)}
        lines: list[SummaryLine] = []
        for rank, line in enumerate(answer.lines[:30]):
            text, ref = " ".join(line.text.split())[:300], line.source.strip()
            score = 1.0 / (rank + 1)  # the model lists the most important first
            if ref in kept:
                lines.append(kept[ref].model_copy(update={"text": text or kept[ref].text, "score": score}))
            elif ref in new and text:
                e = new[ref]
                lines.append(SummaryLine(text=f"{speaker(e)}: {text}" if not text.lower().startswith(speaker(e))
                                         else text, source=e.id, client_id=e.client_id, at=e.timestamp, score=score))
        lines.sort(key=lambda line: line.at)  # shown in time order
        return cap(lines, self.counter, max_tokens)
