"""The live view end to end, in real browsers: the session's Chromium (run by the keeper)
and the human's Chromium (Playwright here) showing the live page."""

from __future__ import annotations

import json
import re
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest

from browserbay_testing import BAY, Bay, Result, assert_refused, wait_for
from browserbay_testing.live import DIALOG_JS, dialog_answered, live_state, live_stats
from browserbay_testing.pages import serve_pages

pytestmark = pytest.mark.browser


stats = live_stats
state = live_state


def open_live(bay: Bay, session: str, viewer: Any, *flags: str) -> str:
    url = bay.ok("live", *flags, session=session)["url"]
    assert url.startswith("http://127.0.0.1:")
    assert "ticket=" in url
    viewer.goto(url)
    wait_for(lambda: stats(viewer).get("frames", 0) > 0, what="a first frame")
    return str(url)


def picture_point(viewer: Any, fx: float, fy: float) -> tuple[float, float]:
    """Where a point of the page (fractions of its viewport) is drawn in the viewer window,
    computed here from the decoded picture's own size and the canvas box (letterboxed)."""
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


def element_fraction(bay: Bay, session: str, selector: str) -> tuple[float, float]:
    js = (
        f"(() => {{ const r = document.querySelector({json.dumps(selector)})"
        ".getBoundingClientRect(); return [(r.left + r.width / 2) / innerWidth,"
        " (r.top + r.height / 2) / innerHeight]; })()"
    )
    fx, fy = bay.ok("eval", js, session=session)["value"]
    return float(fx), float(fy)


def take_over(viewer: Any) -> None:
    viewer.click("#toggle")
    wait_for(lambda: state(viewer).get("holder") == "you", what="the takeover")


def hand_back(viewer: Any) -> None:
    viewer.click("#toggle")
    wait_for(lambda: state(viewer).get("holder") == "agent", what="the handback")


# -- picture, state, pointer, keys --------------------------------------------------------


def test_frames_arrive_and_change_and_the_page_shows_the_lease(
    lbay: Bay, session: str, demo: str, viewer: Any
) -> None:
    lbay.ok("open", f"{demo}/live.html", session=session)
    first_tab = lbay.ok("tab", session=session)["tabs"][0]["id"]
    lbay.ok("tab", "new", f"{demo}/", session=session)
    lbay.ok("tab", first_tab, session=session)  # back to the animated tab
    open_live(lbay, session, viewer)
    assert "ticket" not in viewer.url  # exchanged for the cookie, gone from the address bar
    first = stats(viewer)
    # Frames keep arriving and each one differs (the animation). The rate depends on the
    # machine's load; bench/liveview.py measures it.
    later = wait_for(
        lambda: (
            (now := stats(viewer))["frames"] - first["frames"] >= 10
            and now["distinct"] - first["distinct"] >= 10
            and now
        ),
        timeout=15,
        what="ten new, different frames",
    )
    st = later["state"]
    assert st["url"].endswith("/live.html")
    assert st["title"] == "Live view test page"
    assert st["mode"] == "control"
    assert st["holder"] == "agent"
    assert st["viewers"] == 1
    assert all(t["url"].endswith(p) for t, p in zip(st["tabs"], ("/live.html", "/"), strict=True))
    assert [t["agent"] for t in st["tabs"]] == [True, False]
    assert viewer.locator("#tabs button").count() == 2
    assert viewer.locator("#badge").inner_text() == "Agent is driving"
    # The agent cursor sits where the agent's last pointer verb acted.
    lbay.ok("click", "#cell-2-1", session=session)
    fx, fy = element_fraction(lbay, session, "#cell-2-1")
    cursor = wait_for(lambda: state(viewer).get("cursor"), what="the agent cursor")
    assert abs(cursor[0] - fx) < 0.01
    assert abs(cursor[1] - fy) < 0.01
    assert viewer.locator("#cursor").is_visible()
    # A second viewer is counted by both.
    other = viewer.context.new_page()
    open_live(lbay, session, other, "--watch")
    wait_for(lambda: state(viewer).get("viewers") == 2, what="two viewers")
    assert state(other)["mode"] == "watch"
    assert other.locator("#toggle").is_hidden()  # a watch link cannot take over
    other.close()


#: A button inside an iframe that sits well off the page's corner.
FRAMED = """<!doctype html><title>Framed</title>
<iframe id=f style="position:absolute; left:220px; top:160px; width:320px; height:220px; border:0"
  srcdoc="<body style='margin:0'><button id=inner
    style='position:absolute; left:40px; top:60px; width:120px; height:40px'>In</button>">
</iframe>"""

#: The inner button's centre as fractions of the page's viewport (frame offset included).
FRAMED_FRACTION_JS = """(() => {
  const f = document.getElementById('f'), r = f.contentDocument.getElementById('inner');
  const o = f.getBoundingClientRect(), b = r.getBoundingClientRect();
  const x = o.left + b.left + b.width / 2, y = o.top + b.top + b.height / 2;
  return [x / innerWidth, y / innerHeight];
})()"""


def test_the_agent_cursor_of_a_click_inside_an_iframe_sits_on_the_element(
    lbay: Bay, session: str, viewer: Any
) -> None:
    """The old code marked the point the element measured in its frame's pixels: off by the
    frame's offset (220, 160) in the live view."""
    with serve_pages({"/framed": FRAMED}) as base:
        lbay.ok("open", f"{base}/framed", session=session)
        open_live(lbay, session, viewer)
        lbay.ok("frame", "#f", session=session)
        lbay.ok("click", "#inner", session=session)
        lbay.ok("frame", "main", session=session)
        fx, fy = lbay.ok("eval", FRAMED_FRACTION_JS, session=session)["value"]
        seen: list[Any] = []

        def on_the_button() -> bool:
            cursor = state(viewer).get("cursor")
            seen.append(cursor)
            return bool(cursor) and abs(cursor[0] - fx) < 0.01 and abs(cursor[1] - fy) < 0.01

        try:
            wait_for(on_the_button, timeout=10, what="the cursor on the framed button")
        except AssertionError:
            raise AssertionError(f"the cursor {seen[-1]} is not at {fx:.3f}, {fy:.3f}") from None


@pytest.mark.parametrize("dpr", [1, 2])
def test_a_click_on_the_picture_lands_on_the_right_element(
    lbay: Bay, session: str, demo: str, viewer: Any, dpr: int
) -> None:
    lbay.ok("open", f"{demo}/live.html?still", session=session)
    got = lbay.ok("emulate", "900", "600", str(dpr), session=session)
    assert got["dpr"] == dpr
    open_live(lbay, session, viewer)
    take_over(viewer)
    for target in ("#cell-2-1", "#cell-0-2", "#cell-3-0"):
        fx, fy = layout_fraction(target)
        x, y = picture_point(viewer, fx, fy)
        viewer.mouse.click(x, y)
        viewer.wait_for_timeout(150)
        hand_back(viewer)
        assert lbay.ok("get", "text", "#clicked", session=session)["value"] == target[1:]
        take_over(viewer)
    hand_back(viewer)


_LAYOUT = {  # live.html: cell (c, r) is at left 20+140c, top 80+80r, 120x60 (CSS px)
    f"#cell-{c}-{r}": (20 + 140 * c + 60, 80 + 80 * r + 30) for c in range(4) for r in range(3)
}


def layout_fraction(selector: str, width: float = 900, height: float = 600) -> tuple[float, float]:
    """The element's centre as fractions of the viewport, from the page's known layout
    (while a human drives, the agent cannot ask the page)."""
    x, y = _LAYOUT[selector]
    return x / width, y / height


def test_keys_text_and_wheel_from_the_live_page_reach_the_page(
    lbay: Bay, session: str, demo: str, viewer: Any
) -> None:
    lbay.ok("open", f"{demo}/live.html?still", session=session)
    fx, fy = element_fraction(lbay, session, "#name")
    sx, sy = element_fraction(lbay, session, "#scroller")
    open_live(lbay, session, viewer)
    take_over(viewer)
    viewer.mouse.click(*picture_point(viewer, fx, fy))
    viewer.wait_for_timeout(100)
    viewer.keyboard.type("Adx Lov")
    viewer.keyboard.press("ArrowLeft")
    viewer.keyboard.press("ArrowLeft")
    viewer.keyboard.press("ArrowLeft")
    viewer.keyboard.press("ArrowLeft")
    viewer.keyboard.press("Backspace")
    viewer.keyboard.type("a")
    viewer.keyboard.press("End")
    viewer.keyboard.type("elace")
    viewer.keyboard.insert_text(" ✓")  # text without keys (paste, IME): goes as text
    viewer.keyboard.press("Enter")  # carries "\r": the form submits
    viewer.mouse.move(*picture_point(viewer, sx, sy))
    viewer.mouse.wheel(0, 240)
    viewer.wait_for_timeout(300)
    hand_back(viewer)
    assert lbay.ok("get", "value", "#name", session=session)["value"] == "Ada Lovelace ✓"
    assert lbay.ok("get", "text", "#submitted", session=session)["value"] == "Ada Lovelace ✓"
    scrolled = lbay.ok("eval", "document.getElementById('scroller').scrollTop", session=session)
    assert scrolled["value"] > 100
    keys = lbay.ok("get", "text", "#keys", session=session)["value"]
    assert "[Backspace]" in keys
    assert "[Enter]" in keys
    assert "[ArrowLeft]" in keys


# -- takeover, interruption, handback -------------------------------------------------------


def test_takeover_pauses_the_agent_and_the_handback_says_where_it_is(
    lbay: Bay, session: str, demo: str, viewer: Any
) -> None:
    lbay.ok("open", f"{demo}/live.html?still", session=session)
    open_live(lbay, session, viewer)
    take_over(viewer)
    assert viewer.locator("#badge").inner_text().startswith("You are driving")
    assert viewer.locator("#toggle").inner_text() == "Hand back"
    frame = assert_refused(lbay("click", "#cell-0-0", session=session), "browser_paused")
    assert "live view" in frame["data"]["by"]
    assert frame["data"]["origin"] == "takeover"
    assert_refused(lbay("get", "title", session=session), "browser_paused")
    # The live link still works while paused (it does not touch the page).
    assert lbay.ok("live", session=session)["url"]
    hand_back(viewer)
    # The human navigates; the agent is told where the tab is now.
    width, height = lbay.ok("eval", "[innerWidth, innerHeight]", session=session)["value"]
    take_over(viewer)
    fx, fy = layout_fraction("#cell-1-0", width, height)
    viewer.mouse.click(*picture_point(viewer, fx, fy))
    hand_back(viewer)
    after = lbay("get", "title", session=session)
    assert after.code == 0
    notice = after.frame["notice"]
    assert "handed the controls back" in notice
    assert "/live.html?still" in notice
    assert "notice" not in lbay("get", "title", session=session).frame  # said once
    hooks = [r for r in lbay.recorded() if r["hook"] in ("bay_takeover", "bay_handback")]
    mine = [r for r in hooks if r["lease"]["session"]["id"] == session]
    assert [r["hook"] for r in mine] == ["bay_takeover", "bay_handback"] * 2
    assert mine[0]["viewer"].startswith("viewer ")
    assert mine[0]["lease"]["input_holder"] == "user"


def _popen(bay: Bay, session: str, *args: str) -> subprocess.Popen[str]:
    env = dict(bay.env, BAY_SESSION=session)
    return subprocess.Popen(
        [BAY, *args, "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )


def _finish(proc: subprocess.Popen[str], timeout: float = 15) -> Result:
    out, err = proc.communicate(timeout=timeout)
    return Result(proc.returncode, out, err)


def test_a_verb_in_flight_is_cut_by_the_takeover_and_named_at_the_handback(
    lbay: Bay, session: str, demo: str, viewer: Any
) -> None:
    lbay.ok("open", f"{demo}/live.html?still", session=session)
    open_live(lbay, session, viewer)
    waiting = _popen(lbay, session, "wait", "20000", "--timeout", "40")
    time.sleep(1.0)  # it is in flight on the page
    started = time.monotonic()
    take_over(viewer)
    frame = assert_refused(_finish(waiting), "browser_interrupted")
    assert time.monotonic() - started < 10  # at once (a loaded machine is slow to show it)
    assert frame["data"]["verb"] == "wait"
    assert frame["data"]["may_have_reached_page"] is False
    assert frame["data"]["command"] == "bay wait 20000"
    hand_back(viewer)
    # A mutating verb cut in flight says it may have reached the page.
    evaluating = _popen(lbay, session, "eval", "new Promise(r => setTimeout(r, 20000))")
    time.sleep(1.0)
    take_over(viewer)
    cut = assert_refused(_finish(evaluating), "browser_interrupted")
    assert cut["data"]["may_have_reached_page"] is True
    assert "<js>" in cut["data"]["command"]  # what the agent typed is never echoed
    hand_back(viewer)
    notice = lbay("get", "url", session=session).frame["notice"]
    assert "run again what was cut: bay eval <js>" in notice


def test_idle_handback_and_a_stopped_browser_greys_and_comes_back(
    bay_with: Callable[..., Bay], demo: str, viewer: Any, session: str
) -> None:
    bay = bay_with(BAY_HANDBACK_IDLE="1.5", BAY_IDLE_TIMEOUT="4", BAY_TICK="0.5")
    bay.ok("open", f"{demo}/live.html", session=session)
    open_live(bay, session, viewer)
    # Idle handback: a takeover with no input gives the controls back by itself. The
    # takeover's own "you" lasts only 1.5 s (a loaded machine's poll may never see it): what
    # is waited for is what stays — the agent's verbs refused while paused, then the answer
    # that carries the handback's notice (said once; the session cannot idle out first).
    viewer.click("#toggle")

    def told() -> dict[str, Any] | None:
        frame = bay("get", "title", session=session).frame
        return frame if "gave no input" in frame.get("notice", "") else None

    notice = wait_for(told, timeout=20, what="the idle handback's notice")["notice"]
    assert "gave no input for 1.5s" in notice
    wait_for(lambda: state(viewer).get("holder") == "agent", what="the viewer told")
    # The session idles out: its browser context stops; the viewer keeps the last picture,
    # greyed, says so, and never starts a browser itself.
    wait_for(lambda: state(viewer).get("running") is False, timeout=15, what="browser stopped")
    assert "stopped" in (viewer.get_attribute("#stage", "class") or "")
    assert viewer.locator("#overlay-text").inner_text() == "browser stopped"
    assert stats(viewer)["iw"] > 0  # the last picture is still there
    time.sleep(1.5)
    assert state(viewer)["running"] is False  # nobody started it behind the agent's back
    # The agent comes back: the same viewer follows, and the picture moves again.
    bay.ok("open", f"{demo}/live.html", session=session)
    wait_for(lambda: state(viewer).get("running") is True, timeout=10, what="running again")
    frames = stats(viewer)["frames"]
    wait_for(lambda: stats(viewer)["frames"] > frames + 5, what="new frames")
    assert "stopped" not in (viewer.get_attribute("#stage", "class") or "")


# -- security -------------------------------------------------------------------------------


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str, dict[str, str]]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode(), dict(answer.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), dict(exc.headers)


def _ws_status(url: str, **headers: str) -> int:
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    origin = headers.pop("origin", None)
    try:
        with connect(url, origin=origin, additional_headers=headers, open_timeout=10):  # type: ignore[arg-type]
            return 101
    except InvalidStatus as exc:
        return exc.response.status_code


def test_tickets_cookies_and_origins_are_checked(lbay: Bay, session: str, demo: str) -> None:
    lbay.ok("open", f"{demo}/live.html?still", session=session)
    url = lbay.ok("live", session=session)["url"]
    page_url = url.split("?", 1)[0]
    origin = re.match(r"^(http://127\.0\.0\.1:\d+)", url).group(1)  # type: ignore[union-attr]
    ws_url = "ws" + page_url[4:] + "ws"
    # No ticket, no cookie: 401 (page and socket).
    assert _get(page_url)[0] == 401
    assert _ws_status(ws_url, origin=origin) == 401
    # The ticket buys an HttpOnly, SameSite=Strict cookie scoped to this view.
    status, body, headers = _get(url)
    assert status == 200
    assert "<canvas" in body
    cookie = headers["Set-Cookie"]
    assert "HttpOnly" in cookie
    assert "SameSite=Strict" in cookie
    assert "Max-Age=86400" in cookie
    assert "default-src 'none'" in headers["Content-Security-Policy"]
    token = cookie.split(";", 1)[0]
    # Replayed ticket: refused.
    assert _get(url)[0] == 403
    # With the cookie: the page, and the socket from our own origin only.
    assert _get(page_url, {"Cookie": token})[0] == 200
    assert _ws_status(ws_url, origin=origin, Cookie=token) == 101
    assert _ws_status(ws_url, origin="http://evil.example", Cookie=token) == 403
    assert _ws_status(ws_url, Cookie=token) == 403  # no Origin at all
    # Another view's path does not accept this cookie; a foreign Host is refused.
    other = page_url.replace(page_url.split("/")[-2], "0" * 16)
    assert _get(other, {"Cookie": token})[0] == 401
    assert _get(page_url, {"Cookie": token, "Host": "evil.example"})[0] == 403
    # Ending the session revokes its credentials.
    lbay.ok("close", session=session)
    assert _get(page_url, {"Cookie": token})[0] == 401


def test_a_title_with_markup_is_shown_as_text(
    lbay: Bay, session: str, demo: str, viewer: Any
) -> None:
    raw = lbay.ok("open", f"{demo}/markup-title.html", session=session)["title"]
    assert "<b" in raw
    assert "<img" in raw
    open_live(lbay, session, viewer)
    wait_for(lambda: state(viewer).get("title") == raw, what="the title")
    assert viewer.locator("#title").text_content() == raw
    assert raw in viewer.locator("#tabs button").first.text_content()
    assert viewer.locator("#pwned").count() == 0
    assert viewer.locator("img").count() == 0
    assert viewer.evaluate("document.body.dataset.pwned") is None


def test_closing_the_session_ends_the_live_view(
    lbay: Bay, session: str, demo: str, viewer: Any
) -> None:
    lbay.ok("open", f"{demo}/live.html?still", session=session)
    open_live(lbay, session, viewer)
    lbay.ok("close", session=session)
    wait_for(lambda: stats(viewer).get("ended"), what="the ended page")
    assert "ended" in viewer.locator("#overlay-text").inner_text()
    viewer.reload()
    assert "no live-view credential" in viewer.content()


# -- login check and handoff ----------------------------------------------------------------


def test_login_check_decides_from_the_settled_url(lbay: Bay, session: str, demo: str) -> None:
    args = ("--logged-in", "*/account", "--logged-out", "*/login.html*")
    out = lbay.ok("login-check", "--url", f"{demo}/account", *args, session=session)
    assert out["state"] == "logged_out"
    assert "/login.html" in out["url"]
    assert out["settled"]
    lbay.ok("open", f"{demo}/do-login", session=session)
    out = lbay.ok("login-check", "--url", f"{demo}/account", *args, session=session)
    assert out["state"] == "logged_in"
    assert out["url"].endswith("/account")
    out = lbay.ok("login-check", "--url", f"{demo}/", "--logged-in", "*/account", session=session)
    assert out["state"] == "unknown"
    assert_refused(lbay("login-check", "--url", f"{demo}/", session=session), "usage")


def test_handoff_prints_the_link_waits_for_the_human_and_answers_the_url(
    lbay: Bay, session: str, demo: str, viewer: Any
) -> None:
    lbay.ok("open", f"{demo}/account", session=session)
    assert_refused(lbay("handoff", "--wait", "5", session=session), "usage")  # no --reason
    too_long = lbay("handoff", "--reason", "x", "--wait", "100", "--timeout", "20", session=session)
    assert "--timeout 110" in assert_refused(too_long, "usage")["message"]
    proc = _popen(
        lbay,
        session,
        "handoff",
        "--reason",
        "log in to the demo",
        "--wait",
        "40",
        "--timeout",
        "60",
    )
    assert proc.stderr is not None
    line = ""
    end = time.monotonic() + 20
    while "ticket=" not in line and time.monotonic() < end:
        line = proc.stderr.readline()
    link = re.search(r"http://127\.0\.0\.1:\d+/\S+", line)
    assert link, line
    viewer.goto(link.group(0))
    wait_for(lambda: state(viewer).get("holder") == "nobody", what="the paused state")
    assert "log in to the demo" in viewer.locator("#badge").inner_text()
    take_over(viewer)
    wait_for(lambda: "/login.html" in state(viewer).get("url", ""), what="the login page")
    hand_back(viewer)
    result = _finish(proc, timeout=20)
    assert result.code == 0, result
    data = result.data
    assert data["handed_back"] is True
    assert "/login.html" in data["url"]
    assert "handed the controls back" in result.frame["notice"]


def test_a_slow_viewer_keeps_the_keeper_memory_flat(
    lbay: Bay, session: str, demo: str, viewer: Any
) -> None:
    """A viewer that never reads: the keeper drops its frames instead of queueing them (the
    60 s run is bench/liveview.py --soak)."""
    from websockets.sync.client import connect

    lbay.ok("open", f"{demo}/live.html", session=session)
    url = lbay.ok("live", session=session)["url"]
    status, _body, headers = _get(url)
    assert status == 200
    token = headers["Set-Cookie"].split(";", 1)[0]
    origin = re.match(r"^(http://127\.0\.0\.1:\d+)", url).group(1)  # type: ignore[union-attr]
    ws_url = "ws" + url.split("?", 1)[0][4:] + "ws"
    pid = lbay.ok("keeper", "status", session=None)["pid"]
    with connect(
        ws_url, origin=origin, additional_headers={"Cookie": token}, max_queue=1, close_timeout=1
    ):  # type: ignore[arg-type]
        open_live(lbay, session, viewer)  # a reading viewer beside the slow one
        time.sleep(3.0)  # the slow one's socket buffers fill up
        before = _rss_kib(pid)
        frames_before = stats(viewer)["frames"]
        time.sleep(8.0)
        after = _rss_kib(pid)
        frames_after = stats(viewer)["frames"]
    assert frames_after - frames_before > 16  # the reading viewer is not held back
    assert after - before < 12 * 1024, (before, after)


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


# -- a dialog the page opened -----------------------------------------------------------------


def test_the_human_sees_an_open_dialog_and_answers_it_and_the_agent_is_told(
    lbay: Bay, session: str, demo: str, viewer: Any
) -> None:
    lbay.ok("open", f"{demo}/form.html", session=session)
    assert lbay.ok("eval", DIALOG_JS, session=session)["value"] == "ok"
    open_live(lbay, session, viewer)
    assert viewer.locator("#dialog").is_hidden()  # none open: none shown
    lbay.ok("click", "#ask", session=session)
    wait_for(lambda: viewer.locator("#dialog").is_visible(), what="the dialog shown")
    assert viewer.locator("#dialog-message").inner_text() == "Your name?"
    assert viewer.locator("#dialog-text").input_value() == "Bob"
    viewer.fill("#dialog-text", "Grace Hopper")
    viewer.click("#dialog-accept")
    answer = dialog_answered(lbay, session)
    assert lbay.ok("get", "text", "#out", session=session)["value"] == "prompt Grace Hopper"
    assert "a human in the live view (viewer" in answer["notice"]
    assert "accepted with text they typed" in answer["notice"]
    assert "Grace" not in answer["notice"]  # what they typed is never said
    wait_for(lambda: viewer.locator("#dialog").is_hidden(), what="the dialog gone")
    # A confirm, dismissed by the human.
    lbay.ok("click", "#sure", session=session)
    wait_for(lambda: viewer.locator("#dialog").is_visible(), what="the confirm shown")
    assert viewer.locator("#dialog-text").is_hidden()
    viewer.click("#dialog-dismiss")
    answer = dialog_answered(lbay, session)
    assert lbay.ok("get", "text", "#out", session=session)["value"] == "confirm false"
    assert "dismissed the confirm" in answer["notice"]


def test_a_watch_link_shows_the_dialog_but_cannot_answer_it(
    lbay: Bay, session: str, demo: str, viewer: Any
) -> None:
    lbay.ok("open", f"{demo}/form.html", session=session)
    lbay.ok("eval", DIALOG_JS, session=session)
    open_live(lbay, session, viewer, "--watch")
    lbay.ok("click", "#sure", session=session)
    wait_for(lambda: viewer.locator("#dialog").is_visible(), what="the confirm shown")
    assert viewer.locator("#dialog-buttons").is_hidden()
    # Sent by hand anyway: refused, the dialog stays open.
    viewer.evaluate(
        "() => { const ws = new WebSocket('ws://' + location.host + location.pathname + 'ws');"
        " ws.onopen = () => ws.send(JSON.stringify({t: 'dialog', accept: true})); }"
    )
    viewer.wait_for_timeout(1000)
    assert lbay.ok("dialog", "status", session=session)["dialogs"][0]["type"] == "confirm"
    lbay.ok("dialog", "dismiss", session=session)
