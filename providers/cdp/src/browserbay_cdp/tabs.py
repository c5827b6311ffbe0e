"""Which page a ``tab`` target holds.

Since Chromium 117 every page lives in a target of type ``tab`` (its own ``targetId``, none of
its fields names the page). Puppeteer attaches to the tab (browser-level auto-attach with a
filter that keeps ``tab`` and drops ``page``), then auto-attaches inside it to reach the page.
The scoped endpoint judges a tab by its page: it is the lease's when its page is. The only way
Chromium tells which page a tab holds is to attach to the tab and auto-attach inside it, so
:class:`TabPages` does that once per tab, on a browser-level CDP session of the keeper's own
Playwright (never on a client's connection: its answers would wait behind the very event being
judged), and keeps the answer (a tab keeps its page for its life).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from playwright.async_api import Browser, CDPSession

log = logging.getLogger("browserbay.cdp")

#: How long a tab is given to answer (it names its page, if any, before it answers).
PROBE_WAIT = 2.0


class TabPages:
    """``tab`` targetId -> the ``page`` targetId inside it, learned by probing."""

    def __init__(self, browser: Browser | None):
        self._browser = browser
        self._session: CDPSession | None = None
        self._lock = asyncio.Lock()
        self._pages: dict[str, str | None] = {}
        """A tab's page, or None for an id that is a target but no tab."""
        self._waiting: dict[str, asyncio.Future[str | None]] = {}

    def known(self, target_id: str) -> str | None:
        """The page of a tab already probed (no call to the browser)."""
        return self._pages.get(target_id)

    async def page_of(self, target_id: str) -> str | None:
        """The page inside ``target_id`` when it is a tab; None when it is no tab (or no
        target now: not kept, it may be a tab being made)."""
        if target_id in self._pages:
            return self._pages[target_id]
        async with self._lock:
            if target_id in self._pages:
                return self._pages[target_id]
            try:
                return await self._probe(target_id)
            except Exception as exc:  # no such target (yet), a browser that closed
                log.debug("probing %s failed: %r", target_id, exc)
                return None

    async def _cdp(self) -> CDPSession | None:
        if self._session is None and self._browser is not None:
            self._session = await self._browser.new_browser_cdp_session()
            self._session.on("Target.receivedMessageFromTarget", self._message)
        return self._session

    async def _probe(self, target_id: str) -> str | None:
        cdp = await self._cdp()
        if cdp is None:
            return None
        info = (await cdp.send("Target.getTargetInfo", {"targetId": target_id}))["targetInfo"]
        if info.get("type") != "tab":
            self._pages[target_id] = None
            return None
        # A session of the old (wrapped) kind: Playwright routes its messages to this session
        # as Target.receivedMessageFromTarget; a flat one's would be dropped.
        attached = await cdp.send(
            "Target.attachToTarget", {"targetId": target_id, "flatten": False}
        )
        sid = str(attached["sessionId"])
        future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._waiting[sid] = future
        try:
            inner = {
                "id": 1,
                "method": "Target.setAutoAttach",
                "params": {"autoAttach": True, "waitForDebuggerOnStart": False, "flatten": True},
            }
            await cdp.send(
                "Target.sendMessageToTarget", {"sessionId": sid, "message": json.dumps(inner)}
            )
            page = await asyncio.wait_for(future, PROBE_WAIT)
            self._pages[target_id] = page
            return page
        except TimeoutError:
            log.info("tab %s named no page in %.1fs", target_id, PROBE_WAIT)
            return None
        finally:
            self._waiting.pop(sid, None)
            with contextlib.suppress(Exception):
                await cdp.send("Target.detachFromTarget", {"sessionId": sid})

    def _message(self, event: dict[str, Any]) -> None:
        future = self._waiting.get(str(event.get("sessionId")))
        if future is None or future.done():
            return
        with contextlib.suppress(ValueError, TypeError):
            msg = json.loads(str(event.get("message")))
            info = (msg.get("params") or {}).get("targetInfo") or {}
            if msg.get("method") == "Target.attachedToTarget" and info.get("type") == "page":
                future.set_result(str(info["targetId"]))
            elif msg.get("id") == 1:  # auto-attach announces the children before it answers
                future.set_result(None)

    async def close(self) -> None:
        if self._session is not None:
            with contextlib.suppress(Exception):
                await self._session.detach()
            self._session = None
