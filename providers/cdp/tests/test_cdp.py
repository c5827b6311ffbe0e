"""The cdp provider end to end, on a real Chromium that bay did not start: two sessions on it
with their own tabs (and `bay close` leaves it running), the session-scoped endpoint against
the raw one (the negative control), its credential, the fence while a human holds the
controls, `bay run` (a multi-step script, its deadline, its output cap, its errors), `bay new
--cdp-url` and `bay chrome`."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from browserbay import procfs
from browserbay_testing import Bay, Result, assert_refused
from browserbay_testing.cdp import FLAGS, DebugBrowser, Raw, attach, chromium, refusal

# -- somebody else's browser, two sessions ------------------------------------------------


def test_two_sessions_drive_it_with_their_own_tabs_and_close_leaves_it_running(
    place: Path, debug_browser: DebugBrowser, demo: str
) -> None:
    b = Bay(place / "bay1")
    try:
        ws = debug_browser.get("/json/version")["webSocketDebuggerUrl"]
        made = b.ok("new", "theirs", "--provider", "cdp", "--cdp-url", ws)
        listed = {p["id"]: p for p in b.ok("profiles")["profiles"]}[made["id"]]
        assert listed["provider"] == "cdp"
        assert listed["options"] == ["cdp_url"]
        assert listed["disk_bytes"] is None  # no directory of ours
        theirs = {p["id"] for p in debug_browser.pages()}
        for s, path in (("a", "/"), ("b", "/form.html")):
            b.ok("use", "theirs", session=s)
            opened = b(*("open", demo + path), session=s)
            assert opened.frame["profile"]["provider"] == "cdp"
        tabs_a = b.ok("tab", "list", session="a")
        tabs_b = b.ok("tab", "list", session="b")
        assert [t["url"] for t in tabs_a["tabs"]] == [f"{demo}/"]
        assert [t["url"] for t in tabs_b["tabs"]] == [f"{demo}/form.html"]
        assert tabs_a["other_sessions_tabs"] == tabs_b["other_sessions_tabs"] == 1
        assert_refused(b("tab", "close", tabs_a["tabs"][0]["id"], session="b"), "not_your_tab")
        urls = sorted(p["url"] for p in debug_browser.pages())
        assert f"{demo}/" in urls
        assert f"{demo}/form.html" in urls
        status = b.ok("keeper", "status")
        (browser,) = [r for r in status["browsers"] if r["profile"] == made["id"]]
        assert browser["pid"] is None  # not our process
        assert browser["sessions"] == ["a", "b"]

        b.ok("close", session="a")
        urls = [p["url"] for p in debug_browser.pages()]
        assert f"{demo}/" not in urls, "a's own tab is closed"
        assert f"{demo}/form.html" in urls, "b's tab is untouched"
        b.ok("close", session="b")
        b.stop()
        assert debug_browser.answers(), "bay close and keeper stop leave the browser running"
        left = {p["id"] for p in debug_browser.pages()}
        assert theirs <= left, "no tab bay did not open was closed"
        assert f"{demo}/form.html" not in [p["url"] for p in debug_browser.pages()]

        for s in ("a", "b"):
            b.ok("detach", session=s)
        forgot = b("forget", "theirs", json_=False)
        assert forgot.code == 0, forgot
        assert "nothing of it was touched" in forgot.stdout
        assert debug_browser.answers()
    finally:
        b.stop()


# -- the session-scoped endpoint ----------------------------------------------------------


def test_a_script_through_the_scoped_endpoint_sees_and_reaches_only_its_tabs(
    cbay: Bay, work: str, debug_browser: DebugBrowser, demo: str
) -> None:
    from playwright.sync_api import sync_playwright

    for s, path in (("sa", "/"), ("sb", "/form.html")):
        cbay.ok("use", work, session=s)
        cbay.ok("open", demo + path, session=s)
    mine = cbay.ok("cdp-url", session="sa")
    other = cbay.ok("cdp-url", session="sb")
    assert mine["url"].startswith("ws://127.0.0.1:")
    assert mine["url"] != other["url"], "one credential per session"
    assert mine["url"] != debug_browser.get("/json/version")["webSocketDebuggerUrl"]

    def script(endpoint: str) -> dict[str, Any]:
        """The same Playwright code, against any endpoint: what it sees, what it can do."""
        seen: dict[str, Any] = {}
        with sync_playwright() as pw:
            browser = pw.chromium.connect_over_cdp(endpoint)
            context = browser.contexts[0]
            seen["urls"] = sorted(p.url for p in context.pages)
            theirs = [p for p in context.pages if p.url == f"{demo}/form.html"]
            seen["reached"] = []
            for page in theirs:  # somebody else's tab, if this endpoint shows it
                page.goto(f"{demo}/popup.html")
                seen["reached"].append(page.url)
                page.close()
            browser.close()
        return seen

    scoped = script(mine["url"])
    assert scoped["urls"] == [f"{demo}/"], "only its own tab"
    assert scoped["reached"] == []
    assert cbay.ok("get", "url", session="sb")["value"] == f"{demo}/form.html"

    with sync_playwright() as pw:  # its own tab: navigate it, open one more (it joins the lease)
        browser = pw.chromium.connect_over_cdp(mine["http_url"])
        context = browser.contexts[0]
        (page,) = context.pages
        page.goto(f"{demo}/form.html")
        extra = context.new_page()
        extra.goto(f"{demo}/")
        browser.close()
    tabs = cbay.ok("tab", "list", session="sa")["tabs"]
    assert sorted(t["url"] for t in tabs) == [f"{demo}/", f"{demo}/form.html"]
    assert cbay.ok("get", "url", session="sb")["value"] == f"{demo}/form.html"

    raw = Raw(mine["url"])
    try:
        targets = raw.call("Target.getTargets")["result"]["targetInfos"]
        assert other["target"] not in [t["targetId"] for t in targets]
        assert mine["target"] in [t["targetId"] for t in targets]
        for method in ("Target.closeTarget", "Target.attachToTarget", "Target.activateTarget"):
            answer = raw.call(method, {"targetId": other["target"], "flatten": True})
            assert_refused(refusal(answer), "not_your_tab")
        assert_refused(refusal(raw.call("Browser.close")), "method_refused")
        answer = raw.call("Page.navigate", {"url": "about:blank"})  # on the browser session
        assert "browser session" in refusal(answer)["message"]
        assert_refused(refusal(raw.call("Target.createBrowserContext")), "method_refused")
        sid = attach(raw, mine["target"])
        title = raw.call("Runtime.evaluate", {"expression": "document.title"}, sid)
        assert title["result"]["result"]["value"] == "Sign up"
    finally:
        raw.close()
    assert debug_browser.answers()
    assert cbay.ok("get", "url", session="sb")["value"] == f"{demo}/form.html"

    # The negative control: the same script on the browser's own endpoint reaches b's tab.
    control = script(debug_browser.http)
    assert f"{demo}/form.html" in control["urls"]
    assert control["reached"], "the raw endpoint shows and navigates somebody else's tab"
    left = [t["url"] for t in cbay.ok("tab", "list", session="sb")["tabs"]]
    assert f"{demo}/form.html" not in left, "the raw endpoint closed b's tab"


def test_the_credential_is_the_leases_and_ends_with_it(
    cbay: Bay, work: str, debug_browser: DebugBrowser, demo: str
) -> None:
    cbay.ok("use", work, session="sc")
    cbay.ok("open", f"{demo}/", session="sc")
    got = cbay.ok("cdp-url", session="sc")
    assert cbay.ok("cdp-url", session="sc")["url"] == got["url"], "stable while the lease lives"
    forged = got["url"].rsplit("/", 1)[0] + "/not-a-credential"
    with pytest.raises(InvalidStatus):
        connect(forged).close()
    with pytest.raises(InvalidStatus):  # a web page (it sends an Origin) never gets in
        connect(got["url"], origin="http://evil.example").close()  # type: ignore[arg-type]
    raw = Raw(got["url"])
    assert "result" in raw.call("Browser.getVersion")
    cbay.ok("close", session="sc")
    closed = False  # the open connection is closed with the lease
    for _ in range(50):
        try:
            raw.call("Browser.getVersion")
        except ConnectionClosed:
            closed = True
            break
        time.sleep(0.1)
    assert closed
    with pytest.raises(InvalidStatus):
        connect(got["url"]).close()
    assert debug_browser.answers()


def test_while_a_human_holds_the_controls_the_fenced_classes_are_interrupted(
    cbay: Bay, work: str, demo: str
) -> None:
    verbs = {v["name"] for v in cbay.ok("verbs")["verbs"]}
    if "handoff" not in verbs:
        pytest.skip("the live view plugin (bay handoff) is not installed")
    cbay.ok("use", work, session="fa")
    cbay.ok("open", f"{demo}/", session="fa")
    got = cbay.ok("cdp-url", session="fa")
    raw = Raw(got["url"])
    try:
        sid = attach(raw, got["target"])
        slow = "new Promise(r => setTimeout(() => r('late'), 30000))"
        inflight = raw.send("Runtime.evaluate", {"expression": slow, "awaitPromise": True}, sid)
        out: dict[str, Result] = {}
        handoff = threading.Thread(
            target=lambda: out.setdefault(
                "r",
                cbay(
                    "handoff", "--reason", "a test", "--wait", "6", "--timeout", "30", session="fa"
                ),
            )
        )
        handoff.start()
        cut = raw.wait(inflight, timeout=30)  # answered at the takeover, not after 30 s
        frame = assert_refused(refusal(cut), "browser_interrupted")
        assert frame["data"]["may_have_reached_page"] is True
        click = {"type": "mousePressed", "x": 5, "y": 5, "button": "left", "clickCount": 1}
        for method, params in (
            ("Input.dispatchMouseEvent", click),
            ("Page.navigate", {"url": f"{demo}/form.html"}),
            ("Runtime.evaluate", {"expression": "1 + 1"}),
        ):
            frame = assert_refused(refusal(raw.call(method, params, sid)), "browser_interrupted")
            assert method in frame["message"]
        frame = assert_refused(refusal(raw.call("Future.unknownMethod", {}, sid)), "method_refused")
        assert "Future.unknownMethod" in frame["message"]
        assert "no row in the census" in frame["message"]
        assert "result" in raw.call("DOM.getDocument", {}, sid), "a read answers"
        assert "result" in raw.call("Target.getTargets"), "a session call answers"
        handoff.join(60)
        assert out["r"].code == 0, out["r"]
        again = raw.call("Runtime.evaluate", {"expression": "1 + 1"}, sid)
        assert again["result"]["result"]["value"] == 2, "after the handback it answers"
    finally:
        raw.close()


# -- bay run ------------------------------------------------------------------------------


def _script(place: Path, name: str, body: str) -> Path:
    path = place / name
    path.write_text(body)
    return path


def test_run_executes_a_multi_step_script_on_the_sessions_tab(
    cbay: Bay, work: str, place: Path, demo: str
) -> None:
    cbay.ok("use", work, session="ra")
    cbay.ok("open", f"{demo}/", session="ra")
    script = _script(
        place,
        "steps.py",
        f"""print("on", await page.title())
await page.goto("{demo}/form.html")
await page.locator("input").first.fill("Ada")
value = await page.locator("input").first.input_value()
print("filled", value)
print("pages", len(context.pages))
for i in range(3):
    print("step", i)
""",
    )
    r = cbay("run", str(script), session="ra", json_=False, timeout=120)
    assert r.code == 0, r
    lines = [line for line in r.stderr.splitlines() if not line.startswith("profile:")]
    assert lines[:6] == [
        "on browserbay demo",
        "filled Ada",
        "pages 1",
        "step 0",
        "step 1",
        "step 2",
    ], r.stderr
    assert "ran " in r.stdout
    assert "form.html" in r.stdout
    assert cbay.ok("get", "url", session="ra")["value"] == f"{demo}/form.html"
    # A relative path is the caller's (the CLI makes it absolute): not here, so refused.
    assert_refused(cbay("run", "no-such-steps.py", session="ra", timeout=120), "usage")
    broken = _script(place, "broken.py", "print('so far')\nraise ValueError('nope')\n")
    failed = cbay("run", str(broken), session="ra", timeout=120)
    frame = assert_refused(failed, "script_failed")
    assert "ValueError: nope" in frame["message"]
    assert frame["data"]["line"] == 2


def test_run_deadline_names_the_call_in_flight_and_exits_124(
    cbay: Bay, work: str, place: Path
) -> None:
    cbay.ok("use", work, session="rb")
    script = _script(
        place,
        "slow.py",
        'print("before")\nawait page.wait_for_selector("#never-there", timeout=120000)\n',
    )
    started = time.monotonic()
    r = cbay("run", str(script), "--timeout", "10", session="rb", timeout=120)
    assert time.monotonic() - started < 30
    frame = assert_refused(r, "script_deadline")
    assert r.code == 124
    assert "page.wait_for_selector('#never-there'" in frame["message"], frame
    assert "before" in r.stderr


def test_run_output_over_the_cap_is_cut_and_spilled_to_a_named_file(
    cbay: Bay, work: str, place: Path
) -> None:
    cbay.ok("use", work, session="rc")
    script = _script(
        place, "loud.py", 'for i in range(3000):\n    print(f"{i:05d} " + "x" * 44)\nprint("END")\n'
    )
    r = cbay("run", str(script), session="rc", timeout=120)
    assert r.code == 0, r
    data = r.data
    total = 3000 * 51 + 4
    assert data["output_chars"] == total
    spilled = Path(data["output_file"])
    assert spilled.read_text() == "".join(f"{i:05d} " + "x" * 44 + "\n" for i in range(3000)) + (
        "END\n"
    )
    assert "[cut:" in r.stderr
    assert str(spilled) in r.stderr
    assert len(r.stderr) < 52_000, "at most the cap (and a marker) reaches the caller"
    assert "00000 x" in r.stderr
    assert r.stderr.rstrip().splitlines()[-1] == "END"


# -- registering ---------------------------------------------------------------------------


def test_new_cdp_url_forms_and_refusals(
    cbay: Bay, debug_browser: DebugBrowser, place: Path, demo: str
) -> None:
    assert_refused(cbay("new", "x", "--provider", "cdp"), "usage")
    assert_refused(cbay("new", "x", "--provider", "cdp", "--cdp-url", "ftp://h"), "usage")
    r = cbay("new", "x", "--provider", "cdp", "--cdp-url", "http://127.0.0.1:9")
    assert "no browser answers" in assert_refused(r, "backend_unavailable")["message"]
    assert_refused(cbay("new", "x", "--cdp-url", debug_browser.http), "usage")  # chromium
    r = cbay(
        "new", "x", "--provider", "cdp", "--cdp-url", "auto", "--allowed-domains", "example.org"
    )
    assert_refused(r, "capability_missing")
    found = cbay.ok("new", "found", "--provider", "cdp", "--cdp-url", "auto")
    assert found["options"] == ["cdp_url", "devtools_dir"]
    cbay.ok("use", found["id"], session="au")
    assert cbay.ok("open", f"{demo}/", session="au")["title"] == "browserbay demo"
    by_dir = cbay.ok(
        "new", "bydir", "--provider", "cdp", "--cdp-url", str(debug_browser.user_data_dir)
    )
    assert by_dir["options"] == ["cdp_url", "devtools_dir"]
    assert cbay.ok("cdp-url", session="ephemeral-one")["url"].startswith("ws://127.0.0.1:")
    cbay.ok("close", session="ephemeral-one")


def test_bay_chrome_starts_a_browser_of_the_users_registers_it_and_it_outlives_the_keeper(
    place: Path, demo: str
) -> None:
    exe = chromium()
    b = Bay(place / "bay2", BAY_CHROME_PATH=exe)
    pid, endpoint = None, ""
    try:
        # --json before `--`: every word after it is a Chrome switch.
        argv = ("chrome", "--profile", "mine", "--headless", "--allow-open-port", "--json")
        argv = (*argv, "--", *FLAGS)
        r = b(*argv, json_=False, timeout=60)
        assert r.code == 0, r
        got = r.data
        pid, endpoint = got["pid"], got["endpoint"]
        assert got["started"] is True
        assert "mine" not in got["dir"], "the label never reaches a path"
        b.ok("use", "mine", session="ch")
        assert b.ok("open", f"{demo}/", session="ch")["title"] == "browserbay demo"
        again = b.ok("chrome", "--profile", "mine", session="other")
        assert again["started"] is False
        assert again["profile"] == got["profile"]
        b.ok("close", session="ch")
        b.stop()
        assert procfs.alive(pid), "the keeper's stop leaves the user's Chrome running"
        assert _ws(int(got["endpoint"].rsplit(":", 1)[1])).startswith("ws://")
    finally:
        b.stop()
        if pid is not None:
            _close_chrome(pid, endpoint)


def _close_chrome(pid: int, endpoint: str) -> None:
    """Close the Chrome `bay chrome` started (the test's job: bay never closes it)."""
    with contextlib.suppress(Exception), connect(_ws(int(endpoint.rsplit(":", 1)[1]))) as ws:
        ws.send(json.dumps({"id": 1, "method": "Browser.close"}))
        ws.recv(timeout=5)
    end = time.monotonic() + 10
    while procfs.alive(pid) and time.monotonic() < end:
        time.sleep(0.05)
    if procfs.alive(pid):
        os.kill(pid, 15)


def _ws(port: int) -> str:
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/version", timeout=5) as r:
        return str(json.loads(r.read())["webSocketDebuggerUrl"])


def test_bay_chrome_that_does_not_answer_prints_the_tail_of_its_log(place: Path) -> None:
    fake = place / "fake-chrome"
    fake.write_text("#!/bin/sh\necho 'boom: this Chrome cannot start here' >&2\nexit 3\n")
    fake.chmod(0o755)
    b = Bay(place / "bay3", BAY_CHROME_PATH=str(fake))
    try:
        r = b("chrome", "--profile", "broken", "--headless", "--allow-open-port", timeout=60)
        frame = assert_refused(r, "backend_unavailable")
        assert "boom: this Chrome cannot start here" in frame["message"]
        assert frame["data"]["log"] in frame["message"]
        assert Path(frame["data"]["log"]).is_file()
        assert b.ok("profiles")["profiles"] == [], "nothing is registered"
    finally:
        b.stop()
