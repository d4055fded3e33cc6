"""The labelled notes corpus: per-user sequences of sessions whose user messages are labelled clause by
clause (what the clause does, which slot of the catalogue it is about, the value's key words), and what
is current, replaced and retired at the end. The format is documented in `bench/notes/README.md`.

This module reads and checks corpus files with the standard library only (the catalogue is the JSON
beside it), so `python -m hippograph.notes_model.corpus FILE...` checks a file wherever it was written.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

CATALOGUE_PATH = Path(__file__).with_name("catalogue.json")
#: Acts whose clause makes (or replaces) a lasting note about the user.
NOTE_ACTS = frozenset({"states", "changes"})
#: Acts that need a slot: a note is made, replaced or taken back.
SLOT_ACTS = frozenset({"states", "changes", "retracts"})
#: Slots whose notes are keyed by a subject phrase as well ("decision": hosting, CI ...; "other").
KEYED_SLOTS = frozenset({"decision", "other"})
KINDS = ("fact", "preference", "decision")
ROLES = ("user", "assistant", "tool")


def catalogue(path: Path = CATALOGUE_PATH) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def paired_slots() -> frozenset[str]:
    """The catalogue's slots whose notes are told apart by value or subject: the multi-valued and keyed ones."""
    return frozenset(s["slot"] for s in catalogue()["slots"] if s["multi"]) | KEYED_SLOTS


@dataclass
class Clause:
    """One labelled clause of a user message."""
    text: str
    act: str
    slot: str | None = None
    kind: str | None = None
    subject: str | None = None
    value: list[str] = field(default_factory=list)

    @property
    def gives_note(self) -> bool:
        return self.act in NOTE_ACTS


@dataclass
class Message:
    id: str
    role: str
    content: str
    timestamp: str
    session_id: str
    name: str | None = None
    clauses: list[Clause] = field(default_factory=list)

    @property
    def gives_note(self) -> bool:
        return any(c.gives_note for c in self.clauses)


@dataclass
class Sequence:
    writer: str
    id: str
    description: str
    messages: list[Message]
    expected: dict[str, list[dict[str, Any]]]

    def user_messages(self) -> list[Message]:
        return [m for m in self.messages if m.role == "user"]


class CorpusError(ValueError):
    """What is wrong with a corpus file: one line per problem."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def _keyword_ok(keyword: Any) -> bool:
    return isinstance(keyword, str) and bool(keyword.strip())


class _Checker:
    def __init__(self, cat: dict[str, Any], where: str) -> None:
        self.acts = {a["act"] for a in cat["acts"]}
        self.slots = {s["slot"]: s for s in cat["slots"]}
        self.where = where
        self.problems: list[str] = []

    def fail(self, at: str, what: str) -> None:
        self.problems.append(f"{self.where}: {at}: {what}")

    def slot_fields(self, at: str, entry: dict[str, Any], needs_slot: bool) -> None:
        slot = entry.get("slot")
        if slot is None:
            if needs_slot:
                self.fail(at, "needs a slot")
            return
        if slot not in self.slots:
            self.fail(at, f"slot {slot!r} is not in the catalogue")
            return
        kind = entry.get("kind")
        if kind is not None and kind not in KINDS:
            self.fail(at, f"kind {kind!r} is not one of {', '.join(KINDS)}")
        elif kind is not None and slot != "other" and kind != self.slots[slot]["kind"]:
            self.fail(at, f"slot {slot!r} is of kind {self.slots[slot]['kind']!r}, not {kind!r}")
        if needs_slot and slot in KEYED_SLOTS and not (isinstance(entry.get("subject"), str)
                                                       and entry["subject"].strip()):
            self.fail(at, f"a {slot!r} entry needs a subject (a short phrase: what it is about)")

    def clause(self, at: str, raw: Any, content: str) -> Clause | None:
        if not isinstance(raw, dict):
            self.fail(at, "a label is an object")
            return None
        text, act = raw.get("clause"), raw.get("act")
        if not isinstance(text, str) or not text.strip():
            self.fail(at, "a label needs its clause (the words of the message it labels)")
            return None
        said = _norm(content)
        if _norm(text) not in said:
            self.fail(at, f"clause {text!r} is not in the message's content")
        if not isinstance(act, str) or act not in self.acts:
            self.fail(at, f"act {act!r} is not one of {', '.join(sorted(self.acts))}")
            return None
        self.slot_fields(at, raw, act in SLOT_ACTS)
        value = raw.get("value", [])
        if not isinstance(value, list) or not all(_keyword_ok(v) for v in value):
            self.fail(at, "value is a list of key words")
            value = []
        if act in SLOT_ACTS and not value:
            self.fail(at, f"a {act!r} label needs the value's key words")
        for v in value:
            if not any(_norm(alt) in said for alt in v.split("|")):
                self.fail(at, f"value key word {v!r} is not in the message")
        slot = raw.get("slot")
        kind = raw.get("kind") or (self.slots[slot]["kind"] if slot in self.slots else None)
        return Clause(text=text, act=act, slot=slot, kind=kind, subject=raw.get("subject"), value=value)


def _sequence(check: _Checker, writer: str, raw: Any, index: int) -> Sequence | None:
    at = f"sequence {index + 1}"
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
        check.fail(at, "a sequence is an object with an id")
        return None
    at = f"sequence {raw['id']}"
    sessions = raw.get("sessions")
    if not isinstance(sessions, list) or not sessions:
        check.fail(at, "needs sessions")
        return None
    messages: list[Message] = []
    seen: set[str] = set()
    last: datetime | None = None
    for session in sessions:
        sid = session.get("session_id") if isinstance(session, dict) else None
        if not isinstance(sid, str) or not isinstance(session.get("messages"), list):
            check.fail(at, "a session is an object with a session_id and messages")
            continue
        for m in session["messages"]:
            mat = f"{at} message {m.get('id') if isinstance(m, dict) else '?'}"
            if not isinstance(m, dict) or not isinstance(m.get("id"), str):
                check.fail(mat, "a message is an object with an id")
                continue
            if m["id"] in seen:
                check.fail(mat, "the id is used twice in the sequence")
            seen.add(m["id"])
            role, content = m.get("role"), m.get("content")
            if role not in ROLES:
                check.fail(mat, f"role {role!r} is not one of {', '.join(ROLES)}")
                continue
            if not isinstance(content, str) or not content.strip():
                check.fail(mat, "needs content")
                continue
            if role == "tool" and not m.get("name"):
                check.fail(mat, "a tool message needs a name")
            try:
                stamp = datetime.fromisoformat(m.get("timestamp", ""))
                if stamp.tzinfo is None:
                    check.fail(mat, "the timestamp needs a zone")
                elif last is not None and stamp < last:
                    check.fail(mat, "timestamps go back in time")
                else:
                    last = stamp
            except (ValueError, AttributeError):
                check.fail(mat, f"timestamp {m.get('timestamp')!r} is not ISO 8601")
            clauses: list[Clause] = []
            labels = m.get("labels")
            if role == "user":
                if not isinstance(labels, list) or not labels:
                    check.fail(mat, "a user message needs labels (one per clause; small talk is labelled too)")
                else:
                    clauses = [c for i, lab in enumerate(labels)
                               if (c := check.clause(f"{mat} label {i + 1}", lab, content)) is not None]
            elif labels:
                check.fail(mat, "only user messages are labelled")
            messages.append(Message(id=m["id"], role=role, content=content, timestamp=m.get("timestamp", ""),
                                    session_id=sid, name=m.get("name"), clauses=clauses))
    expected = raw.get("expected")
    if not isinstance(expected, dict):
        check.fail(at, "needs expected (current, replaced, retired)")
        expected = {}
    by_id = {m.id: m for m in messages}
    out: dict[str, list[dict[str, Any]]] = {}
    for part, words in (("current", ("keywords",)), ("replaced", ("old", "new")), ("retired", ("keywords",))):
        entries = expected.get(part, [])
        if not isinstance(entries, list):
            check.fail(at, f"expected.{part} is a list")
            entries = []
        for i, e in enumerate(entries):
            eat = f"{at} expected.{part}[{i}]"
            if not isinstance(e, dict):
                check.fail(eat, "an entry is an object")
                continue
            check.slot_fields(eat, e, True)
            for w in words:
                if not isinstance(e.get(w), list) or not e[w] or not all(_keyword_ok(k) for k in e[w]):
                    check.fail(eat, f"{w} is a non-empty list of key words")
            if part == "current":
                src = by_id.get(e.get("source", ""))
                if src is None or src.role != "user":
                    check.fail(eat, f"source {e.get('source')!r} is not a user message of the sequence")
                elif not src.gives_note:
                    check.fail(eat, f"source {src.id} has no 'states' or 'changes' label")
        out[part] = [e for e in entries if isinstance(e, dict)]
    if not any(m.role == "user" for m in messages):
        check.fail(at, "has no user message")
    return Sequence(writer=writer, id=raw["id"], description=str(raw.get("description", "")), messages=messages,
                    expected=out)


def load(path: Path | str, cat: dict[str, Any] | None = None) -> list[Sequence]:
    """The sequences of one corpus file; `CorpusError` lists every problem."""
    path = Path(path)
    check = _Checker(cat or catalogue(), path.name)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CorpusError([f"{path.name}: cannot be read as JSON: {exc}"]) from exc
    if not isinstance(raw, dict) or not isinstance(raw.get("writer"), str) or not isinstance(
            raw.get("sequences"), list):
        raise CorpusError([f"{path.name}: a corpus file is an object with a writer and sequences"])
    seqs = [s for i, r in enumerate(raw["sequences"]) if (s := _sequence(check, raw["writer"], r, i)) is not None]
    ids = [s.id for s in seqs]
    if len(ids) != len(set(ids)):
        check.fail("sequences", "sequence ids repeat")
    if check.problems:
        raise CorpusError(check.problems)
    return seqs


def load_all(paths: Iterable[Path | str]) -> list[Sequence]:
    cat = catalogue()
    return [s for p in paths for s in load(p, cat)]


def corpus_files(root: Path | str) -> Iterator[Path]:
    """Every corpus file under `root` (one folder per writer)."""
    yield from sorted(Path(root).glob("*/*.json"))


def summary(seqs: list[Sequence]) -> dict[str, Any]:
    users = [m for s in seqs for m in s.user_messages()]
    acts: dict[str, int] = {}
    slots: dict[str, int] = {}
    for m in users:
        for c in m.clauses:
            acts[c.act] = acts.get(c.act, 0) + 1
            if c.gives_note and c.slot:
                slots[c.slot] = slots.get(c.slot, 0) + 1
    return {"sequences": len(seqs), "messages": sum(len(s.messages) for s in seqs), "user_messages": len(users),
            "user_messages_without_note": sum(not m.gives_note for m in users),
            "sessions": sum(len({m.session_id for m in s.messages}) for s in seqs),
            "replaced": sum(len(s.expected.get("replaced", [])) for s in seqs),
            "retired": sum(len(s.expected.get("retired", [])) for s in seqs),
            "acts": dict(sorted(acts.items())), "note_slots": dict(sorted(slots.items()))}


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m hippograph.notes_model.corpus FILE.json [...]", file=sys.stderr)
        return 2
    cat = catalogue()
    seqs: list[Sequence] = []
    bad = 0
    for p in argv:
        try:
            seqs += load(p, cat)
        except CorpusError as exc:
            bad += 1
            print("\n".join(exc.problems), file=sys.stderr)
    print(json.dumps(summary(seqs), indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


def as_cases(seqs: list[Sequence], split: str) -> dict[str, Any]:
    """The sequences as a case file of `hippograph bench extraction` (`bench/extraction/README.md`): every
    expected note with its kind and its slot as the topic, and every message that gives no note (assistant
    and tool turns, user messages without a `states` or `changes` label) as `no_note`."""
    kinds = {s["slot"]: s["kind"] for s in catalogue()["slots"]}

    def kind_topic(e: dict[str, Any]) -> dict[str, str]:
        slot = e.get("slot") or "other"
        kind = e.get("kind") or kinds.get(slot, "fact")
        return {"kind": kind, "topic": f"{slot}: {e['subject']}" if e.get("subject") else slot}

    cases = []
    for s in seqs:
        sessions: dict[str, list[dict[str, Any]]] = {}
        for m in s.messages:
            msg = {"id": m.id, "role": m.role, "content": m.content, "timestamp": m.timestamp}
            if m.name:
                msg["name"] = m.name
            sessions.setdefault(m.session_id, []).append(msg)
        exp = s.expected
        cases.append({
            "id": s.id, "description": s.description,
            "sessions": [{"session_id": sid, "messages": msgs} for sid, msgs in sessions.items()],
            "expected": {
                "current": [{**kind_topic(e), "keywords": e["keywords"], "source": e["source"]}
                            for e in exp.get("current", [])],
                "replaced": [{**kind_topic(e), "old": e["old"], "new": e["new"]} for e in exp.get("replaced", [])],
                "retired": [{**kind_topic(e), "keywords": e["keywords"]} for e in exp.get("retired", [])],
                "no_note": [m.id for m in s.messages if not m.gives_note],
            }})
    return {"split": split, "sequences": cases}
