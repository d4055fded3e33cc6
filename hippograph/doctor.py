"""`hippograph doctor`: what in the system of record needs an operator, read from the graph store alone
(so it runs beside a server on the same data folder, or against the Neo4j the server uses): messages
quarantined after failing too often (`hippograph.failures`), how many wait for extraction, and
whether requests need a key. `--release` puts quarantined messages back in line for the sweep.

Exit code 0 when nothing needs attention, 1 when messages are quarantined, 2 when the store cannot be
read."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from hippograph.graph.base import GraphStore
from hippograph.models import Episode

PENDING_SHOWN = 10_000  # counted up to this many


def report(graph: GraphStore) -> dict[str, Any]:
    quarantined = graph.quarantined_episodes(10_000)
    owners = graph.owners(list({e.user_id for e in quarantined}))
    pending = len(graph.pending_episodes(PENDING_SHOWN))
    return {
        "keys": "required (a key was made once: the server never runs open again)" if graph.has_keys()
        else "none made yet (a loopback server runs open)",
        "pending": f"{pending}+" if pending >= PENDING_SHOWN else pending,
        "quarantined": [_row(e, owners) for e in quarantined],
    }


def _row(e: Episode, owners: dict[str, tuple[str, str]]) -> dict[str, Any]:
    tenant, user = owners.get(e.user_id, ("", e.user_id))
    return {"tenant": tenant, "user_id": user, "memory_id": e.client_id or e.id, "attempts": e.attempts,
            "failure": e.failure, "quarantined_at": e.quarantined_at.isoformat() if e.quarantined_at else None}


def release(graph: GraphStore, which: list[str]) -> list[str]:
    """Release quarantined messages: all, or those named `TENANT/USER/MEMORY_ID` (or `USER/MEMORY_ID` of
    the default tenant); returns the names released."""
    found = graph.quarantined_episodes(10_000)
    owners = graph.owners(list({e.user_id for e in found}))
    done: list[str] = []
    for e in found:
        tenant, user = owners.get(e.user_id, ("", e.user_id))
        name = f"{tenant}/{user}/{e.client_id or e.id}"
        wanted = not which or name in which or name.removeprefix("default/") in which
        if wanted and graph.release_episodes(e.user_id, [e.id]):
            done.append(name)
    return done


def command(open_graph: Callable[[argparse.Namespace], GraphStore]) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        graph = open_graph(args)
        try:
            if args.release is not None:
                done = release(graph, args.release)
                print(json.dumps({"released": done}) if args.json else
                      "\n".join([f"released {n}: the server's next sweep processes it again" for n in done]
                                or ["nothing quarantined matched"]))
                return 0
            found = report(graph)
        finally:
            graph.close()
        if args.json:
            print(json.dumps(found))
        else:
            print(f"keys: {found['keys']}")
            print(f"waiting for extraction: {found['pending']}")
            print(f"quarantined: {len(found['quarantined'])}")
            for q in found["quarantined"]:
                print(f"  {q['tenant'] or '-'}/{q['user_id']}/{q['memory_id']}  {q['attempts']} attempts, since "
                      f"{q['quarantined_at']}: {q['failure']}")
            if found["quarantined"]:
                print("  (kept, not searchable; `hippograph doctor --release` tries them again, "
                      "DELETE /v1/users/{user}/memories/{id} removes one)")
        return 1 if found["quarantined"] else 0
    return run


def add_parser(sub: Any, open_graph: Callable[[argparse.Namespace], GraphStore]) -> None:
    d = sub.add_parser("doctor", help="what needs an operator: quarantined messages, extraction backlog, keys")
    d.add_argument("--data-dir", help="the embedded store's folder (or configure Neo4j: HIPPOGRAPH_GRAPH__*)")
    d.add_argument("--json", action="store_true")
    d.add_argument("--release", nargs="*", metavar="TENANT/USER/ID",
                   help="put quarantined messages back in line (all of them, or those named)")
    d.set_defaults(func=command(open_graph))
