"""The registry's contract: one test per repository method, on a real store.

Every test takes the ``store`` fixture: a :class:`~browserbay.registry.Registry` and a way
to read its tables back (``store.rows``) for the methods that only write. A second backend
(PostgreSQL, issue 22) joins by adding a parameter to the fixture; the tests stay as they
are. The SQLite file's own promises (mode 0600, WAL, migrations applied once and whole, the
tables' CHECK rules) are tested at the end, on SQLite only.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import psycopg
import pytest

from browserbay.model import SiteHint
from browserbay.registry import (
    MIGRATIONS,
    PARKED,
    SOLE_KEEPER,
    THE_OWNER,
    Attachment,
    AuditRow,
    BrowserRow,
    Database,
    GrantRow,
    GrantTaken,
    Hold,
    KeeperRow,
    KeeperStart,
    Kept,
    KeptTab,
    KeyHome,
    ProfileRow,
    Proposal,
    Recorded,
    Registry,
    SessionState,
    group_owner,
    open_sqlite,
    sql_registry,
)
from browserbay.registry.db import Sql
from browserbay.registry.holds import RECLAIMED, Reclaimed
from browserbay.registry.pg import PgDatabase
from browserbay_testing.bay import wait_for
from browserbay_testing.postgres import PgServer


@dataclass(frozen=True)
class Store:
    registry: Registry
    rows: Callable[..., list[tuple[Any, ...]]]
    """``rows(sql, *params)``: read the store's tables directly (what a write-only method
    left); the schema is the same on every backend."""
    db: Sql
    second: Callable[[], Sql]
    """Another connection to the same store (a race's other side)."""

    def keeper(self, keeper_id: str, data_root: Path | None = None) -> Registry:
        """The registry as another keeper of the fleet sees it (the same tables)."""
        return sql_registry(self.db, keeper_id, data_root)


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """The registry on each backend: a SQLite file, and a schema of its own on the session's
    one PostgreSQL server (the same migrations, the same repositories)."""
    with contextlib.ExitStack() as stack:
        db: Sql
        second: Callable[[], Sql]
        if request.param == "sqlite":
            path = tmp_path / "registry.sqlite3"
            db = Database(path)
            second = functools.partial(Database, path)
        else:
            server: PgServer = request.getfixturevalue("postgres")
            url = stack.enter_context(server.schema_url())
            db = PgDatabase(url)
            second = functools.partial(PgDatabase, url)
        stack.callback(db.close)
        yield Store(sql_registry(db), _reader(db), db, second)


KP_A, KP_B = "kp-aaaaaaaa", "kp-bbbbbbbb"


@dataclass(frozen=True)
class TwoKeepers:
    a: Registry
    b: Registry
    rows: Callable[..., list[tuple[Any, ...]]]


@pytest.fixture(params=["sqlite", "postgresql"])
def two_keepers(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TwoKeepers]:
    """One registry as two keepers of a fleet see it (``KP_A`` on host-a, ``KP_B`` on
    host-b, both registered): two stores, each with its own connection(s) — two connections
    to one SQLite file, two pools on one PostgreSQL schema."""
    with contextlib.ExitStack() as stack:
        if request.param == "sqlite":
            path = tmp_path / "registry.sqlite3"
            dbs: list[Sql] = [Database(path), Database(path)]
        else:
            server: PgServer = request.getfixturevalue("postgres")
            url = stack.enter_context(server.schema_url())
            dbs = [PgDatabase(url), PgDatabase(url)]
        for db in dbs:
            stack.callback(db.close)
        a, b = sql_registry(dbs[0], KP_A), sql_registry(dbs[1], KP_B)
        for reg, host in ((a, "host-a"), (b, "host-b")):
            reg.keepers.register(KeeperStart(reg.keeper_id, host, None, os.getpid(), "t"))
        yield TwoKeepers(a, b, _reader(dbs[0]))


T = TypeVar("T")


def _race(rounds: int, *calls: Callable[[int], T]) -> list[list[T | Exception]]:
    """Each round, the calls run at once (one thread each, released by one barrier); what
    each answered or raised, per round, in the calls' order."""
    results: list[list[T | Exception]] = []

    def run(
        barrier: threading.Barrier,
        answers: list[T | Exception],
        k: int,
        call: Callable[[int], T],
        i: int,
    ) -> None:
        barrier.wait()
        try:
            answers[k] = call(i)
        except Exception as exc:
            answers[k] = exc

    for i in range(rounds):
        barrier = threading.Barrier(len(calls))
        answers: list[T | Exception] = [RuntimeError("never ran")] * len(calls)
        threads = [
            threading.Thread(target=run, args=(barrier, answers, k, c, i))
            for k, c in enumerate(calls)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        results.append(answers)
    return results


def _reader(db: Sql) -> Callable[..., list[tuple[Any, ...]]]:
    def rows(sql: str, *params: Any) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in db.execute(sql, params).fetchall()]

    return rows


def _profile(pid: str = "bp-00000001", created: float = 1.0, **kw: Any) -> ProfileRow:
    fields: dict[str, Any] = {
        "id": pid,
        "label": "work",
        "provider": "chromium",
        "dir": f"/p/{pid}",
        "proxy": None,
        "allowed_domains": (),
        "headed": False,
        "adopted": False,
        "created_at": created,
        "last_used": None,
    }
    fields.update(kw)
    return ProfileRow(**fields)


def _with_profile(store: Store, pid: str = "bp-00000001") -> str:
    store.registry.profiles.create(_profile(pid))
    return pid


# -- schema ---------------------------------------------------------------------------------


def test_schema_version_is_the_last_migration(store: Store) -> None:
    assert store.registry.schema.schema_version() == len(MIGRATIONS)


def test_integrity_check_says_ok(store: Store) -> None:
    assert store.registry.schema.integrity_check() == "ok"


# -- keeper runs ----------------------------------------------------------------------------


def test_runs_started_and_stopped(store: Store) -> None:
    runs = store.registry.runs
    runs.started(41, "1.0")
    runs.started(42, "1.1")
    runs.stopped(41)
    got = store.rows("SELECT pid, version, stopped_at IS NULL FROM keeper_runs ORDER BY pid")
    assert got == [(41, "1.0", 0), (42, "1.1", 1)]


# -- the fleet: keepers and claims (migration 10) -------------------------------------------

_A, _B = "kp-aaaaaaaa", "kp-bbbbbbbb"


def _start(kid: str = _A, host: str = "host-a", listen: str | None = None) -> KeeperStart:
    return KeeperStart(kid, host, listen, 4242, "1.0")


def test_keepers_register_and_get(store: Store) -> None:
    keepers = store.registry.keepers
    assert keepers.get(_A) is None
    keepers.register(_start(listen="10.0.0.1:7070"))
    row = keepers.get(_A)
    assert isinstance(row, KeeperRow)
    assert (row.id, row.host, row.listen, row.pid, row.version) == (
        _A,
        "host-a",
        "10.0.0.1:7070",
        4242,
        "1.0",
    )
    assert row.stopped_at is None
    assert 0 <= row.beat_age < 5
    assert row.alive(15.0)
    assert abs(row.beat_at - time.time()) < 60  # seconds since the epoch, on the store's clock


def test_keepers_register_again_is_a_new_start_of_the_same_row(store: Store) -> None:
    keepers = store.registry.keepers
    keepers.register(_start())
    keepers.stop(_A)
    keepers.register(_start(host="host-a2"))
    (row,) = keepers.all()
    assert (row.host, row.stopped_at) == ("host-a2", None)


def test_keepers_beat_renews_and_says_whether_the_row_exists(store: Store) -> None:
    keepers = store.registry.keepers
    assert keepers.beat(_A) is False
    keepers.register(_start())
    store.rows("UPDATE keepers SET beat_at = beat_at - 100")  # (writes; answers no rows)
    assert not keepers.alive(15.0)
    assert keepers.beat(_A) is True
    assert [k.id for k in keepers.alive(15.0)] == [_A]


def test_keepers_stop_keeps_the_row_and_it_is_not_alive(store: Store) -> None:
    keepers = store.registry.keepers
    keepers.register(_start())
    keepers.register(_start(_B, "host-b"))
    keepers.stop(_A)
    assert [k.id for k in keepers.all()] == [_A, _B]
    assert [k.id for k in keepers.alive(15.0)] == [_B]
    a = keepers.get(_A)
    assert a is not None
    assert a.stopped_at is not None
    assert not a.alive(15.0)


def test_claims_take_a_free_claim_and_not_a_held_one(store: Store) -> None:
    claims = store.registry.claims
    assert claims.holder("p") is None
    mine = claims.take("p", _A, 15.0)
    assert (mine.profile, mine.keeper_id, mine.released) == ("p", _A, False)
    assert mine.held(15.0)
    theirs = claims.take("p", _B, 15.0)  # held by A: B is answered A's claim
    assert theirs.keeper_id == _A
    assert theirs.since == mine.since
    again = claims.take("p", _A, 15.0)  # A again: a renewal, the same since
    assert (again.keeper_id, again.since) == (_A, mine.since)


def test_claims_release_frees_it_and_keeps_the_last_keeper(store: Store) -> None:
    claims = store.registry.claims
    claims.take("p", _A, 15.0)
    assert claims.release("p", _B) is False  # not B's
    assert claims.release("p", _A) is True
    assert claims.release("p", _A) is False  # once
    last = claims.holder("p")
    assert last is not None
    assert (last.keeper_id, last.released) == (_A, True)
    assert not last.held(15.0)
    assert claims.take("p", _B, 15.0).keeper_id == _B


def test_claims_expire_after_the_ttl_without_renewal(store: Store) -> None:
    claims = store.registry.claims
    claims.take("p", _A, 15.0)
    claims.take("q", _A, 15.0)
    store.rows("UPDATE profile_claims SET renewed_at = renewed_at - 20 WHERE profile='p'")
    assert claims.take("p", _B, 15.0).keeper_id == _B  # A stopped beating 20 s ago
    assert claims.take("q", _B, 15.0).keeper_id == _A  # renewed just now: still A's
    store.rows("UPDATE profile_claims SET renewed_at = renewed_at - 20 WHERE profile='q'")
    assert claims.expire(15.0) == ["q"]
    assert claims.expire(15.0) == []
    q = claims.holder("q")
    assert q is not None
    assert q.released


def test_claims_renew_and_release_all_are_the_keepers_own(store: Store) -> None:
    claims = store.registry.claims
    claims.take("p", _A, 15.0)
    claims.take("q", _A, 15.0)
    claims.take("r", _B, 15.0)
    store.rows("UPDATE profile_claims SET renewed_at = renewed_at - 10")
    assert claims.renew(_A) == 2
    ages = {c: claims.holder(c) for c in "pqr"}
    assert all(v is not None for v in ages.values())
    assert [c for c, v in ages.items() if v is not None and v.age < 5] == ["p", "q"]
    assert claims.counts(15.0) == {_A: 2, _B: 1}
    assert claims.release_all(_A) == 2
    assert claims.counts(15.0) == {_B: 1}


def test_of_two_keepers_racing_for_a_claim_exactly_one_wins(store: Store) -> None:
    """Two connections (two keepers), two threads, one free claim, many rounds: each round
    exactly one of them holds it, and both are answered the same holder."""
    other = store.second()
    try:
        mine, theirs = store.registry.claims, sql_registry(other, _B).claims
        for n in range(20):
            profile = f"bp-race{n:04d}"
            answers: dict[str, str] = {}
            barrier = threading.Barrier(2)

            def race(
                claims: Any,
                kid: str,
                profile: str = profile,
                barrier: threading.Barrier = barrier,
                answers: dict[str, str] = answers,
            ) -> None:
                barrier.wait()
                answers[kid] = claims.take(profile, kid, 15.0).keeper_id

            threads = [
                threading.Thread(target=race, args=(mine, _A)),
                threading.Thread(target=race, args=(theirs, _B)),
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            (winner,) = set(answers.values())  # both were answered the one holder
            assert winner in (_A, _B)
            assert store.rows("SELECT keeper_id FROM profile_claims WHERE profile=?", profile) == [
                (winner,)
            ]
    finally:
        other.close()


def test_a_neighbours_start_leaves_a_live_keepers_rows_alone(store: Store) -> None:
    """The start-up sweeps of keeper B (its unstopped browsers, its live tabs, its grants'
    lapse, its runs) see only B's rows: keeper A's running browser, live tabs and grants
    stay as they are."""
    a, b = store.keeper(_A), store.keeper(_B)
    a.browsers.started(_browser("bb-a"))
    a.kept_tabs.keep("s", "p", _TABS, "live")
    a.grants.create(_grant("ga", "/a/ga.sock", expires_at=50.0), 0.0)
    a.runs.started(7, "1.0")
    b.runs.started(7, "1.0")  # the same pid on another machine
    assert b.browsers.unstopped() == []
    assert b.kept_tabs.mark_live_auto() == 0
    assert b.grants.lapse(100.0) == []
    assert b.grants.live(0.0) == []
    b.runs.stopped(7)
    assert a.browsers.unstopped() == [_browser("bb-a")]
    assert a.kept_tabs.kept("s", "p").state == "live"
    assert [g.session for g in a.grants.live(0.0)] == ["ga"]
    assert store.rows(
        "SELECT keeper_id, stopped_at IS NULL FROM keeper_runs ORDER BY keeper_id"
    ) == [(_A, True), (_B, False)]
    assert a.kept_tabs.mark_live_auto() == len(_TABS)  # its own next start: its own tabs


def test_a_neighbours_start_leaves_a_live_keepers_trigger_requests_alone(store: Store) -> None:
    """A trigger request came through its keeper's home: keeper B's start takes up only
    its own unsettled ones — A's queued and acting requests are A's to answer."""
    a, b = store.keeper(_A), store.keeper(_B)
    a.triggers.admit("u-queued", "s", "{}", 1.0)
    a.triggers.admit("u-acting", "s", "{}", 1.0)
    a.triggers.claim("u-acting")
    a.triggers.acting("u-acting")
    b.triggers.admit("u-b", "t", "{}", 1.0)
    assert [r.uuid for r in b.triggers.unsettled()] == ["u-b"]
    assert [r.uuid for r in a.triggers.unsettled()] == ["u-queued", "u-acting"]


def test_a_profile_is_made_with_a_released_claim_of_its_maker(store: Store) -> None:
    """Where a new profile's data is (the keeper that made it) before any browser ran it;
    the claim is free, and goes with the profile."""
    a = store.keeper(_A)
    a.profiles.create(_profile("bp-00000001"))
    made = a.claims.holder("bp-00000001")
    assert made is not None
    assert (made.keeper_id, made.released) == (_A, True)
    assert store.keeper(_B).claims.take("bp-00000001", _B, 15.0).keeper_id == _B
    a.profiles.delete("bp-00000001")
    assert a.claims.holder("bp-00000001") is None


def test_kept_tabs_take_over_moves_a_gone_keepers_live_tabs_to_this_one(store: Store) -> None:
    a, b = store.keeper(_A), store.keeper(_B)
    a.kept_tabs.keep("s", "p", _TABS, "live")
    a.kept_tabs.keep("s", "q", _TABS, "live")
    assert b.kept_tabs.take_over("p") == len(_TABS)
    assert b.kept_tabs.kept("s", "p").state == "auto"
    assert a.kept_tabs.mark_live_auto() == len(_TABS)  # only q is still A's


def test_profiles_under_the_data_root_are_stored_relative_to_it(
    store: Store, tmp_path: Path
) -> None:
    """Two keepers mounting the shared data at different places both find the profile's
    directory; an adopted one outside the root stays where it is."""
    here, there = tmp_path / "mnt-a", tmp_path / "mnt-b"
    a = store.keeper(_A, here)
    a.profiles.create(_profile("bp-00000001", dir=str(here / "profiles" / "bp-00000001")))
    a.profiles.create(_profile("bp-00000002", created=2.0, dir="/home/me/chrome", adopted=True))
    assert store.rows("SELECT dir FROM profiles ORDER BY created_at") == [
        ("profiles/bp-00000001",),
        ("/home/me/chrome",),
    ]
    dirs = [r.dir for r in store.keeper(_B, there).profiles.all()]
    assert dirs == [str(there / "profiles" / "bp-00000001"), "/home/me/chrome"]


# -- browsers -------------------------------------------------------------------------------


def _browser(bid: str = "bb-1") -> BrowserRow:
    return BrowserRow(bid, "chromium", None, os.getpid(), "/h", True, 1.0)


def test_browsers_started_are_unstopped(store: Store) -> None:
    store.registry.browsers.started(_browser())
    assert store.registry.browsers.unstopped() == [_browser()]


def test_browsers_set_pid(store: Store) -> None:
    store.registry.browsers.started(_browser())
    store.registry.browsers.set_pid("bb-1", 7)
    assert [r.pid for r in store.registry.browsers.unstopped()] == [7]


def test_browsers_stopped_keeps_the_first_reason(store: Store) -> None:
    store.registry.browsers.started(_browser())
    store.registry.browsers.started(_browser("bb-2"))
    store.registry.browsers.stopped("bb-1", "closed")
    store.registry.browsers.stopped("bb-1", "again")
    assert [r.id for r in store.registry.browsers.unstopped()] == ["bb-2"]
    assert store.rows("SELECT stop_reason FROM browsers WHERE id='bb-1'") == [("closed",)]


def test_browsers_unstopped_is_empty_at_first(store: Store) -> None:
    assert store.registry.browsers.unstopped() == []


# -- sessions -------------------------------------------------------------------------------


def test_sessions_seen_twice_is_one_row(store: Store) -> None:
    store.registry.sessions.seen("s", "env")
    store.registry.sessions.seen("s", "env")
    assert store.rows("SELECT id, origin FROM sessions") == [("s", "env")]


def test_sessions_closed_then_seen_again_reopens(store: Store) -> None:
    sessions = store.registry.sessions
    sessions.seen("s", "env")
    sessions.closed("s")
    assert store.rows("SELECT closed_at IS NOT NULL FROM sessions") == [(1,)]
    sessions.seen("s", "env")
    assert store.rows("SELECT closed_at IS NULL FROM sessions") == [(1,)]


def test_sessions_known_by_any_record(store: Store) -> None:
    sessions = store.registry.sessions
    assert not sessions.known("s")
    sessions.seen("s", "env")
    assert sessions.known("s")
    sessions.set_pin("pinned", None, by_other=False)  # a state row only
    assert sessions.known("pinned")
    store.registry.kept_tabs.keep("kept", "p", [KeptTab("http://x/", "x", True)], "auto")
    assert sessions.known("kept")
    assert not sessions.known("s.1")


def test_sessions_state_of_an_unknown_session(store: Store) -> None:
    assert store.registry.sessions.state("nobody") == SessionState(None, None, False, (), ())


def test_sessions_set_pin_by_other_is_a_change_to_tell(store: Store) -> None:
    pid = _with_profile(store)
    store.registry.sessions.set_pin("s", pid, by_other=False)
    assert store.registry.sessions.state("s") == SessionState(pid, None, False, (), ())
    store.registry.sessions.set_pin("s", None, by_other=True)
    assert store.registry.sessions.state("s") == SessionState(None, None, True, (), ())


def test_sessions_set_last_profile(store: Store) -> None:
    store.registry.sessions.set_last_profile("s", "bp-00000001")
    assert store.registry.sessions.state("s").last_profile == "bp-00000001"
    store.registry.sessions.set_last_profile("s", None)
    assert store.registry.sessions.state("s").last_profile is None


def test_sessions_ack_set_settles_the_change(store: Store) -> None:
    pid = _with_profile(store)
    store.registry.attachments.attach("s", pid, None, by_other=True)
    assert store.registry.sessions.state("s").changed
    store.registry.sessions.ack_set("s", ["work (bp-00000001)"])
    state = store.registry.sessions.state("s")
    assert not state.changed
    assert state.seen_handles == ("work (bp-00000001)",)


def test_sessions_set_ephemeral_domains(store: Store) -> None:
    store.registry.sessions.set_ephemeral_domains("s", ["a.example", "b.example"])
    assert store.registry.sessions.state("s").ephemeral_domains == ("a.example", "b.example")


# -- attachment sets ------------------------------------------------------------------------


def test_attachments_attach_in_order_and_realias(store: Store) -> None:
    first, second = _with_profile(store, "bp-00000001"), _with_profile(store, "bp-00000002")
    att = store.registry.attachments
    att.attach("s", first, "a", by_other=False)
    att.attach("s", second, None, by_other=False)
    att.attach("s", first, None, by_other=False)  # no alias given: the old one stays
    att.attach("s", first, "b", by_other=False)
    assert att.of_session("s") == [Attachment(first, "b"), Attachment(second, None)]
    state = store.registry.sessions.state("s")
    assert (state.last_profile, state.changed) == (first, False)


def test_attachments_detach_drops_the_pin_and_the_last_used(store: Store) -> None:
    pid = _with_profile(store)
    att = store.registry.attachments
    att.attach("s", pid, None, by_other=False)
    store.registry.sessions.set_pin("s", pid, by_other=False)
    att.detach("s", pid, by_other=True)
    assert att.of_session("s") == []
    assert store.registry.sessions.state("s") == SessionState(None, None, True, (), ())


def test_attachments_standing_says_attached_last_used_group_default_and_the_hold(
    store: Store,
) -> None:
    first, second = _with_profile(store, "bp-00000001"), _with_profile(store, "bp-00000002")
    att = store.registry.attachments
    assert att.standing("s", first, "g") == (False, None)
    att.attach("s", first, None, by_other=False)
    assert att.standing("s", first, "g") == (True, None)
    assert att.standing("t", first, "g") == (False, None)  # another session's attachment
    store.registry.groups.set("g", second)
    assert att.standing("t", second, "g") == (True, None)  # its group's default
    assert att.standing("t", second, "h") == (False, None)
    assert store.registry.holds.set(first, "h1", "hg")
    assert att.standing("s", first, "g") == (True, "hg")
    att.detach("s", first, by_other=False)
    assert att.standing("s", first, "g") == (False, "hg")


def test_attachments_of_session_is_empty_at_first(store: Store) -> None:
    assert store.registry.attachments.of_session("s") == []


def test_attachments_of_profile_in_the_order_attached(store: Store) -> None:
    pid = _with_profile(store)
    for session in ("s2", "s1", "s3"):
        store.registry.attachments.attach(session, pid, None, by_other=False)
    assert store.registry.attachments.of_profile(pid) == ["s2", "s1", "s3"]


# -- profiles -------------------------------------------------------------------------------


def test_profiles_create_and_all_oldest_first(store: Store) -> None:
    newer = _profile("bp-00000002", 2.0, proxy="http://p:1", allowed_domains=("a.example",))
    older = _profile("bp-00000001", 1.0, headed=True, adopted=True, options={"cdp_url": "x"})
    store.registry.profiles.create(newer)
    store.registry.profiles.create(older)
    assert store.registry.profiles.all() == [older, newer]


def test_profiles_create_keeps_the_owner_and_the_sharing(store: Store) -> None:
    made = _profile("bp-00000001", owner=group_owner("agents"), sharing="owner")
    store.registry.profiles.create(made)
    store.registry.profiles.create(_profile("bp-00000002", 2.0))
    mine, owners = store.registry.profiles.all()
    assert (mine.owner, mine.sharing) == ("group:agents", "owner")
    assert (owners.owner, owners.sharing) == (THE_OWNER, "granted")  # the defaults
    # A group named "owner" is a valid group name; its profiles are still not the owner's.
    assert group_owner("owner") != THE_OWNER


def test_profiles_delete_takes_everything_that_names_it(store: Store) -> None:
    reg = store.registry
    pid = _with_profile(store)
    reg.attachments.attach("s", pid, None, by_other=False)
    reg.kept_tabs.keep("s", pid, [KeptTab("http://x/", "x", True)], "live")
    reg.holds.set(pid, "s", "g")
    reg.groups.set("g", pid)
    reg.versions.record(pid, 120, "chromium")
    reg.proposals.propose(Proposal(pid, "cloak", "s", 1.0, "why", (), None))
    reg.profiles.delete(pid)
    assert reg.profiles.all() == []
    assert reg.attachments.of_profile(pid) == []
    assert reg.kept_tabs.kept("s", pid) == Kept(None, [])
    assert reg.holds.get(pid) is None
    assert reg.groups.get("g") is None
    assert reg.versions.recorded(pid) is None
    assert reg.proposals.get(pid) is None


def test_profiles_used(store: Store) -> None:
    pid = _with_profile(store)
    store.registry.profiles.used(pid)
    (row,) = store.registry.profiles.all()
    assert row.last_used is not None


def test_profiles_set_backend_settles_the_proposal(store: Store) -> None:
    pid = _with_profile(store)
    store.registry.proposals.propose(Proposal(pid, "cdp", "s", 1.0, "why", (), None))
    store.registry.profiles.set_backend(pid, "cdp", {"cdp_url": "http://127.0.0.1:9222"})
    (row,) = store.registry.profiles.all()
    assert (row.provider, dict(row.options)) == ("cdp", {"cdp_url": "http://127.0.0.1:9222"})
    assert store.registry.proposals.get(pid) is None


# -- kept tabs ------------------------------------------------------------------------------

_TABS = [KeptTab("http://x/1", "one", False), KeptTab("http://x/2", "two", True)]


def test_kept_tabs_keep_replaces_the_list(store: Store) -> None:
    kept = store.registry.kept_tabs
    kept.keep("s", "p", [KeptTab("http://old/", "old", True)], "auto")
    kept.keep("s", "p", _TABS, "live")
    assert kept.kept("s", "p") == Kept("live", _TABS)


def test_kept_tabs_kept_is_none_when_nothing_is_kept(store: Store) -> None:
    assert store.registry.kept_tabs.kept("s", "p") == Kept(None, [])


def test_kept_tabs_drop(store: Store) -> None:
    kept = store.registry.kept_tabs
    kept.keep("s", "p", _TABS, "live")
    kept.keep("s", "q", _TABS, "live")
    kept.drop("s", "p")
    assert kept.kept("s", "p") == Kept(None, [])
    assert kept.kept("s", "q").tabs == _TABS


def test_kept_tabs_mark(store: Store) -> None:
    store.registry.kept_tabs.keep("s", "p", _TABS, "live")
    store.registry.kept_tabs.mark("s", "p", "deliberate")
    assert store.registry.kept_tabs.kept("s", "p").state == "deliberate"


def test_kept_tabs_mark_live_auto_counts_the_tabs(store: Store) -> None:
    kept = store.registry.kept_tabs
    kept.keep("s", "p", _TABS, "live")
    kept.keep("s", "q", _TABS[:1], "deliberate")
    assert kept.mark_live_auto() == 2
    assert (kept.kept("s", "p").state, kept.kept("s", "q").state) == ("auto", "deliberate")


def test_kept_tabs_park_moves_them_aside_and_the_newest_close_wins(store: Store) -> None:
    kept = store.registry.kept_tabs
    kept.keep("s", "p", _TABS[:1], "live")
    kept.park("s", "p")
    kept.keep("s", "p", _TABS, "live")
    kept.park("s", "p")
    assert kept.kept("s", "p") == Kept(None, [])
    assert kept.kept("s", "p" + PARKED) == Kept("deliberate", _TABS)


# -- holds and group defaults ---------------------------------------------------------------


def test_holds_get_is_none_when_free(store: Store) -> None:
    assert store.registry.holds.get("p") is None


def test_holds_set_by_the_holding_group_replaces_the_holder(store: Store) -> None:
    assert store.registry.holds.set("p", "s1", "g1")
    assert store.registry.holds.set("p", "s2", "g1")
    hold = store.registry.holds.get("p")
    assert isinstance(hold, Hold)
    assert (hold.holder, hold.group) == ("s2", "g1")
    assert hold.since > 0


def test_holds_of_profiles_answers_each_profiles_hold_as_get_does(store: Store) -> None:
    holds = store.registry.holds
    assert holds.of_profiles([]) == {}
    assert holds.set("p1", "s1", "g1")
    assert holds.set("p3", "s3", "g3")
    found = holds.of_profiles(["p1", "p2", "p3", "p1"])
    assert list(found) == ["p1", "p2", "p3"]
    assert found == {p: holds.get(p) for p in ("p1", "p2", "p3")}
    assert found["p2"] is None
    held = found["p1"]
    assert held is not None
    assert (held.holder, held.group) == ("s1", "g1")
    holds.release("p1", "s1")
    assert holds.of_profiles(["p1"]) == {"p1": None}


def test_holds_set_by_another_group_changes_nothing(store: Store) -> None:
    assert store.registry.holds.set("p", "s1", "g1")
    assert not store.registry.holds.set("p", "s2", "g2")
    hold = store.registry.holds.get("p")
    assert hold is not None
    assert (hold.holder, hold.group) == ("s1", "g1")


def test_holds_release_only_by_its_holder(store: Store) -> None:
    store.registry.holds.set("p", "s", "g")
    assert not store.registry.holds.release("p", "other")
    assert store.registry.holds.get("p") is not None
    assert store.registry.holds.release("p", "s")
    assert store.registry.holds.get("p") is None


def test_holds_drop_orphans_releases_holds_without_their_attachment(store: Store) -> None:
    attached, cut = _with_profile(store, "bp-00000001"), _with_profile(store, "bp-00000002")
    store.registry.attachments.attach("s", attached, None, by_other=False)
    store.registry.holds.set(attached, "s", "g")
    store.registry.holds.set(cut, "s", "g")  # a `use --exclusive` cut before it attached
    assert store.registry.holds.drop_orphans() == 1
    assert store.registry.holds.get(attached) is not None
    assert store.registry.holds.get(cut) is None


def test_holds_queue_grants_the_head_first_and_waits_for_the_holders_group(
    store: Store,
) -> None:
    holds = store.registry.holds
    first = holds.enqueue("p", "s1", "g1")
    second = holds.enqueue("p", "s2", "g2")
    assert [w.session for w in holds.waiters("p")] == ["s1", "s2"]
    early = holds.grant(second)  # not its turn: the head is s1
    assert not early.granted
    assert early.ahead is not None
    assert early.ahead.session == "s1"
    assert early.hold is None
    turn = holds.grant(first)
    assert turn.granted
    assert turn.hold is not None
    assert (turn.hold.holder, turn.hold.group) == ("s1", "g1")
    blocked = holds.grant(second)  # its turn, but g1 holds it
    assert not blocked.granted
    assert blocked.ahead is None
    assert blocked.hold is not None
    assert blocked.hold.holder == "s1"
    assert holds.release("p", "s1")
    assert holds.grant(second).granted
    assert holds.waiters("p") == []


def test_holds_grant_of_a_waiter_that_left_says_it_is_not_queued(store: Store) -> None:
    holds = store.registry.holds
    seq = holds.enqueue("p", "s", "g")
    holds.leave(seq)
    assert holds.grant(seq).queued is False
    assert holds.get("p") is None


def test_holds_queue_of_two_keepers_is_one_fifo(two_keepers: TwoKeepers) -> None:
    a, b = two_keepers.a, two_keepers.b
    on_a = a.holds.enqueue("p", "sa", "ga")
    on_b = b.holds.enqueue("p", "sb", "gb")
    turn = b.holds.grant(on_b)
    assert not turn.granted
    assert turn.ahead is not None
    assert (turn.ahead.session, turn.ahead.keeper_id) == ("sa", KP_A)
    assert a.holds.grant(on_a).granted
    hold = b.holds.get("p")
    assert hold is not None
    assert (hold.holder, hold.keeper_id, hold.host) == ("sa", KP_A, "host-a")
    assert not b.holds.grant(on_b).granted
    assert a.holds.release("p", "sa")
    assert b.holds.grant(on_b).granted


def test_a_keepers_start_drops_only_its_own_waiters_and_orphaned_holds(
    two_keepers: TwoKeepers,
) -> None:
    """Keeper B's start must not drop what live keeper A has in the registry: a hold its
    ``use --exclusive`` wrote a moment before the attachment, and its waiters. (On main,
    drop_orphans dropped every hold without its attachment, whoever's, and the queue was
    each keeper's memory.)"""
    a, b = two_keepers.a, two_keepers.b
    a.holds.set("p-a", "sa", "ga")  # A, between its hold and its attachment
    waiting_on_a = a.holds.enqueue("p-a", "wa", "gw")
    b.holds.set("p-b", "sb", "gb")  # B's, cut by B's death before it attached
    b.holds.enqueue("p-a", "wb", "gw")  # B's waiter, dead with B's last run
    assert b.holds.drop_orphans() == 1
    assert a.holds.get("p-a") is not None
    assert b.holds.get("p-b") is None
    assert [w.seq for w in a.holds.waiters("p-a")] == [waiting_on_a]


def test_holds_of_a_keeper_that_stopped_beating_are_reclaimed_once_and_audited(
    two_keepers: TwoKeepers,
) -> None:
    a, b = two_keepers.a, two_keepers.b
    a.holds.set("p", "sa", "ga")
    a.holds.enqueue("p", "wa", "gw")
    mine = b.holds.enqueue("p", "wb", "gw")
    assert b.holds.reclaim("p", 30.0) == Reclaimed([], [])  # A beats: nothing goes
    two_keepers.rows("UPDATE keepers SET beat_at = beat_at - 60 WHERE id=?", KP_A)
    gone = b.holds.reclaim("p", 30.0)
    assert [(h.holder, h.keeper_id) for h in gone.holds] == [("sa", KP_A)]
    assert [w.session for w in gone.waiters] == ["wa"]
    assert a.holds.reclaim("p", 30.0) == Reclaimed([], [])  # gone once, whoever looks next
    assert b.holds.get("p") is None
    assert [w.seq for w in b.holds.waiters("p")] == [mine]
    audited = [(r.verb, r.session, r.profile, r.actor) for r in b.audit.rows("p", 10)]
    assert audited == [
        (RECLAIMED, "sa", "p", f"keeper:{KP_B}"),
        (RECLAIMED, "wa", "p", f"keeper:{KP_B}"),
    ]


def test_holds_of_a_keeper_that_said_it_stopped_are_reclaimed(two_keepers: TwoKeepers) -> None:
    a, b = two_keepers.a, two_keepers.b
    a.holds.set("p", "sa", "ga")
    a.keepers.stop(KP_A)
    assert [h.holder for h in b.holds.reclaim("p", 30.0).holds] == ["sa"]


def test_groups_get_is_none_at_first(store: Store) -> None:
    assert store.registry.groups.get("g") is None


def test_groups_set_replaces_the_default(store: Store) -> None:
    store.registry.groups.set("g", "bp-00000001")
    store.registry.groups.set("g", "bp-00000002")
    assert store.registry.groups.get("g") == "bp-00000002"


# -- trigger claims -------------------------------------------------------------------------


def _admit(store: Store, uuid: str, session: str = "s") -> None:
    store.registry.triggers.admit(uuid, session, '{"action": "open"}', 100.0)


def test_triggers_admit_queues_in_admission_order(store: Store) -> None:
    triggers = store.registry.triggers
    assert triggers.record("u-1") is None
    _admit(store, "u-2")
    _admit(store, "u-1", "t")
    rows = triggers.unsettled()
    assert [(r.uuid, r.phase, r.session) for r in rows] == [
        ("u-2", "queued", "s"),
        ("u-1", "queued", "t"),
    ]
    assert rows[0].seq < rows[1].seq
    assert rows[0].request == '{"action": "open"}'
    assert rows[0].published_at == 100.0


def test_triggers_admit_of_a_recorded_uuid_changes_nothing(store: Store) -> None:
    triggers = store.registry.triggers
    _admit(store, "u-1")
    triggers.claim("u-1")
    again = triggers.admit("u-1", "other", '{"action": "stop"}', 200.0)
    assert (again.phase, again.session, again.request) == ("claimed", "s", '{"action": "open"}')


def test_triggers_claim_answers_the_record_before_it(store: Store) -> None:
    triggers = store.registry.triggers
    _admit(store, "u-1")
    assert triggers.claim("u-1").phase == "queued"  # this call claimed it
    assert triggers.claim("u-1").phase == "claimed"  # claimed before: unchanged
    triggers.acting("u-1")
    assert triggers.claim("u-1").phase == "acting"


def test_triggers_the_first_terminal_result_wins(store: Store) -> None:
    triggers = store.registry.triggers
    _admit(store, "u-1")
    triggers.claim("u-1")
    assert triggers.finish("u-1", "s", '{"ok": true}') == '{"ok": true}'
    assert triggers.finish("u-1", "s", '{"ok": false}') == '{"ok": true}'
    record = triggers.record("u-1")
    assert record is not None
    assert (record.phase, record.result) == ("done", '{"ok": true}')


def test_triggers_a_refusal_before_admission_is_recorded_and_final(store: Store) -> None:
    triggers = store.registry.triggers
    assert triggers.finish("u-1", None, '{"reason": "unsupported version"}') == (
        '{"reason": "unsupported version"}'
    )
    # The same UUID, published again and valid now, is answered from the record.
    assert triggers.admit("u-1", "s", "{}", 1.0).phase == "done"
    assert triggers.finish("u-1", "s", '{"ok": true}') == '{"reason": "unsupported version"}'


def test_triggers_unsettled_until_done_and_published(store: Store) -> None:
    triggers = store.registry.triggers
    _admit(store, "u-1")
    _admit(store, "u-2")
    triggers.claim("u-1")
    triggers.acting("u-1")
    triggers.finish("u-2", "s", "{}")
    assert [(r.uuid, r.phase) for r in triggers.unsettled()] == [("u-1", "acting"), ("u-2", "done")]
    triggers.published("u-2")
    assert [r.uuid for r in triggers.unsettled()] == ["u-1"]


# -- site hints -----------------------------------------------------------------------------


def _hint(host: str, at: float, tier: int | None = 3, backend: str | None = None) -> SiteHint:
    return SiteHint(host, tier, backend, "s", at, "why")  # type: ignore[arg-type]


def test_hints_add_and_of_one_host_in_order(store: Store) -> None:
    hints = store.registry.hints
    hints.add(_hint("a.example", 1.0))
    hints.add(_hint("b.example", 2.0))
    hints.add(_hint("a.example", 3.0, None, "cloak"))
    assert hints.of("a.example") == [
        _hint("a.example", 1.0),
        _hint("a.example", 3.0, None, "cloak"),
    ]
    assert hints.of("c.example") == []


def test_hints_of_every_host_by_host(store: Store) -> None:
    hints = store.registry.hints
    hints.add(_hint("b.example", 1.0))
    hints.add(_hint("a.example", 2.0))
    assert [h.host for h in hints.of()] == ["a.example", "b.example"]


def test_hints_forget_counts(store: Store) -> None:
    hints = store.registry.hints
    hints.add(_hint("a.example", 1.0))
    hints.add(_hint("a.example", 2.0))
    hints.add(_hint("b.example", 3.0))
    assert hints.forget("a.example") == 2
    assert [h.host for h in hints.of()] == ["b.example"]


# -- backend switches -----------------------------------------------------------------------


def test_versions_record_keeps_the_highest_major(store: Store) -> None:
    versions = store.registry.versions
    versions.record("p", 130, "cloak")
    versions.record("p", 120, "chromium")
    assert versions.recorded("p") == Recorded(130, "cloak")
    versions.record("p", 131, "chromium")
    assert versions.recorded("p") == Recorded(131, "chromium")


def test_versions_recorded_is_none_at_first(store: Store) -> None:
    assert store.registry.versions.recorded("p") is None


def test_proposals_propose_replaces_the_older(store: Store) -> None:
    proposals = store.registry.proposals
    proposals.propose(Proposal("p", "cloak", "s1", 1.0, "why", ("s2",), None))
    newer = Proposal("p", "cdp", "s2", 2.0, "because", ("s1", "s3"), "http://x/")
    proposals.propose(newer)
    assert proposals.get("p") == newer


def test_proposals_get_is_none_at_first(store: Store) -> None:
    assert store.registry.proposals.get("p") is None


def test_proposals_drop(store: Store) -> None:
    store.registry.proposals.propose(Proposal("p", "cloak", "s", 1.0, "why", (), None))
    store.registry.proposals.drop("p")
    assert store.registry.proposals.get("p") is None


# -- audit ----------------------------------------------------------------------------------


def test_audit_record_and_rows_newest_last(store: Store) -> None:
    audit = store.registry.audit
    audit.record("s", "bp-1", "open", True, None, "cli")
    audit.record("s", None, "click", False, "tab_gone")
    audit.record("t", "bp-2", "snapshot", True, None, "mcp")
    rows = audit.rows(None, 2)
    assert [(r.session, r.profile, r.verb, r.ok, r.code, r.road) for r in rows] == [
        ("s", None, "click", False, "tab_gone", None),
        ("t", "bp-2", "snapshot", True, None, "mcp"),
    ]
    assert all(isinstance(r, AuditRow) and r.at > 0 for r in rows)
    assert [r.verb for r in audit.rows("bp-1", 50)] == ["open"]


def test_audit_rows_carry_their_actor_and_an_unknown_one_shows_so(store: Store) -> None:
    audit = store.registry.audit
    audit.record("s", None, "open", True, None, "cli", "owner")
    audit.record("s", None, "click", True, None, "api", "session-socket:s")
    audit.record("s", None, "open", True, None, "trigger", "trigger")
    audit.record("s", None, "open", True, None, "cli")  # a row from before migration 8
    rows = audit.rows(None, 4)
    assert [r.actor for r in rows] == ["owner", "session-socket:s", "trigger", None]
    assert [r.as_row()["actor"] for r in rows] == [
        "owner",
        "session-socket:s",
        "trigger",
        "unknown",
    ]


# -- grants ---------------------------------------------------------------------------------


def _grant(session: str = "a1", socket: str = "/run/a/a1.sock", **kw: Any) -> GrantRow:
    fields: dict[str, Any] = {
        "profiles": ("bp-1", "bp-2"),
        "parent": None,
        "created_at": 100.0,
        "expires_at": None,
        **kw,
    }
    return GrantRow(session, socket, **fields)


def test_grants_create_and_get_round_trip(store: Store) -> None:
    row = _grant(parent="p", expires_at=200.0)
    store.registry.grants.create(row, 150.0)
    assert store.registry.grants.get("a1") == row
    assert store.registry.grants.get("nobody") is None


def test_grants_create_refuses_a_live_grant_of_the_session_or_the_socket(store: Store) -> None:
    grants = store.registry.grants
    grants.create(_grant(), 100.0)
    with pytest.raises(GrantTaken):
        grants.create(_grant(socket="/run/a/other.sock"), 100.0)
    with pytest.raises(GrantTaken):
        grants.create(_grant(session="a2"), 100.0)
    assert [r[0] for r in store.rows("SELECT session FROM grants")] == ["a1"]


def test_grants_create_replaces_a_revoked_or_expired_grant(store: Store) -> None:
    grants = store.registry.grants
    grants.create(_grant(), 100.0)
    assert grants.revoke("a1", 110.0)
    grants.create(_grant(socket="/run/a/new.sock"), 120.0)  # the session again
    grants.create(_grant(session="a2", expires_at=130.0), 120.0)
    grants.create(_grant(session="a3", socket="/run/a/a1.sock"), 140.0)  # a2 expired
    got = store.rows("SELECT session, socket, revoked_at FROM grants ORDER BY session")
    assert got == [("a1", "/run/a/new.sock", None), ("a3", "/run/a/a1.sock", None)]


def test_grants_live_leaves_out_the_revoked_and_the_expired(store: Store) -> None:
    grants = store.registry.grants
    grants.create(_grant("b", "/s/b", created_at=2.0), 0.0)
    grants.create(_grant("a", "/s/a", created_at=1.0), 0.0)
    grants.create(_grant("c", "/s/c", created_at=3.0, expires_at=50.0), 0.0)
    grants.create(_grant("d", "/s/d", created_at=4.0), 0.0)
    grants.revoke("d", 10.0)
    assert [r.session for r in grants.live(20.0)] == ["a", "b", "c"]  # oldest first
    assert [r.session for r in grants.live(50.0)] == ["a", "b"]


def test_grants_lapse_marks_what_expired_at_its_expiry(store: Store) -> None:
    grants = store.registry.grants
    grants.create(_grant("a", "/s/a", expires_at=50.0), 0.0)
    grants.create(_grant("b", "/s/b", expires_at=500.0), 0.0)
    grants.create(_grant("c", "/s/c"), 0.0)
    grants.create(_grant("d", "/s/d", expires_at=40.0), 0.0)
    grants.revoke("d", 30.0)
    assert grants.lapse(100.0) == ["a"]
    assert grants.lapse(100.0) == []
    got = store.rows("SELECT session, revoked_at FROM grants ORDER BY session")
    assert got == [("a", 50.0), ("b", None), ("c", None), ("d", 30.0)]


def test_grants_children_lists_every_child_live_or_dead(store: Store) -> None:
    grants = store.registry.grants
    grants.create(_grant("p", "/s/p"), 0.0)
    grants.create(_grant("p.2", "/s/p.2", parent="p", created_at=2.0), 0.0)
    grants.create(_grant("p.1", "/s/p.1", parent="p", created_at=1.0), 0.0)
    grants.create(_grant("p.1.1", "/s/p.1.1", parent="p.1", created_at=3.0), 0.0)
    grants.revoke("p.1", 10.0)
    assert [r.session for r in grants.children("p")] == ["p.1", "p.2"]  # oldest first
    assert [r.session for r in grants.children("p.1")] == ["p.1.1"]
    assert grants.children("p.2") == []


def test_grants_revoke_records_when_once(store: Store) -> None:
    grants = store.registry.grants
    grants.create(_grant(), 0.0)
    assert grants.revoke("a1", 10.0)
    assert not grants.revoke("a1", 20.0)
    assert not grants.revoke("nobody", 20.0)
    revoked = grants.get("a1")
    assert revoked is not None
    assert revoked.revoked_at == 10.0
    assert not revoked.live(11.0)


# -- the SQLite file ------------------------------------------------------------------------


def test_the_file_is_private_in_wal_mode_and_migrates_once(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite3"
    reg = open_sqlite(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    reg.sessions.seen("s", "env")
    reg.close()
    again = open_sqlite(path)  # reopening applies nothing twice
    assert again.schema.schema_version() == len(MIGRATIONS)
    assert again.schema.integrity_check() == "ok"
    again.close()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM sessions").fetchone() == (1,)
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_a_registry_from_a_newer_browserbay_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version={len(MIGRATIONS) + 1}")
    with pytest.raises(RuntimeError, match="upgrade browserbay"):
        open_sqlite(path)


def test_a_failed_migration_leaves_nothing_half_applied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import browserbay.registry.db as registry_db

    monkeypatch.setattr(
        registry_db, "MIGRATIONS", (*MIGRATIONS, "CREATE TABLE t1 (a); CREATE TABLE oops (")
    )
    with pytest.raises(sqlite3.OperationalError):
        open_sqlite(tmp_path / "r.sqlite3")
    with sqlite3.connect(tmp_path / "r.sqlite3") as db:
        assert db.execute("PRAGMA user_version").fetchone() == (len(MIGRATIONS),)
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "t1" not in tables


def test_the_hints_table_refuses_a_row_that_breaks_the_rule(tmp_path: Path) -> None:
    """A hint names a tier or a backend, never both: the table holds the rule too."""
    db = Database(tmp_path / "r.sqlite3")
    with pytest.raises(sqlite3.IntegrityError):
        db.execute(
            "INSERT INTO site_hints(host, tier, backend, by, at, why) "
            "VALUES ('a.example', 2, 'cloak', 's', 0, 'w')"
        )
    columns = {r[1] for r in db.execute("PRAGMA table_info(profiles)")}
    assert "tier" not in columns  # a profile's tier is derived, never stored
    db.close()


def test_a_profile_made_before_owners_is_the_owners_and_granted(tmp_path: Path) -> None:
    """Migration 8's defaults: every profile that existed before it belongs to the owner,
    who may grant it (as every session could use it before)."""
    path = tmp_path / "r.sqlite3"
    with sqlite3.connect(path) as db:
        for script in MIGRATIONS[:7]:
            db.executescript(script)
        db.execute("PRAGMA user_version=7")
        db.execute(
            "INSERT INTO profiles(id, label, provider, dir, proxy, allowed_domains, headed, "
            "adopted, created_at, last_used) "
            "VALUES ('bp-00000001', 'work', 'chromium', '/p', NULL, '[]', 0, 0, 1.0, NULL)"
        )
    reg = open_sqlite(path)
    (row,) = reg.profiles.all()
    assert (row.owner, row.sharing) == (THE_OWNER, "granted")
    reg.close()


def test_a_trigger_claim_made_before_migration_9_is_kept(tmp_path: Path) -> None:
    """Migration 9 carries migration 3's claims over: a finished one is done (its result
    stands), an unfinished one may have acted (``acting``: the next keeper answers it
    ``interrupted by restart``, uncertain)."""
    path = tmp_path / "r.sqlite3"
    with sqlite3.connect(path) as db:
        for script in MIGRATIONS[:8]:
            db.executescript(script)
        db.execute("PRAGMA user_version=8")
        db.execute(
            "INSERT INTO trigger_claims(uuid, action, session, claimed_at, result) "
            "VALUES ('u-1', 'open', 's', 1.0, '{\"ok\": true}'), ('u-2', 'stop', 't', 2.0, NULL)"
        )
    reg = open_sqlite(path)
    done, unfinished = reg.triggers.record("u-1"), reg.triggers.record("u-2")
    assert done is not None
    assert unfinished is not None
    assert (done.phase, done.result, done.result_published) == ("done", '{"ok": true}', True)
    assert (unfinished.phase, unfinished.session) == ("acting", "t")
    assert [r.uuid for r in reg.triggers.unsettled()] == ["u-2"]
    reg.close()


def test_migration_10_stores_a_homes_profile_directories_relative_to_its_data(
    tmp_path: Path,
) -> None:
    """A profile made before migration 10 holds its machine's absolute path; one under a
    home's data/profiles becomes ``profiles/<id>``, found under any keeper's data root
    (BAY_FLEET_DATA); an adopted directory stays as it is."""
    path = tmp_path / "r.sqlite3"
    made = "/home/me/.bay/data/profiles/bp-00000001"
    with sqlite3.connect(path) as db:
        for script in MIGRATIONS[:9]:
            db.executescript(script)
        db.execute("PRAGMA user_version=9")
        for pid, directory, adopted in (
            ("bp-00000001", made, 0),
            ("bp-00000002", "/home/me/chrome-profile", 1),
        ):
            db.execute(
                "INSERT INTO profiles(id, label, provider, dir, adopted, created_at) "
                "VALUES (?, 'w', 'chromium', ?, ?, 1.0)",
                (pid, directory, adopted),
            )
    reg = open_sqlite(path, data_root=tmp_path / "shared")
    assert [r.dir for r in reg.profiles.all()] == [
        str(tmp_path / "shared" / "profiles" / "bp-00000001"),
        "/home/me/chrome-profile",
    ]
    reg.close()


# Two keepers writing one registry at once (issue 22): every check-then-write holds when the
# check and the write of two keepers interleave — exactly one winner, no duplicate, no lost row.

RACE_ROUNDS = 25


def test_of_two_keepers_granting_one_session_at_once_exactly_one_wins(
    two_keepers: TwoKeepers,
) -> None:
    """The check (a live grant of the session?) and the write were two steps: both keepers
    saw none, and the later write deleted the earlier one's live grant (SQLite: both
    answered granted, one grant lost) or died on the key (PostgreSQL: a UniqueViolation,
    not GrantTaken)."""
    a, b = two_keepers.a, two_keepers.b
    rounds = _race(
        RACE_ROUNDS,
        lambda i: a.grants.create(_grant(f"r{i}", f"/run/a/r{i}-a.sock"), 100.0),
        lambda i: b.grants.create(_grant(f"r{i}", f"/run/a/r{i}-b.sock"), 100.0),
    )
    for i, answers in enumerate(rounds):
        won = [k for k, got in enumerate(answers) if got is None]
        assert len(won) == 1, answers
        assert isinstance(answers[1 - won[0]], GrantTaken), answers
        row = a.grants.get(f"r{i}")
        assert row is not None
        assert row.socket == f"/run/a/r{i}-{'ab'[won[0]]}.sock"


def test_two_keepers_attaching_to_one_session_at_once_give_each_its_own_place(
    two_keepers: TwoKeepers,
) -> None:
    """An attachment's position was read (max + 1) in the statement that wrote it, before
    the session's row was locked: two keepers on PostgreSQL read the same max and gave both
    profiles one position."""
    a, b = two_keepers.a, two_keepers.b
    first, second = "bp-00000001", "bp-00000002"
    a.profiles.create(_profile(first))
    a.profiles.create(_profile(second))
    for i in range(RACE_ROUNDS):  # sessions the registry knows already
        a.sessions.ack_set(f"s{i}", [])
    _race(
        RACE_ROUNDS,
        lambda i: a.attachments.attach(f"s{i}", first, None, by_other=False),
        lambda i: b.attachments.attach(f"s{i}", second, None, by_other=False),
    )
    for i in range(RACE_ROUNDS):
        assert sorted(x.profile for x in a.attachments.of_session(f"s{i}")) == [first, second]
        positions = two_keepers.rows(
            "SELECT position FROM attachments WHERE session=? ORDER BY position", f"s{i}"
        )
        assert [p[0] for p in positions] == [1, 2], i


def _exactly_one_holds(a: Registry, rounds: list[list[Any]]) -> None:
    """Each round's two answers are one yes and one no, and the hold names the yes's session
    (``sa`` for keeper a, ``sb`` for keeper b)."""
    for i, answers in enumerate(rounds):
        assert sorted(answers, key=str) == [False, True], answers
        hold = a.holds.get(f"p{i}")
        assert hold is not None
        assert hold.holder == ("sa", "sb")[answers.index(True)]


def test_of_two_keepers_holding_one_profile_at_once_exactly_one_holds_it(
    two_keepers: TwoKeepers,
) -> None:
    """``set`` overwrote whatever hold stood: both keepers' sessions were told they held
    the profile exclusively, and the later write took it from the earlier one."""
    a, b = two_keepers.a, two_keepers.b
    rounds = _race(
        RACE_ROUNDS,
        lambda i: a.holds.set(f"p{i}", "sa", "ga"),
        lambda i: b.holds.set(f"p{i}", "sb", "gb"),
    )
    _exactly_one_holds(a, rounds)


def test_of_two_keepers_queueing_for_one_free_profile_at_once_exactly_one_gets_it(
    two_keepers: TwoKeepers,
) -> None:
    """Two keepers' waiters join an empty queue and look at once: one holds the profile,
    the other finds that hold (never both granted, never neither)."""
    a, b = two_keepers.a, two_keepers.b

    def queue_and_look(reg: Registry, session: str, i: int) -> bool:
        return reg.holds.grant(reg.holds.enqueue(f"p{i}", session, session)).granted

    rounds = _race(
        RACE_ROUNDS,
        lambda i: queue_and_look(a, "sa", i),
        lambda i: queue_and_look(b, "sb", i),
    )
    _exactly_one_holds(a, rounds)


def test_of_two_keepers_keeping_one_leases_tabs_at_once_one_whole_list_stands(
    two_keepers: TwoKeepers,
) -> None:
    """The list was deleted, then inserted: on PostgreSQL the second keeper's delete missed
    the first's uncommitted rows and its insert died on their key (UniqueViolation)."""
    a, b = two_keepers.a, two_keepers.b
    one = [KeptTab("https://a.example/", "a", True)]
    two = [KeptTab("https://b.example/1", "b1", False), KeptTab("https://b.example/2", "b2", True)]
    rounds = _race(
        RACE_ROUNDS * 2,
        lambda i: a.kept_tabs.keep(f"s{i}", "p", one, "live"),
        lambda i: b.kept_tabs.keep(f"s{i}", "p", two, "live"),
    )
    for i, answers in enumerate(rounds):
        assert answers == [None, None], answers
        assert a.kept_tabs.kept(f"s{i}", "p").tabs in (one, two)


def test_of_two_keepers_lapsing_grants_at_once_each_grant_lapses_once(
    two_keepers: TwoKeepers,
) -> None:
    """The expired grants were read, then marked: both keepers answered every one of them
    (each would audit its end)."""
    a, b = two_keepers.a, two_keepers.b
    for i in range(RACE_ROUNDS):
        a.grants.create(_grant(f"l{i}", f"/s/l{i}", expires_at=float(i)), 0.0)
    (answers,) = _race(1, lambda _i: a.grants.lapse(100.0), lambda _i: b.grants.lapse(100.0))
    assert not any(isinstance(x, Exception) for x in answers), answers
    lapsed = [s for x in answers if isinstance(x, list) for s in x]
    assert sorted(lapsed) == sorted(f"l{i}" for i in range(RACE_ROUNDS))


# PostgreSQL's own promises (the same migrations, rendered for the server).


def test_two_keepers_opening_one_postgresql_schema_migrate_it_once(postgres: PgServer) -> None:
    """Two stores opening one empty schema at once: the advisory lock makes one migrate and
    the other find it migrated (without it the second fails on tables that exist)."""
    with postgres.fresh_schema_url() as url:
        opened: list[PgDatabase] = []
        failed: list[BaseException] = []

        def open_one() -> None:
            try:
                opened.append(PgDatabase(url))
            except BaseException as exc:
                failed.append(exc)

        threads = [threading.Thread(target=open_one) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert failed == []
        assert [db.schema_version() for db in opened] == [len(MIGRATIONS)] * 2
        assert opened[0].execute("SELECT count(*) FROM bay_schema").fetchone() == (1,)
        for db in opened:
            db.close()


def test_a_failed_migration_on_postgresql_leaves_nothing_half_applied(
    postgres: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import browserbay.registry.db as registry_db

    monkeypatch.setattr(
        registry_db, "MIGRATIONS", (*MIGRATIONS, "CREATE TABLE t1 (a TEXT); CREATE TABLE oops (")
    )
    with postgres.fresh_schema_url() as url:
        with pytest.raises(psycopg.errors.SyntaxError):
            PgDatabase(url)
        monkeypatch.setattr(registry_db, "MIGRATIONS", MIGRATIONS)
        db = PgDatabase(url)  # nothing of the failed run stood in the way
        assert db.schema_version() == len(MIGRATIONS)
        assert db.execute("SELECT to_regclass('t1')").fetchone() == (None,)
        db.close()


def test_of_two_stores_claiming_one_trigger_request_exactly_one_claims_it(
    postgres: PgServer,
) -> None:
    """The claim is one conditional update: four stores on one server (four connections,
    as keepers of a fleet would be) race for it and one wins. (A SQLite store is one
    connection used from one thread: no race to run there.)"""
    with postgres.schema_url() as url:
        stores = [PgDatabase(url) for _ in range(4)]
        sql_registry(stores[0]).triggers.admit("u-race", "s", "{}", 1.0)
        answers: list[str] = []
        threads = [
            threading.Thread(
                target=lambda db=db: answers.append(sql_registry(db).triggers.claim("u-race").phase)
            )
            for db in stores
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for db in stores:
            db.close()
    assert sorted(answers) == ["claimed", "claimed", "claimed", "queued"]


# -- key homes (migration 12) ----------------------------------------------------------------


def test_key_homes_bind_keeps_the_first_keeper_for_an_integration(store: Store) -> None:
    homes = store.registry.key_homes
    store.registry.profiles.create(_profile("bp-00000001"))
    assert homes.of("bp-00000001") is None
    a = KeyHome("bp-00000001", "kp-aaaaaaaa", "host-a", "cloak", "user", 10.0)
    assert homes.bind(a) == a
    b = KeyHome("bp-00000001", "kp-bbbbbbbb", "host-b", "cloak", "cluster", 11.0)
    assert homes.bind(b) == a  # the first one's stands: a key is never re-homed by a start
    moved = KeyHome("bp-00000001", "kp-bbbbbbbb", "host-b", "cloud:steel", "user", 12.0)
    assert homes.bind(moved) == moved  # a switch to another keyed provider: a new key home
    homes.unbind("bp-00000001")
    assert homes.of("bp-00000001") is None
    assert store.rows("SELECT count(*) FROM key_homes") == [(0,)]


def test_key_homes_go_with_their_profile(store: Store) -> None:
    store.registry.profiles.create(_profile("bp-00000002"))
    store.registry.key_homes.bind(KeyHome("bp-00000002", "kp-aaaaaaaa", "h", "cloak", "user", 1))
    store.registry.profiles.delete("bp-00000002")
    assert store.registry.key_homes.of("bp-00000002") is None


def test_key_homes_race_one_binding_wins(two_keepers: TwoKeepers) -> None:
    two_keepers.a.profiles.create(_profile("bp-00000003"))
    results = _race(
        5,
        lambda i: two_keepers.a.key_homes.bind(
            KeyHome("bp-00000003", "kp-aaaaaaaa", "host-a", f"int{i}", "user", 1.0)
        ),
        lambda i: two_keepers.b.key_homes.bind(
            KeyHome("bp-00000003", "kp-bbbbbbbb", "host-b", f"int{i}", "user", 1.0)
        ),
    )
    for answers in results:
        assert not [x for x in answers if isinstance(x, Exception)], answers
        first, second = answers
        assert isinstance(first, KeyHome)
        assert first == second  # both see the one that stands


# -- the change clock (migration 13) --------------------------------------------------------


class _Heard:
    """A change listener's sink: what it was told, in order."""

    def __init__(self) -> None:
        self.said: list[tuple[Any, ...]] = []
        self.lock = threading.Lock()

    def listening(self, clock: int) -> None:
        with self.lock:
            self.said.append(("listening", clock))

    def lost(self) -> None:
        with self.lock:
            self.said.append(("lost",))

    def change(self, clock: int, profile: str) -> None:
        with self.lock:
            self.said.append(("change", clock, profile))

    def ping(self, keeper_id: str, n: int) -> None:
        with self.lock:
            self.said.append(("ping", keeper_id, n))

    def pinged(self, n: int) -> bool:
        with self.lock:
            return ("ping", SOLE_KEEPER, n) in self.said

    def changes(self) -> list[tuple[int, str]]:
        with self.lock:
            return [(s[1], s[2]) for s in self.said if s[0] == "change"]


def test_every_input_of_standing_bumps_the_clock_and_is_heard_in_commit_order(
    store: Store,
) -> None:
    """On PostgreSQL an attachment, a session's last-used profile, a group's default and a
    hold each bump the clock once per profile they touch, and the listener hears
    ``<clock> <profile>`` in clock order, then the keeper's own ping (sent after them: the
    listener has heard every change before it); a change of nothing standing reads (a pin,
    an acknowledgement) bumps nothing. ``standing_at`` and ``of_session_at`` read the clock
    in their own statement. On SQLite the clock stays 0 (no fleet there)."""
    first, second = _with_profile(store, "bp-00000001"), _with_profile(store, "bp-00000002")
    reg = store.registry
    assert reg.attachments.standing_at("s", first, "g") == (False, None, reg.changes.clock())
    if not isinstance(store.db, PgDatabase):
        reg.attachments.attach("s", first, None, by_other=False)
        assert reg.changes.clock() == 0
        assert reg.attachments.of_session_at("s") == ([Attachment(first, None)], 0)
        return
    heard = _Heard()
    listener = store.db.change_listener(heard, SOLE_KEEPER)
    listener.start()
    try:
        wait_for(lambda: any(s[0] == "listening" for s in heard.said), what="the LISTEN")
        start = reg.changes.clock()
        reg.attachments.attach("s", first, None, by_other=False)  # last_profile and attachment
        reg.sessions.set_pin("s", first, by_other=False)  # nothing standing reads
        reg.sessions.ack_set("s", ["x"])
        reg.groups.set("g", second)
        assert reg.holds.set(first, "h1", "hg")
        reg.sessions.set_last_profile("s", second)  # first's and second's
        reg.attachments.detach("s", first, by_other=False)
        assert reg.holds.release(first, "h1")
        reg.changes.ping(SOLE_KEEPER, 1)
        wait_for(lambda: heard.pinged(1), what="the ping")
        got = heard.changes()
        assert [c for c, _p in got] == list(range(start + 1, start + len(got) + 1))
        assert [p for _c, p in got] == [
            first,  # attach: last_profile (deferred triggers fire in the order queued)
            first,  # attach: the attachment row
            second,  # the group's default
            first,  # the hold
            first,  # last_profile first -> second
            second,
            first,  # detach: the attachment row
            first,  # the hold's release
        ]
        end = reg.changes.clock()
        assert end == start + len(got)
        assert reg.attachments.standing_at("s", second, "g") == (True, None, end)
        assert reg.attachments.of_session_at("s") == ([], end)
    finally:
        listener.stop()
