"""The ``liveview-web`` plugin: the ``web`` live-view transport, the ``live`` and ``handoff``
verbs, and the lifecycle hooks that keep viewers in step with leases.

Kept cheap to import (the keeper loads it at start): the server and websockets load with the
first link.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from browserbay.hookspecs import hookimpl
from browserbay.model import LeaseInfo, PluginVerb, TransportRow, VerbContext
from browserbay.paths import bay_paths
from browserbay.refusals import Refusal
from browserbay.scrub import scrub
from browserbay.verbs import PLUGIN, Arg, Verb

if TYPE_CHECKING:
    from browserbay.model import LiveHost
    from browserbay_liveview_web.server import WebTransport
    from browserbay_liveview_web.tickets import Mode

log = logging.getLogger("browserbay.liveview")

KIND = "web"


# -- verbs ----------------------------------------------------------------------------------


#: Why ``bay live`` hands out the screencast link instead of a vendor's viewer URL.
HELD_BACK = (
    "the vendor's own viewer URL carries a credential (a key or token in it), so it is not "
    "handed out: this is browserbay's screencast link instead"
)


async def _provider_view(ctx: VerbContext) -> tuple[dict[str, Any], str] | str | None:
    """The vendor's own viewer, for a provider whose row has the ``provider_view`` cell (a
    ``provider-view`` target): its browser is started to have one. None otherwise; a reason
    (a string) when the vendor's URL carries a credential — a URL that leaves the keeper is
    never one :func:`browserbay.scrub.scrub` would change."""
    row = ctx.providers.get(ctx.profile.provider)
    if row is None or not row.capabilities.provider_view:
        return None
    await ctx.page()
    url = ctx.live_view_url()
    if url is None:
        return None  # this session came without one: the screencast link instead
    if scrub(url) != url:
        log.info("%s: the vendor's viewer URL carries a credential; not handed out", row.id)
        return HELD_BACK
    data = {
        "url": url,
        "transport": "provider-view",
        "provider": row.id,
        "profile": ctx.profile.id,
    }
    text = (
        f"{url}\n"
        f"the {row.id} vendor's own live viewer of this browser: browserbay's Take over and "
        "Hand back do not apply there (your verbs are not paused while a human acts in it)"
    )
    return data, text


def live_target(args: Mapping[str, Any]) -> str | None:
    """``bay live w1``: the window whose lease the link shows."""
    target = args.get("target")
    return str(target) if target else None


#: What a revoked page is told it was revoked by.
REVOKED_BY = "bay live --revoke"


async def live_dashboard(ctx: VerbContext, transport: Transport) -> tuple[dict[str, Any], str]:
    """``bay live --all`` (the owner's channel only: the verb row's ``owner_only``): a link to
    the dashboard of every session; with ``--revoke``, every dashboard credential revoked."""
    web = transport()
    if ctx.args.get("revoke"):
        count = web.dashboard.revoke(REVOKED_BY + " --all")
        return {"revoked": count, "dashboard": True}, f"revoked {count} dashboard credential(s)"
    url = await web.dashboard_link()
    data: dict[str, Any] = {"url": url, "transport": KIND, "dashboard": True, "expires_in_s": 60}
    text = f"{url}\none use, open it within 60 s: every session's live state (owner's dashboard)"
    return _with_fingerprint(web, data, text)


def _with_fingerprint(
    web: WebTransport, data: dict[str, Any], text: str
) -> tuple[dict[str, Any], str]:
    """``data.tls_fingerprint`` always; the text says it the first time only."""
    if web.fingerprint is not None:
        data["tls_fingerprint"] = web.fingerprint
    news = web.fingerprint_news()
    if news is not None:
        text += (
            f"\nTLS certificate SHA-256 fingerprint (compare it with the browser's, once): {news}"
        )
    return data, text


async def live(ctx: VerbContext, transport: Transport) -> tuple[dict[str, Any], str]:
    if ctx.args.get("all"):
        return await live_dashboard(ctx, transport)
    wanted = live_target(ctx.args)
    if wanted is not None and ctx.target is None:
        raise Refusal(
            "not_your_window",
            window=wanted,
            held="not held by this session",
            holder=None,
        )
    note = ""
    if ctx.target is None:  # a window is always ours to show; a browser may be the vendor's
        viewed = await _provider_view(ctx)
        if isinstance(viewed, str):
            note = viewed
        elif viewed is not None:
            return viewed
    mode: Mode = "watch" if ctx.args.get("watch") else "control"
    key = ctx.target.profile.id if ctx.target is not None else ctx.profile.id
    web = transport()
    if ctx.args.get("revoke"):
        count = web.revoke(ctx.session.id, key, REVOKED_BY)
        data = {"revoked": count, "profile": ctx.profile.id}
        return data, f"revoked {count} live-view credential(s): their pages are cut off"
    url = await web.link(ctx.session.id, key, mode)
    data = {
        "url": url,
        "transport": KIND,
        "mode": mode,
        "expires_in_s": 60,
        "profile": ctx.profile.id,
    }
    if ctx.target is not None:
        data["target"] = key
    text = (
        f"{url}\n"
        f"one use, open it within 60 s ({mode}"
        + (": the human can watch and press Take over" if mode == "control" else "")
        + ")"
    )
    data, text = _with_fingerprint(web, data, text)
    if note:
        data["note"] = note
        text += f"\n{note}"
    return data, text


async def handoff(ctx: VerbContext, transport_of: Transport) -> tuple[dict[str, Any], str]:
    reason = str(ctx.args.get("reason") or "").strip()
    if not reason:
        raise Refusal(
            "usage", detail="handoff needs --reason (what the human should do)", verb="handoff"
        )
    left = ctx.deadline - time.monotonic() - 2.0
    wait = ctx.args.get("wait")
    if wait is None:
        wait = left
    elif float(wait) > left:
        raise Refusal(
            "usage",
            detail=f"--wait {float(wait):g} needs a longer deadline: add --timeout "
            f"{float(wait) + 10:g}",
            verb="handoff",
        )
    transport = transport_of()
    page = await ctx.page()  # the human must see a running browser (a viewer never starts one)
    sid, pid = ctx.session.id, ctx.profile.id
    transport.host.take_over(sid, pid, None, reason)
    url = await transport.link(sid, pid, "control")
    started = time.monotonic()
    await ctx.progress(
        f"handoff ({reason}): open this live view within 60 s, then press Hand "
        f"back when done:\n{url}"
    )
    # The wait holds no lock of the session: its other verbs are refused browser_paused at
    # once (on every road, MCP's too), and `bay live` gives the human a fresh link.
    async with ctx.waiting():
        handed = await transport.host.wait_handback(sid, pid, float(wait))
    if not handed:
        await transport.host.hand_back(sid, pid, "handoff", "timeout")
    page = await ctx.page()
    title = ""
    try:
        title = await page.title()
    except Exception:
        title = ""
    data = {
        "handed_back": handed,
        "url": page.url,
        "title": title,
        "reason": reason,
        "waited_s": round(time.monotonic() - started, 1),
        "link": url,
    }
    head = "the human handed back" if handed else f"nobody handed back within {float(wait):g}s"
    return data, f"{head}; the page is now at\n{page.url}"


Transport = Callable[[], "WebTransport"]


class LiveViewPlugin:
    """The plugin (the entry point names this class: one instance per load). Its transport
    is the one the keeper makes at its start (``TransportRow.factory``); the verbs and the
    lifecycle hooks reach it here."""

    def __init__(self) -> None:
        self._transports: list[WebTransport] = []

    def make_transport(self, host: LiveHost) -> WebTransport:
        from browserbay_liveview_web.server import WebTransport

        transport = WebTransport(host, os.environ, bay_paths().state)
        self._transports.append(transport)
        return transport

    def transport(self) -> WebTransport:
        for transport in self._transports:
            return transport
        raise Refusal(
            "backend_unavailable",
            provider="liveview-web",
            reason="the keeper made no live-view transport",
            fix="bay keeper logs   (then bay keeper stop; the next command starts a fresh keeper)",
        )

    @hookimpl
    def bay_keeper_stopping(self) -> None:
        """The keeper stops its transports next: they are let go (a viewer of a stopping
        keeper gets no more lease news)."""
        self._transports.clear()

    @hookimpl
    def bay_live_view_transports(self) -> list[TransportRow]:
        return [
            TransportRow(
                KIND,
                "A tab's CDP screencast or a native window's X11 frames in a web page on "
                "127.0.0.1 (watch, take over, hand back)",
                ("tab", "window"),
                self.make_transport,
            )
        ]

    async def live(self, ctx: VerbContext) -> tuple[dict[str, Any], str]:
        return await live(ctx, self.transport)

    async def handoff(self, ctx: VerbContext) -> tuple[dict[str, Any], str]:
        return await handoff(ctx, self.transport)

    @hookimpl
    def bay_verbs(self) -> list[PluginVerb]:
        return [
            PluginVerb(
                Verb(
                    "live",
                    PLUGIN,
                    "Print a one-use link (60 s) to watch your browser (or a window you hold) live "
                    "and take it over.",
                    (
                        Arg("target", "opt", "a window handle (w1) to show instead of the browser"),
                        Arg("watch", "flag", "a link that can only watch (no takeover)"),
                        Arg(
                            "all",
                            "flag",
                            "the owner's dashboard of every session (owner only)",
                        ),
                        Arg("revoke", "flag", "revoke the live links given so far: pages cut off"),
                    ),
                    needs=("has_cdp",),
                    example="bay live",
                    tool_profile="core",
                    owner_only=("all",),
                ),
                self.live,
                while_paused=True,
                target=live_target,
            ),
            PluginVerb(
                Verb(
                    "handoff",
                    PLUGIN,
                    "Pause and hand your browser to a human (a live link), until they hand back.",
                    (
                        Arg("reason", "value", "what the human should do (log in to X)"),
                        Arg(
                            "wait",
                            "value",
                            "seconds to wait (default: the --timeout)",
                            type="float",
                        ),
                    ),
                    needs=("has_cdp",),
                    example='bay handoff --reason "log in to the shop" --wait 300 --timeout 320',
                    tool_profile="core",
                ),
                self.handoff,
                while_paused=True,
            ),
        ]

    # -- lifecycle: keep viewers in step --------------------------------------------------

    @hookimpl
    def bay_lease_changed(self, lease: LeaseInfo, change: str) -> None:
        for transport in self._transports:
            ended = lease.ended if change == "detached" else None
            transport.lease_changed(lease.session.id, lease.profile.id, ended)

    @hookimpl
    def bay_takeover(self, lease: LeaseInfo, viewer: str) -> None:
        for transport in self._transports:
            transport.poke(lease.session.id, lease.profile.id)

    @hookimpl
    def bay_handback(self, lease: LeaseInfo, viewer: str) -> None:
        for transport in self._transports:
            transport.poke(lease.session.id, lease.profile.id)
