"""Slots a deployment adds for its own domain, per tenant, as data: a folder with one `<tenant>.json` per tenant
(`HIPPOGRAPH_EXTRACTION__SLOTS_DIR`), each slot with its kind, whether it holds several values, a description
and examples of what users say to fill it:

    {"slots": [{"slot": "preferred_carrier", "kind": "preference", "multi": false,
                "description": "The carrier the user books first.",
                "examples": ["I always book Dayton Freight first.", "Estes is my go-to for LTL", ...]}]}

A clause the judgement takes as a note is compared with each slot's examples (the MiniLM vectors the models
read): when the mean similarity of its `NEAREST` closest examples reaches the slot's `threshold` (by default
`THRESHOLD`, chosen on slots written by four independent writers, each domain measured with the threshold
chosen on the other three: BENCHMARKS.md), the note fills that slot instead of the catalogue's. A single-valued
slot is replaced by a newer note of it; a multi-valued one grows, and the pair model decides what a later
statement replaces or takes back. No retraining: the examples are read at start.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field, ValidationError, field_validator

from hippograph.errors import ConfigurationError
from hippograph.notes_model.corpus import catalogue

#: how many of a slot's closest examples a clause is compared with (their mean similarity)
NEAREST = 3
#: the least mean similarity for a note to fill a deployment's slot (a slot may set its own)
THRESHOLD = 0.4

Embed = Callable[[Sequence[str]], Sequence[Sequence[float]]]


class SlotSpec(BaseModel):
    slot: str = Field(pattern=r"^[a-z][a-z0-9_]{1,47}$", description="snake_case, not a slot of the catalogue")
    kind: Literal["fact", "preference", "decision"] = "fact"
    multi: bool = False
    description: str = ""
    examples: list[str] = Field(min_length=NEAREST, max_length=500,
                                description="What users say to fill the slot; 20 or more, worded variously.")
    threshold: float | None = Field(None, gt=0.0, le=1.0)

    @field_validator("slot")
    @classmethod
    def _not_the_catalogues(cls, v: str) -> str:
        if v in {s["slot"] for s in catalogue()["slots"]} or v in ("other", "retract"):
            raise ValueError(f"{v!r} is a slot of the catalogue already: give the deployment's slot another name")
        return v

    @field_validator("examples")
    @classmethod
    def _said(cls, v: list[str]) -> list[str]:
        out = [" ".join(e.split()) for e in v]
        if not all(out) or any(len(e) > 1000 for e in out):
            raise ValueError("every example is a message of 1 to 1,000 characters")
        return out


class SlotsFile(BaseModel):
    slots: list[SlotSpec] = Field(max_length=200)


@dataclass
class TenantSlots:
    """One tenant's slots and their examples' vectors (unit rows)."""
    specs: list[SlotSpec]
    vectors: list[np.ndarray]

    @classmethod
    def of(cls, specs: list[SlotSpec], embed: Embed) -> TenantSlots:
        """The slots with their examples embedded."""
        return cls(specs, [_unit(np.asarray(embed(s.examples), dtype=np.float32)) for s in specs])

    def scores(self, x: np.ndarray) -> np.ndarray:
        """Clause vectors (rows) x slots: the mean similarity of each clause to the slot's `NEAREST` examples."""
        x = _unit(np.atleast_2d(np.asarray(x, dtype=np.float32)))
        return np.stack([np.sort(x @ v.T, axis=1)[:, -NEAREST:].mean(axis=1) for v in self.vectors], axis=1)

    def match(self, x: np.ndarray) -> list[tuple[SlotSpec | None, float]]:
        """For each clause vector (rows), the slot it fills (None: none reaches its threshold) and its score."""
        out: list[tuple[SlotSpec | None, float]] = []
        for row in self.scores(x):
            k = int(row.argmax())
            spec = self.specs[k]
            out.append((spec if row[k] >= (spec.threshold or THRESHOLD) else None, float(row[k])))
        return out


def read(path: Path) -> SlotsFile:
    try:
        return SlotsFile.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigurationError(f"slots file {path}: cannot be read as JSON ({exc})") from exc
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5])
        raise ConfigurationError(f"slots file {path}: {problems}") from exc


def load(folder: Path, embed: Embed) -> dict[str, TenantSlots]:
    """Every tenant's slots in `folder` (`<tenant>.json`), their examples embedded. A folder that is missing,
    a file that is not valid, a tenant name that is not one, or a slot named twice is refused."""
    from hippograph.auth import check_tenant
    from hippograph.errors import InvalidInput

    if not folder.is_dir():
        raise ConfigurationError(f"HIPPOGRAPH_EXTRACTION__SLOTS_DIR={folder}: no such folder")
    out: dict[str, TenantSlots] = {}
    for path in sorted(folder.glob("*.json")):
        try:
            tenant = check_tenant(path.stem)
        except InvalidInput as exc:
            raise ConfigurationError(f"slots file {path}: the file name is the tenant's: {exc}") from exc
        specs = read(path).slots
        names = [s.slot for s in specs]
        if len(set(names)) != len(names):
            raise ConfigurationError(f"slots file {path}: a slot is named twice")
        if specs:
            out[tenant] = TenantSlots.of(specs, embed)
    return out


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9)
