"""Which Host and Origin headers the server answers, so that a web page cannot reach it through DNS
rebinding (a name of the attacker's that re-resolves to 127.0.0.1 makes the browser send that name as
Host) or write to it from another site (a cross-site POST carries that site's Origin).

A request is answered when its Host names the server as it is bound: a loopback name (localhost,
127.0.0.1, [::1]) on any port, the bind address itself, any IP address when the server listens on every
interface (an address cannot be re-resolved, so only a name can be rebound), or a name configured in
HIPPOGRAPH_ALLOWED_HOSTS ("name", "name:port", "name:*" for any port, "*" for every host). A request that
changes state (anything but GET, HEAD and OPTIONS) and carries an Origin must come from one of those
hosts too; clients that are not browsers send no Origin and are not affected."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def _split(host: str) -> tuple[str, str]:
    """`name[:port]` or `[v6][:port]` as (name without brackets, lower case; port or "")."""
    host = host.strip().lower()
    if host.startswith("["):
        name, _, rest = host[1:].partition("]")
        return name, rest.removeprefix(":")
    name, _, port = host.rpartition(":") if host.count(":") == 1 else (host, "", "")
    return name, port


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class Hosts:
    """The Host names one server answers (see the module's docstring)."""

    def __init__(self, bind: str, extra: Iterable[str] = ()) -> None:
        extra = list(extra)
        bind_name = bind.strip().strip("[]").lower()
        self.any_host = "*" in extra
        self.any_address = bind_name in ("0.0.0.0", "::", "")
        self.names: set[str] = {*LOOPBACK_NAMES, bind_name}  # on any port
        self.pairs: set[tuple[str, str]] = set()  # (name, port)
        for item in extra:
            name, port_ = _split(item)
            if port_ in ("", "*"):
                self.names.add(name)
            else:
                self.pairs.add((name, port_))

    def allows(self, host: str) -> bool:
        """Whether a Host header (or an Origin's host) names this server."""
        if self.any_host:
            return True
        name, port = _split(host)
        if not name:
            return False
        return (name in self.names or (name, port) in self.pairs
                or (self.any_address and _is_address(name)))

    def allows_origin(self, origin: str) -> bool:
        """Whether a browser at that Origin may change state here: an http(s) page of an allowed host
        ("null", a file or a sandboxed frame, may not)."""
        if self.any_host:
            return True
        parts = urlsplit(origin.strip())
        return parts.scheme in ("http", "https") and bool(parts.netloc) and self.allows(parts.netloc)


class HostGuard:
    """Answers 421 to a request whose Host the server does not answer and 403 to a state-changing request
    from a page of another origin, before any route (or /mcp) sees it."""

    def __init__(self, app: ASGIApp, hosts: Hosts) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", []))
        host = headers.get(b"host", b"").decode("latin-1")
        origin = headers.get(b"origin")
        if not self.hosts.allows(host):
            shown = host if len(host) <= 100 else host[:100] + "…"
            await _refusal(421, "MisdirectedRequest",
                           f"this server does not answer the host name {shown!r}: it answers its loopback names "
                           "and its bind address; add the name by which clients reach it to "
                           "HIPPOGRAPH_ALLOWED_HOSTS")(scope, receive, send)
            return
        if origin is not None and scope["method"] not in SAFE_METHODS \
                and not self.hosts.allows_origin(origin.decode("latin-1")):
            await _refusal(403, "Forbidden",
                           "a request from a web page of another origin may not change this server's memories; "
                           "add that page's host to HIPPOGRAPH_ALLOWED_HOSTS if it is yours")(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _refusal(status: int, error: str, detail: str) -> JSONResponse:
    return JSONResponse({"error": error, "detail": detail}, status_code=status)
