"""The owner's dashboard: one page on the live view's server (``/d/<view>/``, a ticket from
``bay live --all``, which only the owner's channel may ask for) showing every lease the
keeper holds — its session and profile, who holds the input and who watches, the pause,
memory, pending approvals and dialogs, and each tab with a live thumbnail — from which the
owner opens any session's live view, takes it over (a live view whose page takes the
controls as it opens: a takeover like any, bounded by ``BAY_HANDBACK_IDLE``) or stops it
(its lease ends, as ``bay close --profile`` does).

What it shows comes from the keeper's one status function (``LiveHost.statuses``, plus
``dialogs_of`` and ``approvals_of``): what the keeper learns to say, the dashboard shows.

Bounded: thumbnails are made only while a dashboard is open, one tab at a time, at most
:data:`MAX_THUMBS` tabs a round and one round every :data:`THUMB_INTERVAL` s (so a tab's
thumbnail changes at most that often), each a JPEG at most :data:`THUMB_WIDTH` px wide (a
CDP screenshot scaled by Chromium) and at most :data:`THUMB_BYTES`; a tab with a dialog open
gets none (its page runs no script until the dialog is answered).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from browserbay.refusals import Refusal, clip
from browserbay_liveview_web.tickets import DASHBOARD, Mode, Vault

if TYPE_CHECKING:
    from websockets.asyncio.server import ServerConnection

    from browserbay.model import LiveHost, LiveLease
    from browserbay_liveview_web.tickets import Credential

log = logging.getLogger("browserbay.liveview")

#: Seconds between two rounds of state and thumbnails.
THUMB_INTERVAL = 1.5
#: Tabs thumbnailed per round (the rest show their title and address only).
MAX_THUMBS = 24
#: A thumbnail's width at most (CSS px of the page, scaled down by Chromium).
THUMB_WIDTH = 320
#: A thumbnail's size at most (a larger one is not sent).
THUMB_BYTES = 96 * 1024
#: Seconds one capture (or one send to a dashboard) may take.
STEP_TIMEOUT = 2.0


class Server(Protocol):
    """What the dashboard needs of the live view's server (its ``WebTransport``)."""

    host: LiveHost
    vault: Vault

    async def link(
        self, session_id: str, profile_id: str, mode: Mode, take_over: bool = False
    ) -> str: ...

    def spawn_drop(self, ws: ServerConnection, why: str) -> None: ...


@dataclass(eq=False)
class Watcher:
    """One open dashboard page."""

    ws: ServerConnection
    credential: Credential
    last: str = ""
    """The last overview sent (an unchanged one is not sent again)."""
    thumbs: dict[str, int] = field(default_factory=dict)
    """Thumbnail key -> the digest last sent to this page."""


class Dashboard:
    def __init__(self, transport: Server):
        self.transport = transport
        self.watchers: set[Watcher] = set()
        self._task: asyncio.Task[Any] | None = None
        self._wake = asyncio.Event()

    @property
    def host(self) -> LiveHost:
        return self.transport.host

    # -- a page ---------------------------------------------------------------------

    async def serve(self, ws: ServerConnection, credential: Credential) -> None:
        watcher = Watcher(ws, credential)
        self.watchers.add(watcher)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._rounds())
        self._wake.set()
        try:
            async for message in ws:
                if isinstance(message, str):
                    await self._message(watcher, message)
        except Exception:  # a closed or broken socket ends the page, nothing else
            log.debug("a dashboard's socket broke")
        finally:
            self.watchers.discard(watcher)

    async def _message(self, watcher: Watcher, message: str) -> None:
        try:
            event = json.loads(message)
        except ValueError:
            return
        if not isinstance(event, dict):
            return
        kind, sid, pid = event.get("t"), event.get("session"), event.get("profile")
        if kind not in ("open", "takeover", "stop") or not isinstance(sid, str):
            return
        if not isinstance(pid, str) or self.host.lease(sid, pid) is None:
            await _send(watcher, {"t": "error", "text": "that session holds no such lease now"})
            return
        try:
            if kind == "stop":
                stopped = await self.host.stop_lease(sid, pid)
                text = "stopped" if stopped else "it held no browser"
                await _send(watcher, {"t": "done", "session": sid, "profile": pid, "text": text})
            else:
                url = await self.transport.link(sid, pid, "control", kind == "takeover")
                await _send(
                    watcher, {"t": "link", "session": sid, "profile": pid, "url": url, "kind": kind}
                )
        except Refusal as refusal:
            await _send(watcher, {"t": "error", "text": refusal.message})
        self._wake.set()

    # -- the rounds -------------------------------------------------------------------

    async def _rounds(self) -> None:
        while self.watchers:
            try:
                await self._round()
            except Exception:
                log.exception("dashboard refresh failed")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(THUMB_INTERVAL):
                    await self._wake.wait()
            self._wake.clear()

    async def _round(self) -> None:
        self._drop_expired()
        rows: list[dict[str, Any]] = []
        shots: list[tuple[str, Any]] = []
        for status in self.host.statuses():
            lease = self.host.lease(status.session, status.profile)
            if lease is None:
                continue
            row = status.as_row()
            dialogs = self.host.dialogs_of(status.session, status.profile)
            tabs = []
            for tab_id, page in _pages(lease).items():
                key = f"{status.session}|{status.profile}|{tab_id}"
                dialog = dialogs.get(tab_id)
                title = ""
                if dialog is None:
                    with contextlib.suppress(Exception):
                        async with asyncio.timeout(1.0):
                            title = await page.title()
                    if len(shots) < MAX_THUMBS:
                        shots.append((key, page))
                tabs.append(
                    {
                        "id": tab_id,
                        "key": key,
                        "url": clip(page.url, 300),
                        "title": clip(title, 200),
                        "agent": tab_id == lease.current,
                        "dialog": None
                        if dialog is None
                        else {"type": dialog.kind, "message": clip(dialog.message, 300)},
                    }
                )
            row["tabs"] = tabs
            row["running"] = bool(tabs)
            row["approvals"] = [
                {"id": a.id, "verb": a.verb, "what": clip(a.what, 300), "url": clip(a.url, 300)}
                for a in self.host.approvals_of(status.session, status.profile)
            ]
            rows.append(row)
        overview = json.dumps({"t": "overview", "leases": rows}, separators=(",", ":"))
        for watcher in list(self.watchers):
            if overview != watcher.last:
                watcher.last = overview
                await _send_text(watcher, overview)
        for key, page in shots:
            jpeg = await _thumbnail(page)
            if jpeg is None:
                continue
            digest = hash(jpeg)
            data = {"t": "thumb", "key": key, "jpeg": base64.b64encode(jpeg).decode("ascii")}
            text = json.dumps(data, separators=(",", ":"))
            for watcher in list(self.watchers):
                if watcher.thumbs.get(key) != digest:
                    watcher.thumbs[key] = digest
                    await _send_text(watcher, text)

    def _drop_expired(self) -> None:
        """A page whose credential expired or was revoked is cut off."""
        for watcher in list(self.watchers):
            view = watcher.credential.grant.view
            if self.transport.vault.check(watcher.credential.token, view) is None:
                self.watchers.discard(watcher)
                why = self.transport.vault.revoked(watcher.credential.token, view) or "expired"
                self.transport.spawn_drop(watcher.ws, why)

    def revoke(self, why: str) -> int:
        """Every dashboard credential and ticket, gone; open pages cut off now."""
        count = self.transport.vault.revoke(DASHBOARD, DASHBOARD, why)
        for watcher in list(self.watchers):
            self.watchers.discard(watcher)
            self.transport.spawn_drop(watcher.ws, why)
        return count


def _pages(lease: LiveLease) -> dict[str, Any]:
    if lease.window is not None:
        return {}
    return lease.pages()


async def _thumbnail(page: Any) -> bytes | None:
    """The tab's viewport as a small JPEG, scaled by Chromium (None: it could not be had)."""
    try:
        async with asyncio.timeout(STEP_TIMEOUT):
            cdp = await page.context.new_cdp_session(page)
            try:
                metrics = await cdp.send("Page.getLayoutMetrics")
                view = metrics["cssVisualViewport"]
                width, height = float(view["clientWidth"]), float(view["clientHeight"])
                shot = await cdp.send(
                    "Page.captureScreenshot",
                    {
                        "format": "jpeg",
                        "quality": 50,
                        "clip": {
                            "x": float(view["pageX"]),
                            "y": float(view["pageY"]),
                            "width": width,
                            "height": height,
                            "scale": min(1.0, THUMB_WIDTH / max(1.0, width)),
                        },
                    },
                )
            finally:
                with contextlib.suppress(Exception):
                    await cdp.detach()
    except Exception:
        return None
    jpeg = base64.b64decode(shot["data"])
    return jpeg if len(jpeg) <= THUMB_BYTES else None


async def _send(watcher: Watcher, message: dict[str, Any]) -> None:
    await _send_text(watcher, json.dumps(message, separators=(",", ":")))


async def _send_text(watcher: Watcher, text: str) -> None:
    """Bounded: a page that does not read misses this message, never holds the round."""
    with contextlib.suppress(Exception):
        async with asyncio.timeout(STEP_TIMEOUT):
            await watcher.ws.send(text)
