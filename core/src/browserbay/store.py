"""The registry: what the keeper knows that must survive it. SQLite in WAL mode.

The keeper is the only writer. Everything goes through :class:`Registry` (a small interface)
so a server database can take the SQLite file's place when users outgrow one machine.
Schema changes are numbered migrations applied in one transaction each.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

#: Ordered migrations. Never edit a released one: append a new one.
MIGRATIONS: Sequence[str] = (
    # 1: the foundation — sessions, the browsers the keeper started, keeper runs, audit.
    """
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        origin TEXT NOT NULL,
        first_seen REAL NOT NULL,
        last_seen REAL NOT NULL,
        closed_at REAL
    );
    CREATE TABLE browsers (
        id TEXT PRIMARY KEY,
        provider TEXT NOT NULL,
        pid INTEGER,
        keeper_pid INTEGER NOT NULL,
        home TEXT NOT NULL,
        ephemeral INTEGER NOT NULL,
        started_at REAL NOT NULL,
        stopped_at REAL,
        stop_reason TEXT
    );
    CREATE INDEX browsers_running ON browsers(stopped_at) WHERE stopped_at IS NULL;
    CREATE TABLE keeper_runs (
        pid INTEGER NOT NULL,
        version TEXT NOT NULL,
        started_at REAL NOT NULL,
        stopped_at REAL
    );
    CREATE TABLE audit (
        id INTEGER PRIMARY KEY,
        at REAL NOT NULL,
        session TEXT NOT NULL,
        profile TEXT,
        verb TEXT NOT NULL,
        ok INTEGER NOT NULL,
        code TEXT
    );
    """,
)


@dataclass(frozen=True)
class BrowserRow:
    id: str
    provider: str
    pid: int | None
    keeper_pid: int
    home: str
    ephemeral: bool
    started_at: float


class Registry(Protocol):
    """What the keeper needs from a store."""

    def schema_version(self) -> int: ...
    def integrity_check(self) -> str: ...
    def keeper_started(self, pid: int, version: str) -> None: ...
    def keeper_stopped(self, pid: int) -> None: ...
    def session_seen(self, session_id: str, origin: str) -> None: ...
    def session_closed(self, session_id: str) -> None: ...
    def browser_started(self, row: BrowserRow) -> None: ...
    def browser_pid(self, browser_id: str, pid: int | None) -> None: ...
    def browser_stopped(self, browser_id: str, reason: str) -> None: ...
    def unstopped_browsers(self) -> list[BrowserRow]: ...
    def audit(
        self, session: str, profile: str | None, verb: str, ok: bool, code: str | None
    ) -> None: ...
    def close(self) -> None: ...


class SqliteRegistry:
    """The registry in one SQLite file (WAL, synchronous=NORMAL, private mode 0600)."""

    def __init__(self, path: Path):
        self.path = path
        fresh = not path.exists()
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10.0)
        if fresh:
            os.chmod(path, 0o600)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self.migrate()

    # -- schema -----------------------------------------------------------------------

    def schema_version(self) -> int:
        return int(self.db.execute("PRAGMA user_version").fetchone()[0])

    def migrate(self) -> int:
        current = self.schema_version()
        if current > len(MIGRATIONS):
            raise RuntimeError(
                f"{self.path} has schema version {current}, newer than this browserbay "
                f"({len(MIGRATIONS)}); upgrade browserbay, or set BAY_HOME to another directory"
            )
        for number, script in enumerate(MIGRATIONS[current:], start=current + 1):
            self.db.execute("BEGIN IMMEDIATE")
            try:
                for statement in _statements(script):
                    self.db.execute(statement)
                self.db.execute(f"PRAGMA user_version={number}")
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
        return self.schema_version()

    def integrity_check(self) -> str:
        return str(self.db.execute("PRAGMA integrity_check").fetchone()[0])

    # -- keeper runs --------------------------------------------------------------------

    def keeper_started(self, pid: int, version: str) -> None:
        self.db.execute(
            "INSERT INTO keeper_runs(pid, version, started_at) VALUES (?, ?, ?)",
            (pid, version, time.time()),
        )

    def keeper_stopped(self, pid: int) -> None:
        self.db.execute(
            "UPDATE keeper_runs SET stopped_at=? WHERE pid=? AND stopped_at IS NULL",
            (time.time(), pid),
        )

    # -- sessions -----------------------------------------------------------------------

    def session_seen(self, session_id: str, origin: str) -> None:
        now = time.time()
        self.db.execute(
            "INSERT INTO sessions(id, origin, first_seen, last_seen) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET last_seen=excluded.last_seen, closed_at=NULL",
            (session_id, origin, now, now),
        )

    def session_closed(self, session_id: str) -> None:
        self.db.execute("UPDATE sessions SET closed_at=? WHERE id=?", (time.time(), session_id))

    # -- browsers -----------------------------------------------------------------------

    def browser_started(self, row: BrowserRow) -> None:
        self.db.execute(
            "INSERT INTO browsers(id, provider, pid, keeper_pid, home, ephemeral, started_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                row.id,
                row.provider,
                row.pid,
                row.keeper_pid,
                row.home,
                int(row.ephemeral),
                row.started_at,
            ),
        )

    def browser_pid(self, browser_id: str, pid: int | None) -> None:
        self.db.execute("UPDATE browsers SET pid=? WHERE id=?", (pid, browser_id))

    def browser_stopped(self, browser_id: str, reason: str) -> None:
        self.db.execute(
            "UPDATE browsers SET stopped_at=?, stop_reason=? WHERE id=? AND stopped_at IS NULL",
            (time.time(), reason, browser_id),
        )

    def unstopped_browsers(self) -> list[BrowserRow]:
        rows = self.db.execute(
            "SELECT id, provider, pid, keeper_pid, home, ephemeral, started_at "
            "FROM browsers WHERE stopped_at IS NULL"
        ).fetchall()
        return [BrowserRow(r[0], r[1], r[2], r[3], r[4], bool(r[5]), r[6]) for r in rows]

    # -- audit --------------------------------------------------------------------------

    def audit(
        self, session: str, profile: str | None, verb: str, ok: bool, code: str | None
    ) -> None:
        """One row per verb: who, where, what, whether. Never a typed value."""
        self.db.execute(
            "INSERT INTO audit(at, session, profile, verb, ok, code) VALUES (?, ?, ?, ?, ?, ?)",
            (time.time(), session, profile, verb, int(ok), code),
        )

    def close(self) -> None:
        self.db.close()


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]
