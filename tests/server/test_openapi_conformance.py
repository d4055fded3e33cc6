"""Schemathesis against the app's own OpenAPI document, over the real embedded stores: generated
requests for every operation get no 5xx, and every answer has a status the document declares for
that operation, with a body that matches the declared schema.

No operation is excluded. The number of examples per operation is bounded (`EXAMPLES`) so the run
stays well under two minutes on two cores. Of schemathesis's other default checks, two are left out,
for reasons of the API rather than of the document:
- positive_data_acceptance: some rules are beyond JSON Schema (a correction or a task that is only
  spaces is refused with a 422), so a schema-valid request may be rightly refused;
- allow_header_conformance: `/v1/users/{user_id}/profile/history` is also matched by
  `/v1/users/{user_id}/profile/{item_id}` (PATCH, DELETE), and the Allow header of a 405 says so.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.config import HttpBearerAuthConfig
from schemathesis.python import asgi
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
)

from hippograph.config import AuthSettings, ExtractionSettings, Settings
from hippograph.inputs import ID_EXAMPLE
from hippograph.server.app import create_app
from hippograph.server.openapi import ERRORS

EXAMPLES = 25
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
          response_headers_conformance, negative_data_rejection, unsupported_method]


KEY = "conformance-" + "k" * 32  # the operator's key of the app under test (read, write and admin)


def _headers() -> dict[str, str]:
    """What the setup's requests carry: the app requires keys, as a deployed one does."""
    return {"Authorization": f"Bearer {KEY}"}


# The document is the same for any settings; the app that answers is built over a fresh data dir
# below (`app`), so collecting the tests opens nothing.
schema = schemathesis.openapi.from_dict(create_app(Settings()).openapi())
# schemathesis sends the key itself, through the document's security scheme: so the requests it makes
# without one, in the negative mode, go without it and must get the 401 the document declares
schema.config.auth.openapi.schemes["HTTPBearer"] = HttpBearerAuthConfig(bearer=KEY)
# valid requests, and requests that break the document's rules (which must get a declared 4xx)
schema.config.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
# each request may take two minutes, not schemathesis's default 10 s: these take 0.01-0.04 s on a quiet
# machine, and a request slower than that is the machine's load, not a finding (a 500 still is one)
schema.config.update(request_timeout=120)
assert schema.config.request_timeout_for() == 120


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FastAPI]:
    """The real app over real embedded stores in a fresh data dir, which schemathesis opens (it runs the
    lifespan once for the module), with one user who has memories, a session and profile items under
    the document's example id, so that generated requests using the example reach a 200."""
    # unwaited writes are extracted before their answer here (max_backlog 0): the generated ones carry up
    # to 2000 messages of up to 100k characters each, and extracting them in the background would load
    # the machine under the requests that follow (the 202 path is tested in
    # tests/server/test_unwaited_writes.py)
    # schemathesis's clients reach the app as "testserver": a name the app is told it is reached by
    app = create_app(Settings(data_dir=tmp_path_factory.mktemp("data"), auth=AuthSettings(bootstrap_key=KEY),
                              extraction=ExtractionSettings(max_backlog=0), allowed_hosts=["testserver"]))
    with asgi.get_client(app) as client:
        resp = client.post("/v1/memories", headers=_headers(), json={
            "user_id": ID_EXAMPLE, "session_id": ID_EXAMPLE, "agent_id": ID_EXAMPLE,
            "messages": [{"id": ID_EXAMPLE, "role": "user", "content": "I live in Oslo and I work at Acme."},
                         {"role": "tool", "name": "weather", "content": "Oslo: 3C", "metadata": {"arguments": {}}}]})
        assert resp.status_code == 200, resp.text
    yield app
    asgi.shutdown_lifespans()  # closes the stores


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture])
def test_every_answer_is_declared_and_no_server_error(
    case: schemathesis.Case, app: FastAPI,
) -> None:
    case.call_and_validate(app=app, checks=CHECKS)


# --- the document itself ------------------------------------------------------------------------------

DOC = schema.raw_schema
OPERATIONS = [(m.upper(), p, op) for p, item in DOC["paths"].items() for m, op in item.items()]


def test_fastapis_validation_error_body_is_gone_and_every_error_is_an_error_body() -> None:
    assert "HTTPValidationError" not in str(DOC) and "ValidationError" not in DOC["components"]["schemas"]
    for method, path, op in OPERATIONS:
        for code, response in op["responses"].items():
            if code.startswith(("4", "5")) and (method, path, code) != ("GET", "/readyz", "503"):
                ref = response["content"]["application/json"]["schema"]["$ref"]
                assert ref == "#/components/schemas/ErrorBody", (method, path, code)
    assert set(DOC["components"]["schemas"]["ErrorBody"]["required"]) == {"error", "detail"}


def test_common_and_write_groups_are_declared() -> None:
    for method, path, op in OPERATIONS:
        codes = set(op["responses"])
        assert "421" in codes, (method, path)  # a Host that does not name the server, on every route
        if path.startswith("/v1/"):
            # any valid key may ask who it is: no scope, no 403
            assert {"401", "429", "500", "503"} | ({"403"} if path != "/v1/me" else set()) <= codes, (method, path)
            # a revocation never waits for disk space; making a key is a write like storing memories
            writes = (method in ("PATCH", "DELETE") and path != "/v1/keys/{key_id}") or (
                method == "POST" and path in ("/v1/memories", "/v1/keys"))
            assert ("507" in codes) == writes, (method, path)
        if "requestBody" in op:
            assert {"400", "413", "422"} <= codes, (method, path)


def test_the_table_names_only_operations_that_exist() -> None:
    assert set(ERRORS) == {(method, path) for method, path, _ in OPERATIONS}


def test_a_route_missing_from_the_table_stops_the_document() -> None:
    def extra() -> dict:
        return {"new": True}

    app = create_app(Settings())
    app.add_api_route("/v1/extra", extra, methods=["GET"])
    with pytest.raises(RuntimeError, match=r"\('GET', '/v1/extra'\)"):
        app.openapi()


def test_health_answers_have_their_fields_in_the_document() -> None:
    """ReDoc draws a sample from the schema: `{ }` or null when the answer has none."""
    for path, fields in (("/healthz", {"status"}), ("/readyz", {"status", "graph", "vectors", "auth"})):
        ref = DOC["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        schema = DOC["components"]["schemas"][ref.rsplit("/", 1)[1]]
        assert fields <= set(schema["properties"]), path
