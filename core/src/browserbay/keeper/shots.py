"""``screenshot``: the picture of a tab for a vision model, and for people.

What it answers: the image (PNG or JPEG at a quality), its size in pixels and bytes, and the
``scale`` from the page's CSS pixels to the picture's (a point at image pixel (x, y) is CSS
pixel (x / scale, y / scale) of the viewport, or of the page with ``--full``). A picture over
its cap (``--max-bytes``, ``--max-px`` for the longest side) is scaled down and re-encoded
until it fits: the defaults (:data:`MAX_BYTES`, :data:`MAX_PX`) are the hard per-image limits
of the common vision APIs, so a shot is always one a model accepts.

``--annotate`` labels every interactive element in the picture with its ref's number (label
``[3]`` is ``@e3``, the ref ``snapshot -i`` gives; another frame's ref keeps its prefix,
``[f2e5]``) and answers the legend. **The labels are drawn on the image, never in the page**:
the captured picture is decoded, scaled, labelled and encoded by an ``OffscreenCanvas`` in
an isolated world of the tab (:data:`PAINT_JS`, :class:`Painter`). Nothing is added to or
removed from the page's DOM, so the page's mutation observers, listeners and layout never see
an annotation (there is no overlay to forget on an error), and the page's own script cannot
reach the canvas (an isolated world shares the DOM, not the script globals: a page that
replaces ``OffscreenCanvas`` or ``createImageBitmap`` does not see the pixels of the
cross-origin frames the picture holds). The labels keep their size whatever the scale. (The
capture itself is Playwright's, which hides the text fields' caret by setting their style for
the moment of the picture, as every plain screenshot does: the labels add nothing to that.)

``--if-changed`` answers "unchanged" with no image when the picture is byte for byte this
tab's last one (:attr:`Tab.shot_digest`, set by every screenshot of the tab).

The image moves as :data:`~browserbay.verbs.FILE_OUT` bytes through the connection (the
client writes the caller's path; the keeper never opens it); without a path the keeper keeps
it in its state directory, 0600.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import anyio

from browserbay.keeper.act import Act
from browserbay.keeper.frames import jpeg_size
from browserbay.keeper.pageverbs import Answer, page_verb
from browserbay.keeper.snapshots import interactive_elements
from browserbay.paths import ensure_private, write_private
from browserbay.refusals import Refusal, printable

if TYPE_CHECKING:
    from playwright.async_api import CDPSession, Page

#: The default byte cap: a picture's base64 stays within 5 MB, the per-image limit of the
#: strictest common vision API.
MAX_BYTES = 3_750_000
#: The default cap on the picture's longest side (image pixels): the common vision APIs
#: refuse images past 8000 px, and scale anything over ~1,568 px down themselves
#: (``--max-px 1568`` sends no pixel the model would not see).
MAX_PX = 8000
#: The smallest caps a shot takes (under these nothing readable is left).
MIN_BYTES = 10_000
MIN_PX = 64
#: JPEG's quality when none is given (Chromium's own default).
JPEG_QUALITY = 80
#: Tries at a smaller scale before a picture is refused as too large for its byte cap.
FIT_TRIES = 6
#: The longest element name the legend shows.
MAX_NAME = 60

Format = Literal["png", "jpeg"]
FORMATS: dict[str, Format] = {"png": "png", "jpeg": "jpeg"}
MIMES: dict[Format, str] = {"png": "image/png", "jpeg": "image/jpeg"}
SUFFIXES: dict[Format, str] = {"png": ".png", "jpeg": ".jpg"}

#: The isolated world the painter runs in (one per document; reused by name).
WORLD = "browserbay-shot"

#: Decode the picture, scale it, draw the labels (in output pixels: they stay readable at
#: any scale), encode it. Boxes are CSS pixels of the picture; labels avoid each other.
PAINT_JS = r"""
(async (b64, srcMime, out) => {
  const bin = atob(b64);
  const raw = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) raw[i] = bin.charCodeAt(i);
  const bmp = await createImageBitmap(new Blob([raw], {type: srcMime}));
  const s = out.scale;
  const w = Math.max(1, Math.round(bmp.width * s)), h = Math.max(1, Math.round(bmp.height * s));
  const canvas = new OffscreenCanvas(w, h);
  const g = canvas.getContext('2d');
  g.imageSmoothingEnabled = true;
  g.imageSmoothingQuality = 'high';
  g.drawImage(bmp, 0, 0, w, h);
  bmp.close();
  const colors = ['#c62828', '#1565c0', '#2e7d32', '#6a1b9a', '#ad4c00', '#00695c', '#37474f'];
  const placed = [];
  const hits = (r) => placed.some(p => r.x < p.x + p.w && p.x < r.x + r.w &&
                                       r.y < p.y + p.h && p.y < r.y + r.h);
  g.font = 'bold 12px sans-serif';
  g.textBaseline = 'top';
  out.labels.forEach((l, n) => {
    const color = colors[n % colors.length];
    const k = out.boxScale;
    const x = l.x * k, y = l.y * k, bw = Math.max(1, l.w * k), bh = Math.max(1, l.h * k);
    g.lineWidth = 3; g.strokeStyle = '#ffffff'; g.strokeRect(x, y, bw, bh);
    g.lineWidth = 1.5; g.strokeStyle = color; g.strokeRect(x, y, bw, bh);
    const tw = Math.ceil(g.measureText(l.text).width) + 6, th = 15;
    const spots = [[x, y - th], [x, y], [x, y + bh], [x + bw - tw, y - th], [x - tw, y],
                   [x + bw, y]];
    let spot = null;
    for (const [sx, sy] of spots) {
      const r = {x: sx, y: sy, w: tw, h: th};
      if (sx >= 0 && sy >= 0 && sx + tw <= w && sy + th <= h && !hits(r)) { spot = r; break; }
    }
    if (spot === null) {
      spot = {x: Math.min(Math.max(0, x), Math.max(0, w - tw)),
              y: Math.min(Math.max(0, y), Math.max(0, h - th)), w: tw, h: th};
    }
    placed.push(spot);
    g.fillStyle = '#ffffff'; g.fillRect(spot.x - 1, spot.y - 1, tw + 2, th + 2);
    g.fillStyle = color; g.fillRect(spot.x, spot.y, tw, th);
    g.fillStyle = '#ffffff'; g.fillText(l.text, spot.x + 3, spot.y + 2);
  });
  const blob = await canvas.convertToBlob(
    out.mime === 'image/jpeg' ? {type: out.mime, quality: out.quality / 100} : {type: out.mime});
  const bytes = new Uint8Array(await blob.arrayBuffer());
  let text = '';
  for (let i = 0; i < bytes.length; i += 0x8000)
    text += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return {data: btoa(text), width: w, height: h};
})
"""


def _usage(detail: str) -> Refusal:
    return Refusal("usage", detail=detail, verb="screenshot")


def png_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG's header, or None if it is no PNG."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        return None
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) of a PNG or JPEG, read from its header."""
    return png_size(data) or jpeg_size(data)


@dataclass(frozen=True)
class ShotRequest:
    """What the caller asked for, checked: bad input is refused before the page is touched."""

    format: Format
    quality: int
    full: bool
    annotate: bool
    max_bytes: int
    max_px: int
    if_changed: bool

    @property
    def mime(self) -> str:
        return MIMES[self.format]

    @classmethod
    def from_args(cls, args: dict[str, Any]) -> ShotRequest:
        given = str(args.get("format") or "")
        path = str(args.get("path") or "")
        if not given:  # the path says it: shot.jpg is a JPEG
            given = "jpeg" if path.lower().endswith((".jpg", ".jpeg")) else "png"
        fmt = FORMATS.get(given)
        if fmt is None:
            raise _usage("--format is png or jpeg")
        quality = args.get("quality")
        if quality is not None:
            if fmt != "jpeg":
                raise _usage("--quality is JPEG's: add --format jpeg (PNG is lossless)")
            if not isinstance(quality, int) or not 0 <= quality <= 100:
                raise _usage("--quality is a whole number from 0 to 100 (80 when not given)")
        max_bytes = args.get("max_bytes")
        if max_bytes is not None and (not isinstance(max_bytes, int) or max_bytes < MIN_BYTES):
            raise _usage(f"--max-bytes is at least {MIN_BYTES} (default {MAX_BYTES})")
        max_px = args.get("max_px")
        if max_px is not None and (not isinstance(max_px, int) or max_px < MIN_PX):
            raise _usage(f"--max-px is at least {MIN_PX} (default {MAX_PX}; 1568 suits models)")
        return cls(
            format=fmt,
            quality=JPEG_QUALITY if quality is None else quality,
            full=bool(args.get("full")),
            annotate=bool(args.get("annotate")),
            max_bytes=MAX_BYTES if max_bytes is None else max_bytes,
            max_px=MAX_PX if max_px is None else max_px,
            if_changed=bool(args.get("if_changed")),
        )


@dataclass(frozen=True)
class Target:
    """One interactive element of the tab's snapshot: its ref (as ``snapshot -i`` shows it:
    ``e3``, ``c7`` for one judged from the DOM, ``f2e5`` in another frame), role and name."""

    ref: str
    role: str
    name: str
    kind: str | None = None
    """``clickable``/``editable``/``focusable`` when judged from the DOM (as ``snapshot -i``
    says), else None."""

    @property
    def label(self) -> str:
        """The label drawn for it: an ``eN`` ref's number (``e3`` -> ``3``, as agent-browser
        numbers them); any other ref whole (``c7``, ``f2e5``), so no two labels are alike."""
        return self.ref[1:] if self.ref.startswith("e") else self.ref


@dataclass(frozen=True)
class Box:
    """Where a target is in the picture, in CSS pixels of the picture's origin."""

    target: Target
    x: float
    y: float
    w: float
    h: float

    def clipped(self, width: float, height: float) -> Box | None:
        """The part of it inside a ``width`` x ``height`` picture; None when none is."""
        x0, y0 = max(0.0, self.x), max(0.0, self.y)
        x1, y1 = min(width, self.x + self.w), min(height, self.y + self.h)
        if x1 - x0 < 1 or y1 - y0 < 1:
            return None
        return Box(self.target, x0, y0, x1 - x0, y1 - y0)

    def row(self, scale: float) -> dict[str, Any]:
        t = self.target
        box = [round(v * scale) for v in (self.x, self.y, self.w, self.h)]
        row = {"label": t.label, "ref": t.ref, "role": t.role, "name": t.name, "box": box}
        return row | ({"kind": t.kind} if t.kind else {})

    def line(self) -> str:
        t = self.target
        name = t.name if len(t.name) <= MAX_NAME else t.name[: MAX_NAME - 1] + "…"
        # Quoted as snapshot -i quotes it: a page's quote or newline in a name cannot make
        # it read as another label's line.
        quoted = printable(json.dumps(name, ensure_ascii=False))
        # The label drawn is the ref without its ``e`` (``3`` is ``@e3``; ``c7`` is ``@c7``):
        # the line gives the ref alone, which says the label too.
        said = f"@{t.ref} {t.role}" + (f" {quoted}" if name else "")
        return said + (f" {t.kind}" if t.kind else "")


@dataclass(frozen=True)
class Picture:
    """The encoded picture: its bytes, format, size in pixels and scale from CSS pixels."""

    data: bytes
    format: Format
    width: int
    height: int
    scale: float

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


# -- the interactive elements and their boxes ----------------------------------------------


async def boxes_of(act: Act, full: bool) -> tuple[list[Box], int]:
    """The interactive elements ``snapshot -i`` lists (taking it makes its refs the tab's),
    each with its box in CSS pixels of the viewport (of the page with ``full``), and how many
    elements it lists in all (one without a box is hidden, or gone since)."""
    elements = await interactive_elements(act)
    dx, dy = 0.0, 0.0
    focus = act.tab.focus
    if focus is not None:  # bay frame: the boxes are in that frame's viewport
        frame = await focus.frame.frame_element()
        where = await frame.bounding_box()
        if where is not None:
            dx, dy = where["x"], where["y"]
    if full:
        sx, sy = await act.page.evaluate("() => [scrollX, scrollY]")
        dx, dy = dx + float(sx), dy + float(sy)
    boxes = []
    for e in elements:
        b = e.box
        if b is not None and b.width >= 1 and b.height >= 1:
            target = Target(e.ref, e.role, e.name, e.kind)
            boxes.append(Box(target, b.x + dx, b.y + dy, b.width, b.height))
    return boxes, len(elements)


# -- the painter: scale, label, encode in an isolated world --------------------------------


class Painter:
    """The tab's canvas in an isolated world (:data:`WORLD`, reused by name: one per
    document), through a CDP session of its own that :meth:`close` detaches (``take`` does,
    in a ``finally``)."""

    def __init__(self, cdp: CDPSession, context: int) -> None:
        self._cdp = cdp
        self._context = context

    @classmethod
    async def open(cls, page: Page) -> Painter:
        cdp = await page.context.new_cdp_session(page)
        try:
            tree = await cdp.send("Page.getFrameTree")
            frame = str(tree["frameTree"]["frame"]["id"])
            world = await cdp.send(
                "Page.createIsolatedWorld", {"frameId": frame, "worldName": WORLD}
            )
        except Exception:
            await cdp.detach()
            raise
        return cls(cdp, int(world["executionContextId"]))

    async def close(self) -> None:
        try:
            await self._cdp.detach()
        except Exception:  # the page went away: so did the session
            return

    async def content_size(self) -> tuple[float, float]:
        """The page's whole size, CSS pixels (what a full-page picture holds)."""
        metrics = await self._cdp.send("Page.getLayoutMetrics")
        size = metrics["cssContentSize"]
        return float(size["width"]), float(size["height"])

    async def capture_scaled(self, width: float, height: float, scale: float) -> bytes:
        """A PNG of the whole page rendered at ``scale``: the browser encodes only the pixels
        kept (a 40,000 px page at 1/5 is several times faster than whole and shrunk)."""
        clip = {"x": 0, "y": 0, "width": width, "height": height, "scale": scale}
        shot = await self._cdp.send(
            "Page.captureScreenshot",
            {"format": "png", "clip": clip, "captureBeyondViewport": True},
        )
        return base64.b64decode(shot["data"])

    async def paint(
        self,
        source: bytes,
        source_mime: str,
        req: ShotRequest,
        scale: float,
        boxes: list[Box],
        pre: float = 1.0,
    ) -> Picture:
        """``source`` (captured at ``pre`` image pixels per CSS pixel) scaled by ``scale``,
        ``boxes`` (CSS pixels) labelled on it, encoded as ``req`` asks."""
        out = {
            "scale": scale,
            "boxScale": scale * pre,
            "mime": req.mime,
            "quality": req.quality,
            "labels": [
                {"text": b.target.label, "x": b.x, "y": b.y, "w": b.w, "h": b.h} for b in boxes
            ],
        }
        call = (
            f"({PAINT_JS})({json.dumps(base64.b64encode(source).decode('ascii'))}, "
            f"{json.dumps(source_mime)}, {json.dumps(out)})"
        )
        answer = await self._cdp.send(
            "Runtime.evaluate",
            {
                "expression": call,
                "contextId": self._context,
                "awaitPromise": True,
                "returnByValue": True,
            },
        )
        if "exceptionDetails" in answer:
            details = answer["exceptionDetails"]
            reason = details.get("exception", {}).get("description") or details.get("text")
            raise Refusal("action_failed", verb="screenshot", reason=str(reason)[:200])
        value = answer["result"]["value"]
        data = base64.b64decode(value["data"])
        return Picture(data, req.format, int(value["width"]), int(value["height"]), scale * pre)


# -- the verb ------------------------------------------------------------------------------


async def take(act: Act, req: ShotRequest, boxes: list[Box] | None) -> tuple[Picture, list[Box]]:
    """The picture ``req`` asks for, within its caps, and the ``boxes`` in it (clipped to
    it). Captured by Playwright (caret hidden, CSS pixels), or, for a full page over
    ``max_px``, rendered at the scale that fits it; painted (:class:`Painter`) only when it
    needs labels or fewer bytes."""
    painter: Painter | None = None
    try:
        pre = 1.0
        if req.full:
            painter = await Painter.open(act.page)
            page_w, page_h = await painter.content_size()
            if max(page_w, page_h) > req.max_px:
                pre = req.max_px / max(page_w, page_h)
        fmt: Format = req.format if boxes is None and pre == 1.0 else "png"  # lossless
        if painter is not None and pre < 1.0:
            captured = await painter.capture_scaled(page_w, page_h, pre)
        else:
            captured = await act.page.screenshot(
                type=fmt,
                quality=req.quality if fmt == "jpeg" else None,
                full_page=req.full,
                scale="css",
                timeout=act.ms_left(),
            )
        size = image_size(captured)
        if size is None:
            raise Refusal("action_failed", verb="screenshot", reason="the browser sent no image")
        width, height = size
        shown = [c for b in boxes or [] if (c := b.clipped(width / pre, height / pre))]
        if boxes and not shown:
            raise Refusal("no_labels", tab=act.tab.id, count=len(boxes))
        plain = boxes is None and fmt == req.format
        if plain and max(width, height) <= req.max_px and len(captured) <= req.max_bytes:
            return Picture(captured, fmt, width, height, pre), shown
        scale = min(1.0, req.max_px / max(width, height))
        painter = painter or await Painter.open(act.page)
        for _ in range(FIT_TRIES):
            picture = await painter.paint(captured, MIMES[fmt], req, scale, shown, pre)
            if len(picture.data) <= req.max_bytes:
                return picture, shown
            # Bytes go roughly with the pixel count: shrink the side by the square root.
            scale *= 0.92 * math.sqrt(req.max_bytes / len(picture.data))
            if max(width, height) * scale < MIN_PX:
                break
    finally:
        if painter is not None:
            await painter.close()
    fix = "--format jpeg --quality 60, or a smaller --max-px" if req.format == "png" else ""
    raise Refusal(
        "too_large",
        what=f"the screenshot ({width}x{height})",
        size=len(picture.data),
        limit=req.max_bytes,
        fix=fix or "a lower --quality, a smaller --max-px, or a larger --max-bytes",
    )


@page_verb("screenshot")
async def verb_screenshot(act: Act) -> Answer:
    """With a path, the picture goes back through the connection and the caller's client
    writes it there (``FILE_OUT``: the keeper never opens the caller's path); without one,
    the keeper keeps it in its own state directory."""
    req = ShotRequest.from_args(act.args)
    boxes: list[Box] | None = None
    if req.annotate:
        boxes, listed = await boxes_of(act, req.full)
        if not boxes:
            raise Refusal("no_labels", tab=act.tab.id, count=listed)
    picture, shown = await take(act, req, boxes)
    unchanged = req.if_changed and picture.digest == act.tab.shot_digest
    act.tab.shot_digest = picture.digest
    data: dict[str, Any] = {
        "url": act.page.url,
        "tab": act.tab.id,
        "format": picture.format,
        "mime": MIMES[picture.format],
        "width": picture.width,
        "height": picture.height,
        "scale": round(picture.scale, 4),
        "bytes": len(picture.data),
    }
    if unchanged:
        data["unchanged"] = True
        return data, f"unchanged since the last screenshot of tab {act.tab.id} (no image sent)"
    lines = [_summary(picture)]
    if boxes is not None:
        outside = len(boxes) - len(shown)
        data["labels"] = [b.row(picture.scale) for b in shown]
        data["outside"] = outside
        lines += [b.line() for b in shown]
        if outside:
            lines.append(f"({outside} more interactive elements outside the picture: --full)")
    name = f"{act.tab.id}-{time.strftime('%Y%m%d-%H%M%S')}{SUFFIXES[picture.format]}"
    given = act.args.get("path")
    if given:
        offer = await act.files.offer_bytes(picture.data, name)
        data.update(file=offer.row(), path=str(given))
        return data, "\n".join([str(given), *lines])
    await anyio.to_thread.run_sync(ensure_private, act.shots_dir)
    path = act.shots_dir / name
    await anyio.to_thread.run_sync(write_private, path, picture.data)  # page content: 0600
    data["path"] = str(path)
    return data, "\n".join([str(path), *lines])


def _summary(picture: Picture) -> str:
    size = f"{picture.format} {picture.width}x{picture.height}, {len(picture.data) // 1024} KB"
    if picture.scale == 1.0:
        return size
    s = f"{picture.scale:.4g}"
    return f"{size}, scale {s} (CSS px = image px / {s})"
