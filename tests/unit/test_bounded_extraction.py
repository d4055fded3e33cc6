"""What reaches the graph store's indexes from an extraction is bounded, whatever the extractor found."""

from __future__ import annotations

from hippograph.extraction.base import (
    NAME_MAX_CHARS,
    ExtractedEntity,
    ExtractedNote,
    ExtractedRelation,
    Extraction,
    bounded,
)
from hippograph.models import NoteKind

LONG = "x" * (NAME_MAX_CHARS + 1)


def test_an_entity_named_by_a_run_of_text_goes_with_its_relations_and_mentions() -> None:
    ex = Extraction(
        entities=[ExtractedEntity(name="Acme"), ExtractedEntity(name=LONG)],
        relations=[ExtractedRelation(subject="<user>", predicate="WORKS_AT", object="Acme", fact="f", episode_id="e"),
                   ExtractedRelation(subject="<user>", predicate="LIKES", object=LONG, fact="g", episode_id="e")],
        mentions={"e": ["Acme", LONG]},
        notes=[ExtractedNote(kind=NoteKind.fact, text="Works at Acme", slot="s" * 500, episode_id="e")])
    out = bounded(ex)
    assert [e.name for e in out.entities] == ["Acme"]
    assert [r.object for r in out.relations] == ["Acme"]
    assert out.mentions == {"e": ["Acme"]}
    assert [len(n.slot) for n in out.notes] == [NAME_MAX_CHARS] and out.notes[0].text == "Works at Acme"


def test_an_extraction_within_the_bounds_is_the_same_object() -> None:
    ex = Extraction(entities=[ExtractedEntity(name="a" * NAME_MAX_CHARS)],
                    notes=[ExtractedNote(kind=NoteKind.fact, text="t", slot="fact:x", episode_id="e")])
    assert bounded(ex) is ex
