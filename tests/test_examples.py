"""The examples run as written: the agent turn loop with the SDK against a real server and the loopback
OpenAI-compatible model server, and the MCP client example against a real server."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from types import ModuleType

import openai
import pytest

from hippograph import Client
from tests.conftest import ROOT, ServerProcess
from tests.fakes.openai_server import FakeOpenAI, ToolCall
from tests.scripts import load


def _example(name: str) -> ModuleType:
    return load(ROOT / "examples" / f"{name}.py")


@pytest.fixture
def server(tmp_path) -> Iterator[ServerProcess]:
    srv = ServerProcess(tmp_path / "data")
    srv.start()
    yield srv
    srv.stop()


def test_agent_loop(server: ServerProcess) -> None:
    loop = _example("agent_loop")

    def model(request: dict) -> object:
        """Calls the tool once, then answers from what the tool said."""
        tool_said = [m for m in request["messages"] if m.get("role") == "tool"]
        if not tool_said:
            return [ToolCall("order_status", {"order_id": "A17"})]
        return f"Order A17: {json.loads(tool_said[-1]['content'])['status']}."

    with FakeOpenAI(answer=model) as fake, Client(server.url) as hg:
        llm = openai.OpenAI(base_url=fake.base_url, api_key="test-key", max_retries=0)
        hg.remember("ivy", session_id="s1", messages=[{"id": "m0", "role": "user",
                                                       "content": "I live in Porto and I order a lot online."}])
        answer = loop.turn(hg, llm, "fake-chat", "ivy", "s1", "Where is my order A17?")
        assert answer == "Order A17: shipped."
        first = fake.requests[0]["json"]
        system = next(m["content"] for m in first["messages"] if m["role"] == "system")
        assert "Porto" in system  # the model saw what Hippograph remembered
        kept = hg.sessions("ivy").sessions
        assert kept and kept[0]["session_id"] == "s1"
        # the turn was stored: the user's message, the tool result as a tool message, the answer
        block = hg.context("ivy", "What did the order tool say about A17?", session_id="s1")
        assert "shipped" in block.context and "Where is my order A17?" in block.context
        assert block.context.count("DHL") == 1  # a tool result is shown once


def test_mcp_client_example(server: ServerProcess) -> None:
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "mcp_client.py"), "--url", server.url],
                         check=False, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "get_context" in out.stdout and "remember" in out.stdout
    assert "Lisbon" in out.stdout.split("remember:", 1)[1]


def _readme_config() -> dict:
    """The client configuration the README's MCP section shows."""
    section = (ROOT / "README.md").read_text().split("### MCP\n", 1)[1].split("\n### ", 1)[0]
    return json.loads(section.split("```json\n", 1)[1].split("```", 1)[0])


@pytest.mark.parametrize("config", [json.loads((ROOT / "examples" / "claude_desktop_config.json").read_text()),
                                    _readme_config()], ids=["examples", "README"])
def test_mcp_config_launches_the_stdio_server(config: dict) -> None:
    for entry in config["mcpServers"].values():
        assert entry["command"] == "hippograph" and entry["args"][0] == "mcp"
        help_text = subprocess.run([sys.executable, "-m", "hippograph.cli", *entry["args"][:1], "--help"],
                                   check=True, capture_output=True, text=True, timeout=60, cwd=ROOT).stdout
        assert all(a in help_text for a in entry["args"][1:] if a.startswith("--"))
