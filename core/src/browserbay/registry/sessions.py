"""Sessions (migration 1), their attachment sets and what each was last told (migration 2).

A session's attachment set and its state row change together: attaching or detaching
bumps the set's version in the same transaction, so a session is told of a change once
(``profile_changed``) and never of half of one.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from browserbay.registry.changes import CLOCK
from browserbay.registry.db import Sql, Statement


class Attachment(NamedTuple):
    """One profile of a session's attachment set."""

    profile: str
    alias: str | None


@dataclass(frozen=True)
class SessionState:
    """What a session was last told and what it chose (one session_state row)."""

    pin: str | None
    """The pinned profile id (or ``"ephemeral"``)."""
    last_profile: str | None
    """The profile it attached last (the last-used rung of the ladder)."""
    changed: bool
    """Its attachment set changed since it was last told (the next verb is refused
    ``profile_changed`` once)."""
    seen_handles: tuple[str, ...]
    """The set as it was last told it."""
    ephemeral_domains: tuple[str, ...]
    """The allowed domains of its own ephemeral browser."""


#: The state of a session nothing was recorded for.
NO_STATE = SessionState(None, None, False, (), ())


class Sessions(Protocol):
    """Which sessions the keeper has seen, and what each was last told."""

    def seen(self, session_id: str, origin: str) -> None: ...
    def closed(self, session_id: str) -> None: ...
    def known(self, session_id: str) -> bool:
        """Anything is recorded for the session: its row, its state, attachments or kept
        tabs (a new child session must start with none of them)."""

    def state(self, session: str) -> SessionState: ...
    def set_pin(self, session: str, pin: str | None, by_other: bool) -> None: ...
    def set_last_profile(self, session: str, profile_id: str | None) -> None: ...
    def ack_set(self, session: str, handles: list[str]) -> None:
        """The session has been told its attachment set is ``handles``."""

    def set_ephemeral_domains(self, session: str, domains: list[str]) -> None: ...


class Attachments(Protocol):
    """Each session's attachment set: profiles in the order attached (the first is the
    default)."""

    def attach(self, session: str, profile_id: str, alias: str | None, by_other: bool) -> None:
        """Attach (or re-alias); ``by_other``: somebody else did it, so the session is told."""

    def detach(self, session: str, profile_id: str, by_other: bool) -> None:
        """Detach; the pin and the last-used profile go with it."""

    def of_session(self, session: str) -> list[Attachment]: ...
    def standing(self, session: str, profile_id: str, group: str) -> tuple[bool, str | None]:
        """Whether ``session`` (of ``group``) may act on the profile now, as another keeper
        of the fleet forwarded it: it has the profile attached, or as its last-used or its
        group's default; and the group that holds the profile exclusively (None: no hold).
        One statement: what the browser's keeper re-reads before a forwarded verb."""

    def of_session_at(self, session: str) -> tuple[list[Attachment], int]:
        """:meth:`of_session` and the change clock (migration 13) in one statement, so one
        snapshot: every change committed at or below the clock is in the answer."""

    def standing_at(
        self, session: str, profile_id: str, group: str
    ) -> tuple[bool, str | None, int]:
        """:meth:`standing` and the change clock read in the same statement (one
        snapshot): what the browser's keeper keeps of it (keeper/standing.py)."""

    def of_profile(self, profile_id: str) -> list[str]:
        """The sessions that have the profile attached, in the order they attached it."""


def _state_row(session: str) -> Statement:
    return ("INSERT INTO session_state(session) VALUES (?) ON CONFLICT DO NOTHING", (session,))


def _bump(session: str, by_other: bool) -> Statement:
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


class SqliteSessions:
    def __init__(self, db: Sql):
        self.db = db

    def seen(self, session_id: str, origin: str) -> None:
        now = time.time()
        self.db.execute(
            "INSERT INTO sessions(id, origin, first_seen, last_seen) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET last_seen=excluded.last_seen, closed_at=NULL",
            (session_id, origin, now, now),
        )

    def closed(self, session_id: str) -> None:
        self.db.execute("UPDATE sessions SET closed_at=? WHERE id=?", (time.time(), session_id))

    def known(self, session_id: str) -> bool:
        row = self.db.execute(
            "SELECT EXISTS(SELECT 1 FROM sessions WHERE id=?) "
            "OR EXISTS(SELECT 1 FROM session_state WHERE session=?) "
            "OR EXISTS(SELECT 1 FROM attachments WHERE session=?) "
            "OR EXISTS(SELECT 1 FROM kept_tabs WHERE session=?)",
            (session_id,) * 4,
        ).fetchone()
        return bool(row[0])

    def state(self, session: str) -> SessionState:
        row = self.db.execute(
            "SELECT pin, last_profile, set_version, seen_version, seen_handles, "
            "ephemeral_domains FROM session_state WHERE session=?",
            (session,),
        ).fetchone()
        if row is None:
            return NO_STATE
        return SessionState(
            pin=row[0],
            last_profile=row[1],
            changed=row[2] != row[3],
            seen_handles=tuple(json.loads(row[4])),
            ephemeral_domains=tuple(json.loads(row[5])),
        )

    def set_pin(self, session: str, pin: str | None, by_other: bool) -> None:
        self.db.tx(
            _state_row(session),
            ("UPDATE session_state SET pin=? WHERE session=?", (pin, session)),
            _bump(session, by_other),
        )

    def set_last_profile(self, session: str, profile_id: str | None) -> None:
        self.db.tx(
            _state_row(session),
            ("UPDATE session_state SET last_profile=? WHERE session=?", (profile_id, session)),
        )

    def ack_set(self, session: str, handles: list[str]) -> None:
        self.db.tx(
            _state_row(session),
            (
                "UPDATE session_state SET seen_version=set_version, seen_handles=? WHERE session=?",
                (json.dumps(handles), session),
            ),
        )

    def set_ephemeral_domains(self, session: str, domains: list[str]) -> None:
        self.db.tx(
            _state_row(session),
            (
                "UPDATE session_state SET ephemeral_domains=? WHERE session=?",
                (json.dumps(domains), session),
            ),
        )


class SqliteAttachments:
    def __init__(self, db: Sql):
        self.db = db

    def attach(self, session: str, profile_id: str, alias: str | None, by_other: bool) -> None:
        # The session's state row is written (so locked, on PostgreSQL) before the new
        # position is read: a second keeper attaching to the same session waits for this
        # one's commit, then reads the position it wrote (never two at one position).
        self.db.tx(
            _state_row(session),
            ("UPDATE session_state SET last_profile=? WHERE session=?", (profile_id, session)),
            (
                "INSERT INTO attachments(session, profile, alias, position, attached_at) "
                "VALUES (?, ?, ?, (SELECT coalesce(max(position), 0) + 1 FROM attachments "
                "WHERE session=?), ?) ON CONFLICT(session, profile) DO UPDATE SET "
                "alias=coalesce(excluded.alias, attachments.alias)",
                (session, profile_id, alias, session, time.time()),
            ),
            _bump(session, by_other),
        )

    def detach(self, session: str, profile_id: str, by_other: bool) -> None:
        self.db.tx(
            _state_row(session),
            ("DELETE FROM attachments WHERE session=? AND profile=?", (session, profile_id)),
            (
                "UPDATE session_state SET pin=NULL WHERE session=? AND pin=?",
                (session, profile_id),
            ),
            (
                "UPDATE session_state SET last_profile=NULL WHERE session=? AND last_profile=?",
                (session, profile_id),
            ),
            _bump(session, by_other),
        )

    def of_session(self, session: str) -> list[Attachment]:
        rows = self.db.execute(
            "SELECT profile, alias FROM attachments WHERE session=? ORDER BY position", (session,)
        ).fetchall()
        return [Attachment(r[0], r[1]) for r in rows]

    def standing(self, session: str, profile_id: str, group: str) -> tuple[bool, str | None]:
        may, holding, _clock = self.standing_at(session, profile_id, group)
        return may, holding

    def standing_at(
        self, session: str, profile_id: str, group: str
    ) -> tuple[bool, str | None, int]:
        row = self.db.execute(
            "SELECT EXISTS(SELECT 1 FROM attachments WHERE session=? AND profile=?) "  # noqa: S608 - constants
            "OR EXISTS(SELECT 1 FROM session_state WHERE session=? AND last_profile=?) "
            "OR EXISTS(SELECT 1 FROM group_defaults WHERE group_name=? AND profile=?), "
            f"(SELECT group_name FROM holds WHERE profile=?), {CLOCK}",
            (session, profile_id, session, profile_id, group, profile_id, profile_id),
        ).fetchone()
        return bool(row[0]), row[1], int(row[2])

    def of_session_at(self, session: str) -> tuple[list[Attachment], int]:
        rows = self.db.execute(
            f"SELECT {CLOCK}, a.profile, a.alias FROM (SELECT 1 AS one) o "  # noqa: S608 - constants
            "LEFT JOIN attachments a ON a.session=? ORDER BY a.position",
            (session,),
        ).fetchall()
        clock = int(rows[0][0]) if rows else 0
        return [Attachment(r[1], r[2]) for r in rows if r[1] is not None], clock

    def of_profile(self, profile_id: str) -> list[str]:
        rows = self.db.execute(
            "SELECT session FROM attachments WHERE profile=? ORDER BY attached_at", (profile_id,)
        ).fetchall()
        return [r[0] for r in rows]
