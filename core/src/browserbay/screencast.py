"""One CDP screencast of a tab, fanned out to any number of sinks: the live view's viewers
(``browserbay_liveview_web.stream.TabStream`` adds the human's input to it) and a recording
(``browserbay.keeper.recording``).

The upstream is ``Page.startScreencast`` (JPEG) on a CDP session of the tab's page. Every
frame replaces the stream's last frame and is offered to each sink, which keeps only the
newest (latest-wins: a slow sink drops frames, memory stays bounded). Chromium sends the
next frame only after an ack: acks go back at once (they are paced only when every sink
asks a low rate), at once too after a human's input so the answer to it shows without delay,
and guarded: an ack after the page closed is swallowed. Frames are never logged.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from playwright.async_api import CDPSession, Page

log = logging.getLogger("browserbay.screencast")

JPEG_QUALITY = 60
MAX_EDGE = 1280
DEFAULT_FPS = 30.0
#: Acks are paced to the fastest viewer's rate times this, and not at all from ``UNPACED``
#: up: Chromium starts a frame only when the ack reaches it and then waits for its next
#: vsync, so an ack held back to the asked rate misses vsyncs and delivers far less
#: (measured: 20 fps when 30 were asked). Each viewer's own pace (latest wins) drops what is
#: more than it asked for; pacing only saves Chromium's CPU when every viewer asks little.
ACK_HEADROOM = 2.0
#: At or above this many acks a second, every frame is acked at once (Chromium's own rate).
UNPACED = 50.0


class FrameSink(Protocol):
    fps: float

    def offer_frame(self, frame: bytes) -> None: ...


class Screencast:
    """The screencast of one tab (``tab_id``, its Playwright ``page``); ``on_gone`` is told
    once when the page closes under it."""

    def __init__(
        self,
        tab_id: str,
        page: Page,
        on_gone: Callable[[Screencast], None],
        max_edge: int = MAX_EDGE,
        quality: int = JPEG_QUALITY,
    ):
        self.tab_id = tab_id
        self.max_edge, self.quality = max_edge, quality
        self.page = page
        self.viewers: set[FrameSink] = set()
        self.last: bytes | None = None
        self.frames = 0
        self.viewport: tuple[float, float] | None = None
        self.closed = False
        self._on_gone = on_gone
        self._cdp: CDPSession | None = None
        self._loop = asyncio.get_running_loop()
        self._pending_ack: int | None = None
        self._ack_timer: asyncio.TimerHandle | None = None
        self._last_ack = 0.0
        self._tasks: set[asyncio.Task[Any]] = set()
        self._size: tuple[int, int] | None = None

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Attach to the page and start the screencast. Raises when the page is gone."""
        self.page.on("close", lambda _page: self._gone())
        cdp = await self.page.context.new_cdp_session(self.page)
        self._cdp = cdp
        cdp.on("Page.screencastFrame", self._on_frame)
        await cdp.send(
            "Page.startScreencast",
            {
                "format": "jpeg",
                "quality": self.quality,
                "maxWidth": self.max_edge,
                "maxHeight": self.max_edge,
            },
        )
        await self.read_viewport()

    async def stop(self) -> None:
        self.closed = True
        if self._ack_timer is not None:
            self._ack_timer.cancel()
        cdp, self._cdp = self._cdp, None
        if cdp is not None:
            with contextlib.suppress(Exception):
                await cdp.send("Page.stopScreencast")
            with contextlib.suppress(Exception):
                await cdp.detach()
        for task in list(self._tasks):
            task.cancel()

    def _gone(self) -> None:
        if not self.closed:
            self.closed = True
            self._on_gone(self)

    # -- frames -------------------------------------------------------------------------

    def _on_frame(self, params: dict[str, Any]) -> None:
        if self.closed:
            return
        try:
            frame = base64.b64decode(params["data"])
            session_id = int(params["sessionId"])
        except (KeyError, TypeError, ValueError):
            return
        # The ack first: Chromium starts on the next frame while this one is fanned out.
        self._pending_ack = session_id
        fps = max((v.fps for v in self.viewers), default=DEFAULT_FPS) * ACK_HEADROOM
        wait = self._last_ack + 1.0 / max(fps, 1.0) - self._loop.time()
        if wait <= 0 or fps >= UNPACED:
            self.flush_ack()
        elif self._ack_timer is None:
            self._ack_timer = self._loop.call_later(wait, self.flush_ack)
        self.last = frame
        self.frames += 1
        for viewer in list(self.viewers):
            viewer.offer_frame(frame)
        meta = params.get("metadata") or {}
        size = (int(meta.get("deviceWidth") or 0), int(meta.get("deviceHeight") or 0))
        if size != self._size:  # the page was resized: read its CSS viewport again
            self._size = size
            self._spawn(self.read_viewport())

    def flush_ack(self) -> None:
        """Ack the frame we hold now (Chromium then sends the next one)."""
        if self._ack_timer is not None:
            self._ack_timer.cancel()
            self._ack_timer = None
        session_id, self._pending_ack = self._pending_ack, None
        if session_id is None or self.closed:
            return
        self._last_ack = self._loop.time()
        self._spawn(self._ack(session_id))

    async def _ack(self, session_id: int) -> None:
        cdp = self._cdp
        if cdp is None:
            return
        try:
            await cdp.send("Page.screencastFrameAck", {"sessionId": session_id})
        except Exception:  # the page closed under us (TargetClosedError): nothing to ack
            return

    def _spawn(self, coro: Any) -> None:
        task = self._loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- the page -----------------------------------------------------------------------

    async def read_viewport(self) -> None:
        """The page's real CSS viewport (``innerWidth`` × ``innerHeight``: what the picture
        shows, scrollbars included), which pointer coordinates are mapped to."""
        cdp = self._cdp
        if cdp is None:
            return
        try:
            got = await cdp.send(
                "Runtime.evaluate",
                {"expression": "[innerWidth, innerHeight]", "returnByValue": True},
            )
            width, height = got["result"]["value"]
            if width > 0 and height > 0:
                self.viewport = (float(width), float(height))
        except Exception:
            return
