"""Every upsert the edge store acknowledged survives a SIGKILL of the process that made it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hippograph.vectors.base import VectorFilter
from hippograph.vectors.edge_store import EdgeVectorStore
from hippograph.vectors.lexical import SparseEncoder

ROOT = Path(__file__).resolve().parents[2]

WRITER = """
import sys
from datetime import UTC, datetime
from pathlib import Path

from hippograph.models import MemoryKind, VectorRecord
from hippograph.vectors.edge_store import EdgeVectorStore
from hippograph.vectors.lexical import SparseEncoder

path, batch = Path(sys.argv[1]), int(sys.argv[2])
store = EdgeVectorStore(path, 4)
store.open()
lexical = SparseEncoder()
n = 0
while True:
    records = [
        VectorRecord(id=f"ep_{i}", user_id="u1", kind=MemoryKind.episode, text=f"message number {i}",
                     timestamp=datetime.now(UTC))
        for i in range(n, n + batch)
    ]
    dense = [[1.0, float(i % 7), float(i % 3), 0.5] for i in range(n, n + batch)]
    store.upsert(records, dense, lexical.encode_documents([r.text for r in records]))
    n += batch
    print("acked", n, flush=True)
"""


@pytest.mark.parametrize("batch", [1, 25])
def test_acked_upserts_survive_sigkill(tmp_path: Path, batch: int) -> None:
    path = tmp_path / "edge"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), str(batch)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    acked = 0
    first_ack: float | None = None
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if not line.startswith("acked "):
                continue
            acked = int(line.split()[1])
            first_ack = first_ack or time.monotonic()
            # Kill mid-stream: after a good number of acks, or a short while of writing.
            if acked >= 3000 or time.monotonic() - first_ack > 0.5:
                break
    finally:
        proc.send_signal(signal.SIGKILL)
        _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL, stderr
    assert acked >= 50, f"the writer acknowledged only {acked} points: {stderr}"

    store = EdgeVectorStore(path, 4)
    store.open()
    try:
        wanted = [f"ep_{i}" for i in range(acked)]
        assert store.has(wanted) == set(wanted)
        assert store.count() >= acked  # the writer may have applied more than it printed
        last = store.get([f"ep_{acked - 1}"])
        assert [h.text for h in last] == [f"message number {acked - 1}"]
        query = SparseEncoder().encode_query(f"number {acked - 1}")
        hits = store.query(VectorFilter(user_id="u1"), 3, sparse=query)
        assert hits and hits[0].id == f"ep_{acked - 1}"
    finally:
        store.close()
