"""Tickets and credentials of the live view.

``bay live`` mints a one-use **ticket** (valid ``TICKET_TTL`` s) that the page exchanges for
a **credential**: an HttpOnly, SameSite=Strict cookie (valid ``CREDENTIAL_TTL`` s) bound to one
session's lease on one profile and to a mode (``watch`` or ``control``). A ticket used once is
gone (a replay is refused like a forged one); ending the session revokes its credentials, and
so does ``bay live --revoke``: a revoked credential is remembered until it would have expired,
so its page is told ``live_revoked`` rather than "no credential". The owner's dashboard
(``bay live --all``) has tickets and credentials of its own (:data:`DASHBOARD`).
Nothing here is ever logged or written to disk.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

TICKET_TTL = 60.0
CREDENTIAL_TTL = 24 * 3600.0
Mode = Literal["watch", "control"]
#: The session id of a dashboard grant: it names no session (every session is its view).
DASHBOARD = ""


@dataclass(frozen=True)
class Grant:
    session_id: str
    profile_id: str
    mode: Mode
    view: str
    """The view key: the page's path (``/v/<view>/``, the dashboard's ``/d/<view>/``) and
    the cookie's scope."""

    @property
    def dashboard(self) -> bool:
        return self.session_id == DASHBOARD


@dataclass
class Credential:
    grant: Grant
    token: str
    expires: float
    take_over: bool = False
    """Its page takes the controls as its first WebSocket opens (the dashboard's Take
    over: the pause starts with a driver, so the idle handback bounds it); consumed then."""


@dataclass
class Vault:
    clock: Callable[[], float] = time.monotonic
    _tickets: dict[str, tuple[Grant, float]] = field(default_factory=dict)
    _credentials: dict[str, Credential] = field(default_factory=dict)
    _views: dict[tuple[str, str], str] = field(default_factory=dict)
    _revoked: dict[str, tuple[str, str, float]] = field(default_factory=dict)
    _taking: set[str] = field(default_factory=set)
    """Tickets whose page takes over as it opens."""
    """token -> (its view, why it was revoked, when it would have expired)."""

    def view(self, session_id: str, profile_id: str) -> str:
        """The stable view key of a lease (random: it names nothing)."""
        key = (session_id, profile_id)
        if key not in self._views:
            self._views[key] = secrets.token_hex(8)
        return self._views[key]

    def target(self, view: str) -> tuple[str, str] | None:
        for key, value in self._views.items():
            if value == view:
                return key
        return None

    def ticket(
        self, session_id: str, profile_id: str, mode: Mode, take_over: bool = False
    ) -> tuple[str, Grant]:
        self._expire()
        grant = Grant(session_id, profile_id, mode, self.view(session_id, profile_id))
        ticket = secrets.token_urlsafe(32)
        self._tickets[ticket] = (grant, self.clock() + TICKET_TTL)
        if take_over and mode == "control":
            self._taking.add(ticket)
        return ticket, grant

    def redeem(self, ticket: str, view: str) -> Credential | None:
        """One use: the ticket is gone whether or not it was good."""
        self._expire()
        entry = self._tickets.pop(ticket, None)
        taking = ticket in self._taking
        self._taking.discard(ticket)
        if entry is None or entry[0].view != view:
            return None
        grant = entry[0]
        credential = Credential(
            grant, secrets.token_urlsafe(32), self.clock() + CREDENTIAL_TTL, taking
        )
        self._credentials[credential.token] = credential
        return credential

    def check(self, token: str | None, view: str) -> Credential | None:
        if not token:
            return None
        credential = self._credentials.get(token)
        if credential is None or credential.grant.view != view:
            return None
        if credential.expires <= self.clock():
            self._credentials.pop(token, None)
            return None
        return credential

    def dashboard_ticket(self) -> tuple[str, Grant]:
        """A ticket to the owner's dashboard (every session; mint it on the owner's channel
        only)."""
        return self.ticket(DASHBOARD, DASHBOARD, "control")

    def revoked(self, token: str | None, view: str) -> str | None:
        """Why the credential was revoked (None: it was not, or it would have expired)."""
        entry = self._revoked.get(token or "")
        if entry is None or entry[0] != view or entry[2] <= self.clock():
            return None
        return entry[1]

    def revoke(self, session_id: str, profile_id: str, why: str = "") -> int:
        """Every ticket and credential of the lease (the dashboard's: ``DASHBOARD`` twice),
        gone now; ``why``: remember the credentials as revoked, so their pages are told."""
        gone = [
            t
            for t, c in self._credentials.items()
            if (c.grant.session_id, c.grant.profile_id) == (session_id, profile_id)
        ]
        for token in gone:
            credential = self._credentials.pop(token)
            if why:
                self._revoked[token] = (credential.grant.view, why, credential.expires)
        for ticket, (grant, _expires) in list(self._tickets.items()):
            if (grant.session_id, grant.profile_id) == (session_id, profile_id):
                del self._tickets[ticket]
        return len(gone)

    def _expire(self) -> None:
        now = self.clock()
        for ticket, (_grant, expires) in list(self._tickets.items()):
            if expires <= now:
                del self._tickets[ticket]
                self._taking.discard(ticket)
        for token, credential in list(self._credentials.items()):
            if credential.expires <= now:
                del self._credentials[token]
        for token, (_view, _why, expires) in list(self._revoked.items()):
            if expires <= now:
                del self._revoked[token]
