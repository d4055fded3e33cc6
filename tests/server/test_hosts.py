"""DNS rebinding and cross-site writes: the server answers only the Host names it is reached by, and a web
page of another origin may not change its memories, in open mode and with keys, on every route."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from hippograph.config import AuthSettings, Settings
from hippograph.server.app import create_app
from hippograph.server.hosts import Hosts
from tests.apps import LOCAL
from tests.conftest import ServerProcess

TURN = {"user_id": "ada", "messages": [{"role": "user", "content": "I work at Northwind as a data engineer."}]}
EVIL = "evil.example"
KEY = "hg_test_hosts_key_0123456789abcdef"


def test_which_host_names_a_server_answers() -> None:
    loopback = Hosts("127.0.0.1")
    for host in ("localhost", "localhost:8765", "LocalHost:1", "127.0.0.1", "127.0.0.1:8765", "[::1]", "[::1]:8765"):
        assert loopback.allows(host), host
    for host in (EVIL, f"{EVIL}:8765", "localhost.evil.example", "127.0.0.1.nip.io", "10.0.0.5", "", ":8765"):
        assert not loopback.allows(host), host
    # on every interface any address is the server's (an address cannot be re-resolved), a name is not
    everywhere = Hosts("0.0.0.0")
    assert everywhere.allows("10.0.0.5:8765") and everywhere.allows("[fe80::1]:8765")
    assert not everywhere.allows(f"{EVIL}:8765")
    named = Hosts("127.0.0.1", ["Memory.Example.com", "api.example.com:443", "dev.example:*"])
    assert named.allows("memory.example.com") and named.allows("MEMORY.example.com:8080")
    assert named.allows("api.example.com:443") and not named.allows("api.example.com:8443")
    assert named.allows("dev.example:9999") and not named.allows(EVIL)
    assert Hosts("127.0.0.1", ["*"]).allows(EVIL)
    assert Hosts("memory.internal").allows("memory.internal:8765")


def test_which_origins_may_change_state() -> None:
    hosts = Hosts("127.0.0.1", ["app.example.com"])
    assert hosts.allows_origin("http://localhost:8765") and hosts.allows_origin("https://app.example.com")
    for origin in ("http://evil.example", "null", "file://", "chrome-extension://abc", "http://"):
        assert not hosts.allows_origin(origin), origin


def _app(tmp_path: Path, **settings: object) -> TestClient:
    return TestClient(create_app(Settings(data_dir=tmp_path / "data", **settings)), base_url=LOCAL)


@pytest.fixture(params=["open", "keys"])
def served(request, tmp_path: Path) -> Iterator[tuple[TestClient, dict[str, str]]]:
    """An app on loopback, open (no key exists) or with a key that may do everything."""
    auth = AuthSettings(bootstrap_key=KEY) if request.param == "keys" else AuthSettings()
    with _app(tmp_path, auth=auth) as client:
        yield client, ({"Authorization": f"Bearer {KEY}"} if request.param == "keys" else {})


def test_a_forged_host_reads_and_writes_nothing(served: tuple[TestClient, dict[str, str]]) -> None:
    client, auth = served
    for host in (EVIL, f"{EVIL}:8765", "localhost.evil.example"):
        wrote = client.post("/v1/memories", json=TURN, headers={**auth, "Host": host})
        assert wrote.status_code == 421, wrote.text
        assert wrote.json()["error"] == "MisdirectedRequest" and "HIPPOGRAPH_ALLOWED_HOSTS" in wrote.json()["detail"]
        for path in ("/v1/users/ada/profile", "/v1/users", "/healthz", "/openapi.json", "/docs"):
            read = client.get(path, headers={**auth, "Host": host})
            assert read.status_code == 421, (path, read.text)
        mcp = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                          headers={**auth, "Host": host, "Accept": "application/json, text/event-stream"})
        assert mcp.status_code == 421, mcp.text
    # nothing was written: the user is unknown to the server's own name
    assert client.get("/v1/users/ada/profile", headers=auth).status_code == 404
    assert client.post("/v1/memories", json=TURN, headers=auth).status_code == 200
    assert client.get("/v1/users/ada/profile", headers=auth).status_code == 200


def test_a_page_of_another_origin_changes_nothing(served: tuple[TestClient, dict[str, str]]) -> None:
    client, auth = served
    for origin in (f"http://{EVIL}", f"https://{EVIL}:8765", "null"):
        wrote = client.post("/v1/memories", json=TURN, headers={**auth, "Origin": origin})
        assert wrote.status_code == 403, (origin, wrote.text)
        assert "another origin" in wrote.json()["detail"]
        gone = client.delete("/v1/users/ada", headers={**auth, "Origin": origin})
        assert gone.status_code == 403, gone.text
    assert client.get("/v1/users/ada/profile", headers=auth).status_code == 404
    # the server's own pages (and clients that send no Origin) may write
    for origin in ("http://localhost:8765", "http://127.0.0.1:8765", "http://[::1]:8765"):
        assert client.post("/v1/memories", json=TURN, headers={**auth, "Origin": origin}).status_code == 200
    # reading with a foreign Origin is answered (no CORS header: the browser keeps it from the page)
    read = client.get("/v1/users/ada/profile", headers={**auth, "Origin": f"http://{EVIL}"})
    assert read.status_code == 200 and "access-control-allow-origin" not in read.headers


def test_configured_names_are_answered(tmp_path: Path) -> None:
    with _app(tmp_path, allowed_hosts=["memory.example.com"]) as client:
        assert client.post("/v1/memories", json=TURN, headers={"Host": "memory.example.com"}).status_code == 200
        assert client.post("/v1/memories", json=TURN, headers={"Host": "memory.example.com",
                                                                "Origin": "https://memory.example.com"}).status_code == 200
        assert client.get("/healthz", headers={"Host": EVIL}).status_code == 421


def test_on_every_interface_addresses_are_answered_and_names_are_not(tmp_path: Path) -> None:
    with _app(tmp_path, host="0.0.0.0", auth=AuthSettings(bootstrap_key=KEY)) as client:
        auth = {"Authorization": f"Bearer {KEY}"}
        assert client.post("/v1/memories", json=TURN, headers={**auth, "Host": "10.1.2.3:8765"}).status_code == 200
        assert client.post("/v1/memories", json=TURN, headers={**auth, "Host": EVIL}).status_code == 421


def test_a_running_open_server_refuses_a_rebound_name(tmp_path: Path) -> None:
    """The measurement of the report, over a socket: open mode on loopback, Host: evil.example."""
    server = ServerProcess(tmp_path / "data")
    server.start()
    try:
        wrote = httpx.post(f"{server.url}/v1/memories", json=TURN, headers={"Host": EVIL}, timeout=60)
        read = httpx.get(f"{server.url}/v1/users/ada/profile", headers={"Host": EVIL}, timeout=60)
        assert (wrote.status_code, read.status_code) == (421, 421), (wrote.text, read.text)
        assert httpx.get(f"{server.url}/v1/users/ada/profile", timeout=60).status_code == 404
    finally:
        server.stop()
