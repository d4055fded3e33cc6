"""The embedded store's per-user caches never keep a value computed before a change."""

from __future__ import annotations

from hippograph.graph.cache import PerUser


def test_a_value_read_before_a_drop_is_not_kept() -> None:
    cache: PerUser[int] = PerUser()
    before = cache.generation
    cache.drop("ana")  # a write lands while a reader is computing
    cache.put("ana", 1, before)
    assert cache.get("ana") is None
    cache.put("ana", 2, cache.generation)
    assert cache.get("ana") == 2


def test_drop_one_user_or_all() -> None:
    cache: PerUser[str] = PerUser()
    cache.put("ana", "a", cache.generation)
    cache.put("ben", "b", cache.generation)
    cache.drop("ana")
    assert cache.get("ana") is None and cache.get("ben") == "b"
    cache.drop()
    assert cache.get("ben") is None
