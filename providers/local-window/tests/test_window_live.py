"""A window's live view and takeover, end to end: real Xvfb (with its Xauthority cookie), the
real GTK3 test app on it, the keeper's live-view page shown in a real Chromium (the human's,
driven by Playwright here). The app's state is always read through its own AT-SPI tree."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browserbay_testing import BAY, Bay, Result, assert_refused, wait_for

from .conftest import DEBIAN_PYTHON, GTK_APP, finish, have_gtk, new_home, node, snapshot, wopen

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not have_gtk(), reason="needs Xvfb and Debian's python3-gi"),
]
CHROMIUM = "/usr/lib/chromium/chromium"
S = "wl"


@pytest.fixture(scope="module")
def lwbay() -> Iterator[Bay]:
    b = Bay(new_home("wl"))
    yield b
    finish(b)


@pytest.fixture(scope="module")
def human() -> Iterator[Any]:
    """The human's browser: a Chromium driven by Playwright in the test process."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        exe = CHROMIUM if Path(CHROMIUM).exists() else None
        browser = pw.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture
def viewer(human: Any) -> Iterator[Any]:
    context = human.new_context(viewport={"width": 900, "height": 600})
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def app(lwbay: Bay) -> Iterator[dict[str, Any]]:
    data = wopen(lwbay, DEBIAN_PYTHON, GTK_APP, session=S)
    yield data
    lwbay("window", "close", data["handle"], session=S)


def stats(viewer: Any) -> dict[str, Any]:
    value = viewer.evaluate("window.__live || null")
    return value if isinstance(value, dict) else {}


def state(viewer: Any) -> dict[str, Any]:
    return stats(viewer).get("state") or {}


def open_live(bay: Bay, handle: str, viewer: Any, frames: list[bytes] | None = None) -> str:
    if frames is not None:
        viewer.on(
            "websocket",
            lambda ws: ws.on(
                "framereceived",
                lambda payload: frames.append(payload) if isinstance(payload, bytes) else None,
            ),
        )
    got = bay.ok("live", handle, session=S)
    assert got["target"] == handle
    viewer.goto(got["url"])
    wait_for(lambda: stats(viewer).get("frames", 0) > 0, what="a first frame")
    return str(got["url"])


def picture_point(viewer: Any, fx: float, fy: float) -> tuple[float, float]:
    x, y = viewer.evaluate(
        """([fx, fy]) => {
          const c = document.getElementById("screen").getBoundingClientRect();
          const s = window.__live, k = Math.min(c.width / s.iw, c.height / s.ih);
          const dw = s.iw * k, dh = s.ih * k;
          return [c.left + (c.width - dw) / 2 + fx * dw, c.top + (c.height - dh) / 2 + fy * dh];
        }""",
        [fx, fy],
    )
    return float(x), float(y)


def centre(n: dict[str, Any], size: tuple[int, int]) -> tuple[float, float]:
    """A node's centre as fractions of the window (its box is in the window's pixels)."""
    x, y, w, h = n["box"]
    return (x + w / 2) / size[0], (y + h / 2) / size[1]


def take_over(viewer: Any) -> None:
    viewer.click("#toggle")
    wait_for(lambda: state(viewer).get("holder") == "you", what="the takeover")


def hand_back(viewer: Any) -> None:
    viewer.click("#toggle")
    wait_for(lambda: state(viewer).get("holder") == "agent", what="the handback")


def decode(jpeg: bytes) -> Any:
    from PIL import Image

    image = Image.open(io.BytesIO(jpeg))
    image.load()
    return image


def test_the_page_shows_the_windows_frames_and_they_follow_the_apps_state(
    lwbay: Bay, app: dict[str, Any], viewer: Any
) -> None:
    handle = app["handle"]
    width, height = app["geometry"][2:]
    frames: list[bytes] = []
    open_live(lwbay, handle, viewer, frames)
    st = wait_for(lambda: state(viewer).get("kind") == "window" and state(viewer), what="state")
    assert st["tab"] == handle
    assert st["title"] == "Bay test app"
    assert st["holder"] == "agent"
    assert st["running"] is True
    assert st["tabs"] == []
    first = decode(
        wait_for(lambda: stats(viewer) and frames and frames[0], what="a frame on the socket")
    )
    assert first.format == "JPEG"
    assert first.size == (width, height)  # the window at its own size
    assert (stats(viewer)["iw"], stats(viewer)["ih"]) == (width, height)
    # The agent changes the app's state: the picture follows.
    snap = snapshot(lwbay, handle, session=S)
    lwbay.ok("window", "type", handle, "@" + node(snap, "text")["ref"], "Ada", session=S)
    lwbay.ok("window", "click", handle, "@" + node(snap, "push button")["ref"], session=S)
    label = node(snapshot(lwbay, handle, session=S), "label")
    assert label["name"] == "Hello, Ada!"
    lx, ly, lw, lh = label["box"]

    def label_pixels(image: Any) -> bytes:
        return bytes(image.convert("L").crop((lx, ly, lx + lw, ly + lh)).tobytes())

    before = label_pixels(first)
    # (stats() lets Playwright deliver the socket's frames to the list meanwhile)
    wait_for(
        lambda: stats(viewer) and label_pixels(decode(frames[-1])) != before,
        what="a frame whose label area shows the new text",
    )
    assert decode(frames[-1]).size == (width, height)


def test_takeover_pauses_the_agent_and_forwards_the_humans_input(
    lwbay: Bay, app: dict[str, Any], viewer: Any
) -> None:
    handle = app["handle"]
    size = (app["geometry"][2], app["geometry"][3])
    snap = snapshot(lwbay, handle, session=S)
    entry, button = node(snap, "text"), node(snap, "push button", "Greet")
    assert node(snap, "label")["name"] == "Nobody greeted yet"
    open_live(lwbay, handle, viewer)
    take_over(viewer)
    assert viewer.locator("#badge").inner_text().startswith("You are driving")
    assert lwbay.ok("window", "list", session=S)["windows"][0]["input"] == "user"
    # The agent's injection (and every other action on that window) is refused, paused.
    for args in (
        ("click", handle, "@" + button["ref"]),
        ("key", handle, "ctrl+s"),
        ("type", handle, "@" + entry["ref"], "x"),
        ("click", handle, "--at", "10,10"),
        ("snapshot", handle),
    ):
        frame = assert_refused(lwbay("window", *args, session=S), "browser_paused")
        assert frame["data"]["origin"] == "takeover"
        assert "live view" in frame["data"]["by"]
    # The live link still works while paused.
    assert lwbay.ok("live", handle, "--watch", session=S)["url"]
    # The human types a name and clicks the button, in the picture.
    viewer.mouse.click(*picture_point(viewer, *centre(entry, size)))
    viewer.keyboard.type("Grace")
    viewer.mouse.click(*picture_point(viewer, *centre(button, size)))
    hand_back(viewer)
    after = lwbay("window", "snapshot", handle, session=S)
    assert after.code == 0
    notice = after.frame["notice"]
    assert "handed the controls back (window " + handle in notice
    assert f"bay window snapshot {handle} -i" in notice
    label = node(after.data, "label")
    assert label["name"] == "Hello, Grace!"  # through the app's own tree
    assert node(after.data, "text")["value"] == "Grace"
    # After the handback the agent's click works again.
    lwbay.ok("window", "type", handle, "@" + node(after.data, "text")["ref"], "!", session=S)
    lwbay.ok("window", "click", handle, "@" + node(after.data, "push button")["ref"], session=S)
    assert node(snapshot(lwbay, handle, session=S), "label")["name"] == "Hello, Grace!!"
    # The lifecycle hooks saw the window's lease taken over and handed back.
    hooks = [
        r
        for r in lwbay.recorded()
        if r["hook"] in ("bay_takeover", "bay_handback") and r["lease"]["profile"]["id"] == handle
    ]
    assert [r["hook"] for r in hooks] == ["bay_takeover", "bay_handback"]
    assert hooks[0]["lease"]["profile"]["provider"] == "local-window"
    assert hooks[0]["lease"]["input_holder"] == "user"
    assert hooks[1]["lease"]["input_holder"] == "agent"


def test_input_without_takeover_is_not_forwarded(
    lwbay: Bay, app: dict[str, Any], viewer: Any
) -> None:
    handle = app["handle"]
    size = (app["geometry"][2], app["geometry"][3])
    snap = snapshot(lwbay, handle, session=S)
    button = node(snap, "push button", "Greet")
    entry = node(snap, "text")
    open_live(lwbay, handle, viewer)
    # A socket of the page's own origin (its credential) sends clicks and text without
    # taking over, then takes over: input is handled in order, so once the takeover shows,
    # the input before it has been handled (ignored).
    bx, by = centre(button, size)
    ex, ey = centre(entry, size)
    viewer.evaluate(
        """([bx, by, ex, ey]) => new Promise((done) => {
          const ws = new WebSocket("ws://" + location.host + location.pathname + "ws");
          ws.onopen = () => {
            const send = (m) => ws.send(JSON.stringify(m));
            for (const [x, y] of [[ex, ey], [bx, by]]) {
              send({t: "mouse", type: "down", x, y, button: "left", buttons: 1, clicks: 1});
              send({t: "mouse", type: "up", x, y, button: "left", buttons: 0, clicks: 1});
              send({t: "text", text: "Mallory"});
              send({t: "key", type: "down", key: "Enter", code: "Enter"});
              send({t: "key", type: "up", key: "Enter", code: "Enter"});
            }
            send({t: "takeover"});
            window.__rogue = ws;
            done();
          };
        })""",
        [bx, by, ex, ey],
    )
    wait_for(lambda: state(viewer).get("holder") == "other", what="the rogue socket's takeover")
    viewer.evaluate("window.__rogue.send(JSON.stringify({t: 'handback'}))")
    wait_for(lambda: state(viewer).get("holder") == "agent", what="the handback")
    after = snapshot(lwbay, handle, session=S)
    assert node(after, "label")["name"] == "Nobody greeted yet"
    assert node(after, "text")["value"] == ""


def test_a_window_held_by_another_session_has_no_live_link(lwbay: Bay, app: dict[str, Any]) -> None:
    frame = assert_refused(lwbay("live", app["handle"], session="someone-else"), "not_your_window")
    assert frame["data"]["window"] == app["handle"]


def test_our_display_refuses_a_client_without_its_cookie(lwbay: Bay, app: dict[str, Any]) -> None:
    xvfb = lwbay.ok("window", "list", session=S)["displays"]["processes"]["Xvfb"]
    argv = Path(f"/proc/{xvfb}/cmdline").read_bytes().split(b"\0")
    authority = Path(argv[argv.index(b"-auth") + 1].decode())
    assert authority.stat().st_mode & 0o777 == 0o600
    assert authority.parent.stat().st_mode & 0o777 == 0o700
    display = app["display"]
    probe = f"import Xlib.display as d; d.Display({display!r}).close(); print('connected')"
    with tempfile.TemporaryDirectory() as empty:
        base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": empty}
        refused = subprocess.run(
            [sys.executable, "-c", probe], env=base, capture_output=True, text=True, timeout=30
        )
        assert refused.returncode != 0  # negative control: no cookie, no display
        assert "Authorization required" in refused.stderr
        with_cookie = dict(base, XAUTHORITY=str(authority))
        ours = subprocess.run(
            [sys.executable, "-c", probe], env=with_cookie, capture_output=True, text=True
        )
        assert ours.returncode == 0, ours.stderr
        assert ours.stdout.strip() == "connected"
    # The app we started has the cookie in its environment.
    environ = Path(f"/proc/{app['pid']}/environ").read_bytes().split(b"\0")
    assert f"XAUTHORITY={authority}".encode() in environ


def test_closing_the_window_ends_its_live_view(lwbay: Bay, viewer: Any) -> None:
    handle = wopen(lwbay, DEBIAN_PYTHON, GTK_APP, session=S)["handle"]
    open_live(lwbay, handle, viewer)
    lwbay.ok("window", "close", handle, session=S)
    wait_for(lambda: stats(viewer).get("ended"), what="the page to say the live view ended")
    assert viewer.locator("#badge").inner_text() == "Live view ended"
    answer = viewer.reload()
    assert answer is not None
    assert answer.status == 401
    assert_refused(lwbay("live", handle, session=S), "not_your_window")
    hooks = [
        r
        for r in lwbay.recorded()
        if r["hook"] == "bay_lease_changed" and r["lease"]["profile"]["id"] == handle
    ]
    assert [(r["change"], r["lease"]["ended"]) for r in hooks][-1] == ("detached", "closed")


def inflight(bay: Bay, session: str) -> list[str]:
    status = bay.ok("keeper", "status", session=None)
    for row in status.get("sessions") or []:
        if row["session"]["id"] == session:
            return [c for lease in row["leases"] for c in lease.get("inflight") or []]
    return []


def test_a_window_verb_in_flight_is_cut_by_the_takeover_and_named_at_the_handback(
    lwbay: Bay, app: dict[str, Any], viewer: Any
) -> None:
    handle = app["handle"]
    button = node(snapshot(lwbay, handle, session=S), "push button", "Greet")["ref"]
    open_live(lwbay, handle, viewer)
    # A button has no EditableText: the text goes in as XTEST keys, long enough to be cut.
    proc = subprocess.Popen(
        [BAY, "window", "type", handle, "@" + button, "-", "--json"],
        env=dict(lwbay.env, BAY_SESSION=S),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None
    proc.stdin.write("x" * 20000)
    proc.stdin.close()
    wait_for(
        lambda: any(c.startswith("bay window type") for c in inflight(lwbay, S)),
        what="the type verb in flight",
    )
    take_over(viewer)
    assert proc.stdout is not None
    assert proc.stderr is not None
    out, err = proc.stdout.read(), proc.stderr.read()
    proc.wait(timeout=60)
    frame = assert_refused(Result(proc.returncode, out, err), "browser_interrupted")
    assert frame["data"]["command"] == f"bay window type {handle} @{button} <text>"
    assert frame["data"]["may_have_reached_page"] is True
    assert "x" * 20 not in out  # typed text is never echoed
    hand_back(viewer)
    notice = lwbay("window", "list", session=S).frame["notice"]
    assert f"run again what was cut: bay window type {handle} @{button} <text>" in notice


def test_keys_the_human_still_holds_are_let_go_at_the_handback(
    lwbay: Bay, app: dict[str, Any], viewer: Any
) -> None:
    handle = app["handle"]
    open_live(lwbay, handle, viewer)
    # A socket of the page's origin drives: Control goes down and is never let go.
    viewer.evaluate(
        """() => new Promise((done) => {
          const ws = new WebSocket("ws://" + location.host + location.pathname + "ws");
          ws.onopen = () => {
            const send = (m) => ws.send(JSON.stringify(m));
            send({t: "takeover"});
            send({t: "mouse", type: "down", x: 0.5, y: 0.05, button: "left"});
            send({t: "mouse", type: "up", x: 0.5, y: 0.05, button: "left"});
            send({t: "key", type: "down", key: "Control", code: "ControlLeft", mods: 2});
            send({t: "key", type: "down", key: "s", code: "KeyS", mods: 2});
            send({t: "key", type: "up", key: "s", code: "KeyS", mods: 2});
            send({t: "handback"});
            done();
          };
        })"""
    )

    def saved() -> dict[str, Any] | None:
        r = lwbay("window", "snapshot", handle, session=S)  # refused while paused
        ok = r.code == 0 and node(r.data, "label")["name"] == "Saved"
        return r.data if ok else None

    snap = wait_for(saved, what="the handback, with Saved: Control was held when s came")
    lwbay.ok("window", "type", handle, "@" + node(snap, "text")["ref"], "Ada", session=S)
    lwbay.ok("window", "click", handle, "@" + node(snap, "push button")["ref"], session=S)
    assert node(snapshot(lwbay, handle, session=S), "label")["name"] == "Hello, Ada!"
    # The agent's plain s is not a ctrl+s: the human's Control was let go at the handback.
    lwbay.ok("window", "key", handle, "s", session=S)
    assert node(snapshot(lwbay, handle, session=S), "label")["name"] == "Hello, Ada!"
