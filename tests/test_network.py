"""``console``, ``errors`` and ``network`` on real pages served here, in real Chromium through
the real keeper and CLI: what a page logged, threw and requested, routes that fail or answer
its requests (and never open the fence), a HAR whose credentials are masked."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
import pytest

from browserbay import Client, SyncClient
from browserbay.errors import BayRefusal
from browserbay.keeper import netlog
from browserbay_testing import Bay, assert_refused
from browserbay_testing.bay import wait_for

#: The app page: ``call(path, init)`` fetches and shows the answer's status and body in #out;
#: ``xhr(path)`` does the same with an XMLHttpRequest.
APP = """<!doctype html><title>net app</title><p id=out>idle</p>
<script>
async function call(path, init) {
  const out = document.getElementById('out');
  try {
    const r = await fetch(path, init);
    out.textContent = r.status + ' ' + await r.text();
  } catch (e) { out.textContent = 'failed ' + e.name; }
  return out.textContent;
}
function xhr(path) {
  return new Promise(done => {
    const x = new XMLHttpRequest();
    x.open('GET', path);
    x.onload = () => done(x.status + ' ' + x.responseText);
    x.onerror = () => done('failed');
    x.send();
  });
}
</script>"""


class _Handler(BaseHTTPRequestHandler):
    server: App

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.server.log.append(self.path)
        path = self.path.split("?")[0]
        if path == "/app.html":
            self._send(200, APP, "text/html; charset=utf-8")
        elif path == "/favicon.ico":
            self._send(200, "", "image/x-icon")
        elif path == "/api/users":
            self._send(200, json.dumps({"users": ["ada"]}), "application/json")
        elif path == "/api/login":
            self._send(200, "in", "text/plain", {"Set-Cookie": "sid=SETCOOKIESECRET; Path=/"})
        else:
            self._send(404, "missing", "text/plain")

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.log.append("POST " + self.path)
        self._send(404, "missing", "text/plain")

    def _send(
        self, status: int, body: str, ctype: str, headers: dict[str, str] | None = None
    ) -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)


class App(ThreadingHTTPServer):
    """The test's site on a loopback host, with the paths it was asked for."""

    daemon_threads = True

    def __init__(self, host: str = "127.0.0.1") -> None:
        super().__init__((host, 0), _Handler)
        self.log: list[str] = []
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"


@pytest.fixture(scope="module")
def app() -> Iterator[App]:
    server = App()
    yield server
    server.shutdown()


def _open(bay: Bay, app: App, s: str) -> None:
    bay.ok("open", f"{app.url}/app.html", session=s)


def _call(bay: Bay, s: str, js: str) -> Any:
    return bay.ok("eval", js, session=s)["value"]


def test_console_keeps_log_warn_and_error_with_type_location_and_time(bay: Bay, app: App) -> None:
    s = "net-console"
    _open(bay, app, s)
    assert bay.ok("console", session=s)["messages"] == []  # negative control
    _call(bay, s, "console.log('hello', 42); console.warn('careful'); console.error('bad'); 1")
    got = wait_for(
        lambda: (m := bay.ok("console", session=s)["messages"]) and len(m) >= 3 and m,
        what="three console messages",
    )
    assert [(m["type"], m["text"]) for m in got] == [
        ("log", "hello 42"),
        ("warning", "careful"),
        ("error", "bad"),
    ]
    assert all(m["at"] > 0 for m in got)
    text = bay("console", session=s, json_=False).stdout
    assert "[warning] careful" in text
    # --clear shows them once more, then the log is empty.
    assert len(bay.ok("console", "--clear", session=s)["messages"]) == 3
    assert bay.ok("console", session=s)["messages"] == []
    bay.ok("close", session=s)


def test_a_long_console_text_is_clipped(bay: Bay, app: App) -> None:
    s = "net-clip"
    _open(bay, app, s)
    _call(bay, s, "console.log('x'.repeat(50000)); 1")
    got = wait_for(lambda: bay.ok("console", session=s)["messages"], what="the message")
    assert len(got[0]["text"]) < netlog.TEXT_MAX + 20
    assert got[0]["text"].endswith(f"…(+{50000 - netlog.TEXT_MAX})")
    bay.ok("close", session=s)


def test_the_console_ring_keeps_the_newest_entries(bay: Bay, app: App) -> None:
    s = "net-ring"
    _open(bay, app, s)
    n = netlog.CONSOLE_MAX + 25
    _call(bay, s, f"for (let i = 0; i < {n}; i++) console.log('m' + i); 1")
    data = wait_for(
        lambda: (d := bay.ok("console", session=s))["messages"][-1]["text"] == f"m{n - 1}" and d,
        what="the last message",
    )
    texts = [m["text"] for m in data["messages"]]
    assert len(texts) == netlog.CONSOLE_MAX
    assert texts[0] == "m25"
    assert texts[-1] == f"m{n - 1}"
    assert data["dropped"] == 25
    assert data["bound"] == netlog.CONSOLE_MAX
    bay.ok("close", session=s)


def test_errors_keep_an_uncaught_error_with_its_message_and_stack(bay: Bay, app: App) -> None:
    s = "net-errors"
    _open(bay, app, s)
    assert bay.ok("errors", session=s)["errors"] == []
    js = "(() => { function boom() { throw new Error('kaboom here') } setTimeout(boom); })()"
    bay.ok("eval", js, session=s)
    got = wait_for(lambda: bay.ok("errors", session=s)["errors"], what="the page error")
    assert got[0]["message"] == "kaboom here"
    assert "boom" in got[0]["stack"]
    assert got[0]["url"] == f"{app.url}/app.html"
    assert bay.ok("errors", "--clear", session=s)["cleared"] is True
    assert bay.ok("errors", session=s)["errors"] == []
    bay.ok("close", session=s)


def test_requests_list_fetch_and_xhr_with_status_filter_and_clear(bay: Bay, app: App) -> None:
    s = "net-requests"
    _open(bay, app, s)
    assert _call(bay, s, "call('/api/users')") == '200 {"users": ["ada"]}'
    assert _call(bay, s, "xhr('/nope')") == "404 missing"
    rows = wait_for(
        lambda: (
            (r := bay.ok("network", "requests", session=s)["requests"])
            and all(x["status"] for x in r)
            and r
        ),
        what="answered requests",
    )
    by_url = {r["url"]: r for r in rows}
    doc = by_url[f"{app.url}/app.html"]
    assert (doc["method"], doc["status"], doc["type"]) == ("GET", 200, "document")
    users = by_url[f"{app.url}/api/users"]
    assert (users["status"], users["type"]) == (200, "fetch")
    assert users["ms"] is not None
    assert by_url[f"{app.url}/nope"]["status"] == 404
    assert by_url[f"{app.url}/nope"]["type"] == "xhr"
    # --filter: a substring, or a glob.
    only = bay.ok("network", "requests", "--filter", "/api/", session=s)["requests"]
    assert [r["url"] for r in only] == [f"{app.url}/api/users"]
    globbed = bay.ok("network", "requests", "--filter", "*/no?e", session=s)["requests"]
    assert [r["url"] for r in globbed] == [f"{app.url}/nope"]
    bay.ok("network", "requests", "--clear", session=s)
    assert bay.ok("network", "requests", session=s)["requests"] == []
    bay.ok("close", session=s)


def test_an_aborted_route_fails_the_pages_request(bay: Bay, app: App) -> None:
    s = "net-abort"
    _open(bay, app, s)
    bay.ok("network", "route", "**/api/users", "--abort", session=s)
    assert _call(bay, s, "call('/api/users')") == "failed TypeError"
    assert "/api/users" not in app.log[-1:]  # it never reached the server
    rows = bay.ok("network", "requests", "--filter", "/api/users", session=s)["requests"]
    assert rows[-1]["routed"] == "aborted"
    assert rows[-1]["status"] is None
    # Negative control: another path still goes through.
    assert _call(bay, s, "call('/other')") == "404 missing"
    bay.ok("close", session=s)


def test_a_mocked_route_answers_with_its_json_body_and_status(bay: Bay, app: App) -> None:
    s = "net-mock"
    _open(bay, app, s)
    body = json.dumps({"users": ["mocked"]})
    answer = bay.ok(
        "network", "route", "**/api/users", "--body", body, "--status", "201", session=s
    )
    assert answer["route"]["content_type"] == "application/json"
    before = len(app.log)
    assert _call(bay, s, "call('/api/users')") == f"201 {body}"
    assert bay.ok("get", "text", "#out", session=s)["value"] == f"201 {body}"
    assert not any("/api/users" in p for p in app.log[before:])
    # A text body with its own content type; the same glob replaces the route.
    again = bay.ok(
        "network",
        "route",
        "**/api/users",
        "--body",
        "plain",
        "--content-type",
        "text/x-a",
        session=s,
    )
    assert again["replaced"] is True
    assert len(again["routes"]) == 1
    assert _call(bay, s, "fetch('/api/users').then(r => r.headers.get('content-type'))") == (
        "text/x-a"
    )
    # unroute: the real server answers again.
    bay.ok("network", "unroute", "**/api/users", session=s)
    assert _call(bay, s, "call('/api/users')") == '200 {"users": ["ada"]}'
    bay.ok("close", session=s)


def test_unrouting_a_glob_no_route_has_is_refused_and_removes_nothing(bay: Bay, app: App) -> None:
    s = "net-unroute"
    _open(bay, app, s)
    bay.ok("network", "route", "**/api/users", "--abort", session=s)
    r = bay("network", "unroute", "**/api/other", session=s)
    assert_refused(r, "route_unknown")
    assert "**/api/users" in r.frame["message"]
    assert _call(bay, s, "call('/api/users')") == "failed TypeError"  # still routed
    # With no glob: every route goes.
    assert len(bay.ok("network", "unroute", session=s)["removed"]) == 1
    assert bay.ok("network", "route", session=s)["routes"] == []
    bay.ok("close", session=s)


def test_a_refused_route_leaves_no_route_installed(bay: Bay, app: App) -> None:
    s = "net-bad-route"
    _open(bay, app, s)
    for args in (
        ("--abort", "--body", "x"),
        (),
        ("--abort", "--status", "500"),
        ("--body", "x", "--status", "99"),
    ):
        assert_refused(bay("network", "route", "**/api/users", *args, session=s), "usage")
    assert bay.ok("network", "route", session=s)["routes"] == []
    assert _call(bay, s, "call('/api/users')") == '200 {"users": ["ada"]}'
    bay.ok("close", session=s)


def test_routes_end_with_close(bay: Bay, app: App) -> None:
    s = "net-close"
    _open(bay, app, s)
    bay.ok("network", "route", "**/api/users", "--abort", session=s)
    bay.ok("close", session=s)
    _open(bay, app, s)
    assert bay.ok("network", "route", session=s)["routes"] == []
    assert _call(bay, s, "call('/api/users')") == '200 {"users": ["ada"]}'
    bay.ok("close", session=s)


def test_a_har_masks_authorization_and_cookies_and_keeps_no_body(bay: Bay, app: App) -> None:
    s = "net-har"
    _open(bay, app, s)
    assert_refused(bay("network", "har", "stop", session=s), "har_not_recording")
    bay.ok("network", "har", "start", session=s)
    assert _call(bay, s, "call('/api/login')") == "200 in"  # sets sid=SETCOOKIESECRET
    js = (
        "call('/api/users?q=1', {method: 'POST', body: 'BODYSECRET', "
        "headers: {'Authorization': 'Bearer AUTHSECRET', 'X-Api-Key': 'KEYSECRET1'}})"
    )
    assert _call(bay, s, js) == "404 missing"  # POST: no such path here
    wait_for(
        lambda: (
            len(bay.ok("network", "requests", "--filter", "/api/", session=s)["requests"]) == 2
            and all(r["status"] for r in bay.ok("network", "requests", session=s)["requests"])
        ),
        what="both requests answered",
    )
    r = bay("network", "har", "stop", session=s)
    har = r.data["har"]
    raw = json.dumps(har)
    for secret in ("AUTHSECRET", "KEYSECRET1", "SETCOOKIESECRET", "BODYSECRET"):
        assert secret not in raw, secret
        assert secret not in r.stdout
    entries = har["log"]["entries"]
    assert har["log"]["version"] == "1.2"
    login = next(e for e in entries if e["request"]["url"].endswith("/api/login"))
    set_cookie = {h["name"].lower(): h["value"] for h in login["response"]["headers"]}
    assert set_cookie["set-cookie"] == "••••"
    post = next(e for e in entries if "/api/users" in e["request"]["url"])
    sent = {h["name"].lower(): h["value"] for h in post["request"]["headers"]}
    assert sent["authorization"] == "••••"
    assert sent["x-api-key"] == "••••"
    assert sent["cookie"] == "••••"  # the browser sent sid along
    assert post["request"]["method"] == "POST"
    assert post["response"]["status"] == 404
    assert post["request"]["queryString"] == [{"name": "q", "value": "1"}]
    # Recorded since start only: the page's own load was before it.
    assert not any(e["request"]["url"].endswith("/app.html") for e in entries)
    assert_refused(bay("network", "har", "stop", session=s), "har_not_recording")
    bay.ok("close", session=s)


def test_a_har_is_written_by_the_client_and_a_body_file_is_read_by_it(
    bay: Bay, app: App, tmp_path: Any
) -> None:
    s = "net-har-file"
    _open(bay, app, s)
    body = tmp_path / "users.json"
    body.write_text(json.dumps({"users": ["from-file"]}))
    bay.ok("network", "route", "**/api/users", "--body-file", str(body), session=s)
    bay.ok("network", "har", "start", session=s)
    assert _call(bay, s, "call('/api/users')") == '200 {"users": ["from-file"]}'
    wait_for(
        lambda: any(
            r["routed"] == "mocked" and r["status"]
            for r in bay.ok("network", "requests", session=s)["requests"]
        ),
        what="the mocked request answered",
    )
    out = tmp_path / "s.har"
    answer = bay.ok("network", "har", "stop", str(out), session=s)
    assert answer["path"] == str(out)
    assert "file" not in answer
    assert out.stat().st_mode & 0o777 == 0o600
    entries = json.loads(out.read_text())["log"]["entries"]
    assert [e["_routed"] for e in entries if "/api/users" in e["request"]["url"]] == ["mocked"]
    # A body file over the bound is refused, and leaves no route.
    big = tmp_path / "big.json"
    big.write_bytes(b"x" * (netlog.BODY_MAX + 1))
    r = bay("network", "route", "**/big", "--body-file", str(big), session=s)
    assert_refused(r, "too_large")
    assert [x["glob"] for x in bay.ok("network", "route", session=s)["routes"]] == ["**/api/users"]
    bay.ok("close", session=s)


def test_a_route_never_opens_the_fence(bay: Bay, app: App) -> None:
    """Attack: mock a host outside the fence so a page of it opens, or its answer reaches
    the page. The route answers only inside the fence: outside, the fence refuses as before."""
    outside = App("127.0.0.2")
    try:
        s = "net-fence"
        bay.ok("use", "--ephemeral", "--allowed-domains", "127.0.0.1", session=s)
        _open(bay, app, s)
        bay.ok("network", "route", f"{outside.url}/**", "--body", "MOCKED", session=s)
        assert_refused(bay("open", f"{outside.url}/x", session=s), "domain_refused")
        got = _call(bay, s, f"call('{outside.url}/api/users')")
        assert got == "failed TypeError", got
        assert outside.log == []
        rows = bay.ok("network", "requests", "--filter", "127.0.0.2", session=s)["requests"]
        assert rows
        assert all(r["routed"] is None for r in rows)
        # Negative control: the same route inside the fence answers.
        bay.ok("network", "route", "**/api/users", "--body", "INSIDE", session=s)
        assert _call(bay, s, "call('/api/users')") == "200 INSIDE"
        bay.ok("close", session=s)
    finally:
        outside.shutdown()


def test_network_options_of_another_action_are_refused(bay: Bay, app: App) -> None:
    s = "net-usage"
    _open(bay, app, s)
    assert_refused(bay("network", "requests", "--abort", session=s), "usage")
    assert_refused(bay("network", "har", "begin", session=s), "usage")
    assert_refused(bay("network", "unroute", "--body", "x", session=s), "usage")
    bay.ok("close", session=s)


def test_the_python_api_reads_logs_routes_and_records_a_har(
    bay: Bay, app: App, tmp_path: Any
) -> None:
    with SyncClient("net-api", home=bay.home) as client:
        client.open(f"{app.url}/app.html")
        client.eval("console.info('from api'); 1")
        got = wait_for(lambda: client.console().data["messages"], what="the message")
        assert (got[0]["type"], got[0]["text"]) == ("info", "from api")
        assert client.errors().data["errors"] == []
        routed = client.route("**/api/users", body={"users": ["api"]}, status=202)
        assert routed.data["route"]["content_type"] == "application/json"
        client.har_start()
        assert client.eval("call('/api/users')").value == '202 {"users": ["api"]}'
        rows = wait_for(
            lambda: [r for r in client.requests(filter="/api/").data["requests"] if r["status"]],
            what="the answered request",
        )
        assert rows[0]["routed"] == "mocked"
        with pytest.raises(BayRefusal) as refused:
            client.unroute("**/nothing")
        assert refused.value.code == "route_unknown"
        assert len(client.unroute().data["removed"]) == 1
        out = tmp_path / "api.har"
        stopped = client.har_stop(out)
        assert stopped.data["path"] == str(out)
        assert json.loads(out.read_text())["log"]["entries"]
        assert client.requests(clear=True).data["cleared"] is True
        client.close()


def test_the_async_api_reads_the_console(bay: Bay, app: App) -> None:
    async def main() -> list[str]:
        async with Client("net-async", home=bay.home) as client:
            await client.open(f"{app.url}/app.html")
            await client.eval("console.warn('async'); 1")
            messages: list[dict[str, Any]] = []
            for _ in range(100):
                messages = (await client.console(clear=True)).data["messages"]
                if messages:
                    break
                await anyio.sleep(0.05)
            assert (await client.console()).data["messages"] == []
            await client.close()
            return [m["text"] for m in messages]

    assert anyio.run(main) == ["async"]


def test_a_route_on_a_shared_profile_never_reaches_another_sessions_pages(
    bay: Bay, app: App
) -> None:
    """Attack: two sessions share a persistent profile's browser context; one routes a glob
    so the other's pages fail or see its mock. A route answers only its own session's tabs."""
    bay.ok("new", "net-shared")
    a, b = "net-shared-a", "net-shared-b"
    for s in (a, b):
        bay.ok("use", "net-shared", session=s)
        _open(bay, app, s)
    bay.ok("network", "route", "**/api/users", "--abort", session=a)
    assert _call(bay, a, "call('/api/users')") == "failed TypeError"  # its own: routed
    assert _call(bay, b, "call('/api/users')") == '200 {"users": ["ada"]}'
    bay.ok("network", "route", "**/api/users", "--body", "A'S MOCK", session=a)
    assert _call(bay, b, "call('/api/users')") == '200 {"users": ["ada"]}'
    assert bay.ok("network", "route", session=b)["routes"] == []
    assert_refused(bay("network", "unroute", "**/api/users", session=b), "route_unknown")
    # A's close takes its route off the shared context; B is as it was.
    bay.ok("close", session=a)
    assert _call(bay, b, "call('/api/users')") == '200 {"users": ["ada"]}'
    bay.ok("close", session=b)
