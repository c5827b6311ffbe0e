"""The audit log (migrations 1, 7 and 8): one row per action — who acted, for which session,
where, what, by which road, whether. Never a typed value."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from browserbay.registry.db import Sql


@dataclass(frozen=True)
class AuditRow:
    at: float
    session: str
    profile: str | None
    verb: str
    ok: bool
    code: str | None
    """The refusal code of an action that was not ok."""
    road: str | None
    """How the action came (cli, api, mcp, trigger, cdp, run); None before migration 7."""
    actor: str | None = None
    """Who acted: ``owner``, ``session-socket:<id>`` or ``trigger``; None when not known
    (a row from before migration 8, a call on a lease's CDP endpoint)."""

    @property
    def who(self) -> str:
        """The actor as ``bay audit`` shows it: ``unknown`` when not known."""
        return self.actor or "unknown"

    def as_row(self) -> dict[str, Any]:
        return {**asdict(self), "actor": self.who}


class Audit(Protocol):
    def record(
        self,
        session: str,
        profile: str | None,
        verb: str,
        ok: bool,
        code: str | None,
        road: str | None = None,
        actor: str | None = None,
    ) -> None: ...
    def rows(self, profile_id: str | None, limit: int) -> list[AuditRow]:
        """The newest ``limit`` rows (of one profile, or all), oldest first."""


class SqliteAudit:
    def __init__(self, db: Sql):
        self.db = db

    def record(
        self,
        session: str,
        profile: str | None,
        verb: str,
        ok: bool,
        code: str | None,
        road: str | None = None,
        actor: str | None = None,
    ) -> None:
        self.db.execute(
            "INSERT INTO audit(at, session, profile, verb, ok, code, road, actor) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (time.time(), session, profile, verb, int(ok), code, road, actor),
        )

    def rows(self, profile_id: str | None, limit: int) -> list[AuditRow]:
        sql = "SELECT at, session, profile, verb, ok, code, road, actor FROM audit"
        params: tuple[Any, ...] = ()
        if profile_id is not None:
            sql += " WHERE profile=?"
            params = (profile_id,)
        sql += " ORDER BY id DESC LIMIT ?"
        rows = self.db.execute(sql, (*params, limit)).fetchall()
        return [
            AuditRow(r[0], r[1], r[2], r[3], bool(r[4]), r[5], r[6], r[7]) for r in reversed(rows)
        ]
