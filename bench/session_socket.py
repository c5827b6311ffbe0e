"""What a session socket costs on a warm verb, against the owner's socket, in one run.

``.venv/bin/python bench/session_socket.py`` starts one keeper under a fresh ``BAY_HOME``,
opens the bundled demo site's form.html as session ``bench``, grants that session a socket
(``bay session grant bench --socket …``, as the owner), then times the same warm verbs for
the same session and tab through both sockets, the two channels interleaved sample by sample
(their order alternating) so that load from elsewhere on the machine hits both alike:

- **reused**: one connection per channel, hello once, one request per sample (the keeper's
  own cost of the channel: its grant check on every frame);
- **new connection**: connect, hello, one request, close per sample — what the ``bay`` CLI
  does on every command (its Python start is not timed: the same on both channels).

Prints a table and rewrites ``bench/RESULTS-session-socket.md``: medians, p95 and the
difference of the medians (session − owner) in ms; the goal is ≤ 1 ms. It speaks the wire
protocol itself (docs/protocol.md). Not part of the test suite: a benchmark reports, it
never asserts. Knobs: ``BENCH_REPS`` (samples per verb and way, default 200),
``BENCH_KEEP=1`` keeps the home.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wire import Line  # bench/wire.py

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
BAY = str(Path(sys.executable).with_name("bay"))
CHROMIUM = "/usr/lib/chromium/chromium"
RESULTS = BENCH / "RESULTS-session-socket.md"
REPS = int(os.environ.get("BENCH_REPS", "200"))
WARMUP = 10
SESSION = "bench"


class Channel:
    """A channel's socket: a reused line, or a new one per sample."""

    def __init__(self, name: str, path: str):
        self.name, self.path = name, path
        self.line = Line(path, SESSION)

    def reused(self, verb: str, args: dict[str, Any]) -> None:
        self.line.request(verb, args)

    def fresh(self, verb: str, args: dict[str, Any]) -> None:
        line = Line(self.path, SESSION)
        try:
            line.request(verb, args)
        finally:
            line.close()


def bay(env: dict[str, str], *argv: str) -> str:
    cp = subprocess.run([BAY, *argv], env=env, capture_output=True, text=True, timeout=120)
    if cp.returncode != 0:
        raise RuntimeError(f"bay {' '.join(argv)}: {cp.stdout.strip()[-300:]} {cp.stderr[-300:]}")
    return cp.stdout


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[94]


def main() -> int:
    from browserbay.demo.server import serve
    from browserbay.paths import bay_paths

    server, site = serve()
    work = Path(tempfile.mkdtemp(prefix="bs", dir="/tmp"))
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(work),
        "BAY_HOME": str(work / "bay"),
        "BAY_SESSION": SESSION,
        "BAY_CHROMIUM_PATH": CHROMIUM,
    }
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    channels: list[Channel] = []
    samples: dict[tuple[str, str, str], list[float]] = {}
    try:
        bay(env, "open", f"{site}/form.html")
        owner_path = str(bay_paths(env).socket)
        sdir = work / "s"
        sdir.mkdir(mode=0o700)
        session_path = str(sdir / f"{SESSION}.sock")
        bay(env, "session", "grant", SESSION, "--socket", session_path, "--json")
        channels = [Channel("owner", owner_path), Channel("session", session_path)]
        cases: list[tuple[str, str, dict[str, Any]]] = [
            ("tab list", "tab", {}),
            ("get title", "get", {"what": "title"}),
        ]
        ways: dict[str, Callable[[Channel], Callable[[str, dict[str, Any]], None]]] = {
            "reused": lambda c: c.reused,
            "new connection": lambda c: c.fresh,
        }
        for name, verb, args in cases:
            for way, method in ways.items():
                for i in range(WARMUP + REPS):
                    for ch in channels if i % 2 else channels[::-1]:
                        t0 = time.perf_counter()
                        method(ch)(verb, args)
                        took = (time.perf_counter() - t0) * 1000
                        if i >= WARMUP:
                            samples.setdefault((name, way, ch.name), []).append(took)
    finally:
        for ch in channels:
            ch.line.close()
        with contextlib.suppress(Exception):
            bay(env, "keeper", "stop")
        server.shutdown()
        if os.environ.get("BENCH_KEEP") != "1":
            shutil.rmtree(work, ignore_errors=True)
    rows = []
    worst = 0.0
    for name, _verb, _args in cases:
        for way in ways:
            o, s = samples[(name, way, "owner")], samples[(name, way, "session")]
            diff = statistics.median(s) - statistics.median(o)
            worst = max(worst, diff)
            rows.append(
                f"| {name} | {way} | {statistics.median(o):.2f} ms ({p95(o):.2f}) | "
                f"{statistics.median(s):.2f} ms ({p95(s):.2f}) | {diff:+.2f} ms |"
            )
    load = os.getloadavg()[0]
    text = "\n".join(
        [
            "# A session socket's cost on a warm verb",
            "",
            f"`bench/session_socket.py`, {dt.date.today()}, commit {head}, {REPS} samples per "
            f"verb, way and channel after {WARMUP} warm-up, the channels interleaved (order "
            f"alternating); {os.cpu_count()} cores, load average {load:.1f} at the end; one "
            "keeper, one session (`bench`) and one tab (the demo site's form.html) reached "
            "through the owner's socket and through the session socket the owner granted it.",
            "",
            "| verb | connection | owner median (p95) | session socket median (p95) | "
            "session − owner (medians) |",
            "|---|---|---|---|---|",
            *rows,
            "",
            f"Goal: ≤ 1 ms extra. Worst difference of the medians in this run: {worst:+.2f} ms "
            f"({'met' if worst <= 1.0 else 'NOT met'}). *reused*: one connection per channel, "
            "one request per sample (the keeper's per-frame cost of the channel); *new "
            "connection*: connect, hello, request, close per sample, as the `bay` CLI does "
            "on each command (its ~100 ms Python start is the same on both channels and not "
            "timed).",
            "",
        ]
    )
    RESULTS.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
