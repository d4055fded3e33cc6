"""The Neo4j store's write lease (`graph.lease`): a `(:WriteLease {user_id})` node, unique per user,
taken by a compare-and-set in one transaction of its own. The times are the database's clock
(`timestamp()`), so replicas' clocks need not agree."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from contextlib import AbstractContextManager
from typing import Any

from neo4j import AsyncDriver

from hippograph.errors import BackendUnavailable
from hippograph.graph import lease
from hippograph.graph.neo4j_cypher import Rows, Tx, data

# Two statements of one transaction: the first takes the node's write lock (held to the commit), so
# the second reads what the last holder committed, and the check and the take are one step. The node
# stays when the lease is given back (a deleted node could still be locked by a taker that matched it).
LOCK = "MERGE (l:WriteLease {user_id: $user}) ON CREATE SET l.name = 'write lease' SET l.taking = true"
TAKE = """
MATCH (l:WriteLease {user_id: $user})
WITH l, timestamp() AS now
WITH l, now, (l.owner IS NULL OR l.owner = $owner OR l.until < now) AS free
SET l.owner = CASE WHEN free THEN $owner ELSE l.owner END,
    l.until = CASE WHEN free THEN now + $ttl ELSE l.until END
REMOVE l.taking
RETURN free, l.until - now AS wait
"""
RENEW = "MATCH (l:WriteLease {user_id: $user, owner: $owner}) SET l.until = timestamp() + $ttl"
# given back: kept for the next writer, or gone with a user the holder has just deleted
RELEASE = "MATCH (l:WriteLease {user_id: $user, owner: $owner}) REMOVE l.owner, l.until"
RELEASE_GONE = """
MATCH (l:WriteLease {user_id: $user, owner: $owner}) WHERE NOT EXISTS { MATCH (:User {user_id: $user}) } DELETE l
"""


class Neo4jLease:
    """Mixed into Neo4jGraphStore, which provides the driver and its event loop."""

    _driver: AsyncDriver | None
    _run: Callable[[Coroutine[Any, Any, Any]], Any]
    database: str
    lease_ms: int

    def write_lease(self, user_id: str) -> AbstractContextManager[None]:
        return lease.hold(user_id, self._take, self._renew, self._release, lease_ms=self.lease_ms)

    def _take(self, user_id: str, owner: str, ttl: int) -> tuple[bool, int]:
        rows = self._apart(LOCK, TAKE, user=user_id, owner=owner, ttl=ttl)
        if not rows:  # the node went between the statements: try again
            return False, 0
        return bool(rows[0]["free"]), int(rows[0]["wait"] or 0)

    def _renew(self, user_id: str, owner: str, ttl: int) -> None:
        self._apart(RENEW, user=user_id, owner=owner, ttl=ttl)

    def _release(self, user_id: str, owner: str) -> None:
        self._apart(RELEASE_GONE, RELEASE, user=user_id, owner=owner)

    def _apart(self, *queries: str, **params: Any) -> Rows:
        """Statements in one transaction of its own, never the open batch's (a lease is seen by the
        other writers at once, and renewing it does not wait for this store's batch to end); the last
        one's rows."""
        return self._run(self._write_apart(queries, params))

    async def _write_apart(self, queries: tuple[str, ...], params: dict[str, Any]) -> Rows:
        if self._driver is None:
            raise BackendUnavailable("the graph store is not open")

        async def work(tx: Tx) -> Rows:
            rows: Rows = []
            for query in queries:
                rows = await data(tx, query, **params)
            return rows

        async with self._driver.session(database=self.database) as session:
            return await session.execute_write(work)
