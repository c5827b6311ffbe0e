"""The phone provider against browserbay's conformance suite (``browserbay.testing``), and
what makes it a phone: the pages its contexts open report the device's user agent, viewport,
scale and touch — in a session's context and in a persistent profile's. Real Chromium."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import anyio
import pytest

from browserbay.model import LaunchSpec
from browserbay.refusals import Refusal
from browserbay.testing import ConformanceError, check_provider, check_row
from browserbay_phone import find, plugin
from browserbay_phone.driver import PhoneDriver

PHONE_JS = (
    "({ua: navigator.userAgent, w: screen.width, h: screen.height, dpr: devicePixelRatio,"
    " touch: navigator.maxTouchPoints, mobile: matchMedia('(pointer: coarse)').matches})"
)

pytestmark = pytest.mark.skipif(find.chromium() is None, reason=find.INSTALL)


def _row() -> Any:
    return plugin.bay_providers()[0]


def test_the_row_is_well_formed() -> None:
    row = _row()
    check_row(row)
    assert row.id == "phone"
    assert row.tier == 1
    assert plugin.probe() is None


def test_conformance(tmp_path: Path, demo_url: str) -> None:
    check_provider(_row(), tmp_path, demo_url)


async def _seen(spec: LaunchSpec, url: str, persistent: bool) -> tuple[dict[str, Any], Any]:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        handle = await PhoneDriver().launch(pw, spec)
        try:
            if persistent:
                page = await handle.persistent_context.new_page()
            else:
                context = await handle.browser.new_context(**handle.context_options)
                page = await context.new_page()
            await page.goto(url)
            return await page.evaluate(PHONE_JS), handle.context_options
        finally:
            await handle.close(10)


@pytest.mark.parametrize("persistent", [False, True], ids=["session-context", "profile"])
def test_pages_see_a_phone(tmp_path: Path, demo_url: str, persistent: bool) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    spec = LaunchSpec(
        browser_id="bb-0ph0ne00",
        home=home,
        user_data_dir=tmp_path / "profile" if persistent else None,
    )
    seen, wanted = anyio.run(_seen, spec, demo_url, persistent)
    assert "Android" in wanted["user_agent"]  # Pixel 7 by default
    assert seen["ua"] == wanted["user_agent"]
    assert (seen["w"], seen["h"]) == (wanted["screen"]["width"], wanted["screen"]["height"])
    assert seen["w"] < 500  # a phone's screen, not the 1280-wide desktop default
    assert seen["mobile"]  # a coarse pointer: touch, as on a phone
    assert seen["dpr"] == wanted["device_scale_factor"]
    assert seen["touch"] > 0


def test_an_unknown_device_is_refused_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BAY_PHONE_DEVICE", "Nokia 3310")
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    with pytest.raises(Refusal) as caught:
        anyio.run(_seen, LaunchSpec(browser_id="bb-0ph0ne01", home=home), "about:blank", False)
    assert caught.value.code == "backend_unavailable"
    assert "BAY_PHONE_DEVICE" in caught.value.way_out
    assert "Pixel 7" in caught.value.way_out


def test_a_missing_chromium_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BAY_PHONE_CHROMIUM", str(tmp_path / "no-chromium"))
    assert plugin.probe() is not None
    rows = plugin.bay_doctor_checks()
    assert [(r.status, r.fix) for r in rows] == [("fail", find.INSTALL)]
    monkeypatch.delenv("BAY_PHONE_CHROMIUM")
    assert [r.status for r in plugin.bay_doctor_checks()] == ["ok"]


def test_the_suite_fails_a_provider_whose_options_do_not_take(
    tmp_path: Path, demo_url: str
) -> None:
    """Negative control: a driver that announces phone options but whose handle hands the
    suite a browser that ignores them (a wrapper dropping new_context's keywords)."""

    class Deaf:
        def __init__(self, browser: Any) -> None:
            self._browser = browser

        def __getattr__(self, name: str) -> Any:
            return getattr(self._browser, name)

        async def new_context(self, **_ignored: Any) -> Any:
            return await self._browser.new_context()

    class DeafDriver(PhoneDriver):
        async def launch(self, playwright: Any, spec: LaunchSpec) -> Any:
            handle = await super().launch(playwright, spec)
            handle.browser = Deaf(handle.browser)
            return handle

    deaf = dataclasses.replace(_row(), driver_factory=DeafDriver)
    with pytest.raises(ConformanceError, match="context_options did not take"):
        check_provider(deaf, tmp_path, demo_url)
