"""Driving the live page from a test: the human's side of a live view (a Playwright page in
the test process), and a verb running in the background while the human acts."""

from __future__ import annotations

import subprocess
from typing import Any

from browserbay_testing.bay import BAY, Bay, Result, wait_for


def live_stats(viewer: Any) -> dict[str, Any]:
    """What the live page counts (``window.__live``): frames, the decoded size, its state."""
    value = viewer.evaluate("window.__live || null")
    return value if isinstance(value, dict) else {}


def live_state(viewer: Any) -> dict[str, Any]:
    """The last state message the live page got."""
    return live_stats(viewer).get("state") or {}


def open_live_link(bay: Bay, session: str, viewer: Any, *flags: str) -> str:
    """Ask ``bay live`` for the session's link and open it; answers once a frame is in."""
    url = str(bay.ok("live", *flags, session=session)["url"])
    viewer.goto(url)
    wait_for(lambda: live_stats(viewer).get("frames", 0) > 0, what="a first frame")
    return url


def press_take_over(viewer: Any) -> None:
    viewer.click("#toggle")
    wait_for(lambda: live_state(viewer).get("holder") == "you", what="the takeover")


def press_hand_back(viewer: Any) -> None:
    viewer.click("#toggle")
    wait_for(lambda: live_state(viewer).get("holder") == "agent", what="the handback")


def in_background(bay: Bay, session: str, *args: str) -> subprocess.Popen[str]:
    """``bay ARGS --json`` as the session, running while the test goes on."""
    env = dict(bay.env, BAY_SESSION=session)
    return subprocess.Popen(
        [BAY, *args, "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )


def finished(proc: subprocess.Popen[str], timeout: float = 15) -> Result:
    out, err = proc.communicate(timeout=timeout)
    return Result(proc.returncode, out, err)
