"""A takeover takes the whole browser: every session sharing it is paused, the script the agent
runs in the page is stopped, the human's input keeps every session on it alive, and the
handback (with the human's note) reaches each of them. Real browsers, the real keeper and CLI."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from browserbay_testing import Bay, assert_refused, wait_for
from browserbay_testing.live import (
    finished,
    in_background,
    live_state,
    live_stats,
    open_live_link,
    press_hand_back,
    press_take_over,
    share_profile,
)

pytestmark = pytest.mark.browser


def test_a_sibling_session_on_the_same_browser_is_refused_while_a_human_drives(
    bay_with: Callable[..., Bay], demo: str, viewer: Any
) -> None:
    bay = bay_with()
    share_profile(bay, "shared", "sa", "sb")
    bay.ok("open", f"{demo}/live.html?still", session="sa")
    bay.ok("open", f"{demo}/form.html", session="sb")
    # sb's verb in flight when the human takes sa's lease is cut too.
    waiting = in_background(bay, "sb", "wait", "20000", "--timeout", "40")
    time.sleep(1.0)
    open_live_link(bay, "sa", viewer)
    press_take_over(viewer)
    cut = assert_refused(finished(waiting), "browser_interrupted")
    assert cut["data"]["command"] == "bay wait 20000"
    # The sibling's verbs are refused, naming who holds the browser.
    frame = assert_refused(bay("get", "title", session="sb"), "browser_paused")
    assert "session sa" in frame["data"]["by"]
    assert "viewer" in frame["data"]["by"]
    assert frame["data"]["session"] == "sa"
    assert_refused(bay("open", f"{demo}/", session="sb"), "browser_paused")
    assert_refused(bay("get", "title", session="sa"), "browser_paused")
    # bay status names the input holder, for both, and the viewer.
    mine = bay.ok("status", session="sa")["leases"][0]
    assert mine["input_holder"] == "user"
    assert mine["driver"] == live_state(viewer)["me"]
    assert [v["mode"] for v in mine["viewers"]] == ["control"]
    theirs = bay.ok("status", session="sb")["leases"][0]
    assert theirs["input_holder"] == "user"
    assert theirs["paused"]["session"] == "sa"
    text = bay("status", session="sb", json_=False).stdout
    assert "input: user" in text
    # The handback, with a note: each session hears it, and where its own tab is.
    viewer.fill("#handnote", "I signed in for you")
    press_hand_back(viewer)
    a = bay("get", "title", session="sa").frame
    assert 'the human handed back: "I signed in for you"' in a["notice"]
    assert "/live.html?still (“Live view test page”)" in a["notice"]  # where, and its title
    b = bay("get", "title", session="sb").frame
    assert b["ok"]
    assert "taken in the live view of another session" in b["notice"]
    assert "/form.html" in b["notice"]
    assert "run again what was cut: bay wait 20000" in b["notice"]
    assert 'the human handed back: "I signed in for you"' in b["notice"]
    assert bay.ok("status", session="sa")["leases"][0]["input_holder"] == "agent"
    # The note is the human's typing: in the notices only, never in the keeper's log or audit.
    assert "signed in for you" not in (bay.home / "logs" / "keeper.log").read_text()
    assert "signed in for you" not in bay("audit", session="sa").stdout


def test_the_agents_busy_script_is_stopped_so_frames_keep_coming(
    lbay: Bay, session: str, demo: str, viewer: Any
) -> None:
    lbay.ok("open", f"{demo}/live.html", session=session)
    open_live_link(lbay, session, viewer)
    busy = in_background(lbay, session, "eval", "(() => { while (true) {} })()", "--timeout", "60")

    def stalled() -> bool:
        before = live_stats(viewer)["frames"]
        time.sleep(1.0)
        return bool(live_stats(viewer)["frames"] <= before + 1)

    # The page is busy: its animation (and so its frames) stop (a loaded machine is slow
    # to start the eval).
    wait_for(stalled, timeout=30, what="the busy page to stop painting")
    press_take_over(viewer)
    assert_refused(finished(busy), "browser_interrupted")
    frames = live_stats(viewer)["frames"]
    wait_for(lambda: live_stats(viewer)["frames"] > frames + 10, timeout=20, what="frames again")
    press_hand_back(viewer)
    assert lbay.ok("eval", "1 + 1", session=session)["value"] == 2  # the page works


def test_the_humans_input_keeps_every_session_on_the_browser_alive(
    bay_with: Callable[..., Bay], demo: str, viewer: Any
) -> None:
    bay = bay_with(BAY_IDLE_TIMEOUT="5", BAY_TICK="0.5", BAY_HANDBACK_IDLE="60")
    share_profile(bay, "kept", "ka", "kb")
    bay.ok("open", f"{demo}/live.html?still", session="ka")
    bay.ok("open", f"{demo}/form.html", session="kb")
    open_live_link(bay, "ka", viewer)
    press_take_over(viewer)
    box = viewer.locator("#screen").bounding_box()
    assert box is not None
    end = time.monotonic() + 11  # more than twice the idle timeout
    i = 0
    while time.monotonic() < end:
        viewer.mouse.move(box["x"] + 50 + (i % 40) * 5, box["y"] + 60)
        i += 1
        time.sleep(0.2)
    assert live_state(viewer)["running"] is True
    for s in ("ka", "kb"):
        lease = bay.ok("status", session=s)["leases"][0]
        assert lease["browser"] is not None, f"{s}'s lease ended while the human moved"
        assert lease["input_holder"] == "user"
    press_hand_back(viewer)


def test_a_waiting_handoff_holds_no_lock_a_fresh_link_works_and_other_verbs_are_refused(
    lbay: Bay, session: str, demo: str, viewer: Any
) -> None:
    lbay.ok("open", f"{demo}/live.html?still", session=session)
    proc = in_background(
        lbay, session, "handoff", "--reason", "sign in", "--wait", "40", "--timeout", "60"
    )
    assert proc.stderr is not None
    line, end = "", time.monotonic() + 20
    while "ticket=" not in line and time.monotonic() < end:
        line = proc.stderr.readline()
    assert "ticket=" in line, line  # the first link, which the human lets expire
    # The session's other verbs are answered at once, not queued behind the handoff.
    started = time.monotonic()
    frame = assert_refused(
        lbay("get", "title", "--timeout", "20", session=session), "browser_paused"
    )
    assert frame["data"]["origin"] == "handoff"
    assert time.monotonic() - started < 8
    status = lbay.ok("status", "--timeout", "20", session=session)["leases"][0]
    assert status["input_holder"] == "user"
    assert status["paused"]["origin"] == "handoff"
    # A fresh link while the handoff waits: the human takes over and hands back with it.
    open_live_link(lbay, session, viewer)
    press_take_over(viewer)
    viewer.fill("#handnote", "done: signed in")
    press_hand_back(viewer)
    result = finished(proc, timeout=20)
    assert result.code == 0, result
    assert result.data["handed_back"] is True
    assert 'the human handed back: "done: signed in"' in result.frame["notice"]


def test_the_tab_strip_says_whose_each_tab_is_closes_one_and_resumes_kept_tabs(
    bay_with: Callable[..., Bay], demo: str, viewer: Any
) -> None:
    bay = bay_with()
    share_profile(bay, "strip", "ta", "tb")
    bay.ok("open", f"{demo}/live.html?still", session="ta")
    second = bay.ok("tab", "new", f"{demo}/form.html", session="ta")["tab"]
    theirs = bay.ok("open", f"{demo}/", session="tb")["tab"]
    open_live_link(bay, "ta", viewer)
    wait_for(lambda: live_state(viewer).get("others"), what="the other session's tab")
    # Another session's tab on the same browser: its id and session, never its page.
    assert live_state(viewer)["others"] == [{"id": theirs, "session": "tb"}]
    other = viewer.locator("#tabs button.other")
    assert other.text_content() == f"{theirs} · tb"
    assert "/" not in (other.get_attribute("title") or "")
    assert "· ta" in (viewer.locator(f"#tabs button[data-tab='{second}']").text_content() or "")
    # The session's own tab closes from the strip.
    viewer.click(f"[data-close='{second}']")
    wait_for(lambda: len(live_state(viewer)["tabs"]) == 1, what="the tab closed")
    assert_refused(bay("tab", second, session="ta"), "tab_gone")
    # Resume reopens what the session's last close parked (as bay resume does).
    bay.ok("close", session="ta")  # this live view ends with the lease: a new link
    wait_for(lambda: live_stats(viewer).get("ended"), what="the live view ended")
    viewer.goto(bay.ok("live", session="ta")["url"])
    wait_for(lambda: live_state(viewer).get("running") is False, what="a stopped browser")
    viewer.click("#resume")
    wait_for(lambda: live_state(viewer).get("running"), timeout=20, what="the tabs reopened")
    listed = bay("tab", session="ta").frame
    assert any("/live.html?still" in t["url"] for t in listed["data"]["tabs"])
    notice = listed.get("notice") or ""
    assert "a human in the live view reopened your kept tabs" in notice
