"""Leases: a session's share of a profile's browser — starting it, owning its tabs, keeping
them in the registry and restoring them, ending it, and exclusive holds with a FIFO queue."""

from __future__ import annotations

import contextlib
import logging
import time
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio

from browserbay import identity, procfs
from browserbay.keeper.browsers import BrowserPool, Running
from browserbay.keeper.controls import Controls
from browserbay.keeper.fleet import Fleet, refuse_elsewhere
from browserbay.keeper.guard import Blocked, host_allowed, websocket_fence
from browserbay.keeper.profiles import ProfileBook
from browserbay.keeper.sessions import Lease, Session, Tab, TabBook
from browserbay.model import ProfileRef
from browserbay.plugins import Plugins
from browserbay.refusals import Refusal
from browserbay.registry import PARKED, Db, Hold, Holds, KeptTab, KeptTabs

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Page
    from playwright.async_api import Response as PlaywrightResponse

    from browserbay.keeper.brakes import Brakes
    from browserbay.keeper.dialogs import Dialogs
    from browserbay.keeper.downloads import Downloads
    from browserbay.keeper.prewarm import Prewarm

__all__ = ["blocked_requests", "check_url_allowed", "goto_guarded", "host_allowed"]

log = logging.getLogger("browserbay.keeper")
RESTORE_TIMEOUT = 20.0
#: Seconds between two looks of a waiter at its profile's queue: a release on another keeper
#: of the fleet is seen within it (one on this keeper, or one the registry's change channel
#: brings, wakes its waiters at once).
HOLD_POLL = 0.5


def check_url_allowed(url: str, allowed: tuple[str, ...]) -> None:
    """A navigation outside the allowed domains is refused before it starts."""
    if not allowed or url == "about:blank":
        return
    host = urlsplit(url).hostname or ""
    if not host_allowed(host, allowed):
        raise Refusal("domain_refused", host=host or url, allowed=", ".join(allowed))


async def goto_guarded(
    lease: Lease, page: Page, url: str, **options: Any
) -> PlaywrightResponse | None:
    """``page.goto`` for a verb: refused by name before it starts when the URL is outside
    the fence, and — when the browser's guard refused a hop of the navigation (a redirect out
    of the fence, to the DevTools endpoint) — refused by name after it, not a bare
    ``net::ERR_BLOCKED_BY_CLIENT``."""
    check_url_allowed(url, lease.allowed_domains)
    guard = lease.browser.guard if lease.browser is not None else None
    since = time.monotonic()
    try:
        response = await page.goto(url, **options)
    except Exception:
        if guard is not None:
            await guard.check(page, since)
        raise
    if guard is not None:
        await guard.check(page, since)
    return response


def blocked_requests(lease: Lease) -> int:
    """What the fence refused for this lease: its own count, plus its browser's unattributed
    one when no other session can be in it (a persistent profile's browser counts them all)."""
    running = lease.browser
    if running is None:
        return lease.blocked.count
    if not lease.profile.ephemeral or running.contexts <= {lease.context}:
        return lease.blocked.count + running.blocked.count
    return lease.blocked.count


class Leases:
    def __init__(
        self,
        pool: BrowserPool,
        tabs: TabBook,
        kept_tabs: KeptTabs,
        holds: Holds,
        profiles: ProfileBook,
        plugins: Plugins,
        db: Db,
        sessions: dict[str, Session],
        idle_timeout: float = 900.0,
        downloads: Downloads | None = None,
        dialogs: Dialogs | None = None,
        brakes: Brakes | None = None,
        prewarm: Prewarm | None = None,
        fleet: Fleet | None = None,
    ):
        self.pool = pool
        #: Where each persistent profile's browser runs (None: here, a keeper alone).
        self.fleet = fleet
        self.tabs = tabs
        self.kept_tabs = kept_tabs
        self.holds = holds
        self.profiles = profiles
        self.plugins = plugins
        self.db = db
        self.sessions = sessions
        #: How long a holder the keeper has not seen lately counts as alive (seconds).
        self.idle_timeout = idle_timeout
        # The contexts already watched, held weakly: an id() could be reused by the context
        # of a browser started later on the same profile (a crash, a backend switch).
        self._watched: weakref.WeakSet[BrowserContext] = weakref.WeakSet()
        #: This keeper's waiters for a hold, by profile and queue place: a release here
        #: wakes them at once (the queue itself is the registry's).
        self._waiters: dict[str, dict[int, anyio.Event]] = {}
        #: Where the pages' downloads go (None: nowhere, a keeper without downloads).
        self.downloads = downloads
        #: Holds every dialog a page opens until it is answered (None: Playwright's silent
        #: dismissal, a keeper without dialogs).
        self.dialogs = dialogs
        #: Each tab's brake session, which a takeover pulls (None: a keeper without).
        self.brakes = brakes
        #: Builds each document's injected scripts before a verb needs them (None: each
        #: document's first verb builds them).
        self.prewarm = prewarm

    # -- what a lease is bound to -------------------------------------------------------

    @staticmethod
    def rebind(lease: Lease, profile: ProfileRef, alias: str | None) -> None:
        """The lease's profile as its session chose it now (how, under which label and
        alias; its provider after a backend switch)."""
        lease.binding.rebind(profile, alias)

    @staticmethod
    def fence(lease: Lease, allowed_domains: tuple[str, ...]) -> None:
        """The allowed domains the lease's next context is started with."""
        lease.binding.fence(allowed_domains)

    # -- starting ---------------------------------------------------------------------

    async def ensure(
        self, session: Session, lease: Lease, reopen_ids: list[str] | None = None
    ) -> None:
        """The lease's browser context, started (or joined) now; kept tabs of an automatic
        stop are reopened and the answer says so. ``reopen_ids``: the ids the kept tabs had
        (a backend switch reopens them under the same ids)."""
        if lease.context is not None:
            return
        lease.binding.started_with(None)
        if lease.profile.ephemeral:
            context, running = await self.pool.isolated_context(
                lease.profile.provider, lease.allowed_domains
            )
            try:
                await self._allowlist(context, lease.allowed_domains, lease.blocked, running)
            except BaseException:  # cut (a deadline) before the lease holds it: closed
                with anyio.CancelScope(shield=True):
                    await self.pool.release_context(running, context)
                raise
            self._watch(context, lease)
            running.users.add(session.ref.id)
        else:
            row = self.profiles.rows.get(lease.profile.id)
            if row is None:
                raise Refusal(
                    "profile_unknown",
                    handle=lease.profile.label,
                    why="a profile any more (it was forgotten)",
                    fix="bay detach --profile " + lease.profile.id,
                )
            if self.fleet is not None:
                refuse_elsewhere(
                    await self.fleet.place(row.id, Path(row.dir) if row.dir else None),
                    lease.handle,
                )
            running = await self.pool.persistent(
                row.provider,
                row.id,
                Path(row.dir),
                fence=row.allowed_domains,
                headless=not row.headed,
                proxy=row.proxy,
                options=row.options,
            )
            shared = running.handle.persistent_context
            if shared is None:  # pragma: no cover - a provider contract violation
                raise Refusal(
                    "backend_unavailable",
                    provider=row.provider,
                    reason="its driver gave no persistent context",
                    fix="bay plugins",
                )
            context = shared
            if context not in self._watched:
                await self._allowlist(context, row.allowed_domains, running.blocked, running)
                self._watch(context, None)
            running.users.add(session.ref.id)
            running.idle_since = None
            await self.profiles.used(row.id)
        lease.binding.bind(context, running)
        self.plugins.hooks.bay_lease_changed(lease=lease.info(), change="attached")
        at_start = await self.db(self.kept_tabs.kept, session.ref.id, lease.profile.id)
        lease.binding.started_with(at_start)
        state, kept = at_start
        if kept and state in ("auto", "live"):
            restored = await self.restore(lease, kept, reopen_ids)
            await self.persist(session, lease)  # they are live again: never restored twice
            session.notices.append(
                f"restored {restored} tab(s) kept when your browser stopped (profile "
                f"{lease.handle})"
            )
        _parked_state, parked = await self.db(
            self.kept_tabs.kept, session.ref.id, lease.profile.id + PARKED
        )
        if parked:
            session.notices.append(
                f"{len(parked)} tab(s) from your last close are kept: bay resume reopens them"
            )

    async def _allowlist(
        self,
        context: BrowserContext,
        allowed: tuple[str, ...],
        blocked: Blocked,
        running: Running,
    ) -> None:
        """The fence's websocket half, installed before the context's first navigation: a
        websocket to a host outside is closed and counted in ``blocked``. Every other
        request, each redirect hop included, is checked in the browser by its guard
        (browserbay.keeper.guard): a fence is the browser's, installed when it started."""
        if not allowed:
            return
        if running.guard is None or running.fence != allowed:
            raise Refusal(  # pragma: no cover - the pool starts fenced browsers guarded
                "backend_unavailable",
                provider=running.provider.id,
                reason="its browser has no request check for these allowed domains",
                fix="bay plugins",
            )
        await context.route_web_socket("**/*", websocket_fence(allowed, blocked))

    def _watch(self, context: BrowserContext, only: Lease | None) -> None:
        """New pages of a context join the lease of the tab that opened them (popups,
        target=_blank, window.open); in an ephemeral context, every page is its lease's."""
        self._watched.add(context)

        async def on_page(page: Page) -> None:
            if id(page) in self.tabs.by_page:
                return
            opener_tab = None
            with contextlib.suppress(Exception):
                opener = await page.opener()
                if opener is not None:
                    opener_tab = self.tabs.by_page.get(id(opener))
            if id(page) in self.tabs.by_page:  # new_tab registered it meanwhile
                if opener_tab is not None:
                    self.tabs.by_page[id(page)].opener = opener_tab.id
                return
            lease = only if only is not None and only.context is context else None
            if opener_tab is not None:
                lease = self.lease_of(opener_tab)
            if lease is None or (lease.binding.restoring and opener_tab is None):
                return  # a page we are creating ourselves, or one a human opened by hand
            tab = self.adopt(page, lease)
            tab.opener = opener_tab.id if opener_tab is not None else None
            with contextlib.suppress(Exception):  # a page closed meanwhile
                await lease.emulation.apply(page)

        context.on("page", on_page)

    def lease_of(self, tab: Tab) -> Lease | None:
        session = self.sessions.get(tab.owner)
        return session.leases.get(tab.profile) if session is not None else None

    def adopt(self, page: Page, lease: Lease, tab_id: str | None = None) -> Tab:
        existing = self.tabs.by_page.get(id(page))
        if existing is not None:
            return existing
        tab = self.tabs.add(page, lease, None, tab_id)
        self.plugins.hooks.bay_lease_changed(lease=lease.info(), change="tabs")

        def on_close(_page: Page) -> None:
            running = lease.browser
            if running is not None and (running.closing or self.pool.gone(running)):
                return  # its browser died: the crash path drops the tabs, kept for restore
            if tab.id in self.tabs.tabs:
                self.tabs.drop(tab, lease, "closed by the page")
                self.plugins.hooks.bay_lease_changed(lease=lease.info(), change="tabs")

        page.on("close", on_close)
        session = self.sessions.get(tab.owner)
        if self.prewarm is not None and session is not None:
            self.prewarm.watch(page, session.lock)
        tab.log.watch(page, lease.net)  # its console, errors, requests; the lease's HAR
        if self.downloads is not None:  # kept in the session's own directory, bounded
            self.downloads.watch(page, lambda: self.sessions.get(tab.owner))
        if self.dialogs is not None:
            self.dialogs.watch(page, tab)
        if self.brakes is not None:
            self.brakes.watch(page)
        return tab

    async def new_tab(self, lease: Lease) -> Tab:
        assert lease.context is not None
        page = await self.pool.new_page(lease.browser, lease.context)
        guard = lease.browser.guard if lease.browser is not None else None
        if guard is not None and lease.profile.ephemeral and lease.allowed_domains:
            await guard.target_of(page, lease.blocked)  # its context's refused hops count here
        await lease.emulation.apply(page)  # bay set holds for tabs opened later
        tab = self.adopt(page, lease)
        self.tabs.select(lease, tab.id)
        return tab

    async def current_tab(self, session: Session, lease: Lease) -> Tab:
        await self.ensure(session, lease)
        if lease.current is None or lease.current not in lease.tabs:
            await self.new_tab(lease)
        assert lease.current is not None
        return lease.tabs[lease.current]

    # -- kept tabs --------------------------------------------------------------------

    async def persist(self, session: Session, lease: Lease) -> None:
        """Write the lease's tabs to the registry when they changed, so a keeper killed at
        any moment still has them (state 'live' until the browser stops)."""
        running = lease.browser
        if lease.context is None or (
            running is not None and (running.closing or self.pool.gone(running))
        ):
            return  # a dead browser: its crash path writes the tabs as last seen
        # One snapshot of the tabs, their URLs and the current one, taken before any await:
        # a crash handled meanwhile (it clears the lease) must not bend what is written.
        tabs, current = list(lease.tabs.values()), lease.current
        urls = tuple(t.page.url for t in tabs)
        signature = (urls, current)
        if signature == lease.binding.kept_signature:
            return
        kept = []
        for t, url in zip(tabs, urls, strict=True):
            if url in ("about:blank", ""):
                continue
            kept.append(KeptTab(url, await t.title(), t.id == current))
        await self.db(self.kept_tabs.keep, session.ref.id, lease.profile.id, kept, "live")
        lease.binding.kept(signature)

    async def restore(self, lease: Lease, kept: list[KeptTab], ids: list[str] | None = None) -> int:
        """Reopen kept tabs, all at once, in their order; the one that was current is
        current again. ``ids`` (one per kept tab): the ids they get back (a backend switch);
        otherwise fresh ones."""
        if ids is not None and (len(ids) != len(kept) or any(i in self.tabs.tabs for i in ids)):
            ids = None  # the list changed meanwhile: fresh ids, never a wrong one
        assert lease.context is not None
        context = lease.context
        pages: list[Any] = [None] * len(kept)
        failed: list[BaseException] = []

        async def make(i: int) -> None:
            try:
                pages[i] = await self.pool.new_page(lease.browser, context)
            except Exception as exc:  # raised once all are done (never as a group)
                failed.append(exc)

        lease.binding.set_restoring(True)
        try:
            async with anyio.create_task_group() as tg:
                for i in range(len(kept)):
                    tg.start_soon(make, i)
        finally:
            lease.binding.set_restoring(False)
        if failed:
            raise failed[0]
        opened = [
            (self.adopt(page, lease, ids[i] if ids is not None else None), k)
            for i, (page, k) in enumerate(zip(pages, kept, strict=True))
        ]

        async def load(tab: Tab, k: KeptTab) -> None:
            with contextlib.suppress(Exception):
                await tab.page.goto(
                    k.url, wait_until="domcontentloaded", timeout=RESTORE_TIMEOUT * 1000
                )

        async with anyio.create_task_group() as tg:
            for tab, k in opened:
                tg.start_soon(load, tab, k)
        current = next((t for t, k in opened if k.current), opened[-1][0] if opened else None)
        if current is not None:
            self.tabs.select(lease, current.id)
        lease.binding.kept(())
        return len(opened)

    async def resume_parked(self, session: Session, lease: Lease) -> int:
        """Reopen the tabs a deliberate close parked (after the tabs opened since)."""
        key = lease.profile.id + PARKED
        _state, parked = await self.db(self.kept_tabs.kept, session.ref.id, key)
        if not parked:
            return 0
        restored = await self.restore(lease, parked)
        await self.db(self.kept_tabs.drop, session.ref.id, key)
        await self.persist(session, lease)
        return restored

    # -- ending -----------------------------------------------------------------------

    async def end(
        self,
        session: Session,
        lease: Lease,
        reason: str,
        *,
        undo: bool = False,
    ) -> int:
        """Close the lease's share of its browser. Its tabs are kept: for ``resume`` after a
        deliberate ``close``, reopened by themselves after any other stop. ``undo``: the
        verb that started it was answered ``deadline``: the registry gets back the kept tabs
        it held when the context started (``LeaseBinding.kept_at_start``), none of this
        one's."""
        if lease.context is None:
            return 0
        if undo:
            if lease.binding.kept_at_start is not None:  # else: not read yet, nothing since
                state, tabs = lease.binding.kept_at_start
                back = "auto" if state in (None, "auto", "live") else state
                await self.db(self.kept_tabs.keep, session.ref.id, lease.profile.id, tabs, back)
        else:
            await self.persist(session, lease)
            if lease.tabs and reason == "closed":
                await self.db(self.kept_tabs.park, session.ref.id, lease.profile.id)
            elif lease.tabs:
                await self.db(self.kept_tabs.mark, session.ref.id, lease.profile.id, "auto")
        Controls.let_go(lease)
        await lease.net.release()  # its routes and HAR end with its context
        if self.dialogs is not None:  # their dialogs dismissed: no navigation races a close
            await self.dialogs.leave(list(lease.tabs.values()))
        await lease.emulation.release()  # close undoes bay set
        self.plugins.hooks.bay_lease_changed(lease=lease.info(reason), change="detached")
        closed = len(lease.tabs)
        pages = [t.page for t in lease.tabs.values()]
        for tab in list(lease.tabs.values()):
            self.tabs.drop(tab, lease, f"its session's lease ended ({reason})")
        running, context = lease.binding.unbind()
        self.tabs.select(lease, None)
        if running is not None:
            if lease.profile.ephemeral:
                running.users.discard(session.ref.id)
                await self.pool.release_context(running, context)
            else:
                if not running.provider.capabilities.owns_dir and context is not None:
                    # Somebody else's browser never loses its last tab to us (a headed
                    # Chrome would exit with its last window): a blank one stays behind.
                    ours = {id(p) for p in pages}
                    if pages and all(id(p) in ours for p in context.pages):
                        with contextlib.suppress(Exception):
                            await context.new_page()
                for page in pages:
                    with contextlib.suppress(Exception):
                        await page.close()
                self.pool.release_user(running, session.ref.id)
        return closed

    async def check_browser(self, session: Session, lease: Lease) -> None:
        """A lease whose browser died since its last verb (the process is gone; the driver's
        events — its pages closing, then the disconnect — may still be on their way, or
        being handled): the crash is handled now, so the verb starts a new browser and
        reopens the kept tabs instead of acting on a dead context."""
        running = lease.browser
        if lease.context is None or running is None:
            return
        if running.closing:  # its crash is being handled: this lease's share of it, now
            await self._lease_crashed(session, lease, running)
        elif self.pool.gone(running):
            await self.pool.crashed(running)

    async def crashed(self, running: Running) -> None:
        for session in list(self.sessions.values()):
            for lease in list(session.leases.values()):
                await self._lease_crashed(session, lease, running)

    async def _lease_crashed(self, session: Session, lease: Lease, running: Running) -> None:
        """The lease loses its dead browser (once: the fields are cleared before any await);
        its tabs as the session last saw them are kept ('auto') and come back with its next
        verb."""
        if lease.browser is not running:
            return
        # The tabs as the session last saw them (a verb that answered may not have written
        # them yet): the pages a crash closes stay in the lease until now (see adopt).
        seen = [(t.page.url, t.id == lease.current) for t in lease.tabs.values()]
        Controls.let_go(lease)
        self.plugins.hooks.bay_lease_changed(lease=lease.info("crashed"), change="detached")
        for tab in list(lease.tabs.values()):
            self.tabs.drop(tab, lease, "its browser stopped unexpectedly")
        lease.binding.unbind()
        self.tabs.select(lease, None)
        sid, pid = session.ref.id, lease.profile.id
        seen = [(url, current) for url, current in seen if url not in ("about:blank", "")]
        if seen:
            _state, written = await self.db(self.kept_tabs.kept, sid, pid)
            titles = {k.url: k.title for k in written}
            kept = [KeptTab(url, titles.get(url, ""), current) for url, current in seen]
            await self.db(self.kept_tabs.keep, sid, pid, kept, "auto")
        else:
            await self.db(self.kept_tabs.mark, sid, pid, "auto")
        session.notices.append(
            f"the browser of profile {lease.handle} stopped unexpectedly; a new one "
            "starts with your next verb and reopens your tabs"
        )

    def set_aside(self, session: Session, lease: Lease, target: str) -> None:
        """The lease lets go of the browser about to stop for a backend switch to provider
        ``target`` — it is not ended: no park, no close; its tab ids are set aside until
        they come back."""
        self.plugins.hooks.bay_lease_changed(lease=lease.info("switch"), change="detached")
        for tab in list(lease.tabs.values()):
            self.tabs.drop(
                tab, lease, f"its profile's backend is switching to {target} (it comes back)"
            )
        running, _context = lease.binding.unbind()
        self.tabs.select(lease, None)
        if running is not None:
            running.users.discard(session.ref.id)

    # -- exclusive holds --------------------------------------------------------------

    async def check_hold(
        self, session: Session, profile_id: str, read: Mapping[str, Hold | None] | None = None
    ) -> None:
        """A profile held exclusively by another group is refused ``profile_busy``. Every
        verb on a persistent profile asks: one registry read when nothing is in the way, or
        none when ``read`` has the profile's hold (read in the lease choice's own call,
        :meth:`Holds.of_profiles`)."""
        if read is not None and profile_id in read:
            hold = read[profile_id]
        else:
            hold = await self.db(self.holds.get, profile_id)
        if hold is not None and hold.group != session.group and self._remote(hold):
            hold = await self._live_hold(profile_id)  # its keeper may have died
        if hold is None or hold.group == session.group:
            return
        if not await self._holder_alive(hold):
            await self._reclaim_idle(profile_id, hold)
            return
        raise self._busy(profile_id, hold, waiting=False)

    async def take_hold(self, session: Session, profile_id: str, wait: float) -> float:
        """Hold the profile for the session's group, waiting FIFO behind the sessions that
        queued first — on any keeper of the fleet: the queue is the registry's — for at
        most ``wait`` seconds. Answers how long it waited. A release on this keeper wakes
        its waiters at once; one on another keeper wakes them when the registry's change
        channel says so (:meth:`heard_change`, on PostgreSQL), and is seen by the next look
        anyway, every :data:`HOLD_POLL` seconds (a registry call in the writer thread, off
        the loop)."""
        started = time.monotonic()
        sid = session.ref.id
        seq = await self.db(self.holds.enqueue, profile_id, sid, session.group)
        wakes = self._waiters.setdefault(profile_id, {})
        try:
            while True:
                wakes[seq] = event = anyio.Event()  # set by a release here during the look
                await self._live_hold(profile_id)  # a dead keeper's hold or waiters go
                turn = await self.db(self.holds.grant, seq)
                if turn.granted:
                    return time.monotonic() - started
                if not turn.queued:  # dropped meanwhile (by a keeper that took us for dead)
                    wakes.pop(seq, None)
                    seq = await self.db(self.holds.enqueue, profile_id, sid, session.group)
                    continue
                hold = turn.hold
                if (
                    hold is not None
                    and hold.group != session.group
                    and not await self._holder_alive(hold)
                ):
                    await self._reclaim_idle(profile_id, hold)
                    continue
                left = wait - (time.monotonic() - started)
                if left <= 0:
                    ahead = turn.ahead
                    if hold is not None and (hold.group != session.group or ahead is None):
                        raise self._busy(profile_id, hold, waiting=True)
                    if ahead is not None:  # free (or its group's), but others queued first
                        first = Hold(
                            ahead.session, "(queued first)", ahead.enqueued_at, ahead.keeper_id
                        )
                        raise self._busy(profile_id, first, waiting=True)
                    continue  # nothing stands in the way any more: one more look
                with anyio.move_on_after(min(left, HOLD_POLL)):
                    await event.wait()
        finally:
            wakes.pop(seq, None)
            if not wakes:
                self._waiters.pop(profile_id, None)
            with anyio.CancelScope(shield=True):  # a cut wait leaves the queue too
                await self.db(self.holds.leave, seq)
            self._wake(profile_id)

    async def _live_hold(self, profile_id: str) -> Hold | None:
        """The profile's hold, once what keepers that stopped beating left on it (their
        holds, their waiters) was reclaimed — by this keeper, now, audited."""
        if self.fleet is not None:
            gone = await self.db(self.holds.reclaim, profile_id, self.fleet.ttl)
            for hold in gone.holds:
                log.info(
                    "reclaimed %s from %s: its keeper %s stopped beating",
                    profile_id,
                    hold.holder,
                    hold.keeper_id,
                )
            if gone.waiters:
                log.info(
                    "%d waiter(s) for %s of keeper(s) that stopped beating dropped",
                    len(gone.waiters),
                    profile_id,
                )
        return await self.db(self.holds.get, profile_id)

    async def _reclaim_idle(self, profile_id: str, hold: Hold) -> None:
        log.info("reclaiming %s from stale holder %s", profile_id, hold.holder)
        if await self.db(self.holds.release, profile_id, hold.holder):
            self._wake(profile_id)

    async def close(self, session: Session, lease: Lease) -> int:
        """End one lease as ``bay close --profile`` does: its tabs kept for ``bay resume``,
        its exclusive hold released. Answers how many tabs were closed."""
        closed = await self.end(session, lease, "closed")
        await self.release_hold(session, lease.profile.id)
        return closed

    async def release_hold(self, session: Session, profile_id: str) -> None:
        if await self.db(self.holds.release, profile_id, session.ref.id):
            self._wake(profile_id)

    def _wake(self, profile_id: str) -> None:
        for event in self._waiters.get(profile_id, {}).values():
            event.set()

    def has_waiters(self, profile_id: str) -> bool:
        """Sessions here wait for the profile's hold (read from the change listener's
        thread: a dictionary look-up, whose answer may be a moment old)."""
        return profile_id in self._waiters

    def heard_change(self, profile_id: str) -> bool:
        """The registry's change channel says the profile's hold changed (a release or a
        grant on another keeper of the fleet): its waiters here look at the queue now,
        not at their next :data:`HOLD_POLL`. Answers whether any was woken."""
        waiting = bool(self._waiters.get(profile_id))
        self._wake(profile_id)
        return waiting

    def _remote(self, hold: Hold) -> bool:
        """The hold came through another keeper of the fleet."""
        return self.fleet is not None and hold.keeper_id not in (None, self.fleet.keeper_id)

    async def _holder_alive(self, hold: Hold) -> bool:
        """Alive: a holder on another keeper of the fleet while that keeper beats (its hold
        goes with the heartbeat, :meth:`_live_hold`: this keeper cannot see its sessions);
        here, a session the keeper has seen recently, or a shell session with a live
        process. A holder the keeper never saw since it started is alive until it has been
        idle for the idle timeout."""
        if self._remote(hold):
            return True
        session = self.sessions.get(hold.holder)
        if session is not None:
            return time.monotonic() - session.last_used <= self.idle_timeout
        shell = identity.shell_of(hold.holder)
        if shell is not None:
            return bool(await anyio.to_thread.run_sync(procfs.in_session, shell))
        return time.time() - hold.since <= self.idle_timeout

    def _busy(self, profile_id: str, hold: Hold, waiting: bool) -> Refusal:
        """``profile_busy`` naming the holder: its session, its group, since when, and —
        when it holds the profile through another keeper of the fleet — that keeper's host
        (``holder_host``, in the message as ``on <host>``)."""
        label = (
            self.profiles.rows[profile_id].label if profile_id in self.profiles.rows else profile_id
        )
        when = time.strftime("%H:%M:%S", time.localtime(hold.since))
        fix = (
            "wait longer (bay use ... --exclusive --wait SECONDS), or ask the holder to bay detach"
            if waiting
            else f"bay use {profile_id} --exclusive --wait 60   (queues behind the holder)"
        )
        host = (hold.host or hold.keeper_id or "") if self._remote(hold) else ""
        return Refusal(
            "profile_busy",
            profile=label,
            holder=hold.holder,
            group=hold.group,
            since=when,
            fix=fix,
            holder_host=host,
            on_host=f" on {host}" if host else "",
        )
