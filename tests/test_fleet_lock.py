"""A keeper id's lock on the shared registry outlives a cut connection (issue 22): the
keeper holds a session-level advisory lock for its id so that a home with a copied
``state/keeper-id`` cannot run beside it; the server drops that lock with its connection
(``pg_terminate_backend``, a restart), so the heartbeat checks it every ``BAY_FLEET_TTL/6``
and takes it again — and when a copied-id home took it in the gap, the older keeper stops
and leaves the id's rows to the one that runs. Real keepers on the real PostgreSQL."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from browserbay.paths import bay_paths
from browserbay.registry.pg import KEEPER_LOCK
from browserbay_testing import assert_refused, wait_for
from browserbay_testing.bay import wait_for_no_keeper
from browserbay_testing.fleet import Fleet, Member, keeper_fleet
from browserbay_testing.postgres import PgServer


def _copy_id(source: Member, target: Member) -> str:
    state = target.home / "state"
    state.mkdir(parents=True, exist_ok=True)
    kid = source.keeper_id()
    (state / "keeper-id").write_text(kid + "\n")
    os.chmod(state / "keeper-id", 0o600)
    return kid


def _lock_holders(fleet: Fleet, kid: str) -> list[int]:
    """The server backends that hold the keeper id's advisory lock."""
    return [
        int(r[0])
        for r in fleet.rows(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted"
            " AND classid = %s::int4::oid"
            " AND objid = hashtext(current_schema() || '/' || %s)::oid",
            KEEPER_LOCK,
            kid,
        )
    ]


def _cut(fleet: Fleet, kid: str) -> None:
    """``pg_terminate_backend`` of the lock's connection: the server drops the lock."""
    (holder,) = _lock_holders(fleet, kid)
    fleet.rows("SELECT pg_terminate_backend(%s)", holder)
    wait_for(lambda: not _lock_holders(fleet, kid), timeout=10, what="the lock dropped")


def _log(member: Member) -> str:
    return bay_paths(member.env).keeper_log.read_text()


def _running(member: Member) -> bool:
    """Whether its home's keeper runs (``keeper status`` starts none: its pid, or None)."""
    return member("keeper", "status").frame["data"].get("pid") is not None


def test_a_keeper_takes_its_ids_lock_again_after_its_connection_is_cut(
    postgres: PgServer, tmp_path: Path
) -> None:
    """The old keeper never noticed: a copied-id home started beside it after the cut."""
    with keeper_fleet(postgres, tmp_path, 2, start=False) as fleet:
        a, b = fleet["a"], fleet["b"]
        a.start()
        kid = _copy_id(a, b)
        _cut(fleet, kid)
        wait_for(lambda: _lock_holders(fleet, kid), timeout=fleet.ttl * 2, what="the retake")
        r = b("open", "about:blank")
        frame = assert_refused(r, "registry_unreachable")
        assert kid in frame["data"]["reason"]
        assert _running(a)
        assert not _running(b)
        assert "dropped its lock; taken again" in _log(a)


def test_after_a_cut_lock_exactly_one_keeper_runs_under_a_copied_id(
    postgres: PgServer, tmp_path: Path
) -> None:
    """The copied-id home starts in the gap (a long TTL: the next beat is seconds away):
    the old keeper finds the lock taken on its beat and stops; the id's rows stay the
    running keeper's (its row is not marked stopped, its claims are not released)."""
    with keeper_fleet(postgres, tmp_path, 2, ttl=15, start=False) as fleet:
        a, b = fleet["a"], fleet["b"]
        a.start()
        kid = _copy_id(a, b)
        _cut(fleet, kid)
        b("keeper", "start")  # in the gap: it may start, or be refused if a was quicker
        wait_for(
            lambda: [_running(a), _running(b)].count(True) == 1,
            timeout=fleet.ttl,
            what="exactly one keeper under the id",
        )
        time.sleep(fleet.ttl / 3 + 1)  # a beat later: still one
        running = [m for m in (a, b) if _running(m)]
        assert len(running) == 1, running
        assert len(_lock_holders(fleet, kid)) == 1
        assert fleet.rows("SELECT stopped_at FROM keepers WHERE id = %s", kid) == [(None,)]
        if running[0] is b:
            assert "another keeper took it" in _log(a)


def test_a_copied_id_started_in_the_gap_ends_the_older_keepers_browser_and_keeps_the_claim(
    postgres: PgServer, tmp_path: Path
) -> None:
    """What holds in the gap (docs/fleet.md, "A copied keeper id"): A runs a profile's
    browser under the id's claim; A is held still (SIGSTOP, so it cannot take its lock
    again) while the lock's connection is cut and a copied-id home B starts and takes the
    lock. B's start sweeps the id's browsers as its last run's orphans — A's Chromium is
    ended and recorded ``orphan_swept`` — so no two browsers of the profile run; let go, A
    finds the lock taken at its next beat and stops; the claim stays the id's, held."""
    # A long TTL: A is held still for B's whole start, and must not be fenced for it.
    with keeper_fleet(postgres, tmp_path, 2, ttl=60, start=False) as fleet:
        a, b = fleet["a"], fleet["b"]
        a.start()
        pid = str(a.ok("new", "work", session=None)["id"])
        a.ok("use", pid)
        a.ok("open", "about:blank")
        kid = _copy_id(a, b)
        keeper = a.keeper_pid()
        os.kill(keeper, signal.SIGSTOP)
        try:
            _cut(fleet, kid)
            b.ok("keeper", "start", session=None)  # A cannot take the lock again meanwhile
        finally:
            os.kill(keeper, signal.SIGCONT)
        wait_for(lambda: not _running(a), timeout=fleet.ttl, what="A stopped")
        wait_for_no_keeper(a.home)  # its whole way out done (its browser stopped)
        assert _running(b)
        assert "another keeper took it" in _log(a)
        assert "fenced" not in _log(a)
        claims = fleet.rows("SELECT keeper_id, released_at FROM profile_claims")
        assert fleet.rows("SELECT stop_reason, keeper_pid FROM browsers") == [
            ("orphan_swept", keeper)
        ]
        assert claims == [(kid, None)], claims
