"""The session-scoped CDP endpoint: a loopback WebSocket (one credential per lease in its path)
that speaks CDP to the lease's browser but exposes only the lease's own targets.

Each client connection gets its own upstream connection to the browser (so its auto-attach
and discovery settings are its own): a WebSocket to the browser's real endpoint, or, for a
browser the keeper drives over a pipe, a relay over the keeper's Playwright
(:mod:`browserbay_cdp.relay`). Every message is judged on the way:

- **scope** (always): ``Target.*`` answers, events and auto-attach are filtered to the lease's
  tabs (plus what they open: popups, their frames and workers, and tabs this grant created,
  which join the lease; a ``tab`` target is the lease's when its page is,
  :mod:`browserbay_cdp.tabs`); a ``targetId``/``sessionId``/``browserContextId`` that is not the
  lease's is refused ``not_your_tab``; a method on the browser session itself reaches every
  session's tabs and is refused ``method_refused`` unless its rule says it reaches nothing
  but the lease's own (:data:`~browserbay_cdp.census.ON_BROWSER`); a target auto-attached
  for somebody else is resumed and detached unseen.
- **the rule** of the method's row, whatever session the call arrives on
  (:mod:`browserbay_cdp.policy`): URLs pass the scheme rule of ``bay open`` and never reach
  the browser's own DevTools port, files come only from the lease's upload directory, a
  ``browserContextId`` is the lease's, downloads stay the keeper's.
- **the census** (:mod:`browserbay_cdp.census`): a ``refused`` method is refused on every
  lease; while a human holds the controls of the lease, ``input``/``view``/``page-mutation``
  calls are refused ``browser_interrupted`` (calls of those classes still waiting on the
  browser are answered so at once, and a running script is terminated), and a method with no
  row is refused by name.

It runs on the keeper's event loop (``websockets``), binds 127.0.0.1 only, and a grant ends
with its lease (``bay close``, idle, detach): its connections are closed then.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from browserbay import wsguard
from browserbay.refusals import Refusal
from browserbay_cdp.census import FENCED, ON_BROWSER, TABLE, Census, load
from browserbay_cdp.policy import (
    check_files,
    check_redirects,
    check_url,
    files_of,
    make_upload_dir,
    remove_upload_dir,
    upload_dir_for,
)
from browserbay_cdp.relay import PipeRelay, Upstream, WsUpstream
from browserbay_cdp.tabs import TabPages

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Page

    from browserbay.model import LiveLease

log = logging.getLogger("browserbay.cdp")

#: Calls that run page script: cut by a takeover, they are terminated in the page too.
SCRIPT_CALLS = frozenset({"Runtime.evaluate", "Runtime.callFunctionOn", "Runtime.runScript"})
#: How often a connection looks whether its lease was paused (a handoff has no hook).
PAUSE_POLL = 0.05
ADOPT_WAIT = 5.0
#: The query a ``bay run`` script's endpoint URL carries: its calls are audited as road
#: ``run`` (a label: the guards are the same on both roads).
RUN_ROAD = "road=run"
Guard = Callable[[str, dict[str, Any], str], Awaitable[None]]


def _error(cid: Any, session: str | None, refusal: Refusal) -> dict[str, Any]:
    frame = refusal.frame()
    msg: dict[str, Any] = {
        "id": cid,
        "error": {
            "code": -32000,
            "message": f"{refusal.code}: {refusal.message} (way out: {refusal.way_out})",
            "data": json.dumps(frame),
        },
    }
    if session is not None:
        msg["sessionId"] = session
    return msg


def paused_by(lease: LiveLease) -> str | None:
    """Who holds the controls of the lease when it is not the agent, else None."""
    pause = lease.pause_info()
    if pause is not None:
        return pause.by
    if lease.info().input_holder == "user":
        return "a human in the live view"
    return None


def fence(census: Census, method: str, paused: str | None, handle: str) -> Refusal | None:
    """The census's verdict on a call (scoping aside): None to let it through."""
    klass = census.klass(method)
    if klass == "refused":
        return Refusal(
            "method_refused",
            method=method,
            why="on every lease: it acts on the whole browser or escapes the session's scope "
            "(census class 'refused')",
            fix="do it in a browser of your own (bay use --ephemeral), or ask the user",
            klass=klass,
        )
    if paused is None:
        return None
    if klass is None:
        return Refusal(
            "method_refused",
            method=method,
            why=f"while a human holds the controls of profile {handle}: it has no row in the "
            f"census of {census.chrome} ({TABLE})",
            fix="wait for the handback, then run it again (a method with no row is forwarded "
            "while you drive)",
            klass=None,
        )
    if klass in FENCED:
        return interrupted(method, handle, paused, sent=False)
    return None


def interrupted(method: str, handle: str, by: str, sent: bool) -> Refusal:
    reached = (
        "it may already have reached the page: look before running it again"
        if sent
        else "it was not sent to the browser"
    )
    return Refusal(
        "browser_interrupted",
        verb=method,
        profile=handle,
        of=f"profile {handle}",
        by=by,
        reached=reached,
        may_have_reached_page=sent,
        command=f"the CDP call {method}",
    )


def browser_wide(method: str) -> Refusal:
    return Refusal(
        "method_refused",
        method=method,
        why="on the browser session: it reaches every session's tabs",
        fix="send it on a session of one of your tabs (Target.attachToTarget with a targetId "
        "from Target.getTargets)",
    )


def not_yours(what: str) -> Refusal:
    return Refusal("not_your_tab", tab=what)


@dataclass
class Pending:
    cid: Any
    method: str
    session: str | None
    klass: str | None
    params: dict[str, Any]
    internal: asyncio.Future[dict[str, Any]] | None = None
    cut: bool = False
    learned: bool = False
    """A createTarget answer whose target was learned while events waited on it."""


class Grant:
    """One lease's credential: its token, its browser's real endpoint, its connections."""

    def __init__(
        self,
        token: str,
        lease: LiveLease,
        upstream: str | None,
        context: BrowserContext,
        adopt: Callable[[Page], str],
        census: Census,
        guard: Guard | None = None,
    ):
        self.token = token
        self.lease = lease
        self.session_id = lease.session.id
        self.profile_id = lease.profile.id
        self.upstream = upstream
        self.context = context
        self.adopt = adopt
        self.census = census
        self.guard = guard
        """The keeper's guards (VerbContext.guard): pause, restart gap, bay_before_verb,
        domain fence and audit on a call that is a verb in all but name."""
        self.own: set[str] = set()
        """Targets created through this grant (they join the lease's tabs)."""
        self.conns: set[Conn] = set()
        self.kick = asyncio.Event()
        self._ids: dict[int, tuple[Page, str, str]] = {}
        self.tabs = TabPages(context.browser)
        """Which page each ``tab`` target holds: a tab is the lease's when its page is."""
        self.revoked = False
        self.upload: Path = upload_dir_for(self.session_id, self.profile_id)
        """The lease's upload directory: the only files a page may be handed."""
        port = urlsplit(upstream).port if upstream else None
        self.devtools_ports: frozenset[int] = frozenset({port} if port else ())
        """The browser's own DevTools port(s) as the keeper reaches it: no URL may load it."""

    @property
    def handle(self) -> str:
        return self.lease.profile.label

    async def connect(self) -> Upstream:
        """A client connection's own way to the browser: a WebSocket to its endpoint, or,
        for a browser driven over a pipe (no endpoint: ``upstream`` is None), a relay over a
        browser-level CDP session of the keeper's Playwright."""
        if self.upstream is not None:
            return await WsUpstream.open(self.upstream)
        browser = self.context.browser
        if browser is None:
            raise RuntimeError("the lease's context has no browser to relay to")
        return await PipeRelay.open(browser)

    async def target_of(self, page: Page) -> tuple[str, str]:
        """``(targetId, browserContextId)`` of one of the keeper's pages (cached)."""
        hit = self._ids.get(id(page))
        if hit is not None and hit[0] is page:
            return hit[1], hit[2]
        cdp = await page.context.new_cdp_session(page)
        try:
            info = (await cdp.send("Target.getTargetInfo"))["targetInfo"]
        finally:
            with contextlib.suppress(Exception):
                await cdp.detach()
        found = (str(info["targetId"]), str(info.get("browserContextId", "")))
        self._ids[id(page)] = (page, *found)
        return found

    async def targets(self) -> dict[str, str]:
        """The lease's targets now: ``targetId -> browserContextId``."""
        out: dict[str, str] = {}
        for page in list(self.lease.pages().values()):
            with contextlib.suppress(Exception):
                tid, ctx = await self.target_of(page)
                out[tid] = ctx
        live = {id(p) for p in self.lease.pages().values()}
        for key in [k for k in self._ids if k not in live]:
            self._ids.pop(key, None)
        for tid in self.own:
            out.setdefault(tid, "")
        return out

    async def take(self, target_id: str) -> None:
        """A tab created through the grant becomes one of the lease's tabs (the keeper's
        Playwright sees it a moment later; the ``Target.createTarget`` answer waits for it)."""
        end = time.monotonic() + ADOPT_WAIT
        while time.monotonic() < end and not self.revoked:
            for page in list(self.context.pages):
                with contextlib.suppress(Exception):
                    tid, _ctx = await self.target_of(page)
                    if tid == target_id:
                        self.adopt(page)
                        return
            await asyncio.sleep(0.02)
        log.info("a tab made through the scoped endpoint (%s) was not adopted", target_id)


class Conn:
    """One client connection and its own upstream connection."""

    def __init__(self, grant: Grant, client: ServerConnection, up: Upstream, road: str = "cdp"):
        self.grant = grant
        self.road = road
        """``cdp``, or ``run`` for a ``bay run`` script's connection (what the audit names)."""
        self.client = client
        self.up = up
        self.ids = itertools.count(1)
        self.pending: dict[int, Pending] = {}
        self.sessions: dict[str, str] = {}
        """sessionId -> targetId: the target sessions this client may use."""
        self.browser_sessions: set[str] = set()
        """Sessions of ``Target.attachToBrowserTarget`` (Playwright's ``new_cdp_session``
        makes one): judged like the browser session itself."""
        self.grown: set[str] = set()
        """Targets our tabs opened or contain (popups, frames, workers)."""
        self.known: dict[str, str] = {}
        self.creating = 0
        self.holding: list[dict[str, Any]] | None = None
        self.warned: set[str] = set()
        self.tasks: set[asyncio.Task[None]] = set()

    # -- scope ------------------------------------------------------------------------

    async def ours(self, target_id: str | None, refresh: bool = True) -> bool:
        """Whether a target is the lease's: one of its tabs' pages, what they opened or
        contain, one made through the grant, or the ``tab`` target holding one of those."""
        if not target_id:
            return False
        if self._mine(target_id):
            return True
        if refresh:
            self.known = await self.grant.targets()
            if self._mine(target_id):
                return True
            page = await self.grant.tabs.page_of(target_id)
        else:
            page = self.grant.tabs.known(target_id)
        return page is not None and self._mine(page)

    def _mine(self, target_id: str) -> bool:
        return target_id in self.known or target_id in self.grown or target_id in self.grant.own

    async def contexts(self) -> set[str]:
        self.known = await self.grant.targets()
        return {c for c in self.known.values() if c}

    async def check_scope(
        self, method: str, params: dict[str, Any], sid: str | None, rule: str
    ) -> None:
        """Raise the refusal when the call reaches outside the lease."""
        target = params.get("targetId")
        if target is not None and not await self.ours(str(target)):
            raise not_yours(f"target {target}")
        if method == "Target.detachFromTarget":
            other = params.get("sessionId")
            if (
                other is not None
                and other not in self.sessions
                and other not in self.browser_sessions
            ):
                raise not_yours(f"session {other}")
        context = params.get("browserContextId")
        if context is not None and str(context) not in await self.contexts():
            raise not_yours(f"browser context {context}")
        if method.startswith("Target.") or sid is not None:
            return
        if rule not in ON_BROWSER:
            raise browser_wide(method)

    async def check_params(
        self, method: str, params: dict[str, Any], sid: str | None, rule: str
    ) -> dict[str, Any]:
        """Raise the refusal when the method's rule refuses its parameters; answers the
        parameters to send (a ``context`` call on the browser session gets the lease's own
        ``browserContextId`` when it named none: the default one may be somebody else's)."""
        if method == "Target.createTarget" and not params.get("browserContextId"):
            # The browser's default context may be nobody's or everybody's (an ephemeral
            # browser's, which every session's client would share): a new tab goes in the
            # lease's own context.
            params = dict(params, browserContextId=await self.lease_context(method))
        if rule == "url" and method in ("Fetch.fulfillRequest", "Fetch.continueResponse"):
            check_redirects(method, params, self.grant.devtools_ports)
        elif rule == "url" and (method != "Fetch.continueRequest" or "url" in params):
            check_url(method, params.get("url", ""), self.grant.devtools_ports)
        elif rule == "files":
            files = files_of(method, params)
            await asyncio.to_thread(check_files, method, files, self.grant.upload)
        elif rule == "context" and sid is None and "browserContextId" not in params:
            params = dict(params, browserContextId=await self.lease_context(method))
        return params

    async def lease_context(self, method: str) -> str:
        """The lease's one browser context (what a call that names none acts in)."""
        mine = sorted(await self.contexts())
        if len(mine) != 1:
            raise Refusal(
                "method_refused",
                method=method,
                why="on the browser session without a browserContextId: the lease has "
                f"{len(mine)} browser contexts",
                fix="name one of yours (Target.getBrowserContexts lists them)",
            )
        return mine[0]

    # -- client -> browser ------------------------------------------------------------

    async def from_client(self) -> None:
        async for raw in self.client:
            log.debug("client> %.300s", raw)
            try:
                msg = json.loads(raw)
                cid, method = msg["id"], str(msg["method"])
            except (ValueError, KeyError, TypeError):
                await self.send({"error": {"code": -32700, "message": "not a CDP message"}})
                continue
            params = msg.get("params") or {}
            sid = msg.get("sessionId")
            if not isinstance(params, dict):
                await self.send({"id": cid, "error": {"code": -32602, "message": "params"}})
                continue
            try:
                known = sid in self.sessions or sid in self.browser_sessions
                if sid is not None and not known:
                    raise not_yours(f"session {sid}")
                level = None if sid in self.browser_sessions else sid
                by = paused_by(self.grant.lease)
                refusal = fence(self.grant.census, method, by, self.grant.handle)
                if refusal is not None:
                    raise refusal
                rule = self.grant.census.rule(method)
                if rule == "local":
                    answer = {"id": cid, "result": {}}
                    await self.send(dict(answer, sessionId=sid) if sid else answer)
                    continue
                await self.check_scope(method, params, level, rule)
                params = await self.check_params(method, params, level, rule)
                if self.grant.guard is not None:  # the guards every road passes
                    await self.grant.guard(method, params, self.road)
            except Refusal as r:
                await self.send(_error(cid, sid, r))
                continue
            klass = self.grant.census.klass(method)
            if klass is None and method not in self.warned:
                self.warned.add(method)
                log.info("forwarding %s, which has no row in the census", method)
            if method == "Target.createTarget":
                self.creating += 1
            uid = next(self.ids)
            self.pending[uid] = Pending(cid, method, sid, klass, params)
            await self.up.send(dict(msg, id=uid, params=params))

    async def internal(self, method: str, params: dict[str, Any], sid: str | None) -> None:
        """A call of our own (resume or detach somebody else's target); its answer is dropped."""
        uid = next(self.ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[uid] = Pending(None, method, sid, None, params, internal=future)
        msg: dict[str, Any] = {"id": uid, "method": method, "params": params}
        if sid is not None:
            msg["sessionId"] = sid
        await self.up.send(msg)

    # -- browser -> client ------------------------------------------------------------

    async def from_browser(self) -> None:
        async for msg in self.up.messages():
            log.debug("browser> %.300s", msg)
            await self.feed(msg)

    async def feed(self, msg: dict[str, Any]) -> None:
        """Events about a target nobody knows yet wait (in order, with everything after
        them) while a ``Target.createTarget`` of ours is unanswered: it may be that tab."""
        if self.holding is None:
            await self.dispatch(msg)
            return
        self.holding.append(msg)
        if self._create_answer(msg):
            queue, self.holding = self.holding, None
            for held in queue:
                await self.feed(held)

    def _create_answer(self, msg: dict[str, Any]) -> bool:
        """A ``Target.createTarget`` answer while events wait on it: learn its target now."""
        p = self.pending.get(msg.get("id", -1))
        if p is None or p.method != "Target.createTarget" or p.learned:
            return False
        p.learned = True
        self.creating = max(0, self.creating - 1)
        target = (msg.get("result") or {}).get("targetId")
        if target:
            self.grant.own.add(str(target))
        return True

    async def dispatch(self, msg: dict[str, Any]) -> None:
        if "id" in msg:
            await self.answer(msg)
            return
        method = str(msg.get("method", ""))
        params = msg.get("params") or {}
        sid = msg.get("sessionId")
        if sid is not None and sid not in self.sessions and sid not in self.browser_sessions:
            return  # a session of a target we hid (or are detaching)
        parent = None if sid in self.browser_sessions else sid
        if method == "Target.attachedToTarget":
            await self.attached(msg, params, parent)
            return
        if method == "Target.detachedFromTarget":
            gone = params.get("sessionId")
            if gone in self.browser_sessions:
                self.browser_sessions.discard(gone)
            elif gone in self.sessions:
                self.sessions.pop(gone, None)
            else:
                return
        elif method in ("Target.targetCreated", "Target.targetInfoChanged"):
            info = params.get("targetInfo") or {}
            if not await self.ours_or_grow(info, parent):
                if self.creating and method == "Target.targetCreated":
                    self.holding = [msg]
                return
        elif method in ("Target.targetDestroyed", "Target.targetCrashed"):
            if not await self.ours(params.get("targetId"), refresh=False):
                return
        elif method == "Target.receivedMessageFromTarget":
            return
        elif method.startswith("Browser.download"):
            frame = params.get("frameId")
            if not await self.ours(frame, refresh=False):
                return
        await self.send(msg)

    async def ours_or_grow(self, info: dict[str, Any], parent: str | None) -> bool:
        target = info.get("targetId")
        if await self.ours(target):
            return True
        related = [info.get("openerId"), info.get("openerFrameId"), info.get("parentFrameId")]
        grows = parent is not None
        for r in related:
            grows = grows or bool(r and await self.ours(str(r), refresh=False))
        if grows:
            self.grown.add(str(target))
        return grows

    async def attached(self, msg: dict[str, Any], params: dict[str, Any], sid: str | None) -> None:
        """``sid``: the parent session when it is one of our tabs' (None: a browser one)."""
        info = params.get("targetInfo") or {}
        new = str(params.get("sessionId"))
        if info.get("type") == "browser":  # Target.attachToBrowserTarget's own session
            self.browser_sessions.add(new)
            await self.send(msg)
            return
        if await self.ours_or_grow(info, sid):
            self.sessions[new] = str(info.get("targetId"))
            await self.send(msg)
            return
        if self.creating:
            self.holding = [msg]  # it may be the tab being created: decide at its answer
            return
        # Somebody else's target, auto-attached: let it run, and let it go unseen.
        if params.get("waitingForDebugger"):
            await self.internal("Runtime.runIfWaitingForDebugger", {}, new)
        await self.internal("Target.detachFromTarget", {"sessionId": new}, msg.get("sessionId"))

    async def answer(self, msg: dict[str, Any]) -> None:
        p = self.pending.pop(msg["id"], None)
        if p is None:
            return
        if p.internal is not None:
            if not p.internal.done():
                p.internal.set_result(msg)
            return
        if p.method == "Target.createTarget":
            if not p.learned:
                self.creating = max(0, self.creating - 1)
            target = (msg.get("result") or {}).get("targetId")
            if target:
                self.grant.own.add(str(target))
                task = asyncio.get_running_loop().create_task(self.adopted(p, msg, str(target)))
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)
                return
        if p.cut:
            return  # answered browser_interrupted at the takeover
        result = msg.get("result")
        if isinstance(result, dict):
            await self.filter_result(p, result)
        await self.send(dict(msg, id=p.cid))

    async def adopted(self, p: Pending, msg: dict[str, Any], target: str) -> None:
        """Answer a ``Target.createTarget`` once its tab is one of the lease's (``bay tab
        list`` shows it by then); the connection's other traffic goes on meanwhile."""
        await self.grant.take(target)
        if not p.cut:
            await self.send(dict(msg, id=p.cid))

    async def filter_result(self, p: Pending, result: dict[str, Any]) -> None:
        if p.method == "Target.getTargets":
            infos = result.get("targetInfos") or []
            kept = []
            for info in infos:
                if await self.ours_or_grow(info, None):
                    kept.append(info)
            result["targetInfos"] = kept
        elif p.method == "Target.attachToTarget" and result.get("sessionId"):
            self.sessions[str(result["sessionId"])] = str(p.params.get("targetId"))
        elif p.method == "Target.attachToBrowserTarget" and result.get("sessionId"):
            self.browser_sessions.add(str(result["sessionId"]))
        elif p.method == "Target.getBrowserContexts":
            mine = await self.contexts()
            result["browserContextIds"] = [
                c for c in result.get("browserContextIds") or [] if c in mine
            ]
            if result.get("defaultBrowserContextId") not in mine:
                result.pop("defaultBrowserContextId", None)

    # -- the takeover -----------------------------------------------------------------

    async def watch(self) -> None:
        """Cut calls of fenced classes still waiting on the browser when the lease pauses."""
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.grant.kick.wait(), PAUSE_POLL)
            by = paused_by(self.grant.lease)
            if by is None:
                continue
            for p in list(self.pending.values()):
                if p.internal is not None or p.cut:
                    continue
                if p.klass is None or p.klass in FENCED:
                    p.cut = True
                    refusal = interrupted(p.method, self.grant.handle, by, sent=True)
                    await self.send(_error(p.cid, p.session, refusal))
                    if p.method in SCRIPT_CALLS and p.session is not None:
                        await self.internal("Runtime.terminateExecution", {}, p.session)

    # -- plumbing ---------------------------------------------------------------------

    async def send(self, msg: dict[str, Any]) -> None:
        log.debug("<client %.300s", msg)
        with contextlib.suppress(ConnectionClosed):
            await self.client.send(json.dumps(msg))

    async def run(self) -> None:
        tasks = [
            asyncio.ensure_future(self.from_client()),
            asyncio.ensure_future(self.from_browser()),
            asyncio.ensure_future(self.watch()),
        ]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in [*tasks, *self.tasks]:
                t.cancel()
            for t in tasks:
                with contextlib.suppress(BaseException):
                    await t
            with contextlib.suppress(Exception):
                await self.up.close()

    async def close(self, reason: str) -> None:
        with contextlib.suppress(Exception):
            await self.client.close(1008, reason)
        with contextlib.suppress(Exception):
            await self.up.close()


@dataclass
class ScopedServer:
    """The one endpoint server of the keeper (started at the first grant)."""

    grants: dict[str, Grant] = field(default_factory=dict)
    by_lease: dict[tuple[str, str], Grant] = field(default_factory=dict)
    server: Server | None = None
    port: int = 0
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def start(self) -> None:
        async with self._lock:
            if self.server is not None:
                return
            self.server = await serve(
                self._serve,
                "127.0.0.1",
                0,
                process_request=self._http,
                create_connection=wsguard.capped_connection(),
                open_timeout=wsguard.PREAUTH_TIMEOUT,
                max_size=None,
                ping_interval=None,
                compression=None,
            )
            self.port = int(next(iter(self.server.sockets)).getsockname()[1])
            log.info("session-scoped CDP endpoint on 127.0.0.1:%d", self.port)

    def url(self, grant: Grant) -> str:
        return f"ws://127.0.0.1:{self.port}/devtools/browser/{grant.token}"

    def http_url(self, grant: Grant) -> str:
        return f"http://127.0.0.1:{self.port}/{grant.token}"

    async def grant(
        self,
        lease: LiveLease,
        upstream: str | None,
        context: BrowserContext,
        adopt: Callable[[Page], str],
        guard: Guard | None = None,
    ) -> Grant:
        await self.start()
        key = (lease.session.id, lease.profile.id)
        old = self.by_lease.get(key)
        if old is not None and old.upstream == upstream and old.context is context:
            return old
        if old is not None:
            self.revoke(*key, keep_uploads=True)  # the same lease: the same directory
        grant = Grant(secrets.token_urlsafe(24), lease, upstream, context, adopt, load(), guard)
        await asyncio.to_thread(make_upload_dir, grant.upload)
        self.grants[grant.token] = grant
        self.by_lease[key] = grant
        return grant

    def revoke(self, session_id: str, profile_id: str, keep_uploads: bool = False) -> None:
        grant = self.by_lease.pop((session_id, profile_id), None)
        if grant is None:
            return
        grant.revoked = True
        self.grants.pop(grant.token, None)
        for conn in list(grant.conns):
            self._spawn(conn.close("the lease ended"))
        self._spawn(grant.tabs.close())
        if not keep_uploads:
            self._spawn(asyncio.to_thread(remove_upload_dir, grant.upload))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def kick(self, session_id: str, profile_id: str) -> None:
        grant = self.by_lease.get((session_id, profile_id))
        if grant is not None:
            grant.kick.set()
            grant.kick = asyncio.Event()

    def _token(self, path: str) -> tuple[Grant | None, str]:
        parts = [p for p in path.split("?", 1)[0].split("/") if p]
        if len(parts) == 3 and parts[:2] == ["devtools", "browser"]:
            return self.grants.get(parts[2]), "ws"
        if len(parts) == 3 and parts[1:] == ["json", "version"]:
            return self.grants.get(parts[0]), "version"
        return None, "none"

    def _http(self, connection: ServerConnection, request: Request) -> Response | None:
        grant, kind = self._token(request.path)
        if grant is None:
            return connection.respond(HTTPStatus.FORBIDDEN, "unknown or revoked credential\n")
        if request.headers.get("Origin"):  # a web page, not a CDP client: never
            return connection.respond(HTTPStatus.FORBIDDEN, "no web origin may connect\n")
        full = wsguard.refusal(connection, len(grant.conns)) if kind == "ws" else None
        if full is not None:
            return connection.respond(HTTPStatus(full[0]), full[1])
        if kind == "version":
            body = {
                "Browser": "browserbay scoped endpoint",
                "Protocol-Version": "1.3",
                "webSocketDebuggerUrl": self.url(grant),
            }
            response = connection.respond(HTTPStatus.OK, json.dumps(body))
            response.headers["Content-Type"] = "application/json"
            return response
        return None

    async def _serve(self, client: ServerConnection) -> None:
        grant, _kind = self._token(client.request.path if client.request else "")
        if grant is None or grant.revoked:
            await client.close(1008, "unknown or revoked credential")
            return
        try:
            up = await grant.connect()
        except Exception as exc:
            log.warning("the scoped endpoint could not reach its browser: %r", exc)
            await client.close(1011, "the browser does not answer")
            return
        query = client.request.path.partition("?")[2] if client.request else ""
        conn = Conn(grant, client, up, "run" if query == RUN_ROAD else "cdp")
        grant.conns.add(conn)
        try:
            await conn.run()
        finally:
            grant.conns.discard(conn)
