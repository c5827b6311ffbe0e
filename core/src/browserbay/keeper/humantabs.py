"""The tab actions a human does from a session's live page (a control link): reopen the tabs
the session keeps (**Resume**, as ``bay resume`` does), close one of the session's tabs, and
see whose each tab of the shared browser is.

Each runs under the session's lock, as a verb of the session does, so it never races the
agent's own verbs (a waiting ``bay handoff`` holds no lock: see ``VerbContext.waiting``).
Only the session's own tabs are shown with their URLs or closed: another session's tab on
the same browser is shown by its id and its session alone.
"""

from __future__ import annotations

import contextlib
import logging

import anyio

from browserbay.keeper.leases import Leases
from browserbay.keeper.sessions import Lease, Session, TabBook
from browserbay.model import LiveTab
from browserbay.plugins import Plugins

log = logging.getLogger("browserbay.keeper")

#: How long a human's Resume may take (it may start the browser and load every kept tab).
RESUME_LIMIT = 60.0
#: How long a human's tab close may take.
CLOSE_LIMIT = 10.0


class HumanTabs:
    """The live page's tab strip and its Resume (see the module)."""

    def __init__(
        self, leases: Leases, tabs: TabBook, plugins: Plugins, sessions: dict[str, Session]
    ) -> None:
        self.leases = leases
        self.tabs = tabs
        self.plugins = plugins
        self.sessions = sessions

    def browser_tabs(self, lease: Lease) -> list[LiveTab]:
        """Every tab of the lease's browser, the lease's own first, each with its session
        (a window's lease: none)."""
        if lease.window is not None:
            return []
        own = [LiveTab(t.id, lease.session.id, True) for t in lease.tabs.values()]
        others = [
            LiveTab(t.id, session.ref.id, False)
            for session in self.sessions.values()
            for other in session.leases.values()
            if other is not lease and other.profile.id == lease.profile.id
            for t in other.tabs.values()
        ]
        return own + others

    async def close(self, session: Session, lease: Lease, tab_id: str) -> bool:
        """Close one of the lease's own tabs; False when it has none of that id."""
        async with session.lock:
            tab = lease.tabs.get(tab_id)
            if tab is None:
                return False
            self.tabs.drop(tab, lease, "closed by a human in the live view")
            with anyio.move_on_after(CLOSE_LIMIT):
                if self.leases.dialogs is not None:  # its dialog dismissed first
                    await self.leases.dialogs.leave([tab])
                with contextlib.suppress(Exception):
                    await tab.page.close()
            await self.leases.persist(session, lease)
        self.plugins.hooks.bay_lease_changed(lease=lease.info(), change="tabs")
        return True

    async def resume(self, session: Session, lease: Lease) -> int:
        """Reopen the session's kept tabs on the lease: those an automatic stop kept (its
        browser starts for them) and those its last ``bay close`` parked. Answers how many
        the parked reopen brought back (an automatic stop's come back with the start)."""
        async with session.lock:
            with anyio.fail_after(RESUME_LIMIT):
                await self.leases.ensure(session, lease)
                restored = await self.leases.resume_parked(session, lease)
            session.notices = [n for n in session.notices if "bay resume" not in n]
        session.notices.append(
            f"a human in the live view reopened your kept tabs (profile {lease.handle}): "
            "bay tab lists them"
        )
        self.plugins.hooks.bay_lease_changed(lease=lease.info(), change="tabs")
        return restored
