"""Exclusive holds (migration 2) and their FIFO queue (migration 11), group defaults.

A hold names the session that holds a profile exclusively (``bay use --exclusive``), its
group, since when, and the keeper it came through. The sessions waiting for a held profile
queue in the registry (``hold_queue``), not in a keeper's memory: a session on keeper B
waits behind one on keeper A, and gets the hold in its turn. Every decision is one
transaction whose write is itself the check (a conditional upsert on the hold's key), so
two keepers granting at once grant once.

A keeper's waiters die with it: its start drops its own queue entries and its own holds
that never got their attachment (:meth:`Holds.drop_orphans`); the holds and entries of a
keeper that stopped beating for ``BAY_FLEET_TTL`` are dropped by whichever keeper looks at
the profile next (:meth:`Holds.reclaim`), each drop audited. Times are the store's clock
(:func:`~browserbay.registry.fleet.store_now`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from browserbay.registry.db import Sql, Tx
from browserbay.registry.fleet import store_now

#: The audit's verb for a hold or a queue entry dropped because its keeper stopped beating.
RECLAIMED = "hold_reclaimed"


class Hold(NamedTuple):
    """Who holds a profile exclusively, for which group, since (the store's clock)."""

    holder: str
    group: str
    since: float
    keeper_id: str | None = None
    """The keeper the holder's ``use --exclusive`` came through (None: a hold made before
    the fleet, which only the local keeper has)."""
    host: str | None = None
    """That keeper's host, as it registered (None when not known)."""


class Waiter(NamedTuple):
    """A session waiting in a profile's queue; ``seq`` is its place (lower goes first)."""

    seq: int
    profile: str
    session: str
    group: str
    keeper_id: str
    enqueued_at: float


@dataclass(frozen=True)
class Turn:
    """What one look at the queue found (:meth:`Holds.grant`)."""

    granted: bool
    """The waiter holds the profile now (its entry is gone)."""
    hold: Hold | None
    """The hold as it stands after the look: the waiter's own when granted."""
    ahead: Waiter | None
    """The queue's head when it is another waiter."""
    queued: bool = True
    """False: the waiter's entry was gone (dropped as stale): it must queue again."""


@dataclass(frozen=True)
class Reclaimed:
    """What :meth:`Holds.reclaim` dropped: holds and waiters of keepers that stopped beating."""

    holds: list[Hold]
    waiters: list[Waiter]


class Holds(Protocol):
    """At most one exclusive hold per profile, and each profile's queue of waiters."""

    def get(self, profile_id: str) -> Hold | None: ...
    def of_profiles(self, profile_ids: Sequence[str]) -> dict[str, Hold | None]:
        """Each profile's hold (None: none), in one statement (none for no profiles): what
        a verb's lease choice reads beside the session's attachments, for every profile
        the choice may land on."""

    def set(self, profile_id: str, holder: str, group: str) -> bool:
        """Hold the profile for ``holder`` of ``group`` (through this keeper) when it is
        free or already held by that group (the holder becomes this session); False when
        another group holds it, and nothing is written. One conditional write: of two
        keepers setting at once, exactly one group holds it."""

    def release(self, profile_id: str, holder: str) -> bool:
        """Let go of the hold if ``holder`` still holds it (False otherwise: a release
        never takes a hold somebody else took meanwhile)."""

    def enqueue(self, profile_id: str, session: str, group: str) -> int:
        """The session (waiting on this keeper) joins the profile's queue, last; answers its
        place (``seq``)."""

    def grant(self, seq: int) -> Turn:
        """The waiter ``seq`` gets the hold when it heads its profile's queue and the
        profile is free or its group's (its entry goes, in the same transaction)."""

    def leave(self, seq: int) -> None:
        """The waiter leaves the queue (its wait ended; nothing when it was granted)."""

    def waiters(self, profile_id: str) -> list[Waiter]:
        """The profile's queue, head first."""

    def drop_orphans(self) -> int:
        """At this keeper's start: its queue entries (their waiters died with
        its last run), and its holds whose holder does not have the profile attached —
        what a ``use --exclusive`` cut between its two writes (the hold, then the
        attachment) leaves. Another keeper's go only by :meth:`reclaim` (a live keeper's
        ``use --exclusive`` may be between its two writes right now). Answers how many
        holds went."""

    def reclaim(self, profile_id: str, ttl: float) -> Reclaimed:
        """Drop the profile's hold and queue entries whose keeper stopped beating ``ttl``
        seconds ago or said it stopped; each drop is audited (``hold_reclaimed``, actor
        ``keeper:<this keeper's id>``) in the same transaction, so it is audited once
        whichever keeper notices."""


class GroupDefaults(Protocol):
    """The profile a group's sessions (``BAY_GROUP``) default to."""

    def get(self, group: str) -> str | None: ...
    def set(self, group: str, profile_id: str) -> None: ...


_HOLD = (
    "SELECT h.holder, h.group_name, h.since, h.keeper_id, k.host FROM holds h "
    "LEFT JOIN keepers k ON k.id = h.keeper_id WHERE h.profile=?"
)
_HOLDS_OF = (
    "SELECT h.profile, h.holder, h.group_name, h.since, h.keeper_id, k.host FROM holds h "
    "LEFT JOIN keepers k ON k.id = h.keeper_id WHERE h.profile IN"
)
_WAITER = "seq, profile, session, group_name, keeper_id, enqueued_at"


def _hold(r: Any) -> Hold | None:
    """A hold as ``_HOLD`` selects it (None: no row)."""
    return None if r is None else Hold(r[0], r[1], float(r[2]), r[3], r[4])


def _waiter(r: Any) -> Waiter:
    return Waiter(int(r[0]), r[1], r[2], r[3], r[4], float(r[5]))


class SqliteHolds:
    def __init__(self, db: Sql, keeper_id: str):
        self.db = db
        self.keeper_id = keeper_id
        self.now = store_now(db)

    def get(self, profile_id: str) -> Hold | None:
        return _hold(self.db.execute(_HOLD, (profile_id,)).fetchone())

    def of_profiles(self, profile_ids: Sequence[str]) -> dict[str, Hold | None]:
        wanted = list(dict.fromkeys(profile_ids))
        found: dict[str, Hold | None] = dict.fromkeys(wanted)
        if not wanted:
            return found
        marks = ", ".join("?" * len(wanted))
        sql = f"{_HOLDS_OF} ({marks})"  # a constant, and one placeholder per profile
        rows = self.db.execute(sql, tuple(wanted)).fetchall()
        for r in rows:
            found[r[0]] = _hold(r[1:])
        return found

    def _take(
        self, tx: Tx, profile_id: str, holder: str, group: str, keeper_id: str | None
    ) -> bool:
        # The hold's key is the guard: inserted when free, updated only WHERE the same group
        # holds it — a second keeper's insert waits for the first's and then changes nothing.
        took = tx.execute(
            "INSERT INTO holds(profile, holder, group_name, since, keeper_id) "  # noqa: S608 - a constant
            f"VALUES (?, ?, ?, {self.now}, ?) "
            "ON CONFLICT(profile) DO UPDATE SET holder=excluded.holder, since=excluded.since, "
            "keeper_id=excluded.keeper_id WHERE holds.group_name = excluded.group_name",
            (profile_id, holder, group, keeper_id),
        )
        return took.rowcount > 0

    def set(self, profile_id: str, holder: str, group: str) -> bool:
        with self.db.atomic() as tx:
            return self._take(tx, profile_id, holder, group, self.keeper_id)

    def release(self, profile_id: str, holder: str) -> bool:
        gone = self.db.execute(
            "DELETE FROM holds WHERE profile=? AND holder=?", (profile_id, holder)
        )
        return gone.rowcount > 0

    def enqueue(self, profile_id: str, session: str, group: str) -> int:
        row = self.db.execute(
            "INSERT INTO hold_queue(profile, session, group_name, keeper_id, enqueued_at) "  # noqa: S608 - a constant
            f"VALUES (?, ?, ?, ?, {self.now}) RETURNING seq",
            (profile_id, session, group, self.keeper_id),
        ).fetchone()
        return int(row[0])

    def grant(self, seq: int) -> Turn:
        with self.db.atomic() as tx:
            mine = tx.execute(
                f"SELECT {_WAITER} FROM hold_queue WHERE seq=?",  # noqa: S608 - a constant
                (seq,),
            ).fetchone()
            if mine is None:
                return Turn(False, None, None, queued=False)
            me = _waiter(mine)
            head = _waiter(
                tx.execute(
                    f"SELECT {_WAITER} FROM hold_queue WHERE profile=? "  # noqa: S608 - a constant
                    "ORDER BY seq LIMIT 1",
                    (me.profile,),
                ).fetchone()
            )
            granted = head.seq == seq and self._take(
                tx, me.profile, me.session, me.group, me.keeper_id
            )
            if granted:
                tx.execute("DELETE FROM hold_queue WHERE seq=?", (seq,))
            hold = _hold(tx.execute(_HOLD, (me.profile,)).fetchone())
            return Turn(granted, hold, None if head.seq == seq else head)

    def leave(self, seq: int) -> None:
        self.db.execute("DELETE FROM hold_queue WHERE seq=?", (seq,))

    def waiters(self, profile_id: str) -> list[Waiter]:
        rows = self.db.execute(
            f"SELECT {_WAITER} FROM hold_queue WHERE profile=? ORDER BY seq",  # noqa: S608 - a constant
            (profile_id,),
        ).fetchall()
        return [_waiter(r) for r in rows]

    def drop_orphans(self) -> int:
        with self.db.atomic() as tx:
            tx.execute("DELETE FROM hold_queue WHERE keeper_id=?", (self.keeper_id,))
            return tx.execute(
                "DELETE FROM holds WHERE (keeper_id=? OR keeper_id IS NULL) AND NOT EXISTS "
                "(SELECT 1 FROM attachments a WHERE a.profile = holds.profile "
                "AND a.session = holds.holder)",
                (self.keeper_id,),
            ).rowcount

    def reclaim(self, profile_id: str, ttl: float) -> Reclaimed:
        # Never this keeper's own: it is alive while it asks (a beat late on a stalled
        # loop must not take its own sessions' holds).
        dead = (
            "SELECT id FROM keepers WHERE id != ? AND (stopped_at IS NOT NULL "  # noqa: S608 - a constant
            f"OR beat_at <= {self.now} - ?)"
        )
        actor = "keeper:" + self.keeper_id
        with self.db.atomic() as tx:
            holds = tx.execute(
                f"DELETE FROM holds WHERE profile=? AND keeper_id IN ({dead}) "  # noqa: S608 - constants
                "RETURNING holder, group_name, since, keeper_id",
                (profile_id, self.keeper_id, ttl),
            ).fetchall()
            waiters = tx.execute(
                f"DELETE FROM hold_queue WHERE profile=? AND keeper_id IN ({dead}) "  # noqa: S608 - constants
                f"RETURNING {_WAITER}",
                (profile_id, self.keeper_id, ttl),
            ).fetchall()
            for r in [*holds, *((w[2],) for w in waiters)]:
                tx.execute(
                    "INSERT INTO audit(at, session, profile, verb, ok, code, road, actor) "  # noqa: S608 - a constant
                    f"VALUES ({self.now}, ?, ?, ?, 1, NULL, NULL, ?)",
                    (r[0], profile_id, RECLAIMED, actor),
                )
        return Reclaimed(
            [Hold(r[0], r[1], float(r[2]), r[3]) for r in holds],
            sorted((_waiter(w) for w in waiters), key=lambda w: w.seq),
        )


class SqliteGroupDefaults:
    def __init__(self, db: Sql):
        self.db = db

    def get(self, group: str) -> str | None:
        row = self.db.execute(
            "SELECT profile FROM group_defaults WHERE group_name=?", (group,)
        ).fetchone()
        return row[0] if row else None

    def set(self, group: str, profile_id: str) -> None:
        self.db.execute(
            "INSERT INTO group_defaults(group_name, profile) VALUES (?, ?) "
            "ON CONFLICT(group_name) DO UPDATE SET profile=excluded.profile",
            (group, profile_id),
        )
