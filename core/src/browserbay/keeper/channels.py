"""Who is on the other end of a connection: the owner, or an agent on a session socket.

The home's own socket is the **owner's channel** (the human or the harness that runs the
keeper): everything works there, and a session's identity there is self-declared (anyone who can
reach that socket is the owner). A **session socket** is an agent's channel: a unix socket the
owner made with ``bay session grant <id> --socket <path>``, bound to one session; on it the
session is fixed and the owner's verbs are refused (docs/session-sockets.md,
docs/security.md).

Every connection is served with its :class:`Channel`; the keeper hands it to each handler
explicitly (``OnKeeper.run(args, handle, channel)``, ``SessionCall.channel``,
``LeaseCall.channel``), never through a global.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Grant:
    """A session socket the owner granted: the one session it is bound to, where it listens,
    the persistent profiles it may use (ids; its own ephemeral browser always), and when it
    ends."""

    session: str
    socket: Path
    profiles: tuple[str, ...] = ()
    parent: str | None = None
    """The session whose child this grant's session is (``bay session child``), if any."""
    created: float = 0.0
    """Wall-clock time the grant was made."""
    expires: float | None = None
    """Wall-clock time it ends by itself (``--ttl``); None: when revoked."""


@dataclass(frozen=True)
class Channel:
    """The channel a request came in on: the owner's (``grant`` None) or a session socket's."""

    grant: Grant | None = None

    @property
    def is_owner(self) -> bool:
        return self.grant is None

    @property
    def session(self) -> str | None:
        """The session a session socket is fixed to; None on the owner's channel."""
        return None if self.grant is None else self.grant.session

    @property
    def actor(self) -> str:
        """Who acted, as the audit records it: ``owner`` or ``session-socket:<id>``."""
        return "owner" if self.grant is None else f"session-socket:{self.grant.session}"

    @property
    def kind(self) -> str:
        """``owner`` or ``session``, as the keeper's hello says it."""
        return "owner" if self.grant is None else "session"

    @property
    def label(self) -> str:
        """The channel as ``bay status`` names it."""
        if self.grant is None:
            return "owner"
        return f"session socket {self.grant.socket} (session {self.grant.session})"

    def hello(self) -> dict[str, str | None]:
        """The fields the keeper's hello reply carries about the channel."""
        return {"channel": self.kind, "session": self.session}


#: The home's own socket.
OWNER = Channel()
