"""The Playwright driver: Playwright's Python side imported, its Node.js driver started, once.

A cold ``bay open`` waits for this chain before anything else of the browser can happen:
Playwright's import (~240 ms of Python), then the Node.js driver's start (~350 ms, on the
other core), then the browser's launch. The daemon starts it first when the client that
spawned the keeper has a page verb to send (see ``browserbay.keeper.daemon``), so the
keeper's own imports run while Node boots. Node caches the driver's compiled JavaScript
(``NODE_COMPILE_CACHE``): a driver start with the cache costs about half the CPU of one
without (measured: 1.0-1.2 s against 2.0-3.0 s at a load of 8). The cache lives in the
install (:func:`compile_caches`), so every home's first keeper start has it too.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from browserbay.keeper.early import EarlyDriver, usable_cache

if TYPE_CHECKING:
    from playwright.async_api import Playwright

log = logging.getLogger("browserbay.keeper")


class PlaywrightDriver:
    """The Playwright driver, started once, on first need (or at once: :meth:`load` and
    :meth:`get` from the daemon's start). Stopping waits for a start in progress."""

    def __init__(
        self, compile_caches: Sequence[Path] = (), early: EarlyDriver | None = None
    ) -> None:
        #: Where Node may keep its compile cache, the first usable of them (none: no cache).
        self.compile_caches = tuple(compile_caches)
        #: A driver process spawned at the keeper's first instant (browserbay.keeper.early):
        #: the first start connects to it; one that fails is discarded, and Playwright
        #: spawns its own.
        self._early = early
        self._api: Any = None  # the playwright.async_api module
        self._pipe: Any = None  # browserbay.keeper.pipe (imports Playwright's _impl)
        self._pw: Playwright | None = None
        self._cm: Any = None  # playwright's context manager (its type is private)
        self._lock = anyio.Lock()
        # selector engines: (name, script, content script: Playwright's utility world)
        self._engines: list[tuple[str, str, bool]] = []

    async def load(self) -> None:
        """Import Playwright's Python side, in a worker thread so the loop keeps serving.
        (Imported by name: Playwright is heavy and only this needs it.)"""
        if self._api is None:
            self._api = await anyio.to_thread.run_sync(
                importlib.import_module, "playwright.async_api"
            )
        if self._pipe is None and self._early is not None:
            self._pipe = await anyio.to_thread.run_sync(
                importlib.import_module, "browserbay.keeper.pipe"
            )

    async def get(self) -> Playwright:
        """The running driver, started now if it is not. A start that fails raises and
        leaves nothing behind: the next call tries again."""
        async with self._lock:
            if self._pw is None:
                await self.load()
                cm, started = await self._start_early()
                if started is not None:
                    pw = started
                else:
                    cache = await anyio.to_thread.run_sync(usable_cache, self.compile_caches)
                    if cache is not None:
                        # Read by the Node.js driver only (Chromium gets its own environment).
                        os.environ.setdefault("NODE_COMPILE_CACHE", str(cache))
                    cm = self._api.async_playwright()
                    pw = await cm.start()
                try:
                    # One added meanwhile is in the list by the time the loop reaches its end.
                    for name, script, content in self._engines:
                        await pw.selectors.register(name, script=script, content_script=content)
                except BaseException:
                    with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                        await cm.__aexit__(None, None, None)
                    raise
                self._cm, self._pw = cm, pw
            return self._pw

    async def _start_early(self) -> tuple[Any, Playwright | None]:
        """Playwright connected to the early driver, taken once: (its manager, Playwright),
        or (None, None) when there is none or it failed (discarded then, said in the log)."""
        early, self._early = self._early, None
        if early is None:
            return None, None
        early.taken = True
        cm = self._pipe.EarlyManager(early)
        try:
            started = await cm.start()
        except Exception:
            log.warning("the early Playwright driver failed; starting another", exc_info=True)
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await cm.__aexit__(None, None, None)
            await anyio.to_thread.run_sync(early.discard)
            return None, None
        log.info("the Playwright driver (pid %d) spawned at the keeper's start", early.proc.pid)
        return cm, started

    async def add_engine(self, name: str, script: str, *, content_script: bool = False) -> None:
        """A selector engine every browser context gets: registered at the driver's start,
        or now when it is running (before any browser is launched: the keeper's start).
        Without the lock, so the keeper's start never waits for a driver still booting."""
        self._engines.append((name, script, content_script))
        if self._pw is not None:
            await self._pw.selectors.register(name, script=script, content_script=content_script)

    async def stop(self) -> None:
        async with self._lock:
            early, self._early = self._early, None
            if early is not None:  # never taken (the keeper stops before any browser)
                await anyio.to_thread.run_sync(early.discard)
            if self._cm is not None:
                try:
                    with anyio.move_on_after(5):
                        await self._cm.__aexit__(None, None, None)
                except Exception:  # the driver may already be gone
                    log.debug("playwright driver stop failed", exc_info=True)
                self._cm = self._pw = None
