"""What the action trace costs an action (a script, not a test).

    .venv/bin/python bench/trace.py [--n 20] [--pause 0.2] [--rounds 2] [--out FILE]

Per round, two keepers of their own (temporary BAY_HOMEs), one with the trace plugin and one
with ``BAY_DISABLE_PLUGINS=trace``, each run ``click``, ``fill`` and ``press`` ``--n`` times
on the demo site's /live.html?still through the socket API (no Python start per verb), with
``--pause`` seconds between verbs (an agent's think time, during which the deferred
after-frame is taken). The figure is the time to the answer, p50 and p90, with the load
average beside it: on a shared machine, read the two columns of one round together.
Writes bench/RESULTS-trace.md unless --out says otherwise.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
BAY = str(Path(sys.executable).with_name("bay"))

from browserbay import client  # noqa: E402
from browserbay.demo.server import serve  # noqa: E402
from browserbay.paths import bay_paths  # noqa: E402

VERBS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("click", {"target": "#cell-1-0"}),
    ("fill", {"target": "#name", "text": "abc"}),
    ("press", {"key": "Shift"}),
)


def _keeper(base: str, traced: bool, n: int, pause: float) -> dict[str, tuple[float, float]]:
    home = tempfile.mkdtemp(prefix="bay-bt-", dir="/tmp")
    for key in [k for k in os.environ if k.startswith("BAY_")]:
        del os.environ[key]
    os.environ["BAY_HOME"] = home
    if traced:
        os.environ["BAY_TRACE"] = "1"
    else:
        os.environ["BAY_DISABLE_PLUGINS"] = "trace"
    paths = bay_paths({"BAY_HOME": home})

    def call(verb: str, **args: Any) -> dict[str, Any]:
        session = {"id": "bench", "origin": "api"}
        return client.call(verb, args, session=session, timeout=30, paths=paths)

    try:
        assert call("open", url=f"{base}/live.html?still")["ok"]
        out = {}
        for verb, args in VERBS:
            times = []
            for _ in range(n):
                time.sleep(pause)
                started = time.perf_counter()
                answer = call(verb, **args)
                times.append((time.perf_counter() - started) * 1000)
                assert answer["ok"], answer
            times.sort()
            out[verb] = (times[len(times) // 2], times[int(len(times) * 0.9)])
        return out
    finally:
        subprocess.run([BAY, "keeper", "stop"], env=dict(os.environ), capture_output=True)
        time.sleep(1)
        shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--pause", type=float, default=0.2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", default=str(REPO / "bench" / "RESULTS-trace.md"))
    opts = ap.parse_args()
    server, base = serve()
    rows = []
    try:
        for r in range(1, opts.rounds + 1):
            for traced in (False, True):
                load = os.getloadavg()[0]
                got = _keeper(base, traced, opts.n, opts.pause)
                cells = " | ".join(f"{got[v][0]:.0f} / {got[v][1]:.0f}" for v, _ in VERBS)
                label = "trace on" if traced else "trace off"
                rows.append(f"| {r} | {label} | {cells} | {load:.1f} |")
                print(rows[-1], flush=True)
    finally:
        server.shutdown()
    md = [
        "# What the action trace costs an action",
        "",
        f"`bench/trace.py --n {opts.n} --pause {opts.pause} --rounds {opts.rounds}` · "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} · {os.cpu_count()} cores, "
        f"Python {platform.python_version()} · headless Chromium, 1280×720",
        "",
        "Time to the answer through the socket API, ms, p50 / p90, with the 1-minute load "
        "average when the keeper started. See docs/trace.md#cost.",
        "",
        "| round | keeper | click | fill | press | load |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
    ]
    Path(opts.out).write_text("\n".join(md))
    print(f"wrote {opts.out}")


if __name__ == "__main__":
    main()
