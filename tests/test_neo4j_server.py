"""The local Neo4j that scripts/test starts (scripts/neo4j-server) is a real, writable Neo4j 5.26."""

from __future__ import annotations

import os
import uuid

import pytest
from neo4j import GraphDatabase

URI = os.environ.get("HIPPOGRAPH_TEST_NEO4J_URI")


@pytest.fixture(scope="module")
def driver():
    if not URI:
        pytest.fail("HIPPOGRAPH_TEST_NEO4J_URI is not set: run the tests with scripts/test, which starts Neo4j")
    with GraphDatabase.driver(URI, auth=None) as drv:
        drv.verify_connectivity()
        yield drv


def test_neo4j_answers_and_stores(driver) -> None:
    marker = uuid.uuid4().hex
    with driver.session(database="neo4j") as session:
        version = session.run("CALL dbms.components() YIELD versions RETURN versions[0] AS v").single()["v"]
        assert version.startswith("5.26")
        session.run("CREATE (:SmokeTest {marker: $m})", m=marker).consume()
        found = session.run("MATCH (n:SmokeTest {marker: $m}) RETURN count(n) AS c", m=marker).single()["c"]
        session.run("MATCH (n:SmokeTest {marker: $m}) DELETE n", m=marker).consume()
    assert found == 1


def test_neo4j_browser_is_told_the_bolt_port_in_use() -> None:
    """Neo4j Browser fills its connect form from the server's discovery answer: with another Bolt port than
    7687 (the tests' 7688) it must name that port."""
    import httpx

    http = os.environ.get("HIPPOGRAPH_TEST_NEO4J_HTTP")
    if not (URI and http):
        pytest.fail("HIPPOGRAPH_TEST_NEO4J_URI / _HTTP are not set: run the tests with scripts/test, which starts Neo4j")
    discovery = httpx.get(f"{http}/", headers={"Accept": "application/json"}, timeout=60).json()
    assert discovery["bolt_direct"] == URI.replace("localhost", "127.0.0.1"), discovery
