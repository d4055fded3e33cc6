"""Forgetting, on any graph store: what a deleted episode or note takes with it.

Deleting episodes (a message, a document's parts, a session) deletes what was derived only from them
and takes them out of what has other sources:
  - a note or relation whose every source is deleted goes;
  - one with other sources keeps them, and a relation whose `fact` is a sentence of a deleted episode
    gets the sentence of a remaining source that names its target, or failing that the neutral
    "<source> <predicate> <target>";
  - entities nothing mentions or relates any more go (their names came from the deleted text);
  - the audit events of deleted notes lose their text.
Deleting a note also deletes the relations that state the same thing: those that share a source
episode with it and whose target's name occurs in its text (case-insensitively). A relation always
comes from one sentence naming its target, so a note that names the target and came from the same
message is that relation in other words; a relation from the same message about something else stays.

These functions only use the `GraphStore` protocol, inside one `batch()`; the vector index and the
session summaries are the caller's (see `hippograph.forgetting`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from hippograph.graph.base import GraphStore
from hippograph.models import Entity, Episode, Note, Relation

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


@dataclass
class Forgotten:
    """What a forget deleted and changed (ids unless said otherwise)."""

    episodes: list[Episode] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    relations: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    changed_notes: list[Note] = field(default_factory=list)
    changed_relations: list[Relation] = field(default_factory=list)


def neutral_fact(source: str, predicate: str, target: str) -> str:
    """A relation said in no one's words: "alice lives in Seattle"."""
    return f"{source} {predicate.lower().replace('_', ' ')} {target}"


def sentence_naming(text: str, name: str) -> str | None:
    """The first sentence of the text that contains the name (case-insensitively)."""
    folded = name.casefold()
    for sentence in _SENTENCE.split(text):
        sentence = " ".join(sentence.split())
        if sentence and folded in sentence.casefold():
            return sentence
    return None


def _entities(graph: GraphStore, user_id: str, ids: set[str]) -> dict[str, Entity]:
    return {i: e for i in ids if (e := graph.get_entity(user_id, i)) is not None}


def forget_episodes(graph: GraphStore, user_id: str, ids: Sequence[str]) -> Forgotten:
    """Delete these episodes of the user (stored, or expired but still cited) with what was derived
    from them, as the module doc says."""
    ids = list(dict.fromkeys(ids))
    if not ids:
        return Forgotten()
    with graph.batch():
        episodes = graph.get_episodes(user_id, ids)
        gone = set(ids)
        said = [e.content for e in episodes]
        notes, relations = graph.derived_from(user_id, ids)
        out = Forgotten(episodes=episodes)
        candidates = graph.mentioned_in(user_id, [e.id for e in episodes])
        rewrite: list[Relation] = []
        for r in relations:
            left = [ep for ep in r.source_episode_ids if ep not in gone]
            if not left:
                out.relations.append(r.id)
                candidates += [r.source_id, r.target_id]
                continue
            changed = r.model_copy(update={"source_episode_ids": left})
            if r.fact and any(r.fact.strip() in text for text in said):
                rewrite.append(changed)
            out.changed_relations.append(changed)
        if rewrite:
            _reword(graph, user_id, rewrite)
        for n in notes:
            left = [ep for ep in n.source_episode_ids if ep not in gone]
            if left:
                out.changed_notes.append(n.model_copy(update={"source_episode_ids": left}))
            else:
                out.notes.append(n.id)
        graph.delete_episodes(user_id, ids)
        for note_id in out.notes:
            graph.delete_note(user_id, note_id)
        for n in out.changed_notes:
            graph.set_note_sources(user_id, n.id, n.source_episode_ids)
        graph.delete_relations(user_id, out.relations)
        if out.changed_relations:
            graph.rewrite_relations(out.changed_relations)
        graph.redact_audit(user_id, out.notes)
        out.entities = graph.drop_orphan_entities(user_id, candidates)
    return out


def _reword(graph: GraphStore, user_id: str, relations: list[Relation]) -> None:
    """Give each relation (in place) a sentence of one of its remaining sources naming its target, or
    the neutral rendering."""
    names = _entities(graph, user_id, {i for r in relations for i in (r.source_id, r.target_id)})
    sources = {e.id: e for e in graph.get_episodes(user_id, [ep for r in relations for ep in r.source_episode_ids])}
    for r in relations:
        target = names[r.target_id].name if r.target_id in names else ""
        found = [s for ep in r.source_episode_ids if ep in sources and target
                 and (s := sentence_naming(sources[ep].content, target)) is not None]
        source = names[r.source_id].name if r.source_id in names else ""
        r.fact = found[0] if found else neutral_fact(source, r.predicate, target)


def relations_stating(graph: GraphStore, note: Note) -> list[Relation]:
    """The relations that say what the note says (see the module doc)."""
    if not note.source_episode_ids:
        return []
    _, relations = graph.derived_from(note.user_id, note.source_episode_ids)
    names = _entities(graph, note.user_id, {r.target_id for r in relations})
    text = note.text.casefold()
    return [r for r in relations if r.target_id in names and names[r.target_id].name.strip()
            and names[r.target_id].name.casefold() in text]


def forget_note(graph: GraphStore, user_id: str, note: Note) -> Forgotten:
    """Delete the note, the relations that state the same thing, and the text of its audit events."""
    with graph.batch():
        relations = relations_stating(graph, note)
        graph.delete_note(user_id, note.id)
        graph.delete_relations(user_id, [r.id for r in relations])
        graph.redact_audit(user_id, [note.id])
        entities = graph.drop_orphan_entities(user_id, [i for r in relations for i in (r.source_id, r.target_id)])
    return Forgotten(notes=[note.id], relations=[r.id for r in relations], entities=entities)
