"""What every part of the keeper shares: its settings and the state it holds, declared once
so the keeper's parts (choosing a lease, session verbs, admin verbs) type-check on their own."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from browserbay import verbs
    from browserbay.keeper.browsers import BrowserPool
    from browserbay.keeper.leases import Leases
    from browserbay.keeper.profiles import ProfileBook
    from browserbay.keeper.sessions import Session, TabBook
    from browserbay.paths import BayPaths
    from browserbay.plugins import Plugins
    from browserbay.registry import Registry
    from browserbay.settings import BaySettings

T = TypeVar("T")
Answer = tuple[dict[str, Any], str]

#: Verbs that work on the session as a whole, not on one chosen lease.
_WHOLE_SESSION = ("status", "close", "use", "pin")


class KeeperBase:
    """The keeper's state (set by :class:`browserbay.keeper.keeper.Keeper`)."""

    plugins: Plugins
    registry: Registry
    paths: BayPaths
    settings: BaySettings
    sessions: dict[str, Session]
    tabs: TabBook
    pool: BrowserPool
    profiles: ProfileBook
    leases: Leases
    started: float
    swept: list[str]
    audit_failures: int
    """Audit rows that could not be written (a full disk): logged, counted, never a verb's
    failure."""
    verb_table: dict[str, verbs.Verb]
    restarting: dict[str, str]
    """profile id -> the provider its browser is restarting on (a backend switch)."""

    def check_restarting(self, profile_id: str, handle: str) -> None:
        """Refuse a verb on a profile whose browser is restarting for a backend switch
        (before anything of it runs)."""
        target = self.restarting.get(profile_id)
        if target is not None:
            from browserbay.refusals import Refusal

            raise Refusal("browser_restarting", profile=handle, provider=target)

    async def db(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a registry call in the one writer thread, off the event loop."""
        raise NotImplementedError

    def begin_stop(self) -> None:
        raise NotImplementedError
