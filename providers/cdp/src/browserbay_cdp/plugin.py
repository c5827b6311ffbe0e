"""The ``cdp`` provider row (tier 1) and its verbs: ``bay chrome`` (start your own Chrome for
a ``cdp`` profile), ``bay cdp-url`` (a session-scoped CDP endpoint) and ``bay run`` (a
Playwright script on the session's tab through that endpoint)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from browserbay.hookspecs import hookimpl
from browserbay.model import (
    Capabilities,
    KeeperInfo,
    LeaseInfo,
    PluginVerb,
    ProviderRow,
    VerbContext,
)
from browserbay.refusals import Refusal
from browserbay.verbs import PLUGIN, Arg, Verb
from browserbay_cdp.chrome import chrome_verb
from browserbay_cdp.driver import CdpDriver
from browserbay_cdp.endpoint import check_options
from browserbay_cdp.run import run_script

if TYPE_CHECKING:  # made at the first grant (the proxy imports websockets' server, ~30 ms)
    from browserbay_cdp.proxy import Grant, ScopedServer

#: Every provider whose pages are driven over CDP: one with the ``cdp_endpoint`` cell is
#: reached at its browser's own endpoint, the others (driven over a pipe) through a relay.
_NEEDS = ("has_cdp",)


async def _grant(server: ScopedServer, ctx: VerbContext) -> tuple[Grant, str]:
    """The lease's grant and the target id of its current tab (the browser starts lazily)."""
    page = await ctx.page()
    if ctx.lease is None:
        raise Refusal(
            "capability_missing", provider=ctx.profile.provider, verb=ctx.verb, capability="has_cdp"
        )
    grant = await server.grant(ctx.lease, ctx.cdp_url(), page.context, ctx.adopt, ctx.guard)
    target, _context = await grant.target_of(page)
    return grant, target


async def cdp_url(server: ScopedServer, ctx: VerbContext) -> tuple[dict[str, Any], str]:
    grant, target = await _grant(server, ctx)
    assert ctx.lease is not None
    url = server.url(grant)
    data = {
        "url": url,
        "http_url": server.http_url(grant),
        "tab": ctx.lease.current,
        "target": target,
        "upload_dir": str(grant.upload),
        "valid": "for this session's lease on this profile: until bay close, bay detach or "
        "the idle timeout ends it",
    }
    return data, url


async def run(server: ScopedServer, ctx: VerbContext) -> tuple[dict[str, Any], str]:
    started = time.monotonic()
    timeout = ctx.deadline - started
    grant, target = await _grant(server, ctx)
    data = await run_script(ctx, server.url(grant), target, timeout)
    assert ctx.lease is not None
    page = ctx.lease.pages().get(ctx.lease.current or "")
    if page is not None:
        data.update(tab=ctx.lease.current, url=page.url, title=await page.title())
    where = f"tab {data.get('tab')} {data.get('url', '')} {data.get('title', '')!r}"
    summary = (
        f"ran {data['script']} in {time.monotonic() - started:.1f}s · {where} · "
        f"{data['output_chars']:,} characters of output"
    )
    if data.get("output_file"):
        summary += f" (full text: {data['output_file']})"
    text = summary if data["streamed"] else f"{data.get('output', '')}\n{summary}".lstrip("\n")
    return data, text


class CdpPlugin:
    """The plugin (the entry point names this class: one instance per load). Its
    session-scoped endpoint server is made for a keeper that started, at its first use (it
    listens from the first grant on): its module, with websockets' server, is not imported
    on a cold start's path to the first answer. The verbs and the lease hooks reach it here
    (with no server made yet there is no grant to revoke or kick)."""

    def __init__(self) -> None:
        self._started = False
        self._server: ScopedServer | None = None

    @hookimpl
    def bay_providers(self) -> list[ProviderRow]:
        return [
            ProviderRow(
                id="cdp",
                tier=1,
                summary="Somebody else's running browser, reached at a CDP URL (we never own its "
                "directory, never close it or a tab we did not open).",
                capabilities=Capabilities(
                    has_cdp=True,
                    owns_dir=False,
                    ephemeral_contexts=False,
                    screenshots=True,
                    key_scope="none",
                    lease_kind="tab",
                    headed=False,
                    allowed_domains=False,
                    cdp_endpoint=True,
                ),
                driver_factory=CdpDriver,
                options=("cdp_url",),
                check_options=check_options,
            )
        ]

    @hookimpl
    def bay_keeper_started(self, keeper: KeeperInfo) -> None:
        self._started = True

    def server(self) -> ScopedServer:
        if self._server is None and self._started:
            from browserbay_cdp.proxy import ScopedServer

            self._server = ScopedServer()
        if self._server is None:
            raise Refusal(
                "backend_unavailable",
                provider="cdp",
                reason="the session-scoped CDP endpoint was not made at the keeper's start",
                fix="bay keeper logs   (then bay keeper stop; the next command starts a fresh "
                "keeper)",
            )
        return self._server

    async def cdp_url(self, ctx: VerbContext) -> tuple[dict[str, Any], str]:
        return await cdp_url(self.server(), ctx)

    async def run(self, ctx: VerbContext) -> tuple[dict[str, Any], str]:
        return await run(self.server(), ctx)

    @hookimpl
    def bay_verbs(self) -> list[PluginVerb]:
        return [
            PluginVerb(
                Verb(
                    "chrome",
                    PLUGIN,
                    "Start your own Chrome with remote debugging on a directory of its own and "
                    "register it as a cdp profile.",
                    (
                        Arg("profile", "value", "the profile's label (default chrome)"),
                        Arg("headless", "flag", "no window (servers, tests)"),
                        Arg(
                            "allow_open_port",
                            "flag",
                            "accept a DevTools port every local user can drive (refused without)",
                        ),
                        Arg("args", "tail", "more Chrome switches, after --"),
                    ),
                    # The open port is a leak to every local user (security.md); a Chrome
                    # switch can run a program (--renderer-cmd-prefix) as the keeper's user.
                    owner_only=("allow_open_port", "args"),
                    example="bay chrome --profile work --allow-open-port",
                ),
                chrome_verb,
                lease_free=True,
            ),
            PluginVerb(
                Verb(
                    "cdp-url",
                    PLUGIN,
                    "A loopback CDP WebSocket URL that reaches only your tabs (for your own "
                    "Playwright or Puppeteer code).",
                    needs=_NEEDS,
                    example="bay cdp-url --profile work",
                ),
                self.cdp_url,
            ),
            PluginVerb(
                Verb(
                    "run",
                    PLUGIN,
                    "Run a Python script with page (your current tab), context and browser bound, "
                    "through your session-scoped CDP endpoint.",
                    (
                        Arg(
                            "script",
                            "pos",
                            "the script (Playwright's async API, top-level await)",
                            type="path",
                        ),
                    ),
                    needs=_NEEDS,
                    mutates=True,
                    # The script runs as the keeper's user, outside any sandbox of the caller:
                    # on a session socket, drive your tabs from your own code over bay cdp-url.
                    owner_only=("*",),
                    example="bay run steps.py --timeout 60",
                ),
                self.run,
            ),
        ]

    @hookimpl
    def bay_lease_changed(self, lease: LeaseInfo, change: str) -> None:
        if change == "detached" and self._server is not None:
            self._server.revoke(lease.session.id, lease.profile.id)

    @hookimpl
    def bay_takeover(self, lease: LeaseInfo, viewer: str) -> None:
        if self._server is not None:
            self._server.kick(lease.session.id, lease.profile.id)
