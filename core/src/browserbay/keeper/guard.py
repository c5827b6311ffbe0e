"""The domain fence and the scheme rule, enforced in the browser on every hop.

One CDP ``Fetch`` interception at the Request stage on the *browser* target: every request of
every target of that browser — each tab, popup, frame (in or out of process), worker — pauses
in the keeper before it is sent, and every redirect hop pauses again as a new request. A
Playwright route sees only the first URL of a redirect chain (measured); this sees them all.

A browser gets a guard only when it needs one, and never pays for what Chromium already does:

- a fence (allowed domains): every request is paused and checked. A fence is a property of the
  browser process: ephemeral contexts share a browser only with contexts of the same fence, a
  persistent profile's browser is its own;
- a browser with a DevTools HTTP endpoint (a ``cdp_url`` on a loopback host: somebody else's
  Chrome): only requests to that port pause (a Fetch pattern), and those on loopback are
  refused. Without a port (Playwright's pipe) there is nothing to guard; ``file:``,
  ``chrome:`` and ``devtools:`` are refused by Chromium itself for every page-started hop
  (measured: links, ``target=_blank``, ``window.open``, ``location``, frames, forms, and a
  redirect there fails ``ERR_UNSAFE_REDIRECT``).

A refused hop fails ``BlockedByClient`` and is counted; a refused main-frame navigation is
remembered for its tab, so the verb that started it answers with the refusal by name.
"""

from __future__ import annotations

import contextlib
import logging
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from browserbay.model import BrowserHandle
from browserbay.refusals import Refusal

if TYPE_CHECKING:
    from playwright.async_api import Browser, CDPSession, Page, WebSocketRoute

log = logging.getLogger("browserbay.keeper")

#: Schemes whose requests never leave the browser (checked by Chromium, not by host).
LOCAL_OK = ("data", "blob", "about")
WEB = ("http", "https", "ws", "wss")
#: Refused navigations remembered (one per tab, the newest kept): a verb asks right after.
REMEMBERED = 512


class Blocked:
    """What a fence refused for one lease, or for one browser when no lease of it can be
    named. Counted only by the fence (this module); read by ``bay blocked`` and the hints."""

    def __init__(self) -> None:
        self._count = 0

    @property
    def count(self) -> int:
        return self._count

    def refused(self) -> None:
        self._count += 1


def websocket_fence(
    allowed: tuple[str, ...], blocked: Blocked
) -> Callable[[WebSocketRoute], Awaitable[None]]:
    """The fence's websocket half, for ``context.route_web_socket``: a websocket to a host
    outside ``allowed`` is closed and counted in ``blocked``."""

    async def on_websocket(ws: WebSocketRoute) -> None:
        host = urlsplit(ws.url).hostname or ""
        if host_allowed(host, allowed):
            ws.connect_to_server()
        else:
            blocked.refused()
            await ws.close(code=1008, reason="domain not allowed")

    return on_websocket


def host_allowed(host: str, allowed: tuple[str, ...]) -> bool:
    host = host.lower().rstrip(".")
    return any(host == d or host.endswith("." + d) for d in allowed)


def url_port(url: object) -> tuple[int, ...]:
    """The port a CDP URL names (``http://127.0.0.1:9222``, ``ws://…/devtools/browser/…``),
    or none."""
    if not isinstance(url, str):
        return ()
    with contextlib.suppress(ValueError):
        parts = urlsplit(url)
        if parts.hostname and parts.port:
            return (parts.port,)
    return ()


def devtools_ports(handle: BrowserHandle) -> tuple[int, ...]:
    """The port of the browser's own DevTools HTTP endpoint, when its handle names one
    (``cdp_url``, e.g. ``ws://127.0.0.1:9222/devtools/browser/…``). The port is refused on
    every host, as the scoped endpoint's :func:`browserbay_cdp.policy.check_url` does: a
    browser listening on all addresses answers on this machine's other addresses too, and a
    remote browser on its own host's."""
    return url_port(handle.cdp_url)


def hop_refusal(
    url: str, fence: tuple[str, ...], ports: tuple[int, ...]
) -> tuple[str, dict[str, Any]] | None:
    """Why one hop may not be loaded (a refusal code and its fields), or None."""
    try:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        host = (parts.hostname or "").lower().rstrip(".")
        port = parts.port or (443 if scheme in ("https", "wss") else 80)
    except ValueError:
        return "local_scheme_refused", {"scheme": "(unparsable)", "url": url[:200]}
    if scheme in LOCAL_OK:
        return None
    if scheme not in WEB:
        return "local_scheme_refused", {"scheme": scheme, "url": url[:200]}
    if port in ports:
        return "devtools_refused", {"endpoint": f"{host}:{port}"}
    if fence and not host_allowed(host, fence):
        return "domain_refused", {"host": host or url[:200], "allowed": ", ".join(fence)}
    return None


class Guard:
    """The interception on one browser. ``counter``: where a refused hop is counted when no
    lease of the browser can be named (a persistent profile's browser counts all of them)."""

    def __init__(self, fence: tuple[str, ...], ports: tuple[int, ...], counter: Blocked):
        self.fence = fence
        self.ports = ports
        self.counter = counter
        self.session: CDPSession | None = None
        # browserContextId -> the lease's count (held weakly: a lease that ended is gone)
        self._leases: weakref.WeakValueDictionary[str, Blocked] = weakref.WeakValueDictionary()
        self._targets: dict[str, str] = {}  # targetId -> browserContextId
        self._pages: weakref.WeakKeyDictionary[Page, str] = weakref.WeakKeyDictionary()
        self._refused: dict[str, tuple[float, str, dict[str, Any]]] = {}
        """Per main frame (its id is its tab's target id): the last refused navigation."""

    @property
    def patterns(self) -> list[dict[str, str]]:
        if self.fence:
            return [{"urlPattern": "*", "requestStage": "Request"}]
        return [{"urlPattern": f"*:{p}/*", "requestStage": "Request"} for p in self.ports]

    async def start(self, browser: Browser) -> None:
        session = await browser.new_browser_cdp_session()
        session.on("Fetch.requestPaused", self._paused)
        if self.fence:  # which lease a refused hop belongs to, for its count
            session.on("Target.targetCreated", self._target)
            session.on("Target.targetInfoChanged", self._target)
            session.on("Target.targetDestroyed", self._gone)
            await session.send("Target.setDiscoverTargets", {"discover": True})
        await session.send("Fetch.enable", {"patterns": self.patterns})
        self.session = session

    async def set_ports(self, ports: tuple[int, ...]) -> None:
        """Guard these DevTools ports from now on (``Fetch.enable`` again: its patterns are
        replaced, requests in flight are not touched)."""
        if ports == self.ports:
            return
        self.ports = ports
        if self.session is not None:
            await self.session.send("Fetch.enable", {"patterns": self.patterns})

    def _target(self, event: dict[str, Any]) -> None:
        info = event.get("targetInfo") or {}
        if info.get("targetId") and info.get("browserContextId"):
            self._targets[info["targetId"]] = info["browserContextId"]

    def _gone(self, event: dict[str, Any]) -> None:
        self._targets.pop(event.get("targetId", ""), None)
        self._refused.pop(event.get("targetId", ""), None)

    async def _paused(self, event: dict[str, Any]) -> None:
        session = self.session
        if session is None:  # pragma: no cover - events come only once it is set
            return
        request_id = event["requestId"]
        refused = hop_refusal(str(event["request"]["url"]), self.fence, self.ports)
        if refused is not None:
            frame = str(event.get("frameId") or "")
            self._leases.get(self._targets.get(frame, ""), self.counter).refused()
            if event.get("resourceType") == "Document":
                self._refused.pop(frame, None)
                self._refused[frame] = (time.monotonic(), *refused)
                while len(self._refused) > REMEMBERED:
                    self._refused.pop(next(iter(self._refused)))
        try:
            if refused is None:
                await session.send("Fetch.continueRequest", {"requestId": request_id})
            else:
                await session.send(
                    "Fetch.failRequest", {"requestId": request_id, "errorReason": "BlockedByClient"}
                )
        except Exception as exc:  # its target went away meanwhile: nothing to let through
            log.debug("guard: request %s: %s", request_id, exc)

    async def target_of(self, page: Page, lease: Blocked | None = None) -> str | None:
        """The page's target id (asked once per page); ``lease``: a lease's count, where its
        context's hops count from now on."""
        known = self._pages.get(page)
        if known is not None and lease is None:
            return known
        try:
            session = await page.context.new_cdp_session(page)
            try:
                info = (await session.send("Target.getTargetInfo"))["targetInfo"]
            finally:
                with contextlib.suppress(Exception):
                    await session.detach()
        except Exception:
            return None
        target, context = str(info["targetId"]), str(info.get("browserContextId") or "")
        self._pages[page] = target
        if context:
            self._targets[target] = context
            if lease is not None:
                self._leases[context] = lease
        return target

    async def check(self, page: Page, since: float) -> None:
        """Raise the refusal of the page's main-frame navigation refused since ``since``."""
        target = await self.target_of(page)
        seen = self._refused.get(target or "")
        if seen is not None and seen[0] >= since:
            raise Refusal(seen[1], **seen[2])

    async def stop(self) -> None:
        session, self.session = self.session, None
        if session is not None:
            with contextlib.suppress(Exception):
                await session.detach()
