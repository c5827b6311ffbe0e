"""One set of guards on every road.

An action reaches a lease by one of six roads: the ``bay`` CLI, the Python API, the MCP
server (these three send frames on the keeper's socket), a trigger request, the
session-scoped CDP endpoint, and a ``bay run`` script (which drives the lease through that
endpoint). Whatever the road, the action passes :meth:`Guards.check` before anything of it
runs, in this order:

1. **pause**: a human holds the controls of the lease (a live-view takeover, a handoff):
   ``browser_paused``;
2. **restart gap**: the lease's profile is being switched to another backend:
   ``browser_restarting``;
3. **approval hooks**: every ``bay_before_verb`` implementation; the first refusal wins;
4. **fence**: a navigation's URL outside the lease's allowed domains: ``domain_refused``;

and then :meth:`Guards.done` tells ``bay_after_verb`` and writes the audit row, naming the
road. The road a client declares (``cli``, ``api``, ``mcp``) is only a label: the checks
are the same on every road, so a client that lies about it gains nothing.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from browserbay.keeper.leases import check_url_allowed
from browserbay.model import Ask, VerbCall, VerbOutcome
from browserbay.refusals import Refusal
from browserbay.urls import normalize_url

if TYPE_CHECKING:
    from browserbay.keeper.controls import Controls
    from browserbay.keeper.sessions import Lease
    from browserbay.plugins import Plugins

log = logging.getLogger("browserbay.keeper")

#: Every road an action may come by.
ROADS = ("cli", "api", "mcp", "trigger", "cdp", "run")
#: The roads a frame on the keeper's socket may declare (the keeper names the others).
FRAME_ROADS = frozenset({"cli", "api", "mcp"})

#: CDP methods that are a verb in all but name: judged as that verb on the ``cdp`` (or
#: ``run``) road, with the parameter that carries their URL.
CDP_VERBS: Mapping[str, tuple[str, str]] = {
    "Page.navigate": ("open", "url"),
    "Target.createTarget": ("open", "url"),
}


def frame_road(frame: Mapping[str, Any]) -> str:
    """The road a frame declares; ``api`` when it declares none the keeper knows."""
    road = frame.get("road")
    return road if isinstance(road, str) and road in FRAME_ROADS else "api"


def navigation(verb: str, args: Mapping[str, Any]) -> str | None:
    """The URL a core verb navigates to (``open``, ``login-check``, ``tab new``), or None."""
    if verb in ("open", "login-check"):
        url = args.get("url")
    elif verb == "tab" and args.get("action") == "new":
        url = args.get("arg")
    else:
        return None
    return str(url) if url else None


class Guards:
    """The one guard path (see the module's docstring). One instance per keeper."""

    def __init__(
        self,
        plugins: Plugins,
        controls: Controls,
        restart_gap: Callable[[str, str], None],
        audit: Callable[[VerbCall, bool, str | None], Awaitable[None]],
    ):
        self.plugins = plugins
        self.controls = controls
        self.restart_gap = restart_gap
        """``restart_gap(profile_id, handle)`` raises ``browser_restarting`` in a switch's gap."""
        self._audit = audit
        """Writes an audit row; a row that cannot be written never fails the action."""

    def check(
        self,
        call: VerbCall,
        lease: Lease | None = None,
        *,
        held: Lease | None = None,
        exempt: bool = False,
        url: str | None = None,
        ending: Sequence[Lease] = (),
        asks: list[Ask] | None = None,
    ) -> VerbCall:
        """Raise the first refusal of pause, restart gap, approval hooks and fence; answer
        the call as the hooks saw it (with the lease's profile).

        ``lease``: the browser lease the action acts on (None: a verb on no lease, which
        only the hooks judge). ``held``: the lease whose controls a human may hold when it
        is not ``lease`` (a native window's target lease). ``exempt``: a verb that works
        while paused (``bay live``, ``bay handoff``). ``url``: the navigation's URL when
        it is not one of a core verb's arguments (a CDP call's). ``ending``: the leases the
        action ends (``bay close``, a trigger ``stop``): a human holding the controls of any
        of them, or a restart gap on any, refuses it too — nobody's road cuts a human off.
        ``asks``: where a hook's Ask goes, for a caller that waits for the human's answer
        before the verb runs (the keeper's page verbs); without it an Ask is refused."""
        paused = held if held is not None else lease
        # The owner (its socket, its trigger intake) is told whose lease a human took; a session
        # socket, or a CDP endpoint whoever holds its URL, is told "another session".
        owner = call.actor in ("owner", "trigger")
        for each in (*([paused] if paused is not None else []), *ending):
            self.controls.check(each, exempt, owner)
        for each in (*([lease] if lease is not None else []), *ending):
            self.restart_gap(each.profile.id, each.handle)
        if lease is not None and call.profile is None:
            call = dataclasses.replace(call, profile=lease.profile)
        answer = self.plugins.hooks.bay_before_verb(call=call)
        if isinstance(answer, Refusal):
            raise answer.with_defaults(verb=call.verb, plugin="a policy")
        if answer is not None:
            if asks is None:  # nowhere to wait for a human: never taken for a yes
                raise Refusal(
                    "verb_refused",
                    verb=call.verb,
                    plugin=answer.plugin or "a policy",
                    reason=answer.reason,
                    fix="ask the user to approve it; only a page verb can wait for a human's "
                    "approval in the live view",
                )
            asks.append(answer)
        if lease is not None:
            if url is not None:  # a CDP call's URL, as the browser will read it
                check_url_allowed(url, lease.allowed_domains)
            elif (target := navigation(call.verb, call.args)) is not None:
                check_url_allowed(normalize_url(target), lease.allowed_domains)
        return call

    async def cdp_call(
        self, lease: Lease, method: str, params: Mapping[str, Any], road: str = "cdp"
    ) -> None:
        """A call on the lease's scoped CDP endpoint (road ``cdp``; ``run`` for a ``bay
        run`` script's). One that is a verb in all but name (:data:`CDP_VERBS`) passes the
        guards as that verb and is audited — refused, or forwarded (what the browser then
        makes of it is the client's to read). Any other call is judged by the census alone
        (see browserbay_cdp.census). Raises the refusal."""
        spec = CDP_VERBS.get(method)
        if spec is None:
            return
        verb, key = spec
        url = params.get(key)
        url = url if isinstance(url, str) else None
        call = VerbCall(verb, {"url": url} if url else {}, lease.session, lease.profile, road)
        began = time.monotonic()
        try:
            self.check(call, lease, url=url)
        except Refusal as r:
            await self.done(call, VerbOutcome(False, r.code, (time.monotonic() - began) * 1000))
            raise
        await self.done(call, VerbOutcome(True, None, (time.monotonic() - began) * 1000))

    async def done(self, call: VerbCall, outcome: VerbOutcome) -> None:
        """``bay_after_verb``, then the audit row (with the road)."""
        self.plugins.hooks.bay_after_verb(call=call, outcome=outcome)
        await self.audit(call, outcome)

    async def audit(self, call: VerbCall, outcome: VerbOutcome) -> None:
        """The audit row of an action: who, where, what, by which road, whether."""
        await self._audit(call, outcome.ok, outcome.code)
