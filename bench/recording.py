"""Recording's cost on a verb (bench/RESULTS-recording.md): a warm verb's latency in the keeper
with and without a `bay record` running on the same tab, side by side in ONE run.

    .venv/bin/python bench/recording.py [--rounds 8] [--per 6] [--format webm]

One keeper, one session on the demo's animated page (live.html: the screencast sends frames
all the time, the recording's worst case). Each round times ``--per`` clicks and ``--per``
``get title`` with no recording, then starts one (``record start``), lets it settle 1 s, times
the same verbs again, and stops it; the order of the two phases alternates every round. The
verbs are timed inside one connection (no process start), as bench/click.py does. The
keeper's own CPU (its process: the encoder thread is in it) is read from /proc over each
phase. loadavg is read before, every round and after.
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
import run  # bench/run.py: the process bookkeeping

OUT = run.BENCH / "RESULTS-recording.md"
HEADER = """# Recording's cost on a verb (bench/recording.py)

Each block is one run: warm verbs timed in the keeper (one connection) on the demo's animated
page, with and without `bay record` running on the same tab, phases alternating round by
round. `keeper CPU` is the keeper process's CPU time over the phase divided by its wall time
(the encoder thread runs in the keeper; Chromium's own screencast cost is not in it).

"""


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def commit() -> str:
    git = ["git", "-C", str(run.ROOT)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run([*git, "status", "--porcelain", "-uno"], capture_output=True, text=True)
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


class Keeper:
    def __init__(self, b: run.Bench, url: str) -> None:
        self.home = b.bay_home("rec")
        self.session = {"id": "bench-rec", "origin": "env"}
        env = b.bay_env(self.home, "bench-rec")
        bay = str(run.ROOT / ".venv" / "bin" / "bay")
        run.must(run.timed([bay, "open", url], env)[1], "bay open")
        self.conn = b.bay_conn(self.home)
        self.pid = int(self.req("keeper", {"action": "status"})["data"]["pid"])

    def req(self, verb: str, args: dict[str, Any]) -> dict[str, Any]:
        answer: dict[str, Any] = self.conn.request(verb, args, self.session, 30.0)
        if not answer.get("ok"):
            raise RuntimeError(f"{verb}: {answer.get('code')}: {answer.get('message')}")
        return answer

    def timed(self, verb: str, args: dict[str, Any]) -> float:
        t0 = time.perf_counter()
        self.req(verb, args)
        return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--per", type=int, default=6)
    ap.add_argument("--format", choices=("webm", "mp4"), default="webm")
    opts = ap.parse_args()
    run.become_subreaper()
    from browserbay.demo.server import serve

    work = Path(tempfile.mkdtemp(prefix="bbr", dir="/tmp"))
    b = run.Bench(work)
    server, base = serve()
    loads = [loadavg()]
    verbs = {
        "click": ("click", {"target": "#cell-2-1"}),
        "get title": ("get", {"what": "title"}),
    }
    samples: dict[tuple[str, bool], list[float]] = {
        (v, r): [] for v in verbs for r in (False, True)
    }
    cpu: dict[bool, list[float]] = {False: [], True: []}
    made: list[dict[str, Any]] = []
    try:
        k = Keeper(b, f"{base}/live.html")
        for verb, args in verbs.values():  # warm-up
            for _ in range(3):
                k.timed(verb, args)

        def phase(recording: bool, i: int) -> None:
            if recording:
                path = work / f"r{i}.{opts.format}"
                k.req("record", {"action": "start", "path": str(path)})
                time.sleep(1.0)
            c0, w0 = cpu_s(k.pid), time.monotonic()
            for _ in range(opts.per):
                for name, (verb, args) in verbs.items():
                    samples[(name, recording)].append(k.timed(verb, args))
            cpu[recording].append((cpu_s(k.pid) - c0) / (time.monotonic() - w0))
            if recording:
                made.append(k.req("record", {"action": "stop"})["data"])

        for i in range(opts.rounds):
            for recording in (False, True) if i % 2 == 0 else (True, False):
                phase(recording, i)
            loads.append(loadavg())
    finally:
        b.stop_all()
        server.shutdown()
        server.server_close()
        shutil.rmtree(work, ignore_errors=True)
    loads.append(loadavg())

    def med(v: list[float]) -> float:
        return statistics.median(v) * 1000

    def p90(v: list[float]) -> float:
        return sorted(v)[int(len(v) * 0.9)] * 1000

    n = opts.rounds * opts.per
    frames = sum(m["frames"] for m in made)
    dropped = sum(m["dropped"] for m in made)
    seconds = sum(m["seconds"] for m in made)
    lines = [
        f"- {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, bay = {commit()}, {opts.format}, "
        f"{opts.rounds} rounds × {opts.per} of each verb per phase ({n} samples a cell), "
        f"loadavg {' → '.join(loads)}",
    ]
    for name in verbs:
        off, on = samples[(name, False)], samples[(name, True)]
        lines.append(
            f"  - {name}: without {med(off):.1f} ms (p90 {p90(off):.1f}), with a recording "
            f"{med(on):.1f} ms (p90 {p90(on):.1f}): {med(on) / med(off):.2f}×"
        )
    lines.append(
        f"  - keeper CPU: without {statistics.median(cpu[False]) * 100:.0f} %, with "
        f"{statistics.median(cpu[True]) * 100:.0f} % of a core; the recordings encoded "
        f"{frames} frames in {seconds:.0f} s ({frames / max(seconds, 0.1):.1f} fps), "
        f"{dropped} dropped (latest wins)"
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
