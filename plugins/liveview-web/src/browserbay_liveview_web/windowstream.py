"""One native window's frames, fanned out to any number of viewers (the ``window`` target of
the ``web`` transport).

The window (a :class:`browserbay.model.LiveWindow`, offered by the plugin that owns it) is
asked for a frame at a bounded rate — at most ``WINDOW_FPS`` a second, less when every viewer
asks less — and answers None while its pixels are unchanged, so an idle window costs one
grab and digest per poll and sends nothing. Grabs and JPEG encoding run off the keeper's
loop, in the window's own worker threads. After a human's input the window is looked at at
once and then at a quick pace for a short while, so the answer to the input shows without
waiting for the next tick. Frames fan out latest-wins, as a tab's do; input goes to the
window (XTEST). Frames and input are never logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from browserbay_liveview_web.stream import DEFAULT_FPS, FrameSink

if TYPE_CHECKING:
    from browserbay.model import LiveWindow

log = logging.getLogger("browserbay.liveview")

#: At most this many polls a second (a poll is an X grab of the window and a digest).
WINDOW_FPS = 15.0
#: After input: poll this often, for this long (the app's repaint shows at once).
HURRY_FPS = 60.0
HURRY_FOR = 0.3


class WindowStream:
    def __init__(self, window: LiveWindow, on_gone: Callable[[WindowStream], None]):
        self.window = window
        self.tab_id = window.handle
        """The stream's key in the transport (a window's handle; tab ids are ``tN``)."""
        self.viewers: set[FrameSink] = set()
        self.last: bytes | None = None
        self.frames = 0
        self.polls = 0
        self.viewport: tuple[float, float] | None = None
        self.closed = False
        self._on_gone = on_gone
        self._wake = asyncio.Event()
        self._hurry_until = 0.0
        self._task: asyncio.Task[Any] | None = None

    async def start(self) -> None:
        """A first frame now (raises LookupError when the window is gone), then polling."""
        frame = await self.window.frame(force=True)
        if frame is not None:
            self._publish(frame)
        self._task = asyncio.get_running_loop().create_task(self._poll())

    async def stop(self) -> None:
        self.closed = True
        task, self._task = self._task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    def _gone(self) -> None:
        if not self.closed:
            self.closed = True
            self._on_gone(self)

    def _publish(self, frame: bytes) -> None:
        self.last = frame
        self.frames += 1
        for viewer in list(self.viewers):
            viewer.offer_frame(frame)

    def interval(self, now: float) -> float:
        if now < self._hurry_until:
            return 1.0 / HURRY_FPS
        asked = max((v.fps for v in self.viewers), default=DEFAULT_FPS)
        return 1.0 / min(WINDOW_FPS, max(1.0, asked))

    async def _poll(self) -> None:
        loop = asyncio.get_running_loop()
        while not self.closed:
            started = loop.time()
            try:
                frame = await self.window.frame()
            except LookupError:
                self._gone()
                return
            except Exception:
                log.warning("a frame of window %s could not be read", self.tab_id)
                frame = None
            self.polls += 1
            if frame is not None and not self.closed:
                self._publish(frame)
            wait = self.interval(loop.time()) - (loop.time() - started)
            if wait > 0:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wait):
                        await self._wake.wait()
            self._wake.clear()

    def flush_ack(self) -> None:
        """A human's input went in: look at the window now, and quickly for a moment."""
        self._hurry_until = asyncio.get_running_loop().time() + HURRY_FOR
        self._wake.set()

    async def read_viewport(self) -> None:
        """Nothing to read: the picture is the window at its own size."""

    async def deliver(self, event: Mapping[str, Any]) -> bool:
        if self.closed:
            return False
        return await self.window.send_input(event)
