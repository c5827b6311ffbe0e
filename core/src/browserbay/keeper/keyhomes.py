"""A profile whose provider key lives on one keeper is started only there (issue 22 item 6).

Keys stay on the machine that holds them: a keeper reads only its own sources (its
keychain, its encrypted file, its sealed start environment). The first keeper that starts a
persistent profile's keyed browser with a key of its own becomes the profile's key home
(:mod:`browserbay.registry.keyhomes`); every other keeper of the fleet refuses to start that
browser ``provider_needs_local_key``, naming the key home's host — before anything is
resolved, so it neither reads a key of its own for it nor tells the human to copy the key
over (``backend_no_key``'s way out). The profile is served where its key is: while the key
home is alive, a session's verbs on the profile are forwarded to it over the fleet link
(:meth:`KeyHomeBook.elsewhere`, asked by :class:`~browserbay.keeper.forward.Forwarder`), and
the key home starts the browser with its own key; only a dead key home is refused.
"""

from __future__ import annotations

import time

from browserbay.model import ProviderRow
from browserbay.refusals import Refusal
from browserbay.registry import Db, KeyHome, KeyHomes


class KeyHomeBook:
    """This keeper's side of the key homes: the check before a keyed profile's browser
    starts, the binding after it started."""

    def __init__(self, homes: KeyHomes, db: Db, keeper_id: str, host: str):
        self.homes = homes
        self.db = db
        self.keeper_id = keeper_id
        self.host = host

    async def elsewhere(self, profile_id: str, provider_id: str) -> KeyHome | None:
        """The profile's key home for the provider it uses, when that is another keeper
        (its browser starts there, with that keeper's key); None: here, or no key home."""
        home = await self.db(self.homes.of, profile_id)
        if home is None or home.integration != provider_id or home.keeper_id == self.keeper_id:
            return None
        return home

    async def check(self, profile_id: str, provider: ProviderRow) -> None:
        """Refuse ``provider_needs_local_key`` when the profile's key for this provider
        lives on another keeper. Nothing for a provider that needs no key."""
        if provider.capabilities.key_scope == "none":
            return
        home = await self.db(self.homes.of, profile_id)
        if home is None or home.integration != provider.id or home.keeper_id == self.keeper_id:
            return
        raise Refusal(
            "provider_needs_local_key",
            provider=provider.id,
            where=f"lives on keeper {home.keeper_id} on {home.host} (profile {profile_id}'s "
            "key home)",
            fix=f"start the keeper on {home.host} (the key home is not running): while it "
            "runs, this profile's verbs are forwarded to it over the fleet link; this "
            "keeper never reads or copies another keeper's key",
            host=home.host,
            keeper=home.keeper_id,
            profile=profile_id,
        )

    async def bind(self, profile_id: str, provider: ProviderRow, source: str) -> None:
        """The profile's browser started here with a key of this keeper's (``source``:
        ``user`` or ``cluster``): this keeper is its key home, unless one stands."""
        if provider.capabilities.key_scope == "none" or source not in ("user", "cluster"):
            return
        home = KeyHome(profile_id, self.keeper_id, self.host, provider.id, source, time.time())
        await self.db(self.homes.bind, home)
