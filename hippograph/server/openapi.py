"""The OpenAPI document says which errors each operation really answers, all with one body.

`ERRORS` is the table: for every operation (method, path) the error codes it can answer beyond its
success, on top of the groups every /v1 operation and every writing operation share. `install(app)`
makes the app's `openapi()` put them in the document, with FastAPI's default 422 body (which the
server never sends) replaced by `ErrorBody`. A route missing from the table makes `openapi()` fail,
so a new route cannot ship undocumented errors.
"""

from __future__ import annotations

import re
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, Field
from starlette.routing import compile_path


class FieldError(BaseModel):
    loc: list[str | int] = Field(description="Where in the request: body, query or path, then the field names.")
    msg: str
    type: str = Field(description="pydantic's error type, e.g. missing, string_too_long, value_error.")


class ErrorBody(BaseModel):
    """The body of every error the server answers."""

    error: str = Field(description="What kind of error: InvalidInput, InvalidJSON, NotFound, Conflict, "
                                   "PayloadTooLarge, MethodNotAllowed, BackendUnavailable, InternalError, ...")
    detail: str = Field(description="What was wrong, for a person to read.")
    errors: list[FieldError] | None = Field(None, description="For InvalidInput: each field that failed.")


class Readiness(BaseModel):
    status: str = Field(description="`ready`, or `starting` while the stores open and the models load.")


# every /v1 operation: no or a bad API key (401), a key without the scope (403), over a rate limit
# (429), an unexpected failure (500), a store or model down or not open yet (503)
COMMON_V1 = (401, 403, 429, 500, 503)
WRITES = (507,)  # operations that write to the stores: the disk is full
BODY = (400, 413, 422)  # operations with a JSON body: malformed JSON, over the size limit, invalid fields
HOST = 421  # every route: a Host header that does not name the server (server.hosts)

ERRORS: dict[tuple[str, str], tuple[int, ...]] = {
    ("GET", "/healthz"): (500,),
    ("GET", "/readyz"): (500, 503),
    ("GET", "/metrics"): COMMON_V1,  # usage counters: an admin key, like /v1/usage
    ("GET", "/v1/me"): (401, 429, 500, 503),
    ("GET", "/v1/users"): (*COMMON_V1, 422),
    ("POST", "/v1/memories"): (*COMMON_V1, *WRITES, *BODY, 409),
    ("POST", "/v1/context"): (*COMMON_V1, *BODY),
    ("POST", "/v1/search"): (*COMMON_V1, *BODY, 404),
    ("POST", "/v1/memories/status"): (*COMMON_V1, *BODY, 404),
    ("POST", "/v1/handoffs"): (*COMMON_V1, *BODY, 404),
    ("GET", "/v1/users/{user_id}/profile"): (*COMMON_V1, 404, 422),
    ("GET", "/v1/users/{user_id}/profile/history"): (*COMMON_V1, 404, 422),
    ("PATCH", "/v1/users/{user_id}/profile/{item_id}"): (*COMMON_V1, *WRITES, *BODY, 404, 409),
    ("DELETE", "/v1/users/{user_id}/profile/{item_id}"): (*COMMON_V1, *WRITES, 404, 422),
    ("GET", "/v1/users/{user_id}/audit"): (*COMMON_V1, 404, 422),
    ("GET", "/v1/users/{user_id}/memories/{memory_id}"): (*COMMON_V1, 404, 422),
    ("DELETE", "/v1/users/{user_id}/memories/{memory_id}"): (*COMMON_V1, *WRITES, 404, 422),
    ("GET", "/v1/users/{user_id}/sessions"): (*COMMON_V1, 404, 422),
    ("DELETE", "/v1/users/{user_id}/sessions/{session_id}"): (*COMMON_V1, *WRITES, 404, 422),
    ("DELETE", "/v1/users/{user_id}"): (*COMMON_V1, *WRITES, 404, 422),
    ("GET", "/v1/graph/entities"): (*COMMON_V1, 404, 422),
    ("GET", "/v1/graph/entities/{entity_id}/neighbors"): (*COMMON_V1, 404, 422),
    ("GET", "/v1/graph/neighbors"): (*COMMON_V1, 404, 422),
    ("GET", "/v1/usage"): (*COMMON_V1, 422),
    ("POST", "/v1/keys"): (*COMMON_V1, *WRITES, *BODY),
    ("GET", "/v1/keys"): COMMON_V1,
    ("DELETE", "/v1/keys/{key_id}"): (*COMMON_V1, 404, 409, 422),
    ("GET", "/v1/admin/quarantine"): (*COMMON_V1, 422),
    ("POST", "/v1/admin/quarantine/release"): (*COMMON_V1, *BODY, 404),  # a small update, like a revocation
}
# answers whose body is not ErrorBody
OTHER_BODIES: dict[tuple[str, str, int], type[BaseModel]] = {("GET", "/readyz", 503): Readiness}

_ERROR_REF = "#/components/schemas/ErrorBody"


def _phrase(code: int) -> str:
    return {507: "Insufficient storage (the disk is full)",
            421: "Misdirected request (the Host header does not name this server)"}.get(code, HTTPStatus(code).phrase)


def _components() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for model in (ErrorBody, Readiness):
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        out.update(schema.pop("$defs", {}))
        out[model.__name__] = schema
    return out


def document(app: FastAPI) -> dict[str, Any]:
    """The app's OpenAPI document with the error answers of `ERRORS`."""
    spec = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
    operations = {(m.upper(), p) for p, item in spec.get("paths", {}).items() for m in item}
    missing = sorted(operations - ERRORS.keys())
    if missing:
        raise RuntimeError(f"hippograph.server.openapi.ERRORS has no entry for {missing}: add their error codes")
    schemas = spec.setdefault("components", {}).setdefault("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    schemas.update(_components())
    for path, item in spec.get("paths", {}).items():
        for method, op in item.items():
            responses = {k: v for k, v in op.get("responses", {}).items() if k != "422"}
            for code in (*ERRORS.get((method.upper(), path), ()), HOST):
                model = OTHER_BODIES.get((method.upper(), path, code))
                ref = f"#/components/schemas/{model.__name__}" if model else _ERROR_REF
                responses[str(code)] = {"description": _phrase(code),
                                        "content": {"application/json": {"schema": {"$ref": ref}}}}
            op["responses"] = dict(sorted(responses.items()))
    return spec


def install(app: FastAPI) -> None:
    """Serve `document(app)` (built once, on the first request for it) as the app's OpenAPI document."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = document(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def allowed_methods(app: FastAPI, path: str) -> list[str]:
    """The methods the document lists for the concrete `path` (for the Allow header of a 405): those of
    the path's own template, the one with the fewest parameters among those it matches (the methods of
    `/v1/users/{user_id}/profile/history`, not those of `/v1/users/{user_id}/profile/{item_id}`)."""
    if not hasattr(app.state, "openapi_paths"):
        app.state.openapi_paths = [(compile_path(template)[0], template.count("{"), sorted(m.upper() for m in item))
                                   for template, item in app.openapi().get("paths", {}).items()]
    paths: list[tuple[re.Pattern[str], int, list[str]]] = app.state.openapi_paths
    found = [(params, methods) for regex, params, methods in paths if regex.match(path)]
    fewest = min((params for params, _ in found), default=0)
    return sorted({m for params, methods in found if params == fewest for m in methods})
