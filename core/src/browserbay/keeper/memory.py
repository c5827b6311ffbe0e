"""A browser's memory, measured, and said once when it is over the owner's line.

Each housekeeping tick measures every running browser's proportional set size (PSS: the
process tree's share of the memory it maps, from ``/proc``; off the event loop). Over the
owner's ``BAY_MEMORY_NOTICE_MB`` line a browser is marked (``bay status``, the live view's
status) and every session with a lease on it gets ONE notice (a session that comes to it
while it is marked, at the next tick); it is marked again — and said again — only after it
fell below the lower line (:data:`LOWER` of the line): a browser hovering at the line does
not repeat itself. A browser is never stopped for its size: what to close is the
agent's call.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import anyio

from browserbay import procfs
from browserbay.keeper.browsers import BrowserPool, Running
from browserbay.keeper.sessions import Lease, Session

log = logging.getLogger("browserbay.keeper")

#: The lower line, as a fraction of the line: a marked browser is re-armed below it.
LOWER = 0.8


@dataclass(frozen=True)
class Measure:
    pss_kib: int | None
    over: bool


class MemoryWatch:
    """The last PSS of each running browser, and which are over the line (see the module).
    ``line_mb``: the owner's line in MiB (0: no line, measured all the same)."""

    def __init__(self, pool: BrowserPool, sessions: dict[str, Session], line_mb: float) -> None:
        self.pool = pool
        self.sessions = sessions
        self.line_kib = int(line_mb * 1024)
        self._pss: dict[str, int] = {}
        self._over: set[str] = set()
        #: Browser id -> the sessions told it is over the line (since it was marked).
        self._told: dict[str, set[str]] = {}

    def of(self, lease: Lease) -> Measure:
        """The lease's browser as last measured (nothing while it does not run)."""
        running = lease.browser
        if running is None:
            return Measure(None, False)
        return Measure(self._pss.get(running.id), running.id in self._over)

    async def tick(self) -> None:
        running = [r for r in self.pool.running.values() if not r.closing]
        for gone in set(self._pss) - {r.id for r in running}:
            self._pss.pop(gone, None)
            self._over.discard(gone)
            self._told.pop(gone, None)
        for browser in running:
            pss = await anyio.to_thread.run_sync(procfs.tree_pss_kib, browser.handle.pid)
            if pss is None:
                continue
            self._pss[browser.id] = pss
            self._judge(browser, pss)

    def _judge(self, browser: Running, pss: int) -> None:
        over, crossed = judge(browser.id in self._over, pss, self.line_kib)
        if not over:
            self._over.discard(browser.id)
            self._told.pop(browser.id, None)  # re-armed
            return
        self._over.add(browser.id)
        if crossed:
            log.info("browser %s is over the memory line: %d MiB", browser.id, pss // 1024)
        told = self._told.setdefault(browser.id, set())
        for session in self.sessions.values():
            if session.ref.id in told:
                continue
            for lease in session.leases.values():
                if lease.browser is browser:
                    told.add(session.ref.id)
                    session.notices.append(
                        f"the browser of profile {lease.handle} uses {pss // 1024} MiB of "
                        f"memory, over the owner's line of {self.line_kib // 1024} MiB "
                        "(BAY_MEMORY_NOTICE_MB); it is not stopped for its size: close the "
                        "tabs you no longer need (bay tab close ID)"
                    )
                    break


def judge(marked: bool, pss_kib: int, line_kib: int) -> tuple[bool, bool]:
    """``(marked now, tell its sessions now)`` for a browser measured at ``pss_kib``: marked
    above the line (told once, as it crosses), unmarked — re-armed — only below
    :data:`LOWER` of it. No line (0): never marked."""
    if line_kib <= 0:
        return False, False
    if marked:
        return pss_kib >= line_kib * LOWER, False
    return (True, True) if pss_kib > line_kib else (False, False)
