"""Query plans as data, and the heuristic that picks one per query.

A plan says which retrieval steps run and with what limits; the retriever executes any plan the same
way. The heuristic is deliberately simple and documented so a user can see why a plan was chosen.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class Plan:
    name: str
    description: str
    recall_mode: str = "hybrid"  # hybrid | dense | lexical
    recall_limit: int = 12
    all_notes: bool = False  # put every current note in the block (profile questions)
    graph: bool = False  # link query entities into the graph and traverse
    graph_depth: int = 2
    graph_limit: int = 12
    dated: bool = False  # render dates in front of memories and prefer dated evidence
    steps: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict:
        return asdict(self)


SINGLE_HOP = Plan(
    name="single_hop",
    description="Hybrid recall (dense + BM25, reciprocal-rank fusion) over notes, episodes and facts.",
    steps=("notes", "hybrid_recall"),
)
MULTI_HOP = Plan(
    name="multi_hop",
    description="Hybrid recall, plus the question's entities linked into the graph and traversed "
    "(bounded BFS and personalised PageRank); relation facts on the paths fused with the vector hits.",
    graph=True,
    steps=("notes", "hybrid_recall", "entity_linking", "graph_traversal", "rank_fusion"),
)
TEMPORAL = Plan(
    name="temporal",
    description="Hybrid recall with dates rendered on every memory, so 'when' questions find dated evidence.",
    dated=True,
    recall_limit=16,
    steps=("notes", "hybrid_recall", "dates"),
)
PROFILE = Plan(
    name="profile",
    description="Every current long-term note about the user, plus hybrid recall.",
    all_notes=True,
    recall_limit=6,
    steps=("all_notes", "hybrid_recall"),
)

PLANS = {p.name: p for p in (SINGLE_HOP, MULTI_HOP, TEMPORAL, PROFILE)}

_PROFILE = re.compile(
    r"\b(about me|know about me|remember about me|my (profile|preferences|facts|details)|who am i|"
    r"what do i (like|prefer|love|enjoy)|my favou?rite)\b", re.IGNORECASE)
_TEMPORAL = re.compile(
    r"\b(when|what (date|day|time|year|month)|how long (ago|since)|since when|before|after|"
    r"last (week|month|year|time)|yesterday|ago|first time|in (19|20)\d\d)\b", re.IGNORECASE)
_MULTI_HOP = re.compile(
    r"\b(of the|of his|of her|of their|'s \w+'s|who (manages|leads|runs|owns|works)|"
    r"which \w+ (does|did|is|was) the|where does the \w+ of|both|and also|in common|related to|"
    r"the same)\b", re.IGNORECASE)
_POSSESSIVE = re.compile(r"\b\w+'s\b")


def choose_plan(query: str) -> tuple[Plan, str]:
    """Pick a plan and say why. Order matters: profile, then multi-hop, then temporal, else single-hop."""
    q = query.strip()
    if _PROFILE.search(q):
        return PROFILE, "the question asks what is known about the user"
    hops = len(_MULTI_HOP.findall(q)) + len(_POSSESSIVE.findall(q))
    if hops >= 1 and len(q.split()) >= 6:
        return MULTI_HOP, "the question chains relations (possessives or 'the X of the Y')"
    if _TEMPORAL.search(q):
        return TEMPORAL, "the question asks about time"
    return SINGLE_HOP, "a direct question: recall by similarity"
