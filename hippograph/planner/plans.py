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
    recall_limit: int = 60  # messages/documents taken from the vector index
    # each side of a hybrid search fuses its best `route_depth` times the limit, in every route but the
    # recall (which fuses 4 times). Shallower is faster: 2 saved about 4 % of a block at 100k memories and
    # cost 0.5 on MuSiQue and 0.07 on the conversations' mean (BENCHMARKS.md, "What a block costs")
    route_depth: int = 4
    reply_weight: float = 0.5  # share of a question's score passed to the message that answers it
    all_notes: bool = False  # put every current note in the block (profile questions)
    notes_limit: int = 3  # notes picked by similarity when not all are shown
    derived_weight: float = 0.3  # weight of notes/relation facts matched, standing for their messages
    person_weight: float = 0.0  # weight of the search in each named speaker's own messages
    dated_weight: float = 1.0  # weight of a search within the days/months the question names
    expand_hits: int = 2  # best hits whose text extends the query for a second search (a second hop)
    expand_weight: float = 0.5  # weight of the first of those searches (the i-th weighs 1/i of it)
    # pseudo-relevance feedback on the lexical side (RM3): the recall is searched again with the query's
    # terms plus the `prf_terms` terms most frequent in its best `prf_docs` hits and rare in the rest of
    # them, the best weighing `prf_weight` of a query term (0 terms: off; measured out of fold, see BENCHMARKS.md)
    prf_terms: int = 0
    prf_docs: int = 5
    prf_weight: float = 0.5
    # the entity route, a walk of one step in the graph: the entities the question names (exact name or
    # alias) -> the messages that MENTION each, searched for the question and weighing `entity_weight`.
    # It and the second hop's weight were chosen together, leaving out one writer's conversations or one
    # passage set at a time, over nine writers' conversations and ten multi-hop passage sets (BENCHMARKS.md,
    # "Multi-hop questions of many writers"): 0.5 and 0.5 in every fold
    entity_weight: float = 0.5
    # a thing more of the user's messages mention is not walked: a home town said every day points at none
    # of them in particular, and a search filtered by thousands of ids cost more than the rest of a block
    # at 100k memories. No entity of the benchmarks' data reaches it (the most: 308 of MuSiQue's passages)
    entity_mentions: int = 500
    graph: bool = False  # link query entities into the graph and spread rank over it
    graph_limit: int = 30  # episodes the graph route contributes
    graph_facts: int = 10  # relations of the query's entities reported (their episodes lead the graph route)
    hit_seeds: int = 5  # best vector hits that seed the PageRank next to the query's entities
    hit_seed_weight: float = 1.0  # their weight (the best hit's) relative to one linked entity
    graph_weight: float = 0.5  # its weight next to the hybrid recall in the fused score
    # the graph by meaning (HippoRAG 2), both off (0) unless measured to gain out of fold: the query's
    # phrases are also linked to the entities whose names embed at least `link_threshold` close to them
    # (besides the exact name/alias lookup), and entities whose names embed at least `synonym_threshold`
    # close are tied by synonym edges of the PageRank graph (cosines on MiniLM's scale)
    link_threshold: float = 0.0
    synonym_threshold: float = 0.0
    dated: bool = False  # render dates on the session's messages too
    # order the candidates by a learned ranker ("learned": the packaged one) instead of the hand-set
    # weighted sum of the routes' reciprocal ranks ("": the sum). Measured writer by writer, each writer's
    # questions ordered by a ranker trained without that writer, it gained on 8 of 9 writers but not on
    # LoCoMo's, at 13 ms more per block at 100k memories (BENCHMARKS.md): on with HIPPOGRAPH_CONTEXT__RANKER
    ranker: str = ""
    rerank_depth: int = 0  # the ranker orders this many of the sum's best, the rest follow (0: all)
    # the context block is packed from the best candidates only: this many per 1,000 tokens of its budget
    # (0: all of them). Deeper ones rarely fit, and each costs its line's tokens, dates and history to
    # prepare; chosen leaving one set out, level or ahead on all 19 (BENCHMARKS.md, "What a block costs")
    block_limit: int = 60
    steps: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict:
        return asdict(self)


SINGLE_HOP = Plan(
    name="single_hop",
    description="Hybrid recall (dense + BM25, reciprocal-rank fusion) over messages and documents; the "
    "reply to a matching question comes along.",
    steps=("notes", "hybrid_recall", "derived_facts", "named_dates", "second_hop_expansion", "replies"),
)
MULTI_HOP = Plan(
    name="multi_hop",
    description="Hybrid recall with the second hop: the question extended by its best hits is searched "
    "again, which finds what a hit names. (The graph route is not in it: measured out of fold it gained "
    "nothing on LoCoMo, MuSiQue or HotpotQA; ask for the `graph` plan to use it.)",
    steps=("notes", "hybrid_recall", "derived_facts", "named_dates", "second_hop_expansion", "replies"),
)
GRAPH = Plan(
    name="graph",
    description="Hybrid recall, plus the question's entities linked into the graph: personalised PageRank "
    "from them ranks the messages and documents that mention the entities it reaches, fused with the vector hits.",
    graph=True,
    steps=("notes", "hybrid_recall", "derived_facts", "named_dates", "second_hop_expansion", "entity_linking",
           "personalized_pagerank", "rank_fusion", "replies"),
)
TEMPORAL = Plan(
    name="temporal",
    description="Hybrid recall with dates rendered on every message, so 'when' questions find dated evidence.",
    dated=True,
    steps=("notes", "hybrid_recall", "derived_facts", "named_dates", "second_hop_expansion", "replies", "dates"),
)
PROFILE = Plan(
    name="profile",
    description="Every current long-term note about the user, plus hybrid recall.",
    all_notes=True,
    steps=("all_notes", "hybrid_recall", "derived_facts", "named_dates", "second_hop_expansion", "replies"),
)

PLANS = {p.name: p for p in (SINGLE_HOP, MULTI_HOP, GRAPH, TEMPORAL, PROFILE)}

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
