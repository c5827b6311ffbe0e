"""The book of windows the keeper knows: the displays, the windows on them and who holds
each (:class:`Windows`, one per keeper). The ``bay window`` actions that read and change it
are in :mod:`browserbay_local_window.windows`; a held window's live view in
:mod:`browserbay_local_window.live`.

A window handle (``w1``, ``w2``…) names one application we started on our display (its
top-level windows, the largest first) or, when ``BAY_WINDOW_DESKTOP=1``, one top-level
window of the user's own desktop (``d1``…, marked ``desktop``). A window is held by at most
one session — the one that opened or attached it — and only its holder acts on it.
"""

from __future__ import annotations

import itertools
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc

from browserbay import procfs
from browserbay.model import LiveLease, LiveWindow, VerbContext
from browserbay.refusals import Refusal
from browserbay_local_window import display as displays
from browserbay_local_window import procs
from browserbay_local_window.display import Display, DisplayError
from browserbay_local_window.names import PROVIDER
from browserbay_local_window.settings import Settings
from browserbay_local_window.x11 import TopLevel, XError

log = logging.getLogger("browserbay.local_window")

#: How long one X call may take.
X_TIMEOUT = 5.0


@dataclass
class Window:
    handle: str
    display: Display
    program: str
    kind: str  # app | browser | desktop
    proc: anyio.abc.Process | None = None
    pid: int | None = None
    xid: int | None = None
    holder: str | None = None
    lease: LiveLease | None = None
    """The holder's core lease on this window (takeover, live view), while it is held."""
    started_at: float = field(default_factory=time.time)
    refs: dict[str, dict[str, Any]] = field(default_factory=dict)
    url: str | None = None

    @property
    def desktop(self) -> bool:
        return self.display.desktop


class Windows:
    """One per keeper: the displays, the windows on them and who holds each."""

    def __init__(self, settings: Settings | None = None):
        self._settings = settings
        self.windows: dict[str, Window] = {}
        self.gone: dict[str, str] = {}
        self.own: Display | None = None
        self._desktop: Display | None = None
        self._desktop_checked = False
        self._display_lock = anyio.Lock()
        self._ids = itertools.count(1)
        self._desk_ids = itertools.count(1)
        self._xtest: dict[str, tuple[bool, str]] = {}
        self.encoder = anyio.CapacityLimiter(1)
        """One JPEG encoding of a live view's frame at a time (two cores: frames must not
        starve verbs)."""

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = Settings.from_env()
        return self._settings

    # -- displays ---------------------------------------------------------------------

    async def ensure_own(self, ctx: VerbContext) -> Display:
        async with self._display_lock:
            if self.own is None:
                try:
                    with anyio.fail_after(displays.START_TIMEOUT + 5):
                        self.own = await displays.start_own(self.settings, ctx.state_dir)
                except DisplayError as exc:
                    raise Refusal("display_unavailable", reason=exc.reason, fix=exc.fix) from None
                except TimeoutError:
                    raise Refusal(
                        "display_unavailable",
                        reason="the display did not start in time",
                        fix="bay keeper logs",
                    ) from None
            return self.own

    def desktop(self) -> Display | None:
        if not self._desktop_checked:
            self._desktop_checked = True
            self._desktop = displays.desktop(self.settings)
        return self._desktop

    async def stop_own_if_unused(self, ctx: VerbContext) -> bool:
        async with self._display_lock:
            own = self.own
            if own is None or any(w.display is own for w in self.windows.values()):
                return False
            self.own = None
            self._xtest.pop(own.name, None)
            with anyio.CancelScope(shield=True):
                await own.stop()
            displays.forget(ctx.state_dir)
            log.info("display %s stopped: its last window went", own.name)
            return True

    # -- probes -----------------------------------------------------------------------

    async def xtest(self, display: Display) -> tuple[bool, str]:
        """Can we inject input on this display? (ok, what the probe found)."""
        if display.name in self._xtest:
            return self._xtest[display.name]
        if display.desktop and not display.xtest_allowed:
            found = (False, "input injection into desktop windows is off (BAY_WINDOW_XTEST=0)")
        else:
            try:
                has = await display.x.run(X_TIMEOUT, type(display.x).xtest)
            except XError as exc:
                found = (False, exc.reason)
            else:
                if has:
                    found = (True, f"XTEST present on {display.name}")
                else:
                    why = " (started without it: BAY_WINDOW_XTEST=0)" if not display.desktop else ""
                    found = (False, f"the X server {display.name} has no XTEST extension{why}")
        self._xtest[display.name] = found
        return found

    async def require_injection(self, window: Window, verb: str) -> None:
        ok, detail = await self.xtest(window.display)
        if not ok:
            raise Refusal(
                "injection_unavailable",
                window=window.handle,
                verb=verb,
                reason=detail,
                probe={"xtest": {"ok": ok, "detail": detail}, "display": window.display.name},
            )

    # -- bookkeeping --------------------------------------------------------------------

    async def reap(self, ctx: VerbContext) -> None:
        """Forget windows whose application exited (and stop our display when none is
        left); desktop windows that are gone likewise."""
        for window in list(self.windows.values()):
            if window.proc is not None and window.proc.returncode is not None:
                self.drop(window, f"its application exited (code {window.proc.returncode})", ctx)
                procs.LIVE.pop(window.proc.pid, None)
        desk = [w for w in self.windows.values() if w.desktop]
        if desk:
            try:
                alive = {t.xid for t in await desk[0].display.x.run(X_TIMEOUT, toplevels)}
            except XError:
                alive = set()
            for window in desk:
                if window.xid not in alive:
                    self.drop(window, "the window was closed on the desktop", ctx)
        await self.stop_own_if_unused(ctx)

    def new_handle(self, desktop: bool = False) -> str:
        """The next window handle: ``w1``, ``w2``… for ours, ``d1``… for the desktop's."""
        return f"d{next(self._desk_ids)}" if desktop else f"w{next(self._ids)}"

    def drop(self, window: Window, reason: str, ctx: VerbContext) -> None:
        """Forget the window (``reason``: what ``window_gone`` says of its handle)."""
        self.windows.pop(window.handle, None)
        self.gone[window.handle] = reason
        self.let_go(window, ctx)

    def hold(self, window: Window, ctx: VerbContext, live: LiveWindow) -> None:
        """The calling session holds the window: its lease on it (the same lease object as a
        browser's: ``live`` is what a live view shows of it, a human takes it over)."""
        window.holder = ctx.session.id
        if ctx.targets is not None:
            label = f"window {window.handle}"
            window.lease = ctx.targets.hold(window.handle, label, PROVIDER, live)

    def let_go(self, window: Window, ctx: VerbContext) -> None:
        """Its holder's lease on it ends (a human driving it is let go, live links end):
        through the verb's ``ctx.targets``, whose ``end`` works for any session."""
        if window.holder is not None and ctx.targets is not None:
            ctx.targets.end(window.holder, window.handle, "closed")
        window.lease = None

    def lookup(self, handle: str | None, ctx: VerbContext, *, held: bool = True) -> Window:
        if not handle:
            raise Refusal(
                "usage", detail="say which window: bay window <action> <handle>", verb="window"
            )
        window = self.windows.get(handle)
        if window is None:
            reason = self.gone.get(handle, "no window has this handle (bay window list)")
            raise Refusal("window_gone", window=handle, reason=reason)
        if held and window.holder != ctx.session.id:
            held_by = "held by another session" if window.holder else "attached to no session"
            raise Refusal(
                "not_your_window", window=handle, held=held_by, holder=window.holder or None
            )
        return window

    # -- X helpers ----------------------------------------------------------------------

    async def main_window(self, window: Window) -> TopLevel | None:
        if window.desktop:
            assert window.xid is not None
            return await window.display.x.run(X_TIMEOUT, window_at, window.xid)
        assert window.pid is not None
        family = set(await anyio.to_thread.run_sync(procfs.tree, window.pid))
        found = await window.display.x.run(X_TIMEOUT, windows_of, family)
        return found[0] if found else None

    async def origin(self, window: Window) -> tuple[int, int]:
        main = await self.main_window(window)
        return (main.x, main.y) if main is not None else (0, 0)

    async def pids(self, window: Window) -> list[int]:
        if window.desktop:
            return [window.pid] if window.pid else []
        assert window.pid is not None
        return sorted(await anyio.to_thread.run_sync(procfs.tree, window.pid))


def toplevels(x: Any) -> list[TopLevel]:
    return list(x.toplevels())


def window_at(x: Any, xid: int) -> TopLevel | None:
    found: TopLevel | None = x.window(xid)
    return found


def windows_of(x: Any, pids: set[int]) -> list[TopLevel]:
    return list(x.windows_of(pids))
