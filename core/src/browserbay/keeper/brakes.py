"""Stopping the script a page is running, so a human who takes over gets the page at once.

A takeover cuts the agent's verbs in flight, but a script the agent started in the page
(``bay eval`` of a busy loop) goes on running in the renderer: the page answers no input and
paints no frame until it ends. CDP's ``Runtime.terminateExecution`` stops it — but only on a
CDP session attached *before* the page got busy: attaching to a busy renderer waits for its
main thread (measured: a session attached during a ``while (true) {}`` never answered in 5 s;
one attached before answered in 12 ms). So every tab gets its brake session when it is
adopted (:meth:`Brakes.watch`, in the background: a new tab's verb never waits for it), and a
takeover pulls the brakes of every tab of the taken browser (:meth:`Brakes.stop`).

On an idle page ``Runtime.terminateExecution`` does nothing (measured: the next evaluate and
click work).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from playwright.async_api import CDPSession, Page

log = logging.getLogger("browserbay.keeper")

#: How long one tab's brake may take (a CDP round trip on the IO thread).
STOP_TIMEOUT = 2.0


class Brakes:
    """One CDP session per tab, attached early, to stop its page's script (see the module)."""

    def __init__(self) -> None:
        self._sessions: weakref.WeakKeyDictionary[Page, CDPSession] = weakref.WeakKeyDictionary()
        self._pending: set[asyncio.Task[Any]] = set()

    def watch(self, page: Page) -> None:
        """Attach the page's brake session in the background."""
        self._spawn(self._attach(page))

    async def _attach(self, page: Page) -> None:
        with contextlib.suppress(Exception):  # a page closed meanwhile: nothing to stop
            self._sessions[page] = await page.context.new_cdp_session(page)

    def stop(self, pages: Iterable[Page]) -> int:
        """Stop the script each page is running now (in the background: the takeover that
        asks answers at once). Answers how many pages had a brake."""
        sessions = [s for p in pages if (s := self._sessions.get(p)) is not None]
        for session in sessions:
            self._spawn(self._terminate(session))
        return len(sessions)

    @staticmethod
    async def _terminate(session: CDPSession) -> None:
        try:
            async with asyncio.timeout(STOP_TIMEOUT):
                await session.send("Runtime.terminateExecution")
        except Exception as exc:  # its page closed, or the call did not answer in time
            log.debug("brake: %s", type(exc).__name__)

    def _spawn(self, coro: Any) -> None:
        try:
            task = asyncio.get_running_loop().create_task(coro)
        except RuntimeError:  # no loop (a unit test without a browser): nothing to stop
            coro.close()
            return
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
