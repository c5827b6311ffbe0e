"""Before and after one change: rows a (warm click and get title in the keeper), s (warm
snapshots in the keeper: form.html, its ``-i``, list.html?n=300's ``-i``), v (warm focus,
fill and get text by ref in the keeper), r (a stale ref refused by click, fill, type and get
in the keeper: this checkout against the baseline, no peer), b (the whole ``bay get title``
process — the native client and ``bay-py`` — against a bare Python start, ``python -c
pass``, with ``-S`` beside it, and agent-browser's ``get title``; wall time and the
command's own CPU) and c (cold first open) of RESULTS.md, for this checkout, a baseline
checkout (optional) and agent-browser, interleaved rep by rep in ONE run.

    .venv/bin/python bench/perf.py [--parts a,s,v,r,b,c] [--reps 20] [--cold-reps 4]
                                   [--baseline /path/to/other/checkout]

The order of the tools rotates every rep, so load from elsewhere on the machine (two cores
shared with test runs) hits each alike; the load average is printed with the medians. Prints a
block for a commit message and appends it to bench/RESULTS-perf.md (``BENCH_WRITE=0``: not).
Run bench/setup.sh first.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import click  # bench/click.py: a warm keeper of a checkout
import run  # bench/run.py: the process bookkeeping and peer setup

OUT = run.BENCH / "RESULTS-perf.md"
HEADER = """# Before and after, side by side (bench/perf.py)

Each block is one run: this checkout, a baseline checkout and agent-browser, interleaved rep
by rep (the order rotates). Rows a (in the keeper, one connection, vs agent-browser's whole
process), b (the whole `bay get title` process vs a bare Python start) and c (cold first open,
keeper or daemon spawn included) of RESULTS.md. The machine is shared with other test runs:
read the ratios, with the load average beside them.

"""


def rotate(tools: dict[str, Callable[[], float]], reps: int, warmup: int) -> dict[str, list[float]]:
    names = list(tools)
    out: dict[str, list[float]] = {n: [] for n in names}
    for i in range(warmup + reps):
        k = i % len(names)
        for name in names[k:] + names[:k]:
            t = tools[name]()
            if i >= warmup:
                out[name].append(t)
    return out


def report(title: str, samples: dict[str, list[float]], peer: str, loads: list[str]) -> str:
    med = {n: statistics.median(v) * 1000 for n, v in samples.items()}
    lines = [f"{title} (loadavg {' → '.join(loads)}):"]
    for n, m in med.items():
        ratio = "" if n == peer else f"  {m / med[peer]:.2f}× {peer}"
        lines.append(f"  {n:<22} {m:8.1f} ms{ratio}")
    return "\n".join(lines)


def ab_timer(b: run.Bench, home: Path, session: str) -> Callable[..., Callable[[], float]]:
    """``ab(*argv)``: a timed agent-browser command on the warm daemon of ``home``."""

    def ab(*argv: str) -> Callable[[], float]:
        def go() -> float:
            t, cp = b.ab(home, *argv, session=session, timeout=30)
            run.must(cp, "agent-browser " + " ".join(argv))
            return t

        return go

    return ab


def keeper_timer(k: click.Keeper, verb: str, args: dict[str, Any]) -> Callable[[], float]:
    """One request on the keeper's kept connection, timed."""

    def go() -> float:
        t0 = time.perf_counter()
        k.req(verb, args)
        return time.perf_counter() - t0

    return go


def measured(what: str, tools: dict[str, Callable[[], float]], reps: int) -> str:
    """The tools interleaved rep by rep (5 warm-up), reported against agent-browser with the
    load average before and after."""
    loads = [click.loadavg()]
    samples = rotate(tools, reps, 5)
    loads.append(click.loadavg())
    return report(what, samples, "agent-browser", loads)


def stop_all(b: run.Bench, keepers: dict[str, click.Keeper], ab_home: Path) -> None:
    for k in keepers.values():
        k.conn.close()
        b.bay_stop(k.home)
    b.ab_stop(ab_home)


def part_a(b: run.Bench, url: str, roots: dict[str, Path], reps: int) -> str:
    keepers = {label: click.Keeper(b, root, label, url) for label, root in roots.items()}
    ab_home = b.ab_home("perf-a")
    run.must(b.ab(ab_home, "open", url, session="bench-click")[1], "agent-browser open")
    snap = run.must(b.ab(ab_home, "snapshot", "-i", session="bench-click")[1], "ab snapshot")
    ab_ref = run.ref_of(snap, "checkbox")
    ab = ab_timer(b, ab_home, "bench-click")
    out = []
    for what, tools in (
        ("a click @ref, in keeper", {**{n: k.click for n, k in keepers.items()}}),
        (
            "a get title, in keeper",
            {n: keeper_timer(k, "get", {"what": "title"}) for n, k in keepers.items()},
        ),
    ):
        peer_argv = ("click", "@" + ab_ref) if "click" in what else ("get", "title")
        tools["agent-browser"] = ab(*peer_argv)
        out.append(measured(what, tools, reps))
    stop_all(b, keepers, ab_home)
    return "\n".join(out)


def part_s(b: run.Bench, url: str, roots: dict[str, Path], reps: int) -> str:
    """Warm snapshots in the keeper (one connection) vs agent-browser's whole process:
    ``snapshot`` and ``snapshot -i`` on form.html, then ``snapshot -i`` on list.html?n=300."""
    keepers = {label: click.Keeper(b, root, label, url) for label, root in roots.items()}
    ab_home = b.ab_home("perf-s")
    run.must(b.ab(ab_home, "open", url, session="bench-snap")[1], "agent-browser open")
    ab = ab_timer(b, ab_home, "bench-snap")

    out = []
    long_url = url.replace("/form.html", "/list.html?n=300")
    for what, args, page in (
        ("s snapshot form, in keeper", {}, url),
        ("s snapshot -i form, in keeper", {"interactive": True}, url),
        ("s snapshot -i list?n=300, in keeper", {"interactive": True, "limit": 0}, long_url),
    ):
        if page != url:
            for k in keepers.values():
                k.req("open", {"url": page})
            run.must(b.ab(ab_home, "open", page, session="bench-snap")[1], "agent-browser open")
        tools = {n: keeper_timer(k, "snapshot", args) for n, k in keepers.items()}
        tools["agent-browser"] = ab("snapshot", *(["-i"] if args.get("interactive") else []))
        out.append(measured(what, tools, reps))
    stop_all(b, keepers, ab_home)
    return "\n".join(out)


def part_v(b: run.Bench, url: str, roots: dict[str, Path], reps: int) -> str:
    """MiniWoB's element verbs after click, warm in the keeper (one connection) vs
    agent-browser's whole process, each by a ref of ``snapshot -i`` on form.html: ``focus``
    and ``fill`` of the first textbox, ``get text`` of the button; then the checkbox's click
    on the page just opened again (a ref's first click there)."""
    keepers = {label: click.Keeper(b, root, label, url) for label, root in roots.items()}
    ab_home = b.ab_home("perf-v")
    run.must(b.ab(ab_home, "open", url, session="bench-verbs")[1], "agent-browser open")
    ab_snap = run.must(b.ab(ab_home, "snapshot", "-i", session="bench-verbs")[1], "ab snapshot")
    ab = ab_timer(b, ab_home, "bench-verbs")
    snaps = {n: k.req("snapshot", {"interactive": True})["text"] for n, k in keepers.items()}

    def refs(text: str) -> dict[str, str]:
        return {role: "@" + run.ref_of(text, role) for role in ("textbox", "button")}

    mine, peer = {n: refs(t) for n, t in snaps.items()}, refs(ab_snap)
    out = []
    for what, verb, role, extra in (
        ("v focus @ref, in keeper", "focus", "textbox", {}),
        ("v fill @ref, in keeper", "fill", "textbox", {"text": "Ada"}),
        ("v get text @ref, in keeper", "get", "button", {"what": "text"}),
    ):
        tools = {
            n: keeper_timer(k, verb, {"target": mine[n][role], **extra}) for n, k in keepers.items()
        }
        words = ("get", "text") if verb == "get" else (verb,)
        tools["agent-browser"] = ab(
            *words, peer[role], *([extra["text"]] if verb == "fill" else [])
        )
        out.append(measured(what, tools, reps))

    # A click of a ref on a page just opened and snapshotted (MiniWoB's every episode): the
    # open and the snapshot untimed, the click timed.
    def fresh_click(k: click.Keeper) -> Callable[[], float]:
        def go() -> float:
            k.req("open", {"url": url})
            ref = run.ref_of(k.req("snapshot", {"interactive": True})["text"], "checkbox")
            t0 = time.perf_counter()
            k.req("click", {"target": "@" + ref})
            return time.perf_counter() - t0

        return go

    def ab_fresh_click() -> float:
        run.must(b.ab(ab_home, "open", url, session="bench-verbs")[1], "agent-browser open")
        snap = run.must(b.ab(ab_home, "snapshot", "-i", session="bench-verbs")[1], "ab snapshot")
        return ab("click", "@" + run.ref_of(snap, "checkbox"))()

    tools = {n: fresh_click(k) for n, k in keepers.items()}
    tools["agent-browser"] = ab_fresh_click
    out.append(measured("v click @ref after open + snapshot -i, in keeper", tools, reps))
    stop_all(b, keepers, ab_home)
    return "\n".join(out)


def part_r(b: run.Bench, url: str, roots: dict[str, Path], reps: int) -> str:
    """A stale ref refused, warm in the keeper (one connection): ``click``, ``fill``,
    ``type`` and ``get text`` of a ref of ``snapshot -i`` on form.html whose element the page
    then replaced (``document.body.innerHTML`` set again, untimed), each rep a fresh
    snapshot. The refusal (``ref_stale``) is what is timed; no peer (agent-browser's refs
    are its own). The checkouts are interleaved rep by rep."""
    keepers = {label: click.Keeper(b, root, label, url) for label, root in roots.items()}
    replace = {"js": "document.body.innerHTML = document.body.innerHTML; 1"}

    def stale(k: click.Keeper, verb: str, role: str, extra: dict[str, Any]) -> Callable[[], float]:
        def go() -> float:
            ref = run.ref_of(k.req("snapshot", {"interactive": True})["text"], role)
            k.req("eval", replace)
            t0 = time.perf_counter()
            said = k.conn.request(verb, {"target": "@" + ref, **extra}, k.session, 30.0)
            took = time.perf_counter() - t0
            if said.get("code") != "ref_stale":
                raise RuntimeError(f"{k.label} {verb}: {said.get('code')}, not ref_stale")
            return took

        return go

    out = []
    for what, verb, role, extra in (
        ("r click of a stale @ref, in keeper", "click", "checkbox", {}),
        ("r fill of a stale @ref, in keeper", "fill", "textbox", {"text": "Ada"}),
        ("r type of a stale @ref, in keeper", "type", "textbox", {"text": "Ada"}),
        ("r get text of a stale @ref, in keeper", "get", "button", {"what": "text"}),
    ):
        tools = {n: stale(k, verb, role, extra) for n, k in keepers.items()}
        loads = [click.loadavg()]
        samples = rotate(tools, reps, 5)
        loads.append(click.loadavg())
        out.append(report(what, samples, next(iter(tools)), loads))
    for k in keepers.values():
        k.conn.close()
        b.bay_stop(k.home)
    return "\n".join(out)


def timed_ok(argv: list[str], env: dict[str, str]) -> float:
    t, cp = run.timed(argv, env, 30)
    run.must(cp, " ".join(argv))
    return t


def with_cpu(go: Callable[[], float], cpu: list[float]) -> Callable[[], float]:
    """``go`` timed, its process's own CPU (user + system, of the waited child: not a
    keeper's or a daemon's) appended to ``cpu``."""

    def timed() -> float:
        before = run.children_cpu()
        t = go()
        cpu.append(run.children_cpu() - before)
        return t

    return timed


def part_b(b: run.Bench, url: str, roots: dict[str, Path], reps: int) -> str:
    """The whole ``bay get title`` process: the native client (issue 19) and the Python
    client it hands over to (``bay-py``), against a bare Python start and agent-browser's
    native client on its warm daemon; wall time and the command's own CPU."""
    tools: dict[str, Callable[[], float]] = {}
    cpu: dict[str, list[float]] = {}

    def add(name: str, go: Callable[[], float]) -> None:
        cpu[name] = []
        tools[name] = with_cpu(go, cpu[name])

    for label, root in roots.items():
        home = b.bay_home("perf-b")
        env = b.bay_env(home, "bench-b")
        bay_bin = str(root / ".venv" / "bin" / "bay")
        run.must(run.timed([bay_bin, "open", url], env)[1], f"{label}: bay open")
        add(f"{label} bay", functools.partial(timed_ok, [bay_bin, "get", "title"], env))
        py_bin = root / ".venv" / "bin" / "bay-py"
        if py_bin.exists():
            argv = [str(py_bin), "get", "title"]
            add(f"{label} bay-py", functools.partial(timed_ok, argv, env))
    # The floor is a bare start of the venv's interpreter (site included, as a console
    # script has it); `-S` beside it is the lean launcher's start (no site).
    for name, flags in (("python floor", []), ("python -S", ["-S"])):
        argv = [str(run.VENV_PY), *flags, "-c", "pass"]
        add(name, functools.partial(timed_ok, argv, run.clean_env()))
    ab_home = b.ab_home("perf-b")
    run.must(b.ab(ab_home, "open", url, session="bench-b")[1], "agent-browser open")
    add("agent-browser", ab_timer(b, ab_home, "bench-b")("get", "title"))
    loads = [click.loadavg()]
    samples = rotate(tools, reps, 5)
    loads.append(click.loadavg())
    b.ab_stop(ab_home)
    text = report("b whole process", samples, "agent-browser", loads)
    warm = len(cpu["agent-browser"]) - reps  # the warm-up's, dropped as rotate drops them
    lines = ["b its own CPU (user+sys of the command's process, median):"]
    for n, v in cpu.items():
        lines.append(f"  {n:<22} {statistics.median(v[warm:]) * 1000:8.1f} ms")
    return text + "\n" + "\n".join(lines)


def part_c(b: run.Bench, url: str, roots: dict[str, Path], reps: int) -> str:
    """Cold first open (a fresh home: the keeper's or the daemon's spawn included), and the
    CPU it cost: each tool's process trees (keeper or daemon, driver, browser) read
    :data:`run.CPU_SETTLE` s after the answer, by process kind, plus the client's own."""
    cpu: dict[str, list[dict[str, float]]] = {}

    def bay(label: str, root: Path) -> Callable[[], float]:
        cpu[f"{label} cold open"] = []

        def go() -> float:
            home = b.bay_home("perf-c")
            env = b.bay_env(home, "bench-cold")
            try:
                before = run.children_cpu()
                t, cp = run.timed([str(root / ".venv" / "bin" / "bay"), "open", url], env)
                client = run.children_cpu() - before
                run.must(cp, f"{label}: bay open (cold)")
                time.sleep(run.CPU_SETTLE)
                used = run.tree_cpu([], str(home), "BAY_HOME")
                cpu[f"{label} cold open"].append({**used, "client": client})
                return t
            finally:
                b.bay_stop(home)
                b.check_clean("a cold bay open")

        return go

    cpu["agent-browser"] = []

    def ab() -> float:
        home = b.ab_home("perf-c")
        try:
            before = run.children_cpu()
            t, cp = b.ab(home, "open", url, session="bench-cold")
            client = run.children_cpu() - before
            run.must(cp, "agent-browser open (cold)")
            time.sleep(run.CPU_SETTLE)
            used = run.tree_cpu(b.ab_daemons(home), str(home))
            cpu["agent-browser"].append({**used, "client": client})
            return t
        finally:
            b.ab_stop(home)
            b.check_clean("a cold agent-browser open")

    tools = {f"{label} cold open": bay(label, root) for label, root in roots.items()}
    tools["agent-browser"] = ab
    loads = [click.loadavg()]
    samples = rotate(tools, reps, 1)
    loads.append(click.loadavg())
    kept = {n: v[1:] for n, v in cpu.items()}  # the warm-up's dropped, as rotate drops it
    title = (
        f"c CPU per cold open (user+sys ms, {run.CPU_SETTLE:g} s after the answer, median by kind;"
        " client: the command's own process):"
    )
    return (
        report("c cold first open", samples, "agent-browser", loads)
        + "\n"
        + run.cpu_lines(title, kept)
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--parts", default="a,b,c")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--cold-reps", type=int, default=4)
    ap.add_argument("--baseline", type=Path, help="another checkout (with its .venv) to compare")
    opts = ap.parse_args()
    run.become_subreaper()
    from browserbay.demo.server import serve

    roots = {f"bay {click.commit(run.ROOT)}": run.ROOT}
    if opts.baseline:
        roots[f"base {click.commit(opts.baseline)}"] = opts.baseline
    work = Path(tempfile.mkdtemp(prefix="bb", dir="/tmp"))
    b = run.Bench(work)
    server, base = serve()
    url = f"{base}/form.html"
    parts: dict[str, Any] = {
        "a": part_a,
        "b": part_b,
        "c": part_c,
        "r": part_r,
        "s": part_s,
        "v": part_v,
    }
    blocks = [
        f"- {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {opts.reps} warm reps after 5 warm-up,"
        f" {opts.cold_reps} cold after 1 discarded, {' vs '.join(roots)}"
    ]
    try:
        for p in opts.parts.split(","):
            reps = opts.cold_reps if p == "c" else opts.reps
            blocks.append(parts[p](b, url, roots, reps))
            print(blocks[-1], flush=True)
    finally:
        b.stop_all()
        server.shutdown()
        server.server_close()
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    if os.environ.get("BENCH_WRITE", "1") != "0":
        if not OUT.exists():
            OUT.write_text(HEADER)
        with OUT.open("a") as f:
            f.write("\n".join([*blocks[:1], "```", *blocks[1:], "```"]) + "\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
