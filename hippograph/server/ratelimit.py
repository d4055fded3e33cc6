"""Per-key request limits: a token bucket for each API key, in this process (off by default)."""

from __future__ import annotations

import threading
import time

from hippograph.errors import RateLimited


class RateLimiter:
    """`per_minute` requests a minute per key, up to `burst` at once. Each replica limits on its own, so
    behind N replicas a key gets up to N times the rate."""

    def __init__(self, per_minute: float, burst: int = 0) -> None:
        self.rate = per_minute / 60.0
        self.capacity = float(burst or max(1, round(per_minute)))
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, at)
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.rate > 0

    def take(self, key: str) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        with self._lock:
            tokens, at = self._buckets.get(key, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - at) * self.rate)
            if tokens < 1.0:
                self._buckets[key] = (tokens, now)
                wait = (1.0 - tokens) / self.rate
                raise RateLimited(f"too many requests for this API key: the limit is {self.rate * 60:g} a minute "
                                  f"(bursts of {self.capacity:g}); retry in {wait:.1f} s", retry_after=wait)
            self._buckets[key] = (tokens - 1.0, now)
            if len(self._buckets) > 100_000:  # keys long idle are full again: forget them
                self._buckets = {k: v for k, v in self._buckets.items() if now - v[1] < 3600}
