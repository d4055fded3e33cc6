"""The memory explorer at /ui: static pages (hippograph/ui, no build step; Cytoscape.js vendored with its
licence) that call the public REST API with the key the person signs in with. They are served under a
strict Content-Security-Policy: scripts, styles and requests from this server only, nothing inline."""

from __future__ import annotations

from pathlib import Path

from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

PAGES = Path(__file__).resolve().parents[1] / "ui"
POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
          "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
HEADERS = {"Content-Security-Policy": POLICY, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
           "X-Frame-Options": "DENY", "Cache-Control": "no-cache"}


class Pages(StaticFiles):
    """The page files with the policy's headers on every answer, errors included."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        try:
            response = await super().get_response(path, scope)
        except HTTPException as exc:  # a file that is not there (404), a method that is not GET (405)
            response = JSONResponse({"error": "NotFound" if exc.status_code == 404 else "MethodNotAllowed",
                                     "detail": f"no page {path!r} under /ui" if exc.status_code == 404 else
                                     "the pages under /ui are read with GET"}, status_code=exc.status_code,
                                    headers=exc.headers)
        response.headers.update(HEADERS)
        return response


def pages() -> Pages:
    return Pages(directory=PAGES, html=True)
