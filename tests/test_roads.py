"""One set of guards on every road (docs/security.md §11), as attacks on a real keeper, real
Chromium and a real live-view takeover: a trigger request, the CLI, the Python API, the MCP
server, the scoped CDP endpoint and a ``bay run`` script each try to act on a lease a human
holds, and on a verb a plugin vetoes (the recorder plugin,
browserbay_testing/keeper_plugins/recorder.py, with
its veto file)."""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from browserbay.api import SyncClient
from browserbay.errors import BayRefusal
from browserbay_testing import BAY, Bay, assert_refused, wait_for
from browserbay_testing.cdp import (
    DebugBrowser,
    Raw,
    attach,
    refusal,
)

pytestmark = pytest.mark.browser
CHROMIUM = "/usr/lib/chromium/chromium"
ROADS = ("cli", "api", "mcp", "trigger", "cdp", "run")


# -- fixtures ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rbay(place: Path, debug_browser: DebugBrowser) -> Iterator[Bay]:
    b = Bay(
        place / "bay",
        XDG_CONFIG_HOME=str(place / "config"),
        BAY_TEST_REFUSE_FILE=str(place / "veto"),
    )
    if "live" not in {v["name"] for v in b.ok("verbs")["verbs"]}:
        pytest.skip("the live view plugin (bay live) is not installed")
    yield b
    b.stop()


@pytest.fixture
def veto(place: Path) -> Iterator[Callable[[str], None]]:
    """``veto("open")``: the recorder plugin's bay_before_verb refuses that verb from now
    on (until the test ends)."""
    path = place / "veto"
    yield lambda verb: path.write_text(verb + "\n")
    path.unlink(missing_ok=True)


# -- the human, the requests ------------------------------------------------------------------


def _live_state(viewer: Any) -> dict[str, Any]:
    value = viewer.evaluate("window.__live || null")
    return (value.get("state") or {}) if isinstance(value, dict) else {}


def take_over(b: Bay, session: str, viewer: Any) -> None:
    """A human opens the session's live view and takes the controls."""
    viewer.goto(b.ok("live", session=session)["url"])
    wait_for(lambda: (viewer.evaluate("window.__live || {}").get("frames") or 0) > 0, what="frame")
    viewer.click("#toggle")
    wait_for(lambda: _live_state(viewer).get("holder") == "you", what="the takeover")


def hand_back(viewer: Any) -> None:
    viewer.click("#toggle")
    wait_for(lambda: _live_state(viewer).get("holder") == "agent", what="the handback")


def trigger(b: Bay, body: dict[str, Any], timeout: float = 60) -> dict[str, Any]:
    """Publish a trigger request (write, then rename) and wait for its result."""
    d = Path(b.ok("triggers", "path")["path"])
    name = str(uuid.uuid4())
    tmp = d / f".{name}.tmp"
    tmp.write_text(json.dumps({"version": 1, **body}))
    os.replace(tmp, d / f"{name}.json")
    path = d / "processed" / f"{name}.result.json"
    wait_for(lambda: path.exists() and not (d / f"{name}.json").exists(), timeout, "a result")
    return dict(json.loads(path.read_text()))


def audit(b: Bay, session: str) -> list[tuple[str, str, bool, str | None]]:
    rows = b.ok("audit", "--last", "500")["audit"]
    return [(r["verb"], r["road"], r["ok"], r["code"]) for r in rows if r["session"] == session]


def url_of(b: Bay, session: str) -> str:
    return str(b.ok("get", "url", session=session)["value"])


def cdp_refused(raw: Raw, method: str, params: dict[str, Any], sid: str = "") -> str:
    """The refusal code of a call on the scoped endpoint (it must be refused)."""
    frame = refusal(raw.call(method, params, sid))
    return str(assert_refused(frame, frame["code"])["code"])


def mcp_navigate(b: Bay, session: str, url: str) -> str:
    """``open`` through ``bay mcp`` (the MCP SDK's stdio client, in a thread of its own:
    the viewer's Playwright holds this thread's event loop). Answers the refusal code."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    env = dict(b.env, BAY_SESSION=session)
    out: dict[str, Any] = {}

    async def main() -> None:
        params = StdioServerParameters(command=BAY, args=["mcp"], env=env)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            out["r"] = await s.call_tool("open", {"url": url})

    worker = threading.Thread(target=lambda: anyio.run(main))
    worker.start()
    worker.join(90)
    result = out["r"]
    assert result.is_error, result
    return str(result.structured_content["code"])


def api_open(b: Bay, session: str, url: str) -> str:
    try:
        SyncClient(session, home=b.home, autostart=False).open(url)
    except BayRefusal as r:
        return r.code
    raise AssertionError("the Python API's open was not refused")


# -- triggers against a human's takeover and a plugin's veto -----------------------------------


def test_a_trigger_open_is_refused_while_a_human_drives_the_tab(
    rbay: Bay, demo: str, viewer: Any
) -> None:
    s = "t-open"
    rbay.ok("open", f"{demo}/form.html", session=s)
    take_over(rbay, s, viewer)
    answer = trigger(rbay, {"action": "open", "session": s, "url": f"{demo}/index.html"})
    assert answer["ok"] is False, answer
    assert answer["outcome"] == "refused"
    assert answer["reason"] == "browser_paused", answer
    assert answer["uncertain"] is False
    assert _live_state(viewer).get("holder") == "you"  # the human still drives
    hand_back(viewer)
    assert url_of(rbay, s) == f"{demo}/form.html"  # the tab never moved
    assert ("open", "trigger", False, "browser_paused") in audit(rbay, s)


def test_a_trigger_stop_does_not_cut_a_human_off(rbay: Bay, demo: str, viewer: Any) -> None:
    s = "t-stop"
    rbay.ok("open", f"{demo}/form.html", session=s)
    take_over(rbay, s, viewer)
    answer = trigger(rbay, {"action": "stop", "session": s})
    assert answer["ok"] is False, answer
    assert answer["reason"] == "browser_paused", answer
    # The agent's own `bay close` is refused the same way: nobody's road cuts a human off.
    assert_refused(rbay("close", session=s), "browser_paused")
    time.sleep(0.5)
    assert _live_state(viewer).get("holder") == "you", "the human still drives"
    hand_back(viewer)
    assert rbay.ok("status", session=s)["browser"] is not None
    assert url_of(rbay, s) == f"{demo}/form.html"
    # After the handback the same request is served.
    assert trigger(rbay, {"action": "stop", "session": s})["outcome"] == "stopped"
    rows = audit(rbay, s)
    assert ("close", "trigger", False, "browser_paused") in rows
    assert ("close", "trigger", True, None) in rows


def test_a_plugins_veto_of_open_stops_a_trigger_open(
    rbay: Bay, demo: str, veto: Callable[[str], None]
) -> None:
    s = "t-veto"
    rbay.ok("tab", "new", f"{demo}/form.html", session=s)
    veto("open")
    assert_refused(rbay("open", f"{demo}/index.html", session=s), "verb_refused")  # control
    answer = trigger(rbay, {"action": "open", "session": s, "url": f"{demo}/index.html"})
    assert answer["ok"] is False, answer
    assert answer["reason"] == "verb_refused", answer
    assert "recorder" in answer["detail"]
    assert url_of(rbay, s) == f"{demo}/form.html"
    assert ("open", "trigger", False, "verb_refused") in audit(rbay, s)
    seen = [r["call"] for r in rbay.recorded() if r["hook"] == "bay_before_verb"]
    assert any(c["verb"] == "open" and c["road"] == "trigger" for c in seen), "the hook saw it"


def test_the_domain_fence_holds_for_a_trigger_open(rbay: Bay, demo: str) -> None:
    s = "t-fence"
    rbay.ok("use", "--ephemeral", "--allowed-domains", "127.0.0.1", session=s)
    rbay.ok("open", f"{demo}/form.html", session=s)
    outside = demo.replace("127.0.0.1", "localhost") + "/index.html"
    answer = trigger(rbay, {"action": "open", "session": s, "url": outside})
    assert answer["reason"] == "domain_refused", answer
    assert url_of(rbay, s) == f"{demo}/form.html"
    assert ("open", "trigger", False, "domain_refused") in audit(rbay, s)


# -- every road -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def work(rbay: Bay, debug_browser: DebugBrowser) -> str:
    """A cdp profile on the debug browser: every road reaches it, the scoped endpoint too."""
    return str(rbay.ok("new", "work", "--provider", "cdp", "--cdp-url", debug_browser.http)["id"])


def _script(place: Path, url: str) -> str:
    path = place / f"goto-{uuid.uuid4().hex[:8]}.py"
    path.write_text(f'await page.goto("{url}")\nprint("reached", page.url)\n')
    return str(path)


def test_every_road_is_refused_by_a_paused_lease_and_by_a_vetoing_hook(
    rbay: Bay, work: str, demo: str, place: Path, viewer: Any, veto: Callable[[str], None]
) -> None:
    s = "roads"
    rbay.ok("use", work, session=s)
    home = f"{demo}/index.html"
    rbay.ok("open", home, session=s)
    got = rbay.ok("cdp-url", session=s)
    cdp = Raw(got["url"])
    sid = attach(cdp, got["target"])
    away = f"{demo}/form.html"
    attempts: dict[str, Callable[[], str]] = {
        "cli": lambda: str(rbay("open", away, session=s).frame["code"]),
        "api": lambda: api_open(rbay, s, away),
        "mcp": lambda: mcp_navigate(rbay, s, away),
        "trigger": lambda: trigger(rbay, {"action": "open", "session": s, "url": away})["reason"],
        "cdp": lambda: cdp_refused(cdp, "Page.navigate", {"url": away}, sid),
        "run": lambda: _run_code(rbay, s, _script(place, away)),
    }
    assert set(attempts) == set(ROADS)
    try:
        # 1. A human holds the controls: every road is refused, nothing moves.
        take_over(rbay, s, viewer)
        paused = {road: attempt() for road, attempt in attempts.items()}
        # A CDP call of a fenced class is answered browser_interrupted ("it was not sent").
        assert paused == {
            r: "browser_interrupted" if r == "cdp" else "browser_paused" for r in ROADS
        }
        # Nor does any road end the lease under the human.
        assert_refused(rbay("close", session=s), "browser_paused")
        assert_refused(rbay("detach", session=s), "browser_paused")
        assert trigger(rbay, {"action": "stop", "session": s})["reason"] == "browser_paused"
        assert _live_state(viewer).get("holder") == "you"
        hand_back(viewer)
        assert url_of(rbay, s) == home
        # 2. A plugin's bay_before_verb vetoes `open`: every road's navigation is refused.
        veto("open")
        vetoed = {road: attempt() for road, attempt in attempts.items()}
        assert vetoed == {r: "script_failed" if r == "run" else "verb_refused" for r in ROADS}
        assert cdp_refused(cdp, "Target.createTarget", {"url": away}) == "verb_refused"
        assert url_of(rbay, s) == home
        assert len(rbay.ok("tab", "list", session=s)["tabs"]) == 1  # no tab was created
    finally:
        cdp.close()
    rows = audit(rbay, s)
    for road in ("cli", "api", "mcp", "trigger", "cdp", "run"):
        assert ("open", road, False, "verb_refused") in rows, (road, rows)
    for road in ("cli", "api", "mcp", "trigger"):
        assert ("open", road, False, "browser_paused") in rows, (road, rows)
    assert ("run", "cli", False, "browser_paused") in rows
    # The hook saw each road's navigation, named by its road.
    seen = {
        r["call"]["road"]
        for r in rbay.recorded()
        if r["hook"] == "bay_before_verb"
        and r["call"]["verb"] == "open"
        and r["call"]["session"]["id"] == s
    }
    assert seen == set(ROADS)


def _run_code(b: Bay, session: str, script: str) -> str:
    r = b("run", script, session=session, timeout=120)
    frame = r.frame
    assert frame["ok"] is False, frame
    if frame["code"] == "script_failed":
        assert "verb_refused" in frame["message"], frame
    return str(frame["code"])
