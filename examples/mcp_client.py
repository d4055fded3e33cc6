"""Hippograph's MCP tools from the `mcp` package's own client, over streamable HTTP:

    python examples/mcp_client.py --url http://127.0.0.1:8765 [--api-key hg_…]

lists the tools, stores a message with `remember` and prints what `get_context` answers for a question."""

from __future__ import annotations

import argparse
import json
import os

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


async def run(url: str, api_key: str | None, user: str) -> None:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    transport = streamable_http_client(f"{url.rstrip('/')}/mcp", http_client=httpx2.AsyncClient(headers=headers))
    async with Client(transport) as client:
        tools = (await client.list_tools()).tools
        print("tools:", ", ".join(t.name for t in tools))
        stored = await client.call_tool("remember", {"user_id": user, "session_id": "mcp-demo", "messages": [
            {"id": "mcp-demo-1", "role": "user", "content": "I moved to Lisbon last month and I work at Acme."}]})
        print("remember:", stored.content[0].text[:200])
        block = await client.call_tool("get_context", {"user_id": user, "query": "Where does the user live?"})
        if block.is_error:
            raise SystemExit(f"get_context failed: {block.content[0].text}")
        print(json.loads(block.content[0].text)["context"])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default="http://127.0.0.1:8765")
    p.add_argument("--api-key", default=os.environ.get("HIPPOGRAPH_API_KEY"))
    p.add_argument("--user", default="mcp-demo-user")
    args = p.parse_args()
    anyio.run(run, args.url, args.api_key, args.user)


if __name__ == "__main__":
    main()
