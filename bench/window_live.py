"""Window live-view benchmark (a script, not a test): frames a viewer receives per second of
an animating GTK window (at two sizes), the keeper's CPU meanwhile, and input to the next
frame (a mouse press that repaints a still window).

    .venv/bin/python bench/window_live.py [--seconds 10] [--trials 40] [--out FILE]

A keeper of its own (a temporary BAY_HOME), our own Xvfb, bench/gtk_paint.py run with
Debian's /usr/bin/python3, and a raw WebSocket viewer speaking the live page's protocol
(cookie from the one-use ticket, same-origin Origin). Writes bench/WINDOW_LIVE.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from browserbay import procfs

REPO = Path(__file__).resolve().parents[1]
BAY = str(Path(sys.executable).with_name("bay"))
APP = str(REPO / "bench" / "gtk_paint.py")


class Keeper:
    def __init__(self) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="bay-bench-wl-", dir="/tmp"))
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("BAY_")}
        self.env.update(BAY_HOME=str(self.home), BAY_SESSION="bench-wl")

    def __call__(self, *args: str) -> dict[str, Any]:
        argv = [BAY, *args]
        if "--" in argv:
            argv.insert(argv.index("--"), "--json")
        else:
            argv.append("--json")
        p = subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=120)
        frame = json.loads(p.stdout)
        if not frame.get("ok"):
            raise SystemExit(f"bay {' '.join(args)}: {frame}")
        return dict(frame["data"])

    def stop(self) -> None:
        subprocess.run([BAY, "keeper", "stop"], env=self.env, capture_output=True, timeout=60)
        shutil.rmtree(self.home, ignore_errors=True)


def credential(url: str) -> tuple[str, str, str]:
    with urllib.request.urlopen(url, timeout=10) as answer:
        cookie = answer.headers["Set-Cookie"].split(";", 1)[0]
    page = url.split("?", 1)[0]
    origin = page.split("/v/", 1)[0]
    return "ws" + page[4:] + "ws", origin, cookie


cpu_seconds = procfs.cpu_seconds


async def connect(link: tuple[str, str, str]) -> Any:
    from websockets.asyncio.client import connect as ws_connect

    ws_url, origin, cookie = link
    return await ws_connect(
        ws_url,
        origin=origin,
        additional_headers={"Cookie": cookie},
        max_size=None,  # type: ignore[arg-type]
    )


async def recv(ws: Any, until: float) -> Any:
    """The next message, or None once ``until`` (monotonic) has passed: a still window
    sends nothing, and the benchmark must end anyway."""
    try:
        return await asyncio.wait_for(ws.recv(), max(0.01, until - time.monotonic()))
    except TimeoutError:
        return None


async def frame_rate(keeper: Keeper, handle: str, seconds: float, fps: float) -> dict[str, Any]:
    pid = int(keeper("keeper", "status")["pid"])
    ws = await connect(credential(keeper("live", handle)["url"]))
    async with ws:
        await ws.send(json.dumps({"t": "fps", "n": fps}))
        end = time.monotonic() + 1.5  # warm up
        while time.monotonic() < end:
            await recv(ws, end)
        frames, size = 0, 0
        cpu = cpu_seconds(pid)
        wall = time.monotonic()
        end = wall + seconds
        while time.monotonic() < end:
            message = await recv(ws, end)
            if isinstance(message, bytes):
                frames += 1
                size += len(message)
        wall = time.monotonic() - wall
        used = cpu_seconds(pid) - cpu
    return {
        "fps": frames / wall,
        "asked": fps,
        "keeper_cores": used / wall,
        "kib_per_frame": size / max(1, frames) / 1024,
    }


async def latency(keeper: Keeper, handle: str, trials: int) -> list[float]:
    ws = await connect(credential(keeper("live", handle)["url"]))
    out: list[float] = []
    async with ws:
        await ws.send(json.dumps({"t": "fps", "n": 60}))
        await ws.send(json.dumps({"t": "takeover"}))
        await asyncio.sleep(1.0)
        for _ in range(trials):
            while True:  # drain
                try:
                    await asyncio.wait_for(ws.recv(), 0.3)
                except TimeoutError:
                    break
            down = {"t": "mouse", "type": "down", "x": 0.5, "y": 0.5, "button": "left"}
            started = time.perf_counter()
            await ws.send(json.dumps(down))
            while True:
                message = await asyncio.wait_for(ws.recv(), 5)
                if isinstance(message, bytes):
                    out.append((time.perf_counter() - started) * 1000)
                    break
            await ws.send(json.dumps(dict(down, type="up")))
        await ws.send(json.dumps({"t": "handback"}))
        await asyncio.sleep(0.3)
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--out", default=str(REPO / "bench" / "WINDOW_LIVE.md"))
    args = parser.parse_args()
    keeper = Keeper()
    load_before = os.getloadavg()[0]
    rates: list[tuple[str, dict[str, Any]]] = []
    try:
        for size in ((400, 300), (1280, 760)):
            w = keeper("window", "open", "--", "/usr/bin/python3", APP, "animate", *map(str, size))
            geometry = "x".join(str(v) for v in w["geometry"][2:])
            for fps in (15.0, 5.0):
                got = asyncio.run(frame_rate(keeper, w["handle"], args.seconds, fps))
                rates.append((geometry, got))
            keeper("window", "close", w["handle"])
        w = keeper("window", "open", "--", "/usr/bin/python3", APP, "click")
        lat = asyncio.run(latency(keeper, w["handle"], args.trials))
        keeper("window", "close", w["handle"])
    finally:
        keeper.stop()
    load_after = os.getloadavg()[0]
    lines = [
        "# Window live view benchmark",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} by `bench/window_live.py` on {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}: our own Xvfb, "
        "`bench/gtk_paint.py` (GTK3, Debian's python3) whose text changes ~60 times a second "
        "(a moving block and a counter), one raw WebSocket viewer on loopback speaking the "
        "live page's protocol. "
        f"Load average {load_before:.1f} before, {load_after:.1f} after (other work shares "
        "these cores: numbers move with it).",
        "",
        "## Frames per second (an always-changing window)",
        "",
        "| window | asked fps | fps received | keeper CPU (cores) | KiB per frame |",
        "|---|---|---|---|---|",
    ]
    for geometry, r in rates:
        lines.append(
            f"| {geometry} | {r['asked']:g} | {r['fps']:.1f} | {r['keeper_cores']:.2f} | "
            f"{r['kib_per_frame']:.0f} |"
        )
    lines += [
        "",
        "The keeper grabs at most 15 times a second (`WINDOW_FPS`); a grab is python-xlib "
        "`get_image` of the window's rectangle plus a digest, and a changed picture is "
        "encoded to JPEG (quality 70) in a worker thread. A still window sends nothing.",
        "",
        "## Input to next frame",
        "",
        f"{len(lat)} mouse presses on a still window that repaints on press (after a "
        "takeover), from sending the input on the socket to receiving the next frame:",
        "",
        "| p50 | p95 | min | max | mean |",
        "|---|---|---|---|---|",
        f"| {pct(lat, 0.5):.1f} ms | {pct(lat, 0.95):.1f} ms | {min(lat):.1f} ms | "
        f"{max(lat):.1f} ms | {statistics.mean(lat):.1f} ms |",
        "",
        "After input the window is looked at at once and then 60 times a second for 0.3 s "
        "(`HURRY_FPS`, `HURRY_FOR`): the answer is the XTEST injection, the app's repaint, "
        "one grab, one JPEG encoding and one WebSocket send.",
        "",
    ]
    Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
