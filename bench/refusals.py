"""Refusals that cannot succeed, side by side (issue 19 item 4): how long each tool takes to
say so, and whether its answer says what would have worked.

    .venv/bin/python bench/refusals.py [--reps 2]

Four cases on pages served here: ``select`` of an option the ``<select>`` lacks, ``click``
of a selector that matches nothing, ``click`` of a ref that is not in the page, and
``click`` of a button a fixed overlay covers. Both tools run as whole CLI processes with
their daemons warm, interleaved rep by rep, each with its own default deadline (bay: 30 s).
"Names" says whether the refusal lists the options, the closest names or the cover. Writes
bench/RESULTS-refusals.md. Run bench/setup.sh first.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # bench/run.py: the process bookkeeping and peer setup

OUT = run.BENCH / "RESULTS-refusals.md"

SHOP = """<!doctype html><title>Shop</title>
<label>Size <select id=size>
  <option value=s>Small</option><option value=m>Medium</option><option value=l>Large</option>
</select></label>
<button id=save>Save changes</button> <button id=cancel>Cancel order</button>"""

COVERED = """<!doctype html><title>Covered</title>
<button id=buy>Buy now</button>
<div id=veil role=dialog aria-label="Cookie consent"
     style="position:fixed; inset:0; background:rgba(0,0,0,.4)">
  <button id=accept>Accept cookies</button>
</div>"""

PAGES = {"/shop": SHOP, "/covered": COVERED}

#: (case, page, argv, words a helpful answer holds: each word, or one of its |-alternatives)
CASES = [
    ("select a missing option", "/shop", ["select", "#size", "xl"], ["Small", "Large"]),
    ("click a selector matching nothing", "/shop", ["click", "#save-changes"], ["Save changes"]),
    ("click a ref not in the page", "/shop", ["click", "@e99"], ["Save changes"]),
    ("click a covered button", "/covered", ["click", "#buy"], ["Cookie consent|#accept"]),
]


def _names(said: str, words: list[str]) -> bool:
    return all(any(alt in said for alt in w.split("|")) for w in words)


def serve() -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            body = PAGES.get(self.path, "<title>404</title>").encode()
            self.send_response(200 if self.path in PAGES else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=2)
    opts = ap.parse_args()
    if not run.AB.exists():
        print("agent-browser is missing: run bench/setup.sh", file=sys.stderr)
        return 2
    run.become_subreaper()
    server, base = serve()
    work = Path(tempfile.mkdtemp(prefix="bench-refusals-"))
    b = run.Bench(work)
    bay_home, ab_home = b.bay_home("refusals"), b.ab_home("refusals")
    results: list[tuple[str, float, bool, float, bool, str, str]] = []
    load = [os.getloadavg()[0]]
    try:
        for name, page, argv, words in CASES:
            url = base + page
            run.must(b.bay(bay_home, "open", url, session="r")[1], "bay open")
            run.must(b.ab(ab_home, "open", url, session="r")[1], "agent-browser open")
            b.bay(bay_home, "snapshot", "-i", session="r")
            b.ab(ab_home, "snapshot", "-i", session="r")
            ours: list[float] = []
            peer: list[float] = []
            bay_said = ab_said = ""
            for i in range(opts.reps):
                order = [0, 1] if i % 2 == 0 else [1, 0]
                for side in order:
                    if side == 0:
                        t, cp = b.bay(bay_home, *argv, session="r", timeout=90)
                        ours.append(t)
                        bay_said = (cp.stdout + cp.stderr).strip()
                    else:
                        t, cp = b.ab(ab_home, *argv, session="r", timeout=90)
                        peer.append(t)
                        ab_said = (cp.stdout + cp.stderr).strip()
            o, p = statistics.median(ours), statistics.median(peer)
            results.append(
                (
                    name,
                    o,
                    _names(bay_said, words),
                    p,
                    _names(ab_said, words),
                    bay_said.splitlines()[0][:160] if bay_said else "",
                    ab_said.splitlines()[0][:160] if ab_said else "",
                )
            )
            load.append(os.getloadavg()[0])
    finally:
        b.stop_all()
        server.shutdown()
    lines = [
        f"## {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {opts.reps} reps, "
        f"loadavg {min(load):.1f}–{max(load):.1f}",
        "",
        "| case | bay | names what works | agent-browser | names what works | ratio |",
        "|---|---|---|---|---|---|",
    ]
    for name, o, on, p, pn, _, _ in results:
        lines.append(
            f"| {name} | {o * 1000:.0f} ms | {'yes' if on else 'no'} | {p * 1000:.0f} ms | "
            f"{'yes' if pn else 'no'} | {o / p:.2f}× |"
        )
    lines += ["", "First line of each answer (last rep):", ""]
    for name, *_, bs, abs_ in results:
        lines += [f"- {name}", f"  - bay: `{bs}`", f"  - agent-browser: `{abs_}`"]
    text = "\n".join(lines) + "\n"
    head = (
        "# Refusals that cannot succeed, side by side (bench/refusals.py)\n\n"
        "Whole CLI processes, daemons warm, interleaved. agent-browser refuses a selector that "
        "matches nothing and a covered element at once; bay gives an element the page is about "
        "to add 1 s and an overlay 0.5 s to clear (browserbay.keeper.nearest: ABSENT_WAIT, "
        "COVER_WAIT) — most of its time in those rows. A ref is known absent at once on both.\n\n"
    )
    old = OUT.read_text() if OUT.exists() else head
    OUT.write_text(old.rstrip("\n") + "\n\n" + text if old != head else head + text)
    print(text)
    for note in b.notes:
        print("note:", note)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
