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

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from browserbay import verbs
from browserbay.refusals import Refusal


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
class LinkPeer:
    """Another keeper of the fleet, proven over the fleet link (browserbay.keeper.link), and
    the session of its that a forwarded request acts for (None: the connection itself)."""

    keeper: str
    session: str | None = None
    group: str | None = None
    """That session's group as its keeper says it (the fleet's holds are by group): the
    namespaced session here is of that group (:meth:`Keeper.handle`)."""
    owner: str | None = None
    """Whose profiles are that session's caller's own, as its keeper says it (the owner's,
    ``owner``, on its keeper's owner channel; ``group:<session>`` on a session socket): a
    profile whose sharing is ``owner`` is reachable over the link by that owner only."""
    standing: str | None = None
    """``instance``: its keeper reached the profile through its own ``BAY_DEFAULT_PROFILE``
    (a setting of that keeper's, not of the registry); None: through what the registry
    holds (an attachment, the last-used profile, the group's default)."""
    part: bool = False
    """The request is a part of a verb its keeper audits (a whole-session ``close``'s
    close of a lease here): no row of it here."""
    clock: int | None = None
    """The change clock its keeper read with the session's attachments when it chose the
    lease (migration 13): a standing kept here serves the verb only when this keeper heard
    the registry's changes up to it (keeper/standing.py). None: the standing is read."""


@dataclass(frozen=True)
class Channel:
    """The channel a request came in on: the owner's (``grant`` None), a session socket's, or
    another keeper's over the fleet link (``link``; each of its requests then runs with a
    grant of its own, see :func:`browserbay.keeper.link.forwarded`)."""

    grant: Grant | None = None
    link: LinkPeer | None = None

    @property
    def is_owner(self) -> bool:
        return self.grant is None and self.link is None

    @property
    def session(self) -> str | None:
        """The session a session socket is fixed to; None on the owner's channel."""
        return None if self.grant is None else self.grant.session

    @property
    def actor(self) -> str:
        """Who acted, as the audit records it: ``owner``, ``session-socket:<id>``, or
        ``fleet:<origin keeper>/<its session>``."""
        if self.link is not None:
            return f"fleet:{self.link.keeper}/{self.link.session or '-'}"
        return "owner" if self.grant is None else f"session-socket:{self.grant.session}"

    @property
    def kind(self) -> str:
        """``owner``, ``session`` or ``fleet``, as the keeper's hello says it."""
        if self.link is not None:
            return "fleet"
        return "owner" if self.grant is None else "session"

    @property
    def label(self) -> str:
        """The channel as ``bay status`` names it: ``owner``, or ``session socket <path>
        (session <id>, expires <when>)`` (``until revoked`` with no ``--ttl``)."""
        if self.link is not None:
            return f"fleet link from keeper {self.link.keeper}"
        if self.grant is None:
            return "owner"
        expires = self.grant.expires
        when = (
            "until revoked"
            if expires is None
            else "expires " + time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(expires))
        )
        return f"session socket {self.grant.socket} (session {self.grant.session}, {when})"

    def as_row(self) -> dict[str, str | float | None]:
        """The channel as ``bay status --json`` gives it: ``kind`` (``owner`` | ``session``),
        and on a session socket its ``socket``, ``session`` and ``expires`` (wall clock, or
        None: until revoked)."""
        grant = self.grant
        return {
            "kind": self.kind,
            "socket": None if grant is None else str(grant.socket),
            "session": self.session,
            "expires": None if grant is None else grant.expires,
        }

    def hello(self) -> dict[str, str | None]:
        """The fields the keeper's hello reply carries about the channel."""
        return {"channel": self.kind, "session": self.session}


#: The home's own socket.
OWNER = Channel()


# -- the gate -----------------------------------------------------------------------------
#
# Every request passes it once, in Keeper.handle, after the frame is read and before anything
# of the verb runs (the MCP server and the Python API send frames too: one gate covers every
# road). On the owner's channel it lets everything through. What it refuses is data: the
# session a socket is fixed to (its grant) and the verb table's ``owner_only`` conditions.


def admit(
    channel: Channel,
    verb: verbs.Verb,
    args: Mapping[str, Any],
    *,
    session: str,
    actor: str | None,
    group: str | None,
    handle: str | None,
) -> None:
    """Refuse a request a session socket may not make: acting as another session
    (``session_fixed``: the frame's ``session``, its ``actor``, its ``group``) or an
    owner-only call (``owner_only``). ``session``, ``actor``, ``group``: the ids the frame
    names (``actor``/``group`` None when it names none); ``handle``: its ``--profile``."""
    if channel.grant is None:
        return
    fixed = channel.grant.session
    for what, asked, via, drop in (
        ("session", session, "the request's session", "--session / BAY_SESSION"),
        (
            "session",
            actor,
            "the request's actor: acting for another session",
            "--session / BAY_SESSION",
        ),
        ("group", group, "the request's group", "BAY_GROUP"),
    ):
        if asked is not None and asked != fixed:
            raise Refusal("session_fixed", fixed=fixed, asked=asked, what=what, via=via, drop=drop)
    refuse_owner_only(channel, verb, args, handle)


def refuse_owner_only(
    channel: Channel, verb: verbs.Verb, args: Mapping[str, Any], handle: str | None
) -> None:
    """``owner_only`` when ``verb`` called with ``args`` meets one of its row's
    :attr:`~browserbay.verbs.Verb.owner_only` conditions on a session socket. Also a
    plugin's ``ctx.keeper_verb`` runs through it: a plugin verb open to sessions never
    reaches an owner-only keeper verb for them."""
    if channel.grant is None:
        return
    condition = verb.owner_only_for(dict(args))
    if condition is not None:
        # Every call of the verb: the call says what (``keeper stop``); else the condition.
        every = condition == "*"
        raise owner_only(
            verb.command_line(args).removeprefix("bay ")
            if every
            else verb.owner_only_words(condition),
            owner_command(channel, verb, args, handle),
            condition=condition,
        )


def owner_only(what: str, command: str, **data: Any) -> Refusal:
    """The ``owner_only`` refusal of ``what`` (``keeper stop``, ``backend cloak`` of a
    shared profile): the way out is the exact command the human runs on the owner's
    channel."""
    return Refusal("owner_only", what=what, command=command, **data)


def owner_command(
    channel: Channel, verb: verbs.Verb, args: Mapping[str, Any], handle: str | None
) -> str:
    """The command the human runs for this request on the owner's channel: the verb and its
    arguments (a key never: it is read from stdin), ``--profile`` when it named one, and
    ``--session`` for a verb on the socket's session."""
    words = [verb.command_line(args)]
    if handle:
        words.append(f"--profile {handle}")
    if channel.session is not None and verb.scope != verbs.KEEPER:
        words.append(f"--session {channel.session}")
    return " ".join(words)
