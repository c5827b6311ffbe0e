"""The keeper: validates a request, finds the session and the lease it acts on, runs the verb
under its deadline, calls the lifecycle hooks and answers. One instance per daemon."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from browserbay import verbs
from browserbay._version import __version__
from browserbay.keeper.act import Act
from browserbay.keeper.admin import AdminMixin
from browserbay.keeper.base import (  # noqa: F401 - re-exported for the keeper's parts and tests
    Answer,
    T,
)
from browserbay.keeper.browsers import BrowserPool
from browserbay.keeper.controls import Controls, make_transports
from browserbay.keeper.downloads import Downloads
from browserbay.keeper.faults import disk_full, is_disk_full
from browserbay.keeper.frames import ELEMENT_VERBS, PENDING, TRACED_VERBS, Recorder
from browserbay.keeper.hints import blocked
from browserbay.keeper.leases import Leases
from browserbay.keeper.pageverbs import HANDLERS, page_error
from browserbay.keeper.profiles import ProfileBook
from browserbay.keeper.requests import (  # noqa: F401 - re-exported for tests
    _check_arg,
    _context,
    _redact,
    _validate,
)
from browserbay.keeper.roads import Guards, frame_road
from browserbay.keeper.sessions import Lease, Session, TabBook, reserve_tab_ids
from browserbay.keeper.sessionverbs import SessionVerbsMixin
from browserbay.keeper.switch import BackendMixin
from browserbay.keeper.targets import TargetBook
from browserbay.keeper.verbhost import LeaseVerbHost
from browserbay.model import (
    ActionTrace,
    KeeperInfo,
    ProfileRef,
    ProviderRow,
    SessionRef,
    VerbCall,
    VerbContext,
    VerbOutcome,
)
from browserbay.paths import BayPaths
from browserbay.plugins import Plugins
from browserbay.refusals import Refusal
from browserbay.registry import Registry
from browserbay.settings import BaySettings

if TYPE_CHECKING:
    from playwright.async_api import Playwright

log = logging.getLogger("browserbay.keeper")
#: How long undoing a verb answered ``deadline`` may take (closing the tabs it opened).
UNDO_LIMIT = 10.0


def _holdings(session: Session) -> tuple[set[str], set[str]]:
    """The session's tabs and the profiles its running leases are on, now."""
    tabs = {t for lease in session.leases.values() for t in lease.tabs}
    return tabs, {pid for pid, lease in session.leases.items() if lease.context is not None}


#: Core verbs on the session rather than on one lease (``close`` and ``detach``, which end
#: leases, are judged on the leases they end).
SESSION_VERBS = frozenset({"status", "blocked", "use", "pin", "backend"})


class Keeper(SessionVerbsMixin, BackendMixin, AdminMixin):
    def __init__(
        self, plugins: Plugins, registry: Registry, paths: BayPaths, settings: BaySettings
    ):
        self.plugins = plugins
        self.registry = registry
        self.paths = paths
        self.settings = settings
        self.started = time.time()
        self.sessions: dict[str, Session] = {}
        # Tab ids never repeat across this home's keepers (a stale one is tab_gone).
        self.tabs = TabBook(functools.partial(reserve_tab_ids, paths.state / "tab-ids"))
        self._db_limiter = anyio.CapacityLimiter(1)
        self._pw: Playwright | None = None
        self._pw_cm: Any = None
        self._pw_lock = anyio.Lock()
        self.pool = BrowserPool(
            plugins,
            registry.browsers,
            registry.versions,
            registry.profiles,
            paths,
            self.db,
            self.playwright,
            contexts_per_browser=settings.contexts_per_browser,
            max_browsers=settings.max_browsers,
        )
        self.profiles = ProfileBook(
            registry.profiles, registry.attachments, registry.proposals, paths, plugins, self.db
        )
        self.leases = Leases(
            self.pool,
            self.tabs,
            registry.kept_tabs,
            registry.holds,
            self.profiles,
            plugins,
            self.db,
            self.sessions,
            idle_timeout=settings.idle_timeout,
            downloads=Downloads(paths.runtime / "downloads", settings.download_max_bytes),
        )
        self.pool.on_crash = self.leases.crashed
        #: Who holds each lease's controls; the live-view transports' host.
        self.controls = Controls(plugins, self.sessions, settings.handback_idle)
        self.live = make_transports(plugins, self.controls)
        self.stop_event = anyio.Event()
        self.restarting: dict[str, str] = {}
        #: The one guard path every road's actions pass (see browserbay.keeper.roads).
        self.guards = Guards(plugins, self.controls, self.check_restarting, self._audit)
        self.swept: list[str] = []
        self.verb_table = plugins.verb_table()
        self.inflight = 0
        self.last_request = time.monotonic()
        self.audit_failures = 0

    async def start(self) -> None:
        """Load what the registry knows. Tabs that were live when the last keeper died are
        now kept tabs that come back by themselves."""
        await self.profiles.load()
        dropped = await self.db(self.registry.holds.drop_orphans)
        if dropped:
            log.info("%d exclusive hold(s) of a cut `use --exclusive` released", dropped)
        revived = await self.db(self.registry.kept_tabs.mark_live_auto)
        if revived:
            log.info("%d tab(s) of the last keeper's browsers are kept for restore", revived)
        self.plugins.hooks.bay_keeper_started(KeeperInfo(os.getpid(), __version__, self.paths))

    def begin_stop(self) -> None:
        """Stop taking new connections at once (a client arriving now starts the next
        keeper, which waits for our lock), then let the daemon shut down gracefully."""
        if not self.stop_event.is_set():
            with contextlib.suppress(OSError):
                self.paths.socket.unlink()
        self.stop_event.set()

    # -- plumbing ---------------------------------------------------------------------

    async def db(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a registry call in the one writer thread, off the event loop."""
        return await anyio.to_thread.run_sync(
            functools.partial(fn, *args), limiter=self._db_limiter
        )

    async def playwright(self) -> Playwright:
        """The Playwright driver, started once. Its import (~200 ms) runs in a worker thread
        so the loop keeps serving; the daemon calls this at start to overlap the driver's
        ~300 ms start with the rest of its own start."""
        async with self._pw_lock:
            if self._pw is None:
                api = await anyio.to_thread.run_sync(
                    importlib.import_module, "playwright.async_api"
                )
                self._pw_cm = api.async_playwright()
                self._pw = await self._pw_cm.start()
            return self._pw

    async def close(self) -> None:
        self.plugins.hooks.bay_keeper_stopping()
        for transport in self.live:  # viewers go before the browsers they watch
            try:
                with anyio.move_on_after(5):
                    await transport.stop()
            except Exception:
                log.exception("a live-view transport failed to stop")
        for session in list(self.sessions.values()):
            for lease in session.running_leases:
                with contextlib.suppress(Exception):
                    await self.leases.end(session, lease, "keeper_stop")
        await self.pool.stop_all("keeper_stop")
        if self._pw_cm is not None:
            try:
                with anyio.move_on_after(5):
                    await self._pw_cm.__aexit__(None, None, None)
            except Exception:  # the driver may already be gone
                log.debug("playwright driver stop failed", exc_info=True)

    # -- requests ---------------------------------------------------------------------

    async def handle(self, frame: dict[str, Any]) -> dict[str, Any]:
        rid = frame.get("id")
        started = time.monotonic()
        call: VerbCall | None = None
        traces: list[Recorder] = []  # the actions' frames, for bay_action_traced
        PENDING.set(traces)
        try:
            verb, args, ref, timeout = _validate(frame, self.verb_table)
            handle, group, actor = _context(frame, ref)
            # The keeper's own verbs need no session and work whatever state the sessions
            # and providers are in (`bay keeper stop` always works).
            session = None if verb.scope == verbs.KEEPER else self._session(ref, group)
            profile: ProfileRef | None = None
            asked = VerbCall(verb.name, _redact(verb, args), ref, None, frame_road(frame))
            call = asked
            judged = [asked]

            def check(lease: Lease | None = None, **kw: Any) -> None:
                """The guards, once the verb's lease is known (and before it runs)."""
                judged[0] = self.guards.check(asked, lease, **kw)

            try:
                with anyio.fail_after(timeout) as scope:
                    if session is None:
                        check()
                        data, text = await self._keeper_verb(verb.name, args, handle)
                    else:
                        async with session.lock:
                            held = _holdings(session)
                            try:
                                await self._first_sight(session)
                                session.last_used = time.monotonic()
                                data, text, profile = await self._run(
                                    verb, args, session, handle, actor, started, timeout, check
                                )
                            except (anyio.get_cancelled_exc_class(), Refusal) as cut:
                                # Cut by the deadline, or a page call's own timeout (the
                                # same deadline, refused `deadline` by page_error).
                                if (
                                    cut.code == "deadline"
                                    if isinstance(cut, Refusal)
                                    else anyio.current_time() >= scope.deadline
                                ):
                                    with anyio.CancelScope(shield=True):
                                        await self._undo(session, held)
                                raise
                            session.last_used = time.monotonic()
            except TimeoutError:
                raise Refusal(
                    "deadline", verb=verb.name, timeout=timeout, longer=timeout * 2
                ) from None
            finally:
                call = judged[0]
            call = dataclasses.replace(call, profile=profile)
            answer = {
                "ok": True,
                "verb": verb.name,
                "session": ref.as_row(),
                "profile": profile.as_row() if profile is not None else None,
                "data": data,
                "text": text,
            }
            if session is not None and session.notices:
                answer["notice"] = " · ".join(session.notices)
                session.notices.clear()
        except Refusal as r:
            answer = r.frame()
        except Exception as exc:
            if is_disk_full(exc):
                answer = disk_full(str(frame.get("verb")), self.home_dir(), exc).frame()
            else:
                log.exception("verb failed")
                answer = Refusal(
                    "internal_error", verb=str(frame.get("verb")), reason=type(exc).__name__
                ).frame()
        if rid is not None:
            answer["id"] = rid
        if call is not None:
            ok = bool(answer["ok"])
            code = None if ok else str(answer["code"])
            elapsed = (time.monotonic() - started) * 1000
            outcome = VerbOutcome(ok, code, elapsed)
            self.plugins.hooks.bay_after_verb(call=call, outcome=outcome)
            for recorder in traces:  # now, or once its after-frame is in
                recorder.outcome_known(
                    functools.partial(
                        self._traced, dataclasses.replace(call, profile=recorder.profile), outcome
                    )
                )
            await self._audit(call, ok, code)
        return answer

    async def _audit(self, call: VerbCall, ok: bool, code: str | None) -> None:
        """The verb's audit row. A row that cannot be written (a full disk, a broken
        registry) is logged and counted (``audit_failures`` in ``bay keeper status``); it
        never changes the verb's answer, which is already decided."""
        profile = call.profile.id if call.profile else None
        try:
            await self.db(
                self.registry.audit.record, call.session.id, profile, call.verb, ok, code, call.road
            )
        except Exception as exc:
            self.audit_failures += 1
            log.warning(
                "audit row of %s not written (%d so far): %s",
                call.verb,
                self.audit_failures,
                "disk full" if is_disk_full(exc) else type(exc).__name__,
            )

    def home_dir(self) -> Path:
        """Where this keeper's files live, as a refusal names it."""
        return self.paths.home if self.paths.home is not None else self.paths.state

    def _session(self, ref: SessionRef, group: str | None) -> Session:
        session = self.sessions.get(ref.id)
        if session is None:
            session = Session(ref, group or ref.id)
            self.sessions[ref.id] = session
        elif group:
            session.group = group
        return session

    async def _undo(self, session: Session, held: tuple[set[str], set[str]]) -> None:
        """A verb answered ``deadline`` leaves nothing behind: the tabs it opened (and what
        they opened) are closed, a browser context it started for the session is released.
        A navigation of a tab that was already there is not undone."""
        tabs, running = held
        with anyio.move_on_after(UNDO_LIMIT):
            for lease in list(session.leases.values()):
                if lease.context is None:
                    continue
                try:
                    if lease.profile.id not in running:
                        # Started by this verb: ended, and the kept tabs it was reopening
                        # are kept as they were (they come back with the next verb).
                        await self.leases.end(session, lease, "deadline", undo=True)
                        continue
                    for tab in [t for t in lease.tabs.values() if t.id not in tabs]:
                        self.tabs.drop(tab, lease, "the verb that opened it was answered deadline")
                        with contextlib.suppress(Exception):
                            await tab.page.close()
                    await self.leases.persist(session, lease)
                except Exception:
                    log.exception("undoing a verb answered deadline failed")

    async def _first_sight(self, session: Session) -> None:
        if not session.leases and not getattr(session, "_seen", False):
            await self.db(self.registry.sessions.seen, session.ref.id, session.ref.origin)
            session._seen = True  # type: ignore[attr-defined]

    # -- running a verb -----------------------------------------------------------------

    async def _run(
        self,
        verb: verbs.Verb,
        args: dict[str, Any],
        session: Session,
        handle: str | None,
        actor: SessionRef | None,
        started: float,
        timeout: float,
        check: Callable[..., None],
    ) -> tuple[dict[str, Any], str, ProfileRef | None]:
        """``check``: the guards (browserbay.keeper.roads), called once before anything of
        the verb runs, with the lease it acts on when there is one."""
        deadline = started + timeout
        by_other = actor is not None and actor.id != session.ref.id
        if verb.name == "close":
            return await self._close(session, handle, check)
        if verb.name == "detach":
            return await self._detach(session, handle, by_other, check)
        if verb.scope != verbs.PLUGIN and verb.name in SESSION_VERBS:
            check()  # on the session, not a lease: only the hooks judge it
        if verb.name == "status":
            return await self._status(session, handle)
        if verb.name == "blocked":  # a claim recorded for the user; no profile is touched
            data, text = await blocked(
                args, session.ref, self.registry.hints, self.db, self.plugins.providers
            )
            return data, text, None
        if verb.name == "use":
            return await self._use(session, args, by_other, deadline)
        if verb.name == "pin":
            return await self._pin(session, args, by_other)
        if verb.name == "backend":
            return await self._backend(session, args, handle)
        plugin_verb = self.plugins.verbs.get(verb.name) if verb.scope == verbs.PLUGIN else None
        exempt = plugin_verb is not None and plugin_verb.while_paused
        # A verb on a target the session holds (a window) is paused and cut on that target's
        # lease, not on the browser's.
        key = plugin_verb.target(args) if plugin_verb and plugin_verb.target else None
        target = session.targets.get(key) if key else None
        if plugin_verb is not None and plugin_verb.lease_free:
            # It acts on no profile (bay keys, bay window): no lease is chosen, so neither
            # profile_required nor a browser's pause or restart applies; nothing of a browser
            # starts. A target it names is still guarded by its own lease.
            fresh = f"ep-{session.ref.id}" not in session.leases
            lease = self._ephemeral(session, "ephemeral", [])
            try:
                check(None, held=target, exempt=exempt)
                if target is None:
                    return await self._on_lease(verb, args, session, lease, deadline, timeout)
                return await self.controls.run(
                    target,
                    verb,
                    args,
                    exempt,
                    lambda: self._on_lease(verb, args, session, lease, deadline, timeout, target),
                )
            finally:
                if fresh and lease.context is None:  # leave no lease behind it
                    session.leases.pop(lease.profile.id, None)
        lease = await self._choose(session, handle)
        # browser_paused while a human holds the controls, browser_restarting in a backend
        # switch's gap, the approval hooks, the domain fence: nothing has run yet.
        check(lease, held=target, exempt=exempt)
        guarded = target if target is not None else lease
        return await self.controls.run(
            guarded,
            verb,
            args,
            exempt,
            lambda: self._on_lease(verb, args, session, lease, deadline, timeout, target),
        )

    async def _on_lease(
        self,
        verb: verbs.Verb,
        args: dict[str, Any],
        session: Session,
        lease: Lease,
        deadline: float,
        timeout: float,
        target: Lease | None = None,
    ) -> tuple[dict[str, Any], str, ProfileRef | None]:
        """Run a verb on its lease (cut by a takeover: see browserbay.keeper.controls)."""
        await lease.trace.settle(deadline)  # the last action's after-frame is taken first
        await self.leases.check_browser(session, lease)  # died since? restarted below
        row = self.plugins.providers.get(lease.profile.provider)
        for cell in verb.needs if target is None else ():  # a target's verb needs no browser
            if row is not None and not row.capabilities.cell(cell):
                raise Refusal(
                    "capability_missing", provider=row.id, verb=verb.name, capability=cell
                )
        if verb.scope == verbs.PLUGIN:
            ctx = VerbContext(
                verb=verb.name,
                args=args,
                session=session.ref,
                profile=lease.profile,
                deadline=deadline,
                state_dir=self.paths.state,
                host=LeaseVerbHost(self.leases, self.guards, self._keeper_verb, session, lease),
                keys=self.plugins.key_admin,
                lease=lease,
                providers=self.plugins.providers,
                target=target,
                targets=TargetBook(self.plugins, self.sessions, session),
            )
            data, text = await self.plugins.verbs[verb.name].handler(ctx)
            return data, text, lease.profile
        if lease.context is None and verb.scope != verbs.PLUGIN:
            # Tabs kept by an automatic stop come back with the session's next verb, even
            # one that would not start a browser by itself (`tab list`).
            state, kept = await self.db(
                self.registry.kept_tabs.kept, session.ref.id, lease.profile.id
            )
            if kept and state in ("auto", "live"):
                await self.leases.ensure(session, lease)
        if verb.name == "resume":
            data, text = await self._resume(session, lease)
        elif verb.name == "tab":
            try:
                data, text = await self._tab_verb(session, lease, args)
            except Exception as exc:  # a page error (its browser died mid-verb) is typed
                refusal = page_error(verb.name, timeout, exc)
                if refusal is None:
                    raise
                raise refusal from None
        else:
            tab = await self.leases.current_tab(session, lease)
            act = Act(
                verb.name, args, lease, tab, deadline, self.plugins, self.paths.state / "shots"
            )
            act.trace = self._recorder(act, row)
            try:
                if act.trace is not None and verb.name not in ELEMENT_VERBS:
                    await act.trace.take_before()  # an element's verb: once it is found
                data, text = await HANDLERS[verb.name](act)
            except Refusal:
                raise
            except Exception as exc:
                refusal = page_error(verb.name, timeout, exc)
                if refusal is None:
                    raise
                raise refusal from None
            finally:
                with contextlib.suppress(Exception):
                    await self.leases.persist(session, lease)
                if act.trace is not None:  # not reached when the verb was cut
                    act.trace.start_after(lease.trace)
        await self.leases.persist(session, lease)
        return data, text, lease.profile

    def _recorder(self, act: Act, row: ProviderRow | None) -> Recorder | None:
        """Frames for ``bay_action_traced``, only when some plugin implements it."""
        if act.verb not in TRACED_VERBS or not self.plugins.hooks.traces_actions():
            return None
        recorder = Recorder(
            act.verb,
            act.args,
            act.lease.profile,
            act.tab.id,
            act.page,
            act.deadline,
            screenshots=row is None or row.capabilities.screenshots,
        )
        pending = PENDING.get()
        if pending is not None:
            pending.append(recorder)
        return recorder

    def _traced(self, call: VerbCall, outcome: VerbOutcome, trace: ActionTrace) -> None:
        self.plugins.hooks.bay_action_traced(call=call, outcome=outcome, trace=trace)

    # -- housekeeping -------------------------------------------------------------------

    async def tick(self) -> None:
        """Idle sessions lose their browsers (tabs kept for restore); idle browsers stop. A
        session with a verb in flight is never idle."""
        for session in list(self.sessions.values()):
            if session.lock.locked() or not self._idle(session):
                continue
            if any(pid in self.restarting for pid in session.leases):
                continue  # its browser is being switched: the switch owns its leases now
            async with session.lock:
                if not self._idle(session):  # a verb came in while we waited
                    continue
                running = session.running_leases
                if not running:
                    if not session.targets:  # a window it holds keeps its lease object
                        self.sessions.pop(session.ref.id, None)  # back at its next verb
                    continue
                log.info(
                    "session %s idle for %.0fs: closing its browser",
                    session.ref.id,
                    self.settings.idle_timeout,
                )
                for lease in running:
                    await self.leases.end(session, lease, "idle")
        await self.pool.stop_idle(self.settings.browser_grace)

    def _idle(self, session: Session) -> bool:
        return time.monotonic() - session.last_used > self.settings.idle_timeout
