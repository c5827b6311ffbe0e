"""Backend switches (migration 6): the highest Chromium major that has written each
profile's directory (the version ladder's record), and switches proposed to a profile's
owner. The switch itself is :meth:`browserbay.registry.profiles.Profiles.set_backend`."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from browserbay.registry.db import Sql


class Recorded(NamedTuple):
    """The highest Chromium major that has written a profile's directory, and its backend."""

    major: int
    backend: str


@dataclass(frozen=True)
class Proposal:
    """A backend switch proposed for a profile's owner (migration 6)."""

    profile: str
    provider: str
    by: str
    """The session that proposed it."""
    at: float
    why: str
    """Why it is a proposal and not a switch (who else holds the profile, who drives it)."""
    affects: tuple[str, ...]
    """The sessions whose browser the switch would restart."""
    url: str | None
    """The proposer's current tab when it proposed (the page it wants another backend for)."""

    def as_row(self, seen_by: str | None = None) -> dict[str, Any]:
        """The proposal as answers carry it. ``seen_by``: the session a session socket is
        fixed to (None: the owner's channel, which sees it all). Such a session sees that a
        switch is proposed, and for which backend, but no other session's id nor the page
        its proposer was on."""
        mine = seen_by is None or self.by == seen_by
        return {
            "profile": self.profile,
            "provider": self.provider,
            "by": self.by if mine else "another session",
            "at": self.at,
            "why": self.why if seen_by is None else re.sub(r" \([^)]*\)", "", self.why),
            "affects": [s for s in self.affects if seen_by is None or s == seen_by],
            "url": self.url if mine else None,
        }


class Versions(Protocol):
    def record(self, profile_id: str, major: int, backend: str) -> None:
        """A browser of Chromium ``major`` started on the profile: the record keeps the
        highest major that has written its directory (and the backend that ran it)."""

    def recorded(self, profile_id: str) -> Recorded | None: ...


class Proposals(Protocol):
    def propose(self, proposal: Proposal) -> None:
        """Record a proposed switch (a newer proposal for the profile replaces the older)."""

    def get(self, profile_id: str) -> Proposal | None: ...
    def drop(self, profile_id: str) -> None: ...


class SqliteVersions:
    def __init__(self, db: Sql):
        self.db = db

    def record(self, profile_id: str, major: int, backend: str) -> None:
        self.db.execute(
            "INSERT INTO profile_versions(profile, major, backend, at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(profile) DO UPDATE SET major=excluded.major, backend=excluded.backend, "
            "at=excluded.at WHERE excluded.major >= profile_versions.major",
            (profile_id, major, backend, time.time()),
        )

    def recorded(self, profile_id: str) -> Recorded | None:
        row = self.db.execute(
            "SELECT major, backend FROM profile_versions WHERE profile=?", (profile_id,)
        ).fetchone()
        return Recorded(int(row[0]), str(row[1])) if row else None


class SqliteProposals:
    def __init__(self, db: Sql):
        self.db = db

    def propose(self, proposal: Proposal) -> None:
        self.db.execute(
            "INSERT INTO backend_proposals(profile, provider, by_session, at, why, affects, url) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(profile) DO UPDATE SET "
            "provider=excluded.provider, by_session=excluded.by_session, at=excluded.at, "
            "why=excluded.why, affects=excluded.affects, url=excluded.url",
            (
                proposal.profile,
                proposal.provider,
                proposal.by,
                proposal.at,
                proposal.why,
                json.dumps(list(proposal.affects)),
                proposal.url,
            ),
        )

    def get(self, profile_id: str) -> Proposal | None:
        row = self.db.execute(
            "SELECT profile, provider, by_session, at, why, affects, url "
            "FROM backend_proposals WHERE profile=?",
            (profile_id,),
        ).fetchone()
        if row is None:
            return None
        return Proposal(row[0], row[1], row[2], row[3], row[4], tuple(json.loads(row[5])), row[6])

    def drop(self, profile_id: str) -> None:
        self.db.execute("DELETE FROM backend_proposals WHERE profile=?", (profile_id,))
