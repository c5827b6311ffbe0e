"""What every campaign shares: a private BAY_HOME under /tmp, the demo site on loopback, verbs
through :mod:`browserbay.client`, a census of the processes a home owns, registry checks, and
recording the figures (``campaigns/results/<name>.json`` and the campaign's section of
``RELIABILITY.md``).

Nothing here touches a keeper, a browser or a file outside the campaign's own home: processes
are recognised by their environment (``BAY_HOME`` for a keeper, ``HOME`` under the home for a
browser), never by a name.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from browserbay import client, procfs
from browserbay.paths import BayPaths, bay_paths

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
RELIABILITY = ROOT / "RELIABILITY.md"
BAY = str(Path(sys.executable).with_name("bay"))


# -- a private home -------------------------------------------------------------------------


class Home:
    """One BAY_HOME of the campaign's own (a short path: AF_UNIX limits), set in this
    process's environment so a keeper the client spawns serves it."""

    def __init__(self, prefix: str, **env: str):
        self.root = Path(tempfile.mkdtemp(prefix=f"bc-{prefix}-", dir="/tmp"))
        self.keep = os.environ.get("BAY_CAMPAIGN_KEEP") == "1"
        for key in list(os.environ):
            if key.startswith("BAY_"):
                del os.environ[key]
        os.environ["BAY_HOME"] = str(self.root)
        os.environ.update(env)
        self.paths: BayPaths = bay_paths({"BAY_HOME": str(self.root)})

    def call(self, session: str, verb: str, timeout: float = 30.0, **args: Any) -> dict[str, Any]:
        """One verb as ``session`` (a frame: ok or a refusal; never raises)."""
        return client.call(
            verb,
            args,
            session={"id": session, "origin": "api"},
            timeout=timeout,
            paths=self.paths,
        )

    def ok(self, session: str, verb: str, timeout: float = 30.0, **args: Any) -> dict[str, Any]:
        frame = self.call(session, verb, timeout, **args)
        if not frame.get("ok"):
            raise CampaignError(f"{session}: {verb} {args} was refused: {frame}")
        data = frame["data"]
        assert isinstance(data, dict)
        return data

    def bay(
        self, *argv: str, stdin: str | None = None, session: str = "cli"
    ) -> subprocess.CompletedProcess[str]:
        # This home's, whatever home another Home of the campaign set in the environment.
        env = dict(os.environ, BAY_SESSION=session, BAY_HOME=str(self.root))
        return subprocess.run(
            [BAY, *argv],
            capture_output=True,
            text=True,
            env=env,
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            timeout=120,
            check=False,
        )

    def keeper_pids(self) -> list[int]:
        return [p for p in procfs.pids() if _is_keeper_of(p, str(self.root))]

    def browsers(self) -> dict[str, int]:
        """Browser id -> pid of every browser main process whose HOME is under this home."""
        return browsers_under(str(self.root))

    def stop(self) -> None:
        """Stop everything this home runs: a graceful keeper stop, then whatever is left
        (a keeper: SIGTERM then SIGKILL; a browser of ours: SIGTERM)."""
        with contextlib.suppress(Exception):
            self.bay("keeper", "stop")
        end = time.monotonic() + 20
        while time.monotonic() < end and (self.keeper_pids() or self.browsers()):
            time.sleep(0.2)
        for pid in self.keeper_pids():
            _signal(pid, signal.SIGTERM)
        time.sleep(1)
        for pid in self.keeper_pids():
            _signal(pid, signal.SIGKILL)
        for pid in self.browsers().values():
            _signal(pid, signal.SIGTERM)
        end = time.monotonic() + 10
        while time.monotonic() < end and self.browsers():
            time.sleep(0.2)
        for pid in self.browsers().values():
            _signal(pid, signal.SIGKILL)

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


class CampaignError(Exception):
    pass


@contextlib.contextmanager
def home(prefix: str, **env: str) -> Iterator[Home]:
    """A home for the campaign; removed at the end unless ``h.keep`` was set (a failure:
    its keeper log and registry are evidence) or BAY_CAMPAIGN_KEEP=1."""
    h = Home(prefix, **env)
    try:
        yield h
    finally:
        h.stop()
        if h.keep:
            print(f"kept {h.root} (keeper log: {h.paths.keeper_log})", file=sys.stderr)
        else:
            h.remove()


@contextlib.contextmanager
def demo_site() -> Iterator[str]:
    from browserbay.demo.server import serve

    server, base = serve()
    server.handle_error = lambda request, address: None  # type: ignore[method-assign]
    try:
        yield base
    finally:
        server.shutdown()
        server.server_close()


# -- processes ------------------------------------------------------------------------------


#: The core's process facts, under the names the campaigns use.
alive = procfs.alive
environ_of = procfs.environ
#: The process and its descendants: the keeper's own /proc walk.
descendants = procfs.tree


def _is_keeper_of(pid: int, root: str) -> bool:
    if "browserbay.keeper" not in procfs.argv(pid) or not alive(pid):
        return False
    return environ_of(pid).get("BAY_HOME") == root


_MARK = re.compile(r"^--bay-browser=(bb-[0-9a-f]+)$")


def browsers_under(root: str) -> dict[str, int]:
    found: dict[str, int] = {}
    for pid in procfs.pids():
        argv = procfs.argv(pid)
        joined = " ".join(argv)
        if "--bay-browser=" not in joined or "--type=" in joined or not alive(pid):
            continue
        home_dir = environ_of(pid).get("HOME", "")
        if not home_dir.startswith(root + "/"):
            continue
        for word in argv:
            m = _MARK.match(word)
            if m:
                bid = m.group(1)
                found[bid] = min(pid, found.get(bid, pid))
    return found


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def kill9(pid: int) -> None:
    _signal(pid, signal.SIGKILL)


def wait_for(predicate: Callable[[], bool], timeout: float, step: float = 0.05) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(step)
    return bool(predicate())


def tcp_listeners_of(pids: list[int]) -> list[str]:
    """TCP sockets in LISTEN state held open by any of ``pids`` (or their threads):
    ``addr:port`` strings, from /proc/net/tcp{,6} and the processes' fd tables."""
    inodes: dict[str, str] = {}
    for name in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/net/{name}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if len(cols) > 9 and cols[3] == "0A":  # LISTEN
                inodes[cols[9]] = cols[1]
    found = []
    for pid in pids:
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inode = target[8:-1]
                if inode in inodes:
                    found.append(f"pid {pid} listens on {_addr(inodes[inode])}")
    return found


def _addr(hexaddr: str) -> str:
    host, port = hexaddr.split(":")
    if len(host) == 8:
        ip = ".".join(str(int(host[i : i + 2], 16)) for i in (6, 4, 2, 0))
    else:
        ip = f"[{host}]"
    return f"{ip}:{int(port, 16)}"


# -- the registry ---------------------------------------------------------------------------


def registry_problems(path: Path) -> list[str]:
    """Integrity, foreign keys and the invariants a half-applied write would break. Read
    only (another process's WAL database, opened for reading)."""
    if not path.exists():
        return []
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=15)
    try:
        problems = []
        integrity = db.execute("PRAGMA integrity_check").fetchall()
        if integrity != [("ok",)]:
            problems.append(f"integrity_check: {integrity[:5]}")
        fk = db.execute("PRAGMA foreign_key_check").fetchall()
        if fk:
            problems.append(f"foreign_key_check: {fk[:5]}")
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "kept_tabs" in tables:
            for session, profile, n, lo, hi, states, currents in db.execute(
                "SELECT session, profile, count(*), min(position), max(position), "
                "count(DISTINCT state), sum(current) FROM kept_tabs GROUP BY session, profile"
            ):
                if lo != 0 or hi != n - 1:
                    problems.append(
                        f"kept tabs of {session}/{profile}: positions {lo}..{hi} of {n}"
                    )
                if states != 1:
                    problems.append(f"kept tabs of {session}/{profile}: {states} states at once")
                if currents > 1:
                    problems.append(f"kept tabs of {session}/{profile}: {currents} current tabs")
        if "attachments" in tables:
            for (session,) in db.execute(
                "SELECT DISTINCT session FROM attachments WHERE session NOT IN "
                "(SELECT session FROM session_state)"
            ):
                problems.append(f"attachments of {session} without a session_state row")
            for session, n, distinct in db.execute(
                "SELECT session, count(*), count(DISTINCT position) FROM attachments "
                "GROUP BY session"
            ):
                if n != distinct:
                    problems.append(f"attachments of {session}: duplicate positions")
            for session, sv, seen in db.execute(
                "SELECT session, set_version, seen_version FROM session_state"
            ):
                if seen > sv:
                    problems.append(f"session_state of {session}: seen {seen} > set {sv}")
        if "profiles" in tables:
            # A keeper stores a directory under its data root relative to it (migration 10):
            # a BAY_HOME's data/ beside the registry's state/.
            data = path.parent.parent / "data"
            for pid, directory, adopted in db.execute("SELECT id, dir, adopted FROM profiles"):
                if not adopted and not (data / directory).is_dir():
                    problems.append(f"profile {pid} has no directory {directory}")
        return problems
    finally:
        db.close()


def registry_rows(path: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=15)
    try:
        return db.execute(sql, params).fetchall()
    finally:
        db.close()


# -- figures --------------------------------------------------------------------------------


def percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    q = statistics.quantiles(values, n=100, method="inclusive") if len(values) > 1 else values * 99
    return {
        "n": len(values),
        "p50": round(q[49], 1),
        "p95": round(q[94], 1),
        "p99": round(q[98], 1),
        "max": round(max(values), 1),
    }


def machine() -> str:
    return f"{os.cpu_count()} cores, Python {sys.version.split()[0]}"


def record(name: str, figures: dict[str, Any], markdown: str) -> None:
    """Write the campaign's figures (JSON) and replace its section of RELIABILITY.md."""
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")
    begin, end = f"<!-- figures:{name} -->", f"<!-- /figures:{name} -->"
    text = RELIABILITY.read_text() if RELIABILITY.exists() else ""
    block = f"{begin}\n{markdown.strip()}\n{end}"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        _old, tail = rest.split(end, 1)
        text = head + block + tail
    else:
        text = text.rstrip() + f"\n\n{block}\n"
    RELIABILITY.write_text(text)
    print(markdown)


def table(rows: list[tuple[str, Any]]) -> str:
    """A two-column markdown table of figures."""
    lines = ["| figure | value |", "|---|---|"]
    lines += [f"| {label} | {value} |" for label, value in rows]
    return "\n".join(lines) + "\n"


def today() -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
