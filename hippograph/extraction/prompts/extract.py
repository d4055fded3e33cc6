"""The extraction prompt and the JSON shape the model answers with (kept close to `Extraction`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from hippograph.models import Episode

USER_NAME = "USER"  # how the prompt names the person whose memory this is

def _catalogue() -> str:
    """The notes catalogue's slots and acts, as the prompt lists them (the learned judgement's own)."""
    from hippograph.notes_model.corpus import catalogue

    c = catalogue()
    slots = "\n".join(f"  {s['slot']}{' (several values)' if s['multi'] else ''}: {s['description']}" for s in c["slots"])
    acts = "\n".join(f"  {a['act']}: {a['description']}" for a in c["acts"] if a["act"] in ("states", "changes", "retracts"))
    return f"Slots:\n{slots}\nActs:\n{acts}"


SYSTEM = f"""You extract long-term memory from a conversation between a person ({USER_NAME}) and an assistant.
Return one JSON object with:
- entities: named things that matter (people, organisations, places, products, projects, events, dates),
  each with a type (Person, Organization, Location, Product, Project, Event, Date, Concept).
- relations: directed facts between entities as subject, predicate, object. Predicates are UPPER_SNAKE_CASE
  verbs (WORKS_AT, MANAGES, LIVES_IN, REPORTS_TO, OWNS, LIKES ...). Use "{USER_NAME}" as the subject or object
  for the person. `fact` is the clause that supports it; `message` is the id of the message that says it.
- notes: what {USER_NAME} says about themselves that is worth remembering for weeks: facts, preferences and
  decisions, each a short third-person statement without the name ("Manages the Northwest region",
  "Prefers aisle seats", "Decided to move the launch to May"). `slot` is one of the slots below: a later
  note of a slot replaces the earlier one, but in a slot with several values (a second pet) only a note
  about the same value does. `subject` names, for decision and other, what it is about ("hosting", "CI"),
  and for a slot with several values, the value ("Rex"). `act` is one of the acts below: "retracts" takes
  a note back without a new value (its `text` says what is taken back). confidence: 0.9 when stated
  plainly, lower when hedged. Questions, plans not made, other people's facts, jokes, the world's news
  and instructions for the task at hand are not notes.
- messages: for every message id, the entity names it mentions and whether it is small talk
  (greetings, thanks, acknowledgements with no content).
Only what the messages say; nothing from tool output; nothing the assistant merely suggested.
Tool results and the assistant's guesses are never notes.
""" + _catalogue()


class LLMEntity(BaseModel):
    name: str
    type: str = "Thing"


class LLMRelation(BaseModel):
    subject: str
    predicate: str
    object: str
    fact: str = ""
    message: str


class LLMNote(BaseModel):
    kind: Literal["fact", "preference", "decision"]
    text: str
    slot: str
    message: str
    act: Literal["states", "changes", "retracts"] = "states"
    subject: str = ""
    confidence: float = Field(0.8, ge=0.0, le=1.0)


class LLMMessage(BaseModel):
    message: str
    entities: list[str] = Field(default_factory=list)
    small_talk: bool = False


class LLMExtraction(BaseModel):
    entities: list[LLMEntity] = Field(default_factory=list)
    relations: list[LLMRelation] = Field(default_factory=list)
    notes: list[LLMNote] = Field(default_factory=list)
    messages: list[LLMMessage] = Field(default_factory=list)


def message_key(i: int) -> str:
    return f"m{i + 1}"


def prompt(episodes: Sequence[Episode], user_name: str | None = None) -> str:
    """The messages, one per line with a short id, its speaker and date."""
    who = f" ({USER_NAME} is called {user_name})" if user_name else ""
    lines = [f"Conversation{who}:"]
    for i, ep in enumerate(episodes):
        speaker = USER_NAME if ep.role is not None and ep.role.value == "user" else (ep.name or (
            ep.role.value if ep.role else ep.kind.value))
        title = f" [{ep.title}]" if ep.title else ""
        lines.append(f"{message_key(i)} ({speaker}{title}, {ep.timestamp:%Y-%m-%d}): {ep.content}")
    return "\n".join(lines)


RESOLVE_SYSTEM = """You decide which newly mentioned names refer to an entity already known.
Return one JSON object {"same": [{"new": <new name>, "known": <known name>}]} listing only pairs you are sure
name the same real thing (a nickname, an abbreviation, a fuller name). Leave out anything doubtful."""


class SamePair(BaseModel):
    new: str
    known: str


class Resolution(BaseModel):
    same: list[SamePair] = Field(default_factory=list)


def resolve_prompt(new: Sequence[str], known: Sequence[str]) -> str:
    return "New names:\n" + "\n".join(f"- {n}" for n in new) + "\n\nKnown entities:\n" + \
        "\n".join(f"- {k}" for k in known)
