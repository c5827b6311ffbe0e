"""Where a persistent profile's provider key lives (migration 12, issue 22 item 6).

A key is read only by the keeper of the machine that holds it: its sources (the keychain, the
encrypted file, the keeper's sealed environment) are that machine's. The first keeper that
starts a profile's browser with a key of its own becomes the profile's **key home** — one row
naming the keeper, its host, the integration and which precedence supplied it (``user`` or
``cluster``), never a value. Another keeper of the fleet then never starts that profile's
browser with a key: it is refused ``provider_needs_local_key`` naming the key home's host
(the profile is served there, its verbs forwarded by the fleet link) — so a key is never
copied to another machine to make a profile work.

A row is bound to its integration: a profile switched to another keyed provider gets a new
key home at its next start; one switched to a provider that needs no key is not checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from browserbay.registry.db import Sql


@dataclass(frozen=True)
class KeyHome:
    """The keeper whose key a profile's provider starts with."""

    profile: str
    keeper_id: str
    host: str
    integration: str
    source: str
    """Which precedence supplied the key there: ``user`` or ``cluster``."""
    since: float


class KeyHomes(Protocol):
    """At most one key home per profile."""

    def bind(self, home: KeyHome) -> KeyHome:
        """Make ``home`` the profile's key home unless it has one for the same integration
        already, in one write (of two keepers racing, the first one's stands). Answers the
        key home as it stands after."""

    def of(self, profile_id: str) -> KeyHome | None: ...
    def unbind(self, profile_id: str) -> None:
        """The profile has no key home (its owner moved it on purpose)."""


_COLS = "profile, keeper_id, host, integration, source, since"


class SqlKeyHomes:
    def __init__(self, db: Sql):
        self.db = db

    def bind(self, home: KeyHome) -> KeyHome:
        self.db.execute(
            f"INSERT INTO key_homes({_COLS}) VALUES (?, ?, ?, ?, ?, ?) "  # noqa: S608 - constants
            "ON CONFLICT(profile) DO UPDATE SET keeper_id=excluded.keeper_id, "
            "host=excluded.host, integration=excluded.integration, source=excluded.source, "
            "since=excluded.since WHERE key_homes.integration != excluded.integration",
            (home.profile, home.keeper_id, home.host, home.integration, home.source, home.since),
        )
        found = self.of(home.profile)
        assert found is not None
        return found

    def of(self, profile_id: str) -> KeyHome | None:
        row = self.db.execute(
            f"SELECT {_COLS} FROM key_homes WHERE profile=?",  # noqa: S608 - constants
            (profile_id,),
        ).fetchone()
        if row is None:
            return None
        return KeyHome(row[0], row[1], row[2], row[3], row[4], float(row[5]))

    def unbind(self, profile_id: str) -> None:
        self.db.execute("DELETE FROM key_homes WHERE profile=?", (profile_id,))
