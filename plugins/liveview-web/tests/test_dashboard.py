"""The owner's dashboard (``bay live --all``): attacked first (a session socket asks for it,
its ticket is replayed or used on a lease's path), then driven in a real Chromium: three
sessions' thumbnails update, one session's live view opens from it, Take over pauses the
agent, Stop ends the lease."""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest

from browserbay_testing import Bay, assert_refused, wait_for

pytestmark = pytest.mark.browser


def dash(viewer: Any) -> dict[str, Any]:
    value = viewer.evaluate("window.__dash || null")
    return value if isinstance(value, dict) else {}


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_a_session_socket_cannot_ask_for_the_dashboard(
    bay_with: Callable[..., Bay], session: str
) -> None:
    """On the old code `--all` was no option at all; a dashboard a session could open would
    show every other session's pages and let it stop them."""
    bay = bay_with()
    bay.ok("open", "about:blank", session=session)
    agents = bay.home / "agents"
    agents.mkdir(mode=0o700)
    sock = agents / "a.sock"
    bay.ok("session", "grant", "agent-1", "--socket", str(sock), session=None)
    on_socket = {"BAY_SOCKET": str(sock)}
    frame = assert_refused(bay("live", "--all", session=None, env=on_socket), "owner_only")
    assert "live --all" in frame["message"] or "all" in frame["message"]
    assert_refused(bay("live", "--all", "--revoke", session=None, env=on_socket), "owner_only")


def test_a_dashboard_ticket_is_one_use_and_opens_no_lease_view(
    bay_with: Callable[..., Bay], session: str, demo: str
) -> None:
    bay = bay_with()
    bay.ok("open", f"{demo}/live.html?still", session=session)
    url = bay.ok("live", "--all", session=session)["url"]
    assert "/d/" in url
    assert _status(url) == 200
    assert _status(url) == 403  # replayed
    # A lease's ticket on the dashboard's path (and the dashboard's on a lease's) buys nothing.
    lease_url = bay.ok("live", session=session)["url"]
    swapped = lease_url.replace("/v/", "/d/")
    assert _status(swapped) == 403
    other = bay.ok("live", "--all", session=session)["url"]
    assert _status(other.replace("/d/", "/v/")) == 403


def test_the_dashboard_shows_three_sessions_updating_and_opens_takes_over_and_stops(
    bay_with: Callable[..., Bay], demo: str, viewer_browser: Any
) -> None:
    bay = bay_with()
    sessions = [f"dash-{n}-{os.getpid()}" for n in range(3)]
    for sid in sessions:
        bay.ok("open", f"{demo}/live.html", session=sid)  # animated: thumbnails change
    url = bay.ok("live", "--all", session=sessions[0])["url"]
    context = viewer_browser.new_context(viewport={"width": 1200, "height": 900})
    try:
        page = context.new_page()
        page.goto(url)

        def three_updating() -> bool:
            d = dash(page)
            mine = {
                key: n for key, n in d.get("thumbs", {}).items() if key.split("|")[0] in sessions
            }
            shown = {key.split("|")[0] for key, n in mine.items() if n >= 3}
            return shown == set(sessions)

        wait_for(three_updating, timeout=45, what="three sessions' thumbnails updating")
        leases = {lease["session"]: lease for lease in dash(page)["leases"]}
        for sid in sessions:
            assert leases[sid]["input_holder"] == "agent"
            assert leases[sid]["tabs"][0]["url"].endswith("/live.html")
            assert leases[sid]["tabs"][0]["title"] == "Live view test page"
        # Thumbnails are small: drawn images at most 320 px wide in their own pixels.
        widths = page.evaluate(
            "[...document.querySelectorAll('.tab img')].map(i => i.naturalWidth)"
        )
        assert widths
        assert max(widths) <= 320
        # Open one session's live view from its card: a new page, frames flow.
        card = page.locator(f'section.lease[data-session="{sessions[1]}"]')
        with context.expect_page() as opened:
            card.locator('button[data-act="open"]').click()
        live = opened.value
        live.wait_for_load_state()
        wait_for(
            lambda: (live.evaluate("window.__live && window.__live.frames") or 0) > 0,
            what="frames in the opened live view",
        )
        assert live.evaluate("window.__live.state.session") == sessions[1]
        # Take over from the dashboard: the live view opens driving; the agent is paused.
        with context.expect_page() as taken:
            card = page.locator(f'section.lease[data-session="{sessions[2]}"]')
            card.locator('button[data-act="takeover"]').click()
        driving = taken.value
        wait_for(
            lambda: (
                driving.evaluate("window.__live && window.__live.state")
                and driving.evaluate("window.__live.state.holder") == "you"
            ),
            what="the opened live view driving",
        )
        assert_refused(bay("get", "title", session=sessions[2]), "browser_paused")
        wait_for(
            lambda: any(
                lease["session"] == sessions[2] and lease["paused"]
                for lease in dash(page)["leases"]
            ),
            what="the dashboard shows the pause",
        )
        # Stop from the dashboard: the lease ends (its tabs kept for resume).
        page.locator(f'section.lease[data-session="{sessions[0]}"] button[data-act="stop"]').click()
        wait_for(
            lambda: all(
                lease["session"] != sessions[0] or not lease["running"]
                for lease in dash(page)["leases"]
            ),
            what="the stopped lease gone from the dashboard",
        )
        assert bay.ok("resume", session=sessions[0])
        # Revoking the dashboard cuts the page off.
        bay.ok("live", "--all", "--revoke", session=sessions[1])
        wait_for(lambda: dash(page).get("ended"), what="the dashboard cut off")
        assert_refused(dash(page)["refusal"], "live_revoked")
    finally:
        context.close()
