"""The FastAPI application: `create_app(settings)` builds it; stores open in the lifespan."""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, nullcontext
from http import HTTPStatus
from pathlib import Path

import fastapi_offline
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from hippograph import mcp_server
from hippograph.auth import ALL_SCOPES
from hippograph.config import Settings
from hippograph.errors import (
    BackendUnavailable,
    ConfigurationError,
    Conflict,
    Forbidden,
    HippographError,
    InsufficientStorage,
    InvalidInput,
    NotFound,
    RateLimited,
    Unauthorized,
)
from hippograph.inputs import METADATA_MAX_DEPTH
from hippograph.server import openapi, ui
from hippograph.server.deps import auth_mode, is_loopback
from hippograph.server.hosts import HostGuard, Hosts
from hippograph.server.limits import BodySizeLimit
from hippograph.server.ratelimit import RateLimiter
from hippograph.server.routers import admin, graph, handoffs, health, keys, me, memories, usage, users
from hippograph.service import Hippograph

log = logging.getLogger("hippograph.server")

STATUS = {NotFound: 404, Conflict: 409, InvalidInput: 422, BackendUnavailable: 503, ConfigurationError: 503,
          Unauthorized: 401, Forbidden: 403, RateLimited: 429, InsufficientStorage: 507}


def _headers(exc: HippographError) -> dict[str, str]:
    if isinstance(exc, Unauthorized):
        return {"WWW-Authenticate": "Bearer"}
    if isinstance(exc, RateLimited):
        return {"Retry-After": str(max(1, math.ceil(exc.retry_after)))}
    return {}


def _bootstrap(settings: Settings, service: Hippograph) -> None:
    """The operator's key (HIPPOGRAPH_AUTH__BOOTSTRAP_KEY), stored as its hash; then say how the server runs."""
    if settings.auth.bootstrap_key is not None:
        service.tenancy.register_key(settings.auth.bootstrap_key.get_secret_value(), settings.auth.bootstrap_tenant,
                                     sorted(ALL_SCOPES), "bootstrap")
    mode = auth_mode(settings, service)
    if mode == "open":
        where = f" --data-dir {settings.data_dir}" if settings.graph.backend == "embedded" else ""
        log.warning("no API key exists: the server runs OPEN on loopback (%s); create a key with "
                    "`hippograph keys create --tenant T --scopes read,write%s` to require keys", settings.host, where)
    elif mode == "disabled":
        log.warning("HIPPOGRAPH_AUTH__DISABLED=true: requests without an API key are served as the default tenant")


def error_response(exc: HippographError) -> JSONResponse:
    """The one error body: the error's class and what was wrong, with its status and headers."""
    code = _status(exc)
    if code >= 500 and not isinstance(exc, InsufficientStorage):  # the guard logs a full disk once, not per 507
        log.error("request failed: %s", exc)
    return JSONResponse({"error": type(exc).__name__, "detail": str(exc)}, status_code=code, headers=_headers(exc))


def _status(exc: HippographError) -> int:
    return next((code for cls, code in STATUS.items() if isinstance(exc, cls)), 500)


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err.get("loc", ()) if x != "body")
        parts.append(f"{loc or 'body'}: {err.get('msg', 'invalid')}")
    return "; ".join(parts[:10])


def create_app(settings: Settings | None = None, service: Hippograph | None = None) -> FastAPI:
    """An app over `service` if given, else over the backends the settings name."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        from hippograph.wiring import build

        svc = service or build(settings)
        if not svc.ready:
            await run_in_threadpool(svc.open)
        await run_in_threadpool(_bootstrap, settings, svc)
        app.state.service = svc
        svc.start_sweeping(settings.sessions.sweep_seconds)  # stopped by close()
        try:
            async with mcp.start() if mcp is not None else nullcontext():
                yield
        finally:
            app.state.service = None
            await run_in_threadpool(svc.close)

    app = FastAPI(
        title="Hippograph",
        version="0.1.0",
        description="Memory server for LLM agents: knowledge graph + vector memory + query planner.",
        lifespan=lifespan,
        docs_url=None,  # served by _install_docs from the package's files, not from a CDN
        redoc_url=None,
    )
    app.state.settings = settings
    # requests without a key are served (as the default tenant) only on a loopback bind while no key
    # was ever made, or when auth is disabled on purpose (`Tenancy.authenticate`)
    app.state.open_ok = is_loopback(settings.host)
    app.state.rate_limiter = RateLimiter(settings.auth.rate_limit_per_minute, settings.auth.rate_limit_burst)
    app.state.failed_auth = RateLimiter(settings.auth.failed_per_minute)
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_request_bytes)
    # added last, so it runs first: a request for a host the server does not answer reads nothing
    app.add_middleware(HostGuard, hosts=Hosts(settings.host, [*settings.allowed_hosts, *settings.mcp.allowed_hosts]))

    @app.exception_handler(HippographError)
    async def _domain_error(_: Request, exc: HippographError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        if any(e.get("type") == "json_invalid" for e in exc.errors()):
            return JSONResponse({"error": "InvalidJSON", "detail": _json_message(exc)}, status_code=400)
        return JSONResponse(
            {"error": "InvalidInput", "detail": _validation_message(exc), "errors": _safe_errors(exc)},
            status_code=422,
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        headers = dict(exc.headers or {})
        if exc.status_code == 405:  # every method the path has, not only those of the first route matched
            headers["Allow"] = ", ".join(openapi.allowed_methods(app, request.url.path)) or headers.get("Allow", "")
        if exc.status_code == 400 and isinstance(exc.__cause__, RecursionError):  # FastAPI's json.loads
            return JSONResponse({"error": "InvalidJSON", "detail": "the request body is nested too deep to read as JSON "
                                 f"(metadata may nest {METADATA_MAX_DEPTH} levels at most)"}, status_code=400)
        return JSONResponse({"error": _http_name(exc.status_code), "detail": _http_detail(request, headers, exc)},
                            status_code=exc.status_code, headers=headers)

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error")
        return JSONResponse({"error": "InternalError", "detail": "unexpected server error; see the server log"},
                            status_code=500)

    mcp = mcp_server.mount(app, settings.host) \
        if settings.mcp.enabled else None
    for router in (health.router, memories.router, users.router, handoffs.router, graph.router, usage.router,
                   keys.router, me.router, admin.router):
        app.include_router(router)
    openapi.install(app)
    _install_docs(app)
    app.mount("/ui", ui.pages(), name="ui")  # the memory explorer: static pages over the same REST API
    return app


# Swagger UI's and ReDoc's files as fastapi-offline ships them (Swagger UI: Apache-2.0, ReDoc: MIT)
DOC_ASSETS = Path(fastapi_offline.__file__).parent / "static"
# The doc pages may load from the server only: ReDoc's sidebar would fetch Redocly's logo from their site
DOC_POLICY = ("default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
              "img-src 'self' data:; worker-src 'self' blob:")


def _install_docs(app: FastAPI) -> None:
    """/docs (Swagger UI) and /redoc with their scripts and styles served by the app itself, so that
    they work with no internet; like /openapi.json they need no key."""
    app.mount("/docs-assets", StaticFiles(directory=DOC_ASSETS), name="docs-assets")

    def at(request: Request, path: str) -> str:
        return request.scope.get("root_path", "").rstrip("/") + path

    def local_only(page: HTMLResponse) -> HTMLResponse:
        page.headers["Content-Security-Policy"] = DOC_POLICY
        return page

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        return local_only(get_swagger_ui_html(
            openapi_url=at(request, "/openapi.json"), title=f"{app.title} - Swagger UI",
            swagger_js_url=at(request, "/docs-assets/swagger-ui-bundle.js"),
            swagger_css_url=at(request, "/docs-assets/swagger-ui.css"),
            swagger_favicon_url=at(request, "/docs-assets/favicon.png"),
            swagger_ui_parameters={"validatorUrl": None}))  # no spec validation by an outside service

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        return local_only(get_redoc_html(
            openapi_url=at(request, "/openapi.json"), title=f"{app.title} - ReDoc",
            redoc_js_url=at(request, "/docs-assets/redoc.standalone.js"),
            redoc_favicon_url=at(request, "/docs-assets/favicon.png"), with_google_fonts=False))


def _json_message(exc: RequestValidationError) -> str:
    err = next(e for e in exc.errors() if e.get("type") == "json_invalid")
    loc = err.get("loc", ())
    where = f" at character {loc[-1]}" if len(loc) > 1 and isinstance(loc[-1], int) else ""
    reason = (err.get("ctx") or {}).get("error") or err.get("msg", "")
    return f"the request body is not valid JSON{where}: {reason}"


def _http_name(code: int) -> str:
    """404 -> NotFound, 405 -> MethodNotAllowed: the status phrase as one word."""
    try:
        return "".join(w.capitalize() for w in HTTPStatus(code).phrase.split())
    except ValueError:
        return "HTTPError"


def _http_detail(request: Request, headers: dict[str, str], exc: StarletteHTTPException) -> str:
    path = request.url.path if len(request.url.path) <= 200 else request.url.path[:200] + "…"
    if exc.status_code == 404 and exc.detail == HTTPStatus.NOT_FOUND.phrase:
        return f"no route {request.method} {path}; the API is described at /docs and /openapi.json"
    if exc.status_code == 405:
        allowed = headers.get("Allow", "")
        return f"{request.method} is not allowed on {path}" + (f"; allowed: {allowed}" if allowed else "")
    return str(exc.detail)


def _safe_errors(exc: RequestValidationError) -> list[dict]:
    """Validation errors without echoing the (possibly huge) input back."""
    return [{"loc": list(e.get("loc", ())), "msg": e.get("msg"), "type": e.get("type")} for e in exc.errors()[:20]]
