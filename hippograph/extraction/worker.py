"""The spaCy extractor in processes of their own.

spaCy's parse and the extraction rules are Python and Cython that hold the interpreter lock: in the
server's process they take turns with every request thread (the planner, the store steps), so on a
few cores a write's extraction waits on reads and the second core idles. In a child process the parse
runs on its own core while the server embeds, stores and answers reads.

Extraction is a function of the episodes alone (nothing of the stores is read), so a child holds no
state but the model: a small pool of children per process and model (`processes`, 2 by default),
shared by every service of the process. A call takes an idle child, starts one while the pool has fewer,
or waits its turn (in order), so one slow message holds one child and not every user's writes. Each
message has a time budget in the child (see `bounds`); the parent gives a call its messages' budgets
and a margin, and past that kills the child. A child that dies or is killed (out of memory, past its
time) fails the call it had as `ExtractionStalled` (a `BackendUnavailable`) - the ingestor keeps its
episodes pending (stored, acknowledged) and extracts them again later, one at a time, counting the
attempts of one that fails alone towards its quarantine (`hippograph.failures`) - and is never handed
another call: a new child takes the next one.

A child is `python -m hippograph.extraction.worker` talking over its stdin and stdout (pickled
frames; nothing else can write to them): it exits when its parent does, even after a SIGKILL of the
parent (its stdin closes), and it never imports the parent's main script.
"""

from __future__ import annotations

import atexit
import pickle
import struct
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import IO, Any

from hippograph.errors import BackendUnavailable, ExtractionStalled
from hippograph.extraction.base import Extraction
from hippograph.extraction.spacy_extractor import DEFAULT_BUDGET_SECONDS, SpacyExtractor
from hippograph.models import Episode

_HEADER = struct.Struct(">Q")


def _send(stream: IO[bytes], value: Any) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _receive(stream: IO[bytes]) -> Any:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        raise EOFError("the other side closed the pipe")
    size = _HEADER.unpack(header)[0]
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the other side closed the pipe mid-message")
    return pickle.loads(data)


#: Added to a new child's first call: the time its model takes to load (6 s on a quiet 2-core machine; more than
#: 90 s at a load of 12 with memory short)
LOAD_SECONDS = 120.0


class _Child:
    """One child process and its pipes; one call at a time (it has one thread)."""

    def __init__(self, model: str, batch_size: int, max_chars: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hippograph.extraction.worker", model, str(batch_size), str(max_chars)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None)
        self.loaded = False  # until its first answer, a call waits for the model too
        self.broken = False  # killed, or its pipes in an unknown state: never called again

    def call(self, request: tuple, seconds: float) -> Any:
        """The child's answer to `request`; past `seconds` (and the model's load, on a first call) the
        child is killed and the call fails."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        limit = seconds + (0.0 if self.loaded else LOAD_SECONDS)
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            self.proc.kill()  # the read below ends

        timer = threading.Timer(limit, expire)
        timer.daemon = True
        timer.start()
        try:
            _send(self.proc.stdin, request)
            ok, value = _receive(self.proc.stdout)
        except (EOFError, OSError) as exc:
            self.stop_now()
            # the messages of the call may be what stalled or killed it: their attempts count (`failures`)
            if expired.is_set():
                raise ExtractionStalled(
                    f"the extraction process gave no answer in {limit:g} s (the time its messages may take, and a "
                    "margin) and was stopped; what it was extracting stays pending and is extracted again") from exc
            code = self.proc.returncode
            raise ExtractionStalled(
                f"the extraction process stopped ({'exit code ' + str(code) if code is not None else exc}); "
                "what it was extracting stays pending and is extracted again") from exc
        except BaseException:
            self.stop_now()  # what was written or read of a frame is unknown
            raise
        finally:
            timer.cancel()
        if expired.is_set():  # killed just after it answered
            self.stop_now()
        self.loaded = True
        if not ok:
            raise value
        return value

    @property
    def alive(self) -> bool:
        return not self.broken and self.proc.poll() is None

    def stop_now(self) -> None:
        """Kill the child and reap it."""
        self.broken = True
        self.proc.kill()
        self.proc.wait()

    def stop(self) -> None:
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()  # the child sees end of input and exits
            except OSError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.stop_now()


Key = tuple[str, int, int]  # model, batch size, max chars


class _Pool:
    """Up to `size` children of one key. A call takes an idle child, starts one while there are fewer,
    or waits for one (waiters are served in order); a child that died or was killed is dropped."""

    def __init__(self, key: Key, size: int) -> None:
        self.key, self.size = key, size
        self._turn = threading.Condition()
        self._idle: list[_Child] = []  # the last one back is taken first: it is warm
        self._all: set[_Child] = set()
        self._closed = False
        self._latest: _Child | None = None

    def call(self, request: tuple, seconds: float) -> Any:
        child = self._take()
        try:
            return child.call(request, seconds)
        finally:
            self._give_back(child)

    def warm(self, seconds: float) -> Any:
        """Start the children the pool lacks (they read their models at once) and wait until each is
        ready; the answer of a ready child."""
        with self._turn:
            if self._closed:
                raise BackendUnavailable("the extraction processes are shut down")
            new = [_Child(*self.key) for _ in range(self.size - len(self._all))]
            self._all.update(new)
            self._latest = new[-1] if new else self._latest
        try:
            answers = [child.call(("ready",), seconds) for child in new]
        finally:
            for child in new:
                self._give_back(child)
        return answers[0] if answers else self.call(("ready",), seconds)

    @property
    def proc(self) -> subprocess.Popen[bytes]:
        """The process of the child that took the latest call (or was started last)."""
        with self._turn:
            if self._latest is None:
                raise LookupError("no child has been started yet")
            return self._latest.proc

    def pids(self) -> list[int]:
        """The process ids of the live children."""
        with self._turn:
            return sorted(c.proc.pid for c in self._all if c.alive)

    def busy(self) -> list[int]:
        """The process ids of the live children that are out on a call."""
        with self._turn:
            return sorted(c.proc.pid for c in self._all - set(self._idle) if c.alive)

    def _take(self) -> _Child:
        with self._turn:
            while True:
                if self._closed:
                    raise BackendUnavailable("the extraction processes are shut down")
                while self._idle:
                    child = self._idle.pop()
                    if child.alive:
                        self._latest = child
                        return child
                    self._all.discard(child)  # died while idle (killed from outside)
                    child.stop_now()
                if len(self._all) < self.size:
                    child = self._latest = _Child(*self.key)
                    self._all.add(child)
                    return child
                self._turn.wait()

    def _give_back(self, child: _Child) -> None:
        with self._turn:
            if child.alive and not self._closed:
                self._idle.append(child)
            else:
                self._all.discard(child)
                if child.alive:  # shut down while it worked
                    child.stop_now()
            self._turn.notify()

    def shutdown(self) -> None:
        with self._turn:
            self._closed = True
            idle, self._idle = self._idle, []
            self._all.difference_update(idle)
            self._turn.notify_all()
        for child in idle:
            child.stop()


class _Children:
    """One pool of children per key, shared by the process's extractors."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pools: dict[Key, _Pool] = {}
        atexit.register(self.shutdown)

    def get(self, key: Key, size: int = 2) -> _Pool:
        with self._lock:
            pool = self._pools.get(key)
            if pool is None:
                pool = self._pools[key] = _Pool(key, size)
            pool.size = max(pool.size, size)
            return pool

    def close(self, key: Key) -> None:
        """Stop the pool of `key`; a later call starts a new one."""
        with self._lock:
            pool = self._pools.pop(key, None)
        if pool is not None:
            pool.shutdown()

    def shutdown(self) -> None:
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            pool.shutdown()


_CHILDREN = _Children()


class ProcessExtractor:
    """`SpacyExtractor` whose `extract` runs in a pool of child processes. `phrases` (a question's noun
    chunks, for the graph route) stays in this process: it is one short text, and a read.

    `budget_seconds`: what one message may take in the child (see `SpacyExtractor`); `processes`: the
    children that extract at once; a call fails (`BackendUnavailable`) when its child has not answered
    after its messages' budgets and `timeout_margin_seconds`."""

    name = "spacy"

    def __init__(self, model: str, batch_size: int = 128, max_chars: int = 100_000,
                 budget_seconds: float = DEFAULT_BUDGET_SECONDS, processes: int = 2,
                 timeout_margin_seconds: float = 30.0) -> None:
        if processes < 1:
            raise ValueError(f"processes must be at least 1, not {processes}")
        self._key = (model, batch_size, max_chars)
        self.budget_seconds, self.processes = budget_seconds, processes
        self.timeout_margin_seconds = timeout_margin_seconds
        self._here = SpacyExtractor(model, batch_size, max_chars, budget_seconds)  # loaded only for phrases
        self.phrases = self._here.phrases

    @property
    def pool(self) -> _Pool:
        return _CHILDREN.get(self._key, self.processes)

    def load(self) -> object:
        """Start the children (those this process has not yet for the model) and wait until they have
        read their model, so that the first writes do not wait for it."""
        try:
            return self.pool.warm(self.timeout_margin_seconds)
        except BackendUnavailable:
            self._here.load()  # the model cannot be read (not installed ...): the same error as in process
            raise

    def extract(self, episodes: Sequence[Episode], user_name: str | None = None) -> Extraction:
        episodes = list(episodes)
        seconds = self.budget_seconds * len(episodes) + self.timeout_margin_seconds
        result: Extraction = self.pool.call(("extract", episodes, user_name, self.budget_seconds), seconds)
        return result


def main(argv: list[str]) -> None:
    """The child: read requests from stdin, answer on stdout, until stdin closes."""
    model, batch_size, max_chars = argv[0], int(argv[1]), int(argv[2])
    requests, answers = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # anything printed goes to the log, not into the answers
    extractor = SpacyExtractor(model, batch_size, max_chars)
    loaded: BaseException | None = None
    try:
        extractor.load()
    except Exception as exc:  # noqa: BLE001 - reported to the parent at its first call
        loaded = exc
    while True:
        try:
            request = _receive(requests)
        except EOFError:
            return
        try:
            if loaded is not None:
                raise loaded
            if request[0] == "ready":
                _send(answers, (True, extractor.name))
            else:
                _send(answers, (True, extractor.extract(request[1], request[2], budget_seconds=request[3])))
        except Exception as exc:  # noqa: BLE001 - the parent raises it
            _send(answers, (False, exc))


if __name__ == "__main__":
    main(sys.argv[1:])
