"""The change clock (migration 13): what a keeper of a fleet knows of the registry's changes
to a forwarded verb's standing (docs/security.md §14).

On PostgreSQL every transaction that changes an input of :meth:`Attachments.standing`
(an attachment, a session's last-used profile, a group's default, an exclusive hold) bumps
the one-row clock at its commit and notifies the schema's channel (:func:`channel_of`) with
``<clock> <profile>`` for each profile it touched: triggers, so every writer signals. The
clock is bumped by an update of its one row, whose lock the transaction holds until it
commits: commit order is clock order, and PostgreSQL delivers notifications in commit order.
A keeper's own ``ping`` (``ping <keeper id> <n>``, on each heartbeat) is delivered in that
order too: hearing it proves its listener heard every change committed before it.

SQLite has the table alone (no triggers, no channel): its clock stays where it is, and a
keeper on SQLite never serves a standing it did not read.
"""

from __future__ import annotations

from typing import Protocol

from browserbay.registry.db import Sql

#: The clock's value as one expression (0 when the row is missing).
CLOCK = "coalesce((SELECT value FROM change_clock WHERE id = 1), 0)"
#: The schema's channel, as PostgreSQL computes it where it runs (the triggers use the
#: table's schema; a keeper's connections have it first on their search path).
CHANNEL = "'bay_' || left(md5(current_schema()), 16)"
#: A ping's payload starts with this, then the keeper's id and the ping's number.
PING = "ping"


class ChangeSink(Protocol):
    """What a change listener tells (keeper/standing.py's book), from its own thread."""

    def listening(self, clock: int) -> None: ...
    def lost(self) -> None: ...
    def change(self, clock: int, profile: str) -> None: ...
    def ping(self, keeper_id: str, n: int) -> None: ...


class Listener(Protocol):
    """A change listener's thread (PostgreSQL's :class:`~browserbay.registry.pg.ChangeListener`)."""

    def start(self) -> None: ...
    def stop(self) -> None: ...


class Changes(Protocol):
    """The change clock and the keeper's pings on the registry's channel."""

    def clock(self) -> int:
        """The clock now (every change committed before this read is at or below it)."""

    def ping(self, keeper_id: str, n: int) -> None:
        """Notify the channel ``ping <keeper_id> <n>`` (nothing on SQLite)."""


class SqlChanges:
    def __init__(self, db: Sql):
        self.db = db

    def clock(self) -> int:
        row = self.db.execute(f"SELECT {CLOCK}").fetchone()
        return int(row[0])

    def ping(self, keeper_id: str, n: int) -> None:
        if self.db.dialect != "postgresql":
            return
        self.db.execute(
            f"SELECT pg_notify({CHANNEL}, ?)",
            (f"{PING} {keeper_id} {n}",),
        )
