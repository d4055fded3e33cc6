"""The MCP server from the `mcp` package's own client, as an agent developer uses it: over streamable HTTP
on a real `hippograph serve` (with a key, and refused without one) and over stdio (`hippograph mcp`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from hippograph.operations import BY_TOOL
from tests.conftest import ROOT, ServerProcess

KEY = "hg_test_bootstrap_key_0123456789abcdef"
TURN = [{"id": "m1", "role": "user", "content": "I live in Lyon and I work at Acme Corp as a data engineer.",
         "timestamp": "2026-11-02T09:00:00Z"},
        {"id": "m2", "role": "user", "content": "Please keep your answers short.",
         "timestamp": "2026-11-02T09:01:00Z"}]


@pytest.fixture
def keyed(tmp_path, monkeypatch) -> Iterator[ServerProcess]:
    monkeypatch.setenv("HIPPOGRAPH_AUTH__BOOTSTRAP_KEY", KEY)
    monkeypatch.setenv("HIPPOGRAPH_ALLOWED_HOSTS", '["memory.example.com"]')
    srv = ServerProcess(tmp_path / "data")
    srv.start()
    yield srv
    srv.stop()


def _http(url: str, key: str | None) -> object:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return streamable_http_client(f"{url}/mcp", http_client=httpx2.AsyncClient(headers=headers, timeout=60))


def _data(result: object) -> object:
    assert not result.is_error, result.content  # type: ignore[attr-defined]
    return json.loads(result.content[0].text)  # type: ignore[attr-defined]


async def _walk(client: Client, user: str) -> None:
    """remember -> get_context -> get_profile -> correct_note -> get_profile, checking what each says."""
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(BY_TOOL) <= set(tools)
    assert "forget_user" not in tools  # deliberately not a tool
    assert tools["remember"].description and "messages" in tools["remember"].input_schema["properties"]
    stored = _data(await client.call_tool("remember", {"user_id": user, "session_id": "s1", "messages": TURN}))
    assert stored["stored"] == ["m1", "m2"]
    block = _data(await client.call_tool("get_context", {"user_id": user, "query": "Where does the user live?"}))
    assert "Lyon" in block["context"] and block["tokens"] <= block["token_budget"]
    assert "items" not in block and block["plan"]["name"]  # the block once, not again as structured items
    profile = _data(await client.call_tool("get_profile", {"user_id": user}))
    lyon = next(f for f in profile["facts"] if "Lyon" in f["fact"])
    fixed = _data(await client.call_tool("correct_note", {"user_id": user, "item_id": lyon["id"],
                                                          "text": "Lives in Grenoble"}))
    assert fixed["replaces"] == lyon["id"]
    after = _data(await client.call_tool("get_profile", {"user_id": user}))
    facts = [f["fact"] for f in after["facts"]]
    assert "Lives in Grenoble" in facts and not any("Lyon" in f for f in facts)
    # an error is a tool error with the REST API's message, never a trace
    missing = await client.call_tool("get_profile", {"user_id": "nobody-here"})
    assert missing.is_error and "unknown user 'nobody-here'" in missing.content[0].text
    assert "Traceback" not in missing.content[0].text
    bad = await client.call_tool("correct_note", {"user_id": user, "item_id": lyon["id"], "text": "   "})
    assert bad.is_error and "blank" in bad.content[0].text


def test_streamable_http_with_a_key(keyed: ServerProcess) -> None:
    async def main() -> None:
        async with Client(_http(keyed.url, KEY)) as client:
            await _walk(client, "alice")
    anyio.run(main)


def test_streamable_http_refuses_without_a_key_and_checks_scopes(keyed: ServerProcess) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}
    refused = httpx.post(f"{keyed.url}/mcp", json=init, headers={"Accept": "application/json, text/event-stream"})
    assert refused.status_code == 401 and "missing API key" in refused.json()["detail"]
    wrong = httpx.post(f"{keyed.url}/mcp", json=init, headers={"Authorization": "Bearer hg_nope"})
    assert wrong.status_code == 401

    async def without_key() -> None:
        async with Client(_http(keyed.url, None)) as client:
            await client.list_tools()
    with pytest.raises(Exception):  # noqa: B017 - the client's own error type for a refused connection
        anyio.run(without_key)

    reader = httpx.post(f"{keyed.url}/v1/keys", json={"scopes": ["read"], "name": "reader"},
                        headers={"Authorization": f"Bearer {KEY}"}).json()["key"]

    async def read_only() -> None:
        async with Client(_http(keyed.url, reader)) as client:
            out = await client.call_tool("remember", {"user_id": "bob", "messages": TURN})
            assert out.is_error and "lacks the 'write' scope" in out.content[0].text
    anyio.run(read_only)


def test_host_allowlist(keyed: ServerProcess) -> None:
    """The names the server is reached by are answered (the configured ones, loopback); others are not."""
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}
    headers = {"Authorization": f"Bearer {KEY}", "Accept": "application/json, text/event-stream"}
    ok = httpx.post(f"{keyed.url}/mcp", json=init, headers={**headers, "Host": "memory.example.com"})
    assert ok.status_code == 200, ok.text
    for shouted in ("MEMORY.example.COM", "LOCALHOST", f"LocalHost:{keyed.port}"):  # names are case-insensitive
        same = httpx.post(f"{keyed.url}/mcp", json=init, headers={**headers, "Host": shouted})
        assert same.status_code == 200, (shouted, same.text)
    evil = httpx.post(f"{keyed.url}/mcp", json=init, headers={**headers, "Host": "evil.example.net"})
    assert evil.status_code == 421, evil.text


def _stdio(*args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "hippograph.cli", "mcp", *args], cwd=str(ROOT))


def test_stdio_on_a_data_folder(tmp_path: Path) -> None:
    async def main() -> None:
        async with Client(_stdio("--data-dir", str(tmp_path / "data")), read_timeout_seconds=120) as client:
            await _walk(client, "carol")
    anyio.run(main)


def test_stdio_through_a_running_server(keyed: ServerProcess) -> None:
    async def main() -> None:
        async with Client(_stdio("--url", keyed.url, "--api-key", KEY), read_timeout_seconds=120) as client:
            await _walk(client, "dave")
    anyio.run(main)
    # what the stdio server stored is in the running server
    profile = httpx.get(f"{keyed.url}/v1/users/dave/profile", headers={"Authorization": f"Bearer {KEY}"}).json()
    assert any(f["fact"] == "Lives in Grenoble" for f in profile["facts"])


def test_stdio_without_a_key_names_the_option_to_give_it(keyed: ServerProcess) -> None:
    async def main() -> None:
        async with Client(_stdio("--url", keyed.url), read_timeout_seconds=120) as client:
            out = await client.call_tool("get_profile", {"user_id": "dave"})
            assert out.is_error
            text = out.content[0].text
            assert "--api-key" in text and "HIPPOGRAPH_API_KEY" in text and "Authorization" not in text, text
    anyio.run(main)
