from __future__ import annotations

from fastapi import APIRouter, Query

from hippograph.graph.base import Subgraph
from hippograph.inputs import Id
from hippograph.server.deps import Reader, Service
from hippograph.server.schemas import EntityOut, NeighborsOut, RelationOut

router = APIRouter(prefix="/v1/graph", tags=["graph"])


@router.get("/entities", response_model=list[EntityOut])
def entities(service: Service, who: Reader, user_id: Id = Query(min_length=1, max_length=256),
             q: str | None = Query(None, max_length=500), limit: int = Query(50, ge=1, le=500)) -> list[EntityOut]:
    owner = service.tenancy.owner(who.tenant, user_id)
    return [EntityOut(**e.model_dump()) for e in service.entities(owner, q, limit)]


@router.get("/entities/{entity_id}/neighbors", response_model=NeighborsOut)
def neighbors(entity_id: Id, service: Service, who: Reader, user_id: Id = Query(min_length=1, max_length=256),
              depth: int = Query(1, ge=1, le=4)) -> NeighborsOut:
    """The user's entities within `depth` hops of one of their entities, and the relations among them."""
    owner = service.tenancy.owner(who.tenant, user_id)
    return _out(entity_id, depth, service.neighbors(owner, entity_id, depth))


def _out(entity_id: str, depth: int, sub: Subgraph) -> NeighborsOut:
    return NeighborsOut(
        entity_id=entity_id, depth=depth,
        entities=[EntityOut(**e.model_dump()) for e in sub.entities],
        relations=[RelationOut(id=r.id, source_id=r.source_id, target_id=r.target_id, predicate=r.predicate,
                               fact=r.fact, valid_at=r.valid_at.isoformat(),
                               invalid_at=r.invalid_at.isoformat() if r.invalid_at else None,
                               source_episode_ids=r.source_episode_ids) for r in sub.relations],
    )
