"""The keeper's side of a plugin verb: :class:`LeaseVerbHost`, the one implementation of
:class:`browserbay.model.VerbHost` (``ctx.host``), made once per verb for the lease it runs
on. What a plugin may ask of the keeper is that protocol's few methods; everything else it
gets is data on its :class:`~browserbay.model.VerbContext`."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import anyio

from browserbay.keeper.leases import Leases
from browserbay.keeper.roads import Guards
from browserbay.keeper.sessions import Lease, Session

if TYPE_CHECKING:
    from playwright.async_api import Page

#: How the host runs one of the keeper's own verbs: ``(name, args, handle)``.
KeeperVerb = Callable[[str, dict[str, Any], str | None], Awaitable[tuple[dict[str, Any], str]]]


class LeaseVerbHost:
    """What a plugin verb on ``lease`` (of ``session``) may ask of the keeper."""

    def __init__(
        self,
        leases: Leases,
        guards: Guards,
        keeper_verb: KeeperVerb,
        session: Session,
        lease: Lease,
    ):
        self._leases = leases
        self._guards = guards
        self._keeper_verb = keeper_verb
        self._session = session
        self._lease = lease

    async def page(self) -> Page:
        return (await self._leases.current_tab(self._session, self._lease)).page

    def adopt(self, page: Page) -> str:
        return self._leases.adopt(page, self._lease).id

    async def keeper_verb(self, name: str, args: dict[str, Any]) -> tuple[dict[str, Any], str]:
        return await self._keeper_verb(name, args, None)

    def cdp_url(self) -> str | None:
        running = self._lease.browser
        return running.handle.cdp_url if running is not None else None

    def live_view_url(self) -> str | None:
        running = self._lease.browser
        return running.handle.live_view_url if running is not None else None

    async def guard(self, method: str, params: Mapping[str, Any], road: str) -> None:
        await self._guards.cdp_call(self._lease, method, params, road)

    @contextlib.asynccontextmanager
    async def waiting(self) -> AsyncIterator[None]:
        """The session's lock is let go while the verb waits, and taken back after — even
        when the verb is cut meanwhile, so the keeper's own release finds it held."""
        lock = self._session.lock
        lock.release()
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                await lock.acquire()
