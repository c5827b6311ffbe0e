"""Test helpers that ship with the core: the provider conformance suite.

Every provider's own tests run :func:`check_provider` on its row, so a provider that
launches, isolates and closes differently from the contract fails in its own repository::

    from browserbay.testing import check_provider

    def test_conformance(tmp_path, demo_url):
        check_provider(my_plugin.bay_providers()[0], tmp_path, demo_url)
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio

from browserbay import procfs
from browserbay.model import BrowserHandle, Capabilities, LaunchSpec, ProviderRow, context_options


class ConformanceError(AssertionError):
    pass


def check_row(row: ProviderRow) -> None:
    if not row.id or row.id != row.id.strip() or " " in row.id:
        raise ConformanceError(f"provider id {row.id!r} must be a non-empty word")
    if row.tier not in (1, 2, 3):
        raise ConformanceError(f"{row.id}: tier {row.tier} is not 1, 2 or 3")
    if not isinstance(row.capabilities, Capabilities):
        raise ConformanceError(f"{row.id}: capabilities must be a browserbay.model.Capabilities")
    if row.driver_factory is None and not row.not_runnable:
        raise ConformanceError(f"{row.id}: a row without a driver must say why (not_runnable)")


async def _check_context_options(provider: str, page: Any, wanted: dict[str, Any]) -> None:
    """What a handle's ``context_options`` ask for is what the page sees."""
    seen = await page.evaluate(
        "({ua: navigator.userAgent, w: screen.width, h: screen.height, dpr: devicePixelRatio,"
        " touch: navigator.maxTouchPoints})"
    )
    problems = []
    if "user_agent" in wanted and seen["ua"] != wanted["user_agent"]:
        problems.append(f"user agent {seen['ua']!r}, asked {wanted['user_agent']!r}")
    # The screen, not innerWidth: a mobile page without a viewport meta tag lays out 980 wide.
    screen = wanted.get("screen") or wanted.get("viewport")
    if screen and (seen["w"], seen["h"]) != (screen["width"], screen["height"]):
        problems.append(f"screen {seen['w']}x{seen['h']}, asked {screen}")
    scale = wanted.get("device_scale_factor")
    if scale and abs(seen["dpr"] - scale) > 1e-6:
        problems.append(f"devicePixelRatio {seen['dpr']}, asked {scale}")
    if wanted.get("has_touch") and not seen["touch"]:
        problems.append("no touch points, asked has_touch")
    if problems:
        raise ConformanceError(f"{provider}: context_options did not take: {'; '.join(problems)}")


def check_provider(
    row: ProviderRow,
    tmp_path: Path,
    url: str,
    *,
    close_timeout: float = 10,
    options: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
) -> None:
    """Launch the provider's browser, check isolation between two contexts (where the row
    says it has them) made with the handle's ``context_options`` (and that those take: user
    agent, viewport, device scale, touch), navigate to ``url``, close it gracefully and check
    that no process is left. ``options`` are the profile's provider options (a ``cdp``
    profile's ``cdp_url``); ``env`` is what the keeper would resolve for a provider that needs
    a key (``LaunchSpec.env``: the vendor's variable names; a cloud row pointed at a fake).

    A provider whose browsers are not ours (``owns_dir`` false: somebody else's browser
    reached over CDP) names no process of ours and closing it only disconnects: the caller
    checks that the browser still runs. Raises :class:`ConformanceError` naming what broke."""
    check_row(row)
    if row.driver_factory is None:
        return
    anyio.run(
        _check_running, row, tmp_path, url, close_timeout, dict(options or {}), dict(env or {})
    )


async def _check_running(
    row: ProviderRow,
    tmp_path: Path,
    url: str,
    close_timeout: float,
    options: dict[str, str],
    env: dict[str, str],
) -> None:
    from playwright.async_api import async_playwright

    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    spec = LaunchSpec(browser_id="bb-c0nf0rm5", home=home, options=options, env=env)
    assert row.driver_factory is not None
    ours = row.capabilities.owns_dir
    async with async_playwright() as pw:
        handle: BrowserHandle = await row.driver_factory().launch(pw, spec)
        try:
            if ours and (handle.pid is None or not procfs.alive(handle.pid)):
                raise ConformanceError(f"{row.id}: the handle names no live browser process")
            if row.capabilities.cdp_endpoint and not (handle.cdp_url or "").startswith(
                ("ws://", "wss://")
            ):
                raise ConformanceError(f"{row.id}: cdp_endpoint needs handle.cdp_url (ws://)")
            wanted = context_options(handle)
            if handle.persistent_context is not None:
                page = await handle.persistent_context.new_page()
                await page.goto(url)
                await page.close()
            if row.capabilities.ephemeral_contexts:
                if handle.browser is None:
                    raise ConformanceError(f"{row.id}: ephemeral_contexts needs handle.browser")
                a = await handle.browser.new_context(**wanted)
                b = await handle.browser.new_context(**wanted)
                page_a, page_b = await a.new_page(), await b.new_page()
                await page_a.goto(url)
                await page_b.goto(url)
                await _check_context_options(row.id, page_a, wanted)
                await page_a.evaluate("document.cookie = 'conformance=a; path=/'")
                await page_a.evaluate("localStorage.setItem('conformance', 'a')")
                seen_b = await page_b.evaluate("[document.cookie, localStorage.length]")
                if seen_b != ["", 0]:
                    raise ConformanceError(f"{row.id}: context b sees context a's state {seen_b}")
                await a.close()
                await b.close()
        finally:
            started = time.monotonic()
            await handle.close(close_timeout)
            pid = handle.pid
        if pid is not None and ours:
            end = time.monotonic() + close_timeout
            while procfs.alive(pid) and time.monotonic() < end:  # noqa: ASYNC110 - a process, not a task
                await anyio.sleep(0.05)
            if procfs.alive(pid):
                raise ConformanceError(
                    f"{row.id}: browser pid {pid} still runs {time.monotonic() - started:.1f}s "
                    "after close()"
                )
