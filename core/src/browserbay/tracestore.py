"""The trace store's layout and retention, shared by the trace plugin (its actions and
reports) and the keeper's continuous recording (its video segments): one directory per
profile under ``<data>/traces/``, and one :func:`prune` that removes the oldest *units*
(an action with its frames, a report, a recording segment with its sidecar) past the age
or the size bound. The same rules and the same prune for all of them, so a recording is
bounded exactly as the trace is (docs/trace.md "Retention").

A unit is every file of one directory that shares the name's first part (before the first
dot): ``<id>.json`` + ``<id>.before.jpg`` + ``<id>.after.jpg``; ``rec-<ms>-<tab>.webm`` +
``rec-<ms>-<tab>.json``. Whole units go (a record never outlives its frames).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from browserbay.paths import BayPaths

DEFAULT_DAYS = 7.0
DEFAULT_MB = 200.0
_PROFILE_ID = re.compile(r"bp-[0-9a-f]{8}")
#: An empty profile directory younger than this (seconds) is left alone by pruning.
EMPTY_DIR_GRACE = 60.0
#: A recording segment's name (without its extension): its start in ms since the epoch and
#: its tab.
SEGMENT = re.compile(r"rec-(\d{13})-([A-Za-z0-9_-]{1,40})")


def traces_root(paths: BayPaths) -> Path:
    """Where every trace unit lives: ``<data>/traces``."""
    return paths.data / "traces"


def trace_key(profile_id: str) -> str:
    """The directory name of a profile's traces."""
    if _PROFILE_ID.fullmatch(profile_id):
        return profile_id
    return "ep-" + hashlib.sha256(profile_id.encode("utf-8", "replace")).hexdigest()[:16]


@dataclass(frozen=True)
class Retention:
    max_age_s: float
    max_bytes: int

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Retention:
        env = os.environ if env is None else env
        days = _positive(env, "BAY_TRACE_DAYS", DEFAULT_DAYS)
        megabytes = _positive(env, "BAY_TRACE_MB", DEFAULT_MB)
        return cls(days * 86400, int(megabytes * 1024 * 1024))


def _positive(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(
            f"{name} must be a number, not {raw!r} (unset it for {default:g})"
        ) from None
    if not value > 0:
        raise ValueError(f"{name} must be more than 0, not {raw!r} (unset it for {default:g})")
    return value


@dataclass(frozen=True)
class Segment:
    """A finished recording segment of one tab, as its sidecar says: the video plays from
    ``started`` (wall clock) to ``ended``."""

    video: Path
    tab: str
    session: str
    started: float
    ended: float
    frames: int

    def covers(self, tab: str, at: float) -> bool:
        return tab == self.tab and self.started <= at <= self.ended


def segments(root: Path, key: str) -> list[Segment]:
    """The finished segments of a profile's traces (their video and sidecar both on disk),
    oldest first."""
    d = root / key
    if not d.is_dir():
        return []
    out: list[Segment] = []
    for side in sorted(d.glob("rec-*.json")):
        if not SEGMENT.fullmatch(side.stem):
            continue
        try:
            said: dict[str, Any] = json.loads(side.read_text(encoding="utf-8"))
            video = d / str(said["video"])
            seg = Segment(
                video,
                str(said["tab"]),
                str(said["session"]),
                float(said["started"]),
                float(said["ended"]),
                int(said["frames"]),
            )
        except (OSError, ValueError, KeyError, TypeError):
            continue  # pruned or cut meanwhile
        if video.parent == d and video.is_file():
            out.append(seg)
    return out


def _units(root: Path) -> list[tuple[float, int, list[Path]]]:
    """Everything under the traces root as (newest mtime, bytes, files) per action or report."""
    groups: dict[tuple[Path, str], list[Path]] = {}
    for d in (p for p in root.iterdir() if p.is_dir() and not p.is_symlink()):
        try:
            files = [f for f in d.iterdir() if f.is_file() and not f.is_symlink()]
        except OSError:  # removed meanwhile (another prune)
            continue
        for f in files:
            groups.setdefault((d, f.name.split(".", 1)[0] or f.name), []).append(f)
    units = []
    for files in groups.values():
        newest, size = 0.0, 0
        for f in files:
            with contextlib.suppress(OSError):
                st = f.stat()
                newest = max(newest, st.st_mtime)
                size += st.st_size
        units.append((newest, size, files))
    return units


def prune(root: Path, retention: Retention, now: float | None = None) -> dict[str, int]:
    """Remove what is older than the bound, then the oldest until the rest fits. Answers
    what was removed and what is kept (files and bytes)."""
    now = time.time() if now is None else now
    if not root.is_dir():
        return {"removed": 0, "removed_bytes": 0, "kept": 0, "kept_bytes": 0}
    units = sorted(_units(root), key=lambda u: u[0])
    removed = removed_bytes = 0
    keep: list[tuple[float, int, list[Path]]] = []
    for unit in units:
        if now - unit[0] > retention.max_age_s:
            removed, removed_bytes = removed + len(unit[2]), removed_bytes + unit[1]
            _remove(unit[2])
        else:
            keep.append(unit)
    total = sum(u[1] for u in keep)
    while keep and total > retention.max_bytes:
        oldest = keep.pop(0)
        total -= oldest[1]
        removed, removed_bytes = removed + len(oldest[2]), removed_bytes + oldest[1]
        _remove(oldest[2])
    for d in root.iterdir():
        with contextlib.suppress(OSError):
            # Only when empty, and not just made (the writer makes a directory, then fills it).
            if d.is_dir() and not d.is_symlink() and now - d.stat().st_mtime > EMPTY_DIR_GRACE:
                d.rmdir()
    kept = sum(len(u[2]) for u in keep)
    return {"removed": removed, "removed_bytes": removed_bytes, "kept": kept, "kept_bytes": total}


def _remove(files: list[Path]) -> None:
    # The record first: a reader never meets a record whose frames are gone.
    for f in sorted(files, key=lambda p: not p.name.endswith(".json")):
        with contextlib.suppress(OSError):
            f.unlink()
