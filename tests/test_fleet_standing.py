"""A forwarded verb's standing served from what the browser's keeper heard (issue 22;
docs/security.md §14; keeper/standing.py): real keepers on the tests' real PostgreSQL, the
test speaking the fleet link as a peer keeper (as tests/test_fleet_link.py does) and stamping
each frame with the change clock it read, as the origin keeper stamps it.

Each change is made between two frames, after a frame warmed A's book; A must refuse exactly
as the registry says, by whichever keeper (or any other writer) made the change, and let the
next verb through once the change is undone."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import anyio
import psycopg
import pytest

from browserbay import protocol
from browserbay.keeper import link
from browserbay_testing.bay import wait_for
from browserbay_testing.fleet import Fleet, Member, linked_fleet, read_frame
from browserbay_testing.pages import serve_pages
from browserbay_testing.postgres import PgServer
from browserbay_testing.refusals import assert_refused

T = TypeVar("T")
SECRET = "0123456789abcdef-fleet-standing-secret-for-tests"
OTHER = "kp-0badc0de"  # the id the test's own peer says it has
#: The fleet's TTL here: beats every 2 s, the listener healthy while it heard a ping sent
#: within 6 s (a loaded machine's late beat must not turn the book off mid-test).
TTL = "12"


def in_thread(fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, fn, *args).result()


async def _read20(stream: anyio.abc.ByteStream) -> dict[str, Any] | None:
    return await read_frame(stream, 20.0)


class Peer:
    """The test as keeper OTHER on a proven link to A: frames out, answers back."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet
        self.a = fleet["a"]
        self.address = self.a.env["BAY_FLEET_LISTEN"]
        self.n = 0

    def clock(self) -> int:
        ((value,),) = self.fleet.rows("SELECT value FROM change_clock WHERE id = 1")
        return int(value)

    def frame(self, session: str, pid: str, group: str | None = None, **extra: Any) -> Any:
        """A ``tab list`` for ``session`` on ``pid``, stamped with the clock now (unless
        ``extra`` says otherwise): A's answer. Stamped with the clock now, it goes once A
        has heard that clock: the change just made is then in A's book, so what refuses a
        kept answer is the change heard for the profile (not A being behind the frame)."""
        now = self.clock()
        if "clock" not in extra:
            wait_for(lambda: self.book()["heard"] >= now, timeout=30, what="A heard the clock")
        self.n += 1
        frame: dict[str, Any] = {
            "id": self.n,
            "verb": "tab",
            "args": {"action": "list"},
            "session": {"id": session, "origin": "socket"},
            "profile": pid,
            "scope": None,
            "clock": now,
        }
        if group is not None:
            frame["group"] = group
        frame.update(extra)
        frame = {k: v for k, v in frame.items() if v is not None}
        a_id = self.a.keeper_id()

        async def go() -> dict[str, Any] | None:
            stream = await link.connect_peer(self.address, SECRET.encode(), OTHER, a_id)
            await stream.send(protocol.encode(protocol.hello("fleet")))
            assert await _read20(stream) is not None
            await stream.send(protocol.encode(frame))
            answer = await _read20(stream)
            await stream.aclose()
            return answer

        answer = in_thread(go)
        assert answer is not None
        return answer

    def book(self) -> dict[str, Any]:
        return dict(self.a.ok("keeper", "status", session=None)["standing"])

    def healthy(self) -> None:
        wait_for(lambda: self.book()["healthy"], timeout=60, what="A's change listener")

    def ok_served(self, session: str, pid: str, group: str | None = None) -> None:
        """Two frames that pass: the first may read (and keeps the answer), the second is
        served from A's book (its served count grows: the book is what is tested)."""
        first = self.frame(session, pid, group)
        assert first["ok"], first
        served = self.book()["served"]
        second = self.frame(session, pid, group)
        assert second["ok"], second
        assert self.book()["served"] == served + 1


@pytest.fixture(scope="module")
def fleet(postgres: PgServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    root = tmp_path_factory.mktemp("standing")
    with linked_fleet(postgres, root, 3, secret=SECRET, BAY_FLEET_TTL=TTL) as f:
        for m in f:
            m.start()
        yield f


def _write(fleet: Fleet, sql: str, *params: Any, silent: bool = False) -> Any:
    """A write of the test's own on the registry (any writer signals: the triggers);
    ``silent``: with the triggers off (``session_replication_role = replica``), i.e. a
    change whose notification A never gets — the instrument of the tests below."""
    with psycopg.connect(fleet.url, autocommit=True) as conn, conn.transaction():
        if silent:
            conn.execute("SET LOCAL session_replication_role = replica")
        cur = conn.execute(sql, params)
        return cur.fetchall() if cur.description is not None else None


def _new(m: Member, label: str) -> str:
    return str(m.ok("new", label, session=None)["id"])


def test_a_change_between_two_forwarded_verbs_is_refused_as_the_registry_says(
    fleet: Fleet,
) -> None:
    """After a forwarded verb warmed A's book: a detach, a hold of another group taken on
    B, on A and on a third keeper C, a group default moved to another profile and then
    removed, a last-used profile changed — each between two frames — and A refuses exactly
    as the registry says (``profile_unknown``; ``profile_busy`` naming the holder); the
    release or the attachment again lets the next one through."""
    a, b, c = fleet["a"], fleet["b"], fleet["c"]
    peer = Peer(fleet)
    pid = _new(a, "standing-work")
    other = _new(a, "standing-other")
    a.ok("use", pid, session="x")
    peer.healthy()
    peer.ok_served("x", pid)

    a.ok("detach", session="x")
    assert "x" in assert_refused(peer.frame("x", pid), "profile_unknown")["message"]
    b.ok("use", pid, session="x")  # attached again, through B
    peer.ok_served("x", pid)

    for keeper, holder in ((b, "hb"), (a, "ha"), (c, "hc")):
        keeper.ok("use", pid, "--exclusive", session=holder)
        busy = assert_refused(peer.frame("x", pid), "profile_busy")
        assert busy["data"]["holder"] == holder
        keeper.ok("detach", session=holder)  # the release
        peer.ok_served("x", pid)

    # A group's default: session y of group gy reaches the profile through it alone.
    a.ok("group", "default", "gy", pid, session=None)
    peer.ok_served("y", pid, group="gy")
    b.ok("group", "default", "gy", other, session=None)  # moved to another profile, through B
    assert_refused(peer.frame("y", pid, group="gy"), "profile_unknown")
    c.ok("group", "default", "gy", pid, session=None)
    peer.ok_served("y", pid, group="gy")
    _write(fleet, "DELETE FROM group_defaults WHERE group_name = %s", "gy")  # removed
    assert_refused(peer.frame("y", pid, group="gy"), "profile_unknown")

    # A last-used profile: session z has none attached, its last-used is the profile.
    _write(fleet, "INSERT INTO session_state(session, last_profile) VALUES (%s, %s)", "z", pid)
    peer.ok_served("z", pid)
    _write(fleet, "UPDATE session_state SET last_profile = %s WHERE session = %s", other, "z")
    assert_refused(peer.frame("z", pid), "profile_unknown")
    _write(fleet, "UPDATE session_state SET last_profile = %s WHERE session = %s", pid, "z")
    peer.ok_served("z", pid)


def test_a_frame_newer_than_what_a_heard_makes_a_read(fleet: Fleet) -> None:
    """A never is behind what the origin keeper saw: a detach A never heard of (made with
    the triggers off) and the clock moved past what A heard; a frame stamped with that clock
    is judged by a read (profile_unknown), and so is a frame without a clock (an older
    peer). A frame no newer than what A heard is served from its book: the window §14
    names (a change committed after the origin's read, not yet heard), here made to last."""
    a = fleet["a"]
    peer = Peer(fleet)
    pid = _new(a, "standing-behind")
    a.ok("use", pid, session="v")
    peer.healthy()
    heard = peer.clock()
    peer.ok_served("v", pid)
    _write(fleet, "DELETE FROM attachments WHERE session = %s", "v", silent=True)
    _write(
        fleet, "UPDATE session_state SET last_profile = NULL WHERE session = %s", "v", silent=True
    )
    ((newer,),) = _write(
        fleet, "UPDATE change_clock SET value = value + 1000 RETURNING value", silent=True
    )
    stale = peer.frame("v", pid, clock=heard)
    assert stale["ok"], stale  # the window: A heard nothing of the detach
    assert_refused(peer.frame("v", pid, clock=int(newer)), "profile_unknown")
    assert_refused(peer.frame("v", pid, clock=None), "profile_unknown")
    bad = assert_refused(peer.frame("v", pid, clock="1"), "bad_frame")
    assert "clock" in bad["message"]
    a.ok("use", pid, session="v")  # heard: the next frame reads, then is served
    peer.ok_served("v", pid)


def test_a_lost_change_listener_turns_the_book_off_until_it_listens_again(
    fleet: Fleet,
) -> None:
    """The listener's backend is ended (``pg_terminate_backend``) and a hold is taken at once,
    while it is not listening (its notification is lost): once A listens again it still
    refuses the next frame profile_busy (the book was emptied with the connection: nothing
    read before is served), and serves from its book again after the release."""
    a = fleet["a"]
    peer = Peer(fleet)
    pid = _new(a, "standing-lost")
    a.ok("use", pid, session="k")
    peer.healthy()
    peer.ok_served("k", pid)
    losses = peer.book()["losses"]
    ((ended,),) = _write(
        fleet,
        "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE application_name = %s) t",
        f"bay-changes {a.keeper_id()}",
    )
    assert ended == 1
    _write(
        fleet,
        "INSERT INTO holds(profile, holder, group_name, since, keeper_id) "
        "VALUES (%s, 'kh', 'kh', extract(epoch FROM now()), %s)",
        pid,
        fleet["b"].keeper_id(),
    )
    wait_for(lambda: peer.book()["losses"] > losses, what="A to see its listener lost")
    peer.healthy()  # listening again, and its ping heard
    busy = assert_refused(peer.frame("k", pid), "profile_busy")
    assert busy["data"]["holder"] == "kh"
    _write(fleet, "DELETE FROM holds WHERE profile = %s", pid)
    peer.ok_served("k", pid)


def test_bs_forwarded_verbs_carry_the_clock_and_are_served_from_as_book(fleet: Fleet) -> None:
    """The real road: B stamps the frames of its session's verbs with the clock its choice
    read, so A serves the re-check of the second one from its book (its served count grows),
    and the verb's answer is A's (``host-a``)."""
    a, b = fleet["a"], fleet["b"]
    peer = Peer(fleet)
    pid = _new(a, "standing-road")
    with serve_pages({"/": "<!doctype html><title>road</title>"}) as site:
        a.ok("use", pid, session="here")
        a.ok("open", f"{site}/", session="here")  # its browser runs on A
        b.ok("use", pid, session="there")
        peer.healthy()
        first = b("get", "title", session="there").frame
        assert first["ok"], first
        assert first["profile"]["host"] == "host-a"
        served = peer.book()["served"]
        b.ok("get", "title", session="there")
        assert peer.book()["served"] == served + 1


def test_keeper_status_says_whether_standings_are_served_from_the_channel(
    fleet: Fleet,
) -> None:
    """What an operator sees (docs/fleet.md): the book's state in ``bay keeper status``."""
    peer = Peer(fleet)
    peer.healthy()
    status = peer.book()
    assert status["listening"] is True
    assert {"served", "read", "losses", "heard", "kept"} <= set(status)
    text = fleet["a"]("keeper", "status", session=None, json_=False).stdout
    assert "forwarded verbs' standing: served from the change channel (listening;" in text
