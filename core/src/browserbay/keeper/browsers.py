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
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from browserbay import procfs
from browserbay.distributions import provider_hint
from browserbay.keeper.emulated import Device
from browserbay.keeper.fleet import Fleet
from browserbay.keeper.guard import Blocked, Guard, devtools_ports, url_port
from browserbay.keeper.keyhomes import KeyHomeBook
from browserbay.ladder import parse_major, read_dir_version
from browserbay.model import BrowserHandle, BrowserInfo, LaunchSpec, ProviderRow, context_options
from browserbay.paths import BayPaths
from browserbay.refusals import Refusal
from browserbay.registry import BrowserRow, Browsers, Db, Profiles, Versions

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Playwright

    from browserbay.plugins import Plugins

log = logging.getLogger("browserbay.keeper")

CLOSE_TIMEOUT = 10.0
#: How long before its claim's TTL runs out a fenced keeper's browser that has not closed
#: is killed (seconds).
FENCE_KILL_BEFORE = 0.3
#: Seconds one running browser may take to learn a new DevTools port (``spread_devtools_ports``).
GUARD_SPREAD_TIMEOUT = 5.0
#: The longest the keeper waits for a tab it asked a browser for.
NEW_PAGE_LIMIT = 30.0


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
    profile_id: str | None = None
    """The persistent profile this browser runs (None: a shared ephemeral browser)."""
    users: set[str] = field(default_factory=set)
    """Sessions with a lease on this browser."""
    blocked: Blocked = field(default_factory=Blocked)
    """Requests (and redirect hops) its guard refused that no lease can be named for (all of
    them on a persistent profile's browser)."""
    opening: int = 0
    """Contexts being created in it now: their slots are taken (see isolated_context)."""
    fence: tuple[str, ...] = ()
    """The allowed domains of every context in it: a fence is a property of the process."""
    guard: Guard | None = None
    """Its in-browser request check (see browserbay.keeper.guard), when it needs one."""
    key_source: str = "none"
    """Where its provider's key came from: ``user``, ``cluster`` or ``none``."""
    pid_started: int | None = field(init=False, default=None)
    """When its process started: a pid the kernel gives to another process later is not it."""

    def __post_init__(self) -> None:
        if self.handle.pid is not None:
            self.pid_started = procfs.start_time(self.handle.pid)

    def info(self) -> BrowserInfo:
        return BrowserInfo(self.id, self.provider.id, self.handle.pid, self.ephemeral)

    def as_row(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "provider": self.provider.id,
            "pid": self.handle.pid,
            "ephemeral": self.ephemeral,
            "profile": self.profile_id,
            "contexts": len(self.contexts),
            "sessions": sorted(self.users),
            "uptime_s": round(time.time() - self.started_at, 1),
        }

    @property
    def in_use(self) -> bool:
        """A context being opened in it counts: it is never stopped as idle meanwhile."""
        return bool(self.contexts or self.opening) if self.ephemeral else bool(self.users)


def mint_browser_id() -> str:
    return f"bb-{secrets.token_hex(4)}"


class BrowserPool:
    def __init__(
        self,
        plugins: Plugins,
        browsers: Browsers,
        versions: Versions,
        profiles: Profiles,
        paths: BayPaths,
        db: Db,
        playwright: Any,
        contexts_per_browser: int = 16,
        max_browsers: int = 8,
        fleet: Fleet | None = None,
        key_homes: KeyHomeBook | None = None,
    ):
        self.plugins = plugins
        #: Whose claim a persistent profile's stopped browser gives back (None: no fleet).
        self.fleet = fleet
        #: Which keeper's key a persistent profile's keyed browser starts with (None: any).
        self.key_homes = key_homes
        self.browsers = browsers
        self.versions = versions
        self.profiles = profiles
        self.paths = paths
        self.db = db
        self._playwright = playwright  # async callable -> Playwright
        #: Isolated contexts per shared browser process before another one is started.
        self.contexts_per_browser = contexts_per_browser
        #: Browser processes this machine may run at once (a shared ephemeral one counts once).
        self.max_browsers = max_browsers
        self.running: dict[str, Running] = {}
        #: Browsers taken out of :attr:`running` by :meth:`stop` whose processes have not
        #: exited yet: they still write into their profile's directory (``forget`` waits).
        self.stopping: dict[str, Running] = {}
        self._launch_lock = anyio.Lock()
        #: What a browser's crash does to the leases on it (set by the keeper: the leases
        #: need the pool first, so the pool is told afterwards).
        self.on_crash: Callable[[Running], Awaitable[None]] | None = None

    async def devices(self) -> dict[str, Device]:
        """Playwright's device descriptors by name (``bay set device``)."""
        playwright: Playwright = await self._playwright()
        return {n: Device.from_playwright(n, d) for n, d in playwright.devices.items()}

    def provider(self, provider_id: str) -> ProviderRow:
        row = self.plugins.providers.get(provider_id)
        if row is None:
            raise Refusal(
                "backend_unavailable",
                provider=provider_id,
                reason="no installed plugin provides it",
                fix=provider_hint(provider_id),
            )
        if row.not_runnable or row.driver_factory is None:
            raise Refusal(
                "backend_unavailable",
                provider=provider_id,
                reason=row.not_runnable or "it is declared but cannot run yet",
                fix="bay plugins   (shows which providers can run here)",
            )
        return row

    async def isolated_context(
        self, provider_id: str, fence: tuple[str, ...] = ()
    ) -> tuple[BrowserContext, Running]:
        """A fresh isolated context for one session: cookies, storage, cache and tabs that
        no other session can see. Shares a browser process where the provider allows it, and
        only with contexts of the same ``fence`` (allowed domains).

        The context's slot is taken under the launch lock, before the context is asked for:
        counted then created, so concurrent first verbs never put more than
        ``contexts_per_browser`` contexts into one process. The creation itself is finished
        even when the verb's deadline falls meanwhile (the browser makes the context
        anyway): it is then closed at once, never left in the browser uncounted."""
        row = self.provider(provider_id)
        for attempt in (1, 2):
            async with self._launch_lock:
                found: Running | None = None
                if row.capabilities.ephemeral_contexts:
                    for r in self.running.values():
                        if (
                            r.provider.id == provider_id
                            and r.ephemeral
                            and r.fence == fence
                            and not r.closing
                            and not self.gone(r)
                            and len(r.contexts) + r.opening < self.contexts_per_browser
                        ):
                            found = r
                            break
                if found is None:
                    self._check_cap()
                    found = await self._launch(row, fence=fence)
                running = found
                running.opening += 1
                running.idle_since = None
            browser = running.handle.browser
            context = None
            try:
                if browser is None:  # pragma: no cover - a provider contract violation
                    raise Refusal(
                        "backend_unavailable",
                        provider=provider_id,
                        reason="the driver returned no browser to make contexts in",
                        fix="bay plugins",
                    )
                with anyio.CancelScope(shield=True):
                    try:
                        context = await browser.new_context(**context_options(running.handle))
                    finally:
                        running.opening -= 1
                    running.contexts.add(context)
            except Exception:
                if not running.contexts:
                    running.idle_since = time.monotonic()
                if attempt == 2 or not (running.closing or self.gone(running)):
                    raise
                await self.crashed(running)  # it died as we asked: the next try starts one
                continue
            try:
                await anyio.lowlevel.checkpoint()  # a deadline that fell meanwhile
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await self.release_context(running, context)
                raise
            assert context is not None
            return context, running
        raise AssertionError("unreachable")  # pragma: no cover

    def _check_cap(self) -> None:
        live = [r for r in self.running.values() if not r.closing]
        if self.max_browsers and len(live) >= self.max_browsers:
            holders = {r.id: sorted(r.users) or ["(idle, stopping soon)"] for r in live}
            listing = "; ".join(f"{b}: {', '.join(s)}" for b, s in holders.items())
            raise Refusal(
                "browser_cap",
                limit=self.max_browsers,
                holders=holders,
                listing=listing,
            )

    async def persistent(
        self,
        provider_id: str,
        profile_id: str,
        user_data_dir: Path,
        fence: tuple[str, ...] = (),
        **launch: Any,
    ) -> Running:
        """The one browser of a persistent profile (a user-data-dir cannot be shared between
        processes), started if needed. Its one context is shared by every lease on it; its
        ``fence`` (the profile's allowed domains) holds for all of it."""
        row = self.provider(provider_id)
        async with self._launch_lock:
            for r in self.running.values():
                if r.profile_id == profile_id and not r.closing:
                    r.idle_since = None
                    return r
            self._check_cap()
            try:
                if self.key_homes is not None:  # before any key is read: its home's alone
                    await self.key_homes.check(profile_id, row)
                running = await self._launch(
                    row, user_data_dir=user_data_dir, fence=fence, **launch
                )
            except BaseException:
                # No browser of the profile runs here: the claim the lease took is free
                # again (held, the heartbeat would renew it with nothing behind it).
                if self.fleet is not None:
                    with anyio.CancelScope(shield=True):
                        await self.fleet.release(profile_id)
                raise
            running.profile_id = profile_id
            running.ephemeral = False
            if self.key_homes is not None:
                await self.key_homes.bind(profile_id, row, running.key_source)
        await self._record_major(running, profile_id, user_data_dir)
        return running

    async def _record_major(self, running: Running, profile_id: str, directory: Path) -> None:
        """The version ladder's record: the Chromium major that just started on the
        profile's directory (the browser's own version, else its ``Last Version``)."""
        if not running.provider.capabilities.owns_dir:
            return  # somebody else's browser: no directory of ours to guard
        browser = running.handle.browser
        major = None
        with contextlib.suppress(Exception):
            major = parse_major(browser.version) if browser is not None else None
        if major is None:
            major = (await anyio.to_thread.run_sync(read_dir_version, directory)).major
        if major is not None:
            await self.db(self.versions.record, profile_id, major, running.provider.id)

    async def _driver(self, row: ProviderRow) -> Playwright:
        """The running Playwright driver; one that cannot start is ``backend_unavailable``."""
        try:
            playwright: Playwright = await self._playwright()
        except Exception as exc:
            log.warning("the Playwright driver cannot start: %s", exc)
            raise Refusal(
                "backend_unavailable",
                provider=row.id,
                reason=f"Playwright's driver did not start ({type(exc).__name__}: {exc})",
                fix="bay doctor   (checks the Playwright install), then bay keeper logs",
            ) from None
        return playwright

    async def _launch(
        self,
        row: ProviderRow,
        *,
        user_data_dir: Path | None = None,
        headless: bool = True,
        proxy: str | None = None,
        options: Mapping[str, str] | None = None,
        fence: tuple[str, ...] = (),
    ) -> Running:
        assert row.driver_factory is not None
        # The driver first (started already, unless it failed): a driver that cannot start
        # is refused before a browser row or directory exists.
        playwright = await self._driver(row)
        # The provider's key, resolved now and only now, for this one child's environment
        # (refused before anything is created when there is none; see browserbay.keys).
        key_env, key_source = await anyio.to_thread.run_sync(self.plugins.keys.launch_keys, row)
        browser_id = mint_browser_id()
        home = self.paths.browsers / browser_id
        home.mkdir(parents=True, mode=0o700)
        spec = LaunchSpec(
            browser_id=browser_id,
            home=home,
            user_data_dir=user_data_dir,
            headless=headless,
            proxy=proxy,
            options=dict(options or {}),
            env=key_env,
            key_source=key_source,
        )
        await self.db(
            self.browsers.started,
            BrowserRow(
                browser_id, row.id, None, os.getpid(), str(home), user_data_dir is None, time.time()
            ),
        )
        try:
            # Finished even when the verb's deadline falls meanwhile: a launch cut half-way
            # would leave a browser process nobody owns. The verb is answered after it.
            with anyio.CancelScope(shield=True):
                handle = await row.driver_factory().launch(playwright, spec)
        except BaseException:
            await self.db(self.browsers.stopped, browser_id, "failed_to_start")
            shutil.rmtree(home, ignore_errors=True)
            raise
        return await self._running(row, spec, handle, fence)

    async def adopt(self, row: ProviderRow, spec: LaunchSpec, handle: BrowserHandle) -> Running:
        """A shared ephemeral browser launched before the pool existed (the keeper's warm
        start, :class:`browserbay.keeper.daemon.Spare`: ``row``'s own driver and ``spec``, as
        :meth:`_launch` would have made them for an unfenced isolated session), taken into
        the pool now — its registry row, guard and hooks as any launch's — idle until a
        session's context is made in it (the idle grace stops it when none comes). Call it
        after the orphan sweep, holding ``launch_lock`` (a first verb then waits for it)."""
        await self.db(
            self.browsers.started,
            BrowserRow(
                spec.browser_id, row.id, None, os.getpid(), str(spec.home), True, time.time()
            ),
        )
        running = await self._running(row, spec, handle, ())
        running.idle_since = time.monotonic()
        return running

    @property
    def launch_lock(self) -> anyio.Lock:
        """Held while a browser is launched or taken in (see :meth:`adopt`)."""
        return self._launch_lock

    async def _running(
        self, row: ProviderRow, spec: LaunchSpec, handle: BrowserHandle, fence: tuple[str, ...]
    ) -> Running:
        """A launched browser in the pool: its pid recorded, guarded, watched, announced. One
        that cannot be guarded is closed and recorded ``failed_to_start``."""
        browser_id, home, user_data_dir = spec.browser_id, spec.home, spec.user_data_dir
        await self.db(self.browsers.set_pid, browser_id, handle.pid)
        running = Running(
            browser_id,
            row,
            handle,
            home,
            user_data_dir is None,
            time.time(),
            fence=fence,
            key_source=spec.key_source,
        )
        try:
            await self._guard(running)
        except BaseException:
            with contextlib.suppress(Exception):
                await handle.close(CLOSE_TIMEOUT)
            await self.db(self.browsers.stopped, browser_id, "failed_to_start")
            shutil.rmtree(home, ignore_errors=True)
            raise
        self.running[browser_id] = running
        if devtools_ports(handle):  # the others learn its port (a cdp URL given as ws://)
            await self.spread_devtools_ports()
        if handle.persistent_context is not None:
            running.contexts.add(handle.persistent_context)

            async def context_closed(_context: Any) -> None:
                await self._disconnected(running)

            handle.persistent_context.on("close", context_closed)
        if handle.browser is not None:

            async def disconnected(_browser: Any) -> None:
                await self._disconnected(running)

            handle.browser.on("disconnected", disconnected)
        log.info("browser %s started (%s, pid %s)", browser_id, row.id, handle.pid)
        self.plugins.hooks.bay_browser_started(browser=running.info())
        return running

    async def known_devtools_ports(self) -> tuple[int, ...]:
        """Every DevTools port a browser of this keeper's could reach: the ports of every
        ``cdp`` profile's URL (its browser may run before any session uses it) and of every
        running browser's handle. A tab of *any* browser is kept off them: an isolated
        session's tab read a cdp browser's ``/json/list``, every other session's tab."""
        rows = await self.db(self.profiles.all)
        ports = {p for row in rows for p in url_port(row.options.get("cdp_url"))}
        for r in self.running.values():
            ports.update(devtools_ports(r.handle))
        return tuple(sorted(ports))

    async def spread_devtools_ports(self) -> None:
        """Bring every running browser's guard up to :meth:`known_devtools_ports` (after a
        ``cdp`` profile is made or a browser starts); one without a guard gets one that
        pauses only the requests to those ports. Failures are logged: that browser's tabs
        stay as they were, and the next start tries again."""
        ports = await self.known_devtools_ports()
        if not ports:
            return
        for r in list(self.running.values()):
            if r.closing:
                continue
            try:
                with anyio.fail_after(GUARD_SPREAD_TIMEOUT):  # a hung browser holds no verb
                    if r.guard is not None:
                        await r.guard.set_ports(ports)
                    else:
                        await self._install(r, ports)
            except Exception as exc:
                log.warning("browser %s: DevTools ports not guarded: %s", r.id, exc)

    async def _install(self, running: Running, ports: tuple[int, ...]) -> None:
        handle = running.handle
        context = handle.persistent_context
        browser = handle.browser or (context.browser if context is not None else None)
        if browser is None:
            raise RuntimeError("its driver gave no browser to intercept requests in")
        guard = Guard(running.fence, ports, running.blocked)
        await guard.start(browser)
        running.guard = guard

    async def _guard(self, running: Running) -> None:
        """Its in-browser check, installed before anything is loaded in it: a fenced browser
        checks every request, one when any DevTools port is known (its own, a cdp profile's)
        the requests to those ports; otherwise there is none (no cost). Refused, and the
        browser not used, when the check cannot be installed: a fence is never only on
        paper."""
        handle = running.handle
        ports = tuple(sorted({*devtools_ports(handle), *await self.known_devtools_ports()}))
        if not running.fence and not ports:
            return
        try:
            await self._install(running, ports)
        except Exception as exc:
            raise Refusal(
                "backend_unavailable",
                provider=running.provider.id,
                reason=f"its request check (allowed domains, DevTools port) cannot be "
                f"installed: {str(exc).strip().splitlines()[0] if str(exc).strip() else exc!r}",
                fix="bay plugins",
            ) from None

    def gone(self, running: Running) -> bool:
        """The browser's process has exited (a crash its driver may not have reported yet).
        A browser without a known pid (not ours to watch) is never taken for gone."""
        pid = running.handle.pid
        if running.closing or pid is None:
            return False
        return not procfs.alive(pid, running.pid_started)

    async def new_page(self, running: Running | None, context: Any) -> Any:
        """``context.new_page()``, which never returns when the browser dies meanwhile
        (Playwright waits for a target that cannot come): given up once the browser is
        gone, refused ``tab_gone`` — so the session's next verb restarts the browser."""
        if running is None:
            return await context.new_page()
        made: list[Any] = []
        failed: list[BaseException] = []
        # The browser opens the tab whether or not we wait: finished even when the verb's
        # deadline falls meanwhile (the keeper then closes it, see Keeper._undo), bounded.
        with anyio.CancelScope(shield=True), anyio.move_on_after(NEW_PAGE_LIMIT):
            async with anyio.create_task_group() as tg:

                async def make() -> None:
                    try:
                        made.append(await context.new_page())
                    except Exception as exc:
                        failed.append(exc)
                    tg.cancel_scope.cancel()

                async def watch() -> None:
                    while not (running.closing or self.gone(running)):  # noqa: ASYNC110 - /proc
                        await anyio.sleep(0.2)
                    tg.cancel_scope.cancel()

                tg.start_soon(make)
                tg.start_soon(watch)
        if made:
            return made[0]
        if failed:
            raise failed[0]
        raise Refusal(
            "tab_gone", tab="(new)", reason="its browser stopped while the tab was opening"
        )

    async def crashed(self, running: Running) -> None:
        """A browser found dead before its driver said so: the same as its disconnect."""
        await self._disconnected(running)

    async def _disconnected(self, running: Running) -> None:
        if running.closing:
            return
        log.warning("browser %s disconnected unexpectedly", running.id)
        running.closing = True
        self.running.pop(running.id, None)
        await self.db(self.browsers.stopped, running.id, "crashed")
        self.plugins.hooks.bay_browser_stopped(browser=running.info(), reason="crashed")
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
        self.stopping[running.id] = running
        try:
            await running.handle.close(CLOSE_TIMEOUT)
        finally:
            self.stopping.pop(running.id, None)
        await self.db(self.browsers.stopped, running.id, reason)
        if running.profile_id is not None and self.fleet is not None:
            await self.fleet.release(running.profile_id)
        # The per-browser HOME (never a profile's own user-data-dir) goes with it.
        await anyio.to_thread.run_sync(lambda: shutil.rmtree(running.home, ignore_errors=True))
        log.info("browser %s stopped (%s)", running.id, reason)
        self.plugins.hooks.bay_browser_stopped(browser=running.info(), reason=reason)

    async def fence(self) -> None:
        """The keeper is fenced (browserbay.keeper.fleet): every persistent profile's
        browser is closed now, whatever the registry does — another keeper may take its
        claim once the TTL runs out. Its leases let go of it at their next verb, as after a
        crash (their tabs kept to restore); its stop is recorded when the registry answers
        (tried again until then); its claim is released by the beat that gets through."""
        fenced = [r for r in self.running.values() if r.profile_id is not None]
        async with anyio.create_task_group() as tg:
            for r in fenced:
                tg.start_soon(self._fenced_stop, r)

    async def _fenced_stop(self, running: Running) -> None:
        running.closing = True
        self.running.pop(running.id, None)
        self.stopping[running.id] = running
        # Gracefully while the claim is still ours (its newest cookies written); a browser
        # still running when the TTL is about to end is killed: two browsers writing one
        # profile's data is the worse loss.
        left = CLOSE_TIMEOUT
        if self.fleet is not None:
            left = self.fleet.renewed + self.fleet.ttl - time.monotonic() - FENCE_KILL_BEFORE
        try:
            await running.handle.close(max(left, 0.1))
        finally:
            self.stopping.pop(running.id, None)
        pid = running.handle.pid
        if pid is not None and _is_ours(pid, running.id):
            log.error("browser %s did not close in time: killed (fenced)", running.id)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        log.warning("browser %s stopped (fenced: profile %s)", running.id, running.profile_id)
        self.plugins.hooks.bay_browser_stopped(browser=running.info(), reason="fenced")
        while True:  # the registry may not answer yet: its stop is written when it does
            try:
                await self.db(self.browsers.stopped, running.id, "fenced")
                break
            except Exception as exc:  # any failure of the store: tried again later
                log.info("browser %s: its fenced stop is not recorded yet (%s)", running.id, exc)
                await anyio.sleep(1.0)
        await anyio.to_thread.run_sync(lambda: shutil.rmtree(running.home, ignore_errors=True))

    def release_user(self, running: Running, session: str) -> None:
        """A session's lease on a persistent browser went: the last one starts its grace."""
        running.users.discard(session)
        if not running.users:
            running.idle_since = time.monotonic()

    async def stop_idle(self, grace: float) -> None:
        now = time.monotonic()
        for r in list(self.running.values()):
            if not r.in_use and r.idle_since and now - r.idle_since > grace:
                await self.stop(r, "idle")

    async def stop_all(self, reason: str) -> None:
        async with anyio.create_task_group() as tg:
            for r in list(self.running.values()):
                tg.start_soon(self.stop, r, reason)


def sweep_orphans(browsers: Browsers) -> list[str]:
    """At keeper start: every browser the registry says is running belonged to a keeper
    that is gone. A browser started over Playwright's pipe exits by itself when its keeper
    dies; give it a moment, then end what is left of an ephemeral one and remove its dirs.
    Runs in a worker thread (it sleeps)."""
    swept = []
    for row in browsers.unstopped():
        pid = row.pid
        alive = pid is not None and _is_ours(pid, row.id)
        if alive and pid is not None:
            end = time.monotonic() + 3.0
            while time.monotonic() < end and _is_ours(pid, row.id):
                time.sleep(0.05)
            if _is_ours(pid, row.id):
                # Still there after its keeper died: SIGTERM lets Chromium write its
                # profile out; it is never SIGKILLed.
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
        shutil.rmtree(row.home, ignore_errors=True)  # the per-browser HOME, not a profile
        browsers.stopped(row.id, "orphan_swept")
        swept.append(row.id)
    return swept


def sweep_strays(browsers_dir: Path, browsers: Browsers, keep: Collection[str] = ()) -> list[str]:
    """At keeper start, after :func:`sweep_orphans`: every ``bb-*`` directory under
    ``browsers_dir`` (the home's ``run/browsers``) that no unstopped row names and that is
    not in ``keep`` (the browser this start is launching early, daemon.Spare): left by a
    keeper killed between a browser's launch and its row (the early browser before its
    adoption). No other keeper uses this home while we hold its lock, so what is there is
    stale: a browser still running from it is ended (SIGTERM, as an orphan is), the dir
    removed. /proc is read only when such a directory is found. Runs in a worker thread."""
    try:
        found = sorted(d for d in browsers_dir.glob("bb-*") if d.is_dir())
    except OSError:
        return []
    if not found:
        return []
    known = {row.id for row in browsers.unstopped()} | set(keep)
    strays = [d for d in found if d.name not in known]
    if not strays:
        return []
    names = {d.name for d in strays}
    ended = {}
    for pid in procfs.pids():
        flags = [a for a in procfs.argv(pid) if a.startswith("--bay-browser=")]
        if flags and (name := flags[0].split("=", 1)[1]) in names:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)  # an ephemeral browser: nothing of it is kept
                ended[pid] = name
    end = time.monotonic() + 3.0  # gone before its dir is removed and the keeper serves
    while ended and time.monotonic() < end:
        ended = {p: n for p, n in ended.items() if _is_ours(p, n)}
        time.sleep(0.02)
    for stray in strays:
        shutil.rmtree(stray, ignore_errors=True)
    return [d.name for d in strays]


def _is_ours(pid: int, browser_id: str) -> bool:
    return f"--bay-browser={browser_id}" in procfs.argv(pid)
