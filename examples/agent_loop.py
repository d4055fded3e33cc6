"""An agent's turn loop with Hippograph as its memory, through the Python SDK and any OpenAI-compatible
model (OpenAI, a llama.cpp or vLLM server, `hippograph llm serve`):

    context -> the model (with a tool it may call) -> remember the turn, tool results as `tool` messages

Run it against a running server and a model:

    hippograph serve &
    python examples/agent_loop.py --user alice --session monday \\
        --llm-base-url http://127.0.0.1:8080/v1 --model smollm2

then type messages; an empty line ends. Each turn asks Hippograph for the context block, gives it to the
model with the user's message, runs the tools the model asks for, and stores what was said (the user's
message, each tool result, the answer) so the next turn, or the next session, remembers it."""

from __future__ import annotations

import argparse
import json
import os
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from openai import OpenAI

from hippograph import Client

SYSTEM = ("You are a helpful assistant with a long-term memory. What you remember about the user and this "
          "conversation is below; use it, and do not ask for what it already says.\n\n")

TOOLS: list[dict[str, Any]] = [{
    "type": "function",
    "function": {
        "name": "order_status",
        "description": "The shipping status of one of the user's orders.",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                       "required": ["order_id"]},
    },
}]


def order_status(order_id: str) -> dict[str, str]:
    """A stand-in for a real tool (a shop's API)."""
    return {"order_id": order_id, "status": "shipped", "carrier": "DHL", "eta": "in 2 days"}


RUN: dict[str, Callable[..., Any]] = {"order_status": order_status}


def _said(role: str, content: str, **more: str) -> dict[str, str]:
    """A message for Hippograph, with an id (a retried write then stores it once) and the time it was said."""
    return {"id": f"{role}-{uuid.uuid4().hex[:12]}", "role": role, "content": content,
            "timestamp": datetime.now(UTC).isoformat(), **more}


def turn(hg: Client, llm: OpenAI, model: str, user_id: str, session_id: str, text: str) -> str:
    """One turn: the answer to `text`, with what was said stored in Hippograph."""
    block = hg.context(user_id, text, session_id=session_id, token_budget=800)
    messages: list[Any] = [{"role": "system", "content": SYSTEM + block.context}, {"role": "user", "content": text}]
    said = [_said("user", text)]
    answer = ""
    for _ in range(4):  # the model may call tools a few times before it answers
        reply = llm.chat.completions.create(model=model, messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        if not message.tool_calls:
            answer = message.content or ""
            break
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            tool = getattr(call, "function", None)
            if tool is None:
                continue
            result = json.dumps(RUN[tool.name](**json.loads(tool.arguments or "{}")))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
            said.append(_said("tool", result, name=tool.name))
    said.append(_said("assistant", answer))
    hg.remember(user_id, messages=said, session_id=session_id)
    return answer


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--hippograph", default="http://127.0.0.1:8765", help="the Hippograph server")
    p.add_argument("--api-key", default=os.environ.get("HIPPOGRAPH_API_KEY"))
    p.add_argument("--llm-base-url", default=os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1"))
    p.add_argument("--llm-api-key", default=os.environ.get("OPENAI_API_KEY", "none"))
    p.add_argument("--model", required=True)
    p.add_argument("--user", required=True)
    p.add_argument("--session", default="chat")
    args = p.parse_args()
    llm = OpenAI(base_url=args.llm_base_url, api_key=args.llm_api_key)
    with Client(args.hippograph, api_key=args.api_key) as hg:
        while text := input("> ").strip():
            print(turn(hg, llm, args.model, args.user, args.session, text))


if __name__ == "__main__":
    main()
