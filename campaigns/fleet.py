"""The fleet under faults (issue 22): three keepers on one PostgreSQL schema, eight sessions
spread over them driving real pages, SIGKILLs of keepers and of PostgreSQL connections
(``pg_terminate_backend``) at random points.

Setup: a private PostgreSQL server (``browserbay_testing.postgres``), one schema; three
keepers (homes ``a``, ``b``, ``c``: ``BAY_FLEET_HOST=host-<x>``, ``BAY_FLEET_TTL`` short,
``BAY_FLEET_DATA`` one directory all three mount); eight persistent profiles, one per
session, made on ``a`` before ``b`` and ``c`` start (a keeper reads the profiles at its
start). Session ``s<i>`` drives its profile through keeper ``i mod 3``.

Each round every session opens a page of the demo site whose URL carries the session and a
counter (``/?owner=s3&n=17``) and reads the page's URL back *from the page* (``get url``): a
verb that acted on another session's tab shows another owner there — judged at the page,
never by the keeper's word. Between rounds, at random, a keeper is SIGKILLed (its sessions
move to a live keeper, which may serve their profiles once the dead one's claims expired:
the time from the kill to the first verb served elsewhere is the failover time), or a random
PostgreSQL backend of the keepers is terminated. After every kill the registry's tables are
checked for lost or half-applied rows (:func:`registry_problems`). A killed keeper is
started again two rounds later.

The keepers are linked (``BAY_FLEET_LISTEN`` each, one ``BAY_FLEET_SECRET_FILE``). Besides
the eight sessions, ``FORWARDED`` sessions ``f<i>`` use the profile of ``s<i>`` through keeper
``i+1 mod 3``: their verbs are served where that profile's browser runs (forwarded over the
link; the answer's ``profile.host`` says where), and judged at the page as the others — the
same browser serves ``s<i>``'s and ``f<i>``'s tabs.

Exclusive holds across keepers: each round the contenders ``x0..x2`` (one per keeper, each
its own group) run at once ``use held --exclusive --wait`` on one shared profile. A holder
checks the registry's ``holds`` row names it, writes its name into the page's
``localStorage`` (one browser, one origin: every holder's page shares it), waits, and reads it
back: another name there, or an overlap of two holders' intervals (from the grant's answer to
the ``detach`` sent), is a hold with two holders. A waiter refused ``profile_busy`` must be
told the holder. Sometimes a holder keeps its hold past the round: a SIGKILL of its keeper then
leaves the hold to be reclaimed by a waiter on another keeper once the TTL passed.

Run: campaigns/run.sh fleet [--rounds 16] [--seed 1]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from browserbay import client
from browserbay.paths import BayPaths, bay_paths
from browserbay.registry.tabs import PARKED
from browserbay_testing.fleet import free_port, write_secret
from browserbay_testing.postgres import PgServer, pg_server
from campaigns.common import (
    BAY,
    demo_site,
    kill9,
    machine,
    percentiles,
    record,
    table,
    today,
    wait_for,
)

NAMES = ("a", "b", "c")
SESSIONS = 8
FORWARDED = 3
CONTENDERS = 3
#: Long enough for a waiter to outlast a killed holder's keeper (TTL) and the others' holds.
TTL = 4.0
HOLD_WAIT = TTL + 16.0
#: How long a moved session retries its first verb elsewhere before it is a failure.
FAILOVER_LIMIT = TTL + 60.0


@dataclass
class Keeper:
    """One keeper of the fleet: its home and the environment it starts with."""

    name: str
    root: Path
    env: dict[str, str]
    paths: BayPaths = field(init=False)
    pid: int | None = None

    def __post_init__(self) -> None:
        self.paths = bay_paths({"BAY_HOME": str(self.root)})

    def bay(self, *argv: str, session: str = "ops") -> subprocess.CompletedProcess[str]:
        env = {**self.env, "BAY_SESSION": session}
        return subprocess.run(
            [BAY, *argv], capture_output=True, text=True, env=env, timeout=120, check=False
        )

    def start(self) -> None:
        r = self.bay("keeper", "start", "--json")
        end = time.monotonic() + 90
        while True:  # on a loaded machine the first hello may come after the client gave up
            status = json.loads(self.bay("keeper", "status", "--json").stdout or "{}")
            data = status.get("data") or {}
            if data.get("running") is not False and data.get("pid"):
                self.pid = int(data["pid"])
                return
            if time.monotonic() > end:
                raise RuntimeError(f"keeper {self.name} did not start: {r.stdout} {r.stderr}")
            time.sleep(0.5)

    def call(self, session: str, verb: str, group: str = "", **args: Any) -> dict[str, Any]:
        return client.call(
            verb,
            args,
            session={"id": session, "origin": "api"},
            timeout=60,
            paths=self.paths,
            extra={"group": group} if group else None,
        )

    def kill(self) -> None:
        assert self.pid is not None
        kill9(self.pid)
        wait_for(lambda: not Path(f"/proc/{self.pid}").exists(), 30)
        self.pid = None

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.bay("keeper", "stop")


@dataclass
class Figures:
    verbs: int = 0
    ok: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    foreign: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    failovers: list[float] = field(default_factory=list)
    failover_failed: list[str] = field(default_factory=list)
    keeper_kills: int = 0
    backend_kills: int = 0
    backends_killed: int = 0
    checks: int = 0
    judged: int = 0
    """Page reads that showed an owner (a read with none is foreign too: it is no page of ours)."""
    forwarded: int = 0
    """Verbs answered by a browser on another keeper than the one asked (``profile.host``)."""
    holds: int = 0
    hold_checks: int = 0
    two_holders: list[str] = field(default_factory=list)
    busy_named: int = 0
    busy_unnamed: list[str] = field(default_factory=list)
    hold_refused: Counter[str] = field(default_factory=Counter)
    intervals: list[tuple[float, float, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def registry_problems(url: str, data_root: Path, alive: set[str], ttl: float) -> list[str]:
    """Invariants over the fleet's tables that a lost or half-applied write would break."""
    out: list[str] = []
    with psycopg.connect(url, autocommit=True) as conn:
        q = conn.execute
        for s, p, n, lo, hi, states, currents in q(
            "SELECT session, profile, count(*), min(position), max(position), "
            "count(DISTINCT state), sum(current) FROM kept_tabs "
            "GROUP BY session, profile"
        ).fetchall():
            if lo != 0 or hi != n - 1:
                out.append(f"kept tabs of {s}/{p}: positions {lo}..{hi} of {n}")
            if states != 1:
                out.append(f"kept tabs of {s}/{p}: {states} states at once")
            if currents > 1:
                out.append(f"kept tabs of {s}/{p}: {currents} current tabs")
        for (s,) in q(
            "SELECT DISTINCT session FROM attachments WHERE session NOT IN "
            "(SELECT session FROM session_state)"
        ).fetchall():
            out.append(f"attachments of {s} without a session_state row")
        for s, n, distinct in q(
            "SELECT session, count(*), count(DISTINCT position) FROM attachments GROUP BY session"
        ).fetchall():
            if n != distinct:
                out.append(f"attachments of {s}: duplicate positions")
        rows = q("SELECT id, dir, adopted FROM profiles").fetchall()
        profiles = {str(r[0]) for r in rows}
        for pid, directory, adopted in rows:
            where = Path(directory) if Path(directory).is_absolute() else data_root / directory
            if not adopted and not where.is_dir():
                out.append(f"profile {pid} has no directory {where}")
        for table_name in ("profile_claims", "key_homes", "holds", "kept_tabs", "attachments"):
            column = "profile"
            for (p,) in q(
                f"SELECT DISTINCT {column} FROM {table_name} WHERE {column} NOT IN "
                "(SELECT id FROM profiles)"
            ).fetchall():
                if table_name == "kept_tabs" and p.removesuffix(PARKED) in profiles:
                    continue  # a close's tabs, parked for `bay resume`
                out.append(f"{table_name} names a profile that does not exist: {p}")
        for p, keeper, age in q(
            "SELECT profile, keeper_id, extract(epoch FROM clock_timestamp()) - renewed_at "
            "FROM profile_claims WHERE released_at IS NULL"
        ).fetchall():
            if keeper not in alive and float(age) < 0:
                out.append(f"claim of {p} renewed in the future by {keeper}")
        for (k,) in q(
            "SELECT keeper_id FROM profile_claims WHERE released_at IS NULL "
            "GROUP BY keeper_id, profile HAVING count(*) > 1"
        ).fetchall():
            out.append(f"keeper {k} holds one profile twice")
        for bid, keeper in q(
            "SELECT id, keeper_id FROM browsers WHERE stopped_at IS NULL"
        ).fetchall():
            if keeper not in alive and keeper is not None:
                continue  # a dead keeper's rows are swept at its next start
            if keeper is None:
                out.append(f"browser {bid} without a keeper")
    return out


def _backend_kill(server: PgServer, rng: random.Random) -> int:
    """Terminate one random client backend of the keepers (their pools reconnect)."""
    with psycopg.connect(server.url(), autocommit=True) as conn:
        pids = [
            r[0]
            for r in conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' "
                "AND pid <> pg_backend_pid()"
            ).fetchall()
        ]
        if not pids:
            return 0
        chosen = rng.sample(pids, k=max(1, len(pids) // 3))
        for pid in chosen:
            conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
        return len(chosen)


def _drive(k: Keeper, session: str, demo: str, n: int, f: Figures) -> dict[str, Any]:
    """One round of a session: open its own page, read the URL back from the page."""
    url = f"{demo}/?{urllib.parse.urlencode({'owner': session, 'n': n})}"
    frame = k.call(session, "open", url=url)
    f.verbs += 1
    if not frame.get("ok"):
        f.refused[str(frame.get("code"))] += 1
        return frame
    f.ok += 1
    f.forwarded += _elsewhere(k, frame)
    got = k.call(session, "get", what="url")
    f.verbs += 1
    if not got.get("ok"):
        f.refused[str(got.get("code"))] += 1
        return got
    f.ok += 1
    f.forwarded += _elsewhere(k, got)
    seen = urllib.parse.parse_qs(urllib.parse.urlsplit(str(got["data"].get("url", ""))).query)
    owner = (seen.get("owner") or [""])[0]
    f.judged += bool(owner)
    if owner != session:
        f.foreign.append(f"{session} round {n} on {k.name}: the page is {owner}'s")
    return got


def _elsewhere(k: Keeper, frame: dict[str, Any]) -> bool:
    """The answer came from a browser another keeper runs (forwarded over the link)."""
    host = (frame.get("profile") or {}).get("host")
    return bool(host) and host != k.env["BAY_FLEET_HOST"]


@dataclass
class Contender:
    """A session that competes for the exclusive hold through one keeper."""

    session: str
    keeper: Keeper
    holding_since: float | None = None


def _close(f: Figures, c: Contender, at: float) -> None:
    if c.holding_since is not None:
        with f.lock:
            f.intervals.append((c.holding_since, at, f"{c.session}@{c.keeper.name}"))
        c.holding_since = None


def _contend(c: Contender, held: str, url: str, demo: str, n: int, keep: bool, f: Figures) -> None:
    """One turn: release a hold kept from an earlier round, then ``use --exclusive --wait``;
    as holder, check the ``holds`` row and the page's ``localStorage``, then detach (or keep)."""
    k, s, g = c.keeper, c.session, f"g-{c.session}"
    if k.pid is None:
        return
    if c.holding_since is not None:
        _close(f, c, time.monotonic())
        k.call(s, "detach", group=g)
    got = k.call(s, "use", group=g, profile=held, exclusive=True, wait=HOLD_WAIT)
    if not got.get("ok"):
        code = str(got.get("code"))
        with f.lock:
            if code == "profile_busy":
                holder = (got.get("data") or {}).get("holder")
                if holder and holder != s:
                    f.busy_named += 1
                else:
                    f.busy_unnamed.append(f"{s} round {n}: holder {holder!r}")
            else:
                f.hold_refused[code] += 1
        return
    c.holding_since = time.monotonic()
    with f.lock:
        f.holds += 1
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute("SELECT holder FROM holds WHERE profile = %s", (held,)).fetchall()
    if rows != [(s,)]:
        with f.lock:
            f.two_holders.append(f"{s} round {n} granted, holds table says {rows}")
    page = f"{demo}/?{urllib.parse.urlencode({'owner': s, 'hold': n})}"
    opened = k.call(s, "open", url=page)
    if opened.get("ok"):
        k.call(s, "eval", js=f"localStorage.setItem('holder', {json.dumps(s)}), 1")
        time.sleep(0.4)
        back = k.call(s, "eval", js="localStorage.getItem('holder')")
        if back.get("ok"):
            with f.lock:
                f.hold_checks += 1
                if (back.get("data") or {}).get("value") != s:
                    f.two_holders.append(
                        f"{s} round {n}: the page names {back['data'].get('value')!r}"
                    )
    if not keep:
        _close(f, c, time.monotonic())
        k.call(s, "detach", group=g)


def _hold_round(
    contenders: list[Contender],
    held: str,
    url: str,
    demo: str,
    n: int,
    rng: random.Random,
    f: Figures,
) -> None:
    keeps = [rng.random() < 0.3 for _ in contenders]
    threads = [
        threading.Thread(target=_contend, args=(c, held, url, demo, n, keep, f))
        for c, keep in zip(contenders, keeps, strict=True)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=4 * HOLD_WAIT)


def _overlaps(intervals: list[tuple[float, float, str]]) -> list[str]:
    """Two holders' intervals (grant answered .. detach sent) that overlap."""
    out = []
    latest: tuple[float, str] | None = None  # the latest end so far, and whose
    for start, end, who in sorted(intervals):
        if latest is not None and start < latest[0]:
            out.append(f"{latest[1]} and {who} held at once for {latest[0] - start:.2f} s")
        if latest is None or end > latest[0]:
            latest = (end, who)
    return out


@contextlib.contextmanager
def fleet(server: PgServer, root: Path) -> Iterator[tuple[str, list[Keeper]]]:
    with server.fresh_schema_url() as url:
        shared = root / "shared"
        shared.mkdir()
        secret = write_secret(root)
        keepers = []
        for name in NAMES:
            home = root / name
            home.mkdir()
            env = {k: v for k, v in os.environ.items() if not k.startswith("BAY_")} | {
                "BAY_HOME": str(home),
                "BAY_REGISTRY": url,
                "BAY_FLEET_TTL": f"{TTL:g}",
                "BAY_FLEET_HOST": f"host-{name}",
                "BAY_FLEET_DATA": str(shared),
                "BAY_FLEET_LISTEN": f"127.0.0.1:{free_port()}",
                "BAY_FLEET_SECRET_FILE": str(secret),
                # After kills one keeper may serve all nine profiles: above the default 8.
                "BAY_MAX_BROWSERS": "12",
            }
            keepers.append(Keeper(name, home, env))
        try:
            yield url, keepers
        finally:
            for k in keepers:
                k.stop()


def campaign(rounds: int, seed: int) -> Figures:
    rng = random.Random(seed)
    f = Figures()
    os.environ["BAY_NO_AUTOSTART"] = "1"  # a call to a killed keeper never spawns one here
    root = Path(tempfile.mkdtemp(prefix="bc-fleet-", dir="/tmp"))
    try:
        with pg_server() as server, demo_site() as demo, fleet(server, root) as (url, ks):
            a = ks[0]
            a.start()
            sessions = [f"s{i}" for i in range(SESSIONS)]
            profile_of: dict[str, str] = {}
            for s in sessions:
                made = a.call(s, "new", label=f"p-{s}")
                assert made.get("ok"), made
                profile_of[s] = str(made["data"]["id"])
                used = a.call(s, "use", profile=made["data"]["id"])
                assert used.get("ok"), used
            held = a.call("x-maker", "new", label="held")
            assert held.get("ok"), held
            held_id = str(held["data"]["id"])
            for k in ks[1:]:
                k.start()
            where = {s: ks[i % len(ks)] for i, s in enumerate(sessions)}
            for i in range(FORWARDED):  # f<i>: s<i>'s profile through another keeper
                fs, k = f"f{i}", ks[(i + 1) % len(ks)]
                used = k.call(fs, "use", profile=profile_of[sessions[i]])
                assert used.get("ok"), used
                where[fs] = k
            contenders = [Contender(f"x{i}", ks[i % len(ks)]) for i in range(CONTENDERS)]
            dead: dict[str, int] = {}  # keeper name -> round it was killed
            for n in range(rounds):
                for s, k in list(where.items()):
                    if k.pid is None:
                        continue
                    _drive(k, s, demo, n, f)
                _hold_round(contenders, held_id, url, demo, n, rng, f)
                event = rng.random()
                alive = [k for k in ks if k.pid is not None]
                if event < 0.45 and len(alive) > 1 and n < rounds - 2:
                    victim = rng.choice(alive)
                    victim.kill()
                    f.keeper_kills += 1
                    killed_at = time.monotonic()
                    for c in contenders:  # a dead keeper's holder holds no more
                        if c.keeper is victim:
                            _close(f, c, killed_at)
                    dead[victim.name] = n
                    others = [k for k in ks if k.pid is not None]
                    for s in [s for s, k in where.items() if k is victim]:
                        target = rng.choice(others)
                        where[s] = target
                        end = killed_at + FAILOVER_LIMIT
                        while True:
                            frame = _drive(target, s, demo, n, f)
                            if frame.get("ok"):
                                f.failovers.append(time.monotonic() - killed_at)
                                break
                            if time.monotonic() > end:
                                f.failover_failed.append(
                                    f"{s} on {target.name}: {frame.get('code')}"
                                )
                                break
                            time.sleep(0.3)
                elif event < 0.75:
                    f.backends_killed += _backend_kill(server, rng)
                    f.backend_kills += 1
                for k in ks:
                    if k.pid is None and k.name in dead and n - dead[k.name] >= 2:
                        k.start()
                        del dead[k.name]
                alive_ids = {
                    (k.root / "state" / "keeper-id").read_text().strip()
                    for k in ks
                    if k.pid is not None
                }
                f.problems += registry_problems(url, root / "shared", alive_ids, TTL)
                f.checks += 1
            now = time.monotonic()
            for c in contenders:
                _close(f, c, now)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    f.two_holders += _overlaps(f.intervals)
    return f


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=16)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    t0 = time.monotonic()
    f = campaign(args.rounds, args.seed)
    elapsed = time.monotonic() - t0
    load = os.getloadavg()
    fo = percentiles(f.failovers)
    rows = [
        ("date, machine", f"{today()}, {machine()}, load {load[0]:.1f}"),
        (
            "run",
            f"{args.rounds} rounds (seed {args.seed}), 3 keepers on one PostgreSQL schema, "
            f"{SESSIONS} sessions, BAY_FLEET_TTL {TTL:g} s, {elapsed:.0f} s",
        ),
        (
            "verbs (open + get url, each judged at the page)",
            f"{f.verbs}, {f.ok} ok ({SESSIONS} sessions + {FORWARDED} on another keeper)",
        ),
        ("verbs forwarded to the keeper that runs the profile's browser", f.forwarded),
        ("refused, by code", ", ".join(f"{c} ×{n}" for c, n in f.refused.most_common()) or "none"),
        ("pages read back with their owner in the URL", f.judged),
        ("foreign-tab verbs — the page showed another session's (goal 0)", len(f.foreign)),
        ("SIGKILLs of keepers", f.keeper_kills),
        (
            "PostgreSQL connections terminated (pg_terminate_backend)",
            f"{f.backends_killed} in {f.backend_kills} events",
        ),
        (
            "time to failover: kill → first verb served by another keeper (s)",
            f"p50 {fo.get('p50', '-')}, max {fo.get('max', '-')} (n {fo['n']})",
        ),
        ("failovers that did not happen within TTL + 60 s (goal 0)", len(f.failover_failed)),
        (
            f"exclusive holds granted ({CONTENDERS} contenders, one per keeper, at once)",
            f"{f.holds}, {f.hold_checks} checked at the page",
        ),
        ("holds with two holders — holds table, page, intervals (goal 0)", len(f.two_holders)),
        (
            "waiters refused profile_busy naming the holder / not naming it (goal 0)",
            f"{f.busy_named} / {len(f.busy_unnamed)}",
        ),
        (
            "hold requests refused otherwise, by code",
            ", ".join(f"{c} ×{n}" for c, n in f.hold_refused.most_common()) or "none",
        ),
        (
            "lost or half-applied registry rows, checked after every round (goal 0)",
            f"{len(f.problems)} in {f.checks} checks",
        ),
    ]
    md = f"Last run: `campaigns/run.sh fleet --rounds {args.rounds} --seed {args.seed}`.\n\n"
    md += table(rows)
    for label, items in (
        ("foreign", f.foreign),
        ("failover failed", f.failover_failed),
        ("two holders", f.two_holders),
        ("profile_busy without the holder", f.busy_unnamed),
        ("registry", f.problems),
    ):
        if items:
            md += f"\n{label}: " + "; ".join(items[:10]) + "\n"
    figures = {
        "rounds": args.rounds,
        "seed": args.seed,
        "verbs": f.verbs,
        "ok": f.ok,
        "refused": dict(f.refused),
        "foreign": f.foreign,
        "judged": f.judged,
        "forwarded": f.forwarded,
        "holds": f.holds,
        "hold_checks": f.hold_checks,
        "two_holders": f.two_holders,
        "busy_named": f.busy_named,
        "busy_unnamed": f.busy_unnamed,
        "hold_refused": dict(f.hold_refused),
        "keeper_kills": f.keeper_kills,
        "backend_kills": f.backend_kills,
        "backends_killed": f.backends_killed,
        "failover_s": fo,
        "failover_failed": f.failover_failed,
        "problems": f.problems,
        "checks": f.checks,
        "seconds": round(elapsed),
        "load": round(load[0], 1),
    }
    record("fleet", figures, md)
    bad = f.foreign or f.problems or f.failover_failed or f.two_holders or f.busy_unnamed
    raise SystemExit(1 if bad else 0)


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    main()
