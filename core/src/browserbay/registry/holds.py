"""Exclusive holds and group defaults (migration 2). The FIFO queue of sessions waiting
for a held profile lives in the keeper's memory (:mod:`browserbay.keeper.leases`): a
waiter does not outlive its keeper."""

from __future__ import annotations

import time
from typing import NamedTuple, Protocol

from browserbay.registry.db import Sql


class Hold(NamedTuple):
    """Who holds a profile exclusively (``bay use --exclusive``), for which group, since."""

    holder: str
    group: str
    since: float


class Holds(Protocol):
    """At most one exclusive hold per profile."""

    def get(self, profile_id: str) -> Hold | None: ...
    def set(self, profile_id: str, holder: str, group: str) -> bool:
        """Hold the profile for ``holder`` of ``group`` when it is free or already held by
        that group (the holder becomes this session); False when another group holds it,
        and nothing is written. One conditional write: of two keepers setting at once,
        exactly one group holds it."""

    def release(self, profile_id: str, holder: str) -> bool:
        """Let go of the hold if ``holder`` still holds it (False otherwise: a release
        never takes a hold somebody else took meanwhile)."""

    def drop_orphans(self) -> int:
        """At keeper start: a hold whose holder does not have the profile attached is what a
        ``use --exclusive`` cut between its two writes (the hold, then the attachment)
        leaves; nothing else makes one. It goes, so the profile is not held for nobody.
        Answers how many went."""


class GroupDefaults(Protocol):
    """The profile a group's sessions (``BAY_GROUP``) default to."""

    def get(self, group: str) -> str | None: ...
    def set(self, group: str, profile_id: str) -> None: ...


class SqliteHolds:
    def __init__(self, db: Sql):
        self.db = db

    def get(self, profile_id: str) -> Hold | None:
        row = self.db.execute(
            "SELECT holder, group_name, since FROM holds WHERE profile=?", (profile_id,)
        ).fetchone()
        return Hold(row[0], row[1], row[2]) if row else None

    def set(self, profile_id: str, holder: str, group: str) -> bool:
        took = self.db.execute(
            "INSERT INTO holds(profile, holder, group_name, since) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(profile) DO UPDATE SET holder=excluded.holder, since=excluded.since "
            "WHERE holds.group_name = excluded.group_name",
            (profile_id, holder, group, time.time()),
        )
        return took.rowcount > 0

    def release(self, profile_id: str, holder: str) -> bool:
        gone = self.db.execute(
            "DELETE FROM holds WHERE profile=? AND holder=?", (profile_id, holder)
        )
        return gone.rowcount > 0

    def drop_orphans(self) -> int:
        return self.db.execute(
            "DELETE FROM holds WHERE NOT EXISTS (SELECT 1 FROM attachments a "
            "WHERE a.profile = holds.profile AND a.session = holds.holder)"
        ).rowcount


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
