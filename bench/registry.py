"""Registry operations per second: the SQLite file against PostgreSQL (issue 22), in ONE run,
rep by rep interleaved, reported as a ratio with the load average beside it.

One "verb's worth" of registry traffic is what a page verb of an attached session costs the
keeper: ``sessions.seen``, ``attachments.of_session``, ``sessions.state`` and one audit row.
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

from browserbay.registry import Registry, open_sqlite, sql_registry
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--ops", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, pg_server() as server:
        sqlite = open_sqlite(Path(tmp) / "registry.sqlite3")
        with server.schema_url() as url:
            pg = sql_registry(PgDatabase(url))
            rates: dict[str, list[float]] = {"sqlite": [], "postgresql": []}
            load = [os.getloadavg()[0]]
            for _ in range(args.reps):
                for name, reg in (("sqlite", sqlite), ("postgresql", pg)):
                    rates[name].append(args.ops / verbs(reg, args.ops))
            load.append(os.getloadavg()[0])
            pg.close()
        sqlite.close()
    med = {name: statistics.median(r) for name, r in rates.items()}
    print(f"load average {load[0]:.1f} -> {load[1]:.1f}; {args.reps} reps x {args.ops} verbs")
    for name, rate in med.items():
        print(f"  {name:<10} {rate:8.0f} verbs/s  ({4 * rate:8.0f} registry calls/s)")
    print(f"  sqlite / postgresql: {med['sqlite'] / med['postgresql']:.1f}x")


if __name__ == "__main__":
    main()
