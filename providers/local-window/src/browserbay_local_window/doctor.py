"""``bay window doctor``: the probe matrix, found by trying each capability for real — the
display starts (and stops again when no window needs it), the walker reaches the AT-SPI bus,
XTEST is asked for, a pixel is read. ``bay doctor`` prints its machine part (doctor_checks.py)."""

from __future__ import annotations

import time
from typing import Any

from browserbay.model import VerbContext
from browserbay.refusals import Refusal
from browserbay_local_window.book import Windows
from browserbay_local_window.display import Display
from browserbay_local_window.doctor_checks import Row, machine, row
from browserbay_local_window.walkerclient import WalkerError
from browserbay_local_window.x11 import XError


async def live(book: Windows, display: Display) -> dict[str, Row]:
    """What works on a running display."""
    rows: dict[str, Row] = {}
    started = time.monotonic()
    python = book.settings.python
    try:
        hello = await display.walker.call("hello", 10.0, call_ms=2000)
    except WalkerError as exc:
        if exc.kind == "unavailable":
            rows["walker_python"] = row(False, f"{python}: {exc.reason}")
            rows["atspi_bus"] = row(False, "not probed: the walker cannot run")
        else:
            rows["walker_python"] = row(True, python)
            rows["atspi_bus"] = row(False, f"{exc.kind}: {exc.reason}")
    else:
        rows["walker_python"] = row(True, python)
        rows["atspi_bus"] = row(
            True,
            f"{hello['a11y_bus'].split(',')[0]} · {hello['apps']} application(s) · "
            f"{(time.monotonic() - started) * 1000:.0f} ms",
        )
    ok, detail = await book.xtest(display)
    rows["xtest"] = row(ok, detail)
    try:
        w, h = await display.x.run(5.0, lambda x: x.screen_size())
        await display.x.run(5.0, lambda x: x.grab(0, 0, 1, 1))
        import PIL

        rows["screenshot"] = row(True, f"get_image on a {w}x{h} screen · Pillow {PIL.__version__}")
    except (XError, ImportError) as exc:
        rows["screenshot"] = row(False, str(exc))
    return rows


async def probe_matrix(book: Windows, ctx: VerbContext) -> tuple[dict[str, Any], str]:
    machine_rows = machine(book.settings)
    displays: list[dict[str, Any]] = []
    try:
        own = await book.ensure_own(ctx)
    except Refusal as refusal:
        displays.append(
            {"display": None, "kind": "ours", "ok": False, "detail": refusal.message, "probes": {}}
        )
    else:
        displays.append(
            {
                "display": own.name,
                "kind": "ours",
                "ok": True,
                "detail": f"Xvfb {own.name}, private session bus and AT-SPI bus",
                "probes": await live(book, own),
            }
        )
        await book.stop_own_if_unused(ctx)
    desk = book.desktop()
    if desk is not None:
        displays.append(
            {
                "display": desk.name,
                "kind": "desktop",
                "ok": True,
                "detail": "your desktop (BAY_WINDOW_DESKTOP=1)",
                "probes": await live(book, desk),
            }
        )
    else:
        displays.append(
            {
                "display": None,
                "kind": "desktop",
                "ok": False,
                "detail": "off (BAY_WINDOW_DESKTOP=1 and a $DISPLAY turn it on)",
                "probes": {},
            }
        )
    lines = ["machine:"]
    lines += [
        f"  {'ok ' if r['ok'] else 'NO '} {k:<22} {r['detail']}" for k, r in machine_rows.items()
    ]
    for d in displays:
        lines.append(f"display {d['display'] or '-'} ({d['kind']}): {d['detail']}")
        lines += [
            f"  {'ok ' if r['ok'] else 'NO '} {k:<22} {r['detail']}" for k, r in d["probes"].items()
        ]
    return {"machine": machine_rows, "displays": displays}, "\n".join(lines)
