"""The `hippograph` command: serve, ingest, query, optimize, bench."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from pydantic import ValidationError

from hippograph.config import Settings
from hippograph.errors import HippographError, InvalidInput
from hippograph.service import Hippograph


def _settings(args: argparse.Namespace) -> Settings:
    data_dir = getattr(args, "data_dir", None)
    return Settings(data_dir=Path(data_dir)) if data_dir else Settings()


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from hippograph.server.app import create_app

    settings = _settings(args)
    host, port = args.host or settings.host, args.port or settings.port
    print(f"Hippograph: opening the stores in {settings.data_dir.resolve()} ...", file=sys.stderr)
    service = _open(args)  # fails here, with a clear message and exit code 2, if a store cannot open
    print(f"Hippograph on http://{host}:{port} (API docs at /docs)", file=sys.stderr)
    uvicorn.run(create_app(settings, service=service), host=host, port=port, log_level=args.log_level)
    return 0


def _open(args: argparse.Namespace) -> Hippograph:
    from hippograph.wiring import build

    service = build(_settings(args))
    try:
        service.open()
    except HippographError:
        service.close()
        raise
    return service


def cmd_ingest(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from hippograph.datasets import load_batches

    batches = load_batches(Path(args.file))
    if args.user:
        for b in batches:
            b.user_id = args.user
    total = sum(len(b.messages) + len(b.documents) for b in batches)
    stored = dup = notes = 0
    if args.url:
        import httpx

        with httpx.Client(base_url=args.url, timeout=600) as client, tqdm(total=total, unit="msg") as bar:
            for b in batches:
                body = {"user_id": b.user_id, "session_id": b.session_id, "agent_id": b.agent_id,
                        "messages": [m.model_dump(mode="json", exclude_none=True) for m in b.messages],
                        "documents": [d.model_dump(mode="json", exclude_none=True) for d in b.documents],
                        "metadata": b.metadata}
                resp = client.post("/v1/memories", json=body)
                if resp.status_code != 200:
                    print(f"error {resp.status_code}: {resp.text}", file=sys.stderr)
                    return 1
                out = resp.json()
                stored, dup, notes = stored + len(out["stored"]), dup + len(out["duplicates"]), notes + len(out["notes"])
                bar.update(len(b.messages) + len(b.documents))
    else:
        service = _open(args)
        try:
            with tqdm(total=total, unit="msg") as bar:
                for b in batches:
                    res = service.remember(b.user_id, b.session_id, b.agent_id, b.messages, b.documents, b.metadata)
                    stored, dup, notes = stored + len(res.stored), dup + len(res.duplicates), notes + len(res.notes)
                    bar.update(len(b.messages) + len(b.documents))
        finally:
            service.close()
    users = sorted({b.user_id for b in batches})
    print(f"stored {stored} episodes ({dup} already there), {notes} notes, users: {', '.join(users)}")
    return 0


def cmd_query(args: argparse.Namespace) -> int:
    service = _open(args)
    try:
        result = service.context(args.user, args.query, args.session, args.budget)
    finally:
        service.close()
    if args.json:
        print(result.model_dump_json(indent=2))
    else:
        print(result.context)
        print(f"\n-- plan: {result.plan['name']} ({result.plan['reason']}); {result.tokens} tokens", file=sys.stderr)
    return 0


def cmd_optimize(args: argparse.Namespace) -> int:
    service = _open(args)
    try:
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

        if args.budget < 1:
            raise InvalidInput(f"--budget must be a positive number of tokens, got {args.budget}")
        methods = tuple(args.methods.split(",")) if args.methods else locomo.METHODS
        unknown = [m for m in methods if m not in locomo.METHODS]
        if unknown:
            raise InvalidInput(f"--methods: unknown {', '.join(unknown)}; choose from {', '.join(locomo.METHODS)}")
        locomo.run(Path(args.data), args.budget, _out(args), workdir, args.conversations, methods, args.ablate)
    elif args.bench == "multihop":
        from hippograph.bench import multihop

        multihop.run(args.dataset, Path(args.questions), Path(args.corpus), _out(args), workdir, args.limit,
                     args.ablate)
    else:
        from hippograph.bench import scale

        sizes = [int(x) for x in str(args.memories).split(",") if x.strip()]
        scale.run(sizes, args.seed, _out(args), workdir, args.queries)
    return 0


def _out(args: argparse.Namespace) -> Path | None:
    return Path(args.out) if args.out else None


def _bench_parser(sub: argparse._SubParsersAction) -> None:
    b = sub.add_parser("bench", help="retrieval and scale benchmarks, with baselines in the same run")
    bs = b.add_subparsers(dest="bench", required=True)
    lo = bs.add_parser("locomo", help="evidence recall per LoCoMo category within a token budget")
    lo.add_argument("--data", required=True, help="a LoCoMo JSON file (list of samples)")
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
    for parser in (lo, mh):
        parser.add_argument("--ablate", action="store_true",
                            help="also run Hippograph with each retrieval route switched off, one at a time")
    for parser in (lo, mh, sc):
        parser.add_argument("--extractor", choices=["spacy", "llm"],
                            help="extract with spaCy or with the LLM of HIPPOGRAPH_LLM__* (default: the configured one)")
        parser.add_argument("--out", help="write the JSON report here")
        parser.add_argument("--workdir", help="keep the stores here (reused by a later run) instead of a temp dir")
    b.set_defaults(func=cmd_bench)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hippograph", description="Memory server for LLM agents.")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="run the HTTP API (embedded stores by default)")
    s.add_argument("--host")
    s.add_argument("--port", type=int)
    s.add_argument("--data-dir", help="where the embedded stores keep their files (HIPPOGRAPH_DATA_DIR)")
    s.add_argument("--log-level", default="info")
    s.set_defaults(func=cmd_serve)
    i = sub.add_parser("ingest", help="ingest a JSON file of conversations (our format or LoCoMo's)")
    i.add_argument("file")
    i.add_argument("--user", help="store everything under this user id")
    i.add_argument("--url", help="post to a running server instead of opening the data dir")
    i.add_argument("--data-dir")
    i.set_defaults(func=cmd_ingest)
    q = sub.add_parser("query", help="print the context block for a question")
    q.add_argument("query")
    q.add_argument("--user", required=True)
    q.add_argument("--session")
    q.add_argument("--budget", type=int)
    q.add_argument("--json", action="store_true", help="the whole response: sections, items, plan")
    q.add_argument("--data-dir")
    q.set_defaults(func=cmd_query)
    o = sub.add_parser("optimize", help="build the vector index (HNSW) and compact what was deleted out of the "
                                         "files, offline, with the server stopped")
    o.add_argument("--data-dir")
    o.set_defaults(func=cmd_optimize)
    _bench_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
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
