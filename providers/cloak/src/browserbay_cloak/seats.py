"""CloakBrowser seats: how many this keeper uses, and what the licence's total is known to be.

*Used* is the keeper's own count (no vendor interface answers "how many seats is this key
holding"; asking would be a poll). The *total* has three states:

``fresh``
    read from a launch of this key, and the key launched within :data:`STALE_AFTER` (7
    days). The only state in which a ceiling refusal is possible.
``stale``
    the last reading is older: shown as a hint ("was N on <date>"), never a constraint.
``unknown``
    this key has never given a reading — the normal state, and always the state of a
    cluster default (its seats are shared with other machines: this instance cannot count
    them). Never a number, never compared.

A reading comes only from a launch the user asked for: when the binary refuses with its
seat-limit code (76) while this keeper holds ``N`` seats of a key that is the user's own,
the total is ``N``; a later launch that succeeds with more than a recorded total running
drops the reading (it was wrong). Keys are remembered by a digest, never their value.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

STALE_AFTER = 7 * 24 * 3600.0

State = Literal["fresh", "stale", "unknown"]


@dataclass(frozen=True)
class Reading:
    total: int
    at: float


@dataclass(frozen=True)
class Seats:
    used: int
    reading: Reading | None
    now: float

    @property
    def state(self) -> State:
        if self.reading is None:
            return "unknown"
        return "fresh" if self.now - self.reading.at <= STALE_AFTER else "stale"

    @property
    def total(self) -> int | None:
        """The total, only while it is fresh (stale and unknown have no number to compare)."""
        return self.reading.total if self.reading is not None and self.state == "fresh" else None

    def at_ceiling(self) -> bool:
        """Would one more launch exceed the known total? Never True unless fresh."""
        total = self.total
        return total is not None and self.used >= total

    def describe(self) -> str:
        if self.reading is None:
            return (
                f"{self.used} used; seat limit unknown — it becomes known the first time this "
                "key's launch is refused for its seat limit"
            )
        age = _age(self.now - self.reading.at)
        if self.state == "fresh":
            return f"{self.used} used / {self.reading.total} total (read from a launch {age} ago)"
        return (
            f"{self.used} used; seat limit unknown (it was {self.reading.total}, read {age} ago: "
            "too old to hold anyone back)"
        )


def _age(seconds: float) -> str:
    if seconds < 3600:
        return f"{int(seconds // 60)} min"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h"
    return f"{int(seconds // 86400)} d"


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:16]


class Ledger:
    """The seat-limit readings, one per key digest, in a private JSON file."""

    def __init__(self, path: Path):
        self.path = path

    def _load(self) -> dict[str, dict[str, float]]:
        try:
            value = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return value if isinstance(value, dict) else {}

    def _save(self, table: dict[str, dict[str, float]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(table, f)
        os.replace(tmp, self.path)

    def reading(self, key: str | None) -> Reading | None:
        if not key:
            return None
        row = self._load().get(key_digest(key))
        if not isinstance(row, dict):
            return None
        try:
            return Reading(int(row["total"]), float(row["at"]))
        except (KeyError, TypeError, ValueError):
            return None

    def seats(self, key: str | None, used: int, key_source: str, now: float | None = None) -> Seats:
        """What is known now. A cluster default's total is always unknown."""
        reading = self.reading(key) if key_source == "user" else None
        return Seats(used, reading, time.time() if now is None else now)

    def refused_at(self, key: str | None, used: int, key_source: str) -> None:
        """The binary refused a launch for its seat limit while ``used`` seats of this key
        were ours: for the user's own key that is the total. Nothing is learned from a
        cluster default, nor from a refusal while we held none (the seats are elsewhere)."""
        if not key or key_source != "user" or used < 1:
            return
        table = self._load()
        table[key_digest(key)] = {"total": used, "at": time.time()}
        self._save(table)

    def launched(self, key: str | None, running: int) -> None:
        """A launch succeeded with ``running`` seats of this key in use: a recorded total
        below that was wrong and is dropped; one that still holds is refreshed (the
        reading is renewed by the very act it constrains)."""
        if not key:
            return
        table = self._load()
        digest = key_digest(key)
        row = table.get(digest)
        if not isinstance(row, dict):
            return
        if int(row.get("total", 0)) < running:
            del table[digest]
        else:
            row["at"] = time.time()
        self._save(table)
