"""Side-by-side benchmarks: browserbay against agent-browser, on the same local pages.

Run ``bench/run.sh`` (installs agent-browser into bench/ first), or, once set up,
``.venv/bin/python bench/run.py``. One run measures everything, prints one table and
rewrites ``bench/RESULTS.md``. Not part of the test suite.

  a. warm verb latency: browserbay in the keeper, timed through the socket with no process
     start (``client.connect()`` once, then ``conn.request``), against agent-browser's
     whole process for the same command on the same page (form.html)
  b. the whole ``bay get title`` process (warm keeper) against a bare
     ``python -c "import socket,json"`` from the same venv
  c. cold first ``open`` of a loaded page, keeper/daemon spawn included
  d. PSS of the whole process tree with 8 concurrent isolated sessions
  e. snapshot size in characters, and whether every interactive element carries a ref
  f. the MCP tool list (``bay mcp``'s tools/list JSON) against ``@playwright/mcp``'s at
     equal coverage (the capability rows both offer), no browser started

Everything it starts runs under its own ``BAY_HOME`` / ``HOME`` in one /tmp/bb* directory and is
stopped before the next measurement (and in ``finally``). The script makes itself a child
subreaper, so every process its tools daemonize stays its descendant: that is how it checks
that nothing is left running between repetitions.

Environment knobs (for quick trial runs only; RESULTS.md records what was used):
``BENCH_REPS`` (warm repetitions, default 30), ``BENCH_COLD_REPS`` (default 5),
``BENCH_SESSIONS`` (default 8), ``BENCH_KEEP=1`` keeps the /tmp/bb* directory for inspection,
``BENCH_ONLY=warm,cold`` runs only those steps (of warm, cold, components, memory, mcp) and
prints the table without rewriting RESULTS.md (the before/after of one change).
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime as dt
import functools
import http.server
import importlib.metadata
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from browserbay import procfs

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
VENV_PY = ROOT / ".venv" / "bin" / "python"
BAY = ROOT / ".venv" / "bin" / "bay"
AB = BENCH / "node_modules" / "agent-browser" / "bin" / "agent-browser-linux-x64"
CHROMIUM = "/usr/lib/chromium/chromium"
AB_ARGS = (
    "--no-sandbox,--disable-background-networking,--disable-component-update,"
    "--disable-sync,--no-first-run,--disable-quic"
)
RESULTS = BENCH / "RESULTS.md"

N_WARM = int(os.environ.get("BENCH_REPS", "30"))
N_WARMUP = 5
N_COLD = int(os.environ.get("BENCH_COLD_REPS", "5"))
N_SESSIONS = int(os.environ.get("BENCH_SESSIONS", "8"))
ONLY = frozenset(x for x in os.environ.get("BENCH_ONLY", "").split(",") if x)
SETTLE = 3.0  # seconds a set of open pages gets before its memory is read
STOP_WAIT = 30.0  # seconds every started process gets to exit after being asked
#: Seconds after a cold open's answer before its process trees' CPU is read (the page's
#: load ends; what the browser does idle after it is not the open's).
CPU_SETTLE = 0.3

ROLES = ("link", "button", "textbox", "checkbox", "combobox")
INTERACTIVE = frozenset(
    {*ROLES, "searchbox", "radio", "listbox", "option", "menuitem", "tab", "switch", "slider"}
    | {"spinbutton", "treeitem", "menuitemcheckbox", "menuitemradio"}
)
DOM_COUNTS_JS = """(() => {
  const q = s => document.querySelectorAll(s).length;
  return {
    link: q('a[href]'),
    button: q('button, input[type=submit], input[type=button], input[type=reset]'),
    textbox: q('input:not([type]), input[type=text], input[type=email], input[type=tel],'
      + ' input[type=url], textarea'),
    checkbox: q('input[type=checkbox]'),
    combobox: q('select:not([multiple])'),
  };
})()"""

# A node's line: ``- role …`` in a tree, ``role …`` in bay's interactive list (no dash).
_LINE = re.compile(r"^\s*(?:- )?(?P<role>[a-z]+)\b(?P<rest>.*)$")
# A ref as agent-browser shows it (``[ref=e5]``, ``[level=1, ref=e5]``) or as bay does (``@e5``).
_REF = re.compile(r"(?:\bref=|(?<= )@)(?P<ref>(?:f\d+)?[ec]\d+)\b")


# -- processes ------------------------------------------------------------------------------


def become_subreaper() -> bool:
    """PR_SET_CHILD_SUBREAPER: daemons our tools start re-parent to us, not to init."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def reap() -> None:
    """Collect exited orphans (we are their subreaper). Only called between steps, when no
    subprocess.run() is waiting on a child of its own."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


class Proc:
    __slots__ = ("cmd", "pid", "ppid", "runs")

    def __init__(self, pid: int, ppid: int, runs: bool, cmd: list[str]):
        self.pid, self.ppid, self.runs, self.cmd = pid, ppid, runs, cmd

    @property
    def exe(self) -> str:
        if not self.cmd:
            return "?"
        # Chromium's children rewrite their title: one string, arguments joined by spaces.
        first = self.cmd[0].split(" --", 1)[0] if len(self.cmd) == 1 else self.cmd[0]
        return os.path.basename(first)


def proc_table() -> dict[int, Proc]:
    """One snapshot of the process table (browserbay.procfs's reading of it)."""
    table: dict[int, Proc] = {}
    for pid in procfs.pids():
        st = procfs.stat(pid)
        if st is not None:
            table[pid] = Proc(pid, st.ppid, st.runs, procfs.argv(pid))
    return table


def live(p: Proc) -> bool:
    return p.runs


def descendants(roots: Iterable[int], table: dict[int, Proc]) -> set[int]:
    children: dict[int, list[int]] = {}
    for p in table.values():
        children.setdefault(p.ppid, []).append(p.pid)
    out: set[int] = set()
    todo = [r for r in roots if r in table]
    while todo:
        pid = todo.pop()
        if pid in out:
            continue
        out.add(pid)
        todo.extend(children.get(pid, ()))
    return out


def my_descendants() -> set[int]:
    table = proc_table()
    return {p for p in descendants([os.getpid()], table) if live(table[p])} - {os.getpid()}


def alive(pids: Iterable[int]) -> set[int]:
    table = proc_table()
    return {p for p in pids if p in table and live(table[p])}


def wait_gone(pids: set[int], timeout: float) -> set[int]:
    """Wait (bounded) until none of ``pids`` runs; returns those still running."""
    end = time.monotonic() + timeout
    left = alive(pids)
    while left and time.monotonic() < end:
        time.sleep(0.05)
        reap()
        left = alive(left)
    return left


def end_pids(pids: set[int], why: str, notes: list[str]) -> None:
    """Last resort for processes that did not exit when asked: SIGTERM, then SIGKILL."""
    left = alive(pids)
    if not left:
        return
    table = proc_table()
    names = sorted({table[p].exe for p in left if p in table})
    notes.append(f"{why}: {len(left)} process(es) ({', '.join(names)}) had to be terminated")
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        left = wait_gone(left, 10.0)
        if not left:
            return


def pss_kib(pid: int) -> int:
    return procfs.pss_kib([pid])


def kind(p: Proc) -> str:
    exe = p.exe
    if exe.startswith("python"):
        return "keeper (python)"
    if exe == "node":
        return "playwright driver (node)"
    if exe == "chrome_crashpad_handler":
        return "crashpad"
    if exe.startswith("agent-browser"):
        return "agent-browser daemon"
    if "chrom" in exe:
        return "chromium"
    return exe


def tree_pss(roots: Iterable[int], marker: str) -> dict[str, Any]:
    """PSS summed over the trees under ``roots`` plus any process whose command line names
    ``marker`` (Chromium's crashpad handlers detach from the tree; their --database path is
    under the tool's own home)."""
    table = proc_table()
    pids = descendants(roots, table)
    pids |= {p.pid for p in table.values() if any(marker in c for c in p.cmd)}
    pids = {p for p in pids if live(table[p])}
    by_kind: dict[str, int] = {}
    total = 0
    for pid in pids:
        kib = pss_kib(pid)
        total += kib
        k = kind(table[pid])
        by_kind[k] = by_kind.get(k, 0) + kib
    return {"kib": total, "procs": len(pids), "by_kind": by_kind}


def cpu_kind(p: Proc) -> str:
    """A process's kind for the CPU accounting: Chromium's by its ``--type`` (browser,
    renderer, gpu-process, utility, zygote, crashpad), else :func:`kind`."""
    if "chrom" in p.exe and p.exe != "chrome_crashpad_handler":
        words = " ".join(p.cmd).split()
        types = [w.split("=", 1)[1] for w in words if w.startswith("--type=")]
        return "chromium " + (types[0] if types else "browser")
    return kind(p)


def tree_cpu(roots: Iterable[int], marker: str, env_var: str | None = None) -> dict[str, float]:
    """CPU seconds (user + system, and that of their waited children: utime + stime +
    cutime + cstime of /proc/<pid>/stat) of the trees under ``roots``, under every process
    whose command line names ``marker`` (as :func:`tree_pss`) and, with ``env_var``, under
    every process whose environment sets it to ``marker`` (a keeper: ``BAY_HOME``), summed
    by :func:`cpu_kind`."""
    table = proc_table()
    named = {p.pid for p in table.values() if any(marker in c for c in p.cmd)}
    if env_var is not None:
        named |= {pid for pid in table if procfs.environ(pid).get(env_var) == marker}
    pids = descendants(set(roots) | named, table)
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        ticks = sum(int(x) for x in fields[11:15])
        k = cpu_kind(table[pid])
        out[k] = out.get(k, 0.0) + ticks / tick
    return out


def children_cpu() -> float:
    """User + system CPU of this process's waited children so far (a timed client's)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cpu_lines(title: str, per_tool: dict[str, list[dict[str, float]]]) -> str:
    """Medians by process kind of each tool's per-open CPU samples, and of their total."""
    lines = [title]
    for tool, samples in per_tool.items():
        if not samples:
            continue
        used = {k for s in samples for k, v in s.items() if v > 0}
        kinds = sorted(used, key=lambda k: -sum(s.get(k, 0.0) for s in samples))
        total = statistics.median(sum(s.values()) for s in samples) * 1000
        parts = ", ".join(
            f"{k} {statistics.median(s.get(k, 0.0) for s in samples) * 1000:.0f}" for k in kinds
        )
        lines.append(f"  {tool:<22} {total:8.1f} ms total: {parts}")
    return "\n".join(lines)


# -- environment ------------------------------------------------------------------------------


def clean_env() -> dict[str, str]:
    """The caller's environment without the tools' own settings. PYTHONDONTWRITEBYTECODE
    goes too: with it (a test harness sets it) every `bay` process and keeper compiles its
    modules again, ~20 ms per command that an installed bay (pip compiles at install) never
    pays; the warm-up rounds write the bytecode."""
    drop = ("BAY_", "AGENT_BROWSER_", "XDG_", "PLAYWRIGHT_", "DEBUG", "PYTHONDONTWRITEBYTECODE")
    return {k: v for k, v in os.environ.items() if not k.startswith(drop)}


def timed(
    argv: list[str], env: dict[str, str], timeout: float = 60.0
) -> tuple[float, subprocess.CompletedProcess[str]]:
    t0 = time.perf_counter()
    cp = subprocess.run(
        argv,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return time.perf_counter() - t0, cp


def must(cp: subprocess.CompletedProcess[str], what: str) -> str:
    if cp.returncode != 0:
        raise RuntimeError(
            f"{what} exited {cp.returncode}: {(cp.stderr or cp.stdout).strip()[-400:]}"
        )
    return cp.stdout


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


class Bench:
    """Owns every directory and process the run creates."""

    def __init__(self, work: Path):
        self.work = work
        self.bay_homes: list[Path] = []
        self.ab_homes: list[Path] = []
        self.notes: list[str] = []
        self._n = 0

    def _dir(self, prefix: str) -> Path:
        self._n += 1
        d = self.work / f"{prefix}{self._n}"
        d.mkdir(parents=True, mode=0o700)
        return d

    def check_clean(self, where: str) -> None:
        """Nothing we started may still run between measurements."""
        reap()
        left = wait_gone(my_descendants(), STOP_WAIT)
        if left:
            end_pids(left, f"still running after {where}", self.notes)

    # -- browserbay --

    def bay_home(self, tag: str) -> Path:
        home = self._dir("b")
        self.bay_homes.append(home)
        return home

    def bay_env(
        self, home: Path, session: str = "bench", extra: dict[str, str] | None = None
    ) -> dict[str, str]:
        env = clean_env()
        env.update(
            BAY_HOME=str(home),
            BAY_SESSION=session,
            BAY_CHROMIUM_PATH=CHROMIUM,
            BAY_KEEPER_IDLE="900",  # a safety net only: everything is stopped explicitly
        )
        env.update(extra or {})
        return env

    def bay(
        self,
        home: Path,
        *args: str,
        session: str = "bench",
        extra: dict[str, str] | None = None,
        timeout: float = 60.0,
    ) -> tuple[float, subprocess.CompletedProcess[str]]:
        return timed([str(BAY), *args], self.bay_env(home, session, extra), timeout)

    def bay_conn(self, home: Path) -> Any:
        from browserbay import client
        from browserbay.paths import bay_paths

        # autostart=False: a keeper spawned from here would not get this BAY_HOME.
        return client.connect(bay_paths({"BAY_HOME": str(home)}), autostart=False)

    def bay_keeper_pid(self, home: Path) -> int | None:
        try:
            conn = self.bay_conn(home)
        except Exception:
            return None
        try:
            pid = conn.keeper.get("pid")
            return int(pid) if pid else None
        finally:
            conn.close()

    def bay_stop(self, home: Path) -> None:
        pid = self.bay_keeper_pid(home)
        if pid is None:
            return
        tree = descendants([pid], proc_table())
        env = self.bay_env(home, extra={"BAY_NO_AUTOSTART": "1"})
        with contextlib.suppress(subprocess.TimeoutExpired):
            timed([str(BAY), "keeper", "stop"], env, timeout=30)
        left = wait_gone(tree, STOP_WAIT)
        if left:
            end_pids(left, f"bay keeper stop ({home.name})", self.notes)

    # -- agent-browser --

    def ab_home(self, tag: str) -> Path:
        home = self._dir("a")
        self.ab_homes.append(home)
        return home

    def ab_env(self, home: Path, session: str = "bench") -> dict[str, str]:
        env = clean_env()
        env.update(
            HOME=str(home),
            AGENT_BROWSER_SESSION=session,
            AGENT_BROWSER_EXECUTABLE_PATH=CHROMIUM,
            AGENT_BROWSER_ARGS=AB_ARGS,
            # Its outdated-Chrome check fetches a Google page: nothing to reach on a closed
            # network, and skipping it can only make agent-browser faster.
            AGENT_BROWSER_NO_VERSION_CHECK="1",
            AGENT_BROWSER_IDLE_TIMEOUT_MS="900000",  # a safety net only
        )
        return env

    def ab(
        self, home: Path, *args: str, session: str = "bench", timeout: float = 60.0
    ) -> tuple[float, subprocess.CompletedProcess[str]]:
        return timed([str(AB), *args], self.ab_env(home, session), timeout)

    def ab_daemons(self, home: Path) -> set[int]:
        pids = set()
        for f in (home / ".agent-browser").glob("*.pid"):
            with contextlib.suppress(OSError, ValueError):
                pids.add(int(f.read_text().strip()))
        table = proc_table()
        return {p for p in pids if p in table and table[p].exe.startswith("agent-browser")}

    def ab_stop(self, home: Path) -> None:
        daemons = self.ab_daemons(home)
        if not daemons:
            return
        table = proc_table()
        tree = descendants(daemons, table)
        tree |= {p.pid for p in table.values() if any(str(home) in c for c in p.cmd)}
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.ab(home, "close", "--all", timeout=30)
        left = wait_gone(tree, STOP_WAIT)
        if left:
            end_pids(left, f"agent-browser close --all ({home.name})", self.notes)

    def stop_all(self) -> None:
        for home in self.bay_homes:
            with contextlib.suppress(Exception):
                self.bay_stop(home)
        for home in self.ab_homes:
            with contextlib.suppress(Exception):
                self.ab_stop(home)
        reap()
        left = wait_gone(my_descendants(), 10.0)
        if left:
            end_pids(left, "left over at the end", self.notes)


# -- results ------------------------------------------------------------------------------------


class Row:
    def __init__(
        self,
        section: str,
        metric: str,
        ours: str,
        peer: str,
        ratio: float | None = None,
        goal: float | None = None,
        met: str | None = None,
    ):
        self.section, self.metric, self.ours, self.peer = section, metric, ours, peer
        self.ratio, self.goal = ratio, goal
        self.met = met if met is not None else ("n/a" if goal is None or ratio is None else "")
        if not self.met:
            self.met = "yes" if ratio is not None and goal is not None and ratio <= goal else "no"

    def cells(self) -> list[str]:
        ratio = f"{self.ratio:.2f}×" if self.ratio is not None else "—"
        goal = f"≤ {self.goal:g}×" if self.goal is not None else "—"
        return [f"{self.section} {self.metric}", self.ours, self.peer, ratio, goal, self.met]


def ms(v: float) -> str:
    return f"{v:.1f} ms" if v < 100 else f"{v:.0f} ms"


def mib(kib: float) -> str:
    return f"{kib / 1024:.0f} MiB"


def failed_row(section: str, metric: str, exc: BaseException, goal: float | None) -> Row:
    reason = f"not measured: {type(exc).__name__}: {str(exc).strip().splitlines()[0][:160]}"
    return Row(section, metric, reason, "—", None, goal, "unknown")


# -- a, b, e: warm keeper and warm daemon -----------------------------------------------------


def ref_of(text: str, role: str) -> str:
    for line in text.splitlines():
        m = _LINE.match(line)
        if m and m.group("role") == role:
            r = _REF.search(m.group("rest"))
            if r:
                return r.group("ref")
    raise RuntimeError(f"no {role} with a ref in the snapshot:\n{text[:600]}")


def role_counts(text: str) -> dict[str, dict[str, int]]:
    out = {r: {"ref": 0, "noref": 0} for r in ROLES}
    for line in text.splitlines():
        m = _LINE.match(line)
        if m and m.group("role") in out:
            out[m.group("role")]["ref" if _REF.search(m.group("rest")) else "noref"] += 1
    return out


def url_line_chars(text: str) -> int:
    """Characters spent on ``- /url: …`` lines (the link targets)."""
    return sum(len(line) + 1 for line in text.splitlines() if line.lstrip().startswith("- /url:"))


def noninteractive_ref_chars(text: str) -> int:
    """Characters spent on the refs (`` @eN``) of nodes no agent can act on (lists,
    headings…)."""
    total = 0
    for line in text.splitlines():
        m = _LINE.match(line)
        if m and m.group("role") not in INTERACTIVE:
            total += sum(
                len(r.group(0)) + (3 if r.group(0).startswith("ref=") else 1)
                for r in _REF.finditer(m.group("rest"))
            )
    return total


def bench_warm(b: Bench, base: str, rows: list[Row], info: dict[str, Any]) -> None:
    form, listp = f"{base}/form.html", f"{base}/list.html?n=300"
    sess_name = "bench-warm"
    bay_home, ab_home = b.bay_home("warm"), b.ab_home("warm")
    session = {"id": sess_name, "origin": "env"}
    conn: Any = None

    def req(verb: str, args: dict[str, Any]) -> dict[str, Any]:
        answer: dict[str, Any] = conn.request(verb, args, session, 30.0)
        if not answer.get("ok"):
            raise RuntimeError(f"bay {verb} {args}: {answer.get('code')}: {answer.get('message')}")
        return answer

    def ab_out(*args: str) -> tuple[float, str]:
        t, cp = b.ab(ab_home, *args, session=sess_name, timeout=30)
        return t, must(cp, "agent-browser " + " ".join(args))

    try:
        _, cp = b.bay(bay_home, "open", form, session=sess_name)
        must(cp, "bay open")
        _, cp = b.ab(ab_home, "open", form, session=sess_name)
        must(cp, "agent-browser open")
        conn = b.bay_conn(bay_home)
        bay_ref = ref_of(req("snapshot", {"interactive": True})["text"], "checkbox")
        ab_ref = ref_of(ab_out("snapshot", "-i")[1], "checkbox")
        info["refs"] = {"bay": bay_ref, "agent-browser": ab_ref}
        cases: list[tuple[str, str, dict[str, Any], list[str], list[str]]] = [
            ("get title", "get", {"what": "title"}, ["get", "title"], ["get", "title"]),
            ("snapshot", "snapshot", {}, ["snapshot"], ["snapshot"]),
            (
                "click @ref (checkbox)",
                "click",
                {"target": "@" + bay_ref},
                ["click", "@" + bay_ref],
                ["click", "@" + ab_ref],
            ),
        ]
        whole: dict[str, tuple[float, float]] = {}
        # a. in-keeper latency vs agent-browser's whole process; interleaved rep by rep so
        # that load from elsewhere on the machine hits both sides alike.
        for name, verb, args, bay_argv, ab_argv in cases:
            try:
                ours, peer, bay_proc = [], [], []
                for i in range(N_WARMUP + N_WARM):
                    t0 = time.perf_counter()
                    req(verb, args)
                    t1 = time.perf_counter()
                    tp, _ = ab_out(*ab_argv)
                    tb, cp = b.bay(bay_home, *bay_argv, session=sess_name, timeout=30)
                    must(cp, "bay " + " ".join(bay_argv))
                    if i >= N_WARMUP:
                        ours.append(t1 - t0)
                        peer.append(tp)
                        bay_proc.append(tb)
                o, p = median_ms(ours), median_ms(peer)
                rows.append(
                    Row("a", f"warm {name}: in keeper vs peer process", ms(o), ms(p), o / p, 0.75)
                )
                whole[name] = (median_ms(bay_proc), p)
                info.setdefault("warm_p90", {})[name] = {
                    "bay_keeper_p90_ms": round(sorted(ours)[int(0.9 * len(ours))] * 1000, 2),
                    "agent_browser_p90_ms": round(sorted(peer)[int(0.9 * len(peer))] * 1000, 2),
                }
            except Exception as exc:
                rows.append(failed_row("a", f"warm {name}", exc, 0.75))
        for name, (wb, wp) in whole.items():
            rows.append(
                Row("a'", f"warm {name}: whole `bay` process (info)", ms(wb), ms(wp), wb / wp)
            )

        # b. the whole `bay get title` process vs the Python floor of the same venv.
        try:
            bay_t, py_t, imp_t, lean_t = [], [], [], []
            floor = [str(VENV_PY), "-c", "pass"]  # a bare start, site included
            lean = [str(VENV_PY), "-S", "-c", "pass"]  # the lean launcher's start
            imports = [str(VENV_PY), "-c", "import browserbay_cli.hot"]  # a warm verb's
            env = b.bay_env(bay_home, sess_name)
            for i in range(N_WARMUP + N_WARM):
                tb, cp = b.bay(bay_home, "get", "title", session=sess_name, timeout=30)
                must(cp, "bay get title")
                tp, cp = timed(floor, env, 30)
                must(cp, "python -c")
                ti, cp = timed(imports, env, 30)
                must(cp, "python -c import browserbay_cli.hot")
                ts, cp = timed(lean, env, 30)
                must(cp, "python -S -c pass")
                if i >= N_WARMUP:
                    bay_t.append(tb)
                    py_t.append(tp)
                    imp_t.append(ti)
                    lean_t.append(ts)
            o, p = median_ms(bay_t), median_ms(py_t)
            rows.append(
                Row("b", "`bay get title` process vs bare python", ms(o), ms(p), o / p, 1.25)
            )
            info["b"] = {
                "bay_get_title_ms": round(o, 1),
                "python_floor_ms": round(p, 1),
                "python_S_ms": round(median_ms(lean_t), 1),
                "python_import_cli_ms": round(median_ms(imp_t), 1),
            }
        except Exception as exc:
            rows.append(failed_row("b", "`bay get title` process", exc, 1.25))

        # e. snapshot sizes and refs on both pages.
        snap_rows(b, conn, req, ab_out, form, listp, rows, info)
        pydoc_rows(req, ab_out, rows, info)

        # a (info). warm snapshot of the long list.
        try:
            ours, peer = [], []
            for i in range(N_WARMUP + N_WARM // 2):
                t0 = time.perf_counter()
                req("snapshot", {})
                t1 = time.perf_counter()
                tp, _ = ab_out("snapshot")
                if i >= N_WARMUP:
                    ours.append(t1 - t0)
                    peer.append(tp)
            o, p = median_ms(ours), median_ms(peer)
            rows.append(
                Row(
                    "a'",
                    "warm snapshot list?n=300: in keeper vs peer process (info)",
                    ms(o),
                    ms(p),
                    o / p,
                )
            )
        except Exception as exc:
            rows.append(failed_row("a'", "warm snapshot list?n=300", exc, None))
    finally:
        if conn is not None:
            conn.close()
        b.bay_stop(bay_home)
        b.ab_stop(ab_home)
        b.check_clean("the warm benchmarks")


def snap_rows(
    b: Bench,
    conn: Any,
    req: Callable[[str, dict[str, Any]], dict[str, Any]],
    ab_out: Callable[..., tuple[float, str]],
    form: str,
    listp: str,
    rows: list[Row],
    info: dict[str, Any],
) -> None:
    checks: list[str] = []
    all_ok = True
    peer_checks: list[str] = []
    for label, url in (("form", form), ("list?n=300", listp)):
        try:
            req("open", {"url": url})
            ab_out("open", url)
            dom = req("eval", {"js": DOM_COUNTS_JS})["data"]["value"]
            # The whole snapshot (agent-browser prints its whole tree): a first page of
            # 400 lines against a whole tree would be no comparison.
            full = req("snapshot", {"limit": 0})
            inter = req("snapshot", {"interactive": True, "limit": 0})
            first = req("snapshot", {})["data"]
            if full["text"] != full["data"]["snapshot"]:
                b.notes.append("bay snapshot: the answer's text and data.snapshot differ")
            peer_full = ab_out("snapshot")[1].rstrip("\n")
            peer_inter = ab_out("snapshot", "-i")[1].rstrip("\n")
            for flag, ours, peer in (
                ("", full["text"], peer_full),
                (" -i", inter["text"], peer_inter),
            ):
                rows.append(
                    Row(
                        "e",
                        f"snapshot{flag} {label} (chars)",
                        f"{len(ours):,}",
                        f"{len(peer):,}",
                        len(ours) / len(peer),
                        0.8,
                    )
                )
            info.setdefault("snapshots", {})[label] = {
                "bay": len(full["text"]),
                "bay_i": len(inter["text"]),
                "agent_browser": len(peer_full),
                "agent_browser_i": len(peer_inter),
                "bay_refs": full["data"].get("refs"),
                "bay_first_page": {k: first.get(k) for k in ("lines", "refs", "left", "next")},
                "dom_interactive": dom,
                "bay_url_line_chars": url_line_chars(full["text"]),
                "bay_noninteractive_ref_chars": noninteractive_ref_chars(full["text"]),
            }
            expected = sum(dom.values())
            for which, text in (("", full["text"]), (" -i", inter["text"])):
                counts = role_counts(text)
                with_ref = sum(min(counts[r]["ref"], dom[r]) for r in ROLES)
                missing = {r: dom[r] - counts[r]["ref"] for r in ROLES if counts[r]["ref"] < dom[r]}
                unref = {r: counts[r]["noref"] for r in ROLES if counts[r]["noref"]}
                ok = not missing and not unref
                all_ok &= ok
                checks.append(
                    f"{label}{which} {with_ref}/{expected}"
                    + ("" if ok else f" (missing {missing}, unreferenced {unref})")
                )
            pc = role_counts(peer_full)
            peer_checks.append(
                f"{label} {sum(min(pc[r]['ref'], dom[r]) for r in ROLES)}/{expected}"
            )
        except Exception as exc:
            rows.append(failed_row("e", f"snapshot {label}", exc, 0.8))
            all_ok = False
            checks.append(f"{label}: not checked ({type(exc).__name__})")
    rows.append(
        Row(
            "e",
            "interactive elements with a ref",
            "; ".join(checks),
            "; ".join(peer_checks),
            None,
            None,
            "yes" if all_ok else "no",
        )
    )


PYDOC = Path("/usr/share/doc/python3/html")
PYDOC_PAGES = (
    "tutorial/controlflow.html",
    "tutorial/datastructures.html",
    "tutorial/classes.html",
    "tutorial/errors.html",
    "tutorial/inputoutput.html",
    "tutorial/modules.html",
    "library/json.html",
    "library/os.path.html",
)


def _actionable(text: str) -> int:
    """Refs on lines an agent can act on: an interactive role, or judged clickable/editable/
    focusable (both tools mark those); headings, cells and landmarks are left out."""
    n = 0
    for line in text.splitlines():
        m = _LINE.match(line)
        if m and _REF.search(m.group("rest")):
            judged = re.search(r"\b(clickable|editable|focusable)\b", m.group("rest"))
            n += m.group("role") in INTERACTIVE or judged is not None
    return n


class _QuietFiles(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def pydoc_rows(
    req: Callable[[str, dict[str, Any]], dict[str, Any]],
    ab_out: Callable[..., tuple[float, str]],
    rows: list[Row],
    info: dict[str, Any],
) -> None:
    """e'. ``snapshot -i`` on pages nobody here wrote (Debian's python3-doc, served whole with
    its CSS and scripts): refs offered (goal: at least agent-browser's) and characters."""
    if not PYDOC.is_dir():
        rows.append(Row("e", "snapshot -i python3-doc", "not measured: no python3-doc", "—"))
        return
    handler = functools.partial(_QuietFiles, directory=str(PYDOC))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    per: dict[str, dict[str, int]] = {}
    try:
        for page in PYDOC_PAGES:
            url = f"{base}/{page}"
            req("open", {"url": url})
            ab_out("open", url)
            ours = req("snapshot", {"interactive": True, "limit": 0})["text"]
            peer = ab_out("snapshot", "-i")[1].rstrip("\n")
            per[page] = {
                "bay_refs": len(_REF.findall(ours)),
                "agent_browser_refs": len(_REF.findall(peer)),
                "bay_actionable": _actionable(ours),
                "agent_browser_actionable": _actionable(peer),
                "bay_chars": len(ours),
                "agent_browser_chars": len(peer),
            }
    except Exception as exc:
        rows.append(failed_row("e", "snapshot -i python3-doc", exc, 0.8))
        return
    finally:
        server.shutdown()
        server.server_close()
    info["pydoc"] = per
    tot = {k: sum(v[k] for v in per.values()) for k in next(iter(per.values()))}
    refs = tot["bay_refs"] / tot["agent_browser_refs"]
    rows.append(
        Row(
            "e",
            f"snapshot -i python3-doc, {len(per)} pages: refs offered (goal ≥ 1×)",
            f"{tot['bay_refs']:,}",
            f"{tot['agent_browser_refs']:,}",
            refs,
            None,
            "yes" if refs >= 1.0 else "no",
        )
    )
    act = tot["bay_actionable"] / tot["agent_browser_actionable"]
    rows.append(
        Row(
            "e",
            f"snapshot -i python3-doc, {len(per)} pages: refs to act on (goal ≥ 1×)",
            f"{tot['bay_actionable']:,}",
            f"{tot['agent_browser_actionable']:,}",
            act,
            None,
            "yes" if act >= 1.0 else "no",
        )
    )
    rows.append(
        Row(
            "e",
            f"snapshot -i python3-doc, {len(per)} pages (chars)",
            f"{tot['bay_chars']:,}",
            f"{tot['agent_browser_chars']:,}",
            tot["bay_chars"] / tot["agent_browser_chars"],
            0.8,
        )
    )


# -- c: cold first command -------------------------------------------------------------------


def _log_times(log: Path) -> dict[str, float]:
    """Wall-clock times of the keeper's milestones, from its log's timestamps (ms)."""
    marks = {"listening": "listening on", "browser": "browser bb-"}
    out: dict[str, float] = {}
    try:
        lines = log.read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        for key, needle in marks.items():
            if key not in out and needle in line and (key != "browser" or "started" in line):
                with contextlib.suppress(ValueError):
                    stamp = dt.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")
                    out[key] = stamp.timestamp()
    return out


def bench_cold(b: Bench, base: str, rows: list[Row], info: dict[str, Any]) -> None:
    url = f"{base}/form.html"
    bay_t: list[float] = []
    ab_t: list[float] = []
    phases: list[dict[str, float]] = []
    errors: list[str] = []
    cpu: dict[str, list[dict[str, float]]] = {"bay": [], "agent-browser": []}

    def one_bay(keep: bool) -> None:
        home = b.bay_home("cold")
        try:
            t_wall = time.time()
            before = children_cpu()
            t, cp = b.bay(home, "open", url, session="bench-cold")
            t_end = time.time()
            client = children_cpu() - before
            must(cp, "bay open (cold)")
            if keep:
                bay_t.append(t)
                time.sleep(CPU_SETTLE)
                cpu["bay"].append({**tree_cpu([], str(home), "BAY_HOME"), "client": client})
                marks = _log_times(home / "logs" / "keeper.log")
                if "listening" in marks and "browser" in marks:
                    phases.append(
                        {
                            "spawn_to_listening": marks["listening"] - t_wall,
                            "listening_to_browser": marks["browser"] - marks["listening"],
                            "browser_to_answer": t_end - marks["browser"],
                        }
                    )
        finally:
            b.bay_stop(home)
            b.check_clean("a cold bay open")

    def one_ab(keep: bool) -> None:
        home = b.ab_home("cold")
        try:
            before = children_cpu()
            t, cp = b.ab(home, "open", url, session="bench-cold")
            client = children_cpu() - before
            must(cp, "agent-browser open (cold)")
            if keep:
                ab_t.append(t)
                time.sleep(CPU_SETTLE)
                cpu["agent-browser"].append(
                    {**tree_cpu(b.ab_daemons(home), str(home)), "client": client}
                )
        finally:
            b.ab_stop(home)
            b.check_clean("a cold agent-browser open")

    # One discarded round first (page cache), then alternate which tool goes first.
    for i in range(N_COLD + 1):
        order = (one_bay, one_ab) if i % 2 == 0 else (one_ab, one_bay)
        for fn in order:
            try:
                fn(i > 0)
            except Exception as exc:
                errors.append(f"{fn.__name__}: {exc}")
    info["cold"] = {
        "bay_s": [round(x, 3) for x in bay_t],
        "agent_browser_s": [round(x, 3) for x in ab_t],
        "errors": errors,
        "cpu": cpu_lines("c: CPU per cold open (user+sys ms, median by process kind):", cpu),
    }
    if phases:
        info["cold"]["bay_phases_median_ms"] = {
            k: round(statistics.median(p[k] for p in phases) * 1000) for k in phases[0]
        }
    if bay_t and ab_t:
        o, p = median_ms(bay_t), median_ms(ab_t)
        rows.append(
            Row("c", f"cold first open incl. spawn (n={len(bay_t)})", ms(o), ms(p), o / p, 0.8)
        )
    else:
        rows.append(failed_row("c", "cold first open", RuntimeError("; ".join(errors)), 0.8))


COMPONENTS = r"""
import asyncio, json, sys, time
t0 = time.perf_counter()
import anyio, sqlite3
import browserbay.keeper.daemon, browserbay.keeper.keeper, browserbay.plugins, browserbay.registry
t1 = time.perf_counter()
from browserbay.plugins import load_plugins
load_plugins()
t2 = time.perf_counter()
from playwright.async_api import async_playwright
t3 = time.perf_counter()
from browserbay_chromium.driver import CLOSED_NETWORK_FLAGS

async def main():
    out = {}
    a = time.perf_counter()
    cm = async_playwright()
    pw = await cm.start()
    b = time.perf_counter()
    browser = await pw.chromium.launch(executable_path=sys.argv[1],
        args=[*CLOSED_NETWORK_FLAGS, "--no-sandbox"])
    c = time.perf_counter()
    ctx = await browser.new_context()
    page = await ctx.new_page()
    d = time.perf_counter()
    await page.goto(sys.argv[2], wait_until="load")
    e = time.perf_counter()
    out = {"driver_start": b - a, "chromium_launch": c - b, "context_and_page": d - c,
           "goto_load": e - d}
    # Warm per-call costs of the Playwright calls behind `get title` and `click`.
    box = page.locator("input[name=terms]").first
    for name, call in (("warm_title", lambda: page.title()),
                       ("warm_click_actionable", lambda: box.click()),
                       ("warm_click_force", lambda: box.click(force=True))):
        ts = []
        for i in range(13):
            s = time.perf_counter()
            await call()
            ts.append(time.perf_counter() - s)
        out[name] = sorted(ts[3:])[5]
    await browser.close()
    await cm.__aexit__(None, None, None)
    return out

r = asyncio.run(main())
r.update(keeper_imports=t1 - t0, load_plugins=t2 - t1, import_playwright=t3 - t2)
print(json.dumps(r))
"""


def bench_components(b: Bench, base: str, info: dict[str, Any]) -> None:
    """Where a cold start's time goes, measured step by step outside the keeper."""
    runs: list[dict[str, float]] = []
    py: list[float] = []
    home = b.bay_home("components")
    env = b.bay_env(home)
    env["TMPDIR"] = str(home)
    for _ in range(3):
        t, cp = timed([str(VENV_PY), "-c", "import socket,json"], env, 30)
        py.append(t)
        _, cp = timed([str(VENV_PY), "-c", COMPONENTS, CHROMIUM, f"{base}/form.html"], env, 120)
        runs.append(json.loads(must(cp, "component timing")))
        b.check_clean("the component timing")
    out = {k: round(statistics.median(r[k] for r in runs) * 1000, 1) for k in runs[0]}
    out["python_start"] = round(median_ms(py))
    info["components_ms"] = out


# -- d: memory ---------------------------------------------------------------------------------


def _sample(fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    samples = []
    for _ in range(3):
        time.sleep(1.0)
        samples.append(fn())
    samples.sort(key=lambda s: s["kib"])
    return samples[1]


def bay_memory(b: Bench, url: str, tag: str, extra: dict[str, str]) -> dict[str, Any]:
    home = b.bay_home(tag)
    try:
        out: dict[str, Any] = {}
        _, cp = b.bay(home, "open", url, session="bench-m1", extra=extra)
        must(cp, "bay open (session 1)")
        pid = b.bay_keeper_pid(home)
        if pid is None:
            raise RuntimeError("no keeper answers")
        time.sleep(SETTLE - 1.0)
        out["one"] = _sample(lambda: tree_pss([pid], str(home)))
        for i in range(2, N_SESSIONS + 1):
            _, cp = b.bay(home, "open", url, session=f"bench-m{i}", extra=extra)
            must(cp, f"bay open (session {i})")
        time.sleep(SETTLE - 1.0)
        out["all"] = _sample(lambda: tree_pss([pid], str(home)))
        conn = b.bay_conn(home)
        try:
            status = conn.request("keeper", {"action": "status"}, {"id": "bench-m1"}, 30.0)
        finally:
            conn.close()
        out["browsers"] = len((status.get("data") or {}).get("browsers", []))
        return out
    finally:
        b.bay_stop(home)
        b.check_clean(f"the memory benchmark ({tag})")


def ab_memory(b: Bench, url: str) -> dict[str, Any]:
    home = b.ab_home("mem")
    try:
        out: dict[str, Any] = {}
        _, cp = b.ab(home, "open", url, session="bench-m1")
        must(cp, "agent-browser open (session 1)")
        time.sleep(SETTLE - 1.0)
        out["one"] = _sample(lambda: tree_pss(b.ab_daemons(home), str(home)))
        for i in range(2, N_SESSIONS + 1):
            _, cp = b.ab(home, "open", url, session=f"bench-m{i}")
            must(cp, f"agent-browser open (session {i})")
        time.sleep(SETTLE - 1.0)
        out["all"] = _sample(lambda: tree_pss(b.ab_daemons(home), str(home)))
        out["browsers"] = len(b.ab_daemons(home))
        return out
    finally:
        b.ab_stop(home)
        b.check_clean("the memory benchmark (agent-browser)")


def bench_memory(b: Bench, base: str, rows: list[Row], info: dict[str, Any]) -> None:
    url = f"{base}/form.html"
    mem: dict[str, dict[str, Any]] = {}
    for label, fn in (
        ("agent-browser", lambda: ab_memory(b, url)),
        ("bay shared", lambda: bay_memory(b, url, "mem-shared", {})),
        (
            "bay per-session",
            lambda: bay_memory(b, url, "mem-own", {"BAY_CONTEXTS_PER_BROWSER": "1"}),
        ),
    ):
        try:
            mem[label] = fn()
        except Exception as exc:
            info.setdefault("memory_errors", []).append(f"{label}: {exc}")
    info["memory"] = {
        k: {
            "one_session_mib": round(v["one"]["kib"] / 1024),
            f"{N_SESSIONS}_sessions_mib": round(v["all"]["kib"] / 1024),
            "processes": v["all"]["procs"],
            "browser_processes": v["browsers"],
            "by_kind_mib": {kk: round(vv / 1024) for kk, vv in sorted(v["all"]["by_kind"].items())},
        }
        for k, v in mem.items()
    }
    peer = mem.get("agent-browser")
    for label, goal, name in (
        ("bay shared", 0.4, f"PSS {N_SESSIONS} sessions, shared Chromium (default)"),
        ("bay per-session", None, f"PSS {N_SESSIONS} sessions, one Chromium each (info)"),
    ):
        ours = mem.get(label)
        if ours is None or peer is None:
            why = "; ".join(info.get("memory_errors", [])) or "no sample"
            rows.append(failed_row("d", name, RuntimeError(why), goal))
            continue
        o, p = ours["all"]["kib"], peer["all"]["kib"]
        rows.append(Row("d", name, mib(o), mib(p), o / p, goal))


# -- report ------------------------------------------------------------------------------------


def machine() -> dict[str, str]:
    def out(argv: list[str]) -> str:
        try:
            return subprocess.run(
                argv, capture_output=True, text=True, timeout=30, check=False
            ).stdout.strip()
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"unknown ({exc})"

    os_name = "?"
    with contextlib.suppress(OSError):
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                os_name = line.split("=", 1)[1].strip('"')
    mem = "?"
    with contextlib.suppress(OSError):
        mem = Path("/proc/meminfo").read_text().splitlines()[0].split(":")[1].strip()
    versions = {}
    for dist in ("browserbay-core", "playwright"):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = "?"
    return {
        "date": out(["date", "-u"]),
        "os": f"{os_name}, kernel {platform.release()}",
        "nproc": out(["nproc"]),
        "memory": mem,
        "chromium": out([CHROMIUM, "--version"]),
        "python": out([str(VENV_PY), "--version"]),
        "browserbay": versions["browserbay-core"],
        "playwright": versions["playwright"],
        "agent-browser": out([str(AB), "--version"]),
        "node (for npm only)": out(["node", "--version"]),
    }


# -- f. the MCP tool list against @playwright/mcp ------------------------------------------

PW_MCP = BENCH / "node_modules" / "@playwright" / "mcp" / "cli.js"
#: Every opt-in capability of @playwright/mcp, so each row below finds its tools.
PW_CAPS = "vision,pdf,devtools,network,storage,config,testing"
#: The capability rows both servers offer: (capability, bay's tools, @playwright/mcp's tools).
#: Coverage is equal when each side is charged for the tools it needs for these rows.
MCP_ROWS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("navigate", ("open",), ("browser_navigate",)),
    ("back", ("back",), ("browser_navigate_back",)),
    ("snapshot", ("snapshot",), ("browser_snapshot",)),
    ("click", ("click",), ("browser_click",)),
    ("double-click", ("dblclick",), ("browser_click",)),
    ("fill a field", ("fill",), ("browser_type",)),
    ("type keys", ("type",), ("browser_type",)),
    ("press a key", ("press",), ("browser_press_key",)),
    ("select options", ("select",), ("browser_select_option",)),
    ("check, uncheck", ("check", "uncheck"), ("browser_fill_form",)),
    ("hover", ("hover",), ("browser_hover",)),
    ("drag and drop", ("drag",), ("browser_drag",)),
    ("upload files", ("upload",), ("browser_file_upload",)),
    ("answer a dialog", ("dialog",), ("browser_handle_dialog",)),
    ("evaluate JavaScript", ("eval",), ("browser_evaluate",)),
    ("screenshot", ("screenshot",), ("browser_take_screenshot",)),
    ("PDF", ("pdf",), ("browser_pdf_save",)),
    ("tabs", ("tab",), ("browser_tabs",)),
    ("wait for text or time", ("wait",), ("browser_wait_for",)),
    ("console", ("console",), ("browser_console_messages",)),
    ("requests", ("network",), ("browser_network_requests",)),
    (
        "routes (mock, abort)",
        ("network",),
        ("browser_route", "browser_route_list", "browser_unroute"),
    ),
    ("offline", ("set",), ("browser_network_state_set",)),
    ("viewport", ("set",), ("browser_resize",)),
    ("media emulation", ("set",), ("browser_emulate_media",)),
    (
        "mouse at coordinates",
        ("mouse",),
        ("browser_mouse_move_xy", "browser_mouse_down", "browser_mouse_up", "browser_mouse_wheel"),
    ),
    (
        "cookies",
        ("cookies",),
        tuple(f"browser_cookie_{a}" for a in ("list", "get", "set", "delete", "clear")),
    ),
    (
        "local/session storage",
        ("storage",),
        tuple(
            f"browser_{area}storage_{a}"
            for area in ("local", "session")
            for a in ("list", "get", "set", "delete", "clear")
        ),
    ),
    ("storage state file", ("state",), ("browser_storage_state", "browser_set_storage_state")),
    ("close", ("close",), ("browser_close",)),
)


def mcp_listing(argv: list[str], env: dict[str, str]) -> tuple[list[dict[str, Any]], str]:
    """An MCP stdio server's tools/list (and its instructions), spoken to as a client does:
    initialize, initialized, tools/list. Listing starts no browser on either side."""
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:

        def ask(msg: dict[str, Any]) -> dict[str, Any]:
            proc.stdin.write(json.dumps(msg) + "\n")
            proc.stdin.flush()
            while True:
                got = json.loads(proc.stdout.readline())
                if got.get("id") == msg["id"]:
                    return dict(got["result"])

        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        }
        init = ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        proc.stdin.write("\n")
        tools = ask({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})["tools"]
        return list(tools), str(init.get("instructions") or "")
    finally:
        proc.kill()
        proc.wait(STOP_WAIT)


def _chars(value: Any) -> int:
    """Characters of a value as compact JSON (how both servers send it)."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def _families(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tools folded one per family: tools with the same parameters become one with an
    ``action`` enum and their descriptions joined (the alternative to one tool per verb)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for t in tools:
        groups.setdefault(json.dumps(t["inputSchema"], sort_keys=True), []).append(t)
    folded = []
    for members in groups.values():
        if len(members) == 1:
            folded.append(members[0])
            continue
        schema = json.loads(json.dumps(members[0]["inputSchema"]))
        names = [m["name"] for m in members]
        props = schema.get("properties", {})
        schema["properties"] = {"action": {"enum": names}, **props}
        schema["required"] = ["action", *schema.get("required", [])]
        text = "; ".join(f"{m['name']}: {m['description']}" for m in members)
        folded.append({"name": names[0], "description": text, "inputSchema": schema})
    return folded


def bench_mcp_tool_list(b: Bench, rows: list[Row], info: dict[str, Any]) -> None:
    """f: the characters of the tools/list JSON (compact, as sent) of ``bay mcp`` against
    ``@playwright/mcp`` at equal coverage (:data:`MCP_ROWS`), bay charged its instructions
    too (they carry the arguments its tools share); then the whole default lists."""
    node = shutil.which("node")
    if node is None or not PW_MCP.exists():
        raise RuntimeError("@playwright/mcp is not installed in bench/: run bench/setup.sh")
    env = dict(b.bay_env(b.bay_home("mcp")), BAY_NO_AUTOSTART="1")
    ours, instructions = mcp_listing([str(BAY), "mcp", "--tools", "all"], env)
    theirs, _ = mcp_listing([node, str(PW_MCP), "--headless", f"--caps={PW_CAPS}"], clean_env())
    by_ours, by_theirs = {t["name"]: t for t in ours}, {t["name"]: t for t in theirs}
    mine = {n for _, o, _ in MCP_ROWS for n in o}
    peer = {n for _, _, p in MCP_ROWS for n in p}
    missing = sorted((mine - set(by_ours)) | (peer - set(by_theirs)))
    if missing:
        raise RuntimeError(f"tools of the coverage rows not listed: {missing}")
    o = sum(_chars(by_ours[n]) for n in mine) + len(instructions)
    p = sum(_chars(by_theirs[n]) for n in peer)
    cover = f"{len(MCP_ROWS)} capability rows"
    rows.append(
        Row(
            "f",
            f"MCP tool list at equal coverage, {cover} (chars)",
            f"{o:,} ({len(mine)} tools + instructions)",
            f"{p:,} ({len(peer)} tools)",
            o / p,
            0.3,
        )
    )
    folded = _families([by_ours[n] for n in sorted(mine)])
    fo = _chars(folded) + len(instructions)
    rows.append(
        Row(
            "f",
            f"MCP tool list, one tool per family (info), {cover} (chars)",
            f"{fo:,} ({len(folded)} tools)",
            f"{p:,}",
            fo / p,
        )
    )
    core, _ = mcp_listing([str(BAY), "mcp"], env)
    default, _ = mcp_listing([node, str(PW_MCP), "--headless"], clean_env())
    rows.append(
        Row(
            "f",
            "MCP tool list, default profile vs default caps (info, chars)",
            f"{_chars(core):,} ({len(core)} tools)",
            f"{_chars(default):,} ({len(default)} tools)",
            _chars(core) / _chars(default),
        )
    )
    info["mcp"] = {
        "rows": [r[0] for r in MCP_ROWS],
        "per_tool": {n: _chars(by_ours[n]) for n in sorted(mine)},
        "peer_tools": {n: _chars(by_theirs[n]) for n in sorted(peer)},
        "instructions": len(instructions),
    }


def foreign_load() -> str:
    table = proc_table()
    mine = descendants([os.getpid()], table)
    chromes = sum(1 for p in table.values() if p.exe == "chromium" and p.pid not in mine)
    tests = sum(
        1 for p in table.values() if p.pid not in mine and any("pytest" in c for c in p.cmd[:3])
    )
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    return (
        f"loadavg {load}; {chromes} Chromium processes of other users/runs, {tests} pytest "
        "processes of others"
    )


def render_table(rows: list[Row], markdown: bool) -> str:
    head = ["metric", "browserbay", "agent-browser / baseline", "ratio", "goal", "met"]
    cells = [r.cells() for r in rows]
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in cells]
        return "\n".join(lines)
    widths = [max(len(x) for x in col) for col in zip(head, *cells, strict=False)]
    widths = [min(w, 60) for w in widths]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*row) for row in cells]
    return "\n".join(lines)


def notes_text(info: dict[str, Any], b: Bench) -> list[str]:
    n: list[str] = []
    n.append(
        f"Repetitions: warm {N_WARM} timed after {N_WARMUP} warm-up (medians), cold {N_COLD} "
        f"after 1 discarded round, alternating which tool goes first; memory with {N_SESSIONS} "
        "sessions, median of 3 PSS samples 1 s apart after a settle."
    )
    n.append(
        "a: browserbay is timed inside one connection (`conn.request`, no process start); "
        "agent-browser is its whole CLI process (its daemon warm). Rows a' add the whole "
        "`bay` process for the same verbs, for information."
    )
    n.append(
        "Goals: the goal column is issue 2's (a ≤ 0.75×, c ≤ 0.8×, d ≤ 0.4×, e ≤ 0.8×). Issue 19 "
        "asks less of a and c: the in-keeper click ≤ 1.0× agent-browser's whole process, cold "
        "first open ≤ 1.0×; and b ≤ 1.25× (the same)."
    )
    if "warm_p90" in info:
        n.append("a: p90 — " + json.dumps(info["warm_p90"]))
    if "mcp" in info:
        m = info["mcp"]
        mine = ", ".join(f"{k} {v:,}" for k, v in m["per_tool"].items())
        theirs = ", ".join(f"{k} {v:,}" for k, v in m["peer_tools"].items())
        n.append(
            f"f: compared at the {len(m['rows'])} rows ({', '.join(m['rows'])}), chars of each "
            f"tool's tools/list JSON: bay (`bay mcp --tools all`) {mine}, + its instructions "
            f"{m['instructions']:,}; @playwright/mcp (`--caps={PW_CAPS}`) {theirs}"
        )
    if "b" in info:
        bb = info["b"]
        n.append(
            f"b: `bay get title` {bb['bay_get_title_ms']} ms = python floor "
            f"{bb['python_floor_ms']} ms + importing the CLI (`python -c 'import "
            f"browserbay_cli.hot'` {bb['python_import_cli_ms']} ms, i.e. "
            f"{bb['python_import_cli_ms'] - bb['python_floor_ms']:.1f} ms of imports) + the round "
            "trip and printing."
        )
    cold = info.get("cold", {})
    if cold:
        n.append(
            f"c: samples (s) bay {cold.get('bay_s')} · agent-browser {cold.get('agent_browser_s')}"
        )
        if cold.get("bay_phases_median_ms"):
            p = cold["bay_phases_median_ms"]
            n.append(
                "c: bay cold phases from the keeper log (median ms): client start + keeper spawn "
                f"→ 'listening' {p['spawn_to_listening']}; 'listening' → 'browser started' "
                "(the browser taken into the pool: a warm start launches it beside the keeper's "
                f"imports, so this is what its launch had left) {p['listening_to_browser']}; "
                f"→ answer printed (context, page, goto) {p['browser_to_answer']}."
            )
        if cold.get("cpu"):
            title, *tools = cold["cpu"].split("\n")
            n.append(title + " " + " · ".join(" ".join(t.split()) for t in tools))
        if cold.get("errors"):
            n.append("c: errors: " + "; ".join(cold["errors"]))
    if "components_ms" in info:
        c = info["components_ms"]
        n.append(
            "c: the same steps timed one by one outside the keeper (median of 3, ms): "
            + ", ".join(f"{k} {v}" for k, v in c.items() if not k.startswith("warm_"))
        )
        n.append(
            "a: the bare Playwright calls, warm, in the same script (median ms): "
            + ", ".join(f"{k[5:]} {v}" for k, v in c.items() if k.startswith("warm_"))
            + " (`click` waits for Playwright's actionability checks; `force` skips them)"
        )
    for label, m in info.get("memory", {}).items():
        n.append(
            f"d: {label}: 1 session {m['one_session_mib']} MiB, {N_SESSIONS} sessions "
            f"{m[f'{N_SESSIONS}_sessions_mib']} MiB over {m['processes']} processes "
            f"({m['browser_processes']} browser/daemon instance(s)); by kind {m['by_kind_mib']}"
        )
    if info.get("memory_errors"):
        n.append("d: errors: " + "; ".join(info["memory_errors"]))
    for label, s in info.get("snapshots", {}).items():
        n.append(
            f"e: {label}: DOM interactive elements {s['dom_interactive']}; bay's full snapshot "
            f"has {s['bay_refs']} refs; of its {s['bay']:,} characters, "
            f"{s['bay_url_line_chars']:,} are `- /url:` lines and "
            f"{s['bay_noninteractive_ref_chars']:,} are refs on non-interactive nodes"
            + (
                f"; of its {fp['lines']} lines, the first page (no --limit) shows"
                f" {fp['lines'] - fp['left']} ({fp['refs']} refs), next `{fp['next']}`"
                if (fp := s.get("bay_first_page")) and fp.get("left")
                else ""
            )
        )
    n.append(
        "Memory is PSS (/proc/<pid>/smaps_rollup), summed over the process tree (keeper + "
        "Playwright driver + Chromium; agent-browser daemons + their Chrome) plus the Chromium "
        "crashpad handlers, which detach from the tree. File-backed pages shared with other "
        "Chromium processes on the machine are split with them, so PSS depends on what else "
        "runs: "
        + info.get("load_start", "?")
        + " at the start, "
        + info.get("load_end", "?")
        + " at the end."
    )
    n.append(
        "agent-browser runs with AGENT_BROWSER_EXECUTABLE_PATH="
        + CHROMIUM
        + ", AGENT_BROWSER_ARGS="
        + AB_ARGS
        + " and AGENT_BROWSER_NO_VERSION_CHECK=1 (its "
        "Chrome-version check fetches a Google page; skipping it only helps agent-browser)."
    )
    n += [f"run: {x}" for x in b.notes]
    return n


def write_results(rows: list[Row], facts: dict[str, str], notes: list[str]) -> None:
    lines = [
        "# browserbay vs agent-browser: side-by-side benchmarks",
        "",
        "Regenerated by `bench/run.sh` (= `bench/setup.sh` + `.venv/bin/python bench/run.py`);",
        "every number below comes from that one run. Same machine, same Chromium, same local",
        "pages (`browserbay.demo.server`: `/form.html`, `/list.html?n=300`) for both tools.",
        "",
        f"Date: {facts['date']}",
        "",
        "## Machine",
        "",
    ]
    lines += [f"- {k}: {v}" for k, v in facts.items() if k != "date"]
    lines += [
        "",
        "The machine is shared: other sessions' test suites and benchmarks run on the same two",
        "cores (the load lines above), so every absolute time here is longer than on an idle",
        "machine, some by several times. Both tools are measured interleaved, rep by rep, so",
        "the ratios are the comparison; an idle machine's numbers would differ.",
    ]
    lines += ["", "## Results", "", render_table(rows, markdown=True), "", "## Notes", ""]
    lines += [f"- {x}" for x in notes]
    lines += [
        "- The click row alone, with a baseline checkout in the same run: `bench/click.py`"
        " (runs in bench/RESULTS-click.md).",
        "- Rows a, b and c before and after a change, a baseline checkout and agent-browser in"
        " the same run: `bench/perf.py` (runs in bench/RESULTS-perf.md).",
    ]
    RESULTS.write_text("\n".join(lines) + "\n")


def tools_missing(name: str) -> bool:
    """Whether bay, agent-browser or Chromium is missing (said on stderr as ``name:``)."""
    for path, what in ((BAY, "the bay CLI"), (AB, "agent-browser"), (CHROMIUM, "Chromium")):
        if not os.access(path, os.X_OK):
            print(f"{name}: {what} not found at {path}: run bench/setup.sh", file=sys.stderr)
            return True
    return False


def stop_on_signals() -> None:
    """SIGTERM and SIGHUP end a run like ^C does, so its ``finally`` stops what it started."""

    def on_term(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)


def main() -> int:
    if tools_missing("bench"):
        return 2
    stop_on_signals()
    subreaper = become_subreaper()

    from browserbay.demo.server import serve

    # Short paths on purpose: Chromium's SingletonSocket lands under BAY_HOME
    # (…/run/browsers/bb-…/tmp/org.chromium.Chromium.XXXXXX/SingletonSocket) and a unix
    # socket path has at most 107 bytes, so a BAY_HOME over ~32 characters cannot start one.
    work = Path(tempfile.mkdtemp(prefix="bb", dir="/tmp"))
    b = Bench(work)
    if not subreaper:
        b.notes.append("could not become a child subreaper: leftover checks are weaker")
    rows: list[Row] = []
    info: dict[str, Any] = {"load_start": foreign_load()}
    facts = machine()
    server, base = serve()
    code = 0
    try:
        steps: list[tuple[str, Callable[[], None]]] = [
            ("a/b/e warm", lambda: bench_warm(b, base, rows, info)),
            ("c cold", lambda: bench_cold(b, base, rows, info)),
            ("c components", lambda: bench_components(b, base, info)),
            ("d memory", lambda: bench_memory(b, base, rows, info)),
            ("f mcp tool list", lambda: bench_mcp_tool_list(b, rows, info)),
        ]
        for name, step in steps:
            if ONLY and name.split()[1] not in ONLY:
                continue
            print(f"bench: {name} …", file=sys.stderr, flush=True)
            t0 = time.monotonic()
            try:
                step()
            except Exception as exc:
                traceback.print_exc()
                b.notes.append(f"step {name} failed: {type(exc).__name__}: {exc}")
                code = 1
            print(f"bench: {name} done in {time.monotonic() - t0:.0f}s", file=sys.stderr)
    finally:
        b.stop_all()
        server.shutdown()
        server.server_close()
        if os.environ.get("BENCH_KEEP", "") in ("", "0"):
            shutil.rmtree(work, ignore_errors=True)
    info["load_end"] = foreign_load()
    facts["load at the start"] = info["load_start"]
    facts["load at the end"] = info["load_end"]
    order = {"a": 0, "a'": 1, "b": 2, "c": 3, "d": 4, "e": 5}
    rows.sort(key=lambda r: order.get(r.section, 9))
    notes = notes_text(info, b)
    print()
    print(render_table(rows, markdown=False))
    print()
    for x in notes:
        print("- " + x)
    if ONLY:
        print(f"\nBENCH_ONLY={','.join(sorted(ONLY))}: {RESULTS} left as it was")
    else:
        write_results(rows, facts, notes)
        print(f"\nwrote {RESULTS}")
    if any(r.met == "unknown" for r in rows):
        code = 1
    return code


if __name__ == "__main__":
    sys.exit(main())
