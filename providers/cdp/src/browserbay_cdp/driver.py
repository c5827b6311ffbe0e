"""Connect to somebody else's browser over CDP. We never start it, never own its directory,
and never close it or a tab we did not open: closing the handle disconnects."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio

from browserbay.model import LaunchSpec
from browserbay.refusals import Refusal
from browserbay_cdp.endpoint import START_HINT, resolve

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Playwright

CONNECT_TIMEOUT_MS = 15_000


class CdpHandle:
    """A connection to a browser that is not ours. ``pid`` is None: it is not our process."""

    def __init__(self, browser_id: str, browser: Browser, cdp_url: str):
        self.browser_id = browser_id
        self.browser: Browser | None = browser
        self.persistent_context: BrowserContext | None = browser.contexts[0]
        """The browser's default context: sessions share it (its logins) and own tabs in it."""
        self.pid: int | None = None
        self.cdp_url: str | None = cdp_url
        """The browser's own WebSocket URL (the session-scoped endpoint's upstream)."""
        self.live_view_url: str | None = None
        self.context_options: Mapping[str, Any] | None = None

    async def close(self, timeout: float) -> None:
        """Disconnect. The browser and every tab we did not open stay as they are (the
        keeper closed the tabs of its leases before this)."""
        with anyio.move_on_after(timeout):
            if self.browser is not None:
                await self.browser.close()


class CdpDriver:
    async def launch(self, playwright: Playwright, spec: LaunchSpec) -> CdpHandle:
        ws = await anyio.to_thread.run_sync(resolve, spec.options)
        try:
            browser = await playwright.chromium.connect_over_cdp(ws, timeout=CONNECT_TIMEOUT_MS)
        except Exception as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
            raise Refusal(
                "backend_unavailable",
                provider="cdp",
                reason=f"connecting over CDP failed: {first}",
                fix=START_HINT,
            ) from None
        if not browser.contexts:  # pragma: no cover - a CDP browser always has its default
            await browser.close()
            raise Refusal(
                "backend_unavailable",
                provider="cdp",
                reason="the browser has no default context to share",
                fix=START_HINT,
            )
        return CdpHandle(spec.browser_id, browser, ws)
