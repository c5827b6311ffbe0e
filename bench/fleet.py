"""A forwarded verb's extra latency (issue 22, item 3; goal <= 2 ms on loopback): the same
verb (``get title``) on the same persistent profile's browser, asked of keeper A directly
(a session of A) and of keeper B (a session of B, forwarded to A over the fleet link), in ONE
run, rep by rep interleaved, with the load average beside the figures.

Two real keepers on one PostgreSQL schema (the tests' own server, ``browserbay_testing``:
a unix socket, fsync off), each with its own home and link on 127.0.0.1, one secret. Each
session keeps one Python API connection (``SyncClient``), so what is timed is the keeper's
answer, not a CLI process's start; B keeps its link connection to A, so what the difference
shows is one more round trip (B's request path, TLS on loopback, A's framing) per verb.

The keepers load no plugin (as a keeper does unless its owner installs one): the tests'
``recorder`` plugin, which the fixtures load, appends a JSON line to a file on the keeper's
event loop at every ``bay_before_verb`` and ``bay_after_verb`` (~0.25 ms each under load), and
a forwarded verb pays the after-verb one on both keepers; ``--recorder`` loads it, as the
figures in RESULTS-fleet.md before 2026-12-03 did.

    .venv/bin/python bench/fleet.py [--reps 300] [--warm 20] [--count 100] [--trace N] [--recorder]
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import tempfile
import time
from pathlib import Path

import psycopg

from browserbay.api import SyncClient
from browserbay_testing.fleet import linked_fleet
from browserbay_testing.pages import serve_pages
from browserbay_testing.postgres import PgServer, pg_server


def _ms(samples: list[float]) -> tuple[float, float, float]:
    qs = statistics.quantiles(samples, n=20)
    return qs[4] * 1000, statistics.median(samples) * 1000, qs[17] * 1000


def _xacts(url: str) -> int:
    """Transactions committed or rolled back in the bench's database so far (every registry
    statement outside ``tx``/``atomic`` is its own autocommit transaction, so this counts
    round trips of both keepers, plus this reader's own one statement)."""
    time.sleep(1.2)  # a backend flushes its counters to the shared stats within ~1 s of idling
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database"
            " WHERE datname = current_database()"
        ).fetchone()
    assert row is not None
    return int(row[0])


def _round_trips(url: str, client: SyncClient | None, reps: int) -> tuple[float, float]:
    """Registry transactions per ``reps`` verbs of ``client`` (None: the keepers idling for as
    long), the reader's own connections' two counted out."""
    before = _xacts(url)
    started = time.perf_counter()
    for _ in range(reps):
        if client is not None:
            client.get("title")
    if client is None:
        time.sleep(0.05 * reps)
    took = time.perf_counter() - started
    return (_xacts(url) - before - 2) / reps, took


def _statements(server: PgServer, client: SyncClient, reps: int) -> list[tuple[int, str]]:
    """The registry statements ``reps`` verbs of ``client`` cost (both keepers and the idle
    keepers' own beats in the same window), from the server's log (``log_statement = all``
    for the window only): (count, first 90 characters of the statement), most frequent first."""
    with psycopg.connect(server.url(), autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET log_statement = 'all'")
        conn.execute("SELECT pg_reload_conf()")
        time.sleep(0.5)
        start = server.log.stat().st_size
        for _ in range(reps):
            client.get("title")
        end = server.log.stat().st_size
        conn.execute("ALTER SYSTEM RESET log_statement")
        conn.execute("SELECT pg_reload_conf()")
    with server.log.open("rb") as f:
        f.seek(start)
        text = f.read(end - start).decode("utf-8", "replace")
    seen: collections.Counter[str] = collections.Counter()
    entries: list[list[str]] = []
    for line in text.splitlines():
        if line[:1] in ("\t", " ") and entries:
            entries[-1].append(line)  # a statement's continuation line
        else:
            entries.append([line])
    for entry in entries:
        _, sep, stmt = entry[0].partition("LOG:  ")
        if sep and (stmt.startswith("statement: ") or stmt.startswith("execute ")):
            stmt = stmt.split(": ", 1)[1]
            seen[" ".join(" ".join([stmt, *entry[1:]]).split())[:90]] += 1
    return [(n, stmt) for stmt, n in seen.most_common()]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--warm", type=int, default=20)
    ap.add_argument("--count", type=int, default=100, help="verbs per round-trip count")
    ap.add_argument("--trace", type=int, default=0, help="log the statements of N verbs each")
    ap.add_argument(
        "--recorder", action="store_true", help="keepers with the tests' recorder plugin"
    )
    args = ap.parse_args()
    plugins = {} if args.recorder else {"BAY_PLUGIN_MODULES": ""}
    with (
        tempfile.TemporaryDirectory(prefix="bay-bench-fleet-") as tmp,
        pg_server() as server,
        serve_pages({"/": "<!doctype html><title>bench</title><p>fleet"}) as site,
        linked_fleet(server, Path(tmp), **plugins) as fleet,
    ):
        a, b = fleet["a"], fleet["b"]
        a.start()
        pid = str(a.ok("new", "work", session=None)["id"])
        a.ok("use", pid, session="here")
        a.ok("open", f"{site}/", session="here")
        b.ok("use", pid, session="there")
        b.ok("open", f"{site}/", session="there")
        direct = SyncClient("here", home=a.home, autostart=False)
        forwarded = SyncClient("there", home=b.home, autostart=False)
        times: dict[str, list[float]] = {"direct": [], "forwarded": []}
        load = [os.getloadavg()[0]]
        for rep in range(args.warm + args.reps):
            for name, client in (("direct", direct), ("forwarded", forwarded)):
                started = time.perf_counter()
                client.get("title")
                took = time.perf_counter() - started
                if rep >= args.warm:
                    times[name].append(took)
        load.append(os.getloadavg()[0])
        url = server.url()
        counts = {
            "idle": _round_trips(url, None, args.count),
            "direct": _round_trips(url, direct, args.count),
            "forwarded": _round_trips(url, forwarded, args.count),
        }
        traces = {
            name: _statements(server, client, args.trace)
            for name, client in (("direct", direct), ("forwarded", forwarded))
            if args.trace
        }
        # A's re-check of the forwarded verbs: served from its change channel or read
        # (keeper/standing.py; absent before migration 13).
        standing = a.ok("keeper", "status", session=None).get("standing")
        direct.disconnect()
        forwarded.disconnect()
    p25d, medd, p90d = _ms(times["direct"])
    p25f, medf, p90f = _ms(times["forwarded"])
    extra = [f - d for f, d in zip(times["forwarded"], times["direct"], strict=True)]
    p25e, mede, p90e = _ms(extra)
    print(
        f"load average {load[0]:.1f} -> {load[1]:.1f}; {args.reps} reps interleaved; keepers"
        f" {'with the recorder plugin' if args.recorder else 'without plugins'}"
    )
    print(f"  direct on A      p25 {p25d:6.2f}  median {medd:6.2f}  p90 {p90d:6.2f} ms")
    print(f"  from B, via link p25 {p25f:6.2f}  median {medf:6.2f}  p90 {p90f:6.2f} ms")
    print(f"  extra per verb   p25 {p25e:6.2f}  median {mede:6.2f}  p90 {p90e:6.2f} ms")
    print(f"  forwarded / direct (medians): {medf / medd:.2f}x")
    idle_rate = counts["idle"][0] * args.count / counts["idle"][1]  # transactions per second
    for name in ("direct", "forwarded"):
        per, took = counts[name]
        busy = per - idle_rate * took / args.count
        print(f"  registry transactions per {name} verb (both keepers, idle rate out): {busy:.2f}")
    if standing is not None:
        print(
            f"  A's re-check of forwarded verbs: {standing['served']} served from the change"
            f" channel, {standing['read']} read (channel lost {standing['losses']} time(s))"
        )
    for name, seen in traces.items():
        print(f"  statements logged over {args.trace} {name} verbs (count, statement):")
        for n, stmt in seen:
            print(f"    {n:5d}  {stmt}")


if __name__ == "__main__":
    main()
