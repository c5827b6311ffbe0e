"""Who holds a lease's controls: the agent, or a human who took over in a live view.

A takeover (or a handoff the agent asked for) pauses the whole browser: every lease on the
taken profile — the taken session's and every other session's sharing that browser — holds
the one pause. Their next page, tab and plugin verbs are refused ``browser_paused`` (naming
who holds it); the verbs running on any of them at that instant are cut and answered
``browser_interrupted``, naming what was cut and whether it may already have reached the
page; the script each of its pages runs is stopped (:mod:`browserbay.keeper.brakes`). The
human's input counts as activity for the idle timeout of every session on that browser. The
handback (explicit, or after ``BAY_HANDBACK_IDLE`` seconds without the human's input) gives
the controls back to all of them, and each session's next answer carries a one-time notice:
where its tab is now, what to run again, and the human's note when they left one.
A window's target lease is paused alone.

:class:`Controls` is the :class:`browserbay.model.LiveHost` the keeper hands live-view
transports.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import anyio

from browserbay import verbs
from browserbay.keeper.approvals import Approvals
from browserbay.keeper.brakes import Brakes
from browserbay.keeper.dialogs import Dialogs
from browserbay.keeper.memory import Measure, MemoryWatch
from browserbay.keeper.pause import Inflight, Pause
from browserbay.keeper.sessions import Lease, Session, Tab
from browserbay.model import (
    LeaseStatus,
    LiveTab,
    LiveTransport,
    LiveViewer,
    PageDialog,
    PauseInfo,
    Pending,
    PendingApproval,
)
from browserbay.refusals import Refusal, clip

if TYPE_CHECKING:
    from browserbay.plugins import Plugins

log = logging.getLogger("browserbay.keeper")
T = TypeVar("T")

_WHY = {
    "explicit": "the human handed the controls back",
    "idle": "the human gave no input for {idle:g}s, so the controls came back to you",
    "timeout": "nobody handed the controls back within your --wait; they are yours again",
}
#: How long the handback may read the paused tabs' titles (seconds, all at once).
TITLE_LIMIT = 1.0
#: The most characters of a human's hand-back note the agent is told (it is never logged).
NOTE_SHOWN = 300


class TabDesk(Protocol):
    """The tab actions of a human in the live page (browserbay.keeper.humantabs)."""

    def browser_tabs(self, lease: Lease) -> list[LiveTab]: ...

    async def close(self, session: Session, lease: Lease, tab_id: str) -> bool: ...

    async def resume(self, session: Session, lease: Lease) -> int: ...


def _by(pause: Pause, session_id: str, owner: bool = True) -> str:
    """Who holds the controls, as the refusals of ``session_id`` name it: the taken
    session's own words, or — to another session on the same browser — with the session
    whose lease was taken. Not ``owner`` (a session socket's request): another session is
    ``another session``, never its id nor its handoff's reason (an agent behind a session
    socket learns no other session's name)."""
    if session_id == pause.session or not pause.session:
        return pause.by
    if not owner:
        if pause.origin == "handoff":
            return "a handoff another session asked for"
        return f"{pause.by}, in the live view of another session"
    if pause.origin == "handoff":
        return f"a handoff session {pause.session} asked for" + (
            f": {pause.reason}" if pause.reason else ""
        )
    return f"{pause.by}, in the live view of session {pause.session}"


def make_transports(plugins: Plugins, host: Controls) -> list[LiveTransport]:
    """Each live-view transport row's factory, called once. A factory that fails is logged
    and skipped: a broken live view must not keep the keeper from serving."""
    made: list[LiveTransport] = []
    for kind, row in plugins.transports.items():
        if row.factory is None:
            continue
        try:
            made.append(row.factory(host))
        except Exception:
            log.exception("the live-view transport %r failed to start; carrying on", kind)
    return made


class Controls:
    def __init__(
        self,
        plugins: Plugins,
        sessions: dict[str, Session],
        handback_idle: float = 300.0,
        dialogs: Dialogs | None = None,
        brakes: Brakes | None = None,
        memory: MemoryWatch | None = None,
        approvals: Approvals | None = None,
        desk: TabDesk | None = None,
        closer: Callable[[Session, Lease], Awaitable[int]] | None = None,
    ):
        self.plugins = plugins
        self.sessions = sessions
        #: Seconds without the driving human's input after which the controls go back.
        self.handback_idle = handback_idle
        #: The dialogs open on the tabs a viewer sees (None: a keeper without dialogs).
        self.dialogs = dialogs
        #: Stops the scripts of a taken browser's pages (None: a keeper without browsers).
        self.brakes = brakes
        #: Each browser's memory as last measured (None: not measured).
        self.memory = memory
        #: Profile id -> the pause holding its browser: a lease on it that the takeover
        #: did not find (a session that came to the profile meanwhile) joins at its verb.
        self._paused: dict[str, Pause] = {}
        #: (session id, profile id) -> the live-view pages open on that lease.
        self._viewers: dict[tuple[str, str], dict[str, LiveViewer]] = {}
        #: The live page's tab strip and Resume (None: a keeper without them).
        self.desk = desk
        #: The actions waiting for a human's approval (an approval gate's Ask).
        self.approvals = approvals if approvals is not None else Approvals()
        #: Ends one lease as ``bay close --profile`` does (``Leases.close``): the owner's
        #: dashboard stops a session with it (None: a keeper without leases).
        self.closer = closer

    # -- the keeper's side --------------------------------------------------------------

    def check(self, lease: Lease, exempt: bool, owner: bool = True) -> None:
        """Refuse a verb on a paused lease — a lease on a browser a human holds (before
        anything runs). ``owner``: the request came on the owner's channel, which is told
        which session's lease was taken; a session socket's is told ``another session``."""
        pause = self._pause_of(lease)
        if pause is None or exempt:
            return
        own = pause.session == lease.session.id or owner
        raise Refusal(
            "browser_paused",
            profile=lease.handle,
            of=lease.controls_of,
            by=_by(pause, lease.session.id, owner),
            since=time.strftime("%H:%M:%S", time.localtime(pause.since)),
            seconds=round(time.time() - pause.since),
            reason=pause.reason if own else "",
            origin=pause.origin,
            session=pause.session if own else "another session",
        )

    def _pause_of(self, lease: Lease) -> Pause | None:
        """The lease's pause; a browser lease without one joins its browser's (a session
        that came to a taken profile after the takeover)."""
        pause = lease.control.pause
        if pause is not None or lease.window is not None:
            return pause
        held = self._paused.get(lease.profile.id)
        if held is None or held.released.is_set():
            return None
        lease.control.hold(held)
        return held

    def _browser_leases(self, lease: Lease) -> list[Lease]:
        """The taken lease first, then every other session's lease on the same browser (a
        window's target lease: itself alone)."""
        if lease.window is not None:
            return [lease]
        others = [
            other
            for session in self.sessions.values()
            for other in session.leases.values()
            if other is not lease and other.profile.id == lease.profile.id
        ]
        return [lease, *others]

    def _members(self, pause: Pause) -> list[tuple[Session, Lease]]:
        """Every lease holding ``pause``, with its session."""
        return [
            (session, lease)
            for session in self.sessions.values()
            for lease in [*session.leases.values(), *session.targets.values()]
            if lease.control.pause is pause
        ]

    async def run(
        self,
        lease: Lease,
        verb: verbs.Verb,
        args: Mapping[str, Any],
        exempt: bool,
        fn: Callable[[], Awaitable[T]],
        owner: bool = True,
    ) -> T:
        """Run a verb on the lease so that a takeover can cut it. ``owner``: it came on the
        owner's channel (the cut names whose lease a human took; else ``another session``)."""
        if exempt:
            return await fn()
        command = verb.command_line(args)
        entry = Inflight(verb.name, command, verb.mutates, anyio.CancelScope(), owner=owner)
        lease.control.track(entry)
        try:
            with entry.scope:
                return await fn()
        except Exception:
            if not entry.cut:
                raise
        finally:
            lease.control.untrack(entry)
        if entry.restart is not None:
            raise Refusal(
                "browser_restarting",
                profile=lease.handle,
                provider=entry.restart,
                cut=entry.command,
                may_have_reached_page=entry.mutates,
            )
        raise self._interrupted(lease, entry)

    @staticmethod
    def cut_for_restart(lease: Lease, provider: str) -> int:
        """Cut the verbs still running on the lease: its browser is about to be stopped
        for a backend switch. Answers how many were cut."""
        cut = 0
        for entry in lease.control.inflight:
            entry.cut, entry.restart = True, provider
            entry.scope.cancel()
            cut += 1
        return cut

    @staticmethod
    def let_go(lease: Lease) -> None:
        """The lease ended: it holds no pause any more. The taken lease's end gives every
        lease on its browser its controls back (a handoff waiting wakes)."""
        lease.control.leave()

    def _interrupted(self, lease: Lease, entry: Inflight) -> Refusal:
        pause = lease.control.pause
        if pause is not None:
            pause.cut(lease.session.id, entry.command)
        reached = (
            "it may already have reached the page: look before running it again"
            if entry.mutates
            else "it only reads, so it changed nothing"
        )
        return Refusal(
            "browser_interrupted",
            verb=entry.verb,
            profile=lease.handle,
            of=lease.controls_of,
            by=(
                _by(pause, lease.session.id, entry.owner)
                if pause is not None
                else "a human in the live view"
            ),
            reached=reached,
            may_have_reached_page=entry.mutates,
            command=entry.command,
        )

    # -- the live view's side (browserbay.model.LiveHost) -------------------------------

    def lease(self, session_id: str, profile_id: str) -> Lease | None:
        """The session's lease on a profile, or on a target (a window: ``w1``)."""
        session = self.sessions.get(session_id)
        if session is None:
            return None
        return session.leases.get(profile_id) or session.targets.get(profile_id)

    def _find(self, session_id: str, profile_id: str) -> tuple[Session, Lease]:
        session = self.sessions.get(session_id)
        lease = self.lease(session_id, profile_id)
        if session is None or lease is None:
            raise KeyError(f"session {session_id} holds no lease on {profile_id}")
        return session, lease

    def take_over(
        self, session_id: str, profile_id: str, viewer: str | None, reason: str = ""
    ) -> PauseInfo:
        _session, lease = self._find(session_id, profile_id)
        now = time.monotonic()
        pause = self._pause_of(lease)
        if pause is not None:
            if viewer is None or pause.holder == viewer:
                return pause.info()
            if pause.holder is not None:
                raise Refusal(
                    "browser_paused",
                    profile=lease.handle,
                    of=lease.controls_of,
                    by=_by(pause, session_id),
                    since=time.strftime("%H:%M:%S", time.localtime(pause.since)),
                    holder=pause.holder,
                )
            pause.holder, pause.claimed = viewer, now
            self._touch(pause, now)
            self._stop_scripts(pause)
            self.plugins.hooks.bay_takeover(lease=lease.info(), viewer=viewer)
            return pause.info()
        if viewer is None:
            by = "a handoff you asked for" + (f": {reason}" if reason else "")
            pause = Pause("handoff", by, reason, time.time(), now, session=session_id)
        else:
            by = f"a human in the live view ({viewer})"
            pause = Pause("takeover", by, reason, time.time(), now, viewer, now, session=session_id)
        members = self._browser_leases(lease)
        for member in members:
            member.control.hold(pause)
        if lease.window is None:
            self._paused[lease.profile.id] = pause
        for member in members:
            for entry in member.control.inflight:
                entry.cut = True
                entry.scope.cancel()
        if viewer is not None:
            self._touch(pause, now)
        self._stop_scripts(pause)
        if viewer is not None:
            self.plugins.hooks.bay_takeover(lease=lease.info(), viewer=viewer)
        return pause.info()

    def _stop_scripts(self, pause: Pause) -> None:
        """Stop the script every page of the paused browser runs (a busy loop the agent
        started must not keep the human from their page)."""
        if self.brakes is None:
            return
        pages = [
            tab.page
            for _session, lease in self._members(pause)
            if lease.window is None
            for tab in lease.tabs.values()
        ]
        self.brakes.stop(pages)

    def release(self, session_id: str, profile_id: str, viewer: str) -> None:
        lease = self.lease(session_id, profile_id)
        pause = self._pause_of(lease) if lease is not None else None
        if pause is not None and pause.holder == viewer:
            pause.holder = None

    async def hand_back(
        self, session_id: str, profile_id: str, viewer: str, why: str, note: str = ""
    ) -> bool:
        _session, lease = self._find(session_id, profile_id)
        pause = self._pause_of(lease)
        if pause is None:
            return False
        if why == "explicit" and pause.holder not in (None, viewer):
            raise Refusal(
                "browser_paused",
                profile=lease.handle,
                of=lease.controls_of,
                by=_by(pause, session_id),
                since=time.strftime("%H:%M:%S", time.localtime(pause.since)),
                holder=pause.holder,
            )
        # The titles of the paused sessions' tabs, read while the pause still holds: once
        # it is let go the agents' verbs run, and their next answer must carry the notice.
        titles = await self._titles(self._members(pause))
        if self._pause_of(lease) is not pause:
            return False  # handed back meanwhile (the human's click and the idle clock)
        members = self._members(pause)
        lease.control.release()  # every lease holding it
        if self._paused.get(lease.profile.id) is pause:
            del self._paused[lease.profile.id]
        said = " ".join(note.split())  # one line; typed by the human: never logged
        # The agents could not act while paused: their idle clocks start again now (a session
        # never idles out in the moment it gets its controls back, its notice unread).
        self._touch(pause, time.monotonic(), members)
        for session, member in members:
            session.notices.append(self._notice(pause, session, member, why, titles))
            if said and why == "explicit":
                session.notices.append(f'the human handed back: "{clip(said, NOTE_SHOWN)}"')
        self.plugins.hooks.bay_handback(lease=lease.info(), viewer=viewer)
        return True

    @staticmethod
    async def _titles(members: list[tuple[Session, Lease]]) -> dict[str, str]:
        """Tab id -> title of each member's current tab, read at once, all bounded by
        :data:`TITLE_LIMIT` (a page that does not answer is named by its URL alone)."""
        tabs = [
            tab
            for _session, lease in members
            if lease.window is None and (tab := lease.tabs.get(lease.current or "")) is not None
        ]
        titles: dict[str, str] = {}

        async def read(tab: Tab) -> None:
            titles[tab.id] = await tab.title()

        with anyio.move_on_after(TITLE_LIMIT):
            async with anyio.create_task_group() as tg:
                for tab in tabs:
                    tg.start_soon(read, tab)
        return titles

    def _notice(
        self, pause: Pause, session: Session, lease: Lease, why: str, titles: dict[str, str]
    ) -> str:
        """What the handback tells one paused session: why, where its tab is now, what was
        cut, and that its references may be stale."""
        words = _WHY.get(why, "the controls came back to you ({why})").format(
            idle=self.handback_idle, why=why
        )
        window = lease.window
        if window is not None:
            what = f"window {window.handle}"
            where = f"your window {window.handle} is “{clip(window.title)}”"
            fresh = f"bay window snapshot {window.handle} -i"
        else:
            tab = lease.tabs.get(lease.current) if lease.current else None
            what = f"profile {lease.handle}"
            if session.ref.id != pause.session:  # never its id: it may be on a session socket
                what += ", taken in the live view of another session"
            title = titles.get(tab.id, "") if tab is not None else ""
            where = (
                f"your current tab {tab.id} is at {clip(tab.page.url)}"
                + (f" (“{clip(title)}”)" if title else "")
                if tab is not None
                else "your browser has no tab open"
            )
            fresh = "bay snapshot -i"
        notice = f"{words} ({what}, after {round(time.time() - pause.since)}s); {where}"
        cut = pause.interrupted.get(session.ref.id)
        if cut:
            notice += "; run again what was cut: " + ", ".join(cut)
        return notice + f"; references from before the pause may be stale: {fresh} first"

    def note_input(self, session_id: str, profile_id: str) -> None:
        lease = self.lease(session_id, profile_id)
        pause = self._pause_of(lease) if lease is not None else None
        if pause is None:
            return
        pause.last_input = now = time.monotonic()
        self._touch(pause, now)  # the human is using their browser

    def _touch(
        self, pause: Pause, now: float, members: list[tuple[Session, Lease]] | None = None
    ) -> None:
        """Activity for the idle timer of every session the pause holds: a human's input, a
        human taking the controls (pressing Take over is input too), the handback."""
        for session, _lease in members if members is not None else self._members(pause):
            session.last_used = max(session.last_used, now)

    # -- who holds what (bay status, the live pages, an owner's dashboard) -------------

    def viewing(self, session_id: str, profile_id: str, viewer: LiveViewer, on: bool) -> None:
        key = (session_id, profile_id)
        if on:
            self._viewers.setdefault(key, {})[viewer.id] = viewer
            return
        open_ = self._viewers.get(key)
        if open_ is not None:
            open_.pop(viewer.id, None)
            if not open_:
                del self._viewers[key]

    def status_of(self, lease: Lease) -> LeaseStatus:
        """Who holds what on ``lease``: the one place ``bay status`` and the live view read
        it."""
        pause = self._pause_of(lease)
        measure = self.memory.of(lease) if self.memory is not None else Measure(None, False)
        key = (lease.session.id, lease.profile.id)
        return LeaseStatus(
            session=lease.session.id,
            profile=lease.profile.id,
            handle=lease.handle,
            input_holder="user" if pause is not None else "agent",
            driver=pause.holder if pause is not None else None,
            viewers=tuple(self._viewers.get(key, {}).values()),
            pause=pause.info() if pause is not None else None,
            pss_kib=measure.pss_kib,
            memory_over=measure.over,
        )

    def status(self, session_id: str, profile_id: str) -> LeaseStatus | None:
        lease = self.lease(session_id, profile_id)
        return self.status_of(lease) if lease is not None else None

    def statuses(self) -> list[LeaseStatus]:
        return [
            self.status_of(lease)
            for session in list(self.sessions.values())
            for lease in [*session.leases.values(), *session.targets.values()]
        ]

    async def stop_lease(self, session_id: str, profile_id: str) -> bool:
        """The owner stops a session's lease from the dashboard: a pause on it is let go
        (nobody's takeover outlives the lease), then it ends as ``bay close --profile``
        ends it (its tabs kept for ``bay resume``). False when it held no browser."""
        session, lease = self._find(session_id, profile_id)
        if self.closer is None or lease.window is not None or lease.context is None:
            return False
        self.let_go(lease)
        await self.closer(session, lease)
        return True

    async def expire_idle(self) -> None:
        now = time.monotonic()
        for session in list(self.sessions.values()):
            for lease in [*session.leases.values(), *session.targets.values()]:
                pause = lease.control.pause
                if pause is None or pause.claimed is None:
                    continue  # a handoff nobody has taken up yet waits for its --wait
                last = max(pause.claimed, pause.last_input or 0.0)
                if now - last > self.handback_idle:
                    log.info(
                        "handing %s back to %s: the human went idle", lease.handle, session.ref.id
                    )
                    await self.hand_back(
                        session.ref.id, lease.profile.id, pause.holder or "-", "idle"
                    )

    # -- the live page's tab strip and Resume ------------------------------------------

    def tabs(self, session_id: str, profile_id: str) -> list[LiveTab]:
        lease = self.lease(session_id, profile_id)
        if lease is None or self.desk is None:
            return []
        return self.desk.browser_tabs(lease)

    async def close_tab(self, session_id: str, profile_id: str, tab_id: str) -> bool:
        session, lease = self._find(session_id, profile_id)
        return self.desk is not None and await self.desk.close(session, lease, tab_id)

    async def resume_tabs(self, session_id: str, profile_id: str) -> int:
        session, lease = self._find(session_id, profile_id)
        return 0 if self.desk is None else await self.desk.resume(session, lease)

    def dialogs_of(self, session_id: str, profile_id: str) -> dict[str, PageDialog]:
        lease = self.lease(session_id, profile_id)
        if lease is None or self.dialogs is None:
            return {}
        return self.dialogs.open_on(lease.tabs)

    async def answer_dialog(
        self,
        session_id: str,
        profile_id: str,
        tab_id: str,
        accept: bool,
        text: str | None,
        viewer: str,
    ) -> bool:
        """Answered by a human with a control link; they need not hold the controls: the
        dialog stops the agent's page as much as theirs."""
        lease = self.lease(session_id, profile_id)
        if lease is None or self.dialogs is None:
            return False
        who = f"a human in the live view ({viewer})"
        return await self.dialogs.answer_by(lease.tabs, tab_id, accept, text, who)

    # -- what waits on a human: approvals, and the dashboard's status --------------------

    def approvals_of(self, session_id: str, profile_id: str) -> list[PendingApproval]:
        return self.approvals.of(session_id, profile_id)

    def answer_approval(
        self, session_id: str, profile_id: str, approval_id: str, approve: bool, viewer: str
    ) -> bool:
        """Answered by a human with a control link, driving or not (as a dialog is)."""
        return self.approvals.answer(
            session_id, profile_id, approval_id, approve, f"a human in the live view ({viewer})"
        )

    def pending(self) -> list[Pending]:
        approvals: dict[tuple[str, str], list[PendingApproval]] = {}
        for each in self.approvals.all():
            approvals.setdefault((each.session, each.profile), []).append(each)
        found: list[Pending] = []
        for session in list(self.sessions.values()):
            for lease in session.leases.values():
                key = (session.ref.id, lease.profile.id)
                dialogs = self.dialogs.open_on(lease.tabs) if self.dialogs is not None else {}
                asked = approvals.pop(key, [])
                if dialogs or asked:
                    found.append(Pending(*key, tuple(dialogs.values()), tuple(asked)))
        return found

    async def wait_handback(self, session_id: str, profile_id: str, timeout: float) -> bool:
        lease = self.lease(session_id, profile_id)
        pause = self._pause_of(lease) if lease is not None else None
        if pause is None:
            return True
        with anyio.move_on_after(max(0.0, timeout)):
            await pause.released.wait()
            return True
        return False
