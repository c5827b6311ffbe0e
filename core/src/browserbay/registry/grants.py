"""Session-socket grants (migration 8): which session a socket the owner granted is bound to,
the profiles it may use, when it ends. A grant outlives its keeper (the next keeper binds
its socket again); a revoked or expired one is kept with its ``revoked_at`` until a new
grant takes its session or its socket. A grant's socket is in its keeper's home: each row
says which keeper made it (migration 10), and a keeper serves and lapses only its own."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from browserbay.registry.db import Sql


@dataclass(frozen=True)
class GrantRow:
    session: str
    socket: str
    profiles: tuple[str, ...]
    """Profile ids (never labels: a label can be given to another profile later)."""
    parent: str | None
    created_at: float
    expires_at: float | None
    """Wall clock; None: until revoked."""
    revoked_at: float | None = None
    """When it was revoked, or ended at its ``expires_at``; None while it lives."""

    def live(self, now: float) -> bool:
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)


class Grants(Protocol):
    """At most one live grant per session and per socket path."""

    def create(self, row: GrantRow, now: float) -> None:
        """Record a new grant. A dead grant (revoked, or expired by ``now``) of the same
        session or the same socket gives way to it, in the same write; a live one is a
        :class:`GrantTaken` and nothing is written."""

    def get(self, session: str) -> GrantRow | None:
        """The session's grant, live or dead (None: never granted, or replaced)."""

    def live(self, now: float) -> list[GrantRow]:
        """Every grant of this keeper neither revoked nor expired by ``now``, oldest first."""

    def children(self, parent: str) -> list[GrantRow]:
        """Every grant made with ``parent`` as its parent, live or dead, oldest first (a
        parent's children are numbered on from them)."""

    def revoke(self, session: str, at: float) -> bool:
        """Mark the session's grant revoked at ``at``; False when it had none still live."""

    def lapse(self, now: float) -> list[str]:
        """Mark every grant of this keeper whose expiry passed by ``now`` and is not marked
        yet as ended at its expiry (what ran out while it did not run); answers their
        sessions."""


class GrantTaken(Exception):
    """A live grant already holds that session or socket (see :meth:`Grants.create`)."""


def _row(r: tuple[Any, ...]) -> GrantRow:
    """A row of the ``grants`` table, (its columns in their order)."""
    return GrantRow(r[0], r[1], tuple(json.loads(r[2])), r[3], r[4], r[5], r[6])


class SqliteGrants:
    def __init__(self, db: Sql, keeper_id: str):
        self.db = db
        self.keeper_id = keeper_id

    def create(self, row: GrantRow, now: float) -> None:
        # The check and the write in one transaction, the write itself the check: the dead
        # grants of the session or the socket go, then the row goes in unless a live one
        # holds either key — of two keepers granting at once, the second's insert waits for
        # the first's and finds it (never a lost grant, never a key error instead of
        # GrantTaken).
        with self.db.atomic() as tx:
            tx.execute(
                "DELETE FROM grants WHERE (session=? OR socket=?) AND (revoked_at IS NOT NULL "
                "OR (expires_at IS NOT NULL AND expires_at <= ?))",
                (row.session, row.socket, now),
            )
            took = tx.execute(
                "INSERT INTO grants(session, socket, profiles, parent, created_at, expires_at, "
                "revoked_at, keeper_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (
                    row.session,
                    row.socket,
                    json.dumps(list(row.profiles)),
                    row.parent,
                    row.created_at,
                    row.expires_at,
                    row.revoked_at,
                    self.keeper_id,
                ),
            )
            if took.rowcount == 0:
                raise GrantTaken(row.session)  # rolled back: the dead grants stay too

    def get(self, session: str) -> GrantRow | None:
        r = self.db.execute(
            "SELECT session, socket, profiles, parent, created_at, expires_at, revoked_at "
            "FROM grants WHERE session=?",
            (session,),
        ).fetchone()
        return None if r is None else _row(r)

    def live(self, now: float) -> list[GrantRow]:
        rows = self.db.execute(
            "SELECT session, socket, profiles, parent, created_at, expires_at, revoked_at "
            "FROM grants WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?) "
            "AND (keeper_id=? OR keeper_id IS NULL) ORDER BY created_at, session",
            (now, self.keeper_id),
        ).fetchall()
        return [_row(r) for r in rows]

    def children(self, parent: str) -> list[GrantRow]:
        rows = self.db.execute(
            "SELECT session, socket, profiles, parent, created_at, expires_at, revoked_at "
            "FROM grants WHERE parent=? ORDER BY created_at, session",
            (parent,),
        ).fetchall()
        return [_row(r) for r in rows]

    def revoke(self, session: str, at: float) -> bool:
        cursor = self.db.execute(
            "UPDATE grants SET revoked_at=? WHERE session=? AND revoked_at IS NULL", (at, session)
        )
        return cursor.rowcount > 0

    def lapse(self, now: float) -> list[str]:
        # One statement: of two keepers lapsing at once, each grant is the one's that
        # marked it (its end is audited once).
        rows = self.db.execute(
            "UPDATE grants SET revoked_at=expires_at WHERE revoked_at IS NULL "
            "AND expires_at <= ? AND (keeper_id=? OR keeper_id IS NULL) RETURNING session",
            (now, self.keeper_id),
        ).fetchall()
        return sorted(r[0] for r in rows)
