"""The registry: what the keeper knows that must survive it. SQLite in WAL mode.

The keeper is the only writer. Everything goes through :class:`Registry` (a small interface)
so a server database can take the SQLite file's place when users outgrow one machine.
Schema changes are numbered migrations applied in one transaction each.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from browserbay.model import SiteHint

#: Ordered migrations. Never edit a released one: append a new one.
MIGRATIONS: Sequence[str] = (
    # 1: the foundation — sessions, the browsers the keeper started, keeper runs, audit.
    """
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        origin TEXT NOT NULL,
        first_seen REAL NOT NULL,
        last_seen REAL NOT NULL,
        closed_at REAL
    );
    CREATE TABLE browsers (
        id TEXT PRIMARY KEY,
        provider TEXT NOT NULL,
        pid INTEGER,
        keeper_pid INTEGER NOT NULL,
        home TEXT NOT NULL,
        ephemeral INTEGER NOT NULL,
        started_at REAL NOT NULL,
        stopped_at REAL,
        stop_reason TEXT
    );
    CREATE INDEX browsers_running ON browsers(stopped_at) WHERE stopped_at IS NULL;
    CREATE TABLE keeper_runs (
        pid INTEGER NOT NULL,
        version TEXT NOT NULL,
        started_at REAL NOT NULL,
        stopped_at REAL
    );
    CREATE TABLE audit (
        id INTEGER PRIMARY KEY,
        at REAL NOT NULL,
        session TEXT NOT NULL,
        profile TEXT,
        verb TEXT NOT NULL,
        ok INTEGER NOT NULL,
        code TEXT
    );
    """,
    # 2: persistent profiles, attachment sets, kept tabs, exclusive holds, group defaults.
    """
    CREATE TABLE profiles (
        id TEXT PRIMARY KEY,
        label TEXT NOT NULL,
        provider TEXT NOT NULL,
        dir TEXT NOT NULL,
        proxy TEXT,
        allowed_domains TEXT NOT NULL DEFAULT '[]',
        headed INTEGER NOT NULL DEFAULT 0,
        adopted INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL,
        last_used REAL
    );
    CREATE INDEX profiles_label ON profiles(label);
    CREATE TABLE attachments (
        session TEXT NOT NULL,
        profile TEXT NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,
        alias TEXT,
        position INTEGER NOT NULL,
        attached_at REAL NOT NULL,
        PRIMARY KEY (session, profile)
    );
    CREATE TABLE session_state (
        session TEXT PRIMARY KEY,
        pin TEXT,
        last_profile TEXT,
        set_version INTEGER NOT NULL DEFAULT 0,
        seen_version INTEGER NOT NULL DEFAULT 0,
        seen_handles TEXT NOT NULL DEFAULT '[]',
        ephemeral_domains TEXT NOT NULL DEFAULT '[]'
    );
    CREATE TABLE kept_tabs (
        session TEXT NOT NULL,
        profile TEXT NOT NULL,
        position INTEGER NOT NULL,
        url TEXT NOT NULL,
        title TEXT NOT NULL,
        current INTEGER NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('live', 'auto', 'deliberate')),
        kept_at REAL NOT NULL,
        PRIMARY KEY (session, profile, position)
    );
    CREATE TABLE holds (
        profile TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        group_name TEXT NOT NULL,
        since REAL NOT NULL
    );
    CREATE TABLE group_defaults (
        group_name TEXT PRIMARY KEY,
        profile TEXT NOT NULL
    );
    """,
    # 3: trigger intake — a request UUID is claimed durably before it is acted on.
    """
    CREATE TABLE trigger_claims (
        uuid TEXT PRIMARY KEY,
        action TEXT NOT NULL,
        session TEXT NOT NULL,
        claimed_at REAL NOT NULL,
        result TEXT
    );
    """,
    # 4: provider options of a profile (the cdp provider's cdp_url), a JSON object.
    """
    ALTER TABLE profiles ADD COLUMN options TEXT NOT NULL DEFAULT '{}';
    """,
    # 5: site hints — claims that a host needs another tier or backend (never a detection).
    # A tier only while no backend is named (a provider's tier is derived from its row).
    """
    CREATE TABLE site_hints (
        id INTEGER PRIMARY KEY,
        host TEXT NOT NULL,
        tier INTEGER CHECK (tier IS NULL OR tier IN (1, 2, 3)),
        backend TEXT,
        by TEXT NOT NULL,
        at REAL NOT NULL,
        why TEXT NOT NULL,
        CHECK (tier IS NULL OR backend IS NULL)
    );
    CREATE INDEX site_hints_host ON site_hints(host);
    """,
    # 6: backend switches — the highest Chromium major that has written each profile's
    # directory (the version ladder's record), and switches proposed for a profile's owner.
    """
    CREATE TABLE profile_versions (
        profile TEXT PRIMARY KEY,
        major INTEGER NOT NULL,
        backend TEXT NOT NULL,
        at REAL NOT NULL
    );
    CREATE TABLE backend_proposals (
        profile TEXT PRIMARY KEY,
        provider TEXT NOT NULL,
        by_session TEXT NOT NULL,
        at REAL NOT NULL,
        why TEXT NOT NULL,
        affects TEXT NOT NULL DEFAULT '[]',
        url TEXT
    );
    """,
    # 7: the road each audited action came by (cli, api, mcp, trigger, cdp, run).
    """
    ALTER TABLE audit ADD COLUMN road TEXT;
    """,
)


#: Suffix of the key under which a deliberate close parks a lease's tabs for ``resume``.
PARKED = "@closed"


@dataclass(frozen=True)
class ProfileRow:
    id: str
    label: str
    provider: str
    dir: str
    proxy: str | None
    allowed_domains: tuple[str, ...]
    headed: bool
    adopted: bool
    created_at: float
    last_used: float | None
    options: Mapping[str, str] = field(default_factory=dict)
    """Provider options (migration 4): ``{"cdp_url": ...}`` for a ``cdp`` profile."""


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

    def as_row(self) -> dict[str, Any]:
        return {
            "profile": self.profile,
            "provider": self.provider,
            "by": self.by,
            "at": self.at,
            "why": self.why,
            "affects": list(self.affects),
            "url": self.url,
        }


@dataclass(frozen=True)
class KeptTab:
    url: str
    title: str
    current: bool


@dataclass(frozen=True)
class BrowserRow:
    id: str
    provider: str
    pid: int | None
    keeper_pid: int
    home: str
    ephemeral: bool
    started_at: float


class Registry(Protocol):
    """What the keeper needs from a store."""

    def schema_version(self) -> int: ...
    def integrity_check(self) -> str: ...
    def keeper_started(self, pid: int, version: str) -> None: ...
    def keeper_stopped(self, pid: int) -> None: ...
    def session_seen(self, session_id: str, origin: str) -> None: ...
    def session_closed(self, session_id: str) -> None: ...
    def browser_started(self, row: BrowserRow) -> None: ...
    def browser_pid(self, browser_id: str, pid: int | None) -> None: ...
    def browser_stopped(self, browser_id: str, reason: str) -> None: ...
    def unstopped_browsers(self) -> list[BrowserRow]: ...
    def audit(
        self,
        session: str,
        profile: str | None,
        verb: str,
        ok: bool,
        code: str | None,
        road: str | None = None,
    ) -> None: ...
    def close(self) -> None: ...
    # profiles, attachments, kept tabs, holds (migration 2)
    def profile_create(self, row: ProfileRow) -> None: ...
    def profile_delete(self, profile_id: str) -> None: ...
    def profile_used(self, profile_id: str) -> None: ...
    def profiles(self) -> list[ProfileRow]: ...
    def attachments(self, session: str) -> list[tuple[str, str | None]]: ...
    def attachments_of_profile(self, profile_id: str) -> list[str]: ...
    def attach(self, session: str, profile_id: str, alias: str | None, by_other: bool) -> None: ...
    def detach(self, session: str, profile_id: str, by_other: bool) -> None: ...
    def session_state(self, session: str) -> dict[str, Any]: ...
    def set_pin(self, session: str, pin: str | None, by_other: bool) -> None: ...
    def set_last_profile(self, session: str, profile_id: str | None) -> None: ...
    def ack_set(self, session: str, handles: list[str]) -> None: ...
    def set_ephemeral_domains(self, session: str, domains: list[str]) -> None: ...
    def keep_tabs(self, session: str, profile_id: str, tabs: list[KeptTab], state: str) -> None: ...
    def kept_tabs(self, session: str, profile_id: str) -> tuple[str | None, list[KeptTab]]: ...
    def drop_kept_tabs(self, session: str, profile_id: str) -> None: ...
    def mark_live_tabs_auto(self) -> int: ...
    def mark_kept(self, session: str, profile_id: str, state: str) -> None: ...
    def park_kept(self, session: str, profile_id: str) -> None: ...
    def hold(self, profile_id: str) -> tuple[str, str, float] | None: ...
    def set_hold(self, profile_id: str, holder: str, group: str) -> None: ...
    def release_hold(self, profile_id: str) -> None: ...
    def drop_orphan_holds(self) -> int: ...
    def group_default(self, group: str) -> str | None: ...
    def set_group_default(self, group: str, profile_id: str) -> None: ...
    def audit_rows(self, profile_id: str | None, limit: int) -> list[dict[str, Any]]: ...
    # trigger intake (migration 3)
    def claim_trigger(self, uuid: str, action: str, session: str) -> str | None: ...
    def add_site_hint(self, hint: SiteHint) -> None: ...
    def site_hints(self, host: str | None = None) -> list[SiteHint]: ...
    def forget_site_hints(self, host: str) -> int: ...
    def finish_trigger(self, uuid: str, result: str) -> None: ...
    # backend switches (migration 6)
    def record_major(self, profile_id: str, major: int, backend: str) -> None: ...
    def recorded_major(self, profile_id: str) -> tuple[int, str] | None: ...
    def profile_set_backend(
        self, profile_id: str, provider: str, options: Mapping[str, str]
    ) -> None: ...
    def propose(self, proposal: Proposal) -> None: ...
    def proposal(self, profile_id: str) -> Proposal | None: ...
    def drop_proposal(self, profile_id: str) -> None: ...


class SqliteRegistry:
    """The registry in one SQLite file (WAL, synchronous=NORMAL, private mode 0600)."""

    def __init__(self, path: Path):
        self.path = path
        fresh = not path.exists()
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10.0)
        if fresh:
            os.chmod(path, 0o600)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self.migrate()

    # -- schema -----------------------------------------------------------------------

    def schema_version(self) -> int:
        return int(self.db.execute("PRAGMA user_version").fetchone()[0])

    def migrate(self) -> int:
        current = self.schema_version()
        if current > len(MIGRATIONS):
            raise RuntimeError(
                f"{self.path} has schema version {current}, newer than this browserbay "
                f"({len(MIGRATIONS)}); upgrade browserbay, or set BAY_HOME to another directory"
            )
        for number, script in enumerate(MIGRATIONS[current:], start=current + 1):
            self.db.execute("BEGIN IMMEDIATE")
            try:
                for statement in _statements(script):
                    self.db.execute(statement)
                self.db.execute(f"PRAGMA user_version={number}")
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
        return self.schema_version()

    def integrity_check(self) -> str:
        return str(self.db.execute("PRAGMA integrity_check").fetchone()[0])

    # -- keeper runs --------------------------------------------------------------------

    def keeper_started(self, pid: int, version: str) -> None:
        self.db.execute(
            "INSERT INTO keeper_runs(pid, version, started_at) VALUES (?, ?, ?)",
            (pid, version, time.time()),
        )

    def keeper_stopped(self, pid: int) -> None:
        self.db.execute(
            "UPDATE keeper_runs SET stopped_at=? WHERE pid=? AND stopped_at IS NULL",
            (time.time(), pid),
        )

    # -- sessions -----------------------------------------------------------------------

    def session_seen(self, session_id: str, origin: str) -> None:
        now = time.time()
        self.db.execute(
            "INSERT INTO sessions(id, origin, first_seen, last_seen) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET last_seen=excluded.last_seen, closed_at=NULL",
            (session_id, origin, now, now),
        )

    def session_closed(self, session_id: str) -> None:
        self.db.execute("UPDATE sessions SET closed_at=? WHERE id=?", (time.time(), session_id))

    # -- browsers -----------------------------------------------------------------------

    def browser_started(self, row: BrowserRow) -> None:
        self.db.execute(
            "INSERT INTO browsers(id, provider, pid, keeper_pid, home, ephemeral, started_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                row.id,
                row.provider,
                row.pid,
                row.keeper_pid,
                row.home,
                int(row.ephemeral),
                row.started_at,
            ),
        )

    def browser_pid(self, browser_id: str, pid: int | None) -> None:
        self.db.execute("UPDATE browsers SET pid=? WHERE id=?", (pid, browser_id))

    def browser_stopped(self, browser_id: str, reason: str) -> None:
        self.db.execute(
            "UPDATE browsers SET stopped_at=?, stop_reason=? WHERE id=? AND stopped_at IS NULL",
            (time.time(), reason, browser_id),
        )

    def unstopped_browsers(self) -> list[BrowserRow]:
        rows = self.db.execute(
            "SELECT id, provider, pid, keeper_pid, home, ephemeral, started_at "
            "FROM browsers WHERE stopped_at IS NULL"
        ).fetchall()
        return [BrowserRow(r[0], r[1], r[2], r[3], r[4], bool(r[5]), r[6]) for r in rows]

    # -- audit --------------------------------------------------------------------------

    def audit(
        self,
        session: str,
        profile: str | None,
        verb: str,
        ok: bool,
        code: str | None,
        road: str | None = None,
    ) -> None:
        """One row per action: who, where, what, by which road, whether. Never a typed
        value."""
        self.db.execute(
            "INSERT INTO audit(at, session, profile, verb, ok, code, road) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (time.time(), session, profile, verb, int(ok), code, road),
        )

    def close(self) -> None:
        self.db.close()

    def _tx(self, *statements: tuple[str, tuple[Any, ...]]) -> None:
        """Several writes, all or none."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            for sql, params in statements:
                self.db.execute(sql, params)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    # -- profiles ---------------------------------------------------------------------

    _PROFILE_COLS = (
        "id, label, provider, dir, proxy, allowed_domains, headed, adopted, created_at, last_used, "
        "options"
    )

    def profile_create(self, row: ProfileRow) -> None:
        self.db.execute(
            f"INSERT INTO profiles({self._PROFILE_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",  # noqa: S608 - a constant
            (
                row.id,
                row.label,
                row.provider,
                row.dir,
                row.proxy,
                json.dumps(list(row.allowed_domains)),
                int(row.headed),
                int(row.adopted),
                row.created_at,
                row.last_used,
                json.dumps(dict(row.options)),
            ),
        )

    def profile_delete(self, profile_id: str) -> None:
        self._tx(
            ("DELETE FROM attachments WHERE profile=?", (profile_id,)),
            ("DELETE FROM kept_tabs WHERE profile=?", (profile_id,)),
            ("DELETE FROM holds WHERE profile=?", (profile_id,)),
            ("DELETE FROM group_defaults WHERE profile=?", (profile_id,)),
            ("DELETE FROM backend_proposals WHERE profile=?", (profile_id,)),
            ("DELETE FROM profile_versions WHERE profile=?", (profile_id,)),
            ("DELETE FROM profiles WHERE id=?", (profile_id,)),
        )

    def profile_used(self, profile_id: str) -> None:
        self.db.execute("UPDATE profiles SET last_used=? WHERE id=?", (time.time(), profile_id))

    def profiles(self) -> list[ProfileRow]:
        rows = self.db.execute(
            f"SELECT {self._PROFILE_COLS} FROM profiles ORDER BY created_at"  # noqa: S608 - a constant
        ).fetchall()
        return [
            ProfileRow(
                r[0],
                r[1],
                r[2],
                r[3],
                r[4],
                tuple(json.loads(r[5])),
                bool(r[6]),
                bool(r[7]),
                r[8],
                r[9],
                json.loads(r[10] or "{}"),
            )
            for r in rows
        ]

    # -- attachment sets ----------------------------------------------------------------

    def attachments(self, session: str) -> list[tuple[str, str | None]]:
        """(profile id, alias) in the order they were attached: the first is the default."""
        rows = self.db.execute(
            "SELECT profile, alias FROM attachments WHERE session=? ORDER BY position", (session,)
        ).fetchall()
        return [(r[0], r[1]) for r in rows]

    def attachments_of_profile(self, profile_id: str) -> list[str]:
        rows = self.db.execute(
            "SELECT session FROM attachments WHERE profile=? ORDER BY attached_at", (profile_id,)
        ).fetchall()
        return [r[0] for r in rows]

    def _state_row(self, session: str) -> tuple[str, tuple[Any, ...]]:
        return ("INSERT OR IGNORE INTO session_state(session) VALUES (?)", (session,))

    def _bump(self, session: str, by_other: bool) -> tuple[str, tuple[Any, ...]]:
        """A change by somebody else bumps set_version only: the session is told once."""
        if by_other:
            return (
                "UPDATE session_state SET set_version=set_version+1 WHERE session=?",
                (session,),
            )
        return (
            "UPDATE session_state SET set_version=set_version+1, seen_version=set_version+1 "
            "WHERE session=?",
            (session,),
        )

    def attach(self, session: str, profile_id: str, alias: str | None, by_other: bool) -> None:
        self._tx(
            self._state_row(session),
            (
                "INSERT INTO attachments(session, profile, alias, position, attached_at) "
                "VALUES (?, ?, ?, (SELECT coalesce(max(position), 0) + 1 FROM attachments "
                "WHERE session=?), ?) ON CONFLICT(session, profile) DO UPDATE SET "
                "alias=coalesce(excluded.alias, attachments.alias)",
                (session, profile_id, alias, session, time.time()),
            ),
            ("UPDATE session_state SET last_profile=? WHERE session=?", (profile_id, session)),
            self._bump(session, by_other),
        )

    def detach(self, session: str, profile_id: str, by_other: bool) -> None:
        self._tx(
            self._state_row(session),
            ("DELETE FROM attachments WHERE session=? AND profile=?", (session, profile_id)),
            (
                "UPDATE session_state SET pin=NULL WHERE session=? AND pin=?",
                (session, profile_id),
            ),
            (
                "UPDATE session_state SET last_profile=NULL WHERE session=? AND last_profile=?",
                (session, profile_id),
            ),
            self._bump(session, by_other),
        )

    def session_state(self, session: str) -> dict[str, Any]:
        row = self.db.execute(
            "SELECT pin, last_profile, set_version, seen_version, seen_handles, "
            "ephemeral_domains FROM session_state WHERE session=?",
            (session,),
        ).fetchone()
        if row is None:
            return {
                "pin": None,
                "last_profile": None,
                "changed": False,
                "seen_handles": [],
                "ephemeral_domains": [],
            }
        return {
            "pin": row[0],
            "last_profile": row[1],
            "changed": row[2] != row[3],
            "seen_handles": json.loads(row[4]),
            "ephemeral_domains": json.loads(row[5]),
        }

    def set_pin(self, session: str, pin: str | None, by_other: bool) -> None:
        self._tx(
            self._state_row(session),
            ("UPDATE session_state SET pin=? WHERE session=?", (pin, session)),
            self._bump(session, by_other),
        )

    def set_last_profile(self, session: str, profile_id: str | None) -> None:
        self._tx(
            self._state_row(session),
            ("UPDATE session_state SET last_profile=? WHERE session=?", (profile_id, session)),
        )

    def ack_set(self, session: str, handles: list[str]) -> None:
        self._tx(
            self._state_row(session),
            (
                "UPDATE session_state SET seen_version=set_version, seen_handles=? WHERE session=?",
                (json.dumps(handles), session),
            ),
        )

    def set_ephemeral_domains(self, session: str, domains: list[str]) -> None:
        self._tx(
            self._state_row(session),
            (
                "UPDATE session_state SET ephemeral_domains=? WHERE session=?",
                (json.dumps(domains), session),
            ),
        )

    # -- kept tabs ----------------------------------------------------------------------

    def keep_tabs(self, session: str, profile_id: str, tabs: list[KeptTab], state: str) -> None:
        """Replace the lease's kept tabs (one transaction: never half a list)."""
        now = time.time()
        self._tx(
            ("DELETE FROM kept_tabs WHERE session=? AND profile=?", (session, profile_id)),
            *(
                (
                    "INSERT INTO kept_tabs(session, profile, position, url, title, current, "
                    "state, kept_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (session, profile_id, i, t.url, t.title, int(t.current), state, now),
                )
                for i, t in enumerate(tabs)
            ),
        )

    def kept_tabs(self, session: str, profile_id: str) -> tuple[str | None, list[KeptTab]]:
        rows = self.db.execute(
            "SELECT url, title, current, state FROM kept_tabs WHERE session=? AND profile=? "
            "ORDER BY position",
            (session, profile_id),
        ).fetchall()
        state = rows[0][3] if rows else None
        return state, [KeptTab(r[0], r[1], bool(r[2])) for r in rows]

    def drop_kept_tabs(self, session: str, profile_id: str) -> None:
        self.db.execute(
            "DELETE FROM kept_tabs WHERE session=? AND profile=?", (session, profile_id)
        )

    def mark_live_tabs_auto(self) -> int:
        """At keeper start: the browsers of 'live' tabs died with the last keeper."""
        return self.db.execute("UPDATE kept_tabs SET state='auto' WHERE state='live'").rowcount

    def park_kept(self, session: str, profile_id: str) -> None:
        """A deliberate close: the lease's kept tabs move aside (``<profile>@closed``) where
        only ``bay resume`` takes them, so tabs the session opens meanwhile do not replace
        them. The newest close wins."""
        parked = profile_id + PARKED
        self._tx(
            ("DELETE FROM kept_tabs WHERE session=? AND profile=?", (session, parked)),
            (
                "UPDATE kept_tabs SET profile=?, state='deliberate' WHERE session=? AND profile=?",
                (parked, session, profile_id),
            ),
        )

    def mark_kept(self, session: str, profile_id: str, state: str) -> None:
        self.db.execute(
            "UPDATE kept_tabs SET state=? WHERE session=? AND profile=?",
            (state, session, profile_id),
        )

    # -- exclusive holds and group defaults ----------------------------------------------

    def hold(self, profile_id: str) -> tuple[str, str, float] | None:
        row = self.db.execute(
            "SELECT holder, group_name, since FROM holds WHERE profile=?", (profile_id,)
        ).fetchone()
        return (row[0], row[1], row[2]) if row else None

    def set_hold(self, profile_id: str, holder: str, group: str) -> None:
        self.db.execute(
            "INSERT INTO holds(profile, holder, group_name, since) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(profile) DO UPDATE SET holder=excluded.holder, "
            "group_name=excluded.group_name, since=excluded.since",
            (profile_id, holder, group, time.time()),
        )

    def release_hold(self, profile_id: str) -> None:
        self.db.execute("DELETE FROM holds WHERE profile=?", (profile_id,))

    def drop_orphan_holds(self) -> int:
        """At keeper start: a hold whose holder does not have the profile attached is what a
        ``use --exclusive`` cut between its two writes (the hold, then the attachment)
        leaves; nothing else makes one. It goes, so the profile is not held for nobody."""
        return self.db.execute(
            "DELETE FROM holds WHERE NOT EXISTS (SELECT 1 FROM attachments a "
            "WHERE a.profile = holds.profile AND a.session = holds.holder)"
        ).rowcount

    def group_default(self, group: str) -> str | None:
        row = self.db.execute(
            "SELECT profile FROM group_defaults WHERE group_name=?", (group,)
        ).fetchone()
        return row[0] if row else None

    def set_group_default(self, group: str, profile_id: str) -> None:
        self.db.execute(
            "INSERT INTO group_defaults(group_name, profile) VALUES (?, ?) "
            "ON CONFLICT(group_name) DO UPDATE SET profile=excluded.profile",
            (group, profile_id),
        )

    def claim_trigger(self, uuid: str, action: str, session: str) -> str | None:
        """Claim a request UUID before acting on it. Answers None for a fresh claim, the
        stored result (JSON) for one already handled, or ``""`` for one claimed by a keeper
        that died before it finished (the action may have taken effect)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            row = self.db.execute(
                "SELECT result FROM trigger_claims WHERE uuid=?", (uuid,)
            ).fetchone()
            if row is None:
                self.db.execute(
                    "INSERT INTO trigger_claims(uuid, action, session, claimed_at) "
                    "VALUES (?, ?, ?, ?)",
                    (uuid, action, session, time.time()),
                )
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        if row is None:
            return None
        return str(row[0]) if row[0] is not None else ""

    def finish_trigger(self, uuid: str, result: str) -> None:
        self.db.execute("UPDATE trigger_claims SET result=? WHERE uuid=?", (result, uuid))

    # -- site hints -----------------------------------------------------------------------

    def add_site_hint(self, hint: SiteHint) -> None:
        self.db.execute(
            "INSERT INTO site_hints(host, tier, backend, by, at, why) VALUES (?, ?, ?, ?, ?, ?)",
            (hint.host, hint.tier, hint.backend or None, hint.by, hint.at, hint.why),
        )

    def site_hints(self, host: str | None = None) -> list[SiteHint]:
        """A host's hints in the order they were recorded (every host's, by host, if None)."""
        sql = "SELECT host, tier, backend, by, at, why FROM site_hints"
        if host is None:
            rows = self.db.execute(sql + " ORDER BY host, id").fetchall()
        else:
            rows = self.db.execute(sql + " WHERE host=? ORDER BY id", (host,)).fetchall()
        return [SiteHint(r[0], r[1], r[2], r[3], r[4], r[5]) for r in rows]

    def forget_site_hints(self, host: str) -> int:
        return self.db.execute("DELETE FROM site_hints WHERE host=?", (host,)).rowcount

    # -- backend switches (migration 6) ----------------------------------------------

    def record_major(self, profile_id: str, major: int, backend: str) -> None:
        """A browser of Chromium ``major`` started on the profile: the record keeps the
        highest major that has written its directory (and the backend that ran it)."""
        self.db.execute(
            "INSERT INTO profile_versions(profile, major, backend, at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(profile) DO UPDATE SET major=excluded.major, "
            "backend=excluded.backend, at=excluded.at WHERE excluded.major >= major",
            (profile_id, major, backend, time.time()),
        )

    def recorded_major(self, profile_id: str) -> tuple[int, str] | None:
        row = self.db.execute(
            "SELECT major, backend FROM profile_versions WHERE profile=?", (profile_id,)
        ).fetchone()
        return (int(row[0]), str(row[1])) if row else None

    def profile_set_backend(
        self, profile_id: str, provider: str, options: Mapping[str, str]
    ) -> None:
        """A switch: the profile's provider (its backend) and its options, in one write;
        the proposal for it, if any, is settled by it."""
        self._tx(
            (
                "UPDATE profiles SET provider=?, options=? WHERE id=?",
                (provider, json.dumps(dict(options)), profile_id),
            ),
            ("DELETE FROM backend_proposals WHERE profile=?", (profile_id,)),
        )

    def propose(self, proposal: Proposal) -> None:
        """Record a proposed switch (a newer proposal for the profile replaces the older)."""
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

    def proposal(self, profile_id: str) -> Proposal | None:
        row = self.db.execute(
            "SELECT profile, provider, by_session, at, why, affects, url "
            "FROM backend_proposals WHERE profile=?",
            (profile_id,),
        ).fetchone()
        if row is None:
            return None
        return Proposal(row[0], row[1], row[2], row[3], row[4], tuple(json.loads(row[5])), row[6])

    def drop_proposal(self, profile_id: str) -> None:
        self.db.execute("DELETE FROM backend_proposals WHERE profile=?", (profile_id,))

    def audit_rows(self, profile_id: str | None, limit: int) -> list[dict[str, Any]]:
        sql = "SELECT at, session, profile, verb, ok, code, road FROM audit"
        params: tuple[Any, ...] = ()
        if profile_id is not None:
            sql += " WHERE profile=?"
            params = (profile_id,)
        sql += " ORDER BY id DESC LIMIT ?"
        rows = self.db.execute(sql, (*params, limit)).fetchall()
        return [
            {
                "at": r[0],
                "session": r[1],
                "profile": r[2],
                "verb": r[3],
                "ok": bool(r[4]),
                "code": r[5],
                "road": r[6],
            }
            for r in reversed(rows)
        ]


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]
