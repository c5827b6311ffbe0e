"""The session-scoped endpoint's method and parameter policy, attacked as a client that holds
only its own ``bay cdp-url`` would, on a cdp profile whose browser two sessions share: local
schemes and the browser's own DevTools endpoint through every URL-bearing method, tracing,
browser-wide methods sent on a page session, files outside the session's upload directory; a
tab created through the endpoint is the session's by the time the answer comes; ``bay run``
keeps its credential off the child's argv; ``bay chrome`` opens no debugging port unasked.

The crash URL goes last: on a build without the scheme rule it takes the module's browser
down."""

from __future__ import annotations

import base64
import json
import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from browserbay_testing import Bay, assert_refused
from browserbay_testing.cdp import FLAGS, DebugBrowser, Raw, attach, chromium, refusal


@pytest.fixture
def own(cbay: Bay, work: str, demo: str, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A session with one tab on the shared browser, its endpoint, and a second session
    ``<name>-other`` with a tab of its own beside it."""
    name = request.node.name[5:25]
    other = f"{name}-other"
    for s, path in ((name, "/"), (other, "/form.html")):
        cbay.ok("use", work, session=s)
        cbay.ok("open", demo + path, session=s)
    got = cbay.ok("cdp-url", session=name)
    raw = Raw(got["url"])
    got.update(
        session=name,
        other=cbay.ok("cdp-url", session=other),
        raw=raw,
        sid=attach(raw, got["target"]),
    )
    try:
        yield got
    finally:
        raw.close()
        cbay.ok("close", session=name)
        cbay.ok("close", session=other)


def evaluate(raw: Raw, sid: str, expression: str) -> Any:
    answer = raw.call(
        "Runtime.evaluate",
        {"expression": expression, "awaitPromise": True, "returnByValue": True},
        sid,
    )
    return answer["result"]["result"].get("value")


def target_urls(raw: Raw) -> list[str]:
    return [t["url"] for t in raw.call("Target.getTargets")["result"]["targetInfos"]]


def local_urls(debug_browser: DebugBrowser, demo: str) -> list[str]:
    return [
        "chrome://version",
        "CHROME://version",
        " chrome://version",
        "chr\tome://version",
        "chrome-untrusted://terms",
        f"file://{debug_browser.user_data_dir}/DevToolsActivePort",
        "file:///etc/passwd",
        "FILE:/etc/passwd",
        "devtools://devtools/bundled/inspector.html",
        f"view-source:{demo}/",
        "javascript:document.title='escaped'",
        "data:text/html,<title>escaped</title>",
        f"blob:{demo}/00000000-0000-0000-0000-000000000000",
        "filesystem:http://127.0.0.1/temporary/x",
        "about:version",
        "no-scheme-at-all",
    ]


def test_its_own_tab_is_never_navigated_to_a_local_scheme(
    own: dict[str, Any], debug_browser: DebugBrowser, demo: str
) -> None:
    raw, sid = own["raw"], own["sid"]
    for url in local_urls(debug_browser, demo):
        frame = assert_refused(
            refusal(raw.call("Page.navigate", {"url": url}, sid)), "local_scheme_refused"
        )
        assert "http, https and about:blank" in frame["message"]
        frame = assert_refused(
            refusal(raw.call("Target.createTarget", {"url": url})), "local_scheme_refused"
        )
        assert_refused(
            refusal(raw.call("Fetch.continueRequest", {"requestId": "x", "url": url}, sid)),
            "local_scheme_refused",
        )
        assert_refused(
            refusal(
                raw.call(
                    "Network.loadNetworkResource",
                    {
                        "url": url,
                        "frameId": own["target"],
                        "options": {"disableCache": True, "includeCredentials": False},
                    },
                    sid,
                )
            ),
            "local_scheme_refused",
        )
    assert evaluate(raw, sid, "location.href") == f"{demo}/"
    assert evaluate(raw, sid, "document.title") == "browserbay demo"
    for url in target_urls(raw):
        assert url.startswith(("http:", "about:blank")), url
    # What the rule lets through: http(s) and the exact about:blank (Playwright's new_page).
    assert "result" in raw.call("Page.navigate", {"url": f"{demo}/form.html"}, sid)
    made = raw.call("Target.createTarget", {"url": "about:blank"})
    assert "result" in made, made
    assert "result" in raw.call("Target.closeTarget", {"targetId": made["result"]["targetId"]})


def test_the_browsers_own_devtools_endpoint_is_out_of_reach(
    own: dict[str, Any], debug_browser: DebugBrowser, demo: str
) -> None:
    """On the old code the tab loaded ``/json/list``, which names every tab's WebSocket URL:
    the other session's page was one ``connect`` away."""
    raw, sid = own["raw"], own["sid"]
    port = debug_browser.port
    for url in (
        f"http://127.0.0.1:{port}/json/list",
        f"http://localhost:{port}/json/list",
        f"http://[::1]:{port}/json",
        f"http://127.1:{port}/json/list",
        f"http://0x7f000001:{port}/json/list",
        f"HTTP://user:pw@127.0.0.1:{port}/json/list",
        f"http://127.0.0.1:00{port}/json/list",
        f"http:\\\\127.0.0.1:{port}\\json\\list",
        f"http:127.0.0.1:{port}/json/list",
        f"http:/\\127.0.0.1:{port}/json/list",
        f"https://127.0.0.1:{port}/json/version",
        f"ws://127.0.0.1:{port}/devtools/browser",
    ):
        for method, params, on in (
            ("Page.navigate", {"url": url}, sid),
            ("Target.createTarget", {"url": url}, ""),
            (
                "Network.loadNetworkResource",
                {
                    "url": url,
                    "frameId": own["target"],
                    "options": {"disableCache": True, "includeCredentials": False},
                },
                sid,
            ),
        ):
            frame = refusal(raw.call(method, params, on))
            assert frame["code"] in ("devtools_refused", "local_scheme_refused"), (url, frame)
            if url.lower().startswith("http"):
                assert_refused(frame, "devtools_refused")
                assert f"port {port}" in frame["message"], frame
    body = evaluate(raw, sid, "document.body.innerText")
    assert own["other"]["target"] not in body
    assert evaluate(raw, sid, "location.href") == f"{demo}/"
    assert own["other"]["target"] not in json.dumps(raw.call("Target.getTargets"))


def test_a_redirect_the_client_forges_cannot_reach_the_devtools_endpoint(
    own: dict[str, Any], debug_browser: DebugBrowser, demo: str
) -> None:
    """``Fetch.fulfillRequest`` answering a request of its own tab with a 302: Chromium refuses
    a redirect to file:// or chrome:// (``ERR_UNSAFE_REDIRECT``) but follows one to the
    DevTools port's ``/json/list`` (the old code let it through)."""
    raw, sid = own["raw"], own["sid"]
    port = debug_browser.port
    assert "result" in raw.call("Fetch.enable", {"patterns": [{"urlPattern": "*form.html*"}]}, sid)
    for forged in (
        {"responseHeaders": [{"name": "Location", "value": f"http://127.0.0.1:{port}/json/list"}]},
        {"responseHeaders": [{"name": "location", "value": f"//localhost:{port}/json"}]},
        {"responseHeaders": [{"name": "Refresh", "value": f"0; url=http://[::1]:{port}/json"}]},
        {"responseHeaders": [{"name": "Location", "value": "file:///etc/passwd"}]},
        {
            "binaryResponseHeaders": base64.b64encode(
                f"Content-Type: text/html\0Location: http://127.1:{port}/json/list".encode()
            ).decode()
        },
    ):
        nav = raw.send("Page.navigate", {"url": f"{demo}/form.html"}, sid)
        paused = raw.event("Fetch.requestPaused")["params"]
        answer = raw.call(
            "Fetch.fulfillRequest",
            {"requestId": paused["requestId"], "responseCode": 302, **forged},
            sid,
        )
        assert refusal(answer)["code"] in ("devtools_refused", "local_scheme_refused"), forged
        stop = {"requestId": paused["requestId"], "errorReason": "Aborted"}
        raw.call("Fetch.failRequest", stop, sid)
        raw.wait(nav)
        assert not evaluate(raw, sid, "location.href").startswith(f"http://127.0.0.1:{port}")
    raw.call("Fetch.disable", {}, sid)
    assert own["other"]["target"] not in (evaluate(raw, sid, "document.body.innerText") or "")
    # A redirect of its own elsewhere is the client's to forge.
    raw.call("Fetch.enable", {"patterns": [{"urlPattern": "*form.html*"}]}, sid)
    nav = raw.send("Page.navigate", {"url": f"{demo}/form.html"}, sid)
    paused = raw.event("Fetch.requestPaused")["params"]
    moved = [{"name": "Location", "value": "/popup.html"}]
    answer = raw.call(
        "Fetch.fulfillRequest",
        {"requestId": paused["requestId"], "responseCode": 302, "responseHeaders": moved},
        sid,
    )
    assert "result" in answer, answer
    raw.wait(nav)
    raw.call("Fetch.disable", {}, sid)


@pytest.fixture(scope="module")
def bouncer(debug_browser: DebugBrowser) -> Iterator[str]:
    """An http server on loopback whose ``/go`` answers 302 to the DevTools endpoint."""
    target = f"http://127.0.0.1:{debug_browser.port}/json/list"

    class Bounce(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(302)
            self.send_header("Location", target)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Bounce)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/go"
    server.shutdown()


def test_a_tab_opened_through_the_endpoint_is_not_redirected_to_the_devtools_endpoint(
    own: dict[str, Any], debug_browser: DebugBrowser, bouncer: str
) -> None:
    """The hops of what a tab loads are the in-browser guard's (section 4 of security.md): a
    tab the scoped client created is covered like any other of the browser."""
    raw = own["raw"]
    port = debug_browser.port
    made = raw.call("Target.createTarget", {"url": "about:blank"})["result"]["targetId"]
    sid = attach(raw, made)
    raw.call("Page.navigate", {"url": bouncer}, sid)
    time.sleep(0.5)
    assert not str(evaluate(raw, sid, "location.href")).startswith(f"http://127.0.0.1:{port}")
    raw.call("Page.navigate", {"url": "about:blank"}, sid)
    evaluate(raw, sid, f"location.href = 'http://127.0.0.1:{port}/json/list'; 1")
    time.sleep(0.8)
    assert not str(evaluate(raw, sid, "location.href")).startswith(f"http://127.0.0.1:{port}")
    assert own["other"]["target"] not in str(evaluate(raw, sid, "document.body.innerText"))


def test_chromium_itself_refuses_a_pages_own_navigation_to_local_schemes(
    own: dict[str, Any], demo: str
) -> None:
    """A measurement, not a rule of ours (it passes on the old code too): navigations the page
    starts itself (``location = …``, ``window.open``) are renderer-initiated, and Chromium
    refuses those to chrome://, file://, devtools://, view-source: and top-level data:."""
    raw, sid = own["raw"], own["sid"]
    for url in (
        "chrome://version",
        "chrome://inducebrowsercrashforrealz",
        "file:///etc/passwd",
        "devtools://devtools/bundled/inspector.html",
        f"view-source:{demo}/",
        "data:text/html,<title>escaped</title>",
    ):
        evaluate(raw, sid, f"location.href = {json.dumps(url)}; 1")
        evaluate(raw, sid, f"window.open({json.dumps(url)}); 1")
        time.sleep(0.4)
        assert evaluate(raw, sid, "location.href") == f"{demo}/", url
        for seen in target_urls(raw):  # a refused window.open leaves an empty popup
            assert seen == "" or seen.startswith(("http:", "about:blank")), (url, seen)


def test_tracing_is_refused_on_every_session(own: dict[str, Any]) -> None:
    """Tracing records the whole browser: every session's URLs. The old code judged it only
    on the browser session; on a page session ``Tracing.start`` answered ``{}``."""
    raw, sid = own["raw"], own["sid"]
    for on in (sid, ""):
        for method in (
            "Tracing.start",
            "Tracing.getCategories",
            "Tracing.requestMemoryDump",
            "Tracing.end",
        ):
            frame = assert_refused(refusal(raw.call(method, {}, on)), "method_refused")
            assert method in frame["message"]


def test_browser_wide_methods_are_refused_whatever_session_they_arrive_on(
    own: dict[str, Any], debug_browser: DebugBrowser, place: Path
) -> None:
    raw, sid = own["raw"], own["sid"]
    elsewhere = place / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    browser_sid = raw.call("Target.attachToBrowserTarget")["result"]["sessionId"]
    for method, params in (
        ("Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(elsewhere)}),
        ("Browser.getBrowserCommandLine", {}),
        ("Browser.getHistograms", {}),
        ("Browser.setWindowBounds", {"windowId": 1, "bounds": {"width": 400}}),
        ("Browser.cancelDownload", {"guid": "x"}),
        ("SystemInfo.getInfo", {}),
        ("SystemInfo.getProcessInfo", {}),
        ("Memory.getBrowserSamplingProfile", {}),
        ("Target.setRemoteLocations", {"locations": [{"host": "127.0.0.1", "port": 1}]}),
        ("Target.exposeDevToolsProtocol", {"targetId": own["target"]}),
        ("Extensions.getStorageItems", {"id": "a" * 32, "storageArea": "local"}),
        ("Extensions.getExtensions", {}),
    ):
        for on in (sid, "", browser_sid):
            frame = assert_refused(refusal(raw.call(method, params, on)), "method_refused")
            assert method in frame["message"], frame
    # Downloads are the keeper's: Browser.setDownloadBehavior is answered here on every
    # session (Playwright's connect_over_cdp sends it) and never reaches the browser.
    for on in (sid, ""):
        answer = raw.call(
            "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(elsewhere)}, on
        )
        assert answer.get("result") == {}, answer
    evaluate(
        raw,
        sid,
        "const a = document.createElement('a'); a.download = 'stolen.txt';"
        "a.href = URL.createObjectURL(new Blob(['x'])); document.body.append(a); a.click(); 1",
    )
    time.sleep(2)
    assert list(elsewhere.iterdir()) == [], "the download went where the client said"
    # What stays: the few browser-session methods that reach nothing but the lease's own.
    assert "result" in raw.call("Browser.getVersion")
    assert "result" in raw.call("Browser.getVersion", {}, sid)
    assert "result" in raw.call("Storage.getCookies")
    assert "result" in raw.call("Storage.getCookies", {}, browser_sid)
    foreign = {"browserContextId": "0123456789ABCDEF0123456789ABCDEF"}
    for on in (sid, "", browser_sid):
        assert_refused(refusal(raw.call("Storage.getCookies", foreign, on)), "not_your_tab")
    assert debug_browser.answers()


def test_file_inputs_take_files_only_from_the_sessions_upload_directory(
    own: dict[str, Any], debug_browser: DebugBrowser, cbay: Bay
) -> None:
    raw, sid = own["raw"], own["sid"]
    evaluate(
        raw,
        sid,
        "document.body.insertAdjacentHTML('beforeend', '<input type=file id=up multiple>'); 1",
    )
    root = raw.call("DOM.getDocument", {}, sid)["result"]["root"]["nodeId"]
    node = raw.call("DOM.querySelector", {"nodeId": root, "selector": "#up"}, sid)["result"][
        "nodeId"
    ]
    read = "Promise.all([...document.querySelector('#up').files].map(f => f.text()))"

    def put(files: list[str]) -> dict[str, Any]:
        return raw.call("DOM.setFileInputFiles", {"files": files, "nodeId": node}, sid)

    frame = assert_refused(refusal(put(["/etc/passwd"])), "method_refused")
    assert "upload directory" in frame["message"]
    assert evaluate(raw, sid, read) == [], "the page read /etc/passwd"
    upload = Path(own["upload_dir"])
    assert upload.is_dir()
    assert upload.stat().st_mode & 0o777 == 0o700
    assert upload.is_relative_to(cbay.home), upload
    (upload / "ok.txt").write_text("mine to send")
    (upload / "passwd").symlink_to("/etc/passwd")
    (upload / "profile").symlink_to(debug_browser.user_data_dir)
    for files in (
        [str(debug_browser.user_data_dir / "DevToolsActivePort")],
        [f"{upload}/../../../../../../etc/passwd"],
        [str(upload / "passwd")],
        [str(upload / "profile" / "DevToolsActivePort")],
        ["ok.txt"],
        [str(upload / "ok.txt"), "/etc/passwd"],
        [str(upload)],
        [str(upload / "missing.txt")],
    ):
        assert_refused(refusal(put(files)), "method_refused")
        assert evaluate(raw, sid, read) == [], files
    drag = {
        "type": "dragEnter",
        "x": 5,
        "y": 5,
        "data": {"items": [], "files": ["/etc/passwd"], "dragOperationsMask": 1},
    }
    assert_refused(refusal(raw.call("Input.dispatchDragEvent", drag, sid)), "method_refused")
    assert "result" in put([str(upload / "ok.txt")])
    assert evaluate(raw, sid, read) == ["mine to send"]


def test_a_tab_created_through_the_endpoint_is_the_sessions_when_the_answer_comes(
    own: dict[str, Any], cbay: Bay
) -> None:
    """The old code adopted the tab after it answered (CI saw ``bay tab list`` miss it)."""
    raw, name = own["raw"], own["session"]
    for n in range(2, 7):
        made = raw.call("Target.createTarget", {"url": "about:blank"})
        assert "result" in made, made
        tabs = cbay.ok("tab", "list", session=name)["tabs"]
        assert len(tabs) == n, (n, tabs)


def test_run_hands_its_credential_to_the_child_off_argv(
    cbay: Bay, work: str, place: Path, demo: str
) -> None:
    cbay.ok("use", work, session="rcred")
    cbay.ok("open", f"{demo}/", session="rcred")
    token = cbay.ok("cdp-url", session="rcred")["url"].rsplit("/", 1)[1]
    script = place / "whoami.py"
    script.write_text(
        "import os\n"
        "argv = open('/proc/self/cmdline', 'rb').read().replace(b'\\0', b' ').decode()\n"
        "env = open('/proc/self/environ', 'rb').read().replace(b'\\0', b' ').decode()\n"
        "print('ARGV', argv)\n"
        "print('ENV', env)\n"
        "print('FDS', sorted(os.listdir('/proc/self/fd')))\n"
        "print('TITLE', await page.title())\n"
    )
    r = cbay("run", str(script), session="rcred", json_=False, timeout=120)
    assert r.code == 0, r
    (argv,) = [line for line in r.stderr.splitlines() if line.startswith("ARGV ")]
    (env,) = [line for line in r.stderr.splitlines() if line.startswith("ENV ")]
    assert "browserbay_cdp.runner" in argv, "the line read is the real child's"
    assert token not in argv, argv
    assert token not in env
    assert "TITLE browserbay demo" in r.stderr, "the child still reached the tab"
    cbay.ok("close", session="rcred")


def test_bay_chrome_opens_no_debugging_port_unasked(place: Path) -> None:
    exe = chromium()
    b = Bay(place / "bay-open-port", BAY_CHROME_PATH=exe)
    try:
        argv = ("chrome", "--profile", "mine", "--headless", "--json", "--", *FLAGS)
        r = b(*argv, json_=False, timeout=60)
        frame = assert_refused(r, "open_port_refused")
        assert "--allow-open-port" in frame["way_out"]
        assert "every local user" in frame["message"]
        assert b.ok("profiles")["profiles"] == [], "nothing is registered"
        chrome_dirs = list((place / "bay-open-port").rglob("DevToolsActivePort"))
        assert chrome_dirs == [], "no browser was started"
    finally:
        b.stop()


def test_the_crash_url_cannot_take_the_shared_browser_down(
    own: dict[str, Any], debug_browser: DebugBrowser, cbay: Bay, demo: str
) -> None:
    raw, sid = own["raw"], own["sid"]
    for url in (
        "chrome://inducebrowsercrashforrealz",
        "chrome://crash",
        "chrome://kill",
        "chrome://hang",
        "chrome://gpucrash",
        "chrome://memory-exhaust",
    ):
        assert_refused(
            refusal(raw.call("Page.navigate", {"url": url}, sid)), "local_scheme_refused"
        )
        assert_refused(
            refusal(raw.call("Target.createTarget", {"url": url})), "local_scheme_refused"
        )
    time.sleep(0.5)
    assert debug_browser.answers(), "the shared browser is down"
    other = own["session"] + "-other"
    assert cbay.ok("get", "url", session=other)["value"] == f"{demo}/form.html"
    assert os.path.isdir(debug_browser.user_data_dir)
