"""The recorder behind ``bay record`` (:mod:`browserbay.keeper.recording`): a video of a tab.

The frames are the tab's CDP screencast (:class:`browserbay.screencast.Screencast`, the code
the live view shows frames with: a recording is one more sink of it, on a CDP session of its
own), encoded **off the event loop** by one process per recording with PyAV (FFmpeg's
libraries in the ``av`` wheel; :mod:`browserbay.keeper.encoding`): VP8 in WebM, H.264 in
MP4. The loop only writes the newest JPEG down the encoder's pipe when the pipe is free (latest
wins: a slow encoder drops frames, it never queues them), stamped with its arrival time, so
the video plays at the page's own pace; the last picture is held to the stop, so a still page
records as long as it was recorded.

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
import json
import logging
import math
import os
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
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
#: How long the encoder may take to close the file after the stop.
ENCODER_GRACE = 60.0
#: One record on the encoder's pipe: kind (``F`` a frame, ``E`` the end), seconds since the
#: start, the cursor as fractions of the viewport (NaN: none), the JPEG's length.
HEAD = struct.Struct("<cdddI")


@dataclass(frozen=True)
class Limits:
    seconds: float
    bytes: int


class Encoder:
    """One recording's encoder, in a process of its own (:mod:`browserbay.keeper.encoding`,
    PyAV): the keeper's loop only writes the newest JPEG down a pipe when the pipe is free
    (latest wins: a busy encoder drops frames, never queues them). A process, not a thread:
    a thread of the keeper's would share its interpreter lock, and on a loaded machine a
    descheduled holder stalls the loop (measured: a click 40x slower at load 38; see
    bench/RESULTS-recording.md)."""

    def __init__(self, fd: int, part: Path, dest: Path, limits: Limits) -> None:
        self.fd, self.part, self.dest, self.limits = fd, part, dest, limits
        self.container, self.codec = FORMATS[dest.suffix.lower()]
        #: The recording's clock starts here (the first picture is shown from it: a video
        #: lasts from the start to the stop, however late the first frame came).
        self.begun = time.monotonic()
        self.frames = 0
        #: Set once a frame went to the encoder (``record stop`` right after the start waits
        #: for it, bounded).
        self.offered = asyncio.Event()
        self.dropped = 0
        self.size = (0, 0)
        self.error: str | None = None
        self.over: str | None = None
        """Which limit stopped it (``time`` or ``size``), as the encoder said."""
        self._proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None

    async def start(self) -> None:
        try:
            self._proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "browserbay.keeper.encoding",
                str(self.fd),
                self.container,
                self.codec,
                repr(self.limits.seconds),
                str(self.limits.bytes),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
                pass_fds=(self.fd,),
            )
        finally:
            os.close(self.fd)  # the encoder's now
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        """The encoder's status lines (JSON): its picture size, frames, a limit hit, an
        error."""
        proc = self._proc
        if proc is None or proc.stdout is None:
            return
        async for line in proc.stdout:
            try:
                said = json.loads(line)
            except ValueError:
                continue
            if isinstance(said, dict):
                size = said.get("size")
                if isinstance(size, list) and len(size) == 2:
                    self.size = (int(size[0]), int(size[1]))
                self.frames = int(said.get("frames", self.frames))
                self.over = said.get("over") or self.over
                self.error = said.get("error") or self.error

    def offer(self, jpeg: bytes, at: float, point: tuple[float, float] | None) -> None:
        proc = self._proc
        if proc is None or proc.stdin is None or proc.stdin.is_closing():
            return
        if proc.stdin.transport.get_write_buffer_size():  # the last frame is not in yet
            self.dropped += 1
            return
        fx, fy = point if point is not None else (math.nan, math.nan)
        proc.stdin.write(HEAD.pack(b"F", at - self.begun, fx, fy, len(jpeg)) + jpeg)
        self.offered.set()

    async def end(self, at: float) -> None:
        """The last picture lasts to ``at``; wait for the file to be closed, then put it at
        its destination (or remove it: no frame came, or the encoder failed)."""
        proc = self._proc
        if proc is not None:
            with contextlib.suppress(Exception):
                if proc.stdin is not None:
                    proc.stdin.write(HEAD.pack(b"E", at - self.begun, math.nan, math.nan, 0))
                    await proc.stdin.drain()
                    proc.stdin.close()
            try:
                with anyio.fail_after(ENCODER_GRACE):
                    await proc.wait()
                    if self._reader is not None:
                        await self._reader
            except TimeoutError:
                proc.kill()
                self.error = f"the encoder did not finish within {ENCODER_GRACE:g} s"
            if proc.returncode and self.error is None:
                self.error = f"the encoder exited with status {proc.returncode}"
        await anyio.to_thread.run_sync(self._settle)

    def _settle(self) -> None:
        if self.frames and self.error is None:
            os.replace(self.part, self.dest)
        else:
            self.part.unlink(missing_ok=True)


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
            await self.encoder.end(time.monotonic())
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
