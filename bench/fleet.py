"""A forwarded verb's extra latency (issue 22, item 3; goal <= 2 ms on loopback): the same
verb (``get title``) on the same persistent profile's browser, asked of keeper A directly
(a session of A) and of keeper B (a session of B, forwarded to A over the fleet link), in ONE
run, rep by rep interleaved, with the load average beside the figures.

Two real keepers on one PostgreSQL schema (the tests' own server, ``browserbay_testing``:
a unix socket, fsync off), each with its own home and link on 127.0.0.1, one secret. Each
session keeps one Python API connection (``SyncClient``), so what is timed is the keeper's
answer, not a CLI process's start; B keeps its link connection to A, so what the difference
shows is one more round trip (B's request path, TLS on loopback, A's framing) per verb.

    .venv/bin/python bench/fleet.py [--reps 300] [--warm 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from browserbay.api import SyncClient
from browserbay_testing.fleet import linked_fleet
from browserbay_testing.pages import serve_pages
from browserbay_testing.postgres import pg_server


def _ms(samples: list[float]) -> tuple[float, float, float]:
    qs = statistics.quantiles(samples, n=20)
    return qs[4] * 1000, statistics.median(samples) * 1000, qs[17] * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--warm", type=int, default=20)
    args = ap.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="bay-bench-fleet-") as tmp,
        pg_server() as server,
        serve_pages({"/": "<!doctype html><title>bench</title><p>fleet"}) as site,
        linked_fleet(server, Path(tmp)) as fleet,
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
        direct.disconnect()
        forwarded.disconnect()
    p25d, medd, p90d = _ms(times["direct"])
    p25f, medf, p90f = _ms(times["forwarded"])
    extra = [f - d for f, d in zip(times["forwarded"], times["direct"], strict=True)]
    p25e, mede, p90e = _ms(extra)
    print(f"load average {load[0]:.1f} -> {load[1]:.1f}; {args.reps} reps interleaved")
    print(f"  direct on A      p25 {p25d:6.2f}  median {medd:6.2f}  p90 {p90d:6.2f} ms")
    print(f"  from B, via link p25 {p25f:6.2f}  median {medf:6.2f}  p90 {p90f:6.2f} ms")
    print(f"  extra per verb   p25 {p25e:6.2f}  median {mede:6.2f}  p90 {p90e:6.2f} ms")
    print(f"  forwarded / direct (medians): {medf / medd:.2f}x")


if __name__ == "__main__":
    main()
