"""Fixtures for the local-window tests: a keeper of their own per module (its display starts
with the first window and stops with the last), the GTK test app, and helpers that start a
window and read the tree. Every process a test starts is ended by the test or its fixture."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browserbay import procfs
from browserbay_testing import Bay

HERE = Path(__file__).resolve().parent
GTK_APP = str(HERE / "gtk_app.py")
BIG_APP = str(HERE / "gtk_big_app.py")
DEBIAN_PYTHON = "/usr/bin/python3"


def have_gtk() -> bool:
    if not os.access(DEBIAN_PYTHON, os.X_OK) or shutil.which("Xvfb") is None:
        return False
    probe = "import gi; gi.require_version('Gtk', '3.0'); gi.require_version('Atspi', '2.0')"
    return subprocess.run([DEBIAN_PYTHON, "-c", probe], capture_output=True).returncode == 0


def new_home(prefix: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=f"bay-{prefix}-", dir="/tmp"))


@pytest.fixture(scope="module")
def wbay() -> Iterator[Bay]:
    """One keeper for a test module; sessions keep the tests apart."""
    home = new_home("w")
    b = Bay(home)
    yield b
    finish(b)


def finish(bay: Bay) -> None:
    """Stop the keeper, wait until it has exited (it ends its display and apps on the way
    out), then remove its home."""
    r = bay("keeper", "status", session=None, env={"BAY_NO_AUTOSTART": "1"})
    pid = r.frame["data"]["pid"] if r.code == 0 else None
    bay.stop()
    if isinstance(pid, int):
        gone(pid, 20.0)
    shutil.rmtree(bay.home, ignore_errors=True)


def wopen(bay: Bay, *command: str, session: str = "a", **env: str) -> dict[str, Any]:
    """`bay window open --json -- <command>` (``--json`` before ``--``: after it, every word
    is the command's)."""
    r = bay("window", "open", "--json", "--", *command, session=session, json_=False, env=env)
    assert r.code == 0, r
    data: dict[str, Any] = r.data
    return data


def snapshot(bay: Bay, handle: str, *extra: str, session: str = "a") -> dict[str, Any]:
    data: dict[str, Any] = bay.ok("window", "snapshot", handle, *extra, session=session)
    return data


def node(snap: dict[str, Any], role: str, name: str | None = None) -> dict[str, Any]:
    for n in snap["nodes"]:
        if n["role"] == role and (name is None or n["name"] == name):
            return n
    raise AssertionError(f"no {role} {name!r} in:\n{snap['tree']}")


def wait_for(fn: Any, timeout: float = 10.0, every: float = 0.2) -> Any:
    end = time.monotonic() + timeout
    while True:
        value = fn()
        if value or time.monotonic() > end:
            return value
        time.sleep(every)


def gone(pid: int, timeout: float = 10.0) -> bool:
    return bool(wait_for(lambda: not procfs.alive(pid), timeout, 0.05))


def display_processes(bay: Bay, session: str = "a") -> dict[str, int]:
    """The pids of our display's Xvfb, session bus and AT-SPI bus launcher."""
    found: dict[str, int] = bay.ok("window", "list", session=session)["displays"]["processes"]
    return found


def kill_quietly(pid: int) -> None:
    for sig in (signal.SIGCONT, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except OSError:
            return
