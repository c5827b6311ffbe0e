"""The ``cloud:<vendor>`` driver: create a session through the vendor's API, connect to it over
CDP, and release it — at stop, when connecting fails after the create, and when the vendor's
browser goes away by itself. Release is best effort against the network, never skipped.

The key reaches this module in ``LaunchSpec.env`` (the keeper resolved it for this provider
only); it is used in memory for the vendor's requests, never put in a process environment,
an argv or a log line.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from browserbay.model import LaunchSpec
from browserbay.refusals import Refusal
from browserbay_cloud.sessions import Created, VendorApi
from browserbay_cloud.vendors import Vendor

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Playwright

log = logging.getLogger("browserbay.cloud")

CONNECT_TIMEOUT_MS = 30_000
#: Seconds a release may take at stop (the vendor bills until it is done).
RELEASE_TIMEOUT = 30.0


class Releaser:
    """Releases one vendor session exactly once, whoever asks first (stop, a failed connect,
    the vendor's browser disconnecting), shielded from cancellation."""

    def __init__(self, api: VendorApi, created: Created):
        self.api = api
        self.created = created
        self._done: asyncio.Future[None] | None = None

    async def release(self, why: str) -> None:
        if self._done is not None:
            await asyncio.shield(self._done)
            return
        self._done = asyncio.get_running_loop().create_future()
        try:
            with anyio.CancelScope(shield=True), anyio.move_on_after(RELEASE_TIMEOUT):
                try:
                    made = await self.api.release(self.created)
                    log.info(
                        "%s session %s released (%s)%s",
                        self.api.vendor.id,
                        self.created.session_id or "-",
                        why,
                        "" if made else ": its connection closed, which ends it",
                    )
                except Refusal as refusal:
                    log.warning(
                        "%s session %s: release failed (%s): %s",
                        self.api.vendor.id,
                        self.created.session_id,
                        why,
                        refusal.message,
                    )
        finally:
            self._done.set_result(None)


class CloudHandle:
    """A vendor's browser we reached over CDP. ``pid`` is None: it is not a process here."""

    def __init__(
        self,
        browser_id: str,
        browser: Browser,
        releaser: Releaser,
        live_view_url: str | None,
        persistent: bool,
    ):
        self.browser_id = browser_id
        self.browser: Browser | None = browser
        self.persistent_context: BrowserContext | None = browser.contexts[0] if persistent else None
        """A persistent profile's leases share the vendor browser's default context; an
        ephemeral browser has none (each session gets a context of its own in it, and the
        browser goes idle, and is released, when the last one closes)."""
        self.pid: int | None = None
        self.live_view_url = live_view_url
        """The vendor's own live viewer of this session (a ``provider-view`` target)."""
        self.cdp_url: str | None = None
        """None: the vendor's CDP URL may carry a credential; it is never served (no
        ``cdp_endpoint`` cell)."""
        self.context_options: Mapping[str, Any] | None = None
        self.releaser = releaser
        self._tasks: set[asyncio.Task[None]] = set()
        self._closing = False
        browser.on("disconnected", self._on_disconnected)

    def _on_disconnected(self, _browser: Any) -> None:
        if self._closing:
            return
        # The vendor's browser went away by itself (its timeout, a crash): release the
        # session anyway (a no-op when stop already did).
        task = asyncio.get_running_loop().create_task(self.releaser.release("disconnected"))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self, timeout: float) -> None:
        """Disconnect, then release the vendor's session."""
        self._closing = True
        with anyio.move_on_after(timeout):
            if self.browser is not None:
                try:
                    await self.browser.close()
                except Exception as exc:  # already gone: the release still happens
                    log.info("%s: disconnect: %s", self.browser_id, type(exc).__name__)
        await self.releaser.release("stop")


class CloudDriver:
    def __init__(self, vendor: Vendor):
        self.vendor = vendor

    async def launch(self, playwright: Playwright, spec: LaunchSpec) -> CloudHandle:
        fields = self.vendor.fields_from_env(spec.env)
        if not fields.get("api_key"):  # the keeper refuses first; never ask a vendor keyless
            raise Refusal(
                "backend_no_key",
                provider=self.vendor.id,
                integration=self.vendor.id,
                field="api_key",
                missing=["api_key"],
                source="none",
                reason="the driver was handed no key",
            )
        api = VendorApi(self.vendor, fields)
        # Shielded: a session the vendor creates is never left behind by a deadline that
        # cuts the create half-way (its id would be lost); the cut comes right after.
        with anyio.CancelScope(shield=True):
            created = await api.create()
        releaser = Releaser(api, created)
        try:
            await anyio.lowlevel.checkpoint()
        except BaseException:
            await releaser.release("cut after create")
            raise
        try:
            browser = await playwright.chromium.connect_over_cdp(
                created.cdp_url, timeout=CONNECT_TIMEOUT_MS
            )
        except BaseException as exc:
            await releaser.release("connect failed")
            if isinstance(exc, Exception):
                raise api.connect_failed(exc) from None
            raise
        if not browser.contexts:
            await browser.close()
            await releaser.release("no default context")
            raise Refusal(
                "backend_unavailable",
                provider=self.vendor.id,
                reason="the vendor's browser has no default context to use",
                fix=f"bay keys test {self.vendor.id}",
            )
        persistent = spec.user_data_dir is not None  # a profile (its dir is the vendor's)
        return CloudHandle(spec.browser_id, browser, releaser, created.view_url, persistent)
