"""Edge vector store vs qdrant-client's local mode, side by side in one process, plus the embedder.

Measures, at --points points (default 20,000; 384 dims; 10 users; 3 kinds):
  - OnnxMiniLMEmbedder: short sentences per second (batched), and one sentence's latency;
  - upsert throughput in batches of --batch (edge, edge with flush after every write, local mode),
    and single-point upserts (edge), with flush() cost;
  - filtered top-10 latency (user + kinds + since) for hybrid, dense and sparse queries: edge before
    maintain() (exact scan), edge after maintain() (HNSW), local mode;
  - how long maintain() holds the process (GIL) at this size.
Vectors are random unit vectors and texts draw words from a Zipf vocabulary (seeded), so the
numbers measure the stores, not the model. Usage: python bench/vector_stores.py [--points N]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hippograph.models import MemoryKind, VectorRecord
from hippograph.vectors.base import SparseVec, VectorFilter, VectorStore
from hippograph.vectors.edge_store import EdgeVectorStore
from hippograph.vectors.embedders import OnnxMiniLMEmbedder
from hippograph.vectors.lexical import SparseEncoder
from hippograph.vectors.qdrant_store import QdrantVectorStore

DIM = 384
T0 = datetime(2025, 1, 1, tzinfo=UTC)
USERS = [f"user{i}" for i in range(10)]


def workload(n: int, seed: int = 1) -> tuple[list[VectorRecord], list[list[float]], list[SparseVec]]:
    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(3000)]
    weights = [1 / (rank + 1) for rank in range(len(vocabulary))]
    records = []
    for i in range(n):
        words = rng.choices(vocabulary, weights, k=rng.randint(5, 30))
        records.append(
            VectorRecord(
                id=f"item_{i}",
                user_id=rng.choice(USERS),
                kind=rng.choice(list(MemoryKind)),
                text=" ".join(words),
                session_id=f"s{rng.randint(0, 200)}",
                timestamp=T0 + timedelta(minutes=rng.randint(0, 60 * 24 * 90)),
            )
        )
    dense = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    sparse = SparseEncoder().encode_documents([r.text for r in records])
    return records, dense.tolist(), sparse


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def load(store: VectorStore, data: tuple, batch: int) -> float:  # type: ignore[type-arg]
    records, dense, sparse = data
    start = time.perf_counter()
    for i in range(0, len(records), batch):
        store.upsert(records[i : i + batch], dense[i : i + batch], sparse[i : i + batch])
    return len(records) / (time.perf_counter() - start)


def query_latencies(store: VectorStore, queries: list, mode: str) -> list[float]:  # type: ignore[type-arg]
    out = []
    for flt, dense, sparse in queries:
        kwargs = {
            "hybrid": {"dense": dense, "sparse": sparse},
            "dense": {"dense": dense},
            "sparse": {"sparse": sparse},
        }
        out.append(timed(lambda flt=flt, kwargs=kwargs: store.query(flt, 10, **kwargs[mode])) * 1000)
    return out


def p(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2, help="onnxruntime intra-op threads")
    args = parser.parse_args()
    rows: list[tuple[str, str, str, str]] = []  # what, edge, local, edge/local

    print(f"# {args.points} points, {DIM} dims, batch {args.batch}, {os.cpu_count()} CPUs", flush=True)
    embedder = OnnxMiniLMEmbedder(threads=args.threads)
    load_s = timed(embedder.load)
    rng = random.Random(3)
    words = [
        "the",
        "user",
        "said",
        "they",
        "like",
        "coffee",
        "and",
        "will",
        "travel",
        "to",
        "paris",
        "next",
        "week",
        "for",
        "a",
        "meeting",
    ]
    sentences = [" ".join(rng.sample(words, rng.randint(4, 10))) for _ in range(512)]
    embedder.embed(sentences[:32])
    per_s = len(sentences) / timed(lambda: embedder.embed(sentences))
    single_ms = statistics.median(timed(lambda s=s: embedder.embed([s])) for s in sentences[:50]) * 1000
    print(
        f"embedder: load {load_s:.2f} s, {per_s:.0f} short sentences/s batched, {single_ms:.1f} ms one sentence"
    )

    data = workload(args.points)
    print("workload ready", flush=True)
    root = Path(tempfile.mkdtemp(prefix="hippograph-bench-"))
    edge = EdgeVectorStore(root / "edge", DIM)
    local = QdrantVectorStore({"location": ":memory:"}, "bench", DIM)
    edge.open()
    local.open()
    edge_rate, local_rate = load(edge, data, args.batch), load(local, data, args.batch)
    rows.append(
        (
            f"upsert points/s (batches of {args.batch})",
            f"{edge_rate:,.0f}",
            f"{local_rate:,.0f}",
            f"{edge_rate / local_rate:.1f}x",
        )
    )

    synced = EdgeVectorStore(root / "edge-synced", DIM, flush_writes=True)
    synced.open()
    few = tuple(part[: min(2000, args.points)] for part in data)
    synced_rate = load(synced, few, args.batch)
    single = EdgeVectorStore(root / "edge-single", DIM)
    single.open()
    single_rate = load(single, few, 1)
    flush_idle_ms = statistics.median(timed(single.flush) for _ in range(20)) * 1000
    after_write = []
    for i in range(20):
        single.upsert(data[0][i : i + 1], data[1][i : i + 1], data[2][i : i + 1])
        after_write.append(timed(single.flush) * 1000)
    flush_ms = statistics.median(after_write)
    synced_single = load(synced, tuple(part[:300] for part in data), 1)
    rows.append((f"upsert points/s (batches of {args.batch}, flush each)", f"{synced_rate:,.0f}", "-", "-"))
    rows.append(("upsert points/s (one at a time)", f"{single_rate:,.0f}", "-", "-"))
    rows.append(("upsert points/s (one at a time, flush each)", f"{synced_single:,.0f}", "-", "-"))
    rows.append(
        (
            "flush() after a one-point write / with nothing pending, ms",
            f"{flush_ms:.1f} / {flush_idle_ms:.1f}",
            "-",
            "-",
        )
    )
    synced.close()
    single.close()

    qrng = random.Random(9)
    encoder = SparseEncoder()
    records = data[0]
    queries = []
    for _ in range(args.queries):
        flt = VectorFilter(
            user_id=qrng.choice(USERS),
            kinds=[MemoryKind.episode, MemoryKind.note],
            since=T0 + timedelta(days=qrng.randint(0, 45)),
        )
        probe = qrng.choice(records)
        text = " ".join(qrng.sample(probe.text.split(), min(3, len(probe.text.split()))))
        dense = np.random.default_rng(qrng.randint(0, 10**6)).standard_normal(DIM).tolist()
        queries.append((flt, dense, encoder.encode_query(text)))

    for mode in ("hybrid", "dense", "sparse"):
        query_latencies(edge, queries[:5], mode)
        plain = query_latencies(edge, queries, mode)
        loc = query_latencies(local, queries, mode)
        rows.append(
            (
                f"{mode} top-10 filtered, plain, p50/p95 ms",
                f"{p(plain, 50):.2f} / {p(plain, 95):.2f}",
                f"{p(loc, 50):.1f} / {p(loc, 95):.1f}",
                f"{p(loc, 50) / p(plain, 50):.0f}x faster",
            )
        )
    maintain_s = timed(edge.maintain)
    rows.append(("maintain() (HNSW build; GIL held), s", f"{maintain_s:.1f}", "-", "-"))
    for mode in ("hybrid", "dense"):
        indexed = query_latencies(edge, queries, mode)
        rows.append(
            (
                f"{mode} top-10 filtered, after maintain, p50/p95 ms",
                f"{p(indexed, 50):.2f} / {p(indexed, 95):.2f}",
                "-",
                "-",
            )
        )
    edge.close()
    local.close()
    shutil.rmtree(root, ignore_errors=True)

    width = max(len(r[0]) for r in rows)
    print(f"\n{'':{width}}  {'edge':>16}  {'local mode':>16}  edge vs local")
    for what, e, lo, ratio in rows:
        print(f"{what:{width}}  {e:>16}  {lo:>16}  {ratio}")


if __name__ == "__main__":
    main()
