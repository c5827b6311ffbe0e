"""``bay window doctor``: the probe matrix, found by trying each capability for real — the
display starts (and stops again when no window needs it), the walker reaches the AT-SPI bus,
XTEST is asked for, a pixel is read. ``bay doctor`` prints its machine part (doctor_checks.py)."""

from __future__ import annotations

import shutil
import time
from typing import Any

from browserbay.model import VerbContext
from browserbay.refusals import Refusal
from browserbay_local_window import chromium, procs
from browserbay_local_window.display import Display, launcher
from browserbay_local_window.walkerclient import WalkerError
from browserbay_local_window.x11 import XError

Row = dict[str, Any]


def _row(ok: bool, detail: str) -> Row:
    return {"ok": ok, "detail": detail}


def machine(book: Any) -> dict[str, Row]:
    """What is installed: cheap, no process started."""
    s = book.settings
    xvfb = shutil.which(s.xvfb)
    spi = launcher()
    dbus = shutil.which("dbus-daemon")
    browser = chromium.find()
    tool = procs.setpriv()
    return {
        "xvfb": _row(xvfb is not None, xvfb or f"{s.xvfb} not found (apt-get install -y xvfb)"),
        "dbus": _row(dbus is not None, dbus or "dbus-daemon not found (apt-get install -y dbus)"),
        "atspi_launcher": _row(
            spi is not None,
            spi or "at-spi-bus-launcher not found (apt-get install -y at-spi2-core)",
        ),
        "chromium": _row(browser is not None, browser or chromium.INSTALL),
        "keeper_death_cleanup": _row(
            tool is not None,
            f"{tool} --pdeathsig" if tool else "no setpriv: a killed keeper leaves its display",
        ),
    }


async def live(book: Any, display: Display) -> dict[str, Row]:
    """What works on a running display."""
    rows: dict[str, Row] = {}
    started = time.monotonic()
    python = book.settings.python
    try:
        hello = await display.walker.call("hello", 10.0, call_ms=2000)
    except WalkerError as exc:
        if exc.kind == "unavailable":
            rows["walker_python"] = _row(False, f"{python}: {exc.reason}")
            rows["atspi_bus"] = _row(False, "not probed: the walker cannot run")
        else:
            rows["walker_python"] = _row(True, python)
            rows["atspi_bus"] = _row(False, f"{exc.kind}: {exc.reason}")
    else:
        rows["walker_python"] = _row(True, python)
        rows["atspi_bus"] = _row(
            True,
            f"{hello['a11y_bus'].split(',')[0]} · {hello['apps']} application(s) · "
            f"{(time.monotonic() - started) * 1000:.0f} ms",
        )
    ok, detail = await book.xtest(display)
    rows["xtest"] = _row(ok, detail)
    try:
        w, h = await display.x.run(5.0, lambda x: x.screen_size())
        await display.x.run(5.0, lambda x: x.grab(0, 0, 1, 1))
        import PIL

        rows["screenshot"] = _row(True, f"get_image on a {w}x{h} screen · Pillow {PIL.__version__}")
    except (XError, ImportError) as exc:
        rows["screenshot"] = _row(False, str(exc))
    return rows


async def probe_matrix(book: Any, ctx: VerbContext) -> tuple[dict[str, Any], str]:
    machine_rows = machine(book)
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
