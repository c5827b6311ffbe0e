"""Launch Chromium through Playwright's pipe transport: no debugging port is ever opened."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from browserbay import procfs, sandbox
from browserbay.model import LaunchSpec
from browserbay.refusals import Refusal
from browserbay_chromium.find import NotFound, find_chromium

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Playwright

#: Flags a closed network needs (no background fetches that would fail noisily).
CLOSED_NETWORK_FLAGS: tuple[str, ...] = (
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-breakpad",
    "--disable-crash-reporter",
)

#: The environment passed through to the browser; everything else (keys!) stays out.
PASSTHROUGH_ENV: tuple[str, ...] = ("PATH", "LANG", "LC_ALL", "TZ", "DISPLAY", "WAYLAND_DISPLAY")


#: Longest TMPDIR handed to Chromium (its singleton socket path is ~40 bytes longer).
MAX_TMPDIR = 60


def marker(browser_id: str) -> str:
    """An inert switch that names the browser in its own command line (for the orphan
    sweep). Chromium ignores switches it does not know."""
    return f"--bay-browser={browser_id}"


def browser_env(spec: LaunchSpec) -> dict[str, str]:
    home = spec.home
    env = {k: os.environ[k] for k in PASSTHROUGH_ENV if k in os.environ}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
    )
    # Chromium puts its singleton socket under TMPDIR; AF_UNIX paths are capped near 108
    # bytes, so a deep home keeps the system TMPDIR.
    if len(os.fsencode(home / "tmp")) <= MAX_TMPDIR:
        env["TMPDIR"] = str(home / "tmp")
    env.update(spec.env)
    return env


def launch_args(spec: LaunchSpec, provider: str = "chromium") -> list[str]:
    """The switches of a launch; ``--no-sandbox`` only as root (:mod:`browserbay.sandbox`
    decides, and refuses a non-root launch the OS gives no sandbox)."""
    return [*CLOSED_NETWORK_FLAGS, marker(spec.browser_id), *sandbox.flags(provider)]


def prepare_home(spec: LaunchSpec) -> None:
    """The private HOME/XDG directories :func:`browser_env` points the browser at."""
    for sub in (".config", ".cache", ".local/share", "tmp"):
        (spec.home / sub).mkdir(parents=True, exist_ok=True, mode=0o700)


def launch_options(
    spec: LaunchSpec, executable: Path, args: list[str], env: dict[str, str], **extra: Any
) -> dict[str, Any]:
    """Playwright's launch keywords for a Chromium-family browser of ours: the binary, the
    switches, the environment, the proxy, and none of Playwright's signal handlers (the
    keeper decides when a browser stops)."""
    options: dict[str, Any] = {
        "executable_path": str(executable),
        "headless": spec.headless,
        "args": args,
        "env": env,
        "handle_sigint": False,
        "handle_sigterm": False,
        "handle_sighup": False,
        **sandbox.PLAYWRIGHT_OPTIONS,  # else Playwright adds --no-sandbox for every user
        **extra,
    }
    if spec.proxy:
        options["proxy"] = {"server": spec.proxy}
    return options


async def start(
    playwright: Playwright, spec: LaunchSpec, options: dict[str, Any]
) -> tuple[Browser | None, BrowserContext | None]:
    """Launch: the persistent context of the profile's directory, or (no directory) a
    browser whose contexts are isolated sessions."""
    if spec.user_data_dir is not None:
        ctx = await playwright.chromium.launch_persistent_context(
            str(spec.user_data_dir), **options
        )
        return ctx.browser, ctx
    return await playwright.chromium.launch(**options), None


def find_pid(browser_id: str) -> int | None:
    """The pid of the browser's main process, found by its marker switch in /proc."""
    needle = marker(browser_id)
    found = []
    for pid in procfs.pids():
        argv = procfs.argv(pid)
        if needle in argv and not any("--type=" in a for a in argv):
            found.append(pid)
    return min(found, default=None)


class ChromiumHandle:
    def __init__(
        self,
        browser_id: str,
        browser: Browser | None,
        context: BrowserContext | None,
        pid: int | None,
    ):
        self.browser_id = browser_id
        self.browser = browser
        self.persistent_context = context
        self.pid = pid
        self.cdp_url: str | None = None
        self.live_view_url: str | None = None
        self.context_options: Mapping[str, Any] | None = None

    async def close(self, timeout: float) -> None:
        """``Browser.close`` over CDP with a bounded wait. An ephemeral browser (nothing on
        disk to lose) that does not close in time is sent SIGTERM; a persistent one never."""
        with anyio.move_on_after(timeout):
            if self.persistent_context is not None:
                await self.persistent_context.close()
            elif self.browser is not None:
                await self.browser.close()
            return
        if self.persistent_context is None and self.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)


class ChromiumDriver:
    async def launch(self, playwright: Playwright, spec: LaunchSpec) -> ChromiumHandle:
        try:
            executable = find_chromium()
        except NotFound as exc:
            raise Refusal(
                "backend_unavailable", provider="chromium", reason=exc.reason, fix=exc.fix
            ) from None
        prepare_home(spec)
        await anyio.to_thread.run_sync(sandbox.state)  # the probe runs once, off the loop
        options = launch_options(spec, executable, launch_args(spec), browser_env(spec))
        try:
            browser, context = await start(playwright, spec, options)
        except Exception as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
            raise Refusal(
                "backend_unavailable",
                provider="chromium",
                reason=f"{executable} failed to start: {first}",
                fix=f"run {executable} --version to see why; or set BAY_CHROMIUM_PATH",
            ) from None
        pid = await anyio.to_thread.run_sync(find_pid, spec.browser_id)
        return ChromiumHandle(spec.browser_id, browser, context, pid)
