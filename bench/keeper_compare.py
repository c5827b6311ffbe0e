"""In-keeper verb times of this checkout side by side with another revision, in one run.

``.venv/bin/python bench/keeper_compare.py [--base REV]`` (default REV: ``BENCH_BASE`` or
``main~1``) clones REV into ``bench/.work/base-<sha>`` (once), builds its venv with its own
``scripts/setup.sh``, then starts one keeper from each checkout under its own ``BAY_HOME`` and
times the same verbs on the same demo page through each keeper's socket (hello once, then one
request per sample: no process start is timed), then times cold first opens (a ``bay open``
process on a fresh home: keeper spawn and start, browser launch, page load). The two sides
are interleaved sample by sample so that load from elsewhere on the machine hits both alike.
Prints a table and rewrites ``bench/RESULTS-keeper.md``; ratios are this checkout over the
base (``< 1`` is faster).

It speaks the wire protocol itself (docs/protocol.md) so that neither side's client is timed
against the other's keeper. Not part of the test suite: a benchmark reports, it never asserts.
Knobs: ``BENCH_REPS`` (samples per verb, default 40), ``BENCH_COLD_REPS`` (default 5),
``BENCH_KEEP=1`` keeps the homes.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from wire import Line  # bench/wire.py

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
CHROMIUM = "/usr/lib/chromium/chromium"
RESULTS = BENCH / "RESULTS-keeper.md"
REPS = int(os.environ.get("BENCH_REPS", "40"))
COLD_REPS = int(os.environ.get("BENCH_COLD_REPS", "5"))
WARMUP = 5


def git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def base_checkout(rev: str) -> Path:
    """A clone of ``rev`` with its own venv, made once and reused."""
    sha = git("rev-parse", "--verify", rev + "^{commit}")
    where = BENCH / ".work" / f"base-{sha[:12]}"
    if not (where / ".venv" / "bin" / "bay").exists():
        shutil.rmtree(where, ignore_errors=True)
        where.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", str(ROOT), str(where)], check=True)
        subprocess.run(["git", "checkout", "-q", sha], cwd=where, check=True)
        subprocess.run(["scripts/setup.sh"], cwd=where, check=True, stdout=subprocess.DEVNULL)
    return where


class Side:
    """One checkout's keeper, reached through its socket."""

    def __init__(self, name: str, checkout: Path, home: Path):
        self.name, self.checkout, self.home = name, checkout, home
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "BAY_HOME": str(home / "bay"),
            "BAY_SESSION": "bench",
            "BAY_CHROMIUM_PATH": CHROMIUM,
        }
        self.line: Line | None = None

    def cold_open(self, url: str, home: Path) -> float:
        """Seconds for ``bay open`` on a fresh home: the keeper's spawn and start, its
        browser's launch and the page's load; the keeper is stopped afterwards."""
        fresh = Side(self.name, self.checkout, home)
        home.mkdir()
        t0 = time.perf_counter()
        fresh.bay("open", url)
        took = time.perf_counter() - t0
        fresh.stop()
        return took

    def bay(self, *argv: str) -> str:
        cp = subprocess.run(
            [str(self.checkout / ".venv" / "bin" / "bay"), *argv],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if cp.returncode != 0:
            raise RuntimeError(f"{self.name}: bay {' '.join(argv)}: {cp.stderr.strip()[-400:]}")
        return cp.stdout

    def connect(self) -> None:
        path = subprocess.run(
            [
                str(self.checkout / ".venv" / "bin" / "python"),
                "-c",
                "import os; from browserbay.paths import bay_paths; "
                "print(bay_paths(dict(os.environ)).socket)",
            ],
            env=self.env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        self.line = Line(path, "bench", name=self.name)

    def request(self, verb: str, args: dict[str, Any]) -> dict[str, Any]:
        assert self.line is not None
        return self.line.request(verb, args)

    def stop(self) -> None:
        if self.line is not None:
            self.line.close()
        with contextlib.suppress(Exception):
            self.bay("keeper", "stop")


def ref(text: str, role: str) -> str:
    for line in text.splitlines():
        if f"{role} " in line and " @" in line:
            return "@" + re.findall(r" @(\w+)", line)[0]
    raise RuntimeError(f"no {role} in the snapshot")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default=os.environ.get("BENCH_BASE", "main~1"))
    opts = ap.parse_args()
    base = base_checkout(opts.base)
    head_sha, base_sha = git("rev-parse", "--short", "HEAD"), git("rev-parse", "--short", opts.base)

    from browserbay.demo.server import serve

    server, site = serve()
    work = Path(tempfile.mkdtemp(prefix="bk", dir="/tmp"))
    sides = [Side(f"base {base_sha}", base, work / "b"), Side(f"head {head_sha}", ROOT, work / "h")]
    samples: dict[str, dict[str, list[float]]] = {}
    try:
        refs = []
        for side in sides:
            side.home.mkdir()
            side.bay("open", f"{site}/form.html")
            side.connect()
            snap = side.request("snapshot", {"interactive": True})["text"]
            refs.append((ref(snap, "checkbox"), ref(snap, "textbox")))
        cases: list[tuple[str, str, Any]] = [
            ("get title", "get", lambda r: {"what": "title"}),
            ("snapshot", "snapshot", lambda r: {}),
            ("snapshot -i", "snapshot", lambda r: {"interactive": True}),
            ("click @ref (checkbox)", "click", lambda r: {"target": r[0]}),
            ("fill @ref", "fill", lambda r: {"target": r[1], "text": "Ada"}),
            ("eval", "eval", lambda r: {"js": "1 + 1"}),
            ("tab list", "tab", lambda r: {}),
            ("status", "status", lambda r: {}),
        ]
        for name, verb, args in cases:
            per = samples.setdefault(name, {s.name: [] for s in sides})
            for i in range(WARMUP + REPS):
                pairs = list(zip(sides, refs, strict=True))
                for side, r in pairs if i % 2 else pairs[::-1]:
                    t0 = time.perf_counter()
                    side.request(verb, args(r))
                    if i >= WARMUP:
                        per[side.name].append((time.perf_counter() - t0) * 1000)
        for side in sides:  # cold starts run with nothing else of ours running
            side.stop()
        cold = samples.setdefault("cold first open", {s.name: [] for s in sides})
        for i in range(COLD_REPS):
            for side in sides if i % 2 else sides[::-1]:
                took = side.cold_open(f"{site}/form.html", work / f"cold-{i}-{side.home.name}")
                cold[side.name].append(took * 1000)
    finally:
        for side in sides:
            side.stop()
        server.shutdown()
        if os.environ.get("BENCH_KEEP", "") in ("", "0"):
            shutil.rmtree(work, ignore_errors=True)

    header = f"| verb | base {base_sha} median (p90) | head {head_sha} median (p90) | head/base |"
    lines = [header, "|---|---|---|---|"]
    for name, per in samples.items():
        b, h = per[sides[0].name], per[sides[1].name]
        bm, hm = statistics.median(b), statistics.median(h)
        bp, hp = (statistics.quantiles(x, n=10)[-1] if len(x) > 1 else x[0] for x in (b, h))
        cells = f"{bm:.1f} ms ({bp:.1f}) | {hm:.1f} ms ({hp:.1f}) | {hm / bm:.2f}×"
        lines.append(f"| {name} | {cells} |")
    table = "\n".join(lines)
    print(table)
    RESULTS.write_text(
        "# In-keeper verb times: this checkout against a base revision\n\n"
        f"`bench/keeper_compare.py --base {opts.base}`, {dt.date.today()}, {REPS} samples per "
        f"verb per side after {WARMUP} warm-up, interleaved; {os.cpu_count()} cores; one "
        "keeper per side on the bundled demo site's form.html, timed through the socket; "
        f"cold first open: {COLD_REPS} `bay open` processes per side on a fresh home.\n\n"
        + table
        + "\n"
    )
    print(f"\nwrote {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
