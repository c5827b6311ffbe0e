"""Trigger claims (migration 3): a request UUID is claimed durably before it is acted on,
so a request is answered exactly once."""

from __future__ import annotations

import time
from typing import Protocol

from browserbay.registry.db import Database


class TriggerClaims(Protocol):
    def claim(self, uuid: str, action: str, session: str) -> str | None:
        """Claim a request UUID before acting on it. Answers None for a fresh claim, the
        stored result (JSON) for one already handled, or ``""`` for one claimed by a keeper
        that died before it finished (the action may have taken effect)."""

    def finish(self, uuid: str, result: str) -> None: ...


class SqliteTriggerClaims:
    def __init__(self, db: Database):
        self.db = db

    def claim(self, uuid: str, action: str, session: str) -> str | None:
        conn = self.db.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute("SELECT result FROM trigger_claims WHERE uuid=?", (uuid,)).fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO trigger_claims(uuid, action, session, claimed_at) "
                    "VALUES (?, ?, ?, ?)",
                    (uuid, action, session, time.time()),
                )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        if row is None:
            return None
        return str(row[0]) if row[0] is not None else ""

    def finish(self, uuid: str, result: str) -> None:
        self.db.execute("UPDATE trigger_claims SET result=? WHERE uuid=?", (result, uuid))
