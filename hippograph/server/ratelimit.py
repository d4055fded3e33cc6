"""Request limits, a token bucket per key in this process: requests per API key (off by default), and
requests with a missing, unknown or revoked key per client address (on by default)."""

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

    def take(self, key: str, what: str = "requests for this API key") -> None:
        """Spend one request of `key`'s; RateLimited when none is left."""
        self._spend(key, what, check_only=False)

    def check(self, key: str, what: str) -> None:
        """RateLimited while `key` has nothing left, without spending (see `spend`)."""
        self._spend(key, what, check_only=True)

    def spend(self, key: str) -> None:
        """Spend one of `key`'s whatever is left (what `check` then refuses)."""
        if self.enabled:
            with self._lock:
                tokens, now = self._refilled(key)
                self._store(key, max(0.0, tokens - 1.0), now)

    def _spend(self, key: str, what: str, check_only: bool) -> None:
        if not self.enabled:
            return
        with self._lock:
            tokens, now = self._refilled(key)
            if tokens < 1.0:
                self._store(key, tokens, now)
                wait = (1.0 - tokens) / self.rate
                raise RateLimited(f"too many {what}: the limit is {self.rate * 60:g} a minute (bursts of "
                                  f"{self.capacity:g}); retry in {wait:.1f} s", retry_after=wait)
            self._store(key, tokens if check_only else tokens - 1.0, now)

    def _refilled(self, key: str) -> tuple[float, float]:
        now = time.monotonic()
        tokens, at = self._buckets.get(key, (self.capacity, now))
        return min(self.capacity, tokens + (now - at) * self.rate), now

    def _store(self, key: str, tokens: float, now: float) -> None:
        self._buckets[key] = (tokens, now)
        if len(self._buckets) > 100_000:  # keys long idle are full again: forget them
            self._buckets = {k: v for k, v in self._buckets.items() if now - v[1] < 3600}
