"""One viewer: a WebSocket, its own frame rate, a latest-wins slot for frames and one for
state, and an ordered queue of the human's input.

A single writer task sends what the slots hold: state first (a full snapshot, so the newest
replaces an unsent one), then the newest frame once the viewer's frame interval has passed.
While the socket is slow (the client does not read), ``send`` waits on the write buffer and
newer frames just replace the one in the slot: a slow viewer drops frames and costs at most
one frame plus the socket's write buffer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from browserbay_liveview_web.stream import DEFAULT_FPS, TabStream
from browserbay_liveview_web.windowstream import WindowStream

if TYPE_CHECKING:
    from websockets.asyncio.server import ServerConnection

    from browserbay_liveview_web.tickets import Credential

log = logging.getLogger("browserbay.liveview")

#: What a viewer watches: a tab's screencast or a native window's frames.
Stream = TabStream | WindowStream

#: Input events waiting for the page, per viewer; pointer moves are coalesced first.
MAX_INPUT = 512


class Viewer:
    def __init__(
        self,
        viewer_id: str,
        ws: ServerConnection,
        credential: Credential,
        dispatch: Callable[[Viewer, dict[str, Any]], Awaitable[None]],
    ):
        self.id = viewer_id
        self.ws = ws
        self.credential = credential
        self.fps = DEFAULT_FPS
        self.chosen_tab: str | None = None
        """A tab the human picked in the strip (None: follow the agent's current tab)."""
        self.stream: Stream | None = None
        self.sent = 0
        self.dropped = 0
        self.last_state = ""
        self._frame: bytes | None = None
        self._state: str | None = None
        self._wake = asyncio.Event()
        self._inputs: deque[dict[str, Any]] = deque()
        self._input_wake = asyncio.Event()
        self._dispatch = dispatch
        self._next_frame = 0.0
        self._tasks: list[asyncio.Task[Any]] = []

    @property
    def mode(self) -> str:
        return self.credential.grant.mode

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._writer()), loop.create_task(self._input_worker())]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(BaseException):
                await task

    # -- out ------------------------------------------------------------------------------

    def offer_frame(self, frame: bytes) -> None:
        if self._frame is not None:
            self.dropped += 1
        self._frame = frame
        self._wake.set()

    def offer_state(self, state: dict[str, Any]) -> None:
        text = json.dumps(state, separators=(",", ":"))
        if text == self.last_state:
            return
        self.last_state = text
        self._state = text
        self._wake.set()

    async def _writer(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                while self._state is not None or self._frame is not None:
                    if self._state is not None:
                        text, self._state = self._state, None
                        await self.ws.send(text)
                        continue
                    if not self.last_state:
                        break  # no frame before the first state: the page knows whose it is
                    wait = self._next_frame - loop.time()
                    if wait > 0:
                        await asyncio.sleep(wait)  # a newer frame may replace this one
                        continue
                    frame, self._frame = self._frame, None
                    if frame is not None:
                        await self.ws.send(frame)
                        self.sent += 1
                        # On the viewer's clock, not from this send: a late wake-up or a slow
                        # send is made up with the next frame (never more than one ahead).
                        interval = 1.0 / self.fps
                        now = loop.time()
                        self._next_frame = max(self._next_frame + interval, now - interval)
        except Exception:  # the socket closed: the handler notices and cleans up
            return

    # -- in -------------------------------------------------------------------------------

    def queue_input(self, event: dict[str, Any]) -> None:
        """In arrival order; a pointer move replaces a move still waiting behind it."""
        moving = event.get("t") == "mouse" and event.get("type") == "move"
        if moving and self._inputs:
            last = self._inputs[-1]
            if last.get("t") == "mouse" and last.get("type") == "move":
                self._inputs[-1] = event
                return
        if len(self._inputs) >= MAX_INPUT and event.get("t") not in ("takeover", "handback"):
            return  # the page is not keeping up: drop, never grow without bound
        self._inputs.append(event)
        self._input_wake.set()

    async def _input_worker(self) -> None:
        while True:
            await self._input_wake.wait()
            self._input_wake.clear()
            while self._inputs:
                event = self._inputs.popleft()
                try:
                    await self._dispatch(self, event)
                except Exception:  # never echo input in a log line: say only that it failed
                    log.warning("an input event could not reach the page")
