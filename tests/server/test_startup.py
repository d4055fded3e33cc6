"""Start-up failures are clear: a message naming the problem and a non-zero exit, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT, free_port


def run_serve(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`hippograph serve` on a free port (the port is checked first: a busy default port would hide the
    failure each test is about)."""
    return subprocess.run([sys.executable, "-m", "hippograph.cli", "serve", "--port", str(free_port()), *args],
                          check=False, cwd=ROOT,
                          capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})


def test_data_dir_in_use_by_another_server(server_factory, tmp_path) -> None:
    data = tmp_path / "data"
    server_factory(data)
    out = run_serve("--data-dir", str(data))
    assert out.returncode == 2
    assert "in use by another process" in out.stderr and "Traceback" not in out.stderr


def test_unknown_backend_name(tmp_path) -> None:
    out = run_serve("--data-dir", str(tmp_path), env={"HIPPOGRAPH_VECTORS__BACKEND": "milvus"})
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "vectors.backend" in out.stderr and "milvus" in out.stderr


def test_qdrant_backend_without_location(tmp_path) -> None:
    out = run_serve("--data-dir", str(tmp_path), env={"HIPPOGRAPH_VECTORS__BACKEND": "qdrant"})
    assert out.returncode == 2 and "HIPPOGRAPH_VECTORS__URL" in out.stderr and "Traceback" not in out.stderr


def test_neo4j_unreachable(tmp_path) -> None:
    out = run_serve("--data-dir", str(tmp_path), env={"HIPPOGRAPH_GRAPH__BACKEND": "neo4j",
                                                      "HIPPOGRAPH_GRAPH__URI": "bolt://127.0.0.1:1"})
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "BackendUnavailable" in out.stderr and "127.0.0.1:1" in out.stderr


def test_qdrant_server_unreachable(tmp_path) -> None:
    out = run_serve("--data-dir", str(tmp_path), env={"HIPPOGRAPH_VECTORS__BACKEND": "qdrant",
                                                      "HIPPOGRAPH_VECTORS__URL": "http://127.0.0.1:1"})
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "BackendUnavailable" in out.stderr


def test_vector_size_differs_from_the_embedder(tmp_path) -> None:
    import numpy as np
    from model2vec import StaticModel
    from tokenizers import Tokenizer

    from hippograph.vectors.embedders import _default_tokenizer_path

    data = tmp_path / "data"
    data.mkdir()  # optimize opens a data folder, it does not make one
    assert subprocess.run([sys.executable, "-m", "hippograph.cli", "optimize", "--data-dir", str(data)],
                          cwd=ROOT, capture_output=True, timeout=120, check=False).returncode == 0  # 384-d
    tokenizer = Tokenizer.from_file(str(_default_tokenizer_path()))
    table = np.random.default_rng(0).standard_normal((tokenizer.get_vocab_size(), 16)).astype(np.float32)
    StaticModel(vectors=table, tokenizer=tokenizer).save_pretrained(tmp_path / "m2v")
    out = run_serve("--data-dir", str(data), env={"HIPPOGRAPH_EMBEDDINGS__BACKEND": "model2vec",
                                                  "HIPPOGRAPH_EMBEDDINGS__MODEL_PATH": str(tmp_path / "m2v")})
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "ConfigurationError" in out.stderr and "384" in out.stderr and "16" in out.stderr
