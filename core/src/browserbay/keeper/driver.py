"""The Playwright driver: Playwright's Python side imported, its Node.js driver started, once.

A cold ``bay open`` waits for this chain before anything else of the browser can happen:
Playwright's import (~240 ms of Python), then the Node.js driver's start (~350 ms, on the
other core), then the browser's launch. The daemon starts it first when the client that
spawned the keeper has a page verb to send (see ``browserbay.keeper.daemon``), so the
keeper's own imports run while Node boots. Node caches the driver's compiled JavaScript in
``compile_cache`` (``NODE_COMPILE_CACHE``, a private directory of the home's state): a
driver start after the first costs ~25% less CPU.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from browserbay.paths import ensure_private

if TYPE_CHECKING:
    from playwright.async_api import Playwright

log = logging.getLogger("browserbay.keeper")


class PlaywrightDriver:
    """The Playwright driver, started once, on first need (or at once: :meth:`load` and
    :meth:`get` from the daemon's start). Stopping waits for a start in progress."""

    def __init__(self, compile_cache: Path | None = None) -> None:
        self.compile_cache = compile_cache
        self._api: Any = None  # the playwright.async_api module
        self._pw: Playwright | None = None
        self._cm: Any = None  # playwright's context manager (its type is private)
        self._lock = anyio.Lock()
        self._engines: list[tuple[str, str]] = []  # selector engines: (name, script)

    async def load(self) -> None:
        """Import Playwright's Python side, in a worker thread so the loop keeps serving.
        (Imported by name: Playwright is heavy and only this needs it.)"""
        if self._api is None:
            self._api = await anyio.to_thread.run_sync(
                importlib.import_module, "playwright.async_api"
            )

    async def get(self) -> Playwright:
        """The running driver, started now if it is not. A start that fails raises and
        leaves nothing behind: the next call tries again."""
        async with self._lock:
            if self._pw is None:
                await self.load()
                if self.compile_cache is not None and await anyio.to_thread.run_sync(
                    _private_dir, self.compile_cache
                ):
                    # Read by the Node.js driver only (Chromium gets an environment of its own).
                    os.environ.setdefault("NODE_COMPILE_CACHE", str(self.compile_cache))
                cm = self._api.async_playwright()
                pw = await cm.start()
                try:
                    # One added meanwhile is in the list by the time the loop reaches its end.
                    for name, script in self._engines:
                        await pw.selectors.register(name, script=script)
                except BaseException:
                    with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                        await cm.__aexit__(None, None, None)
                    raise
                self._cm, self._pw = cm, pw
            return self._pw

    async def add_engine(self, name: str, script: str) -> None:
        """A selector engine every browser context gets: registered at the driver's start,
        or now when it is running (before any browser is launched: the keeper's start).
        Without the lock, so the keeper's start never waits for a driver still booting."""
        self._engines.append((name, script))
        if self._pw is not None:
            await self._pw.selectors.register(name, script=script)

    async def stop(self) -> None:
        async with self._lock:
            if self._cm is not None:
                try:
                    with anyio.move_on_after(5):
                        await self._cm.__aexit__(None, None, None)
                except Exception:  # the driver may already be gone
                    log.debug("playwright driver stop failed", exc_info=True)
                self._cm = self._pw = None


def _private_dir(path: Path) -> bool:
    """The cache's directory, this user's and 0700; False (no cache: Node compiles as
    without one) when it cannot be, or is somebody else's."""
    try:
        ensure_private(path)
    except OSError:  # NotYours too: never a directory of somebody else's
        log.warning("no compile cache for the Playwright driver at %s", path, exc_info=True)
        return False
    return True
