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
import sys
from collections.abc import Sequence
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

    def __init__(self, compile_caches: Sequence[Path] = ()) -> None:
        #: Where Node may keep its compile cache, the first usable of them (none: no cache).
        self.compile_caches = tuple(compile_caches)
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
                cache = await anyio.to_thread.run_sync(usable_cache, self.compile_caches)
                if cache is not None:
                    # Read by the Node.js driver only (Chromium gets an environment of its own).
                    os.environ.setdefault("NODE_COMPILE_CACHE", str(cache))
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


def compile_caches(state: Path, prefix: str = sys.prefix) -> tuple[Path, Path]:
    """Where the driver's compile cache may live, best first: in the install (``<prefix>/
    var/cache/browserbay/node-compile-cache``: shared by every home of the user who owns the
    install, so a fresh ``BAY_HOME``'s first start has it), else in the home's state.

    It holds V8's compiled code of Playwright's driver, keyed by Node's version and each
    file's content: no secret, but code the driver runs. So it is used only as a private
    directory of this user's (0700, :func:`browserbay.paths.ensure_private`): in an install
    this user can write — whoever can write there can already change the driver's code —
    and never in an install of somebody else's (another user's, or root's system install
    used by a user: the mkdir fails, or the directory is refused, and the home's is used)."""
    install = Path(prefix) / "var" / "cache" / "browserbay" / "node-compile-cache"
    return install, state / "node-compile-cache"


def usable_cache(candidates: Sequence[Path]) -> Path | None:
    """The first of ``candidates`` that is (or could be made) a private directory of this
    user's; None (no cache: Node compiles as without one) when none is."""
    for path in candidates:
        try:
            ensure_private(path)
        except OSError:  # NotYours too: never a directory of somebody else's
            log.debug("no compile cache for the Playwright driver at %s", path, exc_info=True)
            continue
        return path
    log.warning(
        "no compile cache for the Playwright driver (tried %s)", ", ".join(map(str, candidates))
    )
    return None
