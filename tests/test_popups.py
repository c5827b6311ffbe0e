"""A popup (``target=_blank``, ``window.open``) is the session's from its first request:
the session's routes (``bay network route``) answer its very first request (its navigation,
which Playwright routes before the popup's page exists), not only once the keeper has
adopted the new tab — and never another session's popup on a shared profile; in the
session's own (ephemeral) browser its first request carries ``bay set headers`` and fails
under ``bay set offline on``.

Real pages served by the test, in real Chromium through the real keeper and CLI."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from browserbay_testing import Bay, wait_for
from browserbay_testing.pages import serve_pages

pytestmark = pytest.mark.browser

OPENER = """<!doctype html><title>Opener</title>
<a id=pop href="/popped" target=_blank>pop</a>"""

POPPED = "<!doctype html><title>Popped</title><p>loaded</p>"


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    with serve_pages({"/opener": OPENER, "/popped": POPPED}) as base:
        yield base


def _popup(bay: Bay, s: str, before: set[str]) -> str:
    """The tab the click opened (it joins the session's tabs)."""
    new = wait_for(
        lambda: [t["id"] for t in bay.ok("tab", session=s)["tabs"] if t["id"] not in before],
        what="the popup's tab",
    )
    return str(new[0])


def _tabs(bay: Bay, s: str) -> set[str]:
    return {t["id"] for t in bay.ok("tab", session=s)["tabs"]}


def _first_request_is_routed(bay: Bay, site: str, s: str) -> None:
    bay.ok("open", f"{site}/opener", session=s)
    bay.ok("network", "route", "**/popped", "--abort", session=s)
    before = _tabs(bay, s)
    bay.ok("click", "#pop", session=s)
    tab = _popup(bay, s, before)
    bay.ok("tab", tab, session=s)
    wait_for(lambda: bay.ok("get", "url", session=s)["value"] != "about:blank", what="its url")
    assert bay.ok("get", "title", session=s)["value"] != "Popped"  # its one request: aborted
    assert "loaded" not in bay.ok("get", "text", "body", session=s)["value"]


def test_a_popups_first_request_is_answered_by_the_sessions_route(bay: Bay, site: str) -> None:
    _first_request_is_routed(bay, site, "pop-route")
    bay.ok("close", session="pop-route")


def test_a_popups_first_request_on_a_shared_profile_is_routed_too(bay: Bay, site: str) -> None:
    """On a persistent profile a route answers only the session's own pages: a popup its tab
    opened is one of them before the keeper adopts it (the old code let it through)."""
    bay.ok("new", "pop-shared")
    s = "pop-shared-a"
    bay.ok("use", "pop-shared", session=s)
    _first_request_is_routed(bay, site, s)
    bay.ok("close", session=s)


def test_a_route_never_answers_another_sessions_popup_on_a_shared_profile(
    bay: Bay, site: str
) -> None:
    """Attack: A and B share a persistent profile's browser; A aborts (or mocks) the URL B's
    popup opens. A new page's first request names no opener, so it is routed only while no
    other session holds the browser: B's popup loads as it is."""
    bay.ok("new", "pop-two")
    a, b = "pop-two-a", "pop-two-b"
    for s in (a, b):
        bay.ok("use", "pop-two", session=s)
        bay.ok("open", f"{site}/opener", session=s)
    bay.ok("network", "route", "**/popped", "--abort", session=a)
    before = _tabs(bay, b)
    bay.ok("click", "#pop", session=b)
    tab = _popup(bay, b, before)
    bay.ok("tab", tab, session=b)
    title = wait_for(lambda: bay.ok("get", "title", session=b)["value"], what="its title")
    assert title == "Popped"
    for s in (a, b):
        bay.ok("close", session=s)


class Recorder(ThreadingHTTPServer):
    """The pages, and the headers of every request for /popped."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Recording)
        self.seen: list[dict[str, str]] = []
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Recording(BaseHTTPRequestHandler):
    server: Recorder

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.startswith("/popped"):
            self.server.seen.append({k.lower(): v for k, v in self.headers.items()})
        body = (OPENER if self.path == "/opener" else POPPED).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_a_popups_first_request_has_the_sessions_headers_and_offline(bay: Bay) -> None:
    """The old code put them on the popup only once the keeper adopted it, after its first
    load: the server saw that load without the header, and offline let it through."""
    server = Recorder()
    try:
        s = "pop-headers"
        bay.ok("open", f"{server.base}/opener", session=s)
        bay.ok("set", "headers", '{"X-Bench-Tag": "popup-1"}', session=s)
        before = _tabs(bay, s)
        bay.ok("click", "#pop", session=s)
        tab = _popup(bay, s, before)
        wait_for(lambda: server.seen, what="the popup's request")
        assert server.seen[0].get("x-bench-tag") == "popup-1", server.seen[0]
        bay.ok("tab", tab, session=s)
        bay.ok("tab", "close", tab, session=s)
        # Offline: the popup's one request never reaches the server.
        bay.ok("set", "offline", "on", session=s)
        asked = len(server.seen)
        before = _tabs(bay, s)
        bay.ok("click", "#pop", session=s)
        tab = _popup(bay, s, before)
        bay.ok("tab", tab, session=s)
        wait_for(lambda: bay.ok("get", "url", session=s)["value"] != "about:blank", what="url")
        assert bay.ok("get", "title", session=s)["value"] != "Popped"
        assert len(server.seen) == asked
        bay.ok("close", session=s)
    finally:
        server.shutdown()
        server.server_close()
