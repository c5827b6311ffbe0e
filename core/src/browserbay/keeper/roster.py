"""The sessions this keeper knows: found or made for each request, and recorded in the
registry at their first verb."""

from __future__ import annotations

from browserbay.keeper.sessions import Session
from browserbay.model import SessionRef
from browserbay.registry import Db, Sessions


class Roster:
    def __init__(self, sessions: Sessions, db: Db) -> None:
        self.sessions = sessions
        self.db = db
        self.by_id: dict[str, Session] = {}
        """session id -> its state; shared with the services that walk every session (the
        leases' crash path, the controls, housekeeping)."""

    def session(self, ref: SessionRef, group: str | None) -> Session:
        """The session a request acts as, made at its first request (its group is the
        request's, else its own id)."""
        session = self.by_id.get(ref.id)
        if session is None:
            session = Session(ref, group or ref.id)
            self.by_id[ref.id] = session
        elif group:
            session.group = group
        return session

    async def first_sight(self, session: Session) -> None:
        """Record a session the registry has not seen from this keeper (one row per session,
        its last sight updated when it comes back after its leases were dropped)."""
        if not session.leases and not session.seen:
            await self.db(self.sessions.seen, session.ref.id, session.ref.origin)
            session.seen = True
