"""Pairs of statements written apart to teach the pair model (`bench/notes/pairs/`): an earlier note and a later
clause of one slot, and whether the later is about the same thing (updates, changes or takes back the note) or
about another (a second pet, another decision's subject). The corpus's sequences hold few such hard cases; these
add them, written by their own writers. The format is in `bench/notes/README.md`."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hippograph.extraction.rules import normalise
from hippograph.notes_model.features import DIM
from hippograph.notes_model.segment import FEATURES, parse_features

ACTS = ("states", "changes", "retracts")


@dataclass
class WrittenPairs:
    writer: list[str]  # the file each pair came from
    slot: list[str]
    earlier: list[str]
    later: list[str]
    same: np.ndarray  # bool
    xa: np.ndarray  # rows as `features.matrix` makes them: the clause's vector (as its message's), then its parse
    xb: np.ndarray

    def __len__(self) -> int:
        return len(self.slot)


def load(folder: Path, slots: Sequence[str]) -> list[dict]:
    """The pairs of every `*.jsonl` file of `folder`, each with its file's name as `writer`; a line that is not a
    pair of a known slot is an error."""
    out = []
    for path in sorted(folder.glob("*.jsonl")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            p = json.loads(line)
            if p.get("slot") not in slots or p.get("later_act") not in ACTS or not isinstance(p.get("same"), bool) \
                    or not str(p.get("earlier", "")).strip() or not str(p.get("later", "")).strip():
                raise ValueError(f"{path}:{n}: not a pair of a catalogue slot: {line[:120]}")
            out.append({**p, "writer": path.stem})
    return out


def featured(pairs: Sequence[dict], nlp, embed: Callable[[Sequence[str]], Sequence[Sequence[float]]]) -> WrittenPairs:  # type: ignore[no-untyped-def]
    """The pairs with each statement's row of numbers, made as the corpus's are (read as the extractor reads it)."""
    earlier = [normalise(p["earlier"]).strip() for p in pairs]
    later = [normalise(p["later"]).strip() for p in pairs]
    texts = sorted(set(earlier) | set(later))
    vectors = dict(zip(texts, np.asarray(embed(texts), dtype=np.float32), strict=True))
    parses = {t: np.asarray(parse_features(doc[:]), dtype=np.float32) for t, doc in zip(texts, nlp.pipe(texts), strict=True)}
    zero = np.zeros(DIM, dtype=np.float32)

    def rows(said: list[str]) -> np.ndarray:
        return np.array([np.concatenate([vectors[t], vectors[t], zero, parses[t]]) for t in said],
                        dtype=np.float32).reshape(len(said), 3 * DIM + len(FEATURES))

    return WrittenPairs([p["writer"] for p in pairs], [p["slot"] for p in pairs], earlier, later,
                        np.array([p["same"] for p in pairs], dtype=bool), rows(earlier), rows(later))
