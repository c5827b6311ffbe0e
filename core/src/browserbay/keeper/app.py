"""The keeper composed: every service built once, each given what it uses, and the verb
route that maps every verb of the table to its service's handler.

Module map (who owns what; each talks to the others through public methods only):

- :class:`~browserbay.keeper.base.RegistryRunner` (``db``): registry calls, off the loop;
  :class:`~browserbay.keeper.base.RestartGate`: a backend switch's gap;
  :class:`~browserbay.keeper.base.Lifecycle`: start time, the stop, requests in flight.
- :class:`~browserbay.keeper.fleet.Fleet`: this keeper in the fleet (its row, heartbeat and
  profile claims).
- :class:`~browserbay.keeper.roster.Roster`: the sessions; :class:`~browserbay.keeper.audit.
  AuditTrail`: audit rows.
- :class:`~browserbay.keeper.choosing.LeaseChooser`: the lease a verb acts on.
- :class:`~browserbay.keeper.sessionverbs.TabVerbs` (tab, resume),
  :class:`~browserbay.keeper.sessionverbs.SessionVerbs` (use, detach, pin, close, status,
  blocked), :class:`~browserbay.keeper.switch.BackendSwitch` (backend),
  :class:`~browserbay.keeper.admin.AdminVerbs` (the keeper verbs), the page verbs of
  :mod:`browserbay.keeper.pageverbs`, the plugins' verbs.
- :class:`~browserbay.keeper.grants.GrantBook`: the session sockets (grant, list, revoke; their
  listeners, served by the daemon with each grant's channel).
- :class:`~browserbay.keeper.route.VerbRoute`: verb name -> handler, checked against the table.
- :class:`~browserbay.keeper.keeper.Keeper`: one request, start to answer;
  :class:`~browserbay.keeper.keeper.Housekeeping`: idle sessions and browsers;
  :class:`~browserbay.keeper.triggers.TriggerIntake`: the trigger files.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from collections.abc import Callable
from pathlib import Path

import anyio

import browserbay.keeper.reading  # noqa: F401  (its @page_verb handlers join PAGE_VERBS)
from browserbay._version import __version__
from browserbay.keeper import (
    emulation,
    fastclick,
    fileverbs,
    inputs,
    network,
    pageverbs,
    recording,
    shots,
    snapshots,
    state,
    waits,
)
from browserbay.keeper.admin import AdminVerbs
from browserbay.keeper.approvals import Approvals
from browserbay.keeper.audit import AuditTrail
from browserbay.keeper.base import Lifecycle, RegistryRunner, RestartGate
from browserbay.keeper.brakes import Brakes
from browserbay.keeper.browsers import BrowserPool
from browserbay.keeper.children import Children
from browserbay.keeper.choosing import LeaseChooser
from browserbay.keeper.continuous import OPT_IN_FILE, Continuous, OptIns
from browserbay.keeper.controls import Controls, make_transports
from browserbay.keeper.dialogs import Dialogs
from browserbay.keeper.dialogverbs import DialogVerbs
from browserbay.keeper.downloads import Downloads
from browserbay.keeper.driver import PlaywrightDriver
from browserbay.keeper.faults import FaultPlan
from browserbay.keeper.files import Carrier, SessionFiles
from browserbay.keeper.fleet import Fleet, data_root, host_name
from browserbay.keeper.forward import Forwarder, PeerLinks
from browserbay.keeper.grants import GrantBook, GrantVerbs
from browserbay.keeper.humantabs import HumanTabs
from browserbay.keeper.keeper import Housekeeping, Keeper
from browserbay.keeper.keyhomes import KeyHomeBook
from browserbay.keeper.leases import Leases
from browserbay.keeper.link import LinkConfig
from browserbay.keeper.memory import MemoryWatch
from browserbay.keeper.pageverbs import PAGE_VERBS
from browserbay.keeper.prewarm import Prewarm
from browserbay.keeper.profiles import ProfileBook
from browserbay.keeper.roads import Guards
from browserbay.keeper.roster import Roster
from browserbay.keeper.route import (
    Handler,
    OnKeeper,
    OnKeeperAsked,
    OnLease,
    OnPage,
    OnPlugin,
    OnSession,
    VerbRoute,
)
from browserbay.keeper.sessions import TabBook, reserve_tab_ids
from browserbay.keeper.sessionverbs import SessionVerbs, TabVerbs
from browserbay.keeper.standing import StandingBook
from browserbay.keeper.switch import BackendSwitch
from browserbay.keeper.triggers import TriggerIntake
from browserbay.keys import share_roots
from browserbay.model import KeeperInfo
from browserbay.paths import BayPaths
from browserbay.plugins import Plugins
from browserbay.registry import KeeperStart, NoKeeperLock, Registry
from browserbay.registry.changes import Listener
from browserbay.settings import BaySettings, Configured
from browserbay.tracestore import Retention, traces_root

log = logging.getLogger("browserbay.keeper")

#: The modules whose ``@page_verb`` handlers fill ``PAGE_VERBS`` as they are imported (the
#: route refuses to start when a page verb of the table has no handler).
PAGE_VERB_MODULES = (
    pageverbs,
    recording,
    snapshots,
    shots,
    inputs,
    waits,
    network,
    state,
    fileverbs,
    emulation,
)


def core_handlers(
    admin: AdminVerbs,
    sessions: SessionVerbs,
    tabs: TabVerbs,
    backend: BackendSwitch,
    grants: GrantVerbs,
    downloads: fileverbs.DownloadVerbs,
    dialogs: DialogVerbs,
    continuous: Continuous,
) -> dict[str, Handler]:
    """The core's verbs and their handlers (the page verbs register themselves with
    :func:`browserbay.keeper.pageverbs.page_verb`, in :data:`PAGE_VERB_MODULES`)."""
    return {
        "tab": OnLease(tabs.tab),
        "dialog": OnLease(dialogs.dialog),
        "resume": OnLease(tabs.resume),
        "close": OnSession(sessions.close, ends_leases=True),
        "detach": OnSession(sessions.detach, ends_leases=True),
        "use": OnSession(sessions.use),
        "pin": OnSession(sessions.pin),
        "status": OnSession(sessions.status),
        "downloads": OnSession(downloads.downloads_verb),
        "blocked": OnSession(sessions.blocked),
        "backend": OnSession(backend.backend),
        "new": OnKeeperAsked(admin.new),
        "profiles": OnKeeper(admin.profiles_listing),
        "forget": OnKeeper(admin.forget),
        "adopt": OnKeeper(admin.adopt),
        "group": OnKeeper(admin.group),
        "triggers": OnKeeper(admin.triggers),
        "audit": OnKeeper(admin.audit),
        "hints": OnKeeper(admin.hints),
        "recording": OnKeeper(continuous.verb),
        "keeper": OnKeeper(admin.keeper),
        "session": OnKeeper(grants.session),
        "plugins": OnKeeper(admin.plugins_listing),
        "verbs": OnKeeper(admin.verbs),
        **{name: OnPage(run) for name, run in PAGE_VERBS.items()},
    }


class App:
    """The keeper daemon's services, composed (see the module's docstring)."""

    def __init__(
        self,
        plugins: Plugins,
        registry: Registry,
        paths: BayPaths,
        settings: BaySettings,
        configured: Configured | None = None,
        driver: PlaywrightDriver | None = None,
        link: LinkConfig | None = None,
    ):
        """``configured``: where each of ``settings`` came from, for ``bay keeper status``
        (None: all given here, as a test gives them); ``driver``: the Playwright driver, when
        the daemon began starting it before the keeper's own modules were imported;
        ``link``: the fleet link (its secret: verbs are forwarded to other keepers)."""
        self.plugins = plugins
        self.registry = registry
        self.paths = paths
        self.settings = settings
        self.db = db = RegistryRunner()
        self.life = Lifecycle(paths.socket)
        self.gate = RestartGate()
        self.roster = roster = Roster(registry.sessions, db)
        # A verb's audit row is written after its answer left; on a store whose calls may
        # run at once (PostgreSQL's pool) it goes on a lane of its own, so the next verb's
        # registry read (a forwarded verb's re-check) does not queue behind it.
        lanes = registry.schema.lanes
        self.audit = AuditTrail(registry.audit, RegistryRunner() if lanes > 1 else db)
        self.driver = driver if driver is not None else PlaywrightDriver()
        #: The files connections send and are answered (browserbay.keeper.files).
        self.carrier = Carrier(paths.runtime / "transfers")
        # Tab ids never repeat across this home's keepers (a stale one is tab_gone).
        tabs = TabBook(functools.partial(reserve_tab_ids, paths.state / "tab-ids"))
        me = KeeperStart(
            registry.keeper_id,
            host_name(settings.fleet_host),
            settings.fleet_listen or None,
            os.getpid(),
            __version__,
        )
        self.fleet = Fleet(
            registry.keepers,
            registry.claims,
            registry.kept_tabs,
            db,
            me,
            settings.fleet_ttl,
            registry.keeper_lock,
            self.life.begin_stop,
            # Other keepers may take its claims (a shared store): it fences itself.
            shared=not isinstance(registry.keeper_lock, NoKeeperLock),
            # The heartbeat's own lane (PostgreSQL): no verb's registry call that waits
            # (a locked row, a slow listing, a burst queued) delays a renewal.
            beat_db=RegistryRunner() if lanes > 2 else None,
        )
        self.key_homes = KeyHomeBook(registry.key_homes, db, me.id, me.host)
        self.pool = BrowserPool(
            plugins,
            registry.browsers,
            registry.versions,
            registry.profiles,
            paths,
            db,
            self.driver.get,
            contexts_per_browser=settings.contexts_per_browser,
            max_browsers=settings.max_browsers,
            fleet=self.fleet,
            key_homes=self.key_homes,
        )
        if settings.fleet_data:  # keys never live where the fleet's other keepers read
            share_roots(Path(settings.fleet_data))
        self.profiles = ProfileBook(
            registry.profiles,
            registry.attachments,
            registry.proposals,
            paths,
            plugins,
            db,
            data_root(settings.fleet_data, paths.data),
        )
        downloads = Downloads(paths.runtime / "downloads", settings.download_max_bytes)
        #: Every dialog a page opens, held until it is answered (bay dialog, the live view).
        self.dialogs = Dialogs(roster.by_id, settings.dialog_timeout)
        #: Every tab's brake: a takeover stops the script its page runs.
        brakes = Brakes()
        #: Each browser's memory, measured each tick; over the owner's line, said once.
        self.memory = MemoryWatch(self.pool, roster.by_id, settings.memory_notice_mb)
        self.leases = Leases(
            self.pool,
            tabs,
            registry.kept_tabs,
            registry.holds,
            self.profiles,
            plugins,
            db,
            roster.by_id,
            idle_timeout=settings.idle_timeout,
            downloads=downloads,
            dialogs=self.dialogs,
            brakes=brakes,
            prewarm=Prewarm(f"{snapshots.REF_ENGINE}=:warm"),
            fleet=self.fleet,
        )
        self.pool.on_crash = self.leases.crashed
        self.fleet.on_fenced = self.pool.fence
        # On PostgreSQL: the forwarded verbs' standings served from what the registry's
        # change channel says (keeper/standing.py), heard by a thread of its own.
        make_listener = getattr(registry.schema, "change_listener", None)
        self.standing: StandingBook | None = None
        self.change_listener: Listener | None = None
        if make_listener is not None:
            self.standing = StandingBook(registry.keeper_id, self.fleet.ttl / 2)
            self.change_listener = make_listener(self.standing, registry.keeper_id)
            self.fleet.standing = self.standing
            self.fleet.changes = registry.changes
        #: Who holds each lease's controls; the live-view transports' host.
        self.controls = Controls(
            plugins,
            roster.by_id,
            settings.handback_idle,
            self.dialogs,
            brakes,
            self.memory,
            Approvals(),
            HumanTabs(self.leases, tabs, plugins, roster.by_id),
            self.leases.close,
        )
        self.live = make_transports(plugins, self.controls)
        #: The one guard path every road's actions pass (see browserbay.keeper.roads).
        self.guards = Guards(plugins, self.controls, self.gate.check, self.audit.write)
        chooser = LeaseChooser(
            plugins,
            registry.attachments,
            registry.sessions,
            registry.groups,
            db,
            self.profiles,
            self.leases,
            settings,
            self.standing,
        )
        #: The session sockets: their grants, files and listeners (served by the daemon).
        self.grants = GrantBook(registry.grants, db, self.profiles, self.leases, roster.by_id)
        #: Sub-agents: child sessions minted through the book, closed with their parent.
        children = Children(
            self.grants,
            registry.grants,
            registry.sessions,
            registry.attachments,
            db,
            self.profiles,
            self.leases,
            roster,
            paths.socket.parent,
            SessionFiles(downloads.root, self.carrier.uploads_root),
        )
        self.grants.on_end = children.ended  # a grant revoked or expired: its children go
        #: Continuous recording of the profiles the owner opted in (bay recording).
        self.continuous = Continuous(
            OptIns(paths.state / OPT_IN_FILE),
            traces_root(paths),
            Retention.from_env,
            roster.by_id,
            self.profiles,
        )
        table = plugins.verb_table()
        self.admin = AdminVerbs(
            plugins,
            registry.groups,
            registry.hints,
            db,
            paths,
            self.pool,
            self.profiles,
            roster.by_id,
            self.audit,
            self.life,
            table,
            configured if configured is not None else Configured(settings, {}),
            self.grants,
            registry.schema,
            self.fleet,
        )
        backend = BackendSwitch(
            plugins,
            registry.attachments,
            registry.proposals,
            registry.versions,
            registry.kept_tabs,
            db,
            self.pool,
            self.profiles,
            self.leases,
            tabs,
            roster.by_id,
            self.controls,
            chooser,
            self.gate,
        )
        handlers = core_handlers(
            self.admin,
            SessionVerbs(
                registry.attachments,
                registry.sessions,
                registry.proposals,
                registry.hints,
                db,
                self.profiles,
                self.leases,
                chooser,
                plugins,
                settings,
                children,
                self.controls,
            ),
            TabVerbs(plugins, tabs, self.leases, self.profiles),
            backend,
            GrantVerbs(self.grants, children.child),
            fileverbs.DownloadVerbs(self.leases.downloads),
            DialogVerbs(self.dialogs),
            self.continuous,
        )
        handlers.update({name: OnPlugin(pv) for name, pv in plugins.verbs.items()})
        self.route = VerbRoute(table, handlers)  # RouteError: the keeper does not start
        self.keeper = Keeper(
            plugins,
            registry.kept_tabs,
            db,
            paths,
            self.route,
            roster,
            chooser,
            tabs,
            self.leases,
            self.controls,
            self.guards,
            self.audit,
            self.carrier,
            self.dialogs,
            continuous=self.continuous,
            forward=Forwarder(
                self.fleet,
                PeerLinks(link, registry.keeper_id) if link is not None else None,
                self.profiles.data_dir,
                self.key_homes,
            ),
        )
        self.housekeeping = Housekeeping(
            roster, self.leases, self.pool, self.gate, settings, children, self.memory
        )
        self.triggers = TriggerIntake(
            paths,
            registry.triggers,
            registry.kept_tabs,
            db,
            roster,
            chooser,
            self.leases,
            self.controls,
            self.guards,
            self.life,
            settings.trigger_poll,
            settings.trigger_max_age,
            FaultPlan.from_environ(),
        )

    async def start(self) -> None:
        """Load what the registry knows. Tabs that were live when the last keeper died are
        now kept tabs that come back by themselves. Before any browser starts, the driver
        has the engine of snapshots' own refs, which every context then gets."""
        await self.driver.add_engine(snapshots.REF_ENGINE, snapshots.REF_ENGINE_JS)
        await self.driver.add_engine(
            fastclick.READY_ENGINE, fastclick.READY_ENGINE_JS, content_script=True
        )
        await self.fleet.start()
        await self.profiles.load()
        await self.continuous.opt_ins.load()
        dropped = await self.db(self.registry.holds.drop_orphans)
        if dropped:
            log.info("%d exclusive hold(s) of a cut `use --exclusive` released", dropped)
        revived = await self.db(self.registry.kept_tabs.mark_live_auto)
        if revived:
            log.info("%d tab(s) of the last keeper's browsers are kept for restore", revived)
        self.plugins.hooks.bay_keeper_started(KeeperInfo(os.getpid(), __version__, self.paths))

    def hear_changes(self, call_soon: Callable[..., object]) -> None:
        """The change listener's news of a profile wakes this keeper's waiters for its hold
        (``call_soon``: the event loop's ``call_soon_threadsafe``; the listener's thread
        never waits for the loop)."""
        book = self.standing
        if book is None:
            return
        leases = self.leases

        def woke(profile_id: str) -> None:  # on the event loop
            if leases.heard_change(profile_id):
                book.count_woken()

        def heard(profile_id: str) -> None:  # on the listener's thread
            if leases.has_waiters(profile_id):
                call_soon(woke, profile_id)

        book.on_change = heard

    async def close(self) -> None:
        self.plugins.hooks.bay_keeper_stopping()
        try:
            with anyio.move_on_after(15):  # the segments complete on disk, then the browsers
                await self.continuous.close()
        except Exception:
            log.exception("the continuous recordings failed to stop")
        for transport in self.live:  # viewers go before the browsers they watch
            try:
                with anyio.move_on_after(5):
                    await transport.stop()
            except Exception:
                log.exception("a live-view transport failed to stop")
        for session in list(self.roster.by_id.values()):
            for lease in session.running_leases:
                with contextlib.suppress(Exception):
                    await self.leases.end(session, lease, "keeper_stop")
        await self.pool.stop_all("keeper_stop")
        await self.driver.stop()
        if self.keeper.forward is not None:
            await self.keeper.forward.close()  # the link connections to other keepers
