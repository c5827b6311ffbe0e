"""Driving the live page from a test: the human's side of a live view (a Playwright page in
the test process), and a verb running in the background while the human acts.

Every wait here is bounded by :data:`PATIENCE`: long enough for a machine at load 30, short
enough that a broken page fails the test rather than hangs it."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from browserbay_testing.bay import BAY, KEEPER_PLUGINS, Bay, Result, wait_for

#: Seconds any one wait for the live page may take.
PATIENCE = 30.0
#: examples/approval-gate's package directory (put on a test keeper's PYTHONPATH).
GATE_SRC = Path(__file__).resolve().parents[3] / "examples" / "approval-gate" / "src"

#: Adds two buttons to the page and a line they write to: ``#ask`` opens a prompt, ``#sure``
#: a confirm; ``#out`` says what the page got back.
DIALOG_JS = """(() => {
  const out = (v) => { document.getElementById('out').textContent = v; };
  document.body.insertAdjacentHTML('beforeend',
    '<button id=ask>Ask</button><button id=sure>Sure?</button><p id=out>nothing yet</p>');
  document.getElementById('ask').onclick = () => out('prompt ' + prompt('Your name?', 'Bob'));
  document.getElementById('sure').onclick = () => out('confirm ' + confirm('Delete it?'));
  return 'ok';
})()"""


def asking_gate_env() -> dict[str, str]:
    """A keeper's environment with examples/approval-gate in ``ask`` mode (it asks before
    pressing "Buy …") next to the recorder test plugin."""
    return {
        "PYTHONPATH": f"{KEEPER_PLUGINS}:{GATE_SRC}",
        "BAY_PLUGIN_MODULES": "recorder,browserbay_approval_gate.plugin",
        "BAY_GATE_ASK_TIMEOUT": "40",
    }


def share_profile(bay: Bay, profile: str, *sessions: str) -> None:
    """Sessions that all use one persistent profile: one browser between them."""
    bay.ok("new", profile, session=sessions[0])
    for s in sessions:
        bay.ok("use", profile, session=s)


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
    wait_for(lambda: live_stats(viewer).get("frames", 0) > 0, PATIENCE, what="a first frame")
    return url


def press_take_over(viewer: Any) -> None:
    viewer.click("#toggle")
    wait_for(lambda: live_state(viewer).get("holder") == "you", PATIENCE, what="the takeover")


def press_hand_back(viewer: Any) -> None:
    viewer.click("#toggle")
    wait_for(lambda: live_state(viewer).get("holder") == "agent", PATIENCE, what="the handback")


def approval_card(viewer: Any) -> Any:
    """The one approval card the live page shows (waited for)."""
    wait_for(lambda: viewer.locator(".approval").count() == 1, PATIENCE, what="a card")
    return viewer.locator(".approval")


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


def finished(proc: subprocess.Popen[str], timeout: float = PATIENCE) -> Result:
    out, err = proc.communicate(timeout=timeout)
    return Result(proc.returncode, out, err)


def dialog_answered(bay: Bay, session: str, timeout: float = 15.0) -> dict[str, Any]:
    """Poll ``bay dialog status`` until no dialog is open; the frame that says so, its
    ``notice`` holding every notice said while polling. The one-time notice of a human's
    answer may ride on a poll that still saw the dialog open (an answer's data is read
    before its notices, and the human may answer in between): a helper that kept only the
    last frame lost it."""
    said: list[str] = []

    def poll() -> dict[str, Any] | None:
        frame = bay("dialog", "status", session=session).frame
        if frame.get("notice"):
            said.append(str(frame["notice"]))
        return None if frame["data"]["dialogs"] else frame

    frame = wait_for(poll, timeout, what="the human's answer")
    return {**frame, "notice": " · ".join(said)}
