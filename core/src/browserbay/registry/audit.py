"""The audit log (migrations 1 and 7): one row per action — who, where, what, by which
road, whether. Never a typed value."""

from __future__ import annotations

import time
from typing import Any, Protocol

from browserbay.registry.db import Database


class Audit(Protocol):
    def record(
        self,
        session: str,
        profile: str | None,
        verb: str,
        ok: bool,
        code: str | None,
        road: str | None = None,
    ) -> None: ...
    def rows(self, profile_id: str | None, limit: int) -> list[dict[str, Any]]:
        """The newest ``limit`` rows (of one profile, or all), oldest first."""


class SqliteAudit:
    def __init__(self, db: Database):
        self.db = db

    def record(
        self,
        session: str,
        profile: str | None,
        verb: str,
        ok: bool,
        code: str | None,
        road: str | None = None,
    ) -> None:
        self.db.execute(
            "INSERT INTO audit(at, session, profile, verb, ok, code, road) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (time.time(), session, profile, verb, int(ok), code, road),
        )

    def rows(self, profile_id: str | None, limit: int) -> list[dict[str, Any]]:
        sql = "SELECT at, session, profile, verb, ok, code, road FROM audit"
        params: tuple[Any, ...] = ()
        if profile_id is not None:
            sql += " WHERE profile=?"
            params = (profile_id,)
        sql += " ORDER BY id DESC LIMIT ?"
        rows = self.db.execute(sql, (*params, limit)).fetchall()
        return [
            {
                "at": r[0],
                "session": r[1],
                "profile": r[2],
                "verb": r[3],
                "ok": bool(r[4]),
                "code": r[5],
                "road": r[6],
            }
            for r in reversed(rows)
        ]
