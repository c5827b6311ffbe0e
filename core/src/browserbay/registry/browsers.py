"""The browsers the keeper started and the keeper runs (migration 1): what the orphan
sweep at the next start reads. Both are one keeper's (migration 10: ``keeper_id``; a row
from before it, NULL, is the one keeper's that ran then): a keeper of a fleet sweeps only
the browsers it started, never a live neighbour's."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

from browserbay.registry.db import Sql


@dataclass(frozen=True)
class BrowserRow:
    id: str
    provider: str
    pid: int | None
    keeper_pid: int
    home: str
    ephemeral: bool
    started_at: float


class Browsers(Protocol):
    def started(self, row: BrowserRow) -> None: ...
    def set_pid(self, browser_id: str, pid: int | None) -> None: ...
    def stopped(self, browser_id: str, reason: str) -> None:
        """The browser stopped; the first reason recorded stays."""

    def unstopped(self) -> list[BrowserRow]:
        """This keeper's browsers not recorded stopped."""


class KeeperRuns(Protocol):
    def started(self, pid: int, version: str) -> None: ...
    def stopped(self, pid: int) -> None: ...


class SqliteBrowsers:
    def __init__(self, db: Sql, keeper_id: str):
        self.db = db
        self.keeper_id = keeper_id

    def started(self, row: BrowserRow) -> None:
        self.db.execute(
            "INSERT INTO browsers(id, provider, pid, keeper_pid, home, ephemeral, started_at, "
            "keeper_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row.id,
                row.provider,
                row.pid,
                row.keeper_pid,
                row.home,
                int(row.ephemeral),
                row.started_at,
                self.keeper_id,
            ),
        )

    def set_pid(self, browser_id: str, pid: int | None) -> None:
        self.db.execute("UPDATE browsers SET pid=? WHERE id=?", (pid, browser_id))

    def stopped(self, browser_id: str, reason: str) -> None:
        self.db.execute(
            "UPDATE browsers SET stopped_at=?, stop_reason=? WHERE id=? AND stopped_at IS NULL",
            (time.time(), reason, browser_id),
        )

    def unstopped(self) -> list[BrowserRow]:
        rows = self.db.execute(
            "SELECT id, provider, pid, keeper_pid, home, ephemeral, started_at "
            "FROM browsers WHERE stopped_at IS NULL AND (keeper_id=? OR keeper_id IS NULL)",
            (self.keeper_id,),
        ).fetchall()
        return [BrowserRow(r[0], r[1], r[2], r[3], r[4], bool(r[5]), r[6]) for r in rows]


class SqliteKeeperRuns:
    """Runs keyed by keeper id and pid: two machines' keepers may have one pid."""

    def __init__(self, db: Sql, keeper_id: str):
        self.db = db
        self.keeper_id = keeper_id

    def started(self, pid: int, version: str) -> None:
        self.db.execute(
            "INSERT INTO keeper_runs(pid, version, started_at, keeper_id) VALUES (?, ?, ?, ?)",
            (pid, version, time.time(), self.keeper_id),
        )

    def stopped(self, pid: int) -> None:
        self.db.execute(
            "UPDATE keeper_runs SET stopped_at=? WHERE pid=? AND keeper_id=? "
            "AND stopped_at IS NULL",
            (time.time(), pid, self.keeper_id),
        )
