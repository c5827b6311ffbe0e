"""The registry: what the keeper knows that must survive it, as small repositories.

Each repository is a narrow :class:`typing.Protocol` (profiles, sessions, attachment sets,
kept tabs, holds, …) with typed rows; :class:`Registry` composes one of each, and a keeper
service is given the repositories it uses, never the whole registry. Each repository's one
implementation writes portable SQL to a :class:`~browserbay.registry.db.Sql` store: the
SQLite file (:func:`open_sqlite`: one file in WAL mode, :mod:`browserbay.registry.db`), the
embedded default, or PostgreSQL (``BAY_REGISTRY=postgresql://…``,
:mod:`browserbay.registry.pg`); :func:`open_registry` picks one. Both run the same
migrations and pass the same contract suite (``core/tests/test_registry.py``).

The keeper calls every repository method from its one writer thread (``Keeper.db``), off
the event loop. On PostgreSQL several keepers may share the registry as a fleet
(:mod:`browserbay.registry.fleet`): a registry is opened for one keeper id, and the
repositories of one keeper's rows (its runs, browsers, live tabs, grants) answer and sweep
only that keeper's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from browserbay.registry.audit import Audit, AuditRow, SqliteAudit
from browserbay.registry.browsers import (
    BrowserRow,
    Browsers,
    KeeperRuns,
    SqliteBrowsers,
    SqliteKeeperRuns,
)
from browserbay.registry.changes import Changes, SqlChanges
from browserbay.registry.db import (
    MIGRATIONS,
    Database,
    KeeperLockState,
    RegistryInUse,
    RegistryUnreachable,
    RegistryUrlBad,
    Sql,
    redact,
)
from browserbay.registry.fleet import (
    Claim,
    Claims,
    KeeperRow,
    Keepers,
    KeeperStart,
    SqlClaims,
    SqlKeepers,
)
from browserbay.registry.grants import GrantRow, Grants, GrantTaken, SqliteGrants
from browserbay.registry.hints import SiteHints, SqliteSiteHints
from browserbay.registry.holds import (
    GroupDefaults,
    Hold,
    Holds,
    Reclaimed,
    SqliteGroupDefaults,
    SqliteHolds,
    Turn,
    Waiter,
)
from browserbay.registry.keyhomes import KeyHome, KeyHomes, SqlKeyHomes
from browserbay.registry.profiles import (
    GROUP_PREFIX,
    SHARINGS,
    THE_OWNER,
    ProfileRow,
    Profiles,
    Sharing,
    SqliteProfiles,
    group_owner,
)
from browserbay.registry.sessions import (
    Attachment,
    Attachments,
    Sessions,
    SessionState,
    SqliteAttachments,
    SqliteSessions,
)
from browserbay.registry.switches import (
    Proposal,
    Proposals,
    Recorded,
    SqliteProposals,
    SqliteVersions,
    Versions,
)
from browserbay.registry.tabs import PARKED, Kept, KeptTab, KeptTabs, SqliteKeptTabs
from browserbay.registry.triggers import SqliteTriggerClaims, TriggerClaims, TriggerRecord

__all__ = [
    "GROUP_PREFIX",
    "MIGRATIONS",
    "PARKED",
    "SHARINGS",
    "SOLE_KEEPER",
    "THE_OWNER",
    "Attachment",
    "Attachments",
    "Audit",
    "AuditRow",
    "BrowserRow",
    "Browsers",
    "Changes",
    "Claim",
    "Claims",
    "Database",
    "Db",
    "GrantRow",
    "GrantTaken",
    "Grants",
    "GroupDefaults",
    "Hold",
    "Holds",
    "KeeperLock",
    "KeeperLockState",
    "KeeperRow",
    "KeeperRuns",
    "KeeperStart",
    "Keepers",
    "Kept",
    "KeptTab",
    "KeptTabs",
    "KeyHome",
    "KeyHomes",
    "NoKeeperLock",
    "ProfileRow",
    "Profiles",
    "Proposal",
    "Proposals",
    "Reclaimed",
    "Recorded",
    "Registry",
    "RegistryInUse",
    "RegistryUnreachable",
    "RegistryUrlBad",
    "Schema",
    "SessionState",
    "Sessions",
    "Sharing",
    "SiteHints",
    "Sql",
    "TriggerClaims",
    "TriggerRecord",
    "Turn",
    "Versions",
    "Waiter",
    "group_owner",
    "open_registry",
    "open_sqlite",
    "redact",
    "sql_registry",
]


T = TypeVar("T")

#: The keeper id of a registry opened outside a keeper (tests, benches, campaigns): the
#: keeper-scoped repositories need one.
SOLE_KEEPER = "kp-00000000"


class Db(Protocol):
    """How the keeper calls a repository: ``await db(repo.method, *args)`` runs the call in
    the keeper's one writer thread, off the event loop (``Keeper.db``)."""

    def __call__(self, fn: Callable[..., T], /, *args: Any) -> Awaitable[T]: ...


class Schema(Protocol):
    """The store as a whole: its schema version, its health, its end."""

    @property
    def lanes(self) -> int:
        """How many of its calls may run at once, each on a thread of its own: SQLite's one
        connection 1 (its calls never interleave); PostgreSQL's pool lends each call its
        own connection."""

    def schema_version(self) -> int: ...
    def integrity_check(self) -> str:
        """``"ok"``, or what is wrong."""

    def location(self) -> str:
        """Where the store is, as ``bay keeper status`` shows it: the SQLite file's path, or
        the PostgreSQL URL without its password."""

    def close(self) -> None: ...


class KeeperLock(Protocol):
    """The keeper id's hold on a shared store (PostgreSQL's advisory lock, taken at open):
    the server drops it with its connection, so the heartbeat asks whether it is still
    held, taking it again when it was dropped."""

    def recheck_keeper(self) -> KeeperLockState: ...


class NoKeeperLock:
    """SQLite's: one file is one home's (its keeper holds the home's own lock), nothing
    to lose to a server."""

    def recheck_keeper(self) -> KeeperLockState:
        return "held"


@dataclass(frozen=True)
class Registry:
    """One repository of each kind, over one store."""

    schema: Schema
    keeper_id: str
    """Whose rows the keeper-scoped repositories answer (``state/keeper-id``)."""
    keepers: Keepers
    claims: Claims
    runs: KeeperRuns
    browsers: Browsers
    sessions: Sessions
    attachments: Attachments
    profiles: Profiles
    kept_tabs: KeptTabs
    holds: Holds
    groups: GroupDefaults
    triggers: TriggerClaims
    hints: SiteHints
    versions: Versions
    proposals: Proposals
    audit: Audit
    grants: Grants
    key_homes: KeyHomes
    keeper_lock: KeeperLock
    changes: Changes
    """The change clock and the keeper's pings (migration 13, registry/changes.py)."""

    def close(self) -> None:
        self.schema.close()


def sql_registry(
    db: Sql,
    keeper_id: str = SOLE_KEEPER,
    data_root: Path | None = None,
    keeper_lock: KeeperLock | None = None,
) -> Registry:
    """The registry over an open store (the SQLite :class:`Database` or PostgreSQL's), for
    the keeper ``keeper_id``; ``data_root``: where its profiles' relative directories are
    (see :class:`~browserbay.registry.profiles.SqliteProfiles`); ``keeper_lock``: the keeper
    id's hold on a shared store (None: nothing to hold, SQLite's)."""
    return Registry(
        schema=db,
        keeper_id=keeper_id,
        keepers=SqlKeepers(db),
        claims=SqlClaims(db),
        runs=SqliteKeeperRuns(db, keeper_id),
        browsers=SqliteBrowsers(db, keeper_id),
        sessions=SqliteSessions(db),
        attachments=SqliteAttachments(db),
        profiles=SqliteProfiles(db, keeper_id, data_root),
        kept_tabs=SqliteKeptTabs(db, keeper_id),
        holds=SqliteHolds(db, keeper_id),
        groups=SqliteGroupDefaults(db),
        triggers=SqliteTriggerClaims(db, keeper_id),
        hints=SqliteSiteHints(db),
        versions=SqliteVersions(db),
        proposals=SqliteProposals(db),
        audit=SqliteAudit(db),
        grants=SqliteGrants(db, keeper_id),
        key_homes=SqlKeyHomes(db),
        keeper_lock=keeper_lock if keeper_lock is not None else NoKeeperLock(),
        changes=SqlChanges(db),
    )


def open_sqlite(
    path: Path, keeper_id: str = SOLE_KEEPER, data_root: Path | None = None
) -> Registry:
    """The registry in the SQLite file at ``path`` (created private and migrated)."""
    return sql_registry(Database(path), keeper_id, data_root)


def open_registry(url: str, path: Path, keeper_id: str, data_root: Path | None) -> Registry:
    """The registry ``BAY_REGISTRY`` names, for the keeper ``keeper_id``: empty, the SQLite
    file at ``path``; else a ``postgresql://`` URL (:class:`RegistryUrlBad` when it is none,
    :class:`RegistryUnreachable` when its server does not answer within the connect
    timeout, :class:`RegistryInUse` when a keeper with the same id runs on it)."""
    if not url:
        return open_sqlite(path, keeper_id, data_root)
    # psycopg's import takes a second and more on a loaded machine: only a keeper that
    # uses PostgreSQL pays it (not a cycle: pg imports only the registry's db module).
    from browserbay.registry.pg import PgDatabase

    db = PgDatabase(url)
    try:
        db.hold_keeper(keeper_id)
    except BaseException:
        db.close()
        raise
    return sql_registry(db, keeper_id, data_root, db)
