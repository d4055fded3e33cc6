"""The MCP face of the catalogue (`hippograph.operations`), with the official `mcp` SDK's `MCPServer`.

Each operation with a tool name becomes a tool: its description is the operation's, its input schema the
fields of the operation's input model (the model the REST API validates), and its result the JSON the
REST API would answer. Errors come back as tool errors with the REST API's messages; nothing else
leaves the server (an unexpected failure is logged here and reported as such).

Two ways to carry a call out, one per transport:
- in the server (`mount`, streamable HTTP at /mcp): on the app's service, as the principal of the
  request's API key, checked like a REST request;
- `hippograph mcp` over stdio: on a service opened on a data folder (the local user owns it, as with the
  other commands), or through the SDK to a running server (`--url`, `--api-key`)."""

from __future__ import annotations

import inspect
import json
import logging
import sys
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import BaseModel, Field, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from hippograph.auth import OPEN, Principal
from hippograph.errors import BackendUnavailable, HippographError, Unauthorized
from hippograph.operations import OPERATIONS, Operation, run

log = logging.getLogger("hippograph.mcp")

INSTRUCTIONS = (
    "Hippograph is the user's long-term memory. Before answering a user's message call get_context with "
    "that message as the query, and put the block it returns in front of your answer. After each turn call "
    "remember with the turn's new messages (and tool results as role 'tool'), giving every message an id. "
    "When the user says a remembered item is wrong, use get_profile to find its id and correct_note to fix "
    "it, or delete_note when they want it forgotten.")

# carries out one operation: (operation, validated input, the HTTP request or None) -> the result
Execute = Callable[[Operation, BaseModel, Request | None], Any]


def _message(exc: ValidationError) -> str:
    """As the REST API says it: each field that failed, with why."""
    parts = [f"{'.'.join(str(x) for x in e.get('loc', ())) or 'input'}: {e.get('msg', 'invalid')}"
             for e in exc.errors()]
    return "; ".join(parts[:10])


def _parameters(model: type[BaseModel]) -> list[inspect.Parameter]:
    """The model's fields as keyword parameters, each with its type, constraints and description."""
    params = []
    for name, f in model.model_fields.items():
        default = inspect.Parameter.empty if f.is_required() else f.get_default(call_default_factory=True)
        annotation = Annotated[(f.annotation, *f.metadata, Field(description=f.description))]  # type: ignore[name-defined]
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                        annotation=annotation))
    return params


def _tool(op: Operation, execute: Execute) -> Callable[..., str]:
    def call(ctx: Context, **given: Any) -> str:
        try:
            args = op.input.model_validate(given)
            request = ctx.request_context.request if isinstance(ctx.request_context.request, Request) else None
            return json.dumps(op.tool_answer(execute(op, args, request)), ensure_ascii=False)
        except ValidationError as exc:
            raise ToolError(_message(exc)) from None
        except HippographError as exc:
            raise ToolError(str(exc)) from None
        except Exception:
            log.exception("tool %s failed", op.tool)
            raise ToolError("unexpected server error; see the server log") from None

    call.__name__ = op.tool or op.name
    call.__doc__ = op.description
    call.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context), *_parameters(op.input)],
        return_annotation=str)
    return call


def build(execute: Execute) -> MCPServer:
    server = MCPServer(name="hippograph", title="Hippograph memory", instructions=INSTRUCTIONS)
    for op in OPERATIONS:
        if op.tool:
            server.add_tool(_tool(op, execute), name=op.tool, description=op.description, structured_output=False)
    return server


# --- streamable HTTP inside the API app -------------------------------------------------------------
PRINCIPAL = "hippograph_principal"
NO_HOST_CHECK = TransportSecuritySettings(enable_dns_rebinding_protection=False)  # done by HostGuard


def _in_app(op: Operation, args: BaseModel, request: Request | None) -> Any:
    if request is None or PRINCIPAL not in request.scope.get("state", {}):
        raise Unauthorized("missing API key: send `Authorization: Bearer <key>`")
    who: Principal = request.scope["state"][PRINCIPAL]
    return run(request.app.state.service, who, op.name, args)


class Endpoint:
    """/mcp behind the REST API's keys: no key (or an unknown one) is a 401 before any MCP message is read,
    and the principal goes to the tools with the request. `start()` makes a new MCP server for each run of
    the app (its session manager runs once)."""

    def __init__(self, host: str) -> None:
        self.host = host
        self.server: MCPServer | None = None
        self.app: Any = None

    def start(self) -> AbstractAsyncContextManager[None]:
        """The context to run in the app's lifespan."""
        self.server = build(_in_app)
        mcp_app = self.server.streamable_http_app(streamable_http_path="/mcp", stateless_http=True,
                                                  json_response=True, transport_security=NO_HOST_CHECK,
                                                  host=self.host)
        self.app = next(r.app for r in mcp_app.routes if isinstance(r, Route) and r.path == "/mcp")
        return self.server.session_manager.run()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from hippograph.server.app import error_response
        from hippograph.server.deps import authenticate

        request = Request(scope, receive)
        state = request.app.state
        try:
            service = getattr(state, "service", None)
            if service is None or not service.ready or self.app is None:
                raise BackendUnavailable("the memory stores are not open yet; retry shortly")
            who = await run_in_threadpool(authenticate, request, service)
        except HippographError as exc:
            await error_response(exc)(scope, receive, send)
            return
        scope.setdefault("state", {})[PRINCIPAL] = who
        await self.app(scope, receive, send)


def mount(app: Any, host: str) -> Endpoint:
    """Add /mcp to the app; the app's lifespan runs `endpoint.start()`. The app's HostGuard answers only the
    server's own host names on every route, /mcp included, so the SDK's own host check is off."""
    endpoint = Endpoint(host)
    app.router.routes.append(Route("/mcp", endpoint=endpoint, include_in_schema=False,
                                   methods=["GET", "POST", "DELETE"]))
    return endpoint


# --- stdio --------------------------------------------------------------------------------------------
def local(service: Any) -> Execute:
    """Calls on a service this process opened: the local user owns the data folder."""
    def execute(op: Operation, args: BaseModel, _: Request | None) -> Any:
        return run(service, OPEN, op.name, args)
    return execute


def remote(client: Any, url: str = "", keyed: bool = True) -> Execute:
    """Calls through the SDK to a running server, as the SDK's API key. A refused key is said in the terms of
    this command (its --api-key and HIPPOGRAPH_API_KEY), not of an HTTP header the user never sends."""
    def execute(op: Operation, args: BaseModel, _: Request | None) -> Any:
        try:
            return client.call(op.name, **args.model_dump(exclude_unset=True))
        except Unauthorized as exc:
            if not keyed:
                raise Unauthorized(f"the server at {url} needs an API key: start `hippograph mcp --url {url}` "
                                   "with --api-key KEY, or set HIPPOGRAPH_API_KEY") from exc
            raise Unauthorized(f"the server at {url} refused the API key of --api-key / HIPPOGRAPH_API_KEY: "
                               f"{exc}") from exc
    return execute


def serve_stdio(data_dir: Any = None, url: str | None = None, api_key: str | None = None) -> None:
    """`hippograph mcp`: MCP over stdin/stdout, on a data folder this process opens (nothing else may hold
    it: use `url` while a server runs on it) or through the SDK to a running server."""
    import anyio

    if url is not None:
        from hippograph.client import Client

        with Client(url, api_key=api_key) as client:
            anyio.run(build(remote(client, url, keyed=api_key is not None)).run_stdio_async)
        return
    from hippograph.config import Settings
    from hippograph.wiring import build as build_service

    settings = Settings() if data_dir is None else Settings(data_dir=data_dir)
    service = build_service(settings)
    service.open()
    service.start_sweeping(settings.sessions.sweep_seconds)
    try:
        anyio.run(build(local(service)).run_stdio_async)
    finally:
        service.close()


def command(args: Any) -> int:
    """`hippograph mcp` (its arguments are declared in hippograph.cli)."""
    if args.url and args.data_dir:
        raise UsageError("give --data-dir or --url, not both")
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)  # stdout carries the protocol only
    serve_stdio(args.data_dir, args.url, args.api_key)
    return 0


class UsageError(HippographError):
    """The command line asks for something that cannot be done."""
