"""How late a keeper's heartbeat gets under verbs' registry traffic (issue 22 leftover): the
gaps between the successive renewals of its claim, stamped by the PostgreSQL server, while
the keeper idles, while sessions send it a burst of verbs, and while one verb's registry call
waits on a lock another transaction holds. A beat starts every ``BAY_FLEET_TTL/6``; the fence
closes the keeper's browsers when no renewal got through for two thirds of the TTL, so a
gap's excess over TTL/6 (its lateness) is what a busy keeper spends of that margin.

One real keeper on the tests' PostgreSQL (``browserbay_testing``: a unix socket, fsync off),
no plugin; a persistent profile's browser on it holds the claim. A poller on a connection of
its own reads the claim's ``renewed_at`` every 10 ms and keeps each new stamp (the stamps
are the server's, so the poll's own timing does not enter the gaps).

- ``idle``: nothing but the beat;
- ``burst``: ``--clients`` sessions, each on a kept Python API connection (``SyncClient``),
  send ``get title`` back to back (each verb one registry call, its audit row another);
- ``held``: ``--holds`` times, another connection locks ``attachments`` against writes and a
  ``use`` of a session of A waits on it, in A's registry call, for ``--hold`` seconds (under
  the fence's two thirds of the TTL), then the lock goes.

    .venv/bin/python bench/beat.py [--ttl 6] [--seconds 20] [--clients 8] [--holds 3] [--hold 2]
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

import psycopg

from browserbay.api import SyncClient
from browserbay.paths import bay_paths
from browserbay_testing.fleet import Member, keeper_fleet
from browserbay_testing.pages import serve_pages
from browserbay_testing.postgres import pg_server


class Stamps:
    """The claim's renewal stamps (server clock), polled on a connection of their own."""

    def __init__(self, url: str, profile: str):
        self.url = url
        self.profile = profile
        self.seen: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self._stop.is_set():
                row = conn.execute(
                    "SELECT renewed_at FROM profile_claims WHERE profile=%s", (self.profile,)
                ).fetchone()
                if row is not None and (not self.seen or row[0] != self.seen[-1]):
                    self.seen.append(float(row[0]))
                time.sleep(0.01)

    def mark(self) -> int:
        return len(self.seen)

    def gaps(self, start: int, end: int) -> list[float]:
        """The gaps between the renewals stamped from mark ``start`` to mark ``end`` (the
        gap into the first of them counted: it may have waited in the phase)."""
        window = self.seen[max(0, start - 1) : end]
        return [b - a for a, b in itertools.pairwise(window)]

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


def _burst(home: Path, sessions: list[str], seconds: float) -> int:
    """``get title`` back to back from each session for ``seconds``: the verbs answered."""
    done = [0] * len(sessions)
    end = time.monotonic() + seconds

    def run(i: int, name: str) -> None:
        client = SyncClient(name, home=home, autostart=False)
        try:
            while time.monotonic() < end:
                client.get("title")
                done[i] += 1
        finally:
            client.disconnect()

    threads = [threading.Thread(target=run, args=(i, s)) for i, s in enumerate(sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(done)


def _held(a: Member, url: str, profile: str, hold: float) -> None:
    """One ``use`` of A's held up in its registry call for ``hold`` seconds."""
    with psycopg.connect(url) as locker:
        locker.execute("LOCK TABLE attachments IN EXCLUSIVE MODE")
        verb = threading.Thread(target=lambda: a("use", profile, session="stuck"))
        verb.start()
        time.sleep(hold)
        locker.rollback()
        verb.join()


def _ms(seconds: float) -> str:
    return f"{round(seconds * 1000) + 0} ms"  # (+ 0: no "-0")


def _row(name: str, gaps: list[float], every: float, note: str) -> str:
    """A phase's gaps as a table row: each gap's lateness (over TTL/6; below 0 when the one
    before it was late, as beats are timed from when the last one was sent)."""
    late = [g - every for g in gaps]
    p90 = statistics.quantiles(late, n=10)[8] if len(late) >= 2 else late[0]
    return (
        f"| {name} | {len(gaps)} | {_ms(statistics.median(late))} | {_ms(p90)} "
        f"| {_ms(max(late))} | {note} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ttl", type=float, default=6.0)
    ap.add_argument("--seconds", type=float, default=20.0, help="of idle, and of burst")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--holds", type=int, default=3)
    ap.add_argument("--hold", type=float, default=2.0)
    args = ap.parse_args()
    every = args.ttl / 6
    with (
        tempfile.TemporaryDirectory(prefix="bay-bench-beat-") as tmp,
        pg_server() as server,
        serve_pages({"/": "<!doctype html><title>bench</title><p>beat"}) as site,
        keeper_fleet(server, Path(tmp), 1, ttl=args.ttl, env={"BAY_PLUGIN_MODULES": ""}) as fleet,
    ):
        a = fleet["a"]
        pid = str(a.ok("new", "work", session=None)["id"])
        sessions = [f"s{i}" for i in range(args.clients)]
        for s in ["here", *sessions]:
            a.ok("use", pid, session=s)
            a.ok("open", f"{site}/", session=s)
        stamps = Stamps(fleet.url, pid)
        load = [os.getloadavg()[0]]
        try:
            m0 = stamps.mark()
            time.sleep(args.seconds)
            m1 = stamps.mark()
            verbs = _burst(a.home, sessions, args.seconds)
            m2 = stamps.mark()
            for _ in range(args.holds):
                _held(a, fleet.url, pid, args.hold)
                time.sleep(every * 2)
            time.sleep(every * 1.5)  # the renewal that ends the last hold's gap
            m3 = stamps.mark()
        finally:
            stamps.close()
        load.append(os.getloadavg()[0])
        fenced = "fenced" in bay_paths(a.env).keeper_log.read_text()
        rate = verbs / args.seconds
        print(
            f"TTL {args.ttl:g} s (a beat every {every * 1000:.0f} ms, fence at "
            f"{args.ttl * 2 / 3:g} s); load average {load[0]:.1f} -> {load[1]:.1f}; "
            f"keeper fenced during the run: {'yes' if fenced else 'no'}"
        )
        print("| phase | gaps | lateness median | p90 | max | what ran |")
        print("|---|---|---|---|---|---|")
        print(_row("idle", stamps.gaps(m0, m1), every, f"{args.seconds:g} s"))
        print(
            _row(
                "burst",
                stamps.gaps(m1, m2),
                every,
                f"{args.clients} sessions, {rate:.0f} verbs/s",
            )
        )
        print(
            _row(
                "held",
                stamps.gaps(m2, m3),
                every,
                f"{args.holds} verb calls held {args.hold:g} s each",
            )
        )


if __name__ == "__main__":
    main()
