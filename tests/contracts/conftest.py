"""Shared by the graph-store suites: the stores under test, built the same way for every test."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from neo4j import GraphDatabase

from hippograph.graph.base import GraphStore
from hippograph.graph.neo4j_store import Neo4jGraphStore
from hippograph.graph.sqlite_store import SqliteGraphStore

NEO4J_URI_ENV = "HIPPOGRAPH_TEST_NEO4J_URI"
QDRANT_URL_ENV = "HIPPOGRAPH_TEST_QDRANT_URL"
QDRANT_KEY_ENV = "HIPPOGRAPH_TEST_QDRANT_API_KEY"


def qdrant_server() -> tuple[str, str | None]:
    """The test Qdrant server's URL and API key; the test is skipped (and the summary says why) when
    scripts/test found no Qdrant binary to start."""
    url = os.environ.get(QDRANT_URL_ENV)
    if not url:
        pytest.skip(f"SKIPPED: no Qdrant server ({QDRANT_URL_ENV} is not set): scripts/test starts one from "
                    "../shared/bin/qdrant or QDRANT_BIN when there is a binary")
    return url, os.environ.get(QDRANT_KEY_ENV) or None


def qdrant_server_kwargs(**more: Any) -> dict[str, Any]:
    """qdrant-client arguments for the test server (the client is newer than the 1.18 server: no
    version check, which would only warn)."""
    url, key = qdrant_server()
    return {"url": url, "api_key": key, "check_compatibility": False, **more}


def drop_qdrant_collection(name: str) -> None:
    from qdrant_client import QdrantClient

    client = QdrantClient(**qdrant_server_kwargs())
    try:
        client.delete_collection(name)
    finally:
        client.close()


def neo4j_uri() -> str:
    uri = os.environ.get(NEO4J_URI_ENV)
    if not uri:
        pytest.fail(f"{NEO4J_URI_ENV} is not set: run the tests with scripts/test, which starts a local "
                    "Neo4j (scripts/neo4j-server) and sets it; the Neo4j backend is part of the contract")
    return uri


def cypher(query: str, **params: Any) -> list[dict[str, Any]]:
    """Raw Cypher against the test Neo4j, to look at the stored graph as a Browser user would."""
    with GraphDatabase.driver(neo4j_uri()) as driver:
        records, _, _ = driver.execute_query(query, params)
        return [r.data() for r in records]


def wipe_neo4j() -> None:
    """Tests share the one database Community has; each starts from an empty graph (schema stays)."""
    cypher("MATCH (n) DETACH DELETE n")


def make_store(backend: str, tmp_path: Path, fresh: bool = True) -> GraphStore:
    if backend == "embedded":
        return SqliteGraphStore(tmp_path / "g.sqlite3")
    if fresh:
        wipe_neo4j()
    return Neo4jGraphStore(neo4j_uri())


@pytest.fixture
def graph_store(tmp_path) -> Callable[..., GraphStore]:
    """`graph_store("embedded" | "neo4j", fresh=True)`: an unopened store; fresh=False reuses the data."""
    return lambda backend, fresh=True: make_store(backend, tmp_path, fresh)


def drop_keys() -> None:
    """Keys in the shared test Neo4j would make every later server there require them."""
    cypher("MATCH (k:ApiKey) DELETE k")


@pytest.fixture(params=["embedded", "neo4j"])
def store(request, graph_store) -> Iterator[GraphStore]:
    """An open store of each backend: the contract suites run every test on both."""
    s = graph_store(request.param)
    s.open()
    yield s
    s.close()
    if request.param == "neo4j":
        drop_keys()


@pytest.fixture
def neo4j_test_uri() -> str:
    return neo4j_uri()


@pytest.fixture
def neo4j_cypher() -> Callable[..., list[dict[str, Any]]]:
    return cypher
