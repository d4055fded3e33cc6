"""Start-up failures are clear: a message naming the problem and a non-zero exit, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT


def run_serve(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hippograph.cli", "serve", *args], check=False, cwd=ROOT,
                          capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})


def test_data_dir_in_use_by_another_server(server_factory, tmp_path) -> None:
    data = tmp_path / "data"
    server_factory(data)
    out = run_serve("--data-dir", str(data), "--port", "1")
    assert out.returncode == 2
    assert "in use by another process" in out.stderr and "Traceback" not in out.stderr


def test_unknown_backend_name(tmp_path) -> None:
    out = run_serve("--data-dir", str(tmp_path), env={"HIPPOGRAPH_VECTORS__BACKEND": "milvus"})
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "vectors.backend" in out.stderr and "milvus" in out.stderr


def test_qdrant_backend_without_location(tmp_path) -> None:
    out = run_serve("--data-dir", str(tmp_path), env={"HIPPOGRAPH_VECTORS__BACKEND": "qdrant"})
    assert out.returncode == 2 and "HIPPOGRAPH_VECTORS__URL" in out.stderr and "Traceback" not in out.stderr
