"""A per-user cache whose values are dropped when the user's data changes."""

from __future__ import annotations

import threading
from typing import Generic, TypeVar

T = TypeVar("T")


class PerUser(Generic[T]):
    """Values derived from one user's data, dropped when that data changes. A value computed from
    reads that began before a drop is not kept: the generation has moved on."""

    def __init__(self) -> None:
        self._items: dict[str, T] = {}
        self._lock = threading.Lock()
        self.generation = 0

    def get(self, user_id: str) -> T | None:
        with self._lock:
            return self._items.get(user_id)

    def put(self, user_id: str, value: T, generation: int) -> None:
        with self._lock:
            if generation == self.generation:
                self._items[user_id] = value

    def drop(self, user_id: str | None = None) -> None:
        """Forget one user's value, or every value."""
        with self._lock:
            self.generation += 1
            if user_id is None:
                self._items.clear()
            else:
                self._items.pop(user_id, None)
