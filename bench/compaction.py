"""What forgetting costs in the Qdrant Edge store: the compaction that makes deleted text leave the
files (the sweep runs it after a delete, `hippograph optimize` always), side by side with the
optimizer pass it undoes.

At each --points size (384 dims, random unit vectors, Zipf texts, seeded as in vector_stores.py):
  - filtered hybrid top-10 latency on the optimized store (HNSW built by maintain());
  - one point deleted, then compact(): how long it holds the store (every query and write waits);
  - the same queries after compaction (the rewritten shard has no HNSW index until the next
    maintain(), as after an ingest), and the maintain() that brings it back.
Usage: python bench/compaction.py [--points 20000,100000] [--out bench/results/compaction.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from vector_stores import DIM, USERS, load, p, query_latencies, timed, workload

from hippograph.models import MemoryKind
from hippograph.vectors.base import VectorFilter
from hippograph.vectors.edge_store import EdgeVectorStore
from hippograph.vectors.lexical import SparseEncoder


def queries(n: int, seed: int = 5) -> list:  # type: ignore[type-arg]
    rng = random.Random(seed)
    import numpy as np

    dense = np.random.default_rng(seed).standard_normal((n, DIM)).astype("float32")
    dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    encoder = SparseEncoder()
    sparse = [encoder.encode_query(f"w{rng.randint(0, 50)} w{rng.randint(0, 300)}") for _ in range(n)]
    return [(VectorFilter(user_id=rng.choice(USERS), kinds=[MemoryKind.episode]), d.tolist(), s)
            for d, s in zip(dense, sparse, strict=True)]


def measure(points: int, n_queries: int) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="hg-compaction-"))
    try:
        store = EdgeVectorStore(folder / "vectors", DIM)
        store.open()
        data = workload(points)
        rate = load(store, data, 256)
        qs = queries(n_queries)
        maintain_s = timed(store.maintain)
        query_latencies(store, qs[:5], "hybrid")  # warm
        optimized = query_latencies(store, qs, "hybrid")
        store.delete([data[0][0].id])
        compact_s = timed(store.compact)
        compacted = query_latencies(store, qs, "hybrid")
        rebuild_s = timed(store.maintain)
        rebuilt = query_latencies(store, qs, "hybrid")
        assert store.count() == points - 1
        store.close()
        return {
            "points": points, "load_points_per_s": round(rate), "maintain_s": round(maintain_s, 2),
            "compact_s": round(compact_s, 2), "compact_points_per_s": round((points - 1) / compact_s),
            "query_ms_optimized": {"p50": round(p(optimized, 50), 2), "p95": round(p(optimized, 95), 2)},
            "query_ms_after_compaction": {"p50": round(p(compacted, 50), 2), "p95": round(p(compacted, 95), 2)},
            "query_ms_after_maintain_again": {"p50": round(p(rebuilt, 50), 2), "p95": round(p(rebuilt, 95), 2)},
            "rebuild_maintain_s": round(rebuild_s, 2),
            "p50_ratio_compacted_to_optimized": round(statistics.median(compacted) / statistics.median(optimized), 2),
        }
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", default="20000,100000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--out")
    args = parser.parse_args()
    report = {"command": "python " + " ".join(sys.argv), "cpus": os.cpu_count(), "load_before": os.getloadavg(),
              "sizes": []}
    for n in [int(x) for x in args.points.split(",")]:
        row = measure(n, args.queries)
        print(json.dumps(row), flush=True)
        report["sizes"].append(row)
    report["load_after"] = os.getloadavg()
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
