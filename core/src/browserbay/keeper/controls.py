"""Who holds a lease's controls: the agent, or a human who took over in a live view.

A takeover (or a handoff the agent asked for) pauses the lease: the agent's next page, tab
and plugin verbs on it are refused ``browser_paused``; the verbs running on it at that
instant are cut and answered ``browser_interrupted``, naming what was cut and whether it may
already have reached the page. The handback (explicit, or after ``BAY_HANDBACK_IDLE``
seconds without the human's input) gives the controls back, and the agent's next answer
carries a one-time notice: where its tab is now and what to run again.

:class:`Controls` is the :class:`browserbay.model.LiveHost` the keeper hands live-view
transports.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from browserbay import verbs
from browserbay.keeper.dialogs import Dialogs
from browserbay.keeper.pause import Inflight, Pause
from browserbay.keeper.sessions import Lease, Session
from browserbay.model import LiveTransport, PageDialog, PauseInfo
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
    ):
        self.plugins = plugins
        self.sessions = sessions
        #: Seconds without the driving human's input after which the controls go back.
        self.handback_idle = handback_idle
        #: The dialogs open on the tabs a viewer sees (None: a keeper without dialogs).
        self.dialogs = dialogs

    # -- the keeper's side --------------------------------------------------------------

    def check(self, lease: Lease, exempt: bool) -> None:
        """Refuse a verb on a paused lease (before anything runs)."""
        pause = lease.control.pause
        if pause is None or exempt:
            return
        raise Refusal(
            "browser_paused",
            profile=lease.handle,
            of=lease.controls_of,
            by=pause.by,
            since=time.strftime("%H:%M:%S", time.localtime(pause.since)),
            seconds=round(time.time() - pause.since),
            reason=pause.reason,
            origin=pause.origin,
        )

    async def run(
        self,
        lease: Lease,
        verb: verbs.Verb,
        args: Mapping[str, Any],
        exempt: bool,
        fn: Callable[[], Awaitable[T]],
    ) -> T:
        """Run a verb on the lease so that a takeover can cut it."""
        if exempt:
            return await fn()
        entry = Inflight(verb.name, verb.command_line(args), verb.mutates, anyio.CancelScope())
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
        """The lease ended: nobody holds its controls any more (a handoff waiting wakes)."""
        lease.control.release()

    def _interrupted(self, lease: Lease, entry: Inflight) -> Refusal:
        pause = lease.control.pause
        if pause is not None and entry.command not in pause.interrupted:
            pause.interrupted.append(entry.command)
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
            by=pause.by if pause is not None else "a human in the live view",
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
        pause = lease.control.pause
        if pause is not None:
            if viewer is None or pause.holder == viewer:
                return pause.info()
            if pause.holder is not None:
                raise Refusal(
                    "browser_paused",
                    profile=lease.handle,
                    of=lease.controls_of,
                    by=pause.by,
                    since=time.strftime("%H:%M:%S", time.localtime(pause.since)),
                    holder=pause.holder,
                )
            pause.holder, pause.claimed = viewer, now
            self.plugins.hooks.bay_takeover(lease=lease.info(), viewer=viewer)
            return pause.info()
        if viewer is None:
            by = "a handoff you asked for" + (f": {reason}" if reason else "")
            pause = Pause("handoff", by, reason, time.time(), now)
        else:
            by = f"a human in the live view ({viewer})"
            pause = Pause("takeover", by, reason, time.time(), now, viewer, now)
        lease.control.hold(pause)
        for entry in lease.control.inflight:
            entry.cut = True
            entry.scope.cancel()
        if viewer is not None:
            self.plugins.hooks.bay_takeover(lease=lease.info(), viewer=viewer)
        return pause.info()

    def release(self, session_id: str, profile_id: str, viewer: str) -> None:
        lease = self.lease(session_id, profile_id)
        pause = lease.control.pause if lease is not None else None
        if pause is not None and pause.holder == viewer:
            pause.holder = None

    def hand_back(self, session_id: str, profile_id: str, viewer: str, why: str) -> bool:
        session, lease = self._find(session_id, profile_id)
        pause = lease.control.pause
        if pause is None:
            return False
        if why == "explicit" and pause.holder not in (None, viewer):
            raise Refusal(
                "browser_paused",
                profile=lease.handle,
                of=lease.controls_of,
                by=pause.by,
                since=time.strftime("%H:%M:%S", time.localtime(pause.since)),
                holder=pause.holder,
            )
        lease.control.release()
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
            where = (
                f"your current tab {tab.id} is at {clip(tab.page.url)}"
                if tab is not None
                else "your browser has no tab open"
            )
            fresh = "bay snapshot -i"
        notice = f"{words} ({what}, after {round(time.time() - pause.since)}s); {where}"
        if pause.interrupted:
            notice += "; run again what was cut: " + ", ".join(pause.interrupted)
        notice += f"; references from before the pause may be stale: {fresh} first"
        session.notices.append(notice)
        self.plugins.hooks.bay_handback(lease=lease.info(), viewer=viewer)
        return True

    def note_input(self, session_id: str, profile_id: str) -> None:
        lease = self.lease(session_id, profile_id)
        pause = lease.control.pause if lease is not None else None
        if pause is not None:
            pause.last_input = time.monotonic()

    def expire_idle(self) -> None:
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
                    self.hand_back(session.ref.id, lease.profile.id, pause.holder or "-", "idle")

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

    async def wait_handback(self, session_id: str, profile_id: str, timeout: float) -> bool:
        lease = self.lease(session_id, profile_id)
        pause = lease.control.pause if lease is not None else None
        if pause is None:
            return True
        with anyio.move_on_after(max(0.0, timeout)):
            await pause.released.wait()
            return True
        return False
