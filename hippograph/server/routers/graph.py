from __future__ import annotations

from fastapi import APIRouter, Query

from hippograph.inputs import Id
from hippograph.operations import EntitiesQuery, NeighborsQuery, run
from hippograph.server.deps import Reader, Service
from hippograph.server.schemas import EntityOut, NeighborsOut

router = APIRouter(prefix="/v1/graph", tags=["graph"])
UserQuery = Query(min_length=1, max_length=256)
Depth = Query(1, ge=1, le=4, description="How many hops to follow.")
History = Query(False, description="Also the relations that no longer hold (with their invalid_at).")


@router.get("/entities", response_model=list[EntityOut])
def entities(service: Service, who: Reader, user_id: Id = UserQuery,
             q: str | None = Query(None, max_length=500), limit: int = Query(50, ge=1, le=500)) -> list[EntityOut]:
    """The user's entities (people, places, organisations, things), optionally those whose name has `q`."""
    return run(service, who, "entities", EntitiesQuery(user_id=user_id, q=q, limit=limit))


@router.get("/neighbors", response_model=NeighborsOut)
def neighbors(service: Service, who: Reader, user_id: Id = UserQuery,
              entity: str = Query(min_length=1, max_length=500, description="An entity's id, or its name."),
              depth: int = Depth, history: bool = History) -> NeighborsOut:
    """The user's entities within `depth` hops of one of their entities, by its id or by its name
    ("Acme Corp", in any case; a part of a name when only one entity has it), and the relations among
    them."""
    return run(service, who, "neighbors", NeighborsQuery(user_id=user_id, entity=entity, depth=depth, history=history))


@router.get("/entities/{entity_id}/neighbors", response_model=NeighborsOut)
def entity_neighbors(entity_id: Id, service: Service, who: Reader, user_id: Id = UserQuery,
                     depth: int = Depth, history: bool = History) -> NeighborsOut:
    """The same as `/v1/graph/neighbors`, with the entity's id in the path."""
    return run(service, who, "neighbors", NeighborsQuery(user_id=user_id, entity=entity_id, depth=depth,
                                                         history=history))
