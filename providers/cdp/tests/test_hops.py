"""The scheme rule on every hop of a cdp profile's tabs: the browser's own DevTools HTTP
endpoint (``/json/list`` names every tab's control socket) is out of reach of what a tab loads
— a redirect, a link, ``window.open``, a tab driven through the session's scoped endpoint —
and not only of the first URL a verb names. Real Chromium with a debugging port, real keeper."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from browserbay_testing import Bay, assert_refused
from browserbay_testing.cdp import DebugBrowser, start_debug_browser
from browserbay_testing.hopserver import HopServer, hop, page


@pytest.fixture(scope="module")
def inside() -> Iterator[HopServer]:
    server = HopServer("127.0.0.1")
    yield server
    server.shutdown()


def _shows_targets(bay: Bay, session: str) -> bool:
    """A tab of the session shows the endpoint's JSON (every target's WebSocket URL)."""
    for tab in bay.ok("tab", "list", session=session)["tabs"]:
        bay.ok("tab", tab["id"], session=session)
        text = bay.ok("eval", "document.body ? document.body.innerText : ''", session=session)
        if "webSocketDebuggerUrl" in str(text["value"]):
            return True
    return False


def test_a_redirect_to_the_browsers_own_devtools_endpoint_is_refused(
    cbay: Bay, work: str, debug_browser: DebugBrowser, inside: HopServer
) -> None:
    """On the old code the 302 was followed and the tab showed /json/list."""
    s = "hop-302"
    cbay.ok("use", work, session=s)
    port = debug_browser.port
    for host in ("127.0.0.1", "localhost"):
        endpoint = f"http://{host}:{port}/json/list"
        frame = assert_refused(
            cbay("open", hop(inside.url(""), endpoint), session=s), "devtools_refused"
        )
        assert frame["data"]["endpoint"] == f"{host}:{port}", frame
        # Named directly, too: refused, not loaded.
        assert_refused(cbay("open", endpoint, session=s), "devtools_refused")
    assert not _shows_targets(cbay, s)


@pytest.mark.parametrize("how", ["link", "window-open", "form"])
def test_what_a_page_starts_never_reaches_the_devtools_endpoint(
    cbay: Bay, work: str, debug_browser: DebugBrowser, inside: HopServer, how: str
) -> None:
    s = f"hop-{how}"
    cbay.ok("use", work, session=s)
    endpoint = f"http://127.0.0.1:{debug_browser.port}/json/list"
    via = hop(inside.url(""), endpoint, 307)
    markup = {
        "link": f"<a id=go href='{via}'>go</a>",
        "window-open": f"<button id=go onclick=\"window.open('{endpoint}')\">go</button>",
        "form": f"<form action='{endpoint}'><button id=go>go</button></form>",
    }[how]
    cbay.ok("open", page(inside.url(""), markup), session=s)
    cbay("click", "#go", session=s)
    cbay.ok("wait", "500", session=s)
    assert not _shows_targets(cbay, s)


def test_a_tab_driven_through_the_scoped_endpoint_is_held_to_it_too(
    cbay: Bay, work: str, debug_browser: DebugBrowser, inside: HopServer
) -> None:
    from playwright.sync_api import Error, sync_playwright

    s = "hop-scoped"
    cbay.ok("use", work, session=s)
    cbay.ok("open", inside.url("/"), session=s)
    endpoint = f"http://127.0.0.1:{debug_browser.port}/json/list"
    with sync_playwright() as pw:
        browser = pw.chromium.connect_over_cdp(cbay.ok("cdp-url", session=s)["url"])
        extra = browser.contexts[0].new_page()
        with pytest.raises(Error, match="ERR_BLOCKED_BY_CLIENT"):
            extra.goto(hop(inside.url(""), endpoint))
        extra.wait_for_load_state("load")  # Chromium's error page commits after the refusal
        extra.wait_for_timeout(200)
        text = extra.evaluate("document.body ? document.body.innerText : ''")
        assert "webSocketDebuggerUrl" not in text
        browser.close()


def _other_address() -> str | None:
    """This machine's address on its first non-loopback interface (a UDP socket's source
    address: nothing is sent), or None when it has none."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))
        except OSError:
            return None
        address = str(s.getsockname()[0])
    return None if address.startswith("127.") else address


class Forwarder:
    """A TCP forwarder from ``address``:<port> to 127.0.0.1:``to``: a browser on another host,
    reached at that host's address (Chromium 156 binds its debugging port to loopback only and
    ignores ``--remote-debugging-address``)."""

    def __init__(self, address: str, to: int):
        self.listener = socket.create_server((address, 0))
        self.port = self.listener.getsockname()[1]
        self.to = to
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.to))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := a.recv(65536):
                b.sendall(data)
        with contextlib.suppress(OSError):
            b.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self.listener.close()


def test_a_remote_browsers_devtools_endpoint_is_refused_at_its_own_host(
    place: Path, cbay: Bay, inside: HopServer
) -> None:
    """A cdp profile on a browser at another host's address (here: this machine's
    non-loopback address, forwarded to a real Chromium): a tab redirected to that host's
    DevTools port read /json/list, every target's WebSocket URL, because the guard only
    named a port for a loopback cdp URL. The port is now refused on every host."""
    address = _other_address()
    if address is None:
        pytest.skip("this machine has no non-loopback address")
    far = start_debug_browser(place / "far" / "chromium")
    forward = Forwarder(address, far.port)
    try:
        endpoint = f"http://{address}:{forward.port}/json/list"
        with urllib.request.urlopen(endpoint, timeout=5) as r:
            assert b"webSocketDebuggerUrl" in r.read()
        cbay.ok("new", "far", "--provider", "cdp", "--cdp-url", f"http://{address}:{forward.port}")
        s = "hop-far"
        cbay.ok("use", "far", session=s)
        frame = assert_refused(
            cbay("open", hop(inside.url(""), endpoint), session=s), "devtools_refused"
        )
        assert frame["data"]["endpoint"] == f"{address}:{forward.port}", frame
        assert not _shows_targets(cbay, s)
        cbay.ok("close", session=s)
    finally:
        cbay("forget", "far")
        forward.close()
        far.close()


def test_no_other_sessions_tab_reads_a_cdp_browsers_devtools_endpoint(
    place: Path, cbay: Bay, work: str, debug_browser: DebugBrowser, inside: HopServer
) -> None:
    """A session on its own isolated browser opened the cdp browser's /json/list and read
    every tab of it, other sessions' URLs and control sockets among them (found by the
    hostile campaign): the guard kept that port off the cdp browser's own tabs only. Every
    browser of the keeper now keeps every known DevTools port off its tabs — a cdp profile
    made before the session's browser started, and one made while it runs."""
    s = "iso-devtools"
    opened = cbay("open", inside.url("/"), session=s)  # its own isolated browser
    assert json.loads(opened.stdout)["profile"]["provider"] == "chromium", opened
    for host in ("127.0.0.1", "localhost"):
        endpoint = f"http://{host}:{debug_browser.port}/json/list"
        assert_refused(cbay("open", endpoint, session=s), "devtools_refused")
        assert_refused(cbay("open", hop(inside.url(""), endpoint), session=s), "devtools_refused")
    assert not _shows_targets(cbay, s)
    later = start_debug_browser(place / "later" / "chromium")
    try:
        cbay.ok("new", "later", "--provider", "cdp", "--cdp-url", later.http)
        endpoint = f"http://127.0.0.1:{later.port}/json/list"
        assert_refused(cbay("open", hop(inside.url(""), endpoint), session=s), "devtools_refused")
        assert not _shows_targets(cbay, s)
    finally:
        cbay("forget", "later")
        later.close()
        cbay("close", session=s)
