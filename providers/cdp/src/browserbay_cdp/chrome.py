"""``bay chrome``: start the user's own Chrome (or Chromium) with remote debugging on a
directory of its own, check that it answers, and register it as a ``cdp`` profile.

Chrome 136+ ignores ``--remote-debugging-port`` on its default user-data-dir, so the browser
gets a dedicated one under the data dir, named by a hash of the profile label (the label
itself never reaches a path). The browser is started in a session of its own and is not the
keeper's: it outlives the keeper, and nothing of bay ever closes it.

That port has no credential: every local user and every process can drive the browser through
it. ``--remote-debugging-pipe`` would not do here (the pipe belongs to the process that holds
it, and the browser dies with it, while this browser is meant to outlive the keeper), so the
port is opened only when asked for by name (``--allow-open-port``), else refused
``open_port_refused``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio

from browserbay import sandbox
from browserbay.model import VerbContext
from browserbay.paths import ensure_private
from browserbay.refusals import Refusal
from browserbay_cdp.endpoint import PORT_FILE, chrome_root, from_dir, read_port_file

#: The user's own browser first (Google Chrome), then Chromium and Edge.
CANDIDATES: tuple[str, ...] = (
    "/opt/google/chrome/chrome",
    "/usr/bin/google-chrome-stable",
    "/usr/bin/google-chrome",
    "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
    "/usr/lib/chromium/chromium",
    "/usr/bin/chromium",
    "/usr/lib/chromium-browser/chromium-browser",
    "/snap/bin/chromium",
    "/Applications/Chromium.app/Contents/MacOS/Chromium",
    "/opt/microsoft/msedge/msedge",
)
NAMES: tuple[str, ...] = ("google-chrome-stable", "google-chrome", "chromium", "chromium-browser")
#: How long the started browser has to answer on its debugging port.
ANSWER_WITHIN = 3.0
LOG_TAIL = 20


def find_chrome(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    explicit = env.get("BAY_CHROME_PATH", "")
    if explicit:
        if os.path.isfile(explicit) and os.access(explicit, os.X_OK):
            return explicit
        raise Refusal(
            "backend_unavailable",
            provider="cdp",
            reason=f"BAY_CHROME_PATH={explicit} is not an executable file",
            fix="point BAY_CHROME_PATH at your Chrome or Chromium, or unset it",
        )
    for path in CANDIDATES:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    for name in NAMES:
        found = shutil.which(name, path=env.get("PATH"))
        if found:
            return found
    raise Refusal(
        "backend_unavailable",
        provider="cdp",
        reason="no Chrome, Chromium or Edge was found on this machine",
        fix="install Google Chrome (or apt-get install -y chromium), or set BAY_CHROME_PATH",
    )


def directory_for(label: str) -> Path:
    return chrome_root() / f"chrome-{hashlib.sha256(label.encode()).hexdigest()[:12]}"


def tail(path: Path, lines: int = LOG_TAIL) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(the log is empty)"


def start(executable: str, directory: Path, log: Path, headless: bool, extra: list[str]) -> int:
    """Start the browser detached from the keeper (its own session, its own log); answers its
    pid. Runs in a worker thread."""
    ensure_private(directory.parent)
    ensure_private(directory)
    (directory / PORT_FILE).unlink(missing_ok=True)  # a stale one would name a dead port
    argv = [
        executable,
        f"--user-data-dir={directory}",
        "--remote-debugging-port=0",
        "--no-first-run",
        "--no-default-browser-check",
    ]
    if headless:
        argv.append("--headless=new")
    argv += sandbox.flags("cdp")  # --no-sandbox only as root
    argv += [*extra, "about:blank"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("BAY_")}
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=fd,
            stderr=fd,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
    finally:
        os.close(fd)
    return proc.pid


def wait_answer(directory: Path, pid: int, within: float) -> str | None:
    """The browser's WebSocket URL once it answers, or None (it exited, or time ran out)."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        if read_port_file(directory) is not None:
            ws = from_dir(directory, timeout=0.5)
            if ws is not None:
                return ws
        try:
            done, _status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done == pid:
            return None
        time.sleep(0.05)
    return None


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


async def chrome_verb(ctx: VerbContext) -> tuple[dict[str, Any], str]:
    label = str(ctx.args.get("profile") or "chrome")
    directory = directory_for(label)
    log = directory.parent / f"{directory.name}.log"
    started = False
    pid: int | None = None
    ws = await anyio.to_thread.run_sync(from_dir, directory)
    if ws is None and not ctx.args.get("allow_open_port"):
        raise Refusal(
            "open_port_refused",
            why="a pipe would end it with the keeper; pass --allow-open-port to accept the port",
        )
    if ws is None:  # not running yet on that directory: start it
        executable = find_chrome()
        extra = [str(a) for a in ctx.args.get("args") or []]
        headless = bool(ctx.args.get("headless"))
        pid = await anyio.to_thread.run_sync(start, executable, directory, log, headless, extra)
        ws = await anyio.to_thread.run_sync(wait_answer, directory, pid, ANSWER_WITHIN)
        if ws is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)  # it never answered: do not leave it behind
            await anyio.to_thread.run_sync(_reap, pid)
            raise Refusal(
                "backend_unavailable",
                provider="cdp",
                reason=f"{executable} did not answer on its debugging port within "
                f"{ANSWER_WITHIN:g}s; the last lines of its log ({log}):\n"
                + await anyio.to_thread.run_sync(tail, log),
                fix=f"read {log}; then bay chrome again (BAY_CHROME_PATH picks another browser)",
                log=str(log),
            )
        started = True
    listing, _ = await ctx.keeper_verb("profiles", {})
    rows = [
        p
        for p in listing.get("profiles", [])
        if p["label"] == label and p["provider"] == "cdp" and "devtools_dir" in p["options"]
    ]
    if rows:
        profile = rows[0]
    else:
        new_args = {"label": label, "provider": "cdp", "cdp_url": str(directory)}
        profile, _ = await ctx.keeper_verb("new", new_args)
    port = ws.split("//", 1)[1].split("/", 1)[0]
    data = {
        "profile": profile["id"],
        "label": label,
        "started": started,
        "pid": pid,
        "dir": str(directory),
        "log": str(log),
        "endpoint": f"http://{port}",
    }
    what = f"started (pid {pid})" if started else "already running"
    text = (
        f"Chrome {what} on {directory}, answering at http://{port}\n"
        f"profile {label} ({profile['id']}) · cdp\nuse it: bay use {profile['id']}"
    )
    return data, text
