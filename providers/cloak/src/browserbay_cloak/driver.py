"""Launch the CloakBrowser binary through Playwright's pipe, as the chromium provider does
(the same private HOME, environment passthrough and marker switch for the orphan sweep:
reused from :mod:`browserbay_chromium.driver`), plus the profile's own fingerprint seed and
platform, and without Playwright's automation defaults.

The licence key reaches only this browser's environment (``LaunchSpec.env``, under the
vendor's ``CLOAKBROWSER_LICENSE_KEY``): never argv, never a log line.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from browserbay import procfs, sandbox
from browserbay.model import LaunchSpec
from browserbay.paths import bay_paths
from browserbay.refusals import Refusal
from browserbay_chromium.driver import (
    ChromiumHandle,
    browser_env,
    find_pid,
    launch_args,
    launch_options,
    prepare_home,
    start,
)
from browserbay_cloak import contract, licence
from browserbay_cloak.find import find_binary
from browserbay_cloak.seats import Ledger

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Playwright


class Seats:
    """The cloak browsers one keeper started and has not closed: the *used* seat count. One
    per provider row (so per keeper), handed to each driver the row's factory makes."""

    def __init__(self) -> None:
        self.live: dict[str, CloakHandle] = {}

    def in_use(self) -> dict[str, str]:
        """browser id -> the profile it runs (its directory's name) for the live cloak
        browsers; the ones that died by themselves are dropped."""
        for browser_id, handle in list(self.live.items()):
            if handle.pid is None or not procfs.alive(handle.pid, handle.started):
                self.live.pop(browser_id, None)
        return {b: h.profile for b, h in self.live.items()}

    def taken(self, handle: CloakHandle) -> None:
        self.live[handle.browser_id] = handle

    def given_back(self, browser_id: str) -> None:
        self.live.pop(browser_id, None)


class CloakHandle(ChromiumHandle):
    def __init__(
        self,
        browser_id: str,
        browser: Browser | None,
        context: BrowserContext | None,
        pid: int | None,
        *,
        profile: str = "ephemeral",
        started: int | None = None,
        seats: Seats | None = None,
    ):
        super().__init__(browser_id, browser, context, pid)
        self.profile = profile
        self.started = started
        """When its process started: a seat is not held by a pid the kernel has given away."""
        self._seats = seats

    async def close(self, timeout: float) -> None:
        # The seat is given back as the close starts: the keeper stops listing the browser
        # then, and a launch racing the exit is the binary's to refuse (76), not our count's.
        if self._seats is not None:
            self._seats.given_back(self.browser_id)
        await super().close(timeout)


def ledger() -> Ledger:
    return Ledger(bay_paths().state / "cloak" / "seats.json")


def seed_of(spec: LaunchSpec) -> str:
    """The profile's stored seed. An ephemeral browser (no profile) gets a seed for this one
    launch, as the vendor's wrapper does by default; a profile without one is refused
    (seeds are minted once, at ``bay new``, and never re-minted behind the user's back)."""
    seed = spec.options.get("seed", "")
    if spec.user_data_dir is None:
        return seed or contract.mint_seed()
    if not contract.valid_seed(seed):
        raise Refusal(
            "backend_unavailable",
            provider="cloak",
            reason=f"profile {spec.user_data_dir.name} has no fingerprint seed stored (a cloak "
            "profile gets one, once, when it is made or switched to cloak; it is never minted "
            "at launch)",
            fix="bay new <label> --provider cloak   (a new profile mints its seed once)",
        )
    return seed


class CloakDriver:
    def __init__(self, seats: Seats):
        self._seats = seats

    async def launch(self, playwright: Playwright, spec: LaunchSpec) -> CloakHandle:
        executable = await anyio.to_thread.run_sync(find_binary)
        seed = seed_of(spec)
        fingerprint_platform = spec.options.get("platform", contract.default_fingerprint_platform())
        key = spec.env.get(contract.LICENSE_ENV)
        book = ledger()
        holders = self._seats.in_use()
        seats = await anyio.to_thread.run_sync(book.seats, key, len(holders), spec.key_source)
        if key and seats.at_ceiling():
            raise licence.seat_taken(
                key_source=spec.key_source,
                used=seats.used,
                holders=sorted(set(holders.values())),
                why=f"the keeper's count, {seats.describe()}",
            )
        prepare_home(spec)
        await anyio.to_thread.run_sync(sandbox.state)  # the probe runs once, off the loop
        env = browser_env(spec)
        status_file = spec.home / "licence-status.json"
        if key:
            env[contract.STATUS_FILE_ENV] = str(status_file)
        args = [*launch_args(spec, "cloak"), *contract.fingerprint_args(seed, fingerprint_platform)]
        options = launch_options(
            spec, executable, args, env, ignore_default_args=list(contract.IGNORE_DEFAULT_ARGS)
        )
        try:
            browser, context = await start(playwright, spec, options)
        except Exception as exc:
            raise await self._failed(exc, executable, spec, status_file, key, holders) from None
        pid = await anyio.to_thread.run_sync(find_pid, spec.browser_id)
        handle = CloakHandle(
            spec.browser_id,
            browser,
            context,
            pid,
            profile=spec.user_data_dir.name if spec.user_data_dir is not None else "ephemeral",
            started=procfs.start_time(pid) if pid is not None else None,
            seats=self._seats,
        )
        self._seats.taken(handle)
        await anyio.to_thread.run_sync(book.launched, key, len(self._seats.in_use()))
        return handle

    async def _failed(
        self,
        exc: Exception,
        executable: Path,
        spec: LaunchSpec,
        status_file: Path,
        key: str | None,
        holders: dict[str, str],
    ) -> Refusal:
        text = str(exc)
        found = await anyio.to_thread.run_sync(licence.denial, text, status_file)
        if found is not None:
            if found.code == licence.SEAT_LIMIT:
                await anyio.to_thread.run_sync(
                    ledger().refused_at, key, len(holders), spec.key_source
                )
            return licence.refusal_for(
                found,
                key_source=spec.key_source,
                used=len(holders),
                holders=sorted(set(holders.values())),
            )
        return Refusal(
            "backend_unavailable",
            provider="cloak",
            reason=f"{executable} failed to start: {licence.why_it_failed(text or repr(exc))}",
            fix=f"run {executable} --version to see why; or point {contract.BINARY_ENV} at "
            "another CloakBrowser binary",
        )
