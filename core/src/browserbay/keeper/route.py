"""The verb route: verb name -> the service handler that answers it.

The verb table (:mod:`browserbay.verbs`, plus the plugins' ``bay_verbs``) says which verbs
exist; the route says who answers each one. The table stays standard-library only (the thin
client reads it), so it names no handler: the route lives here, keyed by verb name, and
:class:`VerbRoute` refuses to be built unless it matches the table exactly — a verb the
keeper serves with no handler, or a handler for no such verb, stops the keeper at start
(:class:`RouteError`) instead of failing one request at run time.

A handler's kind says what the keeper prepares before calling it:

- :class:`OnKeeper`: a keeper verb (scope ``keeper``); no session is made.
- :class:`OnKeeperAsked`: a keeper verb that also reads who asks (the request's session:
  ``new --from-session`` keeps that session's login); no session is made either.
- :class:`OnSession`: a verb on the session's state (scope ``session``), no lease chosen.
- :class:`OnLease`: a session verb on the lease it chooses (``tab``, ``resume``).
- :class:`OnPage`: a page verb (scope ``page``) on the lease's current tab; page handlers
  register themselves with :func:`browserbay.keeper.pageverbs.page_verb`.
- :class:`OnPlugin`: a plugin's verb (scope ``plugin``), run with its ``VerbContext``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from browserbay import verbs
from browserbay.keeper.base import Answer
from browserbay.keeper.channels import Channel, refuse_owner_only
from browserbay.keeper.files import Carried
from browserbay.keeper.pageverbs import PageHandler
from browserbay.keeper.sessions import Lease, Session
from browserbay.model import Ask, PluginVerb, ProfileRef, SessionRef
from browserbay.refusals import Refusal

#: A session verb's answer: ``(data, text)`` and the profile it acted on (None: none).
SessionAnswer = tuple[dict[str, Any], str, ProfileRef | None]


class Check(Protocol):
    """The guards (:class:`browserbay.keeper.roads.Guards`), once the verb's lease is known
    and before anything of it runs; the keeper keeps the call as the hooks judged it."""

    def __call__(
        self,
        lease: Lease | None = None,
        *,
        held: Lease | None = None,
        exempt: bool = False,
        ending: Sequence[Lease] = (),
        asks: list[Ask] | None = None,
    ) -> None: ...


class Elsewhere(Protocol):
    """A session verb's part on another keeper of the fleet (issue 22): for a lease whose
    browser runs there, the same verb is run there, where the lease's tabs and pauses are
    (:meth:`Keeper.handle` builds it for the request; none on a request another keeper
    forwarded here)."""

    async def host(self, lease: Lease) -> str | None:
        """The host the lease's browser runs on when not here (None: here, or nowhere)."""
        ...

    async def run(self, lease: Lease, part: bool = False) -> SessionAnswer | None:
        """The verb run for ``lease`` by the keeper its browser runs on (its answer, the
        profile with ``host``; its refusal raised); None: it runs here. ``part``: a part of
        this keeper's verb, which this keeper audits alone."""
        ...


@dataclass(frozen=True)
class SessionCall:
    """A verb on a session's state."""

    verb: verbs.Verb
    args: dict[str, Any]
    session: Session
    handle: str | None
    """The request's ``--profile``, if any."""
    by_other: bool
    """An actor acts on this session (``--actor``): the session is told at its next verb."""
    deadline: float
    """``time.monotonic()`` by which the verb must be done."""
    check: Check
    channel: Channel
    """The channel the request came in on (the owner's, or a session socket's)."""
    files: Carried
    """The files the request's connection sent and the ones its answer offers
    (:mod:`browserbay.keeper.files`)."""
    there: Elsewhere | None = None
    """The verb's part where a lease's browser runs, on another keeper (None: a keeper
    alone, or a request another keeper forwarded)."""


@dataclass(frozen=True)
class LeaseCall:
    """A session verb on the lease the keeper chose for it (already guarded)."""

    verb: verbs.Verb
    args: dict[str, Any]
    session: Session
    lease: Lease
    deadline: float
    timeout: float
    channel: Channel
    """The channel the request came in on (the owner's, or a session socket's)."""


KeeperHandler = Callable[[dict[str, Any], str | None, Channel], Awaitable[Answer]]
AskedHandler = Callable[[dict[str, Any], str | None, Channel, SessionRef | None], Awaitable[Answer]]
SessionHandler = Callable[[SessionCall], Awaitable[SessionAnswer]]
LeaseHandler = Callable[[LeaseCall], Awaitable[Answer]]


@dataclass(frozen=True)
class OnKeeper:
    run: KeeperHandler
    """``run(args, handle, channel)``."""


@dataclass(frozen=True)
class OnKeeperAsked:
    run: AskedHandler
    """``run(args, handle, channel, asking)``: ``asking`` is the request's session (on a
    session socket the socket's own, which the gate holds it to); None when a plugin's verb
    calls it (``ctx.keeper_verb``)."""


@dataclass(frozen=True)
class OnSession:
    run: SessionHandler
    ends_leases: bool = False
    """The verb ends leases (``close``, ``detach``): it calls the guards itself, on the
    leases it ends. Every other session verb is judged by the hooks before it runs."""


@dataclass(frozen=True)
class OnLease:
    run: LeaseHandler


@dataclass(frozen=True)
class OnPage:
    run: PageHandler


@dataclass(frozen=True)
class OnPlugin:
    verb: PluginVerb


Handler = OnKeeper | OnKeeperAsked | OnSession | OnLease | OnPage | OnPlugin

#: The handler kinds a verb of each scope may have (``local`` verbs run in the client).
KINDS: dict[str, tuple[type, ...]] = {
    verbs.KEEPER: (OnKeeper, OnKeeperAsked),
    verbs.SESSION: (OnSession, OnLease),
    verbs.PAGE: (OnPage,),
    verbs.PLUGIN: (OnPlugin,),
}


class RouteError(Exception):
    """The route does not match the verb table: the keeper does not start."""


class VerbRoute:
    """Every verb the keeper serves, with its handler; built once at start, checked
    complete against the table."""

    def __init__(self, table: Mapping[str, verbs.Verb], handlers: Mapping[str, Handler]):
        served = {name for name, verb in table.items() if verb.scope != verbs.LOCAL}
        problems = [
            *(f"the verb {name!r} has no handler" for name in sorted(served - handlers.keys())),
            *(
                f"the handler for {name!r} has no verb in the table"
                + (" the keeper serves (it runs in the client)" if name in table else "")
                for name in sorted(handlers.keys() - served)
            ),
            *(
                f"the {table[name].scope} verb {name!r} has a {type(h).__name__} handler"
                for name, h in sorted(handlers.items())
                if name in served and not isinstance(h, KINDS[table[name].scope])
            ),
            *(problem for verb in table.values() for problem in verb.owner_only_problems()),
        ]
        if problems:
            raise RouteError("the verb route does not match the verb table: " + "; ".join(problems))
        self.table = dict(table)
        self._handlers = dict(handlers)

    def __getitem__(self, name: str) -> Handler:
        """The handler of a verb of the table (one the request check let through)."""
        return self._handlers[name]

    async def run_keeper_verb(
        self, name: str, args: dict[str, Any], handle: str | None, channel: Channel
    ) -> Answer:
        """Run a keeper verb by name (a plugin's ``ctx.host.keeper_verb``) on the channel of
        the plugin verb's own request; any other name is refused as an unknown verb."""
        handler = self._handlers.get(name)
        if not isinstance(handler, (OnKeeper, OnKeeperAsked)):
            raise Refusal("bad_frame", reason=f"unknown verb {name!r}")
        refuse_owner_only(channel, self.table[name], args, handle)
        if isinstance(handler, OnKeeperAsked):
            return await handler.run(args, handle, channel, None)
        return await handler.run(args, handle, channel)
