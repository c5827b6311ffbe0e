"""The session-scoped endpoint for every CDP provider, driven by the clients agents use:
Puppeteer (``puppeteer-core`` from npm, installed by these tests into a cache directory of
their own: never a dependency of browserbay), Playwright's ``connect_over_cdp`` and a raw CDP
client. On each provider a session lists, creates, drives and closes its own tabs through
``bay cdp-url``, and a second session's tab on the same browser is neither listed nor
attachable (its ``tab`` target nor its ``page`` target)."""

from __future__ import annotations

from pathlib import Path

import pytest

from browserbay_testing import Bay, assert_refused
from browserbay_testing.cdpclients import check_endpoint, drive, puppeteer_dir


@pytest.fixture(scope="session")
def puppeteer() -> Path:
    return puppeteer_dir()


def two_sessions(bay: Bay, profile: str, demo: str, name: str) -> tuple[str, str]:
    mine, other = f"{name}-a", f"{name}-b"
    for s, path in ((mine, "/"), (other, "/form.html")):
        bay.ok("use", profile, session=s)
        bay.ok("open", demo + path, session=s)
    return mine, other


def test_puppeteer_and_playwright_drive_their_own_tabs_on_a_cdp_profile(
    cbay: Bay, work: str, demo: str, puppeteer: Path
) -> None:
    mine, other = two_sessions(cbay, work, demo, "cdp")
    try:
        check_endpoint(cbay, puppeteer, demo, mine, other)
    finally:
        cbay.ok("close", session=mine)
        cbay.ok("close", session=other)


def test_puppeteer_and_playwright_drive_their_own_tabs_on_the_ephemeral_default(
    bay: Bay, demo: str, puppeteer: Path
) -> None:
    """Two sessions on the isolated default: one ephemeral Chromium the keeper drives over a
    pipe (no debugging port), a context each."""
    mine, other = "eph-a", "eph-b"
    for s, path in ((mine, "/"), (other, "/form.html")):
        bay.ok("open", demo + path, session=s)
    try:
        check_endpoint(bay, puppeteer, demo, mine, other)
    finally:
        bay.ok("close", session=mine)
        bay.ok("close", session=other)


def test_puppeteer_and_playwright_drive_their_own_tabs_on_a_persistent_chromium_profile(
    bay: Bay, demo: str, puppeteer: Path
) -> None:
    bay.ok("new", "shared")
    mine, other = two_sessions(bay, "shared", demo, "per")
    try:
        check_endpoint(bay, puppeteer, demo, mine, other)
    finally:
        bay.ok("close", session=mine)
        bay.ok("close", session=other)


def test_bay_run_on_the_ephemeral_default(bay: Bay, demo: str, tmp_path: Path) -> None:
    """A Playwright script through the session's endpoint on the isolated default browser
    (before: capability_missing, the verb needed a cdp profile)."""
    bay.ok("open", f"{demo}/", session="runner")
    bay.ok("open", f"{demo}/form.html", session="runner-other")
    script = tmp_path / "steps.py"
    script.write_text(
        f"await page.goto({demo + '/shop.html'!r})\n"
        "await page.click('#buy')\n"
        "print('status:', await page.text_content('#status'))\n"
        "print('pages:', sorted(p.url for p in context.pages))\n"
    )
    try:
        ran = bay("run", str(script), session="runner", timeout=60)
        assert ran.code == 0, ran
        assert ran.frame["data"]["url"] == f"{demo}/shop.html"
        assert "status: Order placed: 1 kettle" in ran.stderr
        assert f"pages: ['{demo}/shop.html']" in ran.stderr, ran.stderr
        assert bay.ok("get", "url", session="runner-other")["value"] == f"{demo}/form.html"
    finally:
        bay.ok("close", session="runner")
        bay.ok("close", session="runner-other")


def test_cdp_url_on_a_session_socket_is_its_own_sessions_and_no_other(
    bay: Bay, demo: str, puppeteer: Path
) -> None:
    """An agent with only its session socket (issue 17) gets its own session's endpoint and
    drives its tabs with Puppeteer; naming another session is ``session_fixed``."""
    sock = bay.home / "ag.sock"
    bay.ok("session", "grant", "sock-agent", "--socket", str(sock), session=None)
    on_socket = {"BAY_SOCKET": str(sock)}
    bay.ok("open", f"{demo}/form.html", session="sock-other")
    try:
        bay.ok("open", f"{demo}/", session=None, env=on_socket)
        answer = bay("cdp-url", session=None, env=on_socket)
        assert answer.frame["session"]["id"] == "sock-agent", answer
        got = answer.frame["data"]
        seen = drive(puppeteer, got["url"], f"{demo}/shop.html", f"{demo}/form.html")
        assert seen["before"] == [f"{demo}/"]
        assert not seen["sawTheirs"]
        assert seen["status"] == "Order placed: 1 kettle"
        refused = assert_refused(
            bay("cdp-url", "--session", "sock-other", session=None, env=on_socket),
            "session_fixed",
        )
        assert refused["data"]["fixed"] == "sock-agent"
    finally:
        bay.ok("session", "revoke", "sock-agent", session=None)
        bay.ok("close", session="sock-other")


STAND_IN = "/usr/lib/chromium/chromium"


@pytest.mark.skipif(not Path(STAND_IN).exists(), reason="the stand-in Chromium is missing")
def test_puppeteer_and_playwright_drive_their_own_tabs_on_a_cloak_profile(
    place: Path, demo: str, puppeteer: Path
) -> None:
    """A cloak profile (CloakBrowser's binary cannot be downloaded here: Debian's Chromium
    stands in, as in tests/test_cloak_e2e.py), driven over a pipe like chromium's."""
    home = place / "cloak"
    b = Bay(
        home,
        CLOAKBROWSER_BINARY_PATH=STAND_IN,
        CLOAKBROWSER_CACHE_DIR=str(home / "no-cloak-cache"),
        BAY_INTEGRATION_CLOAK_LICENSE_KEY="cb_standin_licence_0123456789",
        DBUS_SESSION_BUS_ADDRESS=f"unix:path={home}/no-bus",
    )
    try:
        b.ok("new", "cloaked", "--provider", "cloak")
        mine, other = two_sessions(b, "cloaked", demo, "cloak")
        check_endpoint(b, puppeteer, demo, mine, other)
    finally:
        b.stop()
