"""Where traces live and how long: one directory per profile under the keeper's data dir.

``<data>/traces/<key>/`` holds, per action, ``<id>.json`` (the record) and ``<id>.before.jpg``
/ ``<id>.after.jpg`` (its frames). ``<key>`` is the profile's id (``bp-…``); an ephemeral
profile — a session's own browser — is kept under ``ep-`` + a hash of its id, so a session's
name never reaches a path. ``<data>/traces/reports/`` holds the HTML reports. Directories are
0700, files 0600, written through a temporary name so a reader never sees half a file.

Retention (:func:`prune`, in :mod:`browserbay.tracestore`, which the keeper's continuous
recording shares): an action, report or recording segment older than ``BAY_TRACE_DAYS`` days
(7) goes, then the oldest go until everything fits in ``BAY_TRACE_MB`` megabytes (200).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from browserbay.paths import ensure_private, write_private
from browserbay.tracestore import Retention, prune, trace_key

__all__ = ["Retention", "TraceStore", "prune", "trace_key"]

_ID = re.compile(r"\d{13}-\d{6}")


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
