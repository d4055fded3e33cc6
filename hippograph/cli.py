"""The `hippograph` command: serve, ingest, query, optimize, bench, llm serve."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from hippograph.auth import DEFAULT_TENANT
from hippograph.config import Settings
from hippograph.errors import HippographError, InvalidInput

if TYPE_CHECKING:  # the rest is imported where a command needs it: `--help` loads no server
    from hippograph.datasets import Batch
    from hippograph.graph.base import GraphStore
    from hippograph.service import Hippograph


DATA_DIR_HELP = "the folder of the embedded stores (default: HIPPOGRAPH_DATA_DIR, ./hippograph-data)"


class CommandError(Exception):
    """What keeps a command from doing its work, said in one line on stderr (exit code 2)."""


def _settings(args: argparse.Namespace) -> Settings:
    given: dict[str, object] = {}
    if getattr(args, "data_dir", None):
        given["data_dir"] = Path(args.data_dir)
    if getattr(args, "host", None):
        given["host"] = args.host
    return Settings(**given)  # type: ignore[arg-type]


NO_KEY = ("hippograph: refusing to listen on {host} without an API key: create one with `hippograph keys create "
          "--tenant T --scopes read,write,admin` (or set HIPPOGRAPH_AUTH__BOOTSTRAP_KEY), or set "
          "HIPPOGRAPH_AUTH__DISABLED=true on purpose")


LOG_LEVELS = ("critical", "error", "warning", "info", "debug")


def _log_to_stderr(level_name: str) -> None:
    """`--log-level` for the whole process, set before anything logs: otherwise the first library to
    configure logging (the MCP SDK does, at INFO) decides. The HTTP client's line per request (to a
    Qdrant server, an LLM endpoint) is shown only at debug."""
    level = getattr(logging, level_name.upper())
    logging.basicConfig(level=level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(level if level <= logging.DEBUG else max(level, logging.WARNING))


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from hippograph.server.app import create_app
    from hippograph.server.deps import is_loopback

    _log_to_stderr(args.log_level)
    settings = _settings(args)
    host, port = settings.host, args.port or settings.port
    _port_free(host, port)  # before anything is opened or made
    auth = settings.auth
    needs_key = not (is_loopback(host) or auth.disabled or auth.bootstrap_key)
    if needs_key and not _keys_exist(settings):  # said before the models load and anything is made
        print(NO_KEY.format(host=host), file=sys.stderr)
        return 2
    print(f"Hippograph: opening {_stores(settings)} ...", file=sys.stderr)
    service = _open(args)  # fails here, with a clear message and exit code 2, if a store cannot open
    if needs_key and not service.graph.has_keys():  # when the store could not be read alone above
        service.close()
        print(NO_KEY.format(host=host), file=sys.stderr)
        return 2
    print(f"Hippograph on http://{host}:{port} (API docs at /docs)", file=sys.stderr)
    uvicorn.run(create_app(settings, service=service), host=host, port=port, log_level=args.log_level)
    return 0


def _keys_exist(settings: Settings) -> bool:
    """Whether the system of record holds a key, read alone (an embedded store not yet made holds none); True
    when it cannot be read here: opening the service then says what is wrong."""
    from hippograph.wiring import build_graph

    if settings.graph.backend == "embedded" and not (settings.data_dir / "graph.sqlite3").is_file():
        return False
    graph = build_graph(settings)
    try:
        graph.open()
        return graph.has_keys()
    except HippographError:
        return True
    finally:
        graph.close()


def _stores(settings: Settings) -> str:
    """Where the stores are, as the start-up line says it."""
    local = f"the data folder {settings.data_dir.resolve()}"
    graph = f"Neo4j at {settings.graph.uri}" if settings.graph.backend == "neo4j" else None
    vectors = f"Qdrant at {settings.vectors.url or settings.vectors.path}" if settings.vectors.backend == "qdrant" \
        else None
    if graph and vectors:
        return f"{graph} and {vectors}"
    return f"{graph or vectors} and {local}" if graph or vectors else f"the stores in {local}"


def _port_free(host: str, port: int) -> None:
    """A port another process listens on is said in one line, before the stores open."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: TIME_WAIT is no obstacle
        try:
            probe.bind((host.strip("[]"), port))
        except OSError as exc:
            raise CommandError(f"cannot listen on {host}:{port}: {exc.strerror or exc} (another server on that "
                               "port? give another with --port)") from exc


def cmd_keys(args: argparse.Namespace) -> int:
    """Create, list and revoke API keys in the system of record (the data dir's graph store, or Neo4j)."""
    from hippograph.auth import parse_scopes
    from hippograph.tenancy import Tenancy
    from hippograph.wiring import build_graph

    if args.keys == "create":  # the first key may come before anything was stored: it makes the store
        graph = build_graph(_settings(args))
        graph.open()
    else:
        graph = _open_graph(args)
    try:
        tenancy = Tenancy(graph)
        if args.keys == "create":
            record, key = tenancy.create_key(args.tenant, parse_scopes(args.scopes), args.name)
            out = {"id": record.id, "key": key, "tenant": record.tenant, "scopes": [s.value for s in record.scopes]}
            if not args.json:
                print(f"API key {record.id} of tenant {record.tenant!r} ({', '.join(out['scopes'])}); it is shown "
                      "only now:", file=sys.stderr)
            print(json.dumps(out) if args.json else key)
        elif args.keys == "list":
            rows = tenancy.list_keys(args.tenant)
            if args.json:
                print(json.dumps([k.model_dump(mode="json") | {"active": k.active} for k in rows]))
            for k in [] if args.json else rows:
                state = "active" if k.active else f"revoked {k.revoked_at:%Y-%m-%d %H:%M}"
                print(f"{k.id}  {k.tenant}  {','.join(k.scopes)}  {k.name or '-'}  {state}")
        else:
            record = tenancy.revoke_key(args.id, force=args.force)
            print(f"revoked {record.id} of tenant {record.tenant!r}")
    finally:
        graph.close()
    return 0


def _open_graph(args: argparse.Namespace) -> GraphStore:
    """The system of record alone (beside a running server too), of a data folder that exists."""
    from hippograph.wiring import build_graph

    settings = _settings(args)
    if settings.graph.backend == "embedded" and not settings.data_dir.is_dir():
        raise CommandError(f"the data folder {settings.data_dir} does not exist: nothing was ever stored there "
                           "(give the server's folder with --data-dir)")
    if settings.graph.backend == "embedded" and not (settings.data_dir / "graph.sqlite3").is_file():
        raise CommandError(f"the data folder {settings.data_dir} holds no Hippograph store "
                           "(give the server's folder with --data-dir)")
    graph = build_graph(settings)
    graph.open()
    return graph


#: the commands that only read a data folder: one that does not exist is a mistake, not an empty store
READ_ONLY = ("query", "forget", "optimize")
#: what to do instead when a server holds the data folder, by command
BUSY = {"serve": "stop it first, or give this server another --data-dir",
        "ingest": "send to it with --url http://HOST:PORT instead", "query": "ask it with --url http://HOST:PORT instead",
        "forget": "stop it first, or forget the user through it (DELETE /v1/users/{id})",
        "optimize": "stop it first"}


def _open(args: argparse.Namespace) -> Hippograph:
    from hippograph.wiring import build

    settings = _settings(args)
    embedded = settings.graph.backend == "embedded" or settings.vectors.backend == "edge"
    if args.command in READ_ONLY and embedded and not settings.data_dir.is_dir():
        raise CommandError(f"the data folder {settings.data_dir} does not exist: nothing was ever stored there "
                           "(give the folder of the server or of `hippograph ingest` with --data-dir)")
    service = build(settings)
    try:
        service.open()
    except HippographError as exc:
        service.close()
        if "in use by another process" in str(exc):  # the vector store's lock on its folder
            raise CommandError(f"the data folder {settings.data_dir} is in use by another process, probably a "
                               f"server running on it: {BUSY[args.command]}") from exc
        raise
    return service


class Remote:
    """A running server, for the commands given --url: each call is one request, and a server that cannot be
    reached or answers an error is a CommandError that says so."""

    def __init__(self, url: str, api_key: str | None) -> None:
        import httpx

        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        try:
            self.client = httpx.Client(base_url=self.url, timeout=600, headers=headers)
        except httpx.InvalidURL as exc:
            raise CommandError(f"--url {url}: {exc}") from exc

    def post(self, path: str, body: dict) -> Any:
        import httpx

        try:
            resp = self.client.post(path, json=body)
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise CommandError(f"cannot reach the server at {self.url}: {exc or type(exc).__name__}") from exc
        if not resp.is_success:
            raise CommandError(f"the server at {self.url} answered POST {path} with {resp.status_code} "
                               f"{resp.reason_phrase}: {_detail(resp.text)}")
        return resp.json()

    def close(self) -> None:
        self.client.close()


def _detail(text: str) -> str:
    """The message of an error response ({"detail": ...}), else its start, on one line."""
    try:
        detail = json.loads(text).get("detail")
    except (ValueError, AttributeError):
        detail = None
    return " ".join(str(detail if detail is not None else text).split())[:500] or "(no message)"


@contextmanager
def _remote(args: argparse.Namespace) -> Iterator[Remote]:
    if args.tenant is not None:
        raise CommandError("--tenant does not go with --url: the server serves the tenant of the API key")
    remote = Remote(args.url, args.api_key)
    try:
        yield remote
    finally:
        remote.close()


def cmd_ingest(args: argparse.Namespace) -> int:
    from hippograph.datasets import load_batches

    try:
        batches = load_batches(Path(args.file))
    except InvalidInput as exc:  # it names the file, and where in it the problem is
        raise CommandError(str(exc)) from exc
    if args.user:
        for b in batches:
            b.user_id = args.user
    if args.url:
        with _remote(args) as remote:
            def post(b: Batch) -> tuple[int, int, int]:
                out = remote.post("/v1/memories", {
                    "user_id": b.user_id, "session_id": b.session_id, "agent_id": b.agent_id,
                    "messages": [m.model_dump(mode="json", exclude_none=True) for m in b.messages],
                    "documents": [d.model_dump(mode="json", exclude_none=True) for d in b.documents],
                    "metadata": b.metadata})
                return len(out["stored"]), len(out["duplicates"]), len(out["notes"])

            stored, dup, notes = _ingest(batches, post)
    else:
        service = _open(args)
        tenant = args.tenant or DEFAULT_TENANT
        try:
            def remember(b: Batch) -> tuple[int, int, int]:
                res = service.remember(service.tenancy.owner(tenant, b.user_id, create=True), b.session_id,
                                       b.agent_id, b.messages, b.documents, b.metadata)
                return len(res.stored), len(res.duplicates), len(res.notes)

            stored, dup, notes = _ingest(batches, remember)
        finally:
            service.close()
    users = sorted({b.user_id for b in batches})
    print(f"stored {stored} episodes ({dup} already there), {notes} notes, users: {', '.join(users)}")
    return 0


def _ingest(batches: list[Batch], remember: Callable[[Batch], tuple[int, int, int]]) -> tuple[int, int, int]:
    """Each batch through `remember` (the service, or a server): stored, duplicate episodes and notes. The
    progress bar shows on a terminal only."""
    from tqdm import tqdm

    totals = [0, 0, 0]
    with tqdm(total=sum(len(b.messages) + len(b.documents) for b in batches), unit="msg", disable=None) as bar:
        for b in batches:
            totals = [t + n for t, n in zip(totals, remember(b), strict=True)]
            bar.update(len(b.messages) + len(b.documents))
    return totals[0], totals[1], totals[2]


def cmd_query(args: argparse.Namespace) -> int:
    if args.url:
        with _remote(args) as remote:
            result = remote.post("/v1/context", {"user_id": args.user, "query": args.query,
                                                 "session_id": args.session, "token_budget": args.budget})
    else:
        service = _open(args)
        try:
            found = service.context(service.tenancy.owner(args.tenant or DEFAULT_TENANT, args.user), args.query,
                                    args.session, args.budget)
        finally:
            service.close()
        result = found.model_dump(mode="json")
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        print(result["context"])
        plan = result["plan"]
        print(f"\n-- plan: {plan['name']} ({plan['reason']}); {result['tokens']} tokens", file=sys.stderr)
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    """Forget a user everywhere, as DELETE /v1/users/{id} does; also for an id stored before the id
    grammar that no URL can address (one with a '/', say)."""
    service = _open(args)
    try:
        service.forget_user(service.tenancy.owner(args.tenant, args.user))
        service.compact(force=True)  # nothing of the user left in the files either
    finally:
        service.close()
    print(f"forgot user {args.user!r} of tenant {args.tenant!r}")
    return 0


def cmd_optimize(args: argparse.Namespace) -> int:
    service = _open(args)
    try:
        service.guard.check("optimizing the vector index", need=service.guard.mapped_bytes())  # rewrites segments
        service.compact(force=True)  # what was deleted leaves the files first
        changed = service.indexer.store.maintain()
    finally:
        service.close()
    print("vector index optimized" if changed else "vector index already optimal")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    workdir = Path(args.workdir) if args.workdir else None
    if args.extractor:  # the benchmarks build their service from the HIPPOGRAPH_* settings
        if args.extractor == "llm" and not Settings().llm.configured:
            raise InvalidInput("--extractor llm needs an endpoint: set HIPPOGRAPH_LLM__BASE_URL, HIPPOGRAPH_LLM__MODEL "
                               "(and HIPPOGRAPH_LLM__API_KEY if it wants one)")
        os.environ["HIPPOGRAPH_EXTRACTION__BACKEND"] = args.extractor
    if args.bench == "locomo":
        from hippograph.bench import locomo
        from hippograph.bench.common import ABLATIONS

        if args.budget < 1:
            raise InvalidInput(f"--budget must be a positive number of tokens, got {args.budget}")
        methods = tuple(args.methods.split(",")) if args.methods else locomo.METHODS
        unknown = [m for m in methods if m not in locomo.METHODS and m not in ABLATIONS]
        if unknown:
            raise InvalidInput(f"--methods: unknown {', '.join(unknown)}; choose from "
                               f"{', '.join([*locomo.METHODS, *ABLATIONS])}")
        locomo.run([Path(d) for d in args.data], args.budget, _out(args), workdir, args.conversations, methods,
                   args.ablate, args.folds)
    elif args.bench == "multihop":
        from hippograph.bench import multihop

        if args.folds == "writers":
            raise InvalidInput("--folds writers is for LoCoMo data; multihop takes a number of folds")
        multihop.run(args.dataset, Path(args.questions), Path(args.corpus), _out(args), workdir, args.limit,
                     args.ablate, args.folds)
    elif args.bench == "extraction":
        from hippograph.bench import extraction

        cases = [Path(x) for x in args.cases.split(",")] if args.cases else sorted(
            extraction.DEFAULT_CASES.glob("*.json"))
        if not cases:
            raise InvalidInput(f"--cases: no case files given, and none in {extraction.DEFAULT_CASES}")
        if args.writers_out:
            if args.baseline or workdir:
                raise InvalidInput("--writers-out makes a service per writer: not with --baseline or --workdir")
            extraction.run_writers_out(cases, _out(args), Path(args.corpus), Path(args.cache) if args.cache else None)
        else:
            extraction.run(cases, _out(args), workdir, Path(args.baseline) if args.baseline else None)
    elif args.bench == "concurrency":
        from hippograph.bench import concurrency

        if args.url and (args.workdir or args.extractor):
            raise InvalidInput("--workdir and --extractor configure the server this command starts: not with --url")
        load = concurrency.Load(args.writers, args.readers, args.users, args.duration,
                                concurrency.parse_range(args.messages), args.seed, wait=not args.no_wait)
        report = concurrency.run(load, args.url, args.api_key, _out(args), workdir)
        return 0 if report["passed"] else 1
    else:
        from hippograph.bench import scale

        sizes = [int(x) for x in str(args.memories).split(",") if x.strip()]
        scale.run(sizes, args.seed, _out(args), workdir, args.queries)
    return 0


def _out(args: argparse.Namespace) -> Path | None:
    return Path(args.out) if args.out else None


def _folds(value: str) -> int | str:
    if value == "writers":
        return value
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a number of folds or 'writers', got {value!r}") from None


def _bench_parser(sub: argparse._SubParsersAction) -> None:
    b = sub.add_parser("bench", help="retrieval and scale benchmarks, with baselines in the same run")
    bs = b.add_subparsers(dest="bench", required=True)
    lo = bs.add_parser("locomo", help="evidence recall per LoCoMo category within a token budget")
    lo.add_argument("--data", required=True, nargs="+",
                    help="LoCoMo JSON files (lists of samples) or folders of them; each file, folder or sub-folder "
                         "is one writer, reported apart (bench/conversations: one per sub-folder)")
    lo.add_argument("--budget", type=int, default=1000, help="tokens per context (default 1000)")
    lo.add_argument("--conversations", type=int, help="only the first N conversations")
    lo.add_argument("--methods", help="comma-separated subset of the methods (default: all)")
    mh = bs.add_parser("multihop", help="passage recall@2/@5 on MuSiQue or HotpotQA (HippoRAG method)")
    mh.add_argument("--dataset", required=True, choices=["musique", "hotpotqa"])
    mh.add_argument("--questions", required=True)
    mh.add_argument("--corpus", required=True)
    mh.add_argument("--limit", type=int, help="only the first N questions")
    sc = bs.add_parser("scale", help="ingest throughput and context latency at growing memory counts")
    sc.add_argument("--memories", default="10000,100000", help="comma-separated sizes (default 10000,100000)")
    sc.add_argument("--seed", type=int, default=7)
    sc.add_argument("--queries", type=int, default=200, help="context queries per size (default 200)")
    cc = bs.add_parser("concurrency", help="the HTTP API under concurrent writers and readers, then an exact "
                                           "read-back of every acknowledged message (exit 1 if one is lost or "
                                           "the server answered a 5xx)")
    cc.add_argument("--writers", type=int, default=2, help="clients posting messages (default 2)")
    cc.add_argument("--readers", type=int, default=2, help="clients asking for context or searching (default 2)")
    cc.add_argument("--users", type=int, default=8, help="users the clients spread over (default 8)")
    cc.add_argument("--duration", type=float, default=60, help="seconds of load (default 60)")
    cc.add_argument("--messages", default="1-3", help="messages per write, N or LO-HI (default 1-3)")
    cc.add_argument("--seed", type=int, default=7)
    cc.add_argument("--no-wait", action="store_true",
                    help='writes are sent with "wait": false (answered once stored); the report adds how long '
                         'after the load every acknowledged message was searchable')
    _url_arguments(cc, "drive a running server instead of starting one on a fresh data folder", "read and write")
    ex = bs.add_parser("extraction", help="precision and recall of the long-term notes on labelled sequences")
    ex.add_argument("--cases", help="comma-separated case files, or folders of the notes corpus (one writer each: "
                                    "bench/notes/w1 ...) (default: bench/extraction/*.json)")
    ex.add_argument("--baseline", help="an earlier report (--out) to print beside this one")
    ex.add_argument("--writers-out", action="store_true",
                    help="score each corpus folder of --cases with the notes judgement trained on the other writers "
                         "(leave-one-writer-out) and with the one trained on all of them (in-writer), with the spread")
    ex.add_argument("--corpus", default="bench/notes", help="with --writers-out: the corpus the judgements are "
                                                            "trained on (default bench/notes)")
    ex.add_argument("--cache", help="with --writers-out: keep the corpus's feature matrix in this folder")
    for parser in (lo, mh):
        parser.add_argument("--ablate", action="store_true",
                            help="also run Hippograph with each retrieval route switched off, one at a time")
        parser.add_argument("--folds", type=_folds, metavar="K",
                            help="also choose the planner's tuned settings on K-1 folds and report them on the "
                                 "K-th (LoCoMo: whole conversations; K >= conversations leaves one out; "
                                 "'writers': leave one writer of --data out)")
    for parser in (lo, mh, sc, cc, ex):
        parser.add_argument("--extractor", choices=["spacy", "llm"],
                            help="extract with spaCy or with the LLM of HIPPOGRAPH_LLM__* (default: the configured one)")
        parser.add_argument("--out", help="write the JSON report here")
        parser.add_argument("--workdir", help="keep the stores here (reused by a later run) instead of a temp dir")
    b.set_defaults(func=cmd_bench)


def _url_arguments(parser: argparse.ArgumentParser, what: str, scope: str) -> None:
    parser.add_argument("--url", help=f"{what}, e.g. http://127.0.0.1:8765")
    parser.add_argument("--api-key", default=os.environ.get("HIPPOGRAPH_API_KEY"),
                        help=f"with --url: a key with the {scope} scope (default: $HIPPOGRAPH_API_KEY)")


def build_parser() -> argparse.ArgumentParser:
    from importlib.metadata import version

    p = argparse.ArgumentParser(prog="hippograph", description="Memory server for LLM agents.")
    p.add_argument("--version", action="version", version=f"hippograph {version('hippograph')}")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="run the HTTP API (embedded stores by default)")
    s.add_argument("--host")
    s.add_argument("--port", type=int)
    s.add_argument("--data-dir", help=DATA_DIR_HELP)
    s.add_argument("--log-level", default="info", choices=LOG_LEVELS,
                   help="what the server logs to stderr (default: info)")
    s.set_defaults(func=cmd_serve)
    i = sub.add_parser("ingest", help="ingest a JSON file of conversations (our format or LoCoMo's)")
    i.add_argument("file")
    i.add_argument("--user", help="store everything under this user id")
    _url_arguments(i, "post to a running server instead of opening the data dir", "write")
    i.add_argument("--data-dir", help=DATA_DIR_HELP)
    i.add_argument("--tenant", help="without --url: the users' tenant (default: default)")
    i.set_defaults(func=cmd_ingest)
    q = sub.add_parser("query", help="print the context block for a question")
    q.add_argument("query")
    q.add_argument("--user", required=True)
    q.add_argument("--session")
    q.add_argument("--budget", type=int, help="the block's token budget in tokens (default: HIPPOGRAPH_CONTEXT__TOKEN_BUDGET)")
    q.add_argument("--json", action="store_true", help="the whole response: sections, items, plan")
    _url_arguments(q, "ask a running server (POST /v1/context) instead of opening the data dir", "read")
    q.add_argument("--data-dir", help=DATA_DIR_HELP)
    q.add_argument("--tenant", help="without --url: the user's tenant (default: default)")
    q.set_defaults(func=cmd_query)
    f = sub.add_parser("forget", help="forget a user everywhere, with the server stopped")
    f.add_argument("--user", required=True)
    f.add_argument("--tenant", default=DEFAULT_TENANT, help="the user's tenant (default: default)")
    f.add_argument("--data-dir", help=DATA_DIR_HELP)
    f.set_defaults(func=cmd_forget)
    o = sub.add_parser("optimize", help="build the vector index (HNSW) and compact what was deleted out of the "
                                         "files, offline, with the server stopped")
    o.add_argument("--data-dir", help=DATA_DIR_HELP)
    o.set_defaults(func=cmd_optimize)
    k = sub.add_parser("keys", help="create, list and revoke API keys")
    ks = k.add_subparsers(dest="keys", required=True)
    kc = ks.add_parser("create", help="a new key; it is printed once and stored only as a hash")
    kc.add_argument("--tenant", required=True)
    kc.add_argument("--scopes", required=True, help="comma-separated: read, write, admin")
    kc.add_argument("--name", help="what the key is for")
    kc.add_argument("--json", action="store_true", help='print {"id", "key", "tenant", "scopes"} as the last line')
    kl = ks.add_parser("list", help="every key (never the keys themselves)")
    kl.add_argument("--tenant", help="only this tenant's")
    kl.add_argument("--json", action="store_true")
    kr = ks.add_parser("revoke", help="revoke a key now")
    kr.add_argument("id")
    kr.add_argument("--force", action="store_true", help="revoke the tenant's last active admin key too")
    for parser in (kc, kl, kr):
        parser.add_argument("--data-dir", help="the embedded store's folder (or configure Neo4j: HIPPOGRAPH_GRAPH__*)")
    k.set_defaults(func=cmd_keys)
    from hippograph.doctor import add_parser as doctor_parser

    doctor_parser(sub, _open_graph)
    _bench_parser(sub)
    from hippograph.llm.serve import add_parser as llm_parser

    llm_parser(sub)
    m = sub.add_parser("mcp", help="an MCP server over stdin/stdout, for desktop agents")
    m.add_argument("--data-dir", help="the data folder to open (nothing else may hold it; else use --url)")
    m.add_argument("--url", help="a running Hippograph server to forward to, instead of a data folder")
    m.add_argument("--api-key", default=os.environ.get("HIPPOGRAPH_API_KEY"),
                   help="with --url: the API key (default: $HIPPOGRAPH_API_KEY)")
    m.set_defaults(func=cmd_mcp)
    return p


def cmd_mcp(args: argparse.Namespace) -> int:
    from hippograph.mcp_server import command

    return command(args)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:  # `hippograph query --json | head`: the reader has had enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so that closing stdout says nothing
        return 0
    except CommandError as exc:
        print(f"hippograph: {exc}", file=sys.stderr)
        return 2
    except HippographError as exc:
        print(f"hippograph: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']} (got {e.get('input')!r})" for e in exc.errors()
        )
        print(f"hippograph: invalid configuration (HIPPOGRAPH_* variables): {problems}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
