"""The fleet under faults (issue 22): three keepers on one PostgreSQL schema, eight sessions
spread over them driving real pages, SIGKILLs of keepers and of PostgreSQL connections
(``pg_terminate_backend``) at random points.

Setup: a private PostgreSQL server (``browserbay_testing.postgres``), one schema; three
keepers (homes ``a``, ``b``, ``c``: ``BAY_FLEET_HOST=host-<x>``, ``BAY_FLEET_TTL`` short,
``BAY_FLEET_DATA`` one directory all three mount), linked (``BAY_FLEET_LISTEN`` each, one
``BAY_FLEET_SECRET_FILE``); eight persistent profiles, one per session, made on ``a`` before
``b`` and ``c`` start. Session ``s<i>`` drives its profile through keeper ``i mod 3``.

Forwarding, for real: ``FORWARDED`` more sessions ``f<i>`` use the profile of ``s<i>``. At the
start of every round the campaign reads each profile's live claim (``profile_claims``: the
keeper that runs its browser now) and moves every ``f<i>`` asked through that keeper to
another live one, so each round its verbs must go over the link (after a failover the claim
moves with the browser; a fixed keeper for ``f<i>`` ends up local). What counts as forwarded
is what the keepers did, counted twice, independently: the answer says where it ran
(``profile.host``, ``on <host>``) and the keeper that ran it audits it as the fleet's
(actor ``fleet:<asking keeper>/<session>``, read from the shared ``audit`` after the run).

Each round every session opens a page of the demo site whose URL carries the session and a
counter (``/?owner=s3&n=17``) and reads the page's URL back *from the page* (``get url``).
Foreign tabs are judged twice: at the page (another owner in the URL read back), and by the
keeper that ran the verb — after the round, its ``keeper status`` (owner view: every session
with its tabs' ids) must list the tab the ``open`` answered under that session only (a
forwarded one as ``<session>@<asking keeper>``). The same pass checks that no persistent
profile's browser runs on two keepers at once.

Faults: between rounds, at random, a keeper is SIGKILLed, or a third of the keepers' PostgreSQL
backends are terminated — then at a random moment of the next round's verbs, from a timer.
Failover is per profile: for each profile whose claim the victim held at the kill, its
sessions (moved off the victim when they were on it) retry at once, each in its own thread,
until one verb on it is answered by a live keeper; the time from the kill to that answer is
the profile's time to failover. A killed keeper is started again two rounds later. After every
round the registry is checked for lost or half-applied rows (:func:`registry_problems`).

Exclusive holds across keepers: each round the contenders ``x0..x2`` (one per keeper, each
its own group) run at once ``use held --exclusive --wait`` on one shared profile. A holder
checks the registry's ``holds`` row names it, writes its name into the page's
``localStorage`` (one browser, one origin: every holder's page shares it), waits, and reads it
back: another name there, or an overlap of two holders' intervals (from the grant's answer to
the ``detach`` sent), is a hold with two holders. A waiter refused ``profile_busy`` must be
told the holder. Sometimes a holder keeps its hold past the round: a SIGKILL of its keeper then
leaves the hold to be reclaimed by a waiter on another keeper once the TTL passed.

Run: campaigns/run.sh fleet [--rounds 20] [--seed 1]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
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
from browserbay.registry.db import MIGRATIONS
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
#: How long a profile's sessions retry after a kill before its failover is a failure.
FAILOVER_LIMIT = TTL + 60.0
#: The verbs a round drives (what the audit count of forwarded verbs looks at).
DRIVEN = ("open", "get")


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

    @property
    def host(self) -> str:
        return self.env["BAY_FLEET_HOST"]

    @property
    def id(self) -> str:
        """Its keeper id (``state/keeper-id``, made by its first start)."""
        return (self.root / "state" / "keeper-id").read_text().strip()

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

    def status(self) -> dict[str, Any] | None:
        """Its ``keeper status`` (the owner's view: every session, its leases and their tab
        ids, every browser), or None when it did not answer."""
        frame = self.call("ops", "keeper", action="status")
        data = frame.get("data") if frame.get("ok") else None
        return data if isinstance(data, dict) else None

    def kill(self) -> None:
        assert self.pid is not None
        kill9(self.pid)
        wait_for(lambda: not Path(f"/proc/{self.pid}").exists(), 30)
        self.pid = None

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.bay("keeper", "stop")


@dataclass
class Acted:
    """One ``open`` answered ok: who asked, through which keeper, which keeper ran it (the
    answer's ``profile.host``, else the keeper asked), and the tab it answered."""

    session: str
    asked: Keeper
    ran: str
    tab: str

    @property
    def owner(self) -> str:
        """The session id the keeper that ran it must list the tab under."""
        if self.ran == self.asked.host:
            return self.session
        return f"{self.session}@{self.asked.id}"


@dataclass
class Figures:
    verbs: int = 0
    ok: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    foreign: list[str] = field(default_factory=list)
    """Verbs that acted on a tab not the session's: at the page, or by the keeper's word."""
    problems: list[str] = field(default_factory=list)
    two_browsers: list[str] = field(default_factory=list)
    failovers: list[float] = field(default_factory=list)
    failover_failed: list[str] = field(default_factory=list)
    failover_refused: int = 0
    """Verbs refused while a profile's sessions retried after a kill (before its claim expired)."""
    keeper_kills: int = 0
    backend_kills: int = 0
    backends_killed: int = 0
    checks: int = 0
    judged: int = 0
    """Page reads that showed an owner (a read with none is foreign too: it is no page of ours)."""
    tabs_judged: int = 0
    """Tabs an ``open`` answered that the keeper that ran it listed, under whichever session."""
    tabs_gone: int = 0
    """Tabs an ``open`` answered that were gone by the time their keeper was asked."""
    status_checks: int = 0
    placed_off: int = 0
    """Session-rounds asked through a keeper other than the one holding its profile's claim."""
    no_other: int = 0
    """Rounds a forwarding session could not be placed off the holder (one keeper alive)."""
    forwarded: int = 0
    """Verbs answered ok by a browser on another keeper than the one asked (``profile.host``)."""
    forwarded_audit: int = 0
    """The same, from the audit of the keeper that ran them (actor ``fleet:…``)."""
    forwarded_by_session: Counter[str] = field(default_factory=Counter)
    forwarded_audit_by_session: Counter[str] = field(default_factory=Counter)
    holds: int = 0
    hold_checks: int = 0
    two_holders: list[str] = field(default_factory=list)
    busy_named: int = 0
    busy_unnamed: list[str] = field(default_factory=list)
    hold_refused: Counter[str] = field(default_factory=Counter)
    intervals: list[tuple[float, float, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


#: The tables the migrations make (what "the migrations table intact" is checked against).
TABLES = sorted(
    {m.group(1) for script in MIGRATIONS for m in re.finditer(r"CREATE TABLE (\w+)", script)}
    - {m.group(1) for script in MIGRATIONS for m in re.finditer(r"DROP TABLE (\w+)", script)}
)


#: The registry check's plain queries: each row found is a fault, said with its columns.
ORPHAN_CHECKS: tuple[tuple[str, str], ...] = (
    (
        "SELECT profile, keeper_id FROM profile_claims WHERE keeper_id NOT IN "
        "(SELECT id FROM keepers)",
        "claim of {} by {}, a keeper that never registered",
    ),
    (
        "SELECT profile, keeper_id FROM profile_claims WHERE released_at IS NULL "
        "AND renewed_at > extract(epoch FROM clock_timestamp()) + 1",
        "claim of {} renewed in the future by {}",
    ),
    (
        "SELECT profile, keeper_id FROM profile_claims WHERE released_at IS NULL "
        "AND keeper_id IN (SELECT id FROM keepers WHERE stopped_at IS NOT NULL)",
        "claim of {} still held by {}, which stopped",
    ),
    (
        "SELECT h.profile, h.holder, h.keeper_id FROM holds h WHERE NOT EXISTS "
        "(SELECT 1 FROM attachments a WHERE a.session = h.holder AND a.profile = h.profile)",
        "hold of {} by {} (via {}) without its attachment",
    ),
    (
        "SELECT profile, holder, keeper_id FROM holds WHERE keeper_id IS NOT NULL "
        "AND keeper_id NOT IN (SELECT id FROM keepers)",
        "hold of {} by {} through an unregistered keeper {}",
    ),
    (
        "SELECT profile, count(*) FROM holds GROUP BY profile HAVING count(*) > 1",
        "{1} holds of {0}",
    ),
)


def registry_problems(
    url: str,
    data_root: Path,
    alive: set[str],
    expected: dict[str, str],
    made: set[str],
) -> list[str]:
    """Invariants over the fleet's tables that a lost or half-applied write would break.

    ``alive``: the ids of the keepers running now; ``expected``: each driving session and
    the profile it attached (rows that must still be there); ``made``: every profile the
    campaign made. Run between rounds, when no verb and no hold request is in flight."""
    out: list[str] = []
    with psycopg.connect(url, autocommit=True) as conn:
        q = conn.execute
        # The schema history: one version row, the newest, and every table it made.
        versions = q("SELECT version FROM bay_schema").fetchall()
        if versions != [(len(MIGRATIONS),)]:
            out.append(f"bay_schema holds {versions}, not [({len(MIGRATIONS)},)]")
        gone = [t for t in TABLES if q("SELECT to_regclass(%s)", (t,)).fetchone() == (None,)]
        out += [f"table {name} is gone" for name in gone]
        if gone:
            return out  # the checks below read those tables
        # Rows the campaign wrote that must still be there.
        profiles = {str(r[0]) for r in q("SELECT id FROM profiles").fetchall()}
        for pid in sorted(made - profiles):
            out.append(f"profile {pid} was lost")
        attached = set(q("SELECT session, profile FROM attachments").fetchall())
        for s, pid in sorted(expected.items()):
            if (s, pid) not in attached:
                out.append(f"the attachment of {s} to {pid} was lost")
        # Kept tabs: one list per session and profile, whole.
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
        # Attachments without their session.
        for (s,) in q(
            "SELECT DISTINCT session FROM attachments WHERE session NOT IN "
            "(SELECT session FROM session_state)"
        ).fetchall():
            out.append(f"attachments of {s} without a session_state row")
        for (s,) in q(
            "SELECT DISTINCT session FROM attachments WHERE session NOT IN "
            "(SELECT id FROM sessions)"
        ).fetchall():
            out.append(f"attachments of {s} without a sessions row")
        for s, n, distinct in q(
            "SELECT session, count(*), count(DISTINCT position) FROM attachments GROUP BY session"
        ).fetchall():
            if n != distinct:
                out.append(f"attachments of {s}: duplicate positions")
        rows = q("SELECT id, dir, adopted FROM profiles").fetchall()
        for pid, directory, adopted in rows:
            where = Path(directory) if Path(directory).is_absolute() else data_root / directory
            if not adopted and not where.is_dir():
                out.append(f"profile {pid} has no directory {where}")
        for table_name in ("profile_claims", "key_homes", "holds", "kept_tabs", "attachments"):
            for (p,) in q(
                f"SELECT DISTINCT profile FROM {table_name} WHERE profile NOT IN "
                "(SELECT id FROM profiles)"
            ).fetchall():
                if table_name == "kept_tabs" and p.removesuffix(PARKED) in profiles:
                    continue  # a close's tabs, parked for `bay resume`
                out.append(f"{table_name} names a profile that does not exist: {p}")
        # Claims: of a registered keeper, renewed in the past, never one keeper's twice;
        # holds: one holder, attached to what it holds, through a registered keeper.
        for sql, said in ORPHAN_CHECKS:
            out.extend(said.format(*row) for row in q(sql).fetchall())
        # No waiter left queued (nobody waits between rounds) but a dead keeper's.
        for p, s, keeper in q("SELECT profile, session, keeper_id FROM hold_queue").fetchall():
            if keeper in alive:
                out.append(f"{s} still queued for {p} on live {keeper} with nobody waiting")
        for p, s in q(
            "SELECT q.profile, q.session FROM hold_queue q JOIN holds h "
            "ON h.profile = q.profile AND h.holder = q.session"
        ).fetchall():
            out.append(f"{s} holds {p} and is queued for it too")
        for bid, keeper in q(
            "SELECT id, keeper_id FROM browsers WHERE stopped_at IS NULL"
        ).fetchall():
            if keeper is None:
                out.append(f"browser {bid} without a keeper")
    return out


def live_claims(url: str) -> dict[str, str]:
    """Each profile's live claim: the keeper whose claim is unreleased and renewed within the
    TTL (on the server's clock), as every keeper reads it."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT profile, keeper_id FROM profile_claims WHERE released_at IS NULL "
            "AND extract(epoch FROM clock_timestamp()) - renewed_at < %s",
            (TTL,),
        ).fetchall()
    return {str(p): str(k) for p, k in rows}


def audited_forwarded(url: str, sessions: set[str]) -> Counter[str]:
    """Per driving session, its ``open``/``get`` verbs the keeper that ran them audited as
    another keeper's (actor ``fleet:<keeper>/<session>``), ok."""
    out: Counter[str] = Counter()
    with psycopg.connect(url, autocommit=True) as conn:
        for actor, n in conn.execute(
            "SELECT actor, count(*) FROM audit WHERE actor LIKE 'fleet:%%' AND ok = 1 "
            "AND verb = ANY(%s) GROUP BY actor",
            (list(DRIVEN),),
        ).fetchall():
            session = str(actor).rpartition("/")[2]
            if session in sessions:
                out[session] += int(n)
    return out


def _backend_kill(server: PgServer, rng: random.Random) -> int:
    """Terminate a third of the keepers' client backends, at random (their pools reconnect)."""
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


def _ran(k: Keeper, frame: dict[str, Any]) -> str:
    """The host whose keeper ran the verb: the answer's ``profile.host`` (set on a forwarded
    answer), else the keeper asked."""
    return str((frame.get("profile") or {}).get("host") or k.host)


def _verb(k: Keeper, session: str, verb: str, f: Figures, **args: Any) -> dict[str, Any]:
    frame = k.call(session, verb, **args)
    with f.lock:
        f.verbs += 1
        if not frame.get("ok"):
            f.refused[str(frame.get("code"))] += 1
        else:
            f.ok += 1
            if _ran(k, frame) != k.host:
                f.forwarded += 1
                f.forwarded_by_session[session] += 1
    return frame


def _drive(
    k: Keeper, session: str, demo: str, n: int, f: Figures, acted: list[Acted]
) -> dict[str, Any]:
    """One round of a session: open its own page, read the URL back from the page. Answers
    the ``open``'s frame when it was refused, else the ``get``'s."""
    url = f"{demo}/?{urllib.parse.urlencode({'owner': session, 'n': n})}"
    frame = _verb(k, session, "open", f, url=url)
    if not frame.get("ok"):
        return frame
    with f.lock:
        acted.append(Acted(session, k, _ran(k, frame), str(frame["data"].get("tab"))))
    got = _verb(k, session, "get", f, what="url")
    if not got.get("ok"):
        return got
    seen = urllib.parse.parse_qs(urllib.parse.urlsplit(str(got["data"].get("url", ""))).query)
    owner = (seen.get("owner") or [""])[0]
    with f.lock:
        f.judged += bool(owner)
        if owner != session:
            f.foreign.append(f"{session} round {n} on {k.name}: the page is {owner!r}'s")
    return got


def _judge_tabs(keepers: list[Keeper], acted: list[Acted], n: int, f: Figures) -> None:
    """Ask each keeper that ran an ``open`` whose tab it acted on (its ``keeper status``:
    sessions and their tab ids), and whether a profile's browser runs on two keepers."""
    owners: dict[str, dict[str, list[str]]] = {}
    running: dict[str, list[str]] = {}
    for k in keepers:
        if k.pid is None:
            continue
        status = k.status()
        if status is None:
            continue
        f.status_checks += 1
        tabs = owners.setdefault(k.host, {})
        for s in status.get("sessions") or []:
            for lease in s.get("leases") or []:
                for tab in lease.get("tab_ids") or []:
                    tabs.setdefault(str(tab), []).append(str(s["session"]["id"]))
        for browser in status.get("browsers") or []:
            if not browser.get("ephemeral") and browser.get("profile"):
                running.setdefault(str(browser["profile"]), []).append(k.host)
    for a in acted:
        if a.ran not in owners:
            f.tabs_gone += 1  # its keeper died since (or did not answer): not judged
            continue
        listed = owners[a.ran].get(a.tab)
        if not listed:
            f.tabs_gone += 1
            continue
        f.tabs_judged += 1
        if listed != [a.owner]:
            f.foreign.append(
                f"{a.session} round {n} via {a.asked.name}: {a.ran} lists tab {a.tab} "
                f"under {listed}, not {a.owner}"
            )
    for profile, hosts in running.items():
        if len(hosts) > 1:
            f.two_browsers.append(f"round {n}: {profile} runs on {sorted(hosts)}")
    acted.clear()


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


def _place_forwarding(
    where: dict[str, Keeper],
    profile_of: dict[str, str],
    forwarding: list[str],
    keepers: list[Keeper],
    url: str,
    rng: random.Random,
    f: Figures,
) -> None:
    """Move every forwarding session asked through the keeper holding its profile's claim to
    another live keeper; count the session-rounds placed off the holder (any session's)."""
    claims = live_claims(url)
    alive = [k for k in keepers if k.pid is not None]
    for s in forwarding:
        holder = claims.get(profile_of[s])
        if holder is None or where[s].id != holder:
            continue
        others = [k for k in alive if k.id != holder]
        if not others:
            f.no_other += 1
            continue
        where[s] = rng.choice(others)
    for s, k in where.items():
        holder = claims.get(profile_of[s])
        if k.pid is not None and holder is not None and k.id != holder:
            f.placed_off += 1


def _fail_over(
    victim: Keeper,
    killed_at: float,
    profile: str,
    sessions: list[str],
    where: dict[str, Keeper],
    demo: str,
    n: int,
    f: Figures,
    acted: list[Acted],
) -> None:
    """The profile's sessions take turns, at once after the kill, until a verb on the profile
    is answered by a live keeper (never the victim): the time from the kill is its failover."""
    end = killed_at + FAILOVER_LIMIT
    last: dict[str, Any] = {}
    while time.monotonic() < end:
        for s in sessions:
            k = where[s]
            if k.pid is None:
                continue
            frame = _drive(k, s, demo, n, f, acted)
            last = frame
            if not frame.get("ok"):
                with f.lock:
                    f.failover_refused += 1
            if frame.get("ok") and _ran(k, frame) != victim.host:
                with f.lock:
                    f.failovers.append(time.monotonic() - killed_at)
                return
        time.sleep(0.3)
    with f.lock:
        f.failover_failed.append(f"{profile} ({', '.join(sessions)}): {last.get('code')}")


@dataclass
class Kill:
    """A SIGKILL of ``victim`` from a timer, at a random moment of a round's verbs: the
    profiles whose live claim it held just before (``claimed``) and when it died (``at``)."""

    victim: Keeper
    url: str
    claimed: list[str] = field(default_factory=list)
    at: float = 0.0

    def run(self) -> None:
        self.claimed = sorted(p for p, k in live_claims(self.url).items() if k == self.victim.id)
        self.at = time.monotonic()  # the SIGKILL goes now; kill() then waits until it is gone
        self.victim.kill()


def _cut(server: PgServer, rng: random.Random, f: Figures) -> None:
    got = _backend_kill(server, rng)
    with f.lock:
        f.backends_killed += got
        f.backend_kills += 1


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
            forwarding = [f"f{i}" for i in range(FORWARDED)]
            for i, fs in enumerate(forwarding):  # f<i>: s<i>'s profile, at first through i+1
                k = ks[(i + 1) % len(ks)]
                profile_of[fs] = profile_of[sessions[i]]
                used = k.call(fs, "use", profile=profile_of[fs])
                assert used.get("ok"), used
                where[fs] = k
            made_ids = {*profile_of.values(), held_id}
            contenders = [Contender(f"x{i}", ks[i % len(ks)]) for i in range(CONTENDERS)]
            dead: dict[str, int] = {}  # keeper name -> round it was killed
            acted: list[Acted] = []
            pending: tuple[str, float] | None = None  # the next fault, and when in its round
            for n in range(rounds):
                if n > 0:  # round 0 starts the browsers: nothing is claimed yet
                    _place_forwarding(where, profile_of, forwarding, ks, url, rng, f)
                kill: Kill | None = None
                timer = None
                if pending is not None:
                    what, delay = pending
                    pending = None
                    if what == "keeper":
                        kill = Kill(rng.choice([k for k in ks if k.pid is not None]), url)
                        timer = threading.Timer(delay, kill.run)
                    else:
                        timer = threading.Timer(delay, _cut, args=(server, rng, f))
                    timer.start()
                # A fault comes at a random moment of these verbs (a verb in flight on the
                # killed keeper, or on a connection cut under it, fails as it may).
                for s, k in list(where.items()):
                    if k.pid is None:
                        continue
                    _drive(k, s, demo, n, f, acted)
                if timer is not None:
                    timer.join()
                if kill is not None:
                    victim = kill.victim
                    f.keeper_kills += 1
                    for c in contenders:  # a dead keeper's holder holds no more
                        if c.keeper is victim:
                            _close(f, c, kill.at)
                    dead[victim.name] = n
                    others = [k for k in ks if k.pid is not None]
                    for s in [s for s, k in where.items() if k is victim]:
                        where[s] = rng.choice(others)
                    threads = [
                        threading.Thread(
                            target=_fail_over,
                            args=(
                                victim,
                                kill.at,
                                p,
                                [s for s in where if profile_of[s] == p],
                                where,
                                demo,
                                n,
                                f,
                                acted,
                            ),
                        )
                        for p in kill.claimed
                        if p in profile_of.values()
                    ]
                    for t in threads:
                        t.start()
                    for t in threads:
                        t.join()
                _judge_tabs(ks, acted, n, f)
                _hold_round(contenders, held_id, url, demo, n, rng, f)
                event = rng.random()
                alive = [k for k in ks if k.pid is not None]
                if event < 0.45 and len(alive) > 1 and n < rounds - 3:
                    pending = ("keeper", rng.uniform(0.0, 4.0))
                elif event < 0.75:
                    pending = ("backend", rng.uniform(0.0, 4.0))
                for k in ks:
                    if k.pid is None and k.name in dead and n - dead[k.name] >= 2:
                        k.start()
                        del dead[k.name]
                alive_ids = {k.id for k in ks if k.pid is not None}
                expected = {s: profile_of[s] for s in where}
                f.problems += registry_problems(url, root / "shared", alive_ids, expected, made_ids)
                f.checks += 1
            now = time.monotonic()
            for c in contenders:
                _close(f, c, now)
            f.forwarded_audit_by_session = audited_forwarded(url, set(where))
            f.forwarded_audit = sum(f.forwarded_audit_by_session.values())
    finally:
        shutil.rmtree(root, ignore_errors=True)
    f.two_holders += _overlaps(f.intervals)
    return f


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    t0 = time.monotonic()
    load_before = os.getloadavg()
    f = campaign(args.rounds, args.seed)
    elapsed = time.monotonic() - t0
    load = os.getloadavg()
    fo = percentiles(f.failovers)
    rows = [
        (
            "date, machine",
            f"{today()}, {machine()}, load {load_before[0]:.1f} at the start, "
            f"{load[0]:.1f} at the end",
        ),
        (
            "run",
            f"{args.rounds} rounds (seed {args.seed}), 3 keepers on one PostgreSQL schema, "
            f"{SESSIONS} + {FORWARDED} sessions, BAY_FLEET_TTL {TTL:g} s, {elapsed:.0f} s",
        ),
        ("verbs (open + get url)", f"{f.verbs}, {f.ok} ok"),
        (
            "refused, by code (of them while retrying a failover)",
            (", ".join(f"{c} ×{n}" for c, n in f.refused.most_common()) or "none")
            + f" ({f.failover_refused})",
        ),
        (
            "session-rounds asked through a keeper other than the claim's holder",
            f"{f.placed_off} ({f.no_other} times no other keeper was alive)",
        ),
        (
            "verbs forwarded: the answer says another host ran it / that keeper's audit",
            f"{f.forwarded} / {f.forwarded_audit}",
        ),
        (
            "tabs an open answered, listed by the keeper that ran it (gone before asked)",
            f"{f.tabs_judged} ({f.tabs_gone}) in {f.status_checks} keeper status reads",
        ),
        ("pages read back with their owner in the URL", f.judged),
        (
            "foreign-tab verbs — the keeper lists the tab under another session, or the "
            "page shows another owner (goal 0)",
            len(f.foreign),
        ),
        ("a profile's browser on two keepers at once (goal 0)", len(f.two_browsers)),
        ("SIGKILLs of keepers", f.keeper_kills),
        (
            "PostgreSQL connections terminated mid-round (pg_terminate_backend)",
            f"{f.backends_killed} in {f.backend_kills} events",
        ),
        (
            "time to failover: kill → first verb on the profile answered by a live keeper (s)",
            f"p50 {fo.get('p50', '-')}, max {fo.get('max', '-')} (n {fo['n']} profiles)",
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
    if f.forwarded_by_session != f.forwarded_audit_by_session:
        md += (
            f"\nforwarded per session, answers {dict(sorted(f.forwarded_by_session.items()))}"
            f" vs audit {dict(sorted(f.forwarded_audit_by_session.items()))}\n"
        )
    for label, items in (
        ("foreign", f.foreign),
        ("two browsers", f.two_browsers),
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
        "failover_refused": f.failover_refused,
        "placed_off": f.placed_off,
        "no_other": f.no_other,
        "forwarded": f.forwarded,
        "forwarded_audit": f.forwarded_audit,
        "forwarded_by_session": dict(f.forwarded_by_session),
        "forwarded_audit_by_session": dict(f.forwarded_audit_by_session),
        "foreign": f.foreign,
        "judged": f.judged,
        "tabs_judged": f.tabs_judged,
        "tabs_gone": f.tabs_gone,
        "status_checks": f.status_checks,
        "two_browsers": f.two_browsers,
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
        "load_start": round(load_before[0], 1),
        "load": round(load[0], 1),
    }
    record("fleet", figures, md)
    bad = (
        f.foreign
        or f.problems
        or f.failover_failed
        or f.two_holders
        or f.busy_unnamed
        or f.two_browsers
        or f.forwarded_by_session != f.forwarded_audit_by_session
    )
    raise SystemExit(1 if bad else 0)


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    main()
