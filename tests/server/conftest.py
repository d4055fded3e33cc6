"""Shared by the server tests that look into the test Neo4j directly."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from neo4j import Driver, GraphDatabase

URI = os.environ.get("HIPPOGRAPH_TEST_NEO4J_URI", "")


@pytest.fixture
def driver() -> Iterator[Driver]:
    if not URI:
        pytest.fail("HIPPOGRAPH_TEST_NEO4J_URI is not set: run the tests with scripts/test, which starts Neo4j")
    with GraphDatabase.driver(URI, auth=None) as drv:
        yield drv
