from __future__ import annotations

from fastapi import APIRouter, Path

from hippograph.server.deps import Service

router = APIRouter(prefix="/v1/users", tags=["users"])
UserId = Path(min_length=1, max_length=256)


@router.get("/{user_id}/profile")
def profile(service: Service, user_id: str = UserId, history: bool = False) -> dict:
    """How Hippograph remembers the user: current facts, preferences and decisions
    (`?history=true` adds superseded items with their validity intervals)."""
    return service.profile(user_id, include_history=history)


@router.delete("/{user_id}/profile/{item_id}")
def delete_profile_item(service: Service, item_id: str, user_id: str = UserId) -> dict:
    service.delete_note(user_id, item_id)
    return {"deleted": item_id}


@router.delete("/{user_id}")
def forget_user(service: Service, user_id: str = UserId) -> dict:
    """Forget the user everywhere: episodes, notes, entities, relations and vectors."""
    service.forget_user(user_id)
    return {"deleted": user_id}
