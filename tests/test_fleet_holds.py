"""Exclusive holds across a fleet (issue 22, item 4): real keepers, each with its own home,
on one PostgreSQL schema. A hold taken through keeper A makes a session on keeper B wait,
then refuses it ``profile_busy`` naming the holder and A's host; waiters on A and B get the
hold in the order they queued; a ``kill -9`` of the holder's keeper hands the hold to the
next waiter once the keeper has been silent for ``BAY_FLEET_TTL``."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browserbay_testing import assert_refused
from browserbay_testing.fleet import Fleet, Member, keeper_fleet
from browserbay_testing.postgres import PgServer


@pytest.fixture
def fleet(postgres: PgServer, tmp_path: Path) -> Iterator[Fleet]:
    """Two keepers (a on host-a, b on host-b) on one schema; profile ``shared`` made
    through a before either serves a verb of b's."""
    with keeper_fleet(postgres, tmp_path, 2, start=False) as f:
        f["a"].ok("new", "shared")
        yield f


def _use(member: Member, session: str, group: str, *flags: str) -> Any:
    """``bay use shared`` by ``session`` of ``group`` on ``member``: its answer's frame."""
    return member(
        "use", "shared", *flags, "--timeout", "60", session=session, env={"BAY_GROUP": group}
    )


def _in_background(call: Any) -> tuple[threading.Thread, dict[str, Any]]:
    box: dict[str, Any] = {}

    def run() -> None:
        box["frame"] = call().frame
        box["at"] = time.monotonic()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, box


def _queued(fleet: Fleet, count: int) -> None:
    """Wait until ``count`` waiters are in the shared queue."""
    deadline = time.monotonic() + 30
    while len(fleet.rows("SELECT seq FROM hold_queue")) < count:
        assert time.monotonic() < deadline, "the waiter never queued"
        time.sleep(0.05)


def test_an_exclusive_hold_on_a_makes_b_wait_then_refuses_naming_the_holder(
    fleet: Fleet,
) -> None:
    a, b = fleet["a"], fleet["b"]
    assert _use(a, "h", "ga", "--exclusive").frame["data"]["exclusive"] is True
    started = time.monotonic()
    frame = assert_refused(_use(b, "w", "gb", "--exclusive", "--wait", "2"), "profile_busy")
    assert time.monotonic() - started >= 2.0  # it waited its bound, then refused
    assert frame["data"]["holder"] == "h"
    assert frame["data"]["group"] == "ga"
    assert frame["data"]["holder_host"] == "host-a"
    assert "h on host-a" in frame["message"]
    assert "--wait" in frame["way_out"]
    # Without --exclusive, B's session of another group is refused at once, naming A's host.
    frame = assert_refused(_use(b, "w2", "gb"), "profile_busy")
    assert frame["data"]["holder_host"] == "host-a"
    # The holder's own group is welcome through B.
    assert _use(b, "h2", "ga").code == 0
    assert fleet.rows("SELECT seq FROM hold_queue") == []  # the waits left the queue


def test_waiters_on_a_and_b_get_the_hold_in_the_order_they_queued(fleet: Fleet) -> None:
    a, b = fleet["a"], fleet["b"]
    _use(a, "h", "g0", "--exclusive")
    first, got_first = _in_background(lambda: _use(b, "w1", "g1", "--exclusive", "--wait", "40"))
    _queued(fleet, 1)
    second, got_second = _in_background(lambda: _use(a, "w2", "g2", "--exclusive", "--wait", "40"))
    _queued(fleet, 2)
    waiters = fleet.rows("SELECT session, keeper_id FROM hold_queue ORDER BY seq")
    assert waiters == [("w1", b.keeper_id()), ("w2", a.keeper_id())]
    a.ok("detach", session="h", env={"BAY_GROUP": "g0"})  # the hold goes to b's waiter
    first.join(timeout=60)
    assert got_first["frame"]["ok"] is True, got_first
    assert second.is_alive()  # a's own waiter, queued later, still waits
    hold = fleet.rows("SELECT holder, keeper_id FROM holds")
    assert hold == [("w1", b.keeper_id())]
    b.ok("detach", session="w1", env={"BAY_GROUP": "g1"})
    second.join(timeout=60)
    assert got_second["frame"]["ok"] is True, got_second
    assert got_second["at"] > got_first["at"]


def test_a_release_on_a_wakes_bs_waiter_through_the_registrys_change_channel(
    fleet: Fleet,
) -> None:
    """B's waiter is woken by the change channel (migration 13: the hold's release on A
    notifies it; keeper/standing.py) and gets the hold; B's status counts the wake (without
    the channel's wake it is 0: the waiter saw the release only at its next look)."""
    a, b = fleet["a"], fleet["b"]
    _use(a, "h", "g0", "--exclusive")
    waiter, got = _in_background(lambda: _use(b, "w", "g1", "--exclusive", "--wait", "40"))
    _queued(fleet, 1)
    woke = b.ok("keeper", "status", session=None)["standing"]["woke"]
    a.ok("detach", session="h", env={"BAY_GROUP": "g0"})  # the release, on A
    waiter.join(timeout=60)
    assert got["frame"]["ok"] is True, got
    assert fleet.rows("SELECT holder, keeper_id FROM holds") == [("w", b.keeper_id())]
    assert b.ok("keeper", "status", session=None)["standing"]["woke"] > woke


def test_after_a_kill_of_the_holders_keeper_the_next_waiter_gets_the_hold_past_the_ttl(
    fleet: Fleet,
) -> None:
    a, b = fleet["a"], fleet["b"]
    _use(a, "h", "ga", "--exclusive")
    a.kill()
    killed = time.monotonic()
    answer = _use(b, "w", "gb", "--exclusive", "--wait", "40")
    waited = time.monotonic() - killed
    assert answer.code == 0, answer.frame
    assert waited >= fleet.ttl - 1.0  # not before A's silence passed the TTL (beat ≤ ttl/3 ago)
    assert fleet.rows("SELECT holder, keeper_id FROM holds") == [("w", b.keeper_id())]
    reclaimed = fleet.rows("SELECT session, actor FROM audit WHERE verb='hold_reclaimed'")
    assert reclaimed == [("h", f"keeper:{b.keeper_id()}")]


def test_a_keepers_restart_keeps_another_live_keepers_hold_and_waiters(fleet: Fleet) -> None:
    """B's start drops only B's own rows: A's hold (and A's waiter) stay. (On main the
    second keeper on a schema was refused, and the queue was the keeper's memory.)"""
    a, b = fleet["a"], fleet["b"]
    _use(a, "h", "ga", "--exclusive")
    waiter, got = _in_background(lambda: _use(a, "w", "gw", "--exclusive", "--wait", "40"))
    _queued(fleet, 1)
    b.stop()
    assert b("status", session="x").code == 0  # B starts again
    assert fleet.rows("SELECT holder FROM holds") == [("h",)]
    assert fleet.rows("SELECT session FROM hold_queue") == [("w",)]
    a.ok("detach", session="h", env={"BAY_GROUP": "ga"})
    waiter.join(timeout=60)
    assert got["frame"]["ok"] is True, got
