"""The user's own desktop windows are off by default; BAY_WINDOW_DESKTOP=1 lists them, each
row marked as the user's desktop, and browserbay never closes one. A private Xvfb with one
plain X window stands in for the user's desktop."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from browserbay_testing import Bay, assert_refused

from .conftest import finish, have_gtk, new_home, wopen

pytestmark = pytest.mark.skipif(not have_gtk(), reason="needs Xvfb")


@pytest.fixture(scope="module")
def desktop() -> Iterator[tuple[str, Any]]:
    """(':N', the X window) of a stand-in desktop, with one mapped, titled window."""
    from Xlib import X
    from Xlib import display as xdisplay

    read_fd, write_fd = os.pipe()
    xvfb = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", "640x480x24", "-nolisten", "tcp"],
        pass_fds=(write_fd,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write_fd)
    with os.fdopen(read_fd) as f:
        name = ":" + f.readline().strip()
    d = xdisplay.Display(name)
    root = d.screen().root
    win = root.create_window(10, 20, 300, 150, 0, d.screen().root_depth, X.InputOutput)
    win.set_wm_name("Users own editor")
    win.change_property(d.intern_atom("_NET_WM_PID"), d.intern_atom("CARDINAL"), 32, [os.getpid()])
    win.map()
    d.sync()
    try:
        yield name, win
    finally:
        d.close()
        xvfb.terminate()
        xvfb.wait(10)


def keeper(prefix: str, **env: str) -> Bay:
    return Bay(new_home(prefix), **env)


def test_desktop_windows_are_off_by_default(desktop: tuple[str, Any]) -> None:
    name, _win = desktop
    b = keeper("wo", DISPLAY=name)
    try:
        data = b.ok("window", "list")
        assert data["windows"] == []
        assert data["displays"]["desktop"] is None
        assert data["displays"]["desktop_enabled"] is False
    finally:
        finish(b)


def test_the_setting_lists_them_marked_and_close_never_kills_one(
    desktop: tuple[str, Any],
) -> None:
    name, win = desktop
    b = keeper("wn", DISPLAY=name, BAY_WINDOW_DESKTOP="1")
    try:
        data = b.ok("window", "list")
        (row,) = data["windows"]
        assert row["desktop"] is True
        assert row["kind"] == "desktop"
        assert row["title"] == "Users own editor"
        assert row["geometry"] == [10, 20, 300, 150]
        assert row["holder"] is None
        assert row["handle"].startswith("d")
        assert "[your desktop]" in b("window", "list", json_=False).stdout
        handle = row["handle"]
        assert_refused(b("window", "screenshot", handle), "not_your_window")
        b.ok("window", "attach", handle)
        shot = b.ok("window", "screenshot", handle)
        assert (shot["width"], shot["height"]) == (300, 150)
        # No accessibility bus was given for this desktop: refused by name, not hung.
        frame = assert_refused(b("window", "snapshot", handle), "accessibility_unavailable")
        assert "DBUS_SESSION_BUS_ADDRESS" in frame["message"]
        closed = b.ok("window", "close", handle)
        assert closed == {"handle": handle, "closed": False, "desktop": True}
        assert win.get_attributes().map_state != 0  # still there, still mapped
        doctor = b.ok("window", "doctor")
        desk = next(d for d in doctor["displays"] if d["kind"] == "desktop")
        assert desk["display"] == name
        assert desk["probes"]["xtest"]["ok"] is True
    finally:
        finish(b)


def test_on_a_session_socket_the_humans_desktop_windows_are_neither_listed_nor_attached(
    desktop: tuple[str, Any],
) -> None:
    """An agent on a session socket (its sandbox's only way out) never reaches a window of
    the human's desktop by itself — one of them may be a terminal. The human hands one over
    by attaching it for the agent's session on the owner's channel."""
    name, _win = desktop
    b = keeper("ws", DISPLAY=name, BAY_WINDOW_DESKTOP="1")
    try:
        (b.home / "agents").mkdir(mode=0o700)
        sock = b.home / "agents" / "a.sock"
        b.ok("session", "grant", "agent", "--socket", str(sock), session=None)
        on_socket = {"BAY_SOCKET": str(sock)}
        (row,) = b.ok("window", "list", session="human")["windows"]
        handle = row["handle"]
        assert b.ok("window", "list", session=None, env=on_socket)["windows"] == []
        refused = assert_refused(
            b("window", "attach", handle, session=None, env=on_socket), "owner_only"
        )
        assert refused["data"]["command"] == f"bay window attach {handle} --session agent"
        assert_refused(
            b("window", "screenshot", handle, session=None, env=on_socket), "not_your_window"
        )
        # The human attaches it for the agent: now the agent sees and drives it.
        b.ok("window", "attach", handle, session="agent")
        shown = b.ok("window", "list", session=None, env=on_socket)["windows"]
        assert [w["handle"] for w in shown] == [handle]
        shot = b.ok("window", "screenshot", handle, session=None, env=on_socket)
        assert (shot["width"], shot["height"]) == (300, 150)
        # Another session's window is not listed there either (the owner's channel sees it).
        theirs = wopen(b, "/usr/bin/xmessage", "theirs", session="other")["handle"]
        assert theirs in {w["handle"] for w in b.ok("window", "list", session="human")["windows"]}
        shown = b.ok("window", "list", session=None, env=on_socket)["windows"]
        assert [w["handle"] for w in shown] == [handle]
    finally:
        finish(b)
