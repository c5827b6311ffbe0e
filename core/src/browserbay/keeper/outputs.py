"""``run/outputs``: the full texts of answers that were cut (``bay get text`` past 50,000
characters, ``bay run``'s long output). Written by clients, pruned by the keeper — at start
and at every housekeeping tick, in a worker thread — by age and by total size, oldest first.
"""

from __future__ import annotations

import logging
import os
import stat
import time
from pathlib import Path

log = logging.getLogger("browserbay.keeper")


def regular_files(directory: Path) -> list[tuple[float, int, str]]:
    """(mtime, size, path) of each regular file directly in ``directory`` (symlinks and
    directories left out, nothing followed); none when it does not exist. Blocking."""
    files: list[tuple[float, int, str]] = []
    try:
        with os.scandir(directory) as it:
            for entry in it:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    files.append((st.st_mtime, st.st_size, entry.path))
    except FileNotFoundError:
        pass
    return files


def prune(
    directory: Path,
    max_age: float,
    max_bytes: int,
    now: float | None = None,
) -> tuple[int, int]:
    """Remove the regular files of ``directory`` older than ``max_age``, then the oldest
    until the rest weigh at most ``max_bytes``. Symlinks and directories are left alone
    (nothing is followed). Answers (files removed, bytes freed). Blocking: run it off the
    loop."""
    now = time.time() if now is None else now
    files = sorted(regular_files(directory))
    total = sum(size for _, size, _ in files)
    removed = freed = 0
    for mtime, size, path in files:
        if now - mtime <= max_age and total <= max_bytes:
            break  # the rest are newer, and they fit
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.warning("could not prune %s: %s", path, exc.strerror)
            continue
        total -= size
        removed += 1
        freed += size
    if removed:
        log.info("pruned %d spill file(s) of %s (%d bytes)", removed, directory, freed)
    return removed, freed
