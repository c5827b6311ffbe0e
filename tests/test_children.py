"""Sub-agents (issue 17 item 4): ``bay session child`` mints ``<parent>.<n>`` with its own
ephemeral browser and its own session socket; children never get the parent's profiles
unless granted, and are closed with their parent (``bay close``, revoke, restart kept).
Real keeper, real Chromium, real unix sockets, the real ``bay`` CLI."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browserbay_testing import Bay, Result, assert_refused, wait_for

#: The bounds of browserbay.keeper.children, as the manual states them.
MAX_CHILDREN = 8
MAX_DEPTH = 3


@pytest.fixture
def sockets() -> Iterator[Path]:
    """A private directory (0700, ours) for session sockets, short enough for AF_UNIX."""
    d = Path(tempfile.mkdtemp(prefix="bay-ch-", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def on(bay: Bay, sock: Path | str, *args: str, **kw: Any) -> Result:
    """``bay`` run by an agent that has only the session socket ``sock``."""
    return bay(*args, session=None, env={"BAY_SOCKET": str(sock)}, **kw)


def on_ok(bay: Bay, sock: Path | str, *args: str) -> Any:
    r = on(bay, sock, *args)
    assert r.code == 0, (args, r)
    return r.data


def tab_ids(bay: Bay, **kw: Any) -> set[str]:
    return {t["id"] for t in bay.ok("tab", "list", **kw)["tabs"]}


def leases_of(bay: Bay, session: str) -> list[dict[str, Any]]:
    """The running leases the keeper holds for ``session`` (the owner's keeper status)."""
    status = bay.ok("keeper", "status", session=None)
    return [
        lease
        for s in status["sessions"]
        if s["session"]["id"] == session
        for lease in s["leases"]
        if lease["browser"] is not None
    ]


def test_a_child_on_the_owner_channel_has_its_own_browser_and_none_of_the_parents_tabs(
    bay: Bay, demo: str
) -> None:
    bay.ok("open", f"{demo}/cookie?set=parent", session="own-p")
    made = bay.ok("session", "child", "own-p", session=None)
    child = made["session"]
    assert child == "own-p.1"
    assert made["parent"] == "own-p"
    assert made["env"]["BAY_SESSION"] == child
    assert made["profiles"] == []
    # Its own browser: not the parent's cookie, not the parent's tabs.
    bay.ok("open", f"{demo}/cookie", session=child)
    assert bay.ok("get", "text", "#seen", session=child)["value"] == "(none)"
    parent_tabs, child_tabs = tab_ids(bay, session="own-p"), tab_ids(bay, session=child)
    assert parent_tabs
    assert child_tabs
    assert not parent_tabs & child_tabs
    assert_refused(bay("tab", next(iter(parent_tabs)), session=child), "not_your_tab")
    # Its own channel too: the socket it was given answers as the child and nobody else.
    sock = Path(made["socket"])
    assert stat.S_IMODE(os.lstat(sock).st_mode) == 0o600
    assert on_ok(bay, sock, "get", "url")["value"] == f"{demo}/cookie"
    # n counts on: the next child is .2, never .1 again.
    assert bay.ok("session", "child", "own-p", session=None)["session"] == "own-p.2"
    bay.ok("close", session="own-p")


def test_bay_close_of_the_parent_reaps_its_children_and_theirs(bay: Bay, demo: str) -> None:
    bay.ok("open", f"{demo}/", session="reap-p")
    child = bay.ok("session", "child", "reap-p", session=None)
    grandchild = bay.ok("session", "child", child["session"], session=None)
    assert grandchild["session"] == "reap-p.1.1"
    for made in (child, grandchild):
        bay.ok("open", f"{demo}/", session=made["session"])
        assert leases_of(bay, made["session"])
    kid_tab = next(iter(tab_ids(bay, session=child["session"])))

    # A child closing does not touch its parent.
    other = bay.ok("session", "child", "reap-p", session=None)
    bay.ok("open", f"{demo}/", session=other["session"])
    bay.ok("close", session=other["session"])
    assert leases_of(bay, "reap-p")
    assert Path(other["socket"]).exists()  # its own socket stays: it only closed its browser

    closed = bay.ok("close", session="reap-p")
    assert set(closed["children_closed"]) == {"reap-p.1", "reap-p.1.1", other["session"]}
    for made in (child, grandchild, other):
        assert not leases_of(bay, made["session"]), made["session"]  # its browser is gone
        assert not Path(made["socket"]).exists()  # and its socket
        assert_refused(on(bay, made["socket"], "status"), "session_socket_gone")
    assert_refused(bay("tab", kid_tab, session=child["session"]), "tab_gone")
    # The parent lives on, with a new child numbered after the reaped ones.
    assert bay.ok("session", "child", "reap-p", session=None)["session"] == "reap-p.3"
    bay.ok("close", session="reap-p")


def test_a_child_on_a_session_socket_gets_a_socket_beside_its_parents(
    bay: Bay, demo: str, sockets: Path
) -> None:
    work = bay.ok("new", "ch-work", session=None)["id"]
    bay.ok("new", "ch-other", session=None)
    sock = sockets / "p.sock"
    bay.ok("session", "grant", "sock-p", "--socket", str(sock), "--profile", work, session=None)
    on_ok(bay, sock, "open", f"{demo}/")
    parent_tab = next(iter(on_ok(bay, sock, "tab", "list")["tabs"]))["id"]

    made = on_ok(bay, sock, "session", "child")
    assert made["session"] == "sock-p.1"
    assert made["socket"] == f"{sock}.1"
    assert made["env"] == {"BAY_SOCKET": f"{sock}.1"}  # no BAY_SESSION off the owner's channel
    kid = Path(made["socket"])
    assert stat.S_IMODE(os.lstat(kid).st_mode) == 0o600
    # The child drives its own browser and sees none of the parent's tabs.
    on_ok(bay, kid, "open", f"{demo}/cookie")
    tabs = on_ok(bay, kid, "tab", "list")["tabs"]
    assert [t["url"] for t in tabs] == [f"{demo}/cookie"]
    assert_refused(on(bay, kid, "tab", parent_tab), "not_your_tab")
    # It never inherits the parent's profile ...
    assert_refused(on(bay, kid, "open", f"{demo}/", "--profile", work), "profile_not_granted")
    assert_refused(on(bay, kid, "use", work), "profile_not_granted")
    # ... unless the parent hands it one, and only one the parent may use itself.
    given = on_ok(bay, sock, "session", "child", "--profile", work)
    assert given["session"] == "sock-p.2"
    assert given["profiles"] == [work]
    assert on_ok(bay, given["socket"], "use", work)["default"]
    assert_refused(
        on(bay, sock, "session", "child", "--profile", "ch-other"), "profile_not_granted"
    )

    # On its socket the parent cannot act as its child; the child has its own socket.
    assert_refused(on(bay, sock, "status", "--session", "sock-p.1"), "session_fixed")
    assert_refused(on(bay, sock, "session", "child", "sock-p.1"), "session_fixed")
    # The owner may.
    assert bay.ok("status", session="sock-p.1")["session"]["id"] == "sock-p.1"
    bay.ok("session", "revoke", "sock-p", session=None)


def test_revoking_the_parent_reaps_its_children(bay: Bay, demo: str, sockets: Path) -> None:
    sock = sockets / "r.sock"
    bay.ok("session", "grant", "rev-p", "--socket", str(sock), session=None)
    kid = Path(on_ok(bay, sock, "session", "child")["socket"])
    grandkid = Path(on_ok(bay, kid, "session", "child")["socket"])
    assert grandkid == Path(f"{sock}.1.1")
    on_ok(bay, kid, "open", f"{demo}/")
    on_ok(bay, grandkid, "open", f"{demo}/")
    assert leases_of(bay, "rev-p.1")

    bay.ok("session", "revoke", "rev-p", session=None)
    for path, sid in ((kid, "rev-p.1"), (grandkid, "rev-p.1.1")):
        assert not path.exists()
        assert_refused(on(bay, path, "status"), "session_socket_gone")
        assert not leases_of(bay, sid)
    listed = {g["session"] for g in bay.ok("session", "list", session=None)["grants"]}
    assert not listed & {"rev-p", "rev-p.1", "rev-p.1.1"}


def test_a_childs_ttl_never_outlives_its_parents(bay: Bay, sockets: Path) -> None:
    sock = sockets / "t.sock"
    parent = bay.ok(
        "session", "grant", "ttl-p", "--socket", str(sock), "--ttl", "600", session=None
    )
    made = on_ok(bay, sock, "session", "child", "--ttl", "86400")
    assert made["expires"] <= parent["expires"]
    shorter = on_ok(bay, sock, "session", "child", "--ttl", "5")
    assert shorter["expires"] < parent["expires"] - 500
    bay.ok("session", "revoke", "ttl-p", session=None)


def test_a_restart_keeps_children(fresh_bay: Bay, demo: str, sockets: Path) -> None:
    bay = fresh_bay
    sock = sockets / "k.sock"
    bay.ok("session", "grant", "keep-p", "--socket", str(sock), session=None)
    kid = Path(on_ok(bay, sock, "session", "child")["socket"])
    owned = bay.ok("session", "child", "plain-p", session=None)
    bay.stop()
    bay.ok("keeper", "start", session=None)  # a new keeper, on the owner's channel

    # The child's socket answers again, as the child.
    assert on_ok(bay, kid, "status")["session"]["id"] == "keep-p.1"
    on_ok(bay, kid, "open", f"{demo}/")
    # Numbering goes on; the parent link survived: revoking the parent reaps the child.
    assert on_ok(bay, sock, "session", "child")["session"] == "keep-p.2"
    bay.ok("session", "revoke", "keep-p", session=None)
    assert not kid.exists()
    assert not leases_of(bay, "keep-p.1")
    # A child minted on the owner's channel is reaped with its parent's close, after a restart.
    assert Path(owned["socket"]).exists()
    bay.ok("close", session="plain-p")
    assert not Path(owned["socket"]).exists()


def test_children_past_the_bounds_are_refused_and_nothing_changes(bay: Bay, sockets: Path) -> None:
    made = [bay.ok("session", "child", "many-p", session=None) for _ in range(MAX_CHILDREN)]
    frame = assert_refused(bay("session", "child", "many-p", session=None), "grant_refused")
    assert f"({MAX_CHILDREN})" in frame["message"]
    assert len({m["session"] for m in made}) == MAX_CHILDREN
    bay.ok("close", session="many-p")

    sid = "deep-p"
    for _ in range(MAX_DEPTH):
        sid = bay.ok("session", "child", sid, session=None)["session"]
    assert sid == "deep-p" + ".1" * MAX_DEPTH
    frame = assert_refused(bay("session", "child", sid, session=None), "grant_refused")
    assert f"at most {MAX_DEPTH} deep" in frame["message"]
    bay.ok("close", session="deep-p")

    # An id past the rule's 128 characters.
    long_parent = "L" * 127
    frame = assert_refused(bay("session", "child", long_parent, session=None), "grant_refused")
    assert "128" in frame["message"]
    # A socket path past AF_UNIX's limit: refused, nothing made beside the parent's.
    name = "s" * (106 - len(str(sockets)) - 1)
    sock = sockets / name
    assert len(os.fsencode(sock)) == 106
    bay.ok("session", "grant", "long-p", "--socket", str(sock), session=None)
    frame = assert_refused(on(bay, sock, "session", "child"), "grant_refused")
    assert "107" in frame["message"]
    assert sorted(p.name for p in sockets.iterdir()) == [name]
    bay.ok("session", "revoke", "long-p", session=None)

    # The owner's channel must name the parent; a child's socket is not the caller's choice.
    assert_refused(bay("session", "child", session=None), "usage")
    elsewhere = str(sockets / "mine.sock")
    assert_refused(bay("session", "child", "x-p", "--socket", elsewhere, session=None), "usage")
    assert not Path(elsewhere).exists()


def test_a_child_never_takes_over_a_session_that_has_a_history(
    bay: Bay, demo: str, sockets: Path
) -> None:
    """The attack: a session on its socket mints children until one is named like a session
    of the owner's channel (``esc-p.1``), and reopens that session's kept tabs, or uses its
    attachments, over the child's own socket. A child id the registry knows is skipped."""
    bay.ok("open", f"{demo}/cookie?set=owners", session="esc-p.1")
    bay.ok("close", session="esc-p.1")  # its tab is kept: bay resume would reopen it
    sock = sockets / "e.sock"
    bay.ok("session", "grant", "esc-p", "--socket", str(sock), session=None)
    made = on_ok(bay, sock, "session", "child")
    assert made["session"] == "esc-p.2"
    assert on_ok(bay, made["socket"], "resume")["restored"] == 0
    # The child cannot name the session it skipped, nor its parent: it is fixed to itself.
    assert_refused(on(bay, made["socket"], "resume", "--session", "esc-p.1"), "session_fixed")
    assert_refused(on(bay, made["socket"], "status", "--session", "esc-p"), "session_fixed")
    bay.ok("session", "revoke", "esc-p", session=None)


def test_a_parent_reaped_for_idleness_takes_its_children_but_not_while_they_work(
    fresh_bay: Bay, demo: str
) -> None:
    bay = fresh_bay
    bay.env.update(BAY_IDLE_TIMEOUT="3", BAY_TICK="0.2")
    bay.ok("open", f"{demo}/", session="idle-p")
    made = bay.ok("session", "child", "idle-p", session=None)
    child = made["session"]
    bay.ok("open", f"{demo}/", session=child)
    # The child works on past the parent's idle timeout: the parent is not idle meanwhile.
    end = time.monotonic() + 5
    while time.monotonic() < end:
        bay.ok("get", "url", session=child)
        time.sleep(0.5)
    assert leases_of(bay, "idle-p")
    # Then nobody works: the parent loses its browser, and its child goes with it.
    wait_for(lambda: not leases_of(bay, "idle-p"), timeout=30, what="the parent's idle stop")
    wait_for(lambda: not Path(made["socket"]).exists(), timeout=10, what="the child's socket")
    assert not leases_of(bay, child)
    assert child not in {g["session"] for g in bay.ok("session", "list", session=None)["grants"]}

    # A parent with no browser of its own: its idle children go when it is idle too.
    bay.ok("status", session="idle-q")
    lone = bay.ok("session", "child", "idle-q", session=None)
    bay.ok("open", f"{demo}/", session=lone["session"])
    wait_for(lambda: not Path(lone["socket"]).exists(), timeout=30, what="the idle child")
    assert not leases_of(bay, lone["session"])


def test_a_parent_whose_grant_expires_takes_its_children(
    bay: Bay, demo: str, sockets: Path
) -> None:
    sock = sockets / "x.sock"
    bay.ok("session", "grant", "exp-p", "--socket", str(sock), "--ttl", "6", session=None)
    made = on_ok(bay, sock, "session", "child")
    on_ok(bay, made["socket"], "open", f"{demo}/")
    assert leases_of(bay, made["session"])
    wait_for(lambda: not sock.exists(), timeout=20, what="the parent's expiry")
    wait_for(lambda: not Path(made["socket"]).exists(), timeout=10, what="the child's socket")
    wait_for(lambda: not leases_of(bay, made["session"]), timeout=10, what="the child's browser")
