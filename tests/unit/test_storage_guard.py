"""The free-space guard over real folders, and SQLite's "database or disk is full" mapped to the same
error with the acknowledged rows kept (max_page_count makes SQLite run full without filling a disk)."""

from __future__ import annotations

import errno
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hippograph.errors import InsufficientStorage
from hippograph.graph.sqlite_store import SqliteGraphStore
from hippograph.models import Episode, Role
from hippograph.storage_guard import StorageGuard, disk_full, free_bytes


def episode(i: int, content: str) -> Episode:
    return Episode(id=f"ep{i}", user_id="u1", session_id="s1", role=Role.user, content=content,
                   timestamp=datetime(2024, 1, 1, tzinfo=UTC), seq=i)


def test_free_bytes_of_a_path_not_created_yet_is_its_parents(tmp_path: Path) -> None:
    st = os.statvfs(tmp_path)
    assert free_bytes(tmp_path / "not" / "yet") == pytest.approx(st.f_bavail * st.f_frsize, rel=0.01)


def test_writes_are_refused_below_the_reserve_with_what_to_do(tmp_path: Path) -> None:
    free = free_bytes(tmp_path)
    StorageGuard([tmp_path], min_free_bytes=0).check("storing messages")
    guard = StorageGuard([tmp_path / "graph.sqlite3"], min_free_bytes=free + 2**30)
    with pytest.raises(InsufficientStorage) as caught:
        guard.check("storing messages")
    message = str(caught.value)
    assert message.startswith("storing messages refused: the disk holding")
    assert str(tmp_path) in message and "HIPPOGRAPH_MIN_FREE_BYTES" in message and "free space" in message
    assert not guard.allows("extracting pending messages")
    status = guard.status()
    assert status["writable"] is False and status["min_free_bytes"] == free + 2**30 and "warning" in status
    assert StorageGuard([tmp_path]).status()["writable"] is True


def test_a_guard_over_no_local_store_allows_everything() -> None:
    guard = StorageGuard([], min_free_bytes=2**62)  # Neo4j and a Qdrant server: nothing local to fill
    guard.check("storing messages")
    guard.before_open()
    assert guard.allows("expiry") and guard.status()["free_bytes"] is None


def test_creating_stores_on_a_full_disk_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    guard = StorageGuard([tmp_path / "data" / "graph.sqlite3"], min_free_bytes=free_bytes(tmp_path) + 2**30)
    with pytest.raises(InsufficientStorage, match="creating the stores refused"):
        guard.before_open()
    assert not (tmp_path / "data").exists()


def test_native_disk_full_errors_are_recognised(tmp_path: Path) -> None:
    assert isinstance(disk_full(OSError(errno.ENOSPC, "No space left on device"), tmp_path), InsufficientStorage)
    assert isinstance(disk_full(Exception("IO Error: failed to write: No space left on device (os error 28)"),
                                tmp_path), InsufficientStorage)
    assert disk_full(OSError(errno.EACCES, "Permission denied"), tmp_path) is None
    assert disk_full(ValueError("bad vector"), tmp_path) is None


def test_sqlite_full_is_insufficient_storage_and_keeps_what_was_acknowledged(tmp_path: Path) -> None:
    store = SqliteGraphStore(tmp_path / "graph.sqlite3")
    store.open()
    try:
        store.ensure_user("u1")
        store.add_episodes([episode(0, "I live in Seattle.")])
        pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
        store.conn.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(InsufficientStorage) as caught:
            store.add_episodes([episode(i, "x" * 20_000) for i in range(1, 5)])
        assert "database or disk is full" in str(caught.value) and "not acknowledged" in str(caught.value)
        assert [e.id for e in store.session_episodes("u1", "s1")] == ["ep0"]  # all or nothing, ep0 kept

        store.conn.execute(f"PRAGMA max_page_count = {pages * 100}")  # space returns: writes go on
        store.add_episodes([episode(1, "I love hiking.")])
        assert [e.id for e in store.session_episodes("u1", "s1")] == ["ep0", "ep1"]
    finally:
        store.close()
