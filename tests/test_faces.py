"""One catalogue, three faces: every operation is a REST route, an MCP tool and an SDK method, unless
the catalogue says why a face lacks it; and every /v1 route is an operation or named as REST-only."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from hippograph import AsyncClient, Client
from hippograph.config import Settings
from hippograph.mcp_server import build
from hippograph.operations import FACES, OPERATIONS, REST_ONLY
from hippograph.server.app import create_app


@pytest.fixture(scope="module")
def routes(tmp_path_factory) -> set[tuple[str, str]]:
    app = create_app(Settings(data_dir=tmp_path_factory.mktemp("data")))
    return {(method.upper(), path) for path, item in app.openapi()["paths"].items() for method in item}


@pytest.fixture(scope="module")
def tools() -> dict[str, dict]:
    listed = asyncio.run(build(lambda op, args, request: None).list_tools())
    return {t.name: t.input_schema for t in listed}


def test_absences_say_why() -> None:
    for op in OPERATIONS:
        assert set(op.absent) <= set(FACES), op.name
        assert all(len(why) > 20 for why in op.absent.values()), op.name
        assert (op.tool is None) == ("mcp" in op.absent), f"{op.name}: a tool name, or a reason it has none"
    assert len({op.name for op in OPERATIONS}) == len(OPERATIONS)


def test_every_operation_is_a_route(routes: set[tuple[str, str]]) -> None:
    missing = [op.name for op in OPERATIONS if "rest" not in op.absent and (op.method, op.path) not in routes]
    assert not missing, f"operations without their REST route: {missing}"


def test_every_v1_route_is_an_operation(routes: set[tuple[str, str]]) -> None:
    ops = {(op.method, op.path) for op in OPERATIONS}
    stray = sorted(r for r in routes if r[1].startswith("/v1") and r not in ops and r not in REST_ONLY)
    assert not stray, f"/v1 routes outside the catalogue (add them to OPERATIONS, or to REST_ONLY with why): {stray}"
    assert all(r in routes for r in REST_ONLY), "REST_ONLY names a route that does not exist"


def test_every_operation_is_a_tool_with_its_models_fields(tools: dict[str, dict]) -> None:
    for op in OPERATIONS:
        if op.tool is None:
            assert op.name not in tools
            continue
        assert op.tool in tools, f"{op.name}: no MCP tool {op.tool}"
        assert set(tools[op.tool]["properties"]) == set(op.input.model_fields), op.name
        required = {n for n, f in op.input.model_fields.items() if f.is_required()}
        assert set(tools[op.tool].get("required", [])) == required, op.name
    assert set(tools) == {op.tool for op in OPERATIONS if op.tool}


@pytest.mark.parametrize("cls", [Client, AsyncClient])
def test_every_operation_is_an_sdk_method(cls: type) -> None:
    for op in OPERATIONS:
        if "sdk" in op.absent:
            assert not hasattr(cls, op.name)
            continue
        method = getattr(cls, op.name, None)
        assert callable(method), f"{cls.__name__} lacks {op.name}"
        params = set(inspect.signature(method).parameters) - {"self"}
        # each argument is a field of the operation's input (the entity of `neighbors` may be a name or an id)
        assert params <= set(op.input.model_fields), (op.name, params - set(op.input.model_fields))
        required = {n for n, f in op.input.model_fields.items() if f.is_required()}
        assert required <= params, (op.name, required - params)


def test_every_answer_is_its_declared_model(tmp_path) -> None:
    """A tool's answer is dumped through the operation's output model: an answer of another type (a dict
    where a model is declared) would make pydantic warn on every call, as get_profile did."""
    import warnings

    from hippograph.auth import OPEN
    from hippograph.operations import BY_NAME, run
    from hippograph.wiring import build as build_service

    service = build_service(Settings(data_dir=tmp_path / "data"))
    service.open()
    try:
        said = [{"id": "m1", "role": "user", "content": "I live in Oslo and I work at Acme."},
                {"id": "m2", "role": "user", "content": "I prefer tea."}]
        run(service, OPEN, "remember", {"user_id": "ola", "session_id": "s", "messages": said})
        calls = [("profile", {"user_id": "ola", "history": True}), ("get_memory", {"user_id": "ola", "memory_id": "m1"}),
                 ("sessions", {"user_id": "ola"}), ("audit", {"user_id": "ola"}), ("users", {}),
                 ("delete_memory", {"user_id": "ola", "memory_id": "m2"})]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for name, args in calls:
                BY_NAME[name].tool_answer(run(service, OPEN, name, args))
            note = BY_NAME["profile"].dump(run(service, OPEN, "profile", {"user_id": "ola"}))["facts"][0]["id"]
            BY_NAME["delete_note"].tool_answer(run(service, OPEN, "delete_note", {"user_id": "ola", "item_id": note}))
            BY_NAME["forget_user"].tool_answer(run(service, OPEN, "forget_user", {"user_id": "ola"}))
    finally:
        service.close()
