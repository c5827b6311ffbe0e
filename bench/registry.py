"""Registry operations per second: the SQLite file against PostgreSQL (issue 22), in ONE run,
rep by rep interleaved, reported as a ratio with the load average beside it.

One "verb's worth" of registry traffic is what a page verb of an attached session costs the
keeper: ``sessions.seen``, ``attachments.of_session``, ``sessions.state`` and one audit row.
The fleet's own traffic (issue 22) is measured beside it: a **heartbeat** (``keepers.beat``
and ``claims.renew`` of a keeper holding 8 claims: what every keeper writes each TTL/3), and
a **claim cycle** (``claims.take`` then ``claims.release`` of one profile: a persistent
profile's browser starting and stopping).
PostgreSQL is the tests' own server (``browserbay_testing.postgres``: a unix socket, fsync
off — an upper bound for a real server, which syncs and may be across a network).

    .venv/bin/python bench/registry.py [--reps 20] [--ops 200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from browserbay.registry import KeeperStart, Registry, open_sqlite, sql_registry
from browserbay.registry.pg import PgDatabase
from browserbay_testing.postgres import pg_server


def verbs(reg: Registry, n: int) -> float:
    """Seconds for ``n`` verbs' worth of registry calls."""
    start = time.perf_counter()
    for i in range(n):
        session = f"s{i % 8}"
        reg.sessions.seen(session, "env")
        reg.attachments.of_session(session)
        reg.sessions.state(session)
        reg.audit.record(session, None, "click", True, None, "cli", "owner")
    return time.perf_counter() - start


ME = "kp-0bench00"
TTL = 15.0


def fleet_ready(reg: Registry) -> None:
    """This keeper registered, holding 8 profiles' claims (what a heartbeat renews)."""
    reg.keepers.register(KeeperStart(ME, "bench", None, os.getpid(), "bench"))
    for i in range(8):
        reg.claims.take(f"bp-held{i:04d}", ME, TTL)


def heartbeats(reg: Registry, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        reg.keepers.beat(ME)
        reg.claims.renew(ME)
    return time.perf_counter() - start


def claim_cycles(reg: Registry, n: int) -> float:
    start = time.perf_counter()
    for i in range(n):
        profile = f"bp-c{i % 16:06d}"
        reg.claims.take(profile, ME, TTL)
        reg.claims.release(profile, ME)
    return time.perf_counter() - start


KINDS = {"verb": verbs, "heartbeat": heartbeats, "claim cycle": claim_cycles}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--ops", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, pg_server() as server:
        sqlite = open_sqlite(Path(tmp) / "registry.sqlite3")
        with server.schema_url() as url:
            pg = sql_registry(PgDatabase(url))
            rates: dict[tuple[str, str], list[float]] = {}
            for reg in (sqlite, pg):
                fleet_ready(reg)
            load = [os.getloadavg()[0]]
            for _ in range(args.reps):
                for kind, run in KINDS.items():
                    for name, reg in (("sqlite", sqlite), ("postgresql", pg)):
                        rates.setdefault((kind, name), []).append(args.ops / run(reg, args.ops))
            load.append(os.getloadavg()[0])
            pg.close()
        sqlite.close()
    med = {key: statistics.median(r) for key, r in rates.items()}
    print(f"load average {load[0]:.1f} -> {load[1]:.1f}; {args.reps} reps x {args.ops} ops")
    print("| operation | SQLite file /s | PostgreSQL /s | SQLite / PostgreSQL |")
    print("|---|---|---|---|")
    for kind in KINDS:
        lite, pg_rate = med[(kind, "sqlite")], med[(kind, "postgresql")]
        print(f"| {kind} | {lite:.0f} | {pg_rate:.0f} | {lite / pg_rate:.1f}x |")


if __name__ == "__main__":
    main()
