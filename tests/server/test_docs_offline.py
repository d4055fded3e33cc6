"""/docs and /redoc in a real headless Chromium that can reach nothing but the server: the pages render
from the files the server serves, and load nothing from outside it (no CDN, no web fonts)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from hippograph.config import Settings
from hippograph.server.app import create_app
from tests.apps import LOCAL
from tests.server.test_auth import create_key

CHROMIUM = shutil.which("chromium")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="NOT TESTED: no `chromium` on PATH, so /docs and /redoc were not rendered offline "
           "(scripts/test installs it with apt-get; run `apt-get install chromium`)",
)
OUTSIDE = re.compile(r"""(?:https?:)?//(?!127\.0\.0\.1[:/])[\w.-]+""")


def render(url: str, tmp: Path) -> tuple[str, list[str]]:
    """The DOM once the page's scripts ran, and the URLs the page itself requested. Every host name
    resolves to nothing and every proxied request goes to a closed port: only loopback answers."""
    net_log = tmp / "net.json"
    out = subprocess.run(
        [CHROMIUM or "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--user-data-dir={tmp / 'profile'}", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
         "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=127.0.0.1", f"--log-net-log={net_log}",
         "--virtual-time-budget=10000", "--dump-dom", url],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    log = json.loads(net_log.read_text())
    start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    origin = re.match(r"https?://[^/]+", url)
    assert origin is not None
    # the page's own requests name its origin as initiator; the browser's background ones do not
    requested = [e["params"]["url"] for e in log["events"]
                 if e["type"] == start_job and e.get("params", {}).get("initiator") == origin.group()]
    return out.stdout, requested


@needs_chromium
def test_docs_render_with_no_internet(server_factory, tmp_path) -> None:
    srv = server_factory()
    html = httpx.get(f"{srv.url}/docs").text
    assert "swagger-ui-bundle.js" in html
    assert not OUTSIDE.findall(html), "the /docs page names something outside the server"

    dom, requested = render(f"{srv.url}/docs", tmp_path)
    assert f"{srv.url}/docs-assets/swagger-ui-bundle.js" in requested, requested
    outside = [u for u in requested if not u.startswith(f"{srv.url}/")]
    assert not outside, f"the /docs page fetched from outside the server: {outside}"
    assert dom.count('class="opblock ') >= 10, "Swagger UI listed no operations: its script did not run"
    for path in ("/v1/memories", "/v1/context"):
        assert f'data-path="{path}"' in dom, path


@needs_chromium
def test_redoc_renders_with_no_internet(server_factory, tmp_path) -> None:
    srv = server_factory()
    html = httpx.get(f"{srv.url}/redoc").text
    assert not OUTSIDE.findall(html), "the /redoc page names something outside the server"

    dom, requested = render(f"{srv.url}/redoc", tmp_path)
    outside = [u for u in requested if not u.startswith(f"{srv.url}/")]
    assert not outside, f"the /redoc page fetched from outside the server: {outside}"
    assert f"{srv.url}/openapi.json" in requested, "ReDoc's script did not run"
    for path in ("/v1/memories", "/v1/context"):
        assert path in dom, path


def test_docs_need_no_key(tmp_path) -> None:
    """Even once a key exists (so every /v1 request needs one), the docs and their files are public."""
    create_key(tmp_path, "acme", "read")
    with TestClient(create_app(Settings(data_dir=tmp_path)), base_url=LOCAL) as client:
        assert client.get("/readyz").json()["auth"] == "keys"
        assert client.post("/v1/context", json={"user_id": "u", "query": "q"}).status_code == 401
        for path in ("/docs", "/redoc", "/openapi.json", "/docs-assets/swagger-ui-bundle.js",
                     "/docs-assets/swagger-ui.css", "/docs-assets/redoc.standalone.js", "/docs-assets/favicon.png"):
            assert client.get(path).status_code == 200, path
