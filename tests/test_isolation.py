"""Two sessions on one machine: separate cookies, storage and tabs; closing one leaves the
other untouched. Real Chromium, real keeper, the real `bay` CLI."""

from __future__ import annotations

from browserbay_testing import Bay, assert_refused


def test_two_sessions_cannot_see_each_others_cookies_or_tabs(bay: Bay, demo: str) -> None:
    bay.ok("open", f"{demo}/cookie?set=from-a", session="iso-a")
    bay.ok("open", f"{demo}/cookie?set=from-b", session="iso-b")
    # Each sees only its own cookie, on the same site.
    seen_a = bay.ok("open", f"{demo}/cookie", session="iso-a")
    assert seen_a["title"] == "cookie"
    assert bay.ok("get", "text", "#seen", session="iso-a")["value"] == "demo=from-a"
    bay.ok("open", f"{demo}/cookie", session="iso-b")
    assert bay.ok("get", "text", "#seen", session="iso-b")["value"] == "demo=from-b"
    # localStorage too.
    bay.ok("eval", "localStorage.setItem('who', 'a')", session="iso-a")
    assert bay.ok("eval", "localStorage.getItem('who')", session="iso-b")["value"] is None

    tabs_a = bay.ok("tab", "list", session="iso-a")
    tabs_b = bay.ok("tab", "list", session="iso-b")
    ids_a = {t["id"] for t in tabs_a["tabs"]}
    ids_b = {t["id"] for t in tabs_b["tabs"]}
    assert ids_a
    assert ids_b
    assert not ids_a & ids_b
    # b's tab list counts a's tabs but shows none of them; acting on one is refused.
    assert tabs_b["other_sessions_tabs"] >= len(ids_a)
    a_tab = next(iter(ids_a))
    assert_refused(bay("tab", a_tab, session="iso-b"), "not_your_tab")
    assert_refused(bay("tab", "close", a_tab, session="iso-b"), "not_your_tab")

    # Closing a leaves b untouched.
    closed = bay.ok("close", session="iso-a")
    assert closed["closed_tabs"] >= 1
    assert bay.ok("get", "text", "#seen", session="iso-b")["value"] == "demo=from-b"
    assert bay.ok("get", "url", session="iso-b")["value"] == f"{demo}/cookie"
    # a's old tab is gone, for a and for everybody else.
    assert_refused(bay("tab", a_tab, session="iso-a"), "tab_gone")
    # a starts again from a fresh, empty browser: its cookie did not survive.
    bay.ok("open", f"{demo}/cookie", session="iso-a")
    assert bay.ok("get", "text", "#seen", session="iso-a")["value"] == "(none)"
    bay.ok("close", session="iso-a")
    bay.ok("close", session="iso-b")


def test_sessions_share_one_chromium_process_by_default(bay: Bay, demo: str) -> None:
    for s in ("share-1", "share-2", "share-3"):
        bay.ok("open", f"{demo}/", session=s)
    status = bay.ok("keeper", "status")
    shared = [b for b in status["browsers"] if b["contexts"] >= 3]
    assert shared, status["browsers"]
    for s in ("share-1", "share-2", "share-3"):
        bay.ok("close", session=s)


def test_popups_belong_to_the_session_that_opened_them(bay: Bay, demo: str) -> None:
    bay.ok("open", f"{demo}/popup.html", session="pop")
    bay.ok("click", "text=Open the form in a new tab", session="pop")
    bay.ok("eval", "window.open('/index.html') && true", session="pop")
    bay.ok("wait", "300", session="pop")
    tabs = bay.ok("tab", "list", session="pop")["tabs"]
    assert len(tabs) == 3, tabs
    first = tabs[0]["id"]
    assert {t["opener"] for t in tabs[1:]} == {first}
    assert bay.ok("tab", "list", session="not-pop")["tabs"] == []
    for t in tabs[1:]:
        assert_refused(bay("tab", t["id"], session="not-pop"), "not_your_tab")
    bay.ok("close", session="pop")
