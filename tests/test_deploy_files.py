"""docker-compose.yml and the Dockerfile cannot run here (no Docker engine): check their structure,
and that the server's environment in the compose file is a valid Hippograph configuration."""

from __future__ import annotations

import re

import yaml

from hippograph.config import Settings
from tests.conftest import ROOT

COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_services_images_ports() -> None:
    services = COMPOSE["services"]
    assert set(services) == {"neo4j", "qdrant", "hippograph"}
    assert services["neo4j"]["image"] == "neo4j:5.26-community"
    assert services["qdrant"]["image"].startswith("qdrant/qdrant")
    assert services["hippograph"]["build"] == "."
    ports = {name: {p.split(":")[0].strip('"') for p in svc.get("ports", [])} for name, svc in services.items()}
    assert {"7474", "7687"} <= ports["neo4j"] and "6333" in ports["qdrant"] and "8765" in ports["hippograph"]


def test_healthchecks_volumes_and_start_order() -> None:
    services = COMPOSE["services"]
    for name, svc in services.items():
        assert svc["healthcheck"]["test"], name
        assert svc.get("volumes"), name
        for volume in svc["volumes"]:
            assert volume.split(":")[0] in COMPOSE["volumes"], volume
    deps = services["hippograph"]["depends_on"]
    assert deps == {"neo4j": {"condition": "service_healthy"}, "qdrant": {"condition": "service_healthy"}}


def test_server_environment_is_a_valid_production_configuration(monkeypatch) -> None:
    env = COMPOSE["services"]["hippograph"]["environment"]
    for key, value in env.items():  # ${X:-default} as compose reads it with X unset; other references: "secret"
        value = re.sub(r"\$\{[^}:]+:-([^}]*)\}", r"\1", str(value))
        monkeypatch.setenv(key, re.sub(r"\$\{[^}]+\}", "secret", value))
    settings = Settings()
    assert settings.extraction.backend == "spacy" and not settings.llm.configured  # no LLM unless one is given
    assert settings.graph.backend == "neo4j" and settings.graph.uri == "bolt://neo4j:7687"
    assert settings.graph.user == "neo4j" and settings.graph.password == "secret"
    assert settings.vectors.backend == "qdrant" and settings.vectors.url == "http://qdrant:6333"
    assert settings.vectors.api_key == "secret"  # the same ${QDRANT_API_KEY} as the Qdrant service's
    assert COMPOSE["services"]["qdrant"]["environment"]["QDRANT__SERVICE__API_KEY"] == env["HIPPOGRAPH_VECTORS__API_KEY"]
    # the server listens on 0.0.0.0 in its container: without a key it would refuse to start
    assert settings.auth.bootstrap_key is not None and not settings.auth.disabled
    assert settings.auth.bootstrap_tenant == "default"
    neo4j_env = COMPOSE["services"]["neo4j"]["environment"]
    assert neo4j_env["NEO4J_AUTH"].startswith("neo4j/${NEO4J_PASSWORD")


def test_dockerfile_installs_and_serves() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11", text, re.MULTILINE)
    assert "pip install ." in text
    assert '"hippograph", "serve"' in text and "0.0.0.0" in text
    assert "HEALTHCHECK" in text and "/readyz" in text


def test_production_backends_are_in_the_default_install() -> None:
    """The image runs `pip install .` and the neo4j/qdrant backends: their clients must not hide in extras."""
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {re.split(r"[<>=!~ \[;]", d, maxsplit=1)[0].lower() for d in deps}
    assert {"neo4j", "qdrant-client", "qdrant-edge-py"} <= names
