"""The recorder behind ``bay record`` (:mod:`browserbay.keeper.recording`): a video of a tab.

The frames are the tab's CDP screencast (:class:`browserbay.screencast.Screencast`, the code
the live view shows frames with: a recording is one more sink of it, on a CDP session of its
own), encoded **off the event loop** by one thread per recording with PyAV (FFmpeg's
libraries in the ``av`` wheel): VP8 in WebM, H.264 in MP4. The loop only hands the newest
JPEG to the thread (latest wins: a slow encoder drops frames, it never queues them), stamped
with its arrival time, so the video plays at the page's own pace; the last picture is held to
the stop, so a still page records as long as it was recorded.

Bounds: ``--max-seconds`` (default 600, at most 3600) and ``--max-mb`` (default 256, at most
2048). Reaching one stops the recording, the file complete, and the session's next answer
carries a notice. The file is written as the keeper's user, 0600, to a temporary file beside
the destination (made at ``start``: a directory the keeper cannot write is refused then,
``file_unwritable``) and renamed onto it at the stop: nothing half-written is ever at the
destination. Because the keeper opens the caller's path, ``record start`` is owner-only on a
session socket (a sandboxed agent's path is not the keeper's; see tests/test_owner_only.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import anyio

from browserbay.screencast import Screencast

log = logging.getLogger("browserbay.keeper")

#: Container and encoder per extension.
FORMATS = {".webm": ("webm", "libvpx"), ".mp4": ("mp4", "libx264")}
DEFAULT_SECONDS, MOST_SECONDS = 600.0, 3600.0
DEFAULT_MB, MOST_MB = 256.0, 2048.0
#: The rate the recording asks of the screencast (its acks are paced to twice the fastest
#: sink's rate: a recording alone costs the browser, and Playwright's connection every
#: frame crosses, about 20 frames a second, not Chromium's 60; see bench/RESULTS-recording.md).
FPS = 10.0
#: The recording's own screencast: smaller and cheaper frames than the live view's.
MAX_EDGE = 960
JPEG_QUALITY = 50
#: The agent's cursor drawn on the frames (``--cursor``): its radius in the frame's pixels.
CURSOR_RADIUS = 9


@dataclass(frozen=True)
class Limits:
    seconds: float
    bytes: int


class Encoder(threading.Thread):
    """One recording's encoding thread: takes the newest frame the loop offered (latest
    wins), decodes the JPEG, draws the cursor, encodes and muxes it; at the end holds the
    last picture to the stop's time, flushes, and renames the file onto its destination."""

    def __init__(self, fd: int, part: Path, dest: Path, limits: Limits) -> None:
        #: The recording's clock starts here (the first picture is shown from it: a video
        #: lasts from the start to the stop, however late the first frame came).
        self.begun = time.monotonic()
        super().__init__(name=f"bay-record-{dest.name}", daemon=False)
        self.part, self.dest, self.limits = part, dest, limits
        self.container, self.codec = FORMATS[dest.suffix.lower()]
        self.file = os.fdopen(fd, "wb")
        self._cv = threading.Condition()
        self._next: tuple[bytes, float, tuple[float, float] | None] | None = None
        self._end: float | None = None
        self.frames = 0
        self.dropped = 0
        self.size = (0, 0)
        self.error: str | None = None
        self.over: str | None = None
        """Which limit stopped it (``time`` or ``size``), read by the loop."""

    # -- the loop's side (never blocks) ---------------------------------------------------

    def offer(self, jpeg: bytes, at: float, point: tuple[float, float] | None) -> None:
        with self._cv:
            if self._next is not None:
                self.dropped += 1
            self._next = (jpeg, at, point)
            self._cv.notify()

    def end(self, at: float) -> None:
        with self._cv:
            self._end = at
            self._cv.notify()

    # -- the thread -----------------------------------------------------------------------

    def run(self) -> None:
        try:
            self._encode()
        except Exception as exc:  # a broken encoder must not take the keeper down
            log.exception("recording %s failed", self.dest.name)
            self.error = f"{type(exc).__name__}: {exc}"[:300]
            with contextlib.suppress(OSError):
                self.file.close()
            with contextlib.suppress(OSError):
                self.part.unlink()

    def _take(self) -> tuple[bytes, float, tuple[float, float] | None] | None:
        with self._cv:
            while self._next is None and self._end is None:
                self._cv.wait()
            taken, self._next = self._next, None
            return taken

    def _encode(self) -> None:
        import av  # the optional encoder, loaded by the thread that uses it

        out = av.open(self.file, "w", format=self.container)
        decoder = av.CodecContext.create("mjpeg", "r")
        stream: Any = None
        last: Any = None
        last_pts = -1
        begun = self.begun
        while True:
            taken = self._take()
            if taken is None:
                break
            jpeg, at, point = taken
            for picture in decoder.decode(av.Packet(jpeg)):
                if stream is None:
                    width, height = picture.width // 2 * 2, picture.height // 2 * 2
                    stream = out.add_stream(self.codec, rate=int(FPS))
                    stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
                    stream.time_base = Fraction(1, 1000)
                    stream.codec_context.time_base = Fraction(1, 1000)
                    stream.options = (
                        {"deadline": "realtime", "cpu-used": "8", "b": "1M"}
                        if self.codec == "libvpx"
                        else {"preset": "ultrafast", "tune": "zerolatency"}
                    )
                    self.size = (width, height)
                frame = picture.reformat(self.size[0], self.size[1], "yuv420p")
                if point is not None:
                    _draw_cursor(frame, point)
                # The first picture from the start; the others when they came.
                last_pts = 0 if last is None else max(last_pts + 1, round((at - begun) * 1000))
                frame.pts, frame.time_base = last_pts, Fraction(1, 1000)
                for packet in stream.encode(frame):
                    out.mux(packet)
                last = frame
                self.frames += 1
            if self.over is None:
                if at - begun >= self.limits.seconds:
                    self.over = "time"
                elif self.file.tell() >= self.limits.bytes:
                    self.over = "size"
        if stream is not None and last is not None and self._end is not None:
            held = round((self._end - begun) * 1000)
            if held > last_pts:  # the last picture lasts to the stop (a still page too)
                last.pts = held
                for packet in stream.encode(last):
                    out.mux(packet)
        if stream is not None:
            for packet in stream.encode(None):
                out.mux(packet)
        out.close()
        self.file.close()
        if self.frames:
            os.replace(self.part, self.dest)
        else:
            self.part.unlink(missing_ok=True)


def _draw_cursor(frame: Any, point: tuple[float, float]) -> None:
    """A dark dot ringed in white where the agent last pointed (on the luma plane only)."""
    plane = frame.planes[0]
    stride, width, height = plane.line_size, frame.width, frame.height
    luma = bytearray(bytes(plane))
    cx, cy, r = round(point[0]), round(point[1]), CURSOR_RADIUS
    for y in range(max(0, cy - r), min(height, cy + r + 1)):
        for x in range(max(0, cx - r), min(width, cx + r + 1)):
            d = (x - cx) ** 2 + (y - cy) ** 2
            if d <= r * r:
                luma[y * stride + x] = 30 if d < (r - 2) ** 2 else 235
    plane.update(bytes(luma))


class Recording:
    """One running recording of one tab: a sink of that tab's screencast feeding an
    :class:`Encoder`. Lives on the lease (``Lease.recording``)."""

    fps = FPS

    def __init__(
        self,
        encoder: Encoder,
        cast: Screencast,
        tab: str,
        path: str,
        point: Callable[[], tuple[float, float] | None] | None,
        notify: Callable[[str], None],
    ) -> None:
        self.encoder, self.cast, self.tab, self.path = encoder, cast, tab, path
        self._point, self._notify = point, notify
        self.started = time.time()
        self._began = time.monotonic()
        self.done = anyio.Event()
        self.stopped: str | None = None
        """Why it stopped by itself (a limit, the tab closed), said once by ``record stop``."""
        self._stopping = False
        self._finishing: asyncio.Task[None] | None = None

    def offer_frame(self, frame: bytes) -> None:
        if self._stopping:
            return
        point = self._point() if self._point is not None else None
        self.encoder.offer(frame, time.monotonic(), point)
        if self.encoder.over is not None:
            limit = self.encoder.limits
            what = (
                f"{limit.seconds:g} s"
                if self.encoder.over == "time"
                else f"{limit.bytes >> 20} MiB"
            )
            self._stop_soon(f"it reached its limit of {what}")

    def gone(self, _cast: Screencast) -> None:
        self._stop_soon(f"tab {self.tab} closed")

    def _stop_soon(self, why: str) -> None:
        if self._stopping or self.stopped is not None:
            return
        self.stopped = why
        self._notify(f"the recording to {self.path} stopped: {why}; the file is complete")
        # Called on the loop by the screencast's events: the finish runs as a task of it.
        self._finishing = asyncio.get_running_loop().create_task(self.finish())

    async def finish(self) -> None:
        """Stop the screencast, let the thread hold the last picture to now and close the
        file (off the loop); idempotent."""
        if self._stopping:
            await self.done.wait()
            return
        self._stopping = True
        try:
            self.cast.viewers.discard(self)
            await self.cast.stop()
            self.encoder.end(time.monotonic())
            await anyio.to_thread.run_sync(self.encoder.join)
        finally:
            self.done.set()

    def row(self) -> dict[str, Any]:
        enc = self.encoder
        return {
            "path": self.path,
            "tab": self.tab,
            "frames": enc.frames,
            "dropped": enc.dropped,
            "size": list(enc.size),
            "seconds": round(time.monotonic() - self._began, 1),
            "limits": {"seconds": enc.limits.seconds, "mb": enc.limits.bytes / (1 << 20)},
        }


class Recordings:
    """The recording of each lease, by (session id, profile id). One instance per keeper."""

    def __init__(self) -> None:
        self._by: dict[tuple[str, str], Recording] = {}

    def get(self, session: str, profile: str) -> Recording | None:
        return self._by.get((session, profile))

    def put(self, session: str, profile: str, recording: Recording) -> None:
        self._by[(session, profile)] = recording

    def pop(self, session: str, profile: str) -> Recording | None:
        return self._by.pop((session, profile), None)

    def running(self) -> list[Recording]:
        return [r for r in self._by.values() if not r.done.is_set()]
