"""The scheme rule on every hop of a cdp profile's tabs: the browser's own DevTools HTTP
endpoint (``/json/list`` names every tab's control socket) is out of reach of what a tab loads
— a redirect, a link, ``window.open``, a tab driven through the session's scoped endpoint —
and not only of the first URL a verb names. Real Chromium with a debugging port, real keeper."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from providers.cdp.tests.cdp_helpers import DebugBrowser
from tests.helpers import Bay, assert_refused
from tests.hopserver import HopServer, hop, page


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
