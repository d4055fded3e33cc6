"""The learned notes judgement in the write path: which clauses of a user's messages are notes, which slot of
the catalogue each fills, and what it replaces or takes back.

The spaCy extractor gives each user message's clauses with their parse (`Extraction.clauses`); here they
are read with the MiniLM vector of the clause, as the models were trained (`features.matrix`, `Judgement.clause_features`). A clause judged to be a note is the note, in the user's own words
with its relative dates made absolute ("we moved to Bristol last month", said in May 2026: "We moved to
Bristol in April 2026"). The rules' third-person wordings ("Lives in Bristol") were measured against the
clause's own words on the notes corpus and lost: they drop values ("done with the move, Bristol is so much
nicer" -> "Is done with the move"). A clause the judgement does not take gives no note, whatever the rules
found in it.

What a judged note replaces is decided when it is written (`NoteWriter`), against the notes current then:
the current note of its slot for a single-valued slot; for a multi-valued or keyed one (pets, decisions),
the current note of that slot the pair model judges to be about the same thing (`same`). A clause judged
to take something back retires the current note it is most surely about.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from datetime import datetime
from pathlib import Path

import numpy as np

from hippograph.dates import resolve_in_text
from hippograph.extraction.base import Clause, ExtractedNote, Extraction, Judged
from hippograph.extraction.rules import is_small_talk, normalise, slug, split_speaker
from hippograph.models import Episode, Note, NoteKind
from hippograph.notes_model import tenant_slots
from hippograph.notes_model.corpus import NOTE_ACTS, catalogue, paired_slots
from hippograph.notes_model.features import DIM
from hippograph.notes_model.judge import (
    WEIGHTS,
    Judgement,
    Thresholds,
    act_of,
    limits_of,
    pair_features,
    related,
    with_context,
)
from hippograph.notes_model.segment import FEATURES
from hippograph.notes_model.tenant_slots import SlotSpec, TenantSlots
from hippograph.vectors.indexer import spread

log = logging.getLogger(__name__)

Embed = Callable[[Sequence[str]], Sequence[Sequence[float]]]
CACHED = 20_000
#: the longest message whose sentences `foresee` embeds ahead (a long one is cut otherwise, and is rare)
FORESEEN_CHARS = 600
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'])")
#: the name of the embedder the models were trained with (its vectors are the ones they read)
EMBEDDER = "all-MiniLM-L6-v2"
class LearnedNotes:
    """The models with the embedder whose vectors they read."""

    def __init__(self, judgement: Judgement, embed: Embed, limits: Thresholds | None = None,
                 tenant_slots: dict[str, TenantSlots] | None = None, indexed: bool = False) -> None:
        self.j, self.embed, self.limits = judgement, embed, limits or Thresholds()
        self.indexed = indexed  # `embed` is the index's embedder: its vectors of a text serve both (`known`)
        self.tenant_slots = tenant_slots or {}  # a deployment's own slots, by tenant (`tenant_slots`)
        slots = catalogue()["slots"]
        self.kinds = {s["slot"]: s["kind"] for s in slots}
        self.by_pair = paired_slots()
        self.slot_names = list(self.j.slot.classes)
        acts = self.j.act.classes
        self._note = [acts.index(a) for a in NOTE_ACTS if a in acts]
        self._retract = acts.index("retracts") if "retracts" in acts else None
        self._same = self.j.pair.classes.index("same")
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._slots_alone: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def load(cls, embed: Embed, folder: Path = WEIGHTS, slots_dir: Path | None = None,
             indexed: bool = False) -> LearnedNotes | None:
        """The judgement of `folder` (the package's weights), with the tenants' own slots of `slots_dir`; None
        when there are no weights. `indexed`: `embed` is the index's embedder."""
        if not (folder / "act.npz").is_file():
            log.warning("no notes judgement weights in %s: notes are the rules' alone", folder)
            return None
        own = tenant_slots.load(slots_dir, embed) if slots_dir is not None else None
        return cls(Judgement.load(folder), embed, limits_of(folder), own, indexed)

    # --- reading -----------------------------------------------------------------------------------
    def _vectors(self, texts: Sequence[str], helper: Executor | None = None) -> dict[str, np.ndarray]:
        """Each distinct text's vector (half of the new ones on the `helper`, `indexer.spread`); the last
        `CACHED` texts' are kept (a user's notes are read again at every statement the pair model judges)."""
        return self._kept(self._cache, [t for t in texts if t], lambda new: {
            t: np.asarray(v, dtype=np.float32) for t, v in spread(self.embed, new, helper).items()})

    def _kept(self, cache: OrderedDict[str, np.ndarray], texts: Sequence[str],
              make: Callable[[list[str]], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
        """What `make` gives each distinct text, from `cache` where it has it; the last `CACHED` are kept."""
        with self._lock:
            known = {t: cache[t] for t in texts if t in cache}
        new = list(dict.fromkeys(t for t in texts if t not in known))
        if new:
            made = make(new)
            with self._lock:
                cache.update(made)
                while len(cache) > CACHED:
                    cache.popitem(last=False)
            known.update(made)
        return known

    def known(self, texts: Sequence[str], notes: Sequence[str] = (), helper: Executor | None = None
              ) -> dict[str, list[float]]:
        """When its vectors are the index's too: those already made of `texts` (a note in the words of its
        clause is not embedded twice), and those of the `notes`' texts, made here if need be and kept (the
        judgement reads a user's notes again when the next statement comes); else none."""
        if not self.indexed:
            return {}
        with self._lock:
            out = {t: self._cache[t].tolist() for t in texts if t in self._cache}
        return out | {t: v.tolist() for t, v in self._vectors([t for t in notes if t not in out], helper).items()}

    def foresee(self, messages: Sequence[str]) -> None:
        """Embed ahead, and keep, what the clauses of these user messages will most likely be: their sentences
        as the extractor reads them (most messages are one clause a sentence; it skips small talk). Made while
        the messages are parsed, on another core, so that `notes` finds most of its clauses' vectors made."""
        said = [split_speaker(m)[1] for m in messages if len(m) <= FORESEEN_CHARS]
        self._vectors([s for m in said if not is_small_talk(m) for s in _sentences(m)])

    def notes(self, episodes: Sequence[Episode], ex: Extraction, tenant: str | None = None,
              helper: Executor | None = None) -> list[ExtractedNote]:
        """The extraction's notes with the judgement's for every user message it has clauses of (in the
        messages' order); the other messages keep the notes the extractor found. A note may fill a slot of
        the `tenant`'s own. The clauses are embedded half on the `helper`, if any."""
        judged = [e for e in episodes if ex.clauses.get(e.id)]
        if not judged:
            return ex.notes
        x = self.features([c for e in judged for c in ex.clauses[e.id]], helper,
                          [e.id for e in judged for _ in ex.clauses[e.id]])
        acts, slots = self.j.act.probabilities(x), self.j.slot.probabilities(x)
        own = self.tenant_slots.get(tenant) if tenant is not None else None
        fills = own.match(x[:, :DIM]) if own is not None else [(None, 0.0)] * len(x)
        found: dict[str, list[ExtractedNote]] = {}
        row = 0
        for e in judged:
            clauses = ex.clauses[e.id]
            for clause in clauses:
                found.setdefault(e.id, []).extend(
                    self._clause_notes(e.id, e.timestamp, clause, x[row], acts[row], slots[row], fills[row][0]))
                row += 1
        out: list[ExtractedNote] = []
        for e in episodes:
            out += found.get(e.id, []) if e.id in ex.clauses else [n for n in ex.notes if n.episode_id == e.id]
        known = {e.id for e in episodes}
        return out + [n for n in ex.notes if n.episode_id not in known]

    def features(self, clauses: Sequence[Clause], helper: Executor | None = None,
                 messages: Sequence[str] | None = None) -> np.ndarray:
        """What the act and slot models read of each clause: its vector, its parse (zeros when there is none:
        a note an LLM wrote), what the judgement reads of the clauses before it in its message (`Judgement.context`;
        `messages`: each clause's, in order; none given, none before) and its words. The vector is the row's
        first `DIM` numbers."""
        vectors = self._vectors([c.text for c in clauses], helper)
        parse = np.array([c.parse or [0.0] * len(FEATURES) for c in clauses], dtype=np.float32).reshape(len(clauses), -1)
        base = np.concatenate([np.stack([vectors[c.text] for c in clauses]), parse], axis=1)
        return with_context(base, self.j.context(base, messages), [c.text for c in clauses], self.j.vocabulary)

    def act(self, acts: np.ndarray) -> tuple[str | None, float, float]:
        """What a clause's act probabilities make of it (`judge.act_of`), with its note and retraction
        probabilities."""
        note = float(acts[self._note].sum())
        retract = float(acts[self._retract]) if self._retract is not None else 0.0
        return act_of(note, retract, self.limits), note, retract

    def _clause_notes(self, episode_id: str, at: datetime, clause: Clause, x: np.ndarray, acts: np.ndarray,
                      slots: np.ndarray, own: SlotSpec | None = None) -> list[ExtractedNote]:
        """The note a clause is (in its own words, its relative dates made absolute), or the retraction. A
        note that fills a slot of the tenant's own (`own`) is of that slot, as sure as the act is."""
        act, note, retract = self.act(acts)
        k = int(slots.argmax())
        if act == "note":
            text = _as_note(resolve_in_text(clause.text, at))
            self._read_as(text, clause.text)
            if own is not None:
                return [ExtractedNote(
                    kind=NoteKind(own.kind), text=text, slot=f"{own.slot}:{slug(text)[:80]}" if own.multi else own.slot,
                    episode_id=episode_id, confidence=round(note, 4),
                    judged=Judged(act="states", slot=own.slot, by_pair=own.multi, own=True, vector=x[:DIM].tolist(),
                                  slots=[0.0] * len(slots)))]
            slot = self.slot_names[k]
            by_pair = slot in self.by_pair
            return [ExtractedNote(
                kind=NoteKind(self.kinds.get(slot, "fact")), text=text,
                slot=f"{slot}:{slug(text)[:80]}" if by_pair else slot, episode_id=episode_id,
                confidence=round(note * float(slots[k]), 4),
                judged=Judged(act="states", slot=slot, by_pair=by_pair, vector=x[:DIM].tolist(), slots=slots.tolist()))]
        if act == "retract":
            return [ExtractedNote(kind=NoteKind.fact, text=_as_note(clause.text), slot="retract:learned",
                                  episode_id=episode_id, confidence=round(retract, 4),
                                  judged=Judged(act="retracts", slot=self.slot_names[k], by_pair=True,
                                                vector=x[:DIM].tolist(), slots=slots.tolist()))]
        return []

    def _read_as(self, note: str, clause: str) -> None:
        """A note is read with its clause's vector, as training reads a note (its words trimmed, capitalised
        and its dates made absolute change little of it): it is not embedded again, for the index or the next
        judgement of this user's statements."""
        if note != clause:
            with self._lock:
                if clause in self._cache:
                    self._cache[note] = self._cache[clause]

    def adopt(self, notes: Sequence[ExtractedNote]) -> list[ExtractedNote]:
        """The notes an LLM judged (`Judged` without vectors: `llm_extractor.catalogued`) made ready for the
        note writer as the learned judgement's own: each with its vector, and its slot sure. A note whose slot
        the model gave outside the catalogue takes the slot model's (read from its vector and words)."""
        todo = [n for n in notes if n.judged is not None and not n.judged.vector]
        if not todo:
            return list(notes)
        rows = dict(zip((n.text for n in todo), self.features([Clause(text=n.text, parse=[]) for n in todo]), strict=True))
        out = []
        for n in notes:
            if n.judged is None or n.judged.vector:
                out.append(n)
                continue
            x = rows[n.text]
            v = x[:DIM]
            slot, update = n.judged.slot, {}
            if slot not in self.slot_names and n.judged.act != "retracts":  # the slot model takes over
                slot = self.slot_names[int(self.j.slot.probabilities(x[None, :])[0].argmax())]
                update = {"kind": NoteKind(self.kinds.get(slot, n.kind.value)),
                          "slot": f"{slot}:{slug(n.text)[:80]}" if slot in self.by_pair else slot}
            sure = np.zeros(len(self.slot_names), dtype=np.float32)
            if slot in self.slot_names:
                sure[self.slot_names.index(slot)] = 1.0
            judged = n.judged.model_copy(update={"slot": slot, "vector": v.tolist(), "slots": sure.tolist(),
                                                 "by_pair": n.judged.by_pair or slot in self.by_pair})
            out.append(n.model_copy(update={**update, "judged": judged}))
        return out

    # --- writing -----------------------------------------------------------------------------------
    def same(self, judged: Judged, text: str, notes: Sequence[Note]) -> list[float]:
        """For each note, the pair model's probability that the judged statement (`text`) is about the same
        thing. A statement of a deployment's slot and a note of that slot are of the same slot."""
        if not notes:
            return []
        vectors = self._vectors([n.text for n in notes])
        xa = np.stack([vectors[n.text] for n in notes])
        sa = np.zeros((len(notes), len(self.slot_names)), dtype=np.float32)
        for i, n in enumerate(notes):
            family = n.slot.split(":", 1)[0]
            if family in self.slot_names:
                sa[i, self.slot_names.index(family)] = 1.0
        xb = np.tile(np.asarray(judged.vector, dtype=np.float32), (len(notes), 1))
        sb = np.tile(np.asarray(judged.slots, dtype=np.float32), (len(notes), 1))
        same_slot = np.asarray([float(n.slot.split(":", 1)[0] == judged.slot) for n in notes],
                               dtype=np.float32) if judged.own else None
        f = pair_features(xa, xb, sa, sb, [n.text for n in notes], [text] * len(notes), same_slot=same_slot)
        return [float(p) for p in self.j.pair.probabilities(f)[:, self._same]]

    def _covering(self, slot: str, notes: Sequence[Note]) -> set[str]:
        """The ids of the notes of single-valued catalogue slots whose words give `slot` at least `covers`
        ("Backend dev at a startup in Porto" is a job, an employer and a city)."""
        if self.limits.covers > 1.0 or slot not in self.slot_names:
            return set()
        todo = [n for n in notes if n.slot in self.slot_names and n.slot not in self.by_pair]
        if not todo:
            return set()
        k = self.j.slot.classes.index(slot)
        alone = self._alone([n.text for n in todo])
        return {n.id for n in todo if alone[n.text][k] >= self.limits.covers}

    def _alone(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """The slot probabilities of each text read alone (no parse), as a stored note is read."""
        return self._kept(self._slots_alone, texts, lambda new: dict(zip(
            new, self.j.slot.probabilities(self.features([Clause(text=t, parse=[]) for t in new])), strict=True)))

    def replaced(self, judged: Judged, text: str, current: Sequence[Note]) -> list[Note]:
        """The current notes a judged statement replaces (or retires). For a single-valued slot, the one of its
        slot, those of the single-valued slots its clause gives at least `related`, and those of single-valued
        slots whose words give its slot at least `covers`; else the note of the value or subject an LLM named
        (`Judged.key`), or the one the pair model is surest is about the same thing, if sure enough."""
        if judged.act != "retracts" and not judged.by_pair:
            if judged.own:  # a deployment's single-valued slot: its current note, nothing else
                return [n for n in current if n.slot == judged.slot]
            near = related(self.slot_names, judged.slots, judged.slot, self.by_pair, self.limits)
            covering = self._covering(judged.slot, [n for n in current if n.slot not in near])
            return sorted((n for n in current if n.slot in near or n.id in covering), key=lambda n: n.slot != judged.slot)
        named = [n for n in current if judged.key and n.slot == f"{judged.slot}:{judged.key}"]
        if named or (judged.key and judged.act != "retracts"):
            return named[:1]  # the value or subject an LLM named: its note, whatever the words, or none
        pool = [n for n in current if judged.act == "retracts" or n.slot.split(":", 1)[0] == judged.slot]
        scores = self.same(judged, text, pool)
        if not scores:
            return []
        best = int(np.argmax(scores))
        return [pool[best]] if scores[best] >= self.limits.same else []


_JOINED = re.compile(r"^(?:and|but|plus|so)\s+(?=\S)", re.IGNORECASE)


def _sentences(said: str) -> list[str]:
    """The sentences of a message's words (its speaker's prefix left off) as the extractor reads them
    (`rules.normalise`)."""
    return [p.strip() for p in _SENTENCE_END.split(normalise(said).strip()) if p.strip()]


def _as_note(text: str) -> str:
    """A clause as a note's words: trimmed (of a closing full stop, and of the word that joined it to the
    clause before: "and I prefer short answers" -> "I prefer short answers"), its first letter capital."""
    text = " ".join(text.split()).strip(" ,;-")
    text = _JOINED.sub("", text).lstrip(" ,") or text
    text = text[:-1].rstrip() if text.endswith(".") and not text.endswith("..") else text
    return text[:1].upper() + text[1:]
