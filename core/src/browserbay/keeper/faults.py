"""Faults that must read as themselves: a full disk is ``disk_full`` (never
``keeper_unavailable`` or ``internal_error``), with where and how to get out of it — and the
faults tests and campaigns inject on purpose (:class:`FaultPlan`)."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import sqlite3
import time
from pathlib import Path

import anyio

from browserbay.refusals import Refusal

#: "No space left on device" and "Disk quota exceeded".
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


def is_disk_full(exc: BaseException | None) -> bool:
    """``exc`` (or what caused it) is a write that failed for want of space."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, OSError) and exc.errno in DISK_ERRNOS:
            return True
        if isinstance(exc, sqlite3.Error):
            code = getattr(exc, "sqlite_errorcode", None)
            if (code is not None and code & 0xFF == sqlite3.SQLITE_FULL) or "disk is full" in str(
                exc
            ):
                return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def _free(where: Path) -> str:
    try:
        free = shutil.disk_usage(where).free
    except OSError:
        return "unknown"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if free >= size:
            return f"{free / size:.1f} {unit}"
    return f"{free} bytes"


def disk_full(verb: str, where: Path, exc: BaseException) -> Refusal:
    """The refusal of a verb whose write found the disk under ``where`` full (``where``:
    the keeper's home; the free space is measured now)."""
    reason = (
        "a file could not be written"
        if isinstance(exc, OSError)
        else "the registry (SQLite) could not write"
    )
    return Refusal("disk_full", verb=verb, where=str(where), free=_free(where), reason=reason)


class FaultPlan:
    """Faults injected at named points of the keeper's work, for tests and campaigns only —
    so that a kill lands at an exact step (after a trigger's claim, in the middle of writing
    its result…) instead of at a random moment.

    Read from ``BAY_FAULTS`` when the keeper starts; unset (every real keeper), every point
    is a no-op. ``BAY_FAULTS`` is ``point@key=fault`` entries separated by commas: ``key`` is
    what the point names (a trigger's request UUID) or ``*``; ``fault`` is ``kill``
    (SIGKILL of the keeper itself) or ``sleep:<seconds>``. Example:
    ``trigger.acting@0b0e…=kill``."""

    def __init__(self, spec: str = ""):
        self.faults: dict[tuple[str, str], str] = {}
        for entry in filter(None, (e.strip() for e in spec.split(","))):
            where, _, fault = entry.partition("=")
            point, _, key = where.partition("@")
            if fault != "kill" and not (fault.startswith("sleep:") and _seconds(fault[6:])):
                raise ValueError(f"BAY_FAULTS: {entry!r} is not point@key=kill|sleep:<s>")
            self.faults[(point, key or "*")] = fault

    @classmethod
    def from_environ(cls) -> FaultPlan:
        return cls(os.environ.get("BAY_FAULTS", ""))

    def _fault(self, point: str, key: str) -> str | None:
        if not self.faults:
            return None
        return self.faults.get((point, key)) or self.faults.get((point, "*"))

    def hit(self, point: str, key: str) -> None:
        """The point, in a worker thread: a kill, or a blocking sleep."""
        fault = self._fault(point, key)
        if fault == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        elif fault is not None:
            time.sleep(float(fault[6:]))

    async def ahit(self, point: str, key: str) -> None:
        """The point, on the event loop: a kill, or a sleep that blocks nothing else."""
        fault = self._fault(point, key)
        if fault == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        elif fault is not None:
            await anyio.sleep(float(fault[6:]))


def _seconds(text: str) -> bool:
    try:
        return float(text) >= 0
    except ValueError:
        return False
