"""Requests carried out at once (HIPPOGRAPH_CONCURRENT_READS / _WRITES): past the limit a request waits
for a place; reads and writes have places of their own; unset is one per core, 0 no limit."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from hippograph.config import Settings
from hippograph.wiring import _per_core, build


def test_unset_is_one_per_core_and_zero_is_no_limit() -> None:
    assert _per_core(None) == len(os.sched_getaffinity(0)) and _per_core(0) == 0 and _per_core(3) == 3
    settings = Settings.model_validate({"concurrent_reads": 0})
    assert settings.concurrent_reads == 0 and settings.concurrent_writes is None


def test_a_read_past_the_limit_waits_for_a_place_and_writes_have_their_own(tmp_path: Path) -> None:
    service = build(Settings(data_dir=tmp_path, concurrent_reads=1, concurrent_writes=1))  # not opened: no stores
    order: list[str] = []
    holding, release = threading.Event(), threading.Event()

    def first_read() -> None:
        with service.slot("read"):
            order.append("read 1 in")
            holding.set()
            release.wait(10)
            order.append("read 1 out")

    def second_read() -> None:
        with service.slot("read"):
            order.append("read 2 in")

    threads = [threading.Thread(target=first_read)]
    threads[0].start()
    holding.wait(10)
    threads.append(threading.Thread(target=second_read))
    threads[1].start()
    with service.slot("write"):  # a write does not wait for the reads' place
        order.append("write")
    time.sleep(0.2)
    assert order == ["read 1 in", "write"]  # the second read is still waiting
    release.set()
    for t in threads:
        t.join(10)
    assert order == ["read 1 in", "write", "read 1 out", "read 2 in"]


def test_no_limit_lets_every_request_in(tmp_path: Path) -> None:
    service = build(Settings(data_dir=tmp_path, concurrent_reads=0))
    with service.slot("read"), service.slot("read"), service.slot("read"):
        pass
