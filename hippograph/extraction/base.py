"""The extractor protocol and its output model, shared by every extractor.

Extractors are pure: they read episodes and return what they found. They never touch a store;
the ingest pipeline resolves entities, supersedes notes and writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, Field

from hippograph.models import Episode, NoteKind

#: The name that stands for the user (the speaker of role=user messages) in extracted triples.
USER = "<user>"

#: Predicates a person has one current value of: a new (user)-[P]->(x) invalidates the old one.
SINGLE_VALUED_PREDICATES = frozenset({
    "MANAGES", "LIVES_IN", "WORKS_AT", "WORKS_FOR", "IS_MARRIED_TO", "REPORTS_TO", "LEADS", "HEADS",
})


class ExtractedEntity(BaseModel):
    name: str
    type: str = "Thing"  # Person, Organization, Location, Date, Event, Product, Concept, Thing ...


class ExtractedRelation(BaseModel):
    """subject -[predicate]-> object; subject/object are entity names or USER."""

    subject: str
    predicate: str  # UPPER_SNAKE_CASE, e.g. MANAGES, LIVES_IN, WORKS_AT
    object: str
    fact: str  # the sentence (or clause) that supports it
    episode_id: str


class Judged(BaseModel):
    """What the learned notes judgement (`hippograph.notes_model`) said of the clause a note comes from."""

    act: str  # "states" (or "changes"): a note; "retracts": it takes back the note it is most about
    slot: str  # the catalogue's slot, or (`own`) one of the tenant's own
    by_pair: bool  # a multi-valued or keyed slot: it replaces only a note the pair model judges the same
    own: bool = False  # a slot the deployment added for the tenant (`notes_model.tenant_slots`)
    key: str = ""  # the value or subject an LLM named for a multi-valued or keyed slot ("rex", "hosting")
    vector: list[float]  # the clause's vector and slot probabilities, which the pair model reads
    slots: list[float]


class ExtractedNote(BaseModel):
    kind: NoteKind
    text: str  # a short third-person statement, e.g. "Manages the Northwest region"
    slot: str  # what it replaces: a new note with the same slot supersedes the old one
    episode_id: str
    confidence: float = Field(0.7, ge=0.0, le=1.0)  # the extractor's estimate
    judged: Judged | None = None  # set by the learned judgement, which then decides what it replaces


class Clause(BaseModel):
    """A clause of a user's message (`notes_model.segment.pieces`) and what its parse says (`parse_features`)."""

    text: str
    parse: list[float]


class Extraction(BaseModel):
    entities: list[ExtractedEntity] = Field(default_factory=list)
    relations: list[ExtractedRelation] = Field(default_factory=list)
    notes: list[ExtractedNote] = Field(default_factory=list)
    # episode id -> names of entities it mentions (provenance links Episode -> Entity)
    mentions: dict[str, list[str]] = Field(default_factory=dict)
    # episode ids judged not worth remembering as long-term memories (greetings, small talk)
    small_talk: list[str] = Field(default_factory=list)
    # episode id -> (word, lemma) of its words whose lemma is another word, for the lexical index (see
    # `hippograph.vectors.lemmas`); an episode missing here is tagged there when lemmas are indexed
    lemmas: dict[str, list[tuple[str, str]]] = Field(default_factory=dict)
    # episode id -> why its extraction stopped short (its time budget was spent, it is longer than the
    # extractor reads): the rest of it gave no notes, relations or entities; it is stored and searchable
    incomplete: dict[str, str] = Field(default_factory=dict)
    # user message id -> its clauses, for the learned notes judgement (the spaCy extractor gives them)
    clauses: dict[str, list[Clause]] = Field(default_factory=dict)
    extractor: str = ""


@runtime_checkable
class Extractor(Protocol):
    name: str

    def load(self) -> object:
        """Load models (called once at start; extract() loads lazily otherwise)."""

    def extract(self, episodes: Sequence[Episode], user_name: str | None = None) -> Extraction: ...


#: the most characters of an entity's name or a note's slot: index keys of the graph store (`bounded`)
NAME_MAX_CHARS = 200

def bounded(ex: Extraction) -> Extraction:
    """What an extractor found, within what the graph store indexes: an "entity" named by more than
    NAME_MAX_CHARS characters (a run of text taken for a name) is left out with its relations and
    mentions, and a note's slot is cut to that length (both are index keys, of a few KB at most)."""
    names = {e.name for e in ex.entities} | {n for r in ex.relations for n in (r.subject, r.object)}
    long = {n for n in names if len(n) > NAME_MAX_CHARS}
    if not long and all(len(n.slot) <= NAME_MAX_CHARS for n in ex.notes):
        return ex
    return ex.model_copy(update={
        "entities": [e for e in ex.entities if e.name not in long],
        "relations": [r for r in ex.relations if r.subject not in long and r.object not in long],
        "mentions": {ep: [n for n in found if n not in long] for ep, found in ex.mentions.items()},
        "notes": [n.model_copy(update={"slot": n.slot[:NAME_MAX_CHARS]}) for n in ex.notes]})


def only_from(ex: Extraction, episode_ids: set[str]) -> Extraction:
    """What the extraction found in these episodes only (the others were deleted meanwhile)."""
    relations = [r for r in ex.relations if r.episode_id in episode_ids]
    mentions = {ep: names for ep, names in ex.mentions.items() if ep in episode_ids}
    named = {n for r in relations for n in (r.subject, r.object)} | {n for names in mentions.values() for n in names}
    return ex.model_copy(update={
        "relations": relations, "mentions": mentions, "entities": [e for e in ex.entities if e.name in named],
        "notes": [n for n in ex.notes if n.episode_id in episode_ids],
        "small_talk": [ep for ep in ex.small_talk if ep in episode_ids],
        "lemmas": {ep: pairs for ep, pairs in ex.lemmas.items() if ep in episode_ids}})
