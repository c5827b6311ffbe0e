"""The fleet (migration 10, issue 22): the keepers that share one registry and which of them
runs each persistent profile's browser.

Every keeper registers itself in ``keepers`` at its start (its stable id, host, fleet link
address, pid) and beats there every ``BAY_FLEET_TTL/6``; a keeper whose beat is older than
the TTL, or that said it stopped, is not alive. A ``profile_claims`` row says which keeper
runs a persistent profile's browser: taken when that keeper starts it, renewed by the
keeper's heartbeat, released when the browser stops, and free for another keeper once it
was released or its renewal is older than the TTL (its keeper died). A released or expired
claim keeps its row: the last keeper that ran the profile (its host) is what a refusal
names when its data cannot be reached from here.

Times are the store's clock: PostgreSQL's (two machines' clocks differ, the server's is one
for every keeper), and on SQLite the one machine's. What a reader compares is an age
computed by the store (``beat_age``, ``age``), never a time of one machine against another's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from browserbay.registry.db import Sql


def store_now(db: Sql) -> str:
    """The SQL expression of the store's clock, in seconds since the epoch (a double)."""
    if db.dialect == "postgresql":
        return "CAST(extract(epoch FROM clock_timestamp()) AS DOUBLE PRECISION)"
    return "((julianday('now') - 2440587.5) * 86400.0)"


@dataclass(frozen=True)
class KeeperStart:
    """What a keeper says of itself when it registers."""

    id: str
    host: str
    listen: str | None
    """``BAY_FLEET_LISTEN`` (HOST:PORT of its fleet link), None when it has none."""
    pid: int
    version: str


@dataclass(frozen=True)
class KeeperRow:
    """A keeper of the fleet as the registry knows it."""

    id: str
    host: str
    listen: str | None
    pid: int
    version: str
    started_at: float
    beat_at: float
    stopped_at: float | None
    beat_age: float
    """Seconds since its last beat, on the store's clock."""

    def alive(self, ttl: float) -> bool:
        """It has not said it stopped and it beat within the TTL."""
        return self.stopped_at is None and self.beat_age < ttl


class Keepers(Protocol):
    """The keepers that use this registry, one row per keeper id."""

    def register(self, me: KeeperStart) -> None:
        """A keeper's start: its row made or renewed (started and beating now, not stopped)."""

    def beat(self, keeper_id: str) -> bool:
        """The heartbeat; False when the keeper has no row (it was never registered)."""

    def stop(self, keeper_id: str) -> None:
        """The keeper stopped (its row stays, with when)."""

    def get(self, keeper_id: str) -> KeeperRow | None: ...
    def all(self) -> list[KeeperRow]:
        """Every keeper that ever registered, the longest-running first."""

    def alive(self, ttl: float) -> list[KeeperRow]:
        """The keepers that beat within ``ttl`` seconds and did not stop."""


@dataclass(frozen=True)
class Claim:
    """Which keeper runs (or last ran) a persistent profile's browser."""

    profile: str
    keeper_id: str
    since: float
    """When this keeper took it (a renewal keeps it)."""
    released: bool
    """Its browser stopped: the claim is free for any keeper."""
    age: float
    """Seconds since its last renewal, on the store's clock."""

    def held(self, ttl: float) -> bool:
        """Its keeper still holds it: not released, renewed within the TTL."""
        return not self.released and self.age < ttl


class Claims(Protocol):
    """At most one keeper holds a persistent profile's browser at a time."""

    def take(self, profile_id: str, keeper_id: str, ttl: float) -> Claim:
        """Take (or renew) the profile's claim for ``keeper_id`` if it is free — never
        claimed, released, expired (``ttl``) or already this keeper's — in one atomic
        write: of two keepers racing, exactly one wins. Answers the claim as it stands
        after: ``keeper_id``'s when taken, the holder's when not."""

    def renew(self, keeper_id: str) -> int:
        """The heartbeat: every unreleased claim of the keeper is renewed now. Answers how
        many."""

    def release(self, profile_id: str, keeper_id: str) -> bool:
        """The profile's browser stopped on ``keeper_id``: its claim is free (False when the
        keeper did not hold it)."""

    def release_all(self, keeper_id: str) -> int:
        """The keeper stops: all its claims are free. Answers how many."""

    def holder(self, profile_id: str) -> Claim | None:
        """The profile's claim, held or not (None: never claimed)."""

    def expire(self, ttl: float) -> list[str]:
        """Release every claim not renewed within ``ttl`` (its keeper stopped beating);
        answers their profiles."""

    def counts(self, ttl: float) -> dict[str, int]:
        """How many claims each keeper holds (``ttl``: unexpired ones only)."""


_KEEPER_COLS = "id, host, listen, pid, version, started_at, beat_at, stopped_at"


class SqlKeepers:
    def __init__(self, db: Sql):
        self.db = db
        self.now = store_now(db)

    def register(self, me: KeeperStart) -> None:
        now = self.now
        self.db.execute(
            f"INSERT INTO keepers({_KEEPER_COLS}) VALUES (?, ?, ?, ?, ?, {now}, {now}, NULL) "  # noqa: S608 - constants
            "ON CONFLICT(id) DO UPDATE SET host=excluded.host, listen=excluded.listen, "
            "pid=excluded.pid, version=excluded.version, started_at=excluded.started_at, "
            "beat_at=excluded.beat_at, stopped_at=NULL",
            (me.id, me.host, me.listen, me.pid, me.version),
        )

    def beat(self, keeper_id: str) -> bool:
        return (
            self.db.execute(
                f"UPDATE keepers SET beat_at={self.now} WHERE id=?",  # noqa: S608 - a constant
                (keeper_id,),
            ).rowcount
            > 0
        )

    def stop(self, keeper_id: str) -> None:
        self.db.execute(
            f"UPDATE keepers SET stopped_at={self.now} WHERE id=? AND stopped_at IS NULL",  # noqa: S608 - a constant
            (keeper_id,),
        )

    def _select(self, where: str = "", params: tuple[object, ...] = ()) -> list[KeeperRow]:
        rows = self.db.execute(
            f"SELECT {_KEEPER_COLS}, {self.now} - beat_at FROM keepers {where} "  # noqa: S608 - constants
            "ORDER BY started_at, id",
            params,
        ).fetchall()
        return [
            KeeperRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], float(r[8])) for r in rows
        ]

    def get(self, keeper_id: str) -> KeeperRow | None:
        found = self._select("WHERE id=?", (keeper_id,))
        return found[0] if found else None

    def all(self) -> list[KeeperRow]:
        return self._select()

    def alive(self, ttl: float) -> list[KeeperRow]:
        return self._select(f"WHERE stopped_at IS NULL AND beat_at > {self.now} - ?", (ttl,))


_CLAIM_COLS = "profile, keeper_id, since, released_at IS NOT NULL"


class SqlClaims:
    def __init__(self, db: Sql):
        self.db = db
        self.now = store_now(db)

    def take(self, profile_id: str, keeper_id: str, ttl: float) -> Claim:
        now = self.now
        # One statement: the row is inserted, or updated only WHERE it is free — the
        # engine's row lock (PostgreSQL) or its one writer (SQLite) lets one keeper win.
        self.db.execute(
            "INSERT INTO profile_claims(profile, keeper_id, since, renewed_at, released_at) "  # noqa: S608 - constants
            f"VALUES (?, ?, {now}, {now}, NULL) "
            "ON CONFLICT(profile) DO UPDATE SET keeper_id=excluded.keeper_id, "
            "since=CASE WHEN profile_claims.keeper_id=excluded.keeper_id "
            "AND profile_claims.released_at IS NULL THEN profile_claims.since "
            "ELSE excluded.since END, renewed_at=excluded.renewed_at, released_at=NULL "
            "WHERE profile_claims.keeper_id=excluded.keeper_id "
            "OR profile_claims.released_at IS NOT NULL "
            f"OR profile_claims.renewed_at <= {now} - ?",
            (profile_id, keeper_id, ttl),
        )
        claim = self.holder(profile_id)
        assert claim is not None  # the row exists: inserted, updated or kept
        return claim

    def renew(self, keeper_id: str) -> int:
        return self.db.execute(
            f"UPDATE profile_claims SET renewed_at={self.now} "  # noqa: S608 - a constant
            "WHERE keeper_id=? AND released_at IS NULL",
            (keeper_id,),
        ).rowcount

    def release(self, profile_id: str, keeper_id: str) -> bool:
        return (
            self.db.execute(
                f"UPDATE profile_claims SET released_at={self.now} "  # noqa: S608 - a constant
                "WHERE profile=? AND keeper_id=? AND released_at IS NULL",
                (profile_id, keeper_id),
            ).rowcount
            > 0
        )

    def release_all(self, keeper_id: str) -> int:
        return self.db.execute(
            f"UPDATE profile_claims SET released_at={self.now} "  # noqa: S608 - a constant
            "WHERE keeper_id=? AND released_at IS NULL",
            (keeper_id,),
        ).rowcount

    def holder(self, profile_id: str) -> Claim | None:
        r = self.db.execute(
            f"SELECT {_CLAIM_COLS}, {self.now} - renewed_at FROM profile_claims "  # noqa: S608 - constants
            "WHERE profile=?",
            (profile_id,),
        ).fetchone()
        return None if r is None else Claim(r[0], r[1], r[2], bool(r[3]), float(r[4]))

    def expire(self, ttl: float) -> list[str]:
        rows = self.db.execute(
            f"UPDATE profile_claims SET released_at={self.now} "  # noqa: S608 - constants
            f"WHERE released_at IS NULL AND renewed_at <= {self.now} - ? RETURNING profile",
            (ttl,),
        ).fetchall()
        return sorted(r[0] for r in rows)

    def counts(self, ttl: float) -> dict[str, int]:
        rows = self.db.execute(
            "SELECT keeper_id, count(*) FROM profile_claims "  # noqa: S608 - a constant
            f"WHERE released_at IS NULL AND renewed_at > {self.now} - ? GROUP BY keeper_id",
            (ttl,),
        ).fetchall()
        return {r[0]: int(r[1]) for r in rows}
