"""Child processes of the keeper: started with anyio (never blocking the event loop), each in
a process group of its own, tied to the keeper's life with ``setpriv --pdeathsig`` where it
exists (a keeper killed with SIGKILL takes its X server and buses with it), and ended
gracefully: SIGTERM to the group, then SIGKILL after a grace period.

Every pid started here is remembered so that the keeper's exit (``atexit``) can end what is
still running even when the event loop is already gone."""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import anyio.abc

from browserbay import procfs

log = logging.getLogger("browserbay.local_window")

#: pid -> what it is, for every process started here and not yet ended.
LIVE: dict[int, str] = {}
#: Private directories (a display's runtime) removed at exit once their processes are gone.
DIRS: set[str] = set()


def setpriv() -> str | None:
    return shutil.which("setpriv")


def wrapped(argv: Sequence[str]) -> list[str]:
    """``argv`` behind ``setpriv --pdeathsig TERM`` when setpriv is there: the child gets
    SIGTERM when the keeper dies, however it dies."""
    tool = setpriv()
    return [tool, "--pdeathsig", "TERM", "--", *argv] if tool else list(argv)


async def spawn(
    argv: Sequence[str],
    env: Mapping[str, str],
    what: str,
    *,
    stdin: Any = None,
    stdout: Any = None,
    stderr: Any = None,
    pass_fds: Sequence[int] = (),
    cwd: str | None = None,
) -> anyio.abc.Process:
    proc = await anyio.open_process(
        wrapped(argv),
        env=dict(env),
        stdin=stdin if stdin is not None else subprocess.DEVNULL,
        stdout=stdout if stdout is not None else subprocess.DEVNULL,
        stderr=stderr if stderr is not None else subprocess.DEVNULL,
        pass_fds=pass_fds,
        start_new_session=True,
        cwd=cwd,
    )
    LIVE[proc.pid] = what
    log.info("started %s (pid %d)", what, proc.pid)
    return proc


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


async def end(proc: anyio.abc.Process, grace: float = 3.0, *, term: bool = True) -> int | None:
    """End ``proc`` and its process group: SIGTERM (unless it was asked to go some other way
    already and ``term`` is False), wait ``grace`` seconds, then SIGKILL."""
    if proc.returncode is None and term:
        _signal_group(proc.pid, signal.SIGTERM)
    with anyio.move_on_after(grace):
        await proc.wait()
    if proc.returncode is None:
        log.warning("%s (pid %d) ignored SIGTERM: killing it", LIVE.get(proc.pid), proc.pid)
        _signal_group(proc.pid, signal.SIGKILL)
        with anyio.move_on_after(2.0):
            await proc.wait()
    else:
        _signal_group(proc.pid, signal.SIGKILL)  # what the group left behind
    LIVE.pop(proc.pid, None)
    return proc.returncode


def _end_all_at_exit() -> None:
    """The keeper is exiting (``bay keeper stop``, SIGTERM): whatever is still running ends
    with it. Applications first (SIGTERM, a short grace, SIGKILL), then the rest."""
    pids = list(LIVE)
    for pid in pids:
        _signal_group(pid, signal.SIGTERM)
    end_at = time.monotonic() + 3.0
    while time.monotonic() < end_at and any(procfs.alive(p) for p in pids):
        for pid in pids:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
        time.sleep(0.05)
    for pid in pids:
        _signal_group(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)
    LIVE.clear()
    for path in list(DIRS):
        shutil.rmtree(path, ignore_errors=True)
    DIRS.clear()


atexit.register(_end_all_at_exit)
