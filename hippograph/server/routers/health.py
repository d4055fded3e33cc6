from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from hippograph.server.deps import auth_mode

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz() -> dict:
    """The process is alive."""
    return {"status": "ok"}


@router.get("/readyz")
def readyz(request: Request) -> JSONResponse:
    """Stores open and models loaded: the server can take requests."""
    service = getattr(request.app.state, "service", None)
    if service is None or not service.ready:
        return JSONResponse({"status": "starting"}, status_code=503)
    return JSONResponse({"status": "ready", **service.describe(), "auth": auth_mode(request.app.state.settings, service)})
