"""Each document a tab loads gets Playwright's injected scripts before a verb asks for them.

Playwright builds its injected script in a document the first time a verb asks that
document something, once per world: the utility world (CSS and text selectors, ``get
text``, the ARIA snapshot) and the main world (the ``bay-ref`` engine of the snapshot's own
refs, :mod:`browserbay.keeper.snapshots`). Each build costs the renderer ~16 ms on a small
page, and an agent's first commands on every page (``get text``, ``snapshot -i``) paid both:
~35 ms of the ~50 ms a first snapshot took on a MiniWoB++ page, against ~9 ms for the next.

When a tab's main frame has loaded (its ``load`` event: an ``open``, a link a click
followed, a reload), :func:`watch` asks each world to count the elements of a selector, in
a background task, once the verb that navigated has ended (its session's lock is free: built
earlier, the scripts would hold up that verb's own last calls, ~30 ms on every ``open``), so
both are built while the agent reads that verb's answer. A verb that comes first waits for
the same build it would have paid for anyway (Playwright builds a world's script once per
document). Nothing of the page is read or
changed, and nothing waits for these tasks: a page that closes or navigates meanwhile just
ends its task.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from playwright.async_api import Page

#: The utility world's probe: ``:root`` is looked up there (CSS runs in that world).
UTILITY_PROBE = ":root"

#: The tasks running now (asyncio keeps only weak references to tasks).
_RUNNING: set[asyncio.Future[None]] = set()


class Prewarm:
    """Both worlds' injected scripts, built in each document a watched tab loads.
    ``main_probe``: a selector of a main-world engine that matches nothing (the keeper's
    ``bay-ref`` engine asked for a ref it never gives)."""

    def __init__(self, main_probe: str) -> None:
        self.main_probe = main_probe

    async def warm(self, page: Page) -> None:
        """Build both in ``page``'s current document (at once: one round trip's wait).
        Never raises: this only saves time."""
        with contextlib.suppress(Exception):  # closed, navigated meanwhile, not Chromium…
            await asyncio.gather(
                page.locator(UTILITY_PROBE).count(), page.locator(self.main_probe).count()
            )

    def watch(self, page: Page, busy: anyio.Lock) -> None:
        """From now on, every ``load`` of ``page``'s main frame starts :meth:`warm` once
        ``busy`` (the lock its session's verbs hold) is free."""

        async def after_verb(loaded: Page) -> None:
            async with busy:
                pass
            await self.warm(loaded)

        def on_load(loaded: Page) -> None:
            task = asyncio.ensure_future(after_verb(loaded))
            _RUNNING.add(task)
            task.add_done_callback(_RUNNING.discard)

        page.on("load", on_load)
