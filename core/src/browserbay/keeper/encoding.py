"""A recording's encoding process (``python -m browserbay.keeper.encoding FD CONTAINER CODEC
SECONDS BYTES``), started by :class:`browserbay.keeper.recorder.Encoder`.

It reads records from stdin (:data:`~browserbay.keeper.recorder.HEAD`: a JPEG frame of the
tab with its time since the start and the agent's cursor, or the end), decodes each JPEG,
draws the cursor, encodes it with PyAV (VP8 or H.264, millisecond timestamps: the video plays
at the page's pace) into the already open file ``FD``, and holds the last picture to the end's
time. It says on stdout, one JSON object a line: its picture size and frames so far, ``over``
when a limit is hit (it goes on until told to end), ``error`` when it fails. Nothing of the
frames is ever printed.
"""

from __future__ import annotations

import json
import math
import os
import sys
from fractions import Fraction
from typing import IO, Any

from browserbay.keeper.recorder import FPS, HEAD

#: The agent's cursor drawn on the frames (``--cursor``): its radius in the frame's pixels.
CURSOR_RADIUS = 9
MS = Fraction(1, 1000)


def _say(**fields: Any) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def _read(stream: IO[bytes], n: int) -> bytes:
    data = stream.read(n)
    return data if data is not None else b""


def _draw_cursor(frame: Any, fx: float, fy: float) -> None:
    """A dark dot ringed in white at (fx, fy), fractions of the picture (luma plane only)."""
    plane = frame.planes[0]
    stride, width, height = plane.line_size, frame.width, frame.height
    luma = bytearray(bytes(plane))
    cx, cy, r = round(fx * width), round(fy * height), CURSOR_RADIUS
    for y in range(max(0, cy - r), min(height, cy + r + 1)):
        for x in range(max(0, cx - r), min(width, cx + r + 1)):
            d = (x - cx) ** 2 + (y - cy) ** 2
            if d <= r * r:
                luma[y * stride + x] = 30 if d < (r - 2) ** 2 else 235
    plane.update(bytes(luma))


def encode(fd: int, container: str, codec: str, seconds: float, limit: int) -> None:
    import av  # the optional encoder (browserbay-core[record])

    file = os.fdopen(fd, "wb")
    out = av.open(file, "w", format=container)
    decoder = av.CodecContext.create("mjpeg", "r")
    stdin = sys.stdin.buffer
    stream: Any = None
    last: Any = None
    last_pts, frames, over = -1, 0, False
    size = (0, 0)
    end_at: float | None = None
    while True:
        head = _read(stdin, HEAD.size)
        if len(head) < HEAD.size:
            break  # the keeper went away: close what there is
        kind, at, fx, fy, length = HEAD.unpack(head)
        if kind == b"E":
            end_at = at
            break
        jpeg = _read(stdin, length)
        if at > seconds:  # past the limit: not in the video (the keeper is stopping it)
            if not over:
                over = True
                _say(size=list(size), frames=frames, over="time")
            continue
        for picture in decoder.decode(av.Packet(jpeg)):
            if stream is None:
                size = (picture.width // 2 * 2, picture.height // 2 * 2)
                stream = out.add_stream(codec, rate=int(FPS))
                stream.width, stream.height, stream.pix_fmt = size[0], size[1], "yuv420p"
                stream.time_base = MS
                stream.codec_context.time_base = MS
                stream.options = (
                    {"deadline": "realtime", "cpu-used": "8", "b": "1M"}
                    if codec == "libvpx"
                    else {"preset": "ultrafast", "tune": "zerolatency"}
                )
            frame = picture.reformat(size[0], size[1], "yuv420p")
            if not (math.isnan(fx) or math.isnan(fy)):
                _draw_cursor(frame, fx, fy)
            # The first picture from the start; the others when they came.
            last_pts = 0 if last is None else max(last_pts + 1, round(at * 1000))
            frame.pts, frame.time_base = last_pts, MS
            for packet in stream.encode(frame):
                out.mux(packet)
            last = frame
            frames += 1
        if not over and file.tell() >= limit:
            over = True
            _say(size=list(size), frames=frames, over="size")
        elif frames == 1 or frames % 10 == 0:
            _say(size=list(size), frames=frames)
    if stream is not None and last is not None and end_at is not None:
        held = round(min(end_at, seconds) * 1000)  # never past the limit
        if held > last_pts:  # the last picture lasts to the stop (a still page too)
            last.pts = held
            for packet in stream.encode(last):
                out.mux(packet)
    if stream is not None:
        for packet in stream.encode(None):
            out.mux(packet)
    out.close()
    file.close()
    _say(size=list(size), frames=frames)


def main(argv: list[str]) -> int:
    fd, container, codec, seconds, limit = argv
    try:
        encode(int(fd), container, codec, float(seconds), int(limit))
    except Exception as exc:
        _say(error=f"{type(exc).__name__}: {exc}"[:300])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
