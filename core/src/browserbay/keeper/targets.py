"""Leases on targets that are not browser profiles: a native window a session holds.

They are the keeper's own :class:`~browserbay.keeper.sessions.Lease` objects, kept in
``Session.targets`` by key (the window's handle), so everything that works on a browser's
lease works on them: a live view shows them (``lease.window`` gives the pixels and takes the
input), a human takes them over and hands them back (``bay_takeover``/``bay_handback``), and
while the human drives, the agent's verbs on the target are refused ``browser_paused`` and
the ones running are cut (``browser_interrupted``). The plugin that owns the targets makes
and ends them through ``ctx.targets`` (:class:`browserbay.model.TargetLeases`).
"""

from __future__ import annotations

from browserbay.keeper.controls import Controls
from browserbay.keeper.sessions import Lease, Session
from browserbay.model import LiveWindow, ProfileRef, Tier
from browserbay.plugins import Plugins

#: A target is its plugin's provider's tier-3 kind of thing (a window has no CDP).
TARGET_TIER: Tier = 3


class TargetBook:
    """``ctx.targets`` of one verb: holds for the calling session, ends for any."""

    def __init__(self, plugins: Plugins, sessions: dict[str, Session], session: Session):
        self.plugins = plugins
        self.sessions = sessions
        self.session = session

    def hold(self, key: str, label: str, provider: str, window: LiveWindow | None = None) -> Lease:
        lease = self.session.targets.get(key)
        if lease is None:
            row = self.plugins.providers.get(provider)
            ref = ProfileRef(
                id=key,
                label=label,
                provider=provider,
                tier=row.tier if row is not None else TARGET_TIER,
                ephemeral=True,
                chosen="target",
            )
            lease = Lease(self.session.ref, ref, window=window)
            self.session.targets[key] = lease
            self.plugins.hooks.bay_lease_changed(lease=lease.info(), change="attached")
        lease.window = window
        return lease

    def end(self, session_id: str, key: str, reason: str = "closed") -> None:
        session = self.sessions.get(session_id)
        lease = session.targets.pop(key, None) if session is not None else None
        if lease is None:
            return
        Controls.let_go(lease)
        self.plugins.hooks.bay_lease_changed(lease=lease.info(reason), change="detached")
