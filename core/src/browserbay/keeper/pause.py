"""A lease's controls as data: the pause a human (or a handoff) holds and the verbs running on
it, which a takeover cuts.

A pause is the whole browser's: one :class:`Pause` is held by every lease on the profile the
human took (every session sharing that browser) — its ``members`` — and ends for all of them
at once.

:class:`LeaseControl` is one part of a :class:`browserbay.keeper.sessions.Lease`. Its one
writer is :class:`browserbay.keeper.controls.Controls`; everyone else reads it. It sits below
both modules so that a lease can hold its controls without the lease's module knowing the
service that changes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import anyio

from browserbay.model import PauseInfo


@dataclass
class Pause:
    origin: Literal["takeover", "handoff"]
    by: str
    reason: str
    since: float
    """time.time() when it began."""
    started: float
    """time.monotonic() when it began."""
    holder: str | None = None
    claimed: float | None = None
    """time.monotonic() when a viewer took the controls (the idle clock starts)."""
    last_input: float | None = None
    session: str = ""
    """The session whose lease the human took (its live view, its handoff)."""
    interrupted: dict[str, list[str]] = field(default_factory=dict)
    """Session id -> the commands cut in it (run again after the handback)."""
    released: anyio.Event = field(default_factory=anyio.Event)
    members: list[LeaseControl] = field(default_factory=list, repr=False)
    """Every lease's controls holding this pause, the taken lease's first."""

    def info(self) -> PauseInfo:
        return PauseInfo(self.origin, self.by, self.reason, self.since, self.holder, self.session)

    def cut(self, session: str, command: str) -> None:
        """``command`` of ``session`` was cut by this pause (said again at the handback)."""
        mine = self.interrupted.setdefault(session, [])
        if command not in mine:
            mine.append(command)


@dataclass
class Inflight:
    verb: str
    command: str
    mutates: bool
    scope: anyio.CancelScope
    cut: bool = False
    restart: str | None = None
    """Cut by a backend switch to this provider (not by a human): browser_restarting."""
    owner: bool = True
    """It came on the owner's channel, which is told whose lease a human took (a session
    socket's is told ``another session``)."""


class LeaseControl:
    """Who holds one lease's controls, and the verbs running on it now. Changed only by
    :class:`~browserbay.keeper.controls.Controls`: its methods below are that service's."""

    def __init__(self) -> None:
        self._pause: Pause | None = None
        self._inflight: dict[int, Inflight] = {}

    @property
    def pause(self) -> Pause | None:
        """Set while a human holds the controls, or a handoff waits for one."""
        return self._pause

    @property
    def holder(self) -> Literal["agent", "user"]:
        """Who holds the input: the user whenever the lease is paused."""
        return "user" if self._pause is not None else "agent"

    @property
    def inflight(self) -> list[Inflight]:
        """The verbs running on the lease now, oldest first."""
        return list(self._inflight.values())

    def pause_info(self) -> PauseInfo | None:
        return self._pause.info() if self._pause is not None else None

    # -- the writer's side (Controls) ---------------------------------------------------

    def hold(self, pause: Pause) -> None:
        """This lease is paused by ``pause`` (the taken lease, or another on its browser)."""
        self._pause = pause
        if self not in pause.members:
            pause.members.append(self)

    def release(self) -> Pause | None:
        """Nobody holds the controls any more — of any lease holding the same pause; a
        handoff waiting wakes. Answers the pause that ended (None: there was none)."""
        pause = self._pause
        if pause is None:
            return None
        for member in pause.members:
            member._pause = None
        pause.members.clear()
        pause.released.set()
        return pause

    def leave(self) -> None:
        """This lease ended: it no longer holds its pause. The taken lease's end ends the
        pause for every lease (the human's live view of it has ended); another's only
        drops it out."""
        pause = self._pause
        if pause is None:
            return
        if pause.members and pause.members[0] is self:
            self.release()
            return
        self._pause = None
        if self in pause.members:
            pause.members.remove(self)

    def track(self, entry: Inflight) -> None:
        self._inflight[id(entry)] = entry

    def untrack(self, entry: Inflight) -> None:
        self._inflight.pop(id(entry), None)
