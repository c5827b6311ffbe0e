"""The browsers the keeper runs: launched through a provider's driver, shared by isolated
sessions where the provider allows it, closed gracefully, and swept when orphaned."""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from browserbay.model import BrowserHandle, BrowserInfo, LaunchSpec, ProviderRow
from browserbay.paths import BayPaths
from browserbay.refusals import Refusal
from browserbay.store import BrowserRow, Registry

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Playwright

    from browserbay.plugins import Plugins

log = logging.getLogger("browserbay.keeper")

#: Isolated contexts per shared browser process before another one is started.
CONTEXTS_PER_BROWSER = int(os.environ.get("BAY_CONTEXTS_PER_BROWSER", "16"))
CLOSE_TIMEOUT = 10.0


@dataclass
class Running:
    """A browser process the keeper started."""

    id: str
    provider: ProviderRow
    handle: BrowserHandle
    home: Path
    ephemeral: bool
    started_at: float
    contexts: set[Any] = field(default_factory=set)
    closing: bool = False
    idle_since: float | None = None

    def info(self) -> BrowserInfo:
        return BrowserInfo(self.id, self.provider.id, self.handle.pid, self.ephemeral)

    def as_row(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "provider": self.provider.id,
            "pid": self.handle.pid,
            "ephemeral": self.ephemeral,
            "contexts": len(self.contexts),
            "uptime_s": round(time.time() - self.started_at, 1),
        }


def mint_browser_id() -> str:
    return f"bb-{secrets.token_hex(4)}"


class BrowserPool:
    def __init__(
        self,
        plugins: Plugins,
        registry: Registry,
        paths: BayPaths,
        db: Any,
        playwright: Any,
    ):
        self.plugins = plugins
        self.registry = registry
        self.paths = paths
        self.db = db  # async callable running a registry method off the loop
        self._playwright = playwright  # async callable -> Playwright
        self.running: dict[str, Running] = {}
        self._launch_lock = anyio.Lock()
        self.on_crash: Any = None  # set by the keeper: async (Running) -> None

    def provider(self, provider_id: str) -> ProviderRow:
        row = self.plugins.providers.get(provider_id)
        if row is None:
            raise Refusal(
                "backend_unavailable",
                provider=provider_id,
                reason="no installed plugin provides it",
                fix=f"pip install browserbay-{provider_id.split(':')[0]}   (then bay plugins)",
            )
        if row.not_runnable or row.driver_factory is None:
            raise Refusal(
                "backend_unavailable",
                provider=provider_id,
                reason=row.not_runnable or "it is declared but cannot run yet",
                fix="bay plugins   (shows which providers can run here)",
            )
        return row

    async def isolated_context(self, provider_id: str) -> tuple[BrowserContext, Running]:
        """A fresh isolated context for one session: cookies, storage, cache and tabs that
        no other session can see. Shares a browser process where the provider allows it."""
        row = self.provider(provider_id)
        async with self._launch_lock:
            running = None
            if row.capabilities.ephemeral_contexts:
                for r in self.running.values():
                    if (
                        r.provider.id == provider_id
                        and r.ephemeral
                        and not r.closing
                        and len(r.contexts) < CONTEXTS_PER_BROWSER
                    ):
                        running = r
                        break
            if running is None:
                running = await self._launch(row)
        browser = running.handle.browser
        if browser is None:  # pragma: no cover - a provider contract violation
            raise Refusal(
                "backend_unavailable",
                provider=provider_id,
                reason="the driver returned no browser to make contexts in",
                fix="bay plugins",
            )
        context = await browser.new_context()
        running.contexts.add(context)
        running.idle_since = None
        return context, running

    async def _launch(self, row: ProviderRow) -> Running:
        assert row.driver_factory is not None
        browser_id = mint_browser_id()
        home = self.paths.browsers / browser_id
        home.mkdir(parents=True, mode=0o700)
        spec = LaunchSpec(browser_id=browser_id, home=home)
        await self.db(
            self.registry.browser_started,
            BrowserRow(browser_id, row.id, None, os.getpid(), str(home), True, time.time()),
        )
        playwright: Playwright = await self._playwright()
        try:
            handle = await row.driver_factory().launch(playwright, spec)
        except BaseException:
            await self.db(self.registry.browser_stopped, browser_id, "failed_to_start")
            shutil.rmtree(home, ignore_errors=True)
            raise
        await self.db(self.registry.browser_pid, browser_id, handle.pid)
        running = Running(browser_id, row, handle, home, True, time.time())
        self.running[browser_id] = running
        if handle.browser is not None:

            async def disconnected(_browser: Any) -> None:
                await self._disconnected(running)

            handle.browser.on("disconnected", disconnected)
        log.info("browser %s started (%s, pid %s)", browser_id, row.id, handle.pid)
        self.plugins.notify("bay_browser_started", browser=running.info())
        return running

    async def _disconnected(self, running: Running) -> None:
        if running.closing:
            return
        log.warning("browser %s disconnected unexpectedly", running.id)
        running.closing = True
        self.running.pop(running.id, None)
        await self.db(self.registry.browser_stopped, running.id, "crashed")
        self.plugins.notify("bay_browser_stopped", browser=running.info(), reason="crashed")
        if self.on_crash is not None:
            await self.on_crash(running)

    async def release_context(self, running: Running, context: Any) -> None:
        running.contexts.discard(context)
        with contextlib.suppress(Exception):
            with anyio.move_on_after(CLOSE_TIMEOUT):
                await context.close()
        if not running.contexts:
            running.idle_since = time.monotonic()

    async def stop(self, running: Running, reason: str) -> None:
        if running.closing and running.id not in self.running:
            return
        running.closing = True
        self.running.pop(running.id, None)
        await running.handle.close(CLOSE_TIMEOUT)
        await self.db(self.registry.browser_stopped, running.id, reason)
        if running.ephemeral:
            await anyio.to_thread.run_sync(lambda: shutil.rmtree(running.home, ignore_errors=True))
        log.info("browser %s stopped (%s)", running.id, reason)
        self.plugins.notify("bay_browser_stopped", browser=running.info(), reason=reason)

    async def stop_idle(self, grace: float) -> None:
        now = time.monotonic()
        for r in list(self.running.values()):
            if r.ephemeral and not r.contexts and r.idle_since and now - r.idle_since > grace:
                await self.stop(r, "idle")

    async def stop_all(self, reason: str) -> None:
        async with anyio.create_task_group() as tg:
            for r in list(self.running.values()):
                tg.start_soon(self.stop, r, reason)


def sweep_orphans(registry: Registry) -> list[str]:
    """At keeper start: every browser the registry says is running belonged to a keeper
    that is gone. A browser started over Playwright's pipe exits by itself when its keeper
    dies; give it a moment, then end what is left of an ephemeral one and remove its dirs.
    Runs in a worker thread (it sleeps)."""
    swept = []
    for row in registry.unstopped_browsers():
        pid = row.pid
        alive = pid is not None and _is_ours(pid, row.id)
        if alive and pid is not None:
            end = time.monotonic() + 3.0
            while time.monotonic() < end and _is_ours(pid, row.id):
                time.sleep(0.05)
            if _is_ours(pid, row.id) and row.ephemeral:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
        if row.ephemeral:
            shutil.rmtree(row.home, ignore_errors=True)
        registry.browser_stopped(row.id, "orphan_swept")
        swept.append(row.id)
    return swept


def _is_ours(pid: int, browser_id: str) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return f"--bay-browser={browser_id}".encode() in cmdline.split(b"\0")
