"""FastAPI dependencies: the service built once in the lifespan."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from hippograph.errors import BackendUnavailable
from hippograph.service import Hippograph


def get_service(request: Request) -> Hippograph:
    service: Hippograph | None = getattr(request.app.state, "service", None)
    if service is None or not service.ready:
        raise BackendUnavailable("the memory stores are not open yet; retry shortly")
    return service


Service = Annotated[Hippograph, Depends(get_service)]
