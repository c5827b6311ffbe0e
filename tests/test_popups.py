"""A popup (``target=_blank``, ``window.open``) is the session's from its first request:
the session's routes (``bay network route``) answer its very first request (its navigation,
which Playwright routes before the popup's page exists), not only once the keeper has
adopted the new tab — and never another session's popup on a shared profile.

Real pages served by the test, in real Chromium through the real keeper and CLI."""

from __future__ import annotations

from collections.abc import Iterator

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
