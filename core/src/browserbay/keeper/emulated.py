"""A lease's emulation (``bay set …``): what it asked for and the DevTools sessions that hold
it on each of its tabs. Changed by the ``set`` verb (browserbay.keeper.emulation), applied to
every tab of the lease, tabs opened later included, and released by ``Leases.end`` (so
``close`` undoes it).

Every setting is a DevTools override on the tab's own page target (``Emulation.*``,
``Network.*``), held by a DevTools session this object keeps open per page: Chromium drops a
session's overrides when it detaches, so releasing is detaching. Being per page target, a
setting is the lease's own even on a persistent profile whose browser context other sessions
share — except the geolocation permission, which Chromium grants per browser context and
origin: a lease grants it only for its own tabs' origins, and takes back at ``close`` only what
no other lease of that context still holds (:class:`GeoGrants`).
"""

from __future__ import annotations

import contextlib
import weakref
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, CDPSession, Page


@dataclass(frozen=True)
class Metrics:
    """A viewport (CSS pixels) and, for a device, its scale, mobile and touch flags."""

    width: int
    height: int
    scale: float = 0.0  # 0: the browser's own
    mobile: bool = False
    touch: bool = False


@dataclass(frozen=True)
class Device:
    """One of Playwright's device descriptors (``playwright.devices``)."""

    name: str
    metrics: Metrics
    user_agent: str

    @classmethod
    def from_playwright(cls, name: str, d: dict[str, Any]) -> Device:
        viewport = d.get("viewport") or {}
        return cls(
            name,
            Metrics(
                int(viewport.get("width", 0)),
                int(viewport.get("height", 0)),
                float(d.get("device_scale_factor") or 0.0),
                bool(d.get("is_mobile")),
                bool(d.get("has_touch")),
            ),
            str(d.get("user_agent") or ""),
        )


@dataclass(frozen=True)
class Emulation:
    """What a lease asked for; None: the browser's own (never set)."""

    metrics: Metrics | None = None
    device: str | None = None
    user_agent: str | None = None
    geo: tuple[float, float] | None = None
    offline: bool | None = None
    color_scheme: str | None = None
    reduced_motion: bool | None = None
    timezone: str | None = None
    locale: str | None = None
    headers: dict[str, str] | None = field(default=None, hash=False)

    def with_(self, **changes: Any) -> Emulation:
        return replace(self, **changes)

    def shown(self) -> dict[str, Any]:
        """The settings for an answer: header names only, never their values."""
        m, geo = self.metrics, self.geo
        return {
            "viewport": None if m is None else {"width": m.width, "height": m.height},
            "device": self.device,
            "geo": None if geo is None else {"latitude": geo[0], "longitude": geo[1]},
            "offline": self.offline,
            "color_scheme": self.color_scheme,
            "reduced_motion": self.reduced_motion,
            "timezone": self.timezone,
            "locale": self.locale,
            "headers": None if self.headers is None else sorted(self.headers),
        }


def commands(e: Emulation, default_ua: str) -> list[tuple[str, dict[str, Any]]]:
    """The DevTools commands that put ``e`` on a page (in order). ``default_ua``: the
    browser's own user agent (a locale without a device's user agent still needs one)."""
    out: list[tuple[str, dict[str, Any]]] = []
    if e.metrics is not None:
        m = e.metrics
        out.append(
            (
                "Emulation.setDeviceMetricsOverride",
                {
                    "width": m.width,
                    "height": m.height,
                    "deviceScaleFactor": m.scale,
                    "mobile": m.mobile,
                    "screenWidth": m.width,
                    "screenHeight": m.height,
                },
            )
        )
        if m.touch:
            out.append(("Emulation.setTouchEmulationEnabled", {"enabled": True}))
    if e.user_agent is not None or e.locale is not None:
        ua: dict[str, Any] = {"userAgent": e.user_agent or default_ua}
        if e.locale is not None:
            ua["acceptLanguage"] = e.locale  # navigator.language and Accept-Language
        out.append(("Emulation.setUserAgentOverride", ua))
    if e.locale is not None:
        out.append(("Emulation.setLocaleOverride", {"locale": e.locale}))  # Intl
    if e.timezone is not None:
        out.append(("Emulation.setTimezoneOverride", {"timezoneId": e.timezone}))
    if e.geo is not None:
        out.append(
            (
                "Emulation.setGeolocationOverride",
                {"latitude": e.geo[0], "longitude": e.geo[1], "accuracy": 1},
            )
        )
    features = []
    if e.color_scheme is not None:
        features.append({"name": "prefers-color-scheme", "value": e.color_scheme})
    if e.reduced_motion is not None:
        value = "reduce" if e.reduced_motion else "no-preference"
        features.append({"name": "prefers-reduced-motion", "value": value})
    if features:
        out.append(("Emulation.setEmulatedMedia", {"features": features}))
    if e.offline is not None or e.headers is not None:
        out.append(("Network.enable", {}))
    if e.offline is not None:
        out.append(
            (
                "Network.emulateNetworkConditions",
                {
                    "offline": e.offline,
                    "latency": 0,
                    "downloadThroughput": -1,
                    "uploadThroughput": -1,
                },
            )
        )
    if e.headers is not None:
        out.append(("Network.setExtraHTTPHeaders", {"headers": e.headers}))
    return out


def origin_of(url: str) -> str | None:
    """``scheme://host[:port]`` of an ``http(s)`` page; None for any other (``about:blank``
    has no origin a permission could be granted to)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


class GeoGrants:
    """Which leases hold the geolocation permission for which origins of one browser context.

    Chromium keeps a DevTools-granted permission per browser context and origin, and
    Playwright can grant per origin but only clear them all: so a lease's grant is booked
    here, and when a lease lets go of an origin nobody else holds, the context's grants are
    cleared and the others' granted again (:meth:`release`)."""

    def __init__(self, context: BrowserContext) -> None:
        self._context = context
        self._holders: dict[str, set[int]] = {}

    async def hold(self, lease: int, origin: str) -> None:
        holders = self._holders.get(origin)
        if holders is None:
            await self._context.grant_permissions(["geolocation"], origin=origin)
            holders = self._holders[origin] = set()
        holders.add(lease)

    async def release(self, lease: int) -> None:
        dropped = False
        for origin, holders in list(self._holders.items()):
            holders.discard(lease)
            if not holders:
                del self._holders[origin]
                dropped = True
        if not dropped:
            return
        await self._context.clear_permissions()
        for origin in self._holders:
            await self._context.grant_permissions(["geolocation"], origin=origin)


_GRANTS: weakref.WeakKeyDictionary[BrowserContext, GeoGrants] = weakref.WeakKeyDictionary()


def geo_grants(context: BrowserContext) -> GeoGrants:
    """The context's :class:`GeoGrants` (made on first use, gone with the context)."""
    grants = _GRANTS.get(context)
    if grants is None:
        grants = _GRANTS[context] = GeoGrants(context)
    return grants


class LeaseEmulation:
    """A lease's :class:`Emulation` and the DevTools session holding it on each page."""

    def __init__(self) -> None:
        self.settings = Emulation()
        self._sessions: dict[int, tuple[Page, CDPSession]] = {}
        self._applied: dict[int, Emulation] = {}
        self._granted: GeoGrants | None = None

    @property
    def active(self) -> bool:
        return self.settings != Emulation()

    async def apply(self, page: Page) -> None:
        """Put the lease's settings on ``page`` (nothing when they are on it already, or
        when nothing was set). A DevTools error is raised: the caller's setting is wrong.
        With a position set, the page's origin gets the geolocation permission (a tab of the
        lease that went to another origin since)."""
        if self.settings.geo is not None:
            await self._grant(page)
        if not self.active or self._applied.get(id(page)) == self.settings:
            return
        held = self._sessions.get(id(page))
        if held is None:
            cdp = await page.context.new_cdp_session(page)
            self._sessions[id(page)] = (page, cdp)
            page.once("close", lambda _p: self._forget(id(page)))
        else:
            cdp = held[1]
        version = await cdp.send("Browser.getVersion")
        for method, params in commands(self.settings, str(version.get("userAgent", ""))):
            await cdp.send(method, params)
        self._applied[id(page)] = self.settings

    async def change(self, new: Emulation, pages: list[Page]) -> None:
        """Make ``new`` the lease's settings and put them on ``pages``; when a page refuses
        them (a bad timezone, …) the settings before stay, on every page."""
        old = self.settings
        self.settings = new
        try:
            for page in pages:
                await self.apply(page)
        except BaseException:
            self.settings = old
            await self._reset(pages)
            raise

    async def _reset(self, pages: list[Page]) -> None:
        """Detach every page's session (Chromium drops its overrides), then re-apply."""
        for _page, cdp in list(self._sessions.values()):
            with contextlib.suppress(Exception):
                await cdp.detach()
        self._sessions.clear()
        self._applied.clear()
        for page in pages:
            with contextlib.suppress(Exception):
                await self.apply(page)

    async def hold_on_context(self, context: BrowserContext) -> None:
        """Put on ``context`` too what Playwright holds on a live context for each new page
        before the page starts — the extra headers and offline — so a popup's first request
        (made before the keeper sees its page, whose DevTools overrides come only after its
        first load) has them. Only for a context that is the lease's own (an ephemeral one):
        a persistent profile's is shared with other sessions."""
        await context.set_extra_http_headers(self.settings.headers or {})
        await context.set_offline(bool(self.settings.offline))

    async def grant_geolocation(self, pages: list[Page]) -> None:
        """The geolocation permission for the origins of ``pages`` (the lease's tabs): not
        for the context's other origins, which other sessions of a shared profile may show."""
        for page in pages:
            await self._grant(page)

    async def _grant(self, page: Page) -> None:
        origin = origin_of(page.url)
        if origin is None:
            return
        self._granted = geo_grants(page.context)
        await self._granted.hold(id(self), origin)

    async def ungrant(self) -> None:
        """Let go of the lease's geolocation grants (those no other lease holds are taken
        back)."""
        if self._granted is not None:
            with contextlib.suppress(Exception):  # a context that closed took them along
                await self._granted.release(id(self))
        self._granted = None

    def _forget(self, key: int) -> None:
        self._sessions.pop(key, None)
        self._applied.pop(key, None)

    async def release(self) -> None:
        """The lease ended: every override is dropped (its sessions detached) and forgotten.
        A geolocation permission granted on an ephemeral context goes with the context; on a
        persistent profile's the lease's origins are taken back, unless another session of
        that context still holds them (:class:`GeoGrants`)."""
        for _page, cdp in list(self._sessions.values()):
            with contextlib.suppress(Exception):
                await cdp.detach()
        await self.ungrant()
        self._sessions.clear()
        self._applied.clear()
        self.settings = Emulation()
