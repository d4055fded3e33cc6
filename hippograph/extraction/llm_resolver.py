"""LLM-assisted entity resolution (HIPPOGRAPH_EXTRACTION__LLM_ENTITY_RESOLUTION=true).

Normalised names and aliases merge most duplicates without a model. What they miss ("Bob" and "Robert
Smith", "NW region" and "Northwest region") is asked of the LLM: the names a batch introduces, next to
the user's known entities that share a word with them. Only pairs the model names, both of which are
in the lists it was given, are merged; a failed call merges nothing and the write goes on.
"""

from __future__ import annotations

import logging

from hippograph.errors import HippographError
from hippograph.extraction.base import USER, ExtractedEntity, Extraction
from hippograph.extraction.prompts.extract import RESOLVE_SYSTEM, Resolution, resolve_prompt
from hippograph.graph.base import GraphStore
from hippograph.graph.schema import normalise
from hippograph.llm.client import LLMClient

log = logging.getLogger("hippograph.resolution")

MAX_KNOWN = 50


class LLMResolver:
    def __init__(self, client: LLMClient) -> None:
        self.client = client

    def __call__(self, graph: GraphStore, user_id: str, ex: Extraction) -> Extraction:
        names = list(dict.fromkeys(e.name for e in ex.entities if e.name != USER))
        stored = graph.entities_named(user_id, [normalise(n) for n in names])
        new = [n for n in names if normalise(n) not in stored]
        words = sorted({w for n in new for w in normalise(n).split() if len(w) > 2})
        known: dict[str, str] = {}
        fresh = {normalise(n) for n in new}
        # the known entities that share a word with a new name first, then others (a nickname shares none)
        for e in [x for word in words[:20] for x in graph.find_entities(user_id, word, limit=10)] + \
                graph.find_entities(user_id, None, limit=MAX_KNOWN):
            if not e.is_user and normalise(e.name) not in fresh:
                known.setdefault(e.name, e.id)
        if not new or not known:
            return ex
        try:
            answer = self.client.structured("resolve", RESOLVE_SYSTEM, resolve_prompt(new, list(known)[:MAX_KNOWN]),
                                            Resolution)
        except HippographError as exc:
            log.warning("entity resolution skipped for user %r: %s", user_id, exc)
            return ex
        mapping = {p.new: p.known for p in answer.same if p.new in new and p.known in known}
        return rename(ex, mapping) if mapping else ex


def rename(ex: Extraction, mapping: dict[str, str]) -> Extraction:
    """The extraction with entity names replaced by the known names they stand for."""
    def n(name: str) -> str:
        return mapping.get(name, name)
    out = ex.model_copy(deep=True)
    entities: dict[str, ExtractedEntity] = {}
    for e in out.entities:
        entities.setdefault(n(e.name), e.model_copy(update={"name": n(e.name)}))
    out.entities = list(entities.values())
    out.relations = [r.model_copy(update={"subject": n(r.subject), "object": n(r.object)}) for r in out.relations]
    out.mentions = {ep: list(dict.fromkeys(n(x) for x in names)) for ep, names in out.mentions.items()}
    return out
