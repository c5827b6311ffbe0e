"""The registry's store: the numbered migrations, the :class:`Sql` a repository writes to,
and its SQLite implementation (:class:`Database`: the file, its settings).

One schema history serves every backend. The migrations and the repositories' statements
are written once, in the SQL both engines speak (``?`` placeholders, ``ON CONFLICT``
upserts, single-statement conditional updates instead of read-then-write); what differs is
the store's business: a store renders the migrations' column types for its engine
(:func:`browserbay.registry.pg.render_ddl`), binds the placeholders its driver's way, keeps
its schema version (SQLite's ``user_version``; a table on PostgreSQL) and says what an
all-or-nothing write is (``BEGIN IMMEDIATE``; a server transaction).

A :class:`Database` is shared by every repository of :mod:`browserbay.registry`. The
keeper is its only writer and calls it from one thread (``Keeper.db`` runs each call off
the event loop, one at a time), so the connection is not locked here.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

#: In a migration, what follows this line is PostgreSQL's alone (its triggers and functions,
#: which SQLite does not speak): SQLite runs the part before it (:func:`for_sqlite`).
POSTGRESQL_ONLY = "-- postgresql only --"

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
    # 8: owner and agents — session sockets the owner granted (one per session id; a revoked
    # or expired one keeps its row), who owns a profile (`owner`: the owner's channel, else
    # the session group that made it) and who may use it (`sharing`), and who acted (the
    # audit's actor: owner, session-socket:<id>, trigger).
    """
    CREATE TABLE grants (
        session TEXT PRIMARY KEY,
        socket TEXT NOT NULL UNIQUE,
        profiles TEXT NOT NULL DEFAULT '[]',
        parent TEXT,
        created_at REAL NOT NULL,
        expires_at REAL,
        revoked_at REAL
    );
    ALTER TABLE profiles ADD COLUMN owner TEXT NOT NULL DEFAULT 'owner';
    ALTER TABLE profiles ADD COLUMN sharing TEXT NOT NULL DEFAULT 'granted'
        CHECK (sharing IN ('owner', 'granted'));
    ALTER TABLE audit ADD COLUMN actor TEXT;
    """,
    # 9: trigger requests, exactly once whatever happens — a record per request UUID from its
    # admission (its place in its session's FIFO, kept across a restart), through its claim
    # and the start of its action, to its first terminal result (a refusal too) and that
    # result's publication. A claim of migration 3 without a result may have acted.
    """
    CREATE TABLE trigger_requests (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        uuid TEXT NOT NULL UNIQUE,
        session TEXT,
        request TEXT,
        published_at REAL,
        phase TEXT NOT NULL CHECK (phase IN ('queued', 'claimed', 'acting', 'done')),
        claimed_at REAL,
        result TEXT,
        result_published INTEGER NOT NULL DEFAULT 0,
        CHECK ((phase = 'done') = (result IS NOT NULL))
    );
    INSERT INTO trigger_requests(uuid, session, phase, claimed_at, result, result_published)
        SELECT uuid, session, CASE WHEN result IS NULL THEN 'acting' ELSE 'done' END,
               claimed_at, result, 1
        FROM trigger_claims ORDER BY claimed_at;
    DROP TABLE trigger_claims;
    CREATE INDEX trigger_requests_unsettled ON trigger_requests(seq)
        WHERE phase != 'done' OR result_published = 0;
    """,
    # 10: the fleet (issue 22) — the keepers sharing this registry (one row per keeper id,
    # beating on the store's clock), which keeper runs each persistent profile's browser (a
    # claim; released or expired ones keep their last keeper), and whose rows are whose: a
    # keeper's start sweeps only its own browsers, live tabs, runs, grants and trigger
    # requests (those came through its home's intake directory). A profile's
    # directory made under a home's data dir is stored relative to it (`profiles/<id>`), so
    # every keeper finds it under its own data root (BAY_FLEET_DATA, else its home's).
    """
    CREATE TABLE keepers (
        id TEXT PRIMARY KEY,
        host TEXT NOT NULL,
        listen TEXT,
        pid INTEGER NOT NULL,
        version TEXT NOT NULL,
        started_at REAL NOT NULL,
        beat_at REAL NOT NULL,
        stopped_at REAL
    );
    CREATE TABLE profile_claims (
        profile TEXT PRIMARY KEY,
        keeper_id TEXT NOT NULL,
        since REAL NOT NULL,
        renewed_at REAL NOT NULL,
        released_at REAL
    );
    CREATE INDEX profile_claims_keeper ON profile_claims(keeper_id) WHERE released_at IS NULL;
    ALTER TABLE keeper_runs ADD COLUMN keeper_id TEXT;
    ALTER TABLE browsers ADD COLUMN keeper_id TEXT;
    ALTER TABLE kept_tabs ADD COLUMN keeper_id TEXT;
    ALTER TABLE grants ADD COLUMN keeper_id TEXT;
    ALTER TABLE trigger_requests ADD COLUMN keeper_id TEXT;
    UPDATE profiles SET dir = 'profiles/' || id WHERE adopted = 0 AND dir LIKE '%/profiles/' || id;
    """,
    # 11: exclusive holds across the fleet (issue 22) — the keeper each hold came through,
    # and the FIFO queue of sessions waiting for a held profile (it was the keeper's memory:
    # a waiter on keeper B must queue behind one on keeper A). `seq` is an entry's place;
    # `keeper_id` whose waiter it is: a keeper's start drops only its own entries, and a
    # keeper that stopped beating loses its holds and entries to whichever keeper notices.
    """
    ALTER TABLE holds ADD COLUMN keeper_id TEXT;
    CREATE TABLE hold_queue (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        profile TEXT NOT NULL,
        session TEXT NOT NULL,
        group_name TEXT NOT NULL,
        keeper_id TEXT NOT NULL,
        enqueued_at REAL NOT NULL
    );
    CREATE INDEX hold_queue_profile ON hold_queue(profile, seq);
    CREATE INDEX hold_queue_keeper ON hold_queue(keeper_id);
    """,
    # 12: where a persistent profile's provider key lives (issue 22 item 6): the keeper whose
    # own key first started its browser; no value, only who holds it (registry/keyhomes.py).
    """
    CREATE TABLE key_homes (
        profile TEXT PRIMARY KEY,
        keeper_id TEXT NOT NULL,
        host TEXT NOT NULL,
        integration TEXT NOT NULL,
        source TEXT NOT NULL,
        since REAL NOT NULL
    );
    """,
    # 13: the change clock (issue 22: a forwarded verb's standing served from what the
    # browser's keeper heard, docs/security.md §14). One row; on PostgreSQL every change of
    # an input of `Attachments.standing` (attachments, session_state.last_profile,
    # group_defaults, holds) bumps it at its commit (a deferred trigger: the row's lock is
    # the transaction's last, so commit order is clock order) and notifies the schema's
    # channel (`bay_` + 16 hex digits of md5(schema)) with `<clock> <profile>`. Triggers, so
    # any writer signals. SQLite has the table alone (a fleet needs PostgreSQL).
    """
    CREATE TABLE change_clock (
        id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
        value BIGINT NOT NULL
    );
    INSERT INTO change_clock(id, value) VALUES (1, 0);
    -- postgresql only --
    CREATE FUNCTION bay_standing_changed() RETURNS trigger LANGUAGE plpgsql AS $bay$
    DECLARE
        was TEXT;
        now_ TEXT;
        touched TEXT;
        tick BIGINT;
    BEGIN
        IF TG_OP = 'UPDATE' AND to_jsonb(OLD) = to_jsonb(NEW) THEN
            RETURN NULL;
        END IF;
        IF TG_OP <> 'INSERT' THEN
            was := to_jsonb(OLD) ->> TG_ARGV[0];
        END IF;
        IF TG_OP <> 'DELETE' THEN
            now_ := to_jsonb(NEW) ->> TG_ARGV[0];
        END IF;
        FOREACH touched IN ARRAY ARRAY[was, CASE WHEN now_ IS DISTINCT FROM was THEN now_ END]
        LOOP
            IF touched IS NOT NULL THEN
                EXECUTE format(
                    'INSERT INTO %I.change_clock(id, value) VALUES (1, 1) ON CONFLICT (id) '
                    'DO UPDATE SET value = change_clock.value + 1 RETURNING value',
                    TG_TABLE_SCHEMA) INTO tick;
                PERFORM pg_notify('bay_' || left(md5(TG_TABLE_SCHEMA), 16),
                                  tick::text || ' ' || touched);
            END IF;
        END LOOP;
        RETURN NULL;
    END
    $bay$;
    CREATE CONSTRAINT TRIGGER attachments_changed AFTER INSERT OR UPDATE OR DELETE
        ON attachments DEFERRABLE INITIALLY DEFERRED
        FOR EACH ROW EXECUTE FUNCTION bay_standing_changed('profile');
    CREATE CONSTRAINT TRIGGER holds_changed AFTER INSERT OR UPDATE OR DELETE
        ON holds DEFERRABLE INITIALLY DEFERRED
        FOR EACH ROW EXECUTE FUNCTION bay_standing_changed('profile');
    CREATE CONSTRAINT TRIGGER group_defaults_changed AFTER INSERT OR UPDATE OR DELETE
        ON group_defaults DEFERRABLE INITIALLY DEFERRED
        FOR EACH ROW EXECUTE FUNCTION bay_standing_changed('profile');
    CREATE CONSTRAINT TRIGGER session_state_inserted AFTER INSERT
        ON session_state DEFERRABLE INITIALLY DEFERRED
        FOR EACH ROW WHEN (NEW.last_profile IS NOT NULL)
        EXECUTE FUNCTION bay_standing_changed('last_profile');
    CREATE CONSTRAINT TRIGGER session_state_changed AFTER UPDATE OF last_profile
        ON session_state DEFERRABLE INITIALLY DEFERRED
        FOR EACH ROW WHEN (OLD.last_profile IS DISTINCT FROM NEW.last_profile)
        EXECUTE FUNCTION bay_standing_changed('last_profile');
    CREATE CONSTRAINT TRIGGER session_state_deleted AFTER DELETE
        ON session_state DEFERRABLE INITIALLY DEFERRED
        FOR EACH ROW WHEN (OLD.last_profile IS NOT NULL)
        EXECUTE FUNCTION bay_standing_changed('last_profile');
    """,
)


Statement = tuple[str, tuple[Any, ...]]
"""One SQL statement and its parameters (a write of :meth:`Sql.tx`)."""

Dialect = Literal["sqlite", "postgresql"]

#: What a keeper's heartbeat finds of its keeper id's lock (:meth:`KeeperLock.recheck_keeper`):
#: still held; lost (its connection was cut) and taken again; or taken by another process
#: meanwhile (a home with a copied ``state/keeper-id`` started in the gap).
KeeperLockState = Literal["held", "retaken", "lost"]


class RegistryUrlBad(ValueError):
    """``BAY_REGISTRY`` is no PostgreSQL connection URL (the message says what is wrong)."""


class RegistryUnreachable(RuntimeError):
    """The registry's server did not take a connection within the connect timeout (the
    message says why)."""


class RegistryInUse(RegistryUnreachable):
    """Another keeper holds the registry (one keeper per registry until keepers form a
    fleet, issue 22): unusable for this one, refused as an unreachable one is."""


def redact(url: str) -> str:
    """A registry URL without its password (in its userinfo or its ``password`` query
    parameter), as logs, refusals and ``bay doctor`` show it."""
    url = re.sub(r"(://[^:/@?]*):[^@/?]*@", r"\1:***@", url)
    return re.sub(r"([?&]password=)[^&#]*", r"\1***", url)


class Rows(Protocol):
    """What a statement answers: its rows (tuples, in the columns' order) and how many rows
    it changed."""

    @property
    def rowcount(self) -> int: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


class Tx(Protocol):
    """Statements inside one transaction of :meth:`Sql.atomic` (``?`` placeholders)."""

    @property
    def dialect(self) -> Dialect: ...
    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> Rows: ...


class Sql(Protocol):
    """The store a repository writes to: one statement, or several all or none. Statements
    use ``?`` placeholders; the store binds them its driver's way."""

    @property
    def dialect(self) -> Dialect: ...
    @property
    def lanes(self) -> int:
        """How many calls may run at once, each on a thread of its own (SQLite's one
        connection: 1)."""

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> Rows: ...
    def tx(self, *statements: Statement) -> None:
        """Several writes, all or none."""

    def atomic(self) -> contextlib.AbstractContextManager[Tx]:
        """One transaction whose statements may depend on what the earlier ones read (a
        check, then the write it decides): committed when the block ends, rolled back when
        it raises. Several keepers write one registry (issue 22), so a check made outside
        the write's transaction may be stale by the time the write lands. SQLite takes its
        one write lock first (``BEGIN IMMEDIATE``: a second writer waits, then reads what
        the first wrote); PostgreSQL runs the block on one connection in a server
        transaction (read committed: each statement sees what committed before it, and a
        statement that must not race says so itself — a conditional upsert, a row lock)."""

    def schema_version(self) -> int: ...
    def integrity_check(self) -> str:
        """``"ok"``, or what is wrong."""

    def location(self) -> str:
        """Where it is (a path, or a URL without its password)."""

    def close(self) -> None: ...


class Database:
    """One SQLite file (WAL, synchronous=NORMAL, private mode 0600), migrated on open."""

    dialect: Dialect = "sqlite"
    lanes = 1  # one connection: its calls never interleave

    def __init__(self, path: Path):
        self.path = path
        fresh = not path.exists()
        self.conn = sqlite3.connect(
            path, isolation_level=None, check_same_thread=False, timeout=10.0
        )
        if fresh:
            os.chmod(path, 0o600)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("PRAGMA foreign_keys=ON")
        self.migrate()

    def schema_version(self) -> int:
        return int(self.conn.execute("PRAGMA user_version").fetchone()[0])

    def migrate(self) -> int:
        current = self.schema_version()
        if current > len(MIGRATIONS):
            raise RuntimeError(
                f"{self.path} has schema version {current}, newer than this browserbay "
                f"({len(MIGRATIONS)}); upgrade browserbay, or set BAY_HOME to another directory"
            )
        for number, script in enumerate(MIGRATIONS[current:], start=current + 1):
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                for statement in statements(for_sqlite(script)):
                    self.conn.execute(statement)
                self.conn.execute(f"PRAGMA user_version={number}")
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
        return self.schema_version()

    def integrity_check(self) -> str:
        return str(self.conn.execute("PRAGMA integrity_check").fetchone()[0])

    def location(self) -> str:
        return str(self.path)

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        return self.conn.execute(sql, params)

    def tx(self, *statements: Statement) -> None:
        """Several writes, all or none."""
        with self.atomic() as tx:
            for sql, params in statements:
                tx.execute(sql, params)

    @contextlib.contextmanager
    def atomic(self) -> Iterator[Tx]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self.conn.close()


def for_sqlite(script: str) -> str:
    """A migration as SQLite runs it: without its PostgreSQL-only part."""
    return script.split(POSTGRESQL_ONLY, 1)[0]


def statements(script: str) -> list[str]:
    """A migration's statements (no migration has a ``;`` inside a literal)."""
    return [s.strip() for s in script.split(";") if s.strip()]
