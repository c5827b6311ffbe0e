"""``bay cdp-url`` on a cloud:<vendor> profile (a FAKE vendor: a real local Chromium behind
its session): Puppeteer, Playwright's ``connect_over_cdp`` and a raw client drive their own
tabs through the session-scoped endpoint, whose upstream is the vendor's CDP URL (never shown
to the client), and see nothing of a second session's tab on the same vendor browser."""

from __future__ import annotations

import pytest

from browserbay_cloud.vendors import VENDORS
from browserbay_testing import Bay
from browserbay_testing.cdpclients import check_endpoint, puppeteer_dir
from providers.cloud.tests.test_cloud_e2e import KEY, bay, fakes, place  # noqa: F401

pytestmark = pytest.mark.browser


def test_puppeteer_and_playwright_drive_their_own_tabs_on_a_cloud_profile(
    bay: Bay,  # noqa: F811
    demo: str,
) -> None:
    puppeteer = puppeteer_dir()
    vendor = VENDORS[0]
    profile = bay.ok("new", "c-endpoint", "--provider", vendor.id)["id"]
    mine, other = "cloud-a", "cloud-b"
    for s, path in ((mine, "/"), (other, "/form.html")):
        bay.ok("use", profile, session=s)
        bay.ok("open", demo + path, session=s)
    try:
        got = bay.ok("cdp-url", session=mine)
        assert KEY not in str(got)
        assert got["url"].startswith("ws://127.0.0.1:")
        check_endpoint(bay, puppeteer, demo, mine, other)
    finally:
        bay.ok("close", session=mine)
        bay.ok("close", session=other)
