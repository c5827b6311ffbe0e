"""Kept tabs (migration 2): a lease's tabs written down so ``bay resume`` (or the next
keeper) can reopen them after its browser stopped. Each row says which keeper kept it
(migration 10): 'live' tabs are a running browser's, and only their keeper's next start
(or a keeper taking over the profile of a dead one) turns them 'auto'."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from browserbay.registry.db import Sql

#: Suffix of the key under which a deliberate close parks a lease's tabs for ``resume``.
PARKED = "@closed"


@dataclass(frozen=True)
class KeptTab:
    url: str
    title: str
    current: bool


class Kept(NamedTuple):
    """A lease's kept tabs and the state they were kept in (``live``, ``auto`` or
    ``deliberate``; None when none are kept)."""

    state: str | None
    tabs: list[KeptTab]


class KeptTabs(Protocol):
    """Each lease's (session, profile) kept tabs."""

    def keep(self, session: str, profile_id: str, tabs: list[KeptTab], state: str) -> None:
        """Replace the lease's kept tabs (one write: never half a list)."""

    def kept(self, session: str, profile_id: str) -> Kept: ...
    def drop(self, session: str, profile_id: str) -> None: ...
    def mark(self, session: str, profile_id: str, state: str) -> None: ...
    def mark_live_auto(self) -> int:
        """At keeper start: the browsers of this keeper's 'live' tabs died with its last run;
        they become 'auto' (reopened by themselves). Another keeper's stay as they are.
        Answers how many."""

    def take_over(self, profile_id: str) -> int:
        """This keeper took the profile of a keeper that died: that keeper's 'live' tabs of
        it become this keeper's 'auto' ones (restored here). Answers how many."""

    def park(self, session: str, profile_id: str) -> None:
        """A deliberate close: the lease's kept tabs move aside (``<profile>@closed``) where
        only ``bay resume`` takes them, so tabs the session opens meanwhile do not replace
        them. The newest close wins."""


class SqliteKeptTabs:
    def __init__(self, db: Sql, keeper_id: str):
        self.db = db
        self.keeper_id = keeper_id

    def keep(self, session: str, profile_id: str, tabs: list[KeptTab], state: str) -> None:
        now = time.time()
        # Each position is upserted first (its row locked, on PostgreSQL), then what lies
        # beyond the new list goes: of two keepers keeping the lease's tabs at once, the
        # second waits on the first's rows and then replaces them whole — never a key error,
        # never half of each list. (Deleting first missed the other's uncommitted rows.)
        self.db.tx(
            *(
                (
                    "INSERT INTO kept_tabs(session, profile, position, url, title, current, "
                    "state, kept_at, keeper_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT(session, profile, position) DO UPDATE SET url=excluded.url, "
                    "title=excluded.title, current=excluded.current, state=excluded.state, "
                    "kept_at=excluded.kept_at, keeper_id=excluded.keeper_id",
                    (
                        session,
                        profile_id,
                        i,
                        t.url,
                        t.title,
                        int(t.current),
                        state,
                        now,
                        self.keeper_id,
                    ),
                )
                for i, t in enumerate(tabs)
            ),
            (
                "DELETE FROM kept_tabs WHERE session=? AND profile=? AND position >= ?",
                (session, profile_id, len(tabs)),
            ),
        )

    def kept(self, session: str, profile_id: str) -> Kept:
        rows = self.db.execute(
            "SELECT url, title, current, state FROM kept_tabs WHERE session=? AND profile=? "
            "ORDER BY position",
            (session, profile_id),
        ).fetchall()
        state = rows[0][3] if rows else None
        return Kept(state, [KeptTab(r[0], r[1], bool(r[2])) for r in rows])

    def drop(self, session: str, profile_id: str) -> None:
        self.db.execute(
            "DELETE FROM kept_tabs WHERE session=? AND profile=?", (session, profile_id)
        )

    def mark(self, session: str, profile_id: str, state: str) -> None:
        self.db.execute(
            "UPDATE kept_tabs SET state=? WHERE session=? AND profile=?",
            (state, session, profile_id),
        )

    def mark_live_auto(self) -> int:
        return self.db.execute(
            "UPDATE kept_tabs SET state='auto' WHERE state='live' "
            "AND (keeper_id=? OR keeper_id IS NULL)",
            (self.keeper_id,),
        ).rowcount

    def take_over(self, profile_id: str) -> int:
        return self.db.execute(
            "UPDATE kept_tabs SET state='auto', keeper_id=? WHERE state='live' AND profile=?",
            (self.keeper_id, profile_id),
        ).rowcount

    def park(self, session: str, profile_id: str) -> None:
        parked = profile_id + PARKED
        self.db.tx(
            ("DELETE FROM kept_tabs WHERE session=? AND profile=?", (session, parked)),
            (
                "UPDATE kept_tabs SET profile=?, state='deliberate' WHERE session=? AND profile=?",
                (parked, session, profile_id),
            ),
        )
