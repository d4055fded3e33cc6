"""Cutting long tool output down to its essentials before it is stored."""

from __future__ import annotations

import json
import re

_NUMBERISH = re.compile(r"\d")


def _flatten(value: object, prefix: str = "") -> list[str]:
    if isinstance(value, dict):
        return [line for k, v in value.items() for line in _flatten(v, f"{prefix}{k}.")]
    if isinstance(value, list):
        head = [line for i, v in enumerate(value[:5]) for line in _flatten(v, f"{prefix}{i}.")]
        return head + ([f"{prefix.rstrip('.')}: ... {len(value) - 5} more items"] if len(value) > 5 else [])
    return [f"{prefix.rstrip('.')}: {value}"]


def essentials(text: str, limit: int) -> str:
    """Keep what a later turn needs from tool output longer than `limit` characters.

    JSON is flattened to `path: value` lines, scalars first; plain text keeps its first lines plus
    the lines that carry numbers (values, ids, dates). The result ends with a marker saying how much
    was cut, so nobody mistakes it for the whole output.
    """
    try:
        lines = _flatten(json.loads(text))
    except (ValueError, RecursionError):
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    head = lines[:3]
    rest = [ln for ln in lines[3:] if _NUMBERISH.search(ln)] + [ln for ln in lines[3:] if not _NUMBERISH.search(ln)]
    kept: list[str] = []
    budget = limit - 40
    for line in head + rest:
        line = line if len(line) <= budget else line[: max(0, budget - 1)] + "…"
        if sum(len(k) + 1 for k in kept) + len(line) > budget:
            break
        kept.append(line)
    return "\n".join(kept) + f"\n[… tool output cut from {len(text)} characters]"
