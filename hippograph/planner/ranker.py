"""A learned ranker in place of the hand-set fusion weights.

Every route that finds a message ranks it; the hand-set fusion adds up reciprocal ranks with one weight
per route (`Plan.*_weight`). A ranker instead scores each candidate from its features: the rank each
route gave it, its cosine with the question, the share of the question's words it holds, whether it
falls in a time the question names, how recent it is among the candidates, whether it asks something,
its length, whether its speaker is named in the question, and its place in the hand-set order. The
packaged ranker is a logistic regression trained on which candidates were evidence in conversations of
many writers (`hippograph.planner.train_ranker`); at query time it is a dot product.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Protocol

import numpy as np

#: the routes whose ranks are features (the recall's mode names its own route)
ROUTES = ("hybrid", "dense", "lexical", "derived", "person", "entity", "dated", "expansion", "graph", "reply")
FEATURES = (*(f"rank_{r}" for r in ROUTES), "fused", "cosine", "overlap", "in_window", "newest", "asks",
            "words", "speaker_named")
PACKAGED = "ranker.json"
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(["a", "an", "the", "and", "or", "but", "of", "to", "in", "on", "at", "for", "with", "by", "from", "is", "are", "was", "were", "be", "been", "do", "does", "did", "what", "when", "where", "which", "who", "whom", "why", "how", "that", "this", "these", "those", "it", "its", "i", "you", "he", "she", "we", "they", "his", "her", "their", "my", "your", "our", "me", "him", "them", "us", "there", "here", "have", "has", "had", "not", "no", "yes", "so", "as", "if", "than", "then", "about", "into", "over", "after", "before", "any", "some", "all", "can", "could", "would", "should", "will"])


class Ranked(Protocol):
    id: str
    text: str
    timestamp: datetime
    ranks: dict[str, int]
    speaker: str


def _gain(rank: int | None) -> float:
    """A rank as a gain that falls off like a search result's: 1 at the top, 0 when not ranked."""
    return 0.0 if rank is None else 1.0 / math.log2(rank + 2)


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _STOP}


def ranking_features(cands: Sequence[Ranked], query: str, windows: Sequence[tuple[datetime, datetime]],
                     cosines: dict[str, float]) -> np.ndarray:
    """One row of `FEATURES` per candidate, in the order given (the hand-set fusion's, best first)."""
    asked = content_words(query)
    named = set(_WORD.findall(query.lower()))
    by_time = sorted(range(len(cands)), key=lambda i: cands[i].timestamp)
    newest = np.empty(len(cands), dtype=np.float32)
    for place, i in enumerate(by_time):
        newest[i] = place / max(1, len(cands) - 1)
    rows = []
    for i, c in enumerate(cands):
        words = content_words(c.text)
        speaker = _first_word(c.speaker)
        rows.append([*(_gain(c.ranks.get(r)) for r in ROUTES),
                     _gain(i),
                     cosines.get(c.id, 0.0),
                     len(asked & words) / len(asked) if asked else 0.0,
                     float(any(a <= c.timestamp < b for a, b in windows)),
                     newest[i],
                     float("?" in c.text),
                     math.log1p(len(c.text.split())),
                     float(bool(speaker) and speaker in named)])
    return np.asarray(rows, dtype=np.float32).reshape(len(cands), len(FEATURES))


def _first_word(name: str) -> str:
    """The first name of a speaker ("ana lima": "ana"), or ""."""
    words = _WORD.findall(name.lower())
    return words[0] if words else ""


class LinearRanker:
    """Standardised features times weights: the candidate's log-odds of being evidence."""

    def __init__(self, mean: Sequence[float], scale: Sequence[float], weights: Sequence[float], bias: float,
                 features: Sequence[str] = FEATURES, about: dict | None = None) -> None:
        if list(features) != list(FEATURES):
            raise ValueError(f"the ranker was trained on features {list(features)}, this code computes "
                             f"{list(FEATURES)}: train it again")
        self.mean = np.asarray(mean, dtype=np.float32)
        self.scale = np.asarray(scale, dtype=np.float32)
        self.weights = np.asarray(weights, dtype=np.float32)
        self.bias = float(bias)
        self.about = about or {}

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        return ((rows - self.mean) / self.scale) @ self.weights + self.bias

    def as_dict(self) -> dict:
        return {"features": list(FEATURES), "mean": self.mean.tolist(), "scale": self.scale.tolist(),
                "weights": self.weights.tolist(), "bias": self.bias, "about": self.about}

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.as_dict(), indent=1) + "\n")

    @classmethod
    def from_dict(cls, data: dict) -> LinearRanker:
        return cls(data["mean"], data["scale"], data["weights"], data["bias"], data["features"], data.get("about"))

    @classmethod
    def packaged(cls) -> LinearRanker:
        return cls.from_dict(json.loads(resources.files("hippograph.planner").joinpath(PACKAGED).read_text()))
