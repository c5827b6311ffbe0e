"""The HTML report: one self-contained page (frames inlined as ``data:`` URIs, no script)
with each action's before and after frames and, drawn over them in SVG, the target's box
and the pointer's point. Everything the page shows is escaped; its Content-Security-Policy
lets it load nothing but its own inlined pictures and, played from their files beside it, the
segments of continuous recording its actions happened in (`bay recording on`)."""

from __future__ import annotations

import base64
import html
import os
import time
from pathlib import Path
from typing import Any

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #111; }
h1 { font-size: 1.3em; }
.action { border-top: 1px solid #ccc; padding: 1em 0; }
.action h2 { font-size: 1em; margin: 0 0 .5em; }
.refused h2 { color: #b00020; }
.meta { color: #555; margin: 0 0 .5em; }
.frames { display: flex; gap: 1em; flex-wrap: wrap; }
figure { margin: 0; }
figcaption { color: #555; font-size: .9em; }
.frame { position: relative; display: inline-block; width: 560px; max-width: 100%;
  border: 1px solid #999; line-height: 0; }
.frame img { width: 100%; height: auto; display: block; }
.frame svg { position: absolute; left: 0; top: 0; width: 100%; height: 100%;
  overflow: visible; pointer-events: none; }
.box { fill: rgba(255, 0, 80, .12); stroke: #ff0050; stroke-width: 3; }
.point { fill: #ff0050; stroke: #fff; stroke-width: 2; }
.cross { stroke: #ff0050; stroke-width: 2; }
.recording video { width: 560px; max-width: 100%; border: 1px solid #999; }
.noframe { display: inline-block; width: 560px; padding: 2em 0; text-align: center;
  border: 1px dashed #999; color: #777; line-height: 1.4; }
"""
#: Its recordings are played from their files beside the report's (``media-src``).
CSP = "default-src 'none'; img-src data:; media-src 'self' file:; style-src 'unsafe-inline'"


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _overlay(record: dict[str, Any], size: dict[str, Any], which: str) -> str:
    w, h = size["width"], size["height"]
    parts = [f'<svg class="overlay" viewBox="0 0 {w} {h}" preserveAspectRatio="none">']
    box = record.get("box")
    if box and which == "before":
        x, y, bw, bh = (float(v) for v in box)
        parts.append(
            f'<rect class="box" x="{x:.1f}" y="{y:.1f}" width="{bw:.1f}" height="{bh:.1f}"/>'
        )
    point = record.get("point")
    if point:
        px, py = (float(v) for v in point)
        r = max(6.0, min(w, h) / 60)
        parts.append(
            f'<line class="cross" x1="{px - 2 * r:.1f}" y1="{py:.1f}" x2="{px + 2 * r:.1f}" '
            f'y2="{py:.1f}"/><line class="cross" x1="{px:.1f}" y1="{py - 2 * r:.1f}" '
            f'x2="{px:.1f}" y2="{py + 2 * r:.1f}"/>'
            f'<circle class="point" cx="{px:.1f}" cy="{py:.1f}" r="{r:.1f}"/>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _figure(record: dict[str, Any], which: str, jpeg: bytes | None) -> str:
    size = record.get(which)
    caption = f"<figcaption>{which}</figcaption>"
    if jpeg is None or not size:
        why = [m for m in record.get("missing", []) if str(m).startswith(which)]
        text = _e(why[0]) if why else f"{which}: no frame"
        body = f'<div class="noframe">no frame<br>{text}</div>'
        return f'<figure class="{which}">{caption}{body}</figure>'
    src = "data:image/jpeg;base64," + base64.b64encode(jpeg).decode("ascii")
    return (
        f'<figure class="{which}">{caption}<div class="frame" data-frame="{which}" '
        f'data-width="{size["width"]}" data-height="{size["height"]}">'
        f'<img alt="{which} the action" src="{src}" width="{size["width"]}" '
        f'height="{size["height"]}">{_overlay(record, size, which)}</div></figure>'
    )


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(at)) + f".{int(at * 1000) % 1000:03d} UTC"


def _recording(record: dict[str, Any], here: Path | None) -> str:
    """The segment of continuous recording the action happened in, played from the moment
    it began: a ``<video>`` and a link by a path relative to the report's directory."""
    rec = record.get("recording")
    if not rec:
        return ""
    path = Path(str(rec["path"]))
    href = os.path.relpath(path, here).replace(os.sep, "/") if here is not None else path.as_uri()
    offset = float(rec.get("offset", 0))
    src = f"{href}#t={offset:.2f}"
    return (
        f'<figure class="recording" data-offset="{offset:.2f}"><figcaption>the recording, '
        f'{offset:.1f} s in: <a href="{_e(src)}">{_e(path.name)}</a></figcaption>'
        f'<video controls preload="metadata" src="{_e(src)}"></video></figure>'
    )


def render(title: str, records: list[dict[str, Any]], here: Path | None = None) -> str:
    """The page for ``records`` (oldest first), reading each one's frames from disk; ``here``:
    the report's directory, which links to recordings are relative to."""
    out = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        f"<title>{_e(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f"<p class='meta'>{len(records)} action(s), oldest first. Boxes and points are where "
        "the action acted, in the page's CSS pixels. Text fields are masked; typed text, keys "
        "and query strings are never recorded.</p>",
    ]
    if not records:
        out.append("<p>No actions traced for this profile (yet, or any more).</p>")
    for n, record in enumerate(records, 1):
        ok = record.get("ok")
        outcome = "ok" if ok else f"refused: {record.get('code')}"
        target = f" {record['target']}" if record.get("target") else ""
        out.append(
            f'<section class="action {"ok" if ok else "refused"}" id="a{n}" '
            f'data-verb="{_e(record.get("verb"))}">'
            f"<h2>{n}. {_e(record.get('verb'))}{_e(target)} — {_e(outcome)}</h2>"
            f"<p class='meta'>{_e(_when(float(record.get('at', 0))))} · tab "
            f"{_e(record.get('tab'))} · {_e(record.get('ms'))} ms · {_e(record.get('url'))}"
        )
        if record.get("url_after") and record.get("url_after") != record.get("url"):
            out.append(f" → {_e(record['url_after'])}")
        out.append("</p><div class='frames'>")
        for which in ("before", "after"):
            path = record.get("frames", {}).get(which)
            jpeg = _read(path) if path else None
            out.append(_figure(record, which, jpeg))
        out.append(_recording(record, here))
        out.append("</div></section>")
    out.append("</body></html>")
    return "".join(out)


def _read(path: str) -> bytes | None:
    try:
        return Path(path).read_bytes()
    except OSError:
        return None
