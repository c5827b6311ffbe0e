"""Launch Chromium over Playwright's pipe (no debugging port) and ask for every context to
emulate a phone: the handle's ``context_options`` is a Playwright device descriptor, which the
keeper passes to ``browser.new_context`` for each session (and this driver to a persistent
profile's context)."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio

from browserbay import procfs, sandbox
from browserbay.model import LaunchSpec
from browserbay.refusals import Refusal
from browserbay_phone import find

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Playwright

#: A closed network: no background fetches that would fail noisily.
FLAGS = (
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-breakpad",
)
#: The only variables the browser inherits (a key in the keeper's environment stays there).
PASSTHROUGH_ENV = ("PATH", "LANG", "LC_ALL", "TZ")


def marker(browser_id: str) -> str:
    """An inert switch naming the browser on its command line: the keeper's orphan sweep
    recognises its own browsers by it."""
    return f"--bay-browser={browser_id}"


def device(playwright: Playwright, name: str) -> dict[str, Any]:
    """The descriptor as ``new_context`` keywords (``default_browser_type`` is not one)."""
    try:
        descriptor = dict(playwright.devices[name])
    except KeyError:
        phones = [n for n in find.SUGGESTED if n in playwright.devices]
        raise Refusal(
            "backend_unavailable",
            provider="phone",
            reason=f"Playwright knows no device named {name!r}",
            fix=f"set BAY_PHONE_DEVICE to one of its {len(playwright.devices)} devices, e.g. "
            + ", ".join(phones),
        ) from None
    descriptor.pop("default_browser_type", None)
    return descriptor


def find_pid(browser_id: str) -> int | None:
    """The browser's main process: the one whose command line carries our marker."""
    needle = marker(browser_id)
    found = []
    for pid in procfs.pids():
        argv = procfs.argv(pid)
        if needle in argv and not any(a.startswith("--type=") for a in argv):
            found.append(pid)
    return min(found, default=None)


class PhoneHandle:
    def __init__(
        self,
        browser_id: str,
        browser: Browser | None,
        context: BrowserContext | None,
        pid: int | None,
        context_options: dict[str, Any],
    ):
        self.browser_id = browser_id
        self.browser = browser
        self.persistent_context = context
        self.pid = pid
        self.context_options: Mapping[str, Any] | None = context_options
        self.cdp_url: str | None = None
        self.live_view_url: str | None = None

    async def close(self, timeout: float) -> None:
        """Graceful (CDP ``Browser.close``) within ``timeout``; an ephemeral browser that does
        not close in time gets SIGTERM, a persistent one never (it would lose cookies)."""
        with anyio.move_on_after(timeout):
            if self.persistent_context is not None:
                await self.persistent_context.close()
            elif self.browser is not None:
                await self.browser.close()
            return
        if self.persistent_context is None and self.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)


class PhoneDriver:
    async def launch(self, playwright: Playwright, spec: LaunchSpec) -> PhoneHandle:
        executable = find.chromium()
        if executable is None:
            raise Refusal(
                "backend_unavailable",
                provider="phone",
                reason="no Chromium found",
                fix=find.INSTALL,
            )
        emulate = device(playwright, find.device_name())
        for sub in (".config", ".cache", "tmp"):
            (spec.home / sub).mkdir(parents=True, exist_ok=True, mode=0o700)
        env = {k: os.environ[k] for k in PASSTHROUGH_ENV if k in os.environ}
        env.update(HOME=str(spec.home), XDG_CONFIG_HOME=str(spec.home / ".config"))
        env.update(XDG_CACHE_HOME=str(spec.home / ".cache"), **spec.env)
        # --no-sandbox only as root; a non-root launch the OS gives no sandbox is refused.
        await anyio.to_thread.run_sync(sandbox.state)  # the probe runs once, off the loop
        args = [*FLAGS, marker(spec.browser_id), *sandbox.flags("phone")]
        common: dict[str, Any] = {
            "executable_path": executable,
            "headless": spec.headless,
            "args": args,
            "env": env,
            "handle_sigint": False,
            "handle_sigterm": False,
            "handle_sighup": False,
            **sandbox.PLAYWRIGHT_OPTIONS,  # else Playwright adds --no-sandbox for every user
        }
        if spec.proxy:
            common["proxy"] = {"server": spec.proxy}
        try:
            if spec.user_data_dir is not None:
                context = await playwright.chromium.launch_persistent_context(
                    str(spec.user_data_dir), **common, **emulate
                )
                browser = context.browser
            else:
                browser, context = await playwright.chromium.launch(**common), None
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [repr(exc)])[0]
            raise Refusal(
                "backend_unavailable",
                provider="phone",
                reason=f"{executable} failed to start: {first}",
                fix=f"run {executable} --version to see why (or set BAY_PHONE_CHROMIUM)",
            ) from None
        pid = await anyio.to_thread.run_sync(find_pid, spec.browser_id)
        return PhoneHandle(spec.browser_id, browser, context, pid, emulate)
