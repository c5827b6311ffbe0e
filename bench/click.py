"""The warm ``click`` row, side by side: this checkout's keeper, a baseline checkout's keeper
(optional) and agent-browser, interleaved rep by rep in ONE run, reported as ratios.

    .venv/bin/python bench/click.py [--reps 30] [--baseline /path/to/other/checkout]

browserbay is timed inside one connection (``conn.request``, as row a of RESULTS.md);
agent-browser is its whole CLI process, its daemon warm; the clicked element is the form's
checkbox, by ref. The order of the tools rotates every rep; the load average is read before
and after every block of 10 reps. Writes bench/RESULTS-click.md. Run bench/setup.sh first.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # bench/run.py: the process bookkeeping and peer setup

OUT = run.BENCH / "RESULTS-click.md"
HEADER = """# Warm click, side by side (bench/click.py)

Each block is one run: this checkout's keeper, the baseline checkout's keeper (when given) and
agent-browser, interleaved rep by rep (the order rotates), the form's checkbox clicked by ref.
browserbay is timed in the keeper (one connection, no process start); agent-browser is its
whole CLI process with its daemon warm. loadavg is read before, every 10 reps and after.

"""


class Keeper:
    """One warm keeper of a checkout (its own .venv's ``bay``), on form.html."""

    def __init__(self, b: run.Bench, root: Path, label: str, url: str) -> None:
        self.b, self.label = b, label
        self.bay_bin = root / ".venv" / "bin" / "bay"
        self.home = b.bay_home(label)
        self.session = {"id": "bench-click", "origin": "env"}
        env = b.bay_env(self.home, "bench-click")
        run.must(run.timed([str(self.bay_bin), "open", url], env)[1], f"{label}: bay open")
        self.conn = b.bay_conn(self.home)
        snap = self.req("snapshot", {"interactive": True})["text"]
        self.ref = run.ref_of(snap, "checkbox")

    def req(self, verb: str, args: dict[str, Any]) -> dict[str, Any]:
        answer: dict[str, Any] = self.conn.request(verb, args, self.session, 30.0)
        if not answer.get("ok"):
            raise RuntimeError(
                f"{self.label} {verb}: {answer.get('code')}: {answer.get('message')}"
            )
        return answer

    def click(self) -> float:
        t0 = time.perf_counter()
        self.req("click", {"target": "@" + self.ref})
        return time.perf_counter() - t0


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def commit(root: Path) -> str:
    """The checkout's commit (``+dirty`` when it has changes), for the record."""
    git = ["git", "-C", str(root)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run([*git, "status", "--porcelain", "-uno"], capture_output=True, text=True)
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--baseline", type=Path, help="another checkout (with its .venv) to compare")
    opts = ap.parse_args()
    run.become_subreaper()
    from browserbay.demo.server import serve

    work = Path(tempfile.mkdtemp(prefix="bb", dir="/tmp"))
    b = run.Bench(work)
    server, base = serve()
    url = f"{base}/form.html"
    loads = [loadavg()]
    samples: dict[str, list[float]] = {}
    try:
        tools: dict[str, Any] = {"bay": Keeper(b, run.ROOT, "bay", url).click}
        if opts.baseline:
            tools["bay baseline"] = Keeper(b, opts.baseline, "baseline", url).click
        ab_home = b.ab_home("click")
        run.must(b.ab(ab_home, "open", url, session="bench-click")[1], "agent-browser open")
        snap = run.must(b.ab(ab_home, "snapshot", "-i", session="bench-click")[1], "ab snapshot")
        ab_ref = run.ref_of(snap, "checkbox")

        def ab_click() -> float:
            t, cp = b.ab(ab_home, "click", "@" + ab_ref, session="bench-click", timeout=30)
            run.must(cp, "agent-browser click")
            return t

        tools["agent-browser"] = ab_click
        names = list(tools)
        samples = {n: [] for n in names}
        for i in range(opts.warmup + opts.reps):
            k = i % len(names)
            for name in names[k:] + names[:k]:
                t = tools[name]()
                if i >= opts.warmup:
                    samples[name].append(t)
            if (i + 1) % 10 == 0:
                loads.append(loadavg())
    finally:
        b.stop_all()
        server.shutdown()
        server.server_close()
        shutil.rmtree(work, ignore_errors=True)
    loads.append(loadavg())

    med = {n: statistics.median(v) * 1000 for n, v in samples.items()}
    p90 = {n: sorted(v)[int(len(v) * 0.9)] * 1000 for n, v in samples.items()}
    peer = med["agent-browser"]
    checkouts = f"bay = {commit(run.ROOT)}" + (
        f", bay baseline = {commit(opts.baseline)}" if opts.baseline else ""
    )
    lines = [
        f"- {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {opts.reps} reps after {opts.warmup}"
        f" warm-up, {checkouts}, loadavg {' → '.join(loads)}",
    ]
    for n in samples:
        lines.append(
            f"  - {n}: median {med[n]:.1f} ms, p90 {p90[n]:.1f} ms, ratio to agent-browser"
            f" {med[n] / peer:.2f}×"
        )
    text = "\n".join(lines)
    print(text)
    if os.environ.get("BENCH_WRITE", "1") != "0":
        if not OUT.exists():
            OUT.write_text(HEADER)
        with OUT.open("a") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
