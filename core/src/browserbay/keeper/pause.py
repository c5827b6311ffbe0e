"""A lease's controls as data: the pause a human (or a handoff) holds and the verbs running on
it, which a takeover cuts.

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
    interrupted: list[str] = field(default_factory=list)
    released: anyio.Event = field(default_factory=anyio.Event)

    def info(self) -> PauseInfo:
        return PauseInfo(self.origin, self.by, self.reason, self.since, self.holder)


@dataclass
class Inflight:
    verb: str
    command: str
    mutates: bool
    scope: anyio.CancelScope
    cut: bool = False
    restart: str | None = None
    """Cut by a backend switch to this provider (not by a human): browser_restarting."""


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
        self._pause = pause

    def release(self) -> Pause | None:
        """Nobody holds the controls any more; a handoff waiting wakes. Answers the pause
        that ended (None: there was none)."""
        pause, self._pause = self._pause, None
        if pause is not None:
            pause.released.set()
        return pause

    def track(self, entry: Inflight) -> None:
        self._inflight[id(entry)] = entry

    def untrack(self, entry: Inflight) -> None:
        self._inflight.pop(id(entry), None)
