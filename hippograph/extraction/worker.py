"""The spaCy extractor in a process of its own.

spaCy's parse and the extraction rules are Python and Cython that hold the interpreter lock: in the
server's process they take turns with every request thread (the planner, the store steps), so on a
few cores a write's extraction waits on reads and the second core idles. In a child process the parse
runs on its own core while the server embeds, stores and answers reads.

Extraction is a function of the episodes alone (nothing of the stores is read), so the child holds no
state but the model: one child per process and model, shared by every service of the process, started
on first use. A child that dies (killed, out of memory) fails the calls it had as `BackendUnavailable`:
the ingestor keeps their episodes pending (stored, acknowledged) and a new child takes the next call.
The child is `python -m hippograph.extraction.worker` talking over its stdin and stdout (pickled
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

from hippograph.errors import BackendUnavailable
from hippograph.extraction.base import Extraction
from hippograph.extraction.spacy_extractor import SpacyExtractor
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


class _Child:
    """One child process and its pipes; one call at a time (it has one thread)."""

    def __init__(self, model: str, batch_size: int, max_chars: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hippograph.extraction.worker", model, str(batch_size), str(max_chars)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None)
        self.lock = threading.Lock()

    def call(self, request: tuple) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with self.lock:
            try:
                _send(self.proc.stdin, request)
                ok, value = _receive(self.proc.stdout)
            except (EOFError, OSError) as exc:
                code = self.proc.poll()
                raise BackendUnavailable(
                    f"the extraction process stopped ({'exit code ' + str(code) if code is not None else exc}); "
                    "what it was extracting stays pending and is extracted again") from exc
        if not ok:
            raise value
        return value

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()  # the child sees end of input and exits
            except OSError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class _Children:
    """One child per (model, batch size, max chars), shared by the process's extractors."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._children: dict[tuple[str, int, int], _Child] = {}
        atexit.register(self.shutdown)

    def get(self, key: tuple[str, int, int]) -> _Child:
        with self._lock:
            child = self._children.get(key)
            if child is None or not child.alive:  # a dead one is replaced by the next call
                child = self._children[key] = _Child(*key)
            return child

    def shutdown(self) -> None:
        with self._lock:
            children, self._children = list(self._children.values()), {}
        for child in children:
            child.stop()


_CHILDREN = _Children()


class ProcessExtractor:
    """`SpacyExtractor` whose `extract` runs in a child process. `phrases` (a question's noun chunks,
    for the graph route) stays in this process: it is one short text, and a read."""

    name = "spacy"

    def __init__(self, model: str, batch_size: int = 128, max_chars: int = 100_000) -> None:
        self._key = (model, batch_size, max_chars)
        self._here = SpacyExtractor(model, batch_size, max_chars)  # loaded only if phrases are asked for
        self.phrases = self._here.phrases

    def load(self) -> object:
        """Start the child (if this process has none for the model yet) and wait until its model is read."""
        try:
            return _CHILDREN.get(self._key).call(("ready",))
        except BackendUnavailable:
            self._here.load()  # the model cannot be read (not installed ...): the same error as in process
            raise

    def extract(self, episodes: Sequence[Episode], user_name: str | None = None) -> Extraction:
        result: Extraction = _CHILDREN.get(self._key).call(("extract", list(episodes), user_name))
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
                _send(answers, (True, extractor.extract(request[1], request[2])))
        except Exception as exc:  # noqa: BLE001 - the parent raises it
            _send(answers, (False, exc))


if __name__ == "__main__":
    main(sys.argv[1:])
