"""The keeper's request path: validates a request, finds the session and the lease it acts
on, runs the verb's handler (:mod:`browserbay.keeper.route`) under its deadline, calls the
lifecycle hooks and answers. One instance per daemon, built by :mod:`browserbay.keeper.app`."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

from browserbay import verbs
from browserbay.keeper.act import Act
from browserbay.keeper.approvals import behind_asking, lock_let_go
from browserbay.keeper.audit import AuditTrail
from browserbay.keeper.base import RestartGate
from browserbay.keeper.browsers import BrowserPool
from browserbay.keeper.channels import OWNER, Channel, admit
from browserbay.keeper.children import Children
from browserbay.keeper.choosing import READ_CLOCK, LeaseChooser
from browserbay.keeper.continuous import Continuous
from browserbay.keeper.controls import Controls
from browserbay.keeper.dialogs import Dialogs
from browserbay.keeper.faults import disk_full, is_disk_full
from browserbay.keeper.files import Carried, Carrier, party_of
from browserbay.keeper.forward import ANSWERED, ForwardCall, Forwarder, Replace
from browserbay.keeper.frames import ELEMENT_VERBS, PENDING, TRACED_VERBS, Recorder, bare_url
from browserbay.keeper.leases import Leases
from browserbay.keeper.link import forwarded
from browserbay.keeper.memory import MemoryWatch
from browserbay.keeper.pageverbs import page_error
from browserbay.keeper.recorder import Recordings
from browserbay.keeper.requests import _context, _redact, _validate
from browserbay.keeper.roads import Guards, frame_road
from browserbay.keeper.roster import Roster
from browserbay.keeper.route import (
    Check,
    Handler,
    LeaseCall,
    OnKeeper,
    OnKeeperAsked,
    OnLease,
    OnPage,
    OnPlugin,
    OnSession,
    SessionAnswer,
    SessionCall,
    VerbRoute,
)
from browserbay.keeper.sessions import Lease, Session, TabBook
from browserbay.keeper.targets import TargetBook
from browserbay.keeper.verbhost import LeaseVerbHost
from browserbay.model import (
    ActionTrace,
    Ask,
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
from browserbay.registry import Db, KeptTabs
from browserbay.settings import BaySettings

log = logging.getLogger("browserbay.keeper")
#: How long undoing a verb answered ``deadline`` may take (closing the tabs it opened).
UNDO_LIMIT = 10.0


def acts_on_pages(handler: Handler) -> bool:
    """A verb that acts on the session's tabs (a page verb, a tab verb, a plugin's verb that
    a takeover pauses) — not one of its session verbs (``status``, ``close``) or a plugin's
    that works while paused (``live``, ``handoff``)."""
    if isinstance(handler, OnPlugin):
        return not handler.verb.while_paused
    return isinstance(handler, (OnPage, OnLease))


def _holdings(session: Session) -> tuple[set[str], set[str]]:
    """The session's tabs and the profiles its running leases are on, now."""
    tabs = {t for lease in session.leases.values() for t in lease.tabs}
    return tabs, {pid for pid, lease in session.leases.items() if lease.context is not None}


class Keeper:
    def __init__(
        self,
        plugins: Plugins,
        kept_tabs: KeptTabs,
        db: Db,
        paths: BayPaths,
        route: VerbRoute,
        roster: Roster,
        chooser: LeaseChooser,
        tabs: TabBook,
        leases: Leases,
        controls: Controls,
        guards: Guards,
        audit: AuditTrail,
        carrier: Carrier,
        dialogs: Dialogs,
        recordings: Recordings | None = None,
        continuous: Continuous | None = None,
        forward: Forwarder | None = None,
    ) -> None:
        self.plugins = plugins
        self.kept_tabs = kept_tabs
        self.db = db
        self.paths = paths
        self.route = route
        self.roster = roster
        self.chooser = chooser
        self.tabs = tabs
        self.leases = leases
        self.controls = controls
        self.guards = guards
        self.audit = audit
        #: Where the files requests send and answer are staged (browserbay.keeper.files).
        self.carrier = carrier
        self.dialogs = dialogs
        #: Each lease's recording (bay record).
        self.recordings = recordings if recordings is not None else Recordings()
        #: Verbs on profiles whose browsers run on another keeper (None: a keeper alone).
        self.forward = forward
        #: The owner's continuous recording of opted-in profiles (None: a keeper without).
        self.continuous = continuous

    # -- requests ---------------------------------------------------------------------

    async def handle(
        self, frame: dict[str, Any], channel: Channel = OWNER, files: Carried | None = None
    ) -> dict[str, Any]:
        """Answer one request frame that came in on ``channel``; ``files``: its connection's
        (the daemon's; None: a road without a connection, whose verbs get a book of their own
        that goes with the answer)."""
        if files is None:
            # No connection sends it files: its family's share is never walked.
            files = self.carrier.connection(party_of(channel, lambda _session: None))
            try:
                return await self.handle(frame, channel, files)
            finally:
                with anyio.CancelScope(shield=True):
                    await files.close()
                    await self.audit.flush()  # no connection sends the answer: now
        if channel.link is not None and channel.link.session is None:
            # Another keeper's request: as the origin's session, confined to its scope.
            try:
                frame, channel = forwarded(frame, channel)
            except Refusal as r:
                return dict(r.frame(), id=frame.get("id"))
        rid = frame.get("id")
        started = time.monotonic()
        call: VerbCall | None = None
        traces: list[Recorder] = []  # the actions' frames, for bay_action_traced
        PENDING.set(traces)
        answered: list[str] = []  # the keepers that ran a forwarded verb (and audited it)
        answering = ANSWERED.set(answered)
        try:
            verb, args, ref, timeout = _validate(frame, self.route.table)
            handle, group, actor = _context(frame, ref)
            handler = self.route[verb.name]
            session: Session | None = None
            profile: ProfileRef | None = None
            asked = VerbCall(
                verb.name, _redact(verb, args), ref, None, frame_road(frame), channel.actor
            )
            call = asked
            judged = [asked]
            # The channel's gate, before anything of the verb runs (audited as asked).
            admit(
                channel,
                verb,
                args,
                session=ref.id,
                actor=actor.id if actor is not None else None,
                group=group,
                handle=handle,
            )

            def check(
                lease: Lease | None = None,
                *,
                held: Lease | None = None,
                exempt: bool = False,
                ending: Sequence[Lease] = (),
                asks: list[Ask] | None = None,
            ) -> None:
                """The guards, once the verb's lease is known (and before it runs)."""
                judged[0] = self.guards.check(
                    asked, lease, held=held, exempt=exempt, ending=ending, asks=asks
                )

            try:
                with anyio.fail_after(timeout) as scope:
                    if isinstance(handler, OnKeeper):
                        # The keeper's own verbs need no session and work whatever state the
                        # sessions and providers are in (`bay keeper stop` always works).
                        check()
                        data, text = await handler.run(args, handle, channel)
                    elif isinstance(handler, OnKeeperAsked):
                        check()
                        data, text = await handler.run(args, handle, channel, ref)
                    else:
                        if self.leases.fleet is not None:  # cut off from the registry: none
                            self.leases.fleet.check_fence()
                        if channel.link is not None:  # another keeper's session: its group
                            group = channel.link.group
                        session = self.roster.session(ref, group)
                        async with session.lock:
                            if acts_on_pages(handler):
                                await behind_asking(session)  # never overtakes an approval
                            held = _holdings(session)
                            try:
                                await self.roster.first_sight(session)
                                session.last_used = time.monotonic()
                                data, text, profile = await self._run(
                                    verb,
                                    handler,
                                    args,
                                    session,
                                    handle,
                                    actor,
                                    started,
                                    timeout,
                                    check,
                                    channel,
                                    files,
                                    asked.road,
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
                            profile = session.said(profile)
                            if self.continuous is not None:  # a tab it opened is recorded
                                self.continuous.sync(session)
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
            # Said once (a restore, a handback…), then every dialog still open on its tabs.
            notices = [*session.notices, *self.dialogs.notices(session.ref.id)] if session else []
            if session is not None and notices:
                answer["notice"] = " · ".join(notices)
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
            # A verb another keeper ran is audited there, once; a part of another keeper's
            # verb (a whole-session close's lease here) is audited by that keeper alone.
            part = channel.link is not None and channel.link.part
            if not answered and not part:
                await self.audit.later(call, ok, code)  # written once the answer has left
        ANSWERED.reset(answering)
        return answer

    def home_dir(self) -> Path:
        """Where this keeper's files live, as a refusal names it."""
        return self.paths.home if self.paths.home is not None else self.paths.state

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

    # -- running a verb -----------------------------------------------------------------

    async def _run(
        self,
        verb: verbs.Verb,
        handler: OnSession | OnLease | OnPage | OnPlugin,
        args: dict[str, Any],
        session: Session,
        handle: str | None,
        actor: SessionRef | None,
        started: float,
        timeout: float,
        check: Check,
        channel: Channel,
        files: Carried,
        road: str,
    ) -> SessionAnswer:
        """``check``: the guards (browserbay.keeper.roads), called once before anything of
        the verb runs, with the lease it acts on when there is one."""
        deadline = started + timeout
        by_other = actor is not None and actor.id != session.ref.id
        if isinstance(handler, OnSession):
            if not handler.ends_leases:
                check()  # on the session, not a lease: only the hooks judge it
            # Its part for a lease whose browser runs on another keeper is run there (never
            # sent on again from a keeper a request was forwarded to).
            there = (
                None
                if channel.link is not None or self.forward is None
                else _There(self, verb, args, session, channel, files, deadline, road)
            )
            return await handler.run(
                SessionCall(
                    verb, args, session, handle, by_other, deadline, check, channel, files, there
                )
            )
        plugin_verb = handler.verb if isinstance(handler, OnPlugin) else None
        exempt = plugin_verb is not None and plugin_verb.while_paused
        # A verb on a target the session holds (a window) is paused and cut on that target's
        # lease, not on the browser's.
        key = plugin_verb.target(args) if plugin_verb and plugin_verb.target else None
        target = session.targets.get(key) if key else None

        async def on(lease: Lease) -> SessionAnswer:
            return await self._on_lease(
                verb, handler, args, session, lease, deadline, timeout, channel, files, road, target
            )

        if plugin_verb is not None and plugin_verb.lease_free:
            # It acts on no profile (bay keys, bay window): no lease is chosen, so neither
            # profile_required nor a browser's pause or restart applies; nothing of a browser
            # starts. A target it names is still guarded by its own lease.
            fresh = f"ep-{session.ref.id}" not in session.leases
            lease = self.chooser.ephemeral(session, "ephemeral", [])
            try:
                check(None, held=target, exempt=exempt)
                if target is None:
                    return await on(lease)
                return await self.controls.run(
                    target, verb, args, exempt, lambda: on(lease), channel.is_owner
                )
            finally:
                if fresh and lease.context is None:  # leave no lease behind it
                    session.leases.pop(lease.profile.id, None)
        READ_CLOCK.set(None)
        lease = await self.chooser.choose(session, handle, channel)
        if channel.link is not None:
            # Another keeper's session: its attachment and the holds, judged again here.
            await self.chooser.forwarded_may(session, lease, channel)
        # Its browser runs on another keeper of the fleet: judged and run there.
        answered = await self.forwarded(
            ForwardCall(
                verb,
                args,
                session,
                lease,
                channel,
                files,
                deadline,
                road,
                clock=READ_CLOCK.get(),
            )
        )
        if answered is not None:
            return answered
        # browser_paused while a human holds the controls, browser_restarting in a backend
        # switch's gap, the approval hooks, the domain fence: nothing has run yet.
        asks: list[Ask] = []
        check(lease, held=target, exempt=exempt, asks=asks)
        guarded = target if target is not None else lease

        async def approved() -> SessionAnswer:
            """A hook's Ask first (in flight: a takeover cuts the wait), then the verb."""
            for ask in asks:
                await self._approve(session, lease, verb, args, ask, deadline)
            return await on(lease)

        return await self.controls.run(guarded, verb, args, exempt, approved, channel.is_owner)

    async def forwarded(self, call: ForwardCall) -> SessionAnswer | None:
        """The verb's answer from the keeper its lease's browser runs on; None: it runs
        here (a keeper alone, an ephemeral browser, a browser here or nowhere)."""
        if self.forward is None:
            return None
        placed = await self.forward.elsewhere(call.lease)
        if placed is None:
            return None
        try:
            return await self.forward.run(placed, call)
        except Replace:
            # A kept placement its keeper did not run the verb on: placed again, once,
            # from the registry (there again, elsewhere, or here).
            placed = await self.forward.elsewhere(call.lease, fresh=True)
        if placed is None:
            return None
        return await self.forward.run(placed, call)

    async def _approve(
        self,
        session: Session,
        lease: Lease,
        verb: verbs.Verb,
        args: dict[str, Any],
        ask: Ask,
        deadline: float,
    ) -> None:
        """Wait for a human's answer to a ``bay_before_verb`` Ask (the session's lock let go
        meanwhile, its page verbs behind it); raise ``approval_denied``/``approval_timeout``.
        The card names the verb as the agent typed it (``command_line``: never typed text)
        and the current tab's address without query."""
        tab = lease.tabs.get(lease.current) if lease.current else None
        url = bare_url(tab.page.url) if tab is not None and lease.context is not None else ""
        async with lock_let_go(session):
            await self.controls.approvals.ask(
                ask,
                session=session.ref.id,
                profile=lease.profile.id,
                tab=tab.id if tab is not None else "",
                verb=verb.name,
                what=verb.command_line(args),
                url=url,
                deadline=deadline,
            )

    async def _on_lease(
        self,
        verb: verbs.Verb,
        handler: OnLease | OnPage | OnPlugin,
        args: dict[str, Any],
        session: Session,
        lease: Lease,
        deadline: float,
        timeout: float,
        channel: Channel,
        files: Carried,
        road: str,
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
        if isinstance(handler, OnPlugin):
            ctx = VerbContext(
                verb=verb.name,
                args=args,
                session=session.ref,
                profile=lease.profile,
                deadline=deadline,
                state_dir=self.paths.state,
                host=LeaseVerbHost(
                    self.leases,
                    self.guards,
                    functools.partial(self.route.run_keeper_verb, channel=channel),
                    session,
                    lease,
                ),
                keys=self.plugins.key_admin,
                lease=lease,
                providers=self.plugins.providers,
                target=target,
                targets=TargetBook(self.plugins, self.roster.by_id, session),
                channel_session=channel.session,
            )
            data, text = await handler.verb.handler(ctx)
            return data, text, lease.profile
        if lease.context is None:
            # Tabs kept by an automatic stop come back with the session's next verb, even
            # one that would not start a browser by itself (`tab list`).
            state, kept = await self.db(self.kept_tabs.kept, session.ref.id, lease.profile.id)
            if kept and state in ("auto", "live"):
                await self.leases.ensure(session, lease)
        if isinstance(handler, OnLease):
            data, text = await handler.run(
                LeaseCall(verb, args, session, lease, deadline, timeout, channel)
            )
        else:
            tab = await self.leases.current_tab(session, lease)
            act = Act(
                verb.name,
                args,
                lease,
                tab,
                deadline,
                self.plugins,
                self.paths.state / "shots",
                files,
                self.leases.downloads,
                self.leases.pool.devices,
                road=road,
                actor=channel.actor,
                approvals=self.controls.approvals,
                let_go=functools.partial(lock_let_go, session),
                recordings=self.recordings,
                notify=session.notices.append,
            )
            await lease.emulation.apply(tab.page)  # a tab that opened by itself (a popup)
            act.trace = self._recorder(act, row)
            try:
                if act.trace is not None and verb.name not in ELEMENT_VERBS:
                    await act.trace.take_before()  # an element's verb: once it is found
                # A dialog open on the tab refuses it; one it opens answers it at once.
                data, text = await self.dialogs.during(tab, verb.name, lambda: handler.run(act))
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


@dataclasses.dataclass(frozen=True)
class _There:
    """A session verb's part on the keeper a lease's browser runs on
    (:class:`~browserbay.keeper.route.Elsewhere`), for one request."""

    keeper: Keeper
    verb: verbs.Verb
    args: dict[str, Any]
    session: Session
    channel: Channel
    files: Carried
    deadline: float
    road: str

    async def host(self, lease: Lease) -> str | None:
        forward = self.keeper.forward
        if forward is None or lease.profile.ephemeral or lease.context is not None:
            return None
        placed = await forward.elsewhere(lease)
        return placed.keeper.host if placed is not None else None

    async def run(self, lease: Lease, part: bool = False) -> SessionAnswer | None:
        """``part``: a part of this keeper's verb, audited here only (ForwardCall.part)."""
        if lease.profile.ephemeral or lease.context is not None:
            return None  # its browser runs here
        call = ForwardCall(
            self.verb,
            self.args,
            self.session,
            lease,
            self.channel,
            self.files,
            self.deadline,
            self.road,
            part,
        )
        return await self.keeper.forwarded(call)


class Housekeeping:
    """The daemon's tick: idle sessions lose their browsers (tabs kept for restore); idle
    browsers stop."""

    def __init__(
        self,
        roster: Roster,
        leases: Leases,
        pool: BrowserPool,
        gate: RestartGate,
        settings: BaySettings,
        children: Children,
        memory: MemoryWatch | None = None,
    ) -> None:
        self.roster = roster
        self.leases = leases
        self.pool = pool
        self.gate = gate
        self.settings = settings
        self.children = children
        #: Measures each browser's memory at every tick (None: not measured).
        self.memory = memory

    async def tick(self) -> None:
        """A session with a verb in flight is never idle."""
        sessions = self.roster.by_id
        for session in list(sessions.values()):
            if session.lock.locked() or session.asking or not self._idle(session):
                continue
            if any(self.gate.is_restarting(pid) for pid in session.leases):
                continue  # its browser is being switched: the switch owns its leases now
            async with session.lock:
                if not self._idle(session):  # a verb came in while we waited
                    continue
                # Its child sessions are idle too (see _idle): they go, browser or not.
                await self.children.reap(session.ref.id, "was idle")
                running = session.running_leases
                if not running:
                    # A window it holds keeps its lease object; a notice not yet said (a
                    # handback's) keeps the session until its next answer says it.
                    if not session.targets and not session.notices:
                        sessions.pop(session.ref.id, None)  # back at its next verb
                    continue
                log.info(
                    "session %s idle for %.0fs: closing its browser",
                    session.ref.id,
                    self.settings.idle_timeout,
                )
                for lease in running:
                    await self.leases.end(session, lease, "idle")
        await self.pool.stop_idle(self.settings.browser_grace)
        if self.memory is not None:
            await self.memory.tick()

    def _idle(self, session: Session) -> bool:
        """No verb for the idle timeout, and none by any of its child sessions either (a
        parent waiting on its sub-agent is not idle; when it is, its children go with it)."""
        timeout = self.settings.idle_timeout
        return time.monotonic() - session.last_used > timeout and not self.children.busy(
            session.ref.id, timeout
        )
