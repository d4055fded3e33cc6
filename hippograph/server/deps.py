"""FastAPI dependencies: the service built once in the lifespan, and who a request acts as."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPBearer

from hippograph.auth import Principal, Scope
from hippograph.config import Settings
from hippograph.errors import BackendUnavailable, Unauthorized
from hippograph.server.ratelimit import RateLimiter
from hippograph.service import Hippograph


def get_service(request: Request) -> Hippograph:
    service: Hippograph | None = getattr(request.app.state, "service", None)
    if service is None or not service.ready:
        raise BackendUnavailable("the memory stores are not open yet; retry shortly")
    return service


Service = Annotated[Hippograph, Depends(get_service)]

# Declares the scheme in the OpenAPI spec; the header itself is read below, so that a malformed one is
# a 401 rather than silently ignored.
bearer = HTTPBearer(auto_error=False, description="An API key: `Authorization: Bearer hg_…`")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def auth_mode(settings: Settings, service: Hippograph) -> str:
    """keys (every /v1 request needs one), open (no key exists: loopback only) or disabled (on purpose)."""
    if settings.auth.disabled:
        return "disabled"
    if service.graph.has_keys():
        return "keys"
    return "open" if is_loopback(settings.host) else "keys"


FAILED = "requests with a missing, unknown or revoked API key from this address"


def authenticate(request: Request, service: Hippograph) -> Principal:
    """Who the request acts as, within the limits: failed attempts per client address (an address past
    them gets 429 for everything until its minute refills), then requests per key."""
    state = request.app.state
    address = request.client.host if request.client else "-"
    failed: RateLimiter = state.failed_auth
    failed.check(address, FAILED)
    try:
        found = service.tenancy.authenticate(request.headers.get("authorization"), open_ok=state.open_ok,
                                             disabled=state.settings.auth.disabled)
    except Unauthorized:
        failed.spend(address)
        raise
    limiter: RateLimiter = state.rate_limiter
    limiter.take(found.key_id or "open")
    return found


def _acting(scope: Scope) -> Callable[..., Principal]:
    def principal(request: Request, service: Service, _: object = Depends(bearer)) -> Principal:
        return service.tenancy.require(authenticate(request, service), scope)
    return principal


Reader = Annotated[Principal, Depends(_acting(Scope.read))]
Writer = Annotated[Principal, Depends(_acting(Scope.write))]
Admin = Annotated[Principal, Depends(_acting(Scope.admin))]
