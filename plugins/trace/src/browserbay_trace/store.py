"""Where traces live and how long: one directory per profile under the keeper's data dir.

``<data>/traces/<key>/`` holds, per action, ``<id>.json`` (the record) and ``<id>.before.jpg``
/ ``<id>.after.jpg`` (its frames). ``<key>`` is the profile's id (``bp-…``); an ephemeral
profile — a session's own browser — is kept under ``ep-`` + a hash of its id, so a session's
name never reaches a path. ``<data>/traces/reports/`` holds the HTML reports. Directories are
0700, files 0600, written through a temporary name so a reader never sees half a file.

Retention (:func:`prune`): an action or report older than ``BAY_TRACE_DAYS`` days (7) goes,
then the oldest go until everything fits in ``BAY_TRACE_MB`` megabytes (200).
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

from browserbay.paths import ensure_private, write_private

DEFAULT_DAYS = 7.0
DEFAULT_MB = 200.0
_PROFILE_ID = re.compile(r"bp-[0-9a-f]{8}")
_ID = re.compile(r"\d{13}-\d{6}")
#: An empty profile directory younger than this (seconds) is left alone by pruning.
EMPTY_DIR_GRACE = 60.0


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


class TraceStore:
    def __init__(self, root: Path):
        self.root = root

    def profile_dir(self, key: str) -> Path:
        return self.root / key

    @property
    def reports(self) -> Path:
        return self.root / "reports"

    def ensure(self, d: Path) -> Path:
        ensure_private(self.root)
        ensure_private(d)
        return d

    def save(
        self, key: str, action_id: str, record: dict[str, Any], frames: dict[str, bytes]
    ) -> int:
        """Write one action's frames, then its record (a record never names a frame that is
        not there). Answers the bytes written."""
        d = self.ensure(self.profile_dir(key))
        written = 0
        for which, jpeg in frames.items():
            write_private(d / f"{action_id}.{which}.jpg", jpeg)
            written += len(jpeg)
        body = json.dumps(record, ensure_ascii=False, sort_keys=True).encode()
        write_private(d / f"{action_id}.json", body)
        return written + len(body)

    def actions(self, key: str, last: int, session: str | None = None) -> list[dict[str, Any]]:
        """The newest ``last`` records of a profile (of ``session``'s actions only, when
        given), oldest first; each with ``frames``: the paths of the frames still on disk."""
        d = self.profile_dir(key)
        if not d.is_dir():
            return []
        ids = sorted(p.stem for p in d.glob("*.json") if _ID.fullmatch(p.stem))
        out: list[dict[str, Any]] = []
        for action_id in reversed(ids):
            if len(out) >= last:
                break
            try:
                record = json.loads((d / f"{action_id}.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue  # pruned or cut meanwhile
            if session is not None and record.get("session") != session:
                continue
            record["frames"] = {
                which: str(d / f"{action_id}.{which}.jpg")
                for which in ("before", "after")
                if (d / f"{action_id}.{which}.jpg").is_file()
            }
            out.append(record)
        return out[::-1]


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
