"""Faults that must read as themselves: a full disk is ``disk_full`` (never
``keeper_unavailable`` or ``internal_error``), with where and how to get out of it."""

from __future__ import annotations

import errno
import shutil
import sqlite3
from pathlib import Path

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
