"""`bay window` on real Xvfb, a real AT-SPI bus and a real GTK3 app (Debian's python3-gi):
the tree with refs, acting by reference and by XTEST, leases between sessions, an app that
hangs its accessibility bus, and the display's life (it starts with the first window and
stops with the last)."""

from __future__ import annotations

import io
import os
import signal
import time
from pathlib import Path

import pytest

from browserbay_testing import Bay, assert_refused

from .conftest import (
    BIG_APP,
    DEBIAN_PYTHON,
    GTK_APP,
    display_processes,
    finish,
    gone,
    have_gtk,
    kill_quietly,
    new_home,
    node,
    snapshot,
    wait_for,
    wopen,
)

pytestmark = pytest.mark.skipif(not have_gtk(), reason="needs Xvfb and Debian's python3-gi")


@pytest.fixture(scope="module")
def app(wbay: Bay) -> str:
    """The GTK test app, opened by session a."""
    data = wopen(wbay, DEBIAN_PYTHON, GTK_APP)
    assert data["title"] == "Bay test app"
    assert data["desktop"] is False
    assert data["mine"] is True
    return str(data["handle"])


def label_text(bay: Bay, handle: str, session: str = "a") -> str:
    snap = snapshot(bay, handle, session=session)
    return str(node(snap, "label")["name"])


def test_snapshot_shows_the_button_and_the_entry_with_refs(wbay: Bay, app: str) -> None:
    snap = snapshot(wbay, app)
    button = node(snap, "push button", "Greet")
    entry = node(snap, "text", "Your name")
    assert button["ref"].startswith("e")
    assert entry["ref"].startswith("e")
    assert button["actions"] == ["click"]
    assert "EditableText" in entry["ifaces"]
    assert "editable" in entry["states"]
    assert entry["value"] == ""
    assert button["box"][2] > 0
    assert button["box"][3] > 0
    assert snap["census"]["action"] >= 2
    assert snap["census"]["editable_text"] == 1
    assert snap["census"]["unreadable"] == 0
    assert f'push button "Greet" @{button["ref"]} actions=click' in snap["tree"]
    plain = wbay("window", "snapshot", app, json_=False)
    assert plain.code == 0
    assert "census: 6 nodes · 2 with actions · 1 with editable text" in plain.stdout
    flat = snapshot(wbay, app, "-i")
    assert [n["role"] for n in flat["nodes"] if n["ref"] and n["ref"] in flat["tree"]]
    assert "label" not in flat["tree"]
    assert "push button" in flat["tree"]


def test_type_and_click_by_ref_change_the_apps_state(wbay: Bay, app: str) -> None:
    snap = snapshot(wbay, app)
    entry = node(snap, "text", "Your name")["ref"]
    button = node(snap, "push button", "Greet")["ref"]
    typed = wbay.ok("window", "type", app, f"@{entry}", "-", stdin="Ada")
    assert typed["via"] == "editable_text"
    assert typed["chars"] == 3
    clicked = wbay.ok("window", "click", app, f"@{button}")
    assert clicked["action"] == "click"
    assert clicked["via"] == "action"
    after = snapshot(wbay, app)
    assert node(after, "text", "Your name")["value"] == "Ada"
    assert node(after, "label")["name"] == "Hello, Ada!"
    # The typed text reached no hook: lifecycle plugins see its length only.
    calls = [r["call"]["args"] for r in wbay.recorded() if r["hook"] == "bay_after_verb"]
    typed_args = [a for a in calls if a.get("action") == "type"]
    assert typed_args
    assert all(a["text"] == {"chars": 3} for a in typed_args)
    assert "Ada" not in (wbay.home / "recorder.jsonl").read_text()


def test_a_node_without_an_action_refuses_click_by_ref_with_the_probe(wbay: Bay, app: str) -> None:
    snap = snapshot(wbay, app)
    label = node(snap, "label")
    frame = assert_refused(wbay("window", "click", app, f"@{label['ref']}"), "no_action")
    probe = frame["data"]["probe"]
    assert probe["role"] == "label"
    assert probe["actions"] == []
    assert "Action" not in probe["interfaces"]
    assert "--at X,Y" in frame["way_out"]
    assert label_text(wbay, app) == label["name"]  # nothing was clicked instead
    assert_refused(wbay("window", "click", app, "@e999"), "ref_stale")
    assert_refused(wbay("window", "click", app, "nonsense"), "usage")


def test_key_and_click_at_inject_with_xtest(wbay: Bay, app: str) -> None:
    pressed = wbay.ok("window", "key", app, "ctrl+s")
    assert pressed["via"] == "xtest"
    assert wait_for(lambda: label_text(wbay, app) == "Saved", 5)
    button = node(snapshot(wbay, app), "push button", "Greet")
    x, y, w, h = button["box"]
    clicked = wbay.ok("window", "click", app, "--at", f"{x + w // 2},{y + h // 2}")
    assert clicked["via"] == "xtest"
    assert wait_for(lambda: label_text(wbay, app).startswith("Hello, "), 5)
    assert_refused(wbay("window", "key", app, "ctrl+nosuchkey"), "usage")
    assert_refused(wbay("window", "click", app, "--at", "ten,20"), "usage")


def test_window_verbs_need_no_profile_even_with_two_attached(wbay: Bay) -> None:
    """A window belongs to no browser profile: with two profiles attached a page verb must
    name one (the negative control), `bay window` never has to, and starts no browser."""
    for handle in ("win-x", "win-y"):
        wbay.ok("new", handle, session="two")
        wbay.ok("use", handle, session="two")
    assert_refused(wbay("get", "title", session="two"), "profile_required")
    data = wopen(wbay, DEBIAN_PYTHON, GTK_APP, session="two")
    window = str(data["handle"])
    try:
        snap = snapshot(wbay, window, session="two")
        button = node(snap, "push button", "Greet")["ref"]
        assert wbay.ok("window", "click", window, f"@{button}", session="two")["via"] == "action"
        assert label_text(wbay, window, session="two") == "Hello, !"
        status = wbay.ok("status", session="two")
        assert not [x for x in status["leases"] if x.get("browser")], status
    finally:
        wbay.ok("window", "close", window, session="two")


def test_screenshot_is_a_jpeg_of_the_window(wbay: Bay, app: str) -> None:
    from PIL import Image

    shot = wbay.ok("window", "screenshot", app)
    path = Path(shot["path"])
    assert path.read_bytes()[:3] == b"\xff\xd8\xff"
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    with Image.open(io.BytesIO(path.read_bytes())) as image:
        assert image.size == (400, 200) == (shot["width"], shot["height"])
        # The entry's white field and the window's grey background are both there.
        colors = {image.getpixel((200, 15)), image.getpixel((200, 150))}
        assert len(colors) == 2


def test_only_the_holder_acts_and_a_detached_window_can_be_attached(wbay: Bay, app: str) -> None:
    refused = assert_refused(wbay("window", "snapshot", app, session="b"), "not_your_window")
    assert refused["data"]["holder"] == "a"
    assert_refused(wbay("window", "attach", app, session="b"), "not_your_window")
    listing = wbay.ok("window", "list", session="b")["windows"]
    row = next(r for r in listing if r["handle"] == app)
    assert row["mine"] is False
    assert row["holder"] == "a"
    wbay.ok("window", "detach", app)
    frame = assert_refused(wbay("window", "key", app, "ctrl+s"), "not_your_window")
    assert "attached to no session" in frame["message"]
    assert wbay.ok("window", "attach", app, session="b")["mine"] is True
    assert snapshot(wbay, app, session="b")["census"]["nodes"] == 6
    wbay.ok("window", "detach", app, session="b")
    wbay.ok("window", "attach", app)


def test_an_app_that_hangs_its_accessibility_bus_answers_within_the_timeout(
    wbay: Bay, app: str
) -> None:
    other = wopen(wbay, DEBIAN_PYTHON, GTK_APP, "Second app")["handle"]
    pid = next(r["pid"] for r in wbay.ok("window", "list")["windows"] if r["handle"] == app)
    os.kill(pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        r = wbay("window", "snapshot", app, "--timeout", "5")
        elapsed = time.monotonic() - started
        assert r.code == 0, r
        assert elapsed < 5.0
        data = r.data
        assert data["census"]["unreadable"] >= 1
        assert "did not answer" in data["tree"]
        assert data["hung"]
        # The keeper and the other window are unaffected.
        assert snapshot(wbay, other)["census"]["nodes"] == 6
        assert wbay.ok("keeper", "status")["pid"] > 0
    finally:
        os.kill(pid, signal.SIGCONT)
    assert wait_for(lambda: snapshot(wbay, app)["census"]["unreadable"] == 0, 10)
    wbay.ok("window", "close", other)


def test_the_node_budget_bounds_a_snapshot(wbay: Bay) -> None:
    big = wopen(wbay, DEBIAN_PYTHON, BIG_APP, "300", session="big")["handle"]
    snap = snapshot(wbay, big, "--max-nodes", "50", session="big")
    assert snap["census"]["nodes"] == 50
    assert snap["census"]["truncated"] is True
    assert "children not walked: node budget" in snap["tree"]
    whole = snapshot(wbay, big, session="big")
    assert whole["census"]["nodes"] > 1000
    wbay.ok("window", "close", big, session="big")


def test_open_refusals(wbay: Bay) -> None:
    assert_refused(wbay("window", "open", session="u"), "usage")
    assert_refused(wbay("window", "frobnicate", session="u"), "usage")
    r = wbay("window", "open", "--json", "--", "/nonexistent/app", session="u", json_=False)
    assert_refused(r, "action_failed")
    r = wbay("window", "open", "--json", "--", "/bin/false", session="u", json_=False)
    frame = assert_refused(r, "action_failed")
    assert "exited with code 1 before showing a window" in frame["message"]
    assert_refused(wbay("window", "snapshot", "w999", session="u"), "window_gone")


def test_doctor_prints_the_probe_matrix(wbay: Bay, app: str) -> None:
    data = wbay.ok("window", "doctor")
    assert data["machine"]["xvfb"]["ok"] is True
    ours = next(d for d in data["displays"] if d["kind"] == "ours")
    assert ours["ok"] is True
    assert ours["probes"]["xtest"]["ok"] is True
    assert ours["probes"]["atspi_bus"]["ok"] is True
    assert ours["probes"]["walker_python"]["ok"] is True
    assert ours["probes"]["screenshot"]["ok"] is True
    desktop = next(d for d in data["displays"] if d["kind"] == "desktop")
    assert desktop["ok"] is False  # off by default
    plain = wbay("window", "doctor", json_=False).stdout
    assert "ok  xtest" in plain


def test_closing_the_last_window_stops_the_display(wbay: Bay, app: str) -> None:
    rows = wbay.ok("window", "list")["windows"]
    pid = next(r["pid"] for r in rows if r["handle"] == app)
    infra = display_processes(wbay)
    assert set(infra) == {"Xvfb", "dbus-daemon", "at-spi-bus-launcher"}
    closed = wbay.ok("window", "close", app)
    assert closed["closed"] is True
    assert closed["display_stopped"] is True
    assert gone(pid)
    assert all(gone(p) for p in infra.values())
    assert wbay.ok("window", "list")["windows"] == []
    frame = assert_refused(wbay("window", "snapshot", app), "window_gone")
    assert "closed by bay window close" in frame["message"]


def test_keeper_stop_ends_the_display_and_its_apps() -> None:
    home = new_home("ws")
    b = Bay(home)
    started: list[int] = []
    try:
        data = wopen(b, DEBIAN_PYTHON, GTK_APP)
        infra = display_processes(b)
        started += [data["pid"], *infra.values()]
        runtimes = list((home / "run" / "tmp").glob("bay-x-*"))
        assert len(runtimes) == 1
        assert oct(runtimes[0].stat().st_mode & 0o777) == "0o700"
        b.ok("keeper", "stop")
        assert gone(data["pid"])
        assert all(gone(p) for p in infra.values())
        assert wait_for(lambda: not runtimes[0].exists(), 5)
    finally:
        finish(b)
        for pid in started:
            kill_quietly(pid)
