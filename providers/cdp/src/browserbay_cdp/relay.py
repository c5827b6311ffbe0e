"""The scoped endpoint's way to its browser: a WebSocket to the browser's own endpoint (a
``cdp`` profile, a vendor's browser) or, for a browser the keeper drives over a pipe
(``chromium``, ``cloak``: no debugging port is ever opened), a relay over a browser-level
CDP session of the keeper's own Playwright.

Both are an :class:`Upstream`: CDP messages (dicts) out and in, in the flat protocol every
client speaks. The pipe relay (:class:`PipeRelay`) translates, because Playwright's CDP
session sends on its own session only, and drops the messages of any flat session it did not
make: so each target session is attached in the wrapped (non-flat) protocol and its
messages travel in ``Target.sendMessageToTarget`` / ``Target.receivedMessageFromTarget``;
sessions nested in one (its workers, a tab's page) are flat inside it and addressed through
it. Chromium refuses a browser-level auto-attach of the wrapped kind, so that is emulated:
the relay discovers targets and attaches to those the client's filter keeps, as they come
(a new target cannot be held before it runs: ``waitForDebuggerOnStart`` is not honoured on
this road).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Protocol

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

if TYPE_CHECKING:
    from playwright.async_api import Browser, CDPSession

log = logging.getLogger("browserbay.cdp")

#: The events Chromium sends on a browser-level session (everything of a target's own comes
#: wrapped in ``Target.receivedMessageFromTarget``).
BROWSER_EVENTS: tuple[str, ...] = (
    "Target.attachedToTarget",
    "Target.detachedFromTarget",
    "Target.targetCreated",
    "Target.targetDestroyed",
    "Target.targetInfoChanged",
    "Target.targetCrashed",
    "Target.receivedMessageFromTarget",
    "Browser.downloadWillBegin",
    "Browser.downloadProgress",
)
#: Chromium's filter when a call names none: neither the browser nor ``tab`` targets.
DEFAULT_FILTER: tuple[dict[str, Any], ...] = (
    {"type": "browser", "exclude": True},
    {"type": "tab", "exclude": True},
    {},
)
#: How long an attach waits for the browser's announcement of its session.
ANNOUNCE_WAIT = 2.0
DISCOVERY = ("Target.targetCreated", "Target.targetDestroyed", "Target.targetInfoChanged")


class Upstream(Protocol):
    """One client connection's way to the browser."""

    async def send(self, msg: dict[str, Any]) -> None: ...

    def messages(self) -> AsyncIterator[dict[str, Any]]: ...

    async def close(self) -> None: ...


class WsUpstream:
    """The browser's own WebSocket endpoint."""

    def __init__(self, ws: ClientConnection):
        self._ws = ws

    @classmethod
    async def open(cls, url: str) -> WsUpstream:
        return cls(await connect(url, max_size=None, ping_interval=None, compression=None))

    async def send(self, msg: dict[str, Any]) -> None:
        with contextlib.suppress(ConnectionClosed):
            await self._ws.send(json.dumps(msg))

    async def messages(self) -> AsyncIterator[dict[str, Any]]:
        async for raw in self._ws:
            yield json.loads(raw)

    async def close(self) -> None:
        await self._ws.close()


def kept(filters: list[dict[str, Any]] | None, kind: str) -> bool:
    """Whether a target of ``kind`` passes a CDP ``TargetFilter`` (the first entry that
    matches its type decides; an entry without a type matches every type)."""
    for entry in filters if filters is not None else DEFAULT_FILTER:
        if "type" not in entry or entry["type"] == kind:
            return not entry.get("exclude", False)
    return False


class PipeRelay:
    """The flat protocol over one browser-level CDP session of the keeper's Playwright."""

    def __init__(self, cdp: CDPSession):
        self._cdp = cdp
        self._in: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._roots: set[str] = set()
        """Target sessions attached in the wrapped protocol (the client sees them flat)."""
        self._nested: dict[str, str] = {}
        """A flat session inside a wrapped one -> that wrapped session."""
        self._auto: tuple[list[dict[str, Any]] | None] | None = None
        """While the client's browser-level auto-attach is on: its filter (None: the
        default one)."""
        self._discover: tuple[list[dict[str, Any]] | None] | None = None
        """While the client asked for discovery: its filter."""
        self._attaching: set[str] = set()
        self._announced: dict[str, asyncio.Event] = {}
        self._virtual: set[str] = set()
        """The client's own browser sessions (``Target.attachToBrowserTarget``)."""
        self._via: dict[str, str] = {}
        """A target being attached from one of those -> it (its event is announced there)."""
        self._root_via: dict[str, str] = {}
        self._names = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()
        for name in BROWSER_EVENTS:
            cdp.on(name, self._event_handler(name))

    @classmethod
    async def open(cls, browser: Browser) -> PipeRelay:
        return cls(await browser.new_browser_cdp_session())

    # -- out --------------------------------------------------------------------------

    async def send(self, msg: dict[str, Any]) -> None:
        sid = msg.get("sessionId")
        cid = msg.get("id")
        method = str(msg.get("method", ""))
        params: dict[str, Any] = msg.get("params") or {}
        if sid is None or sid in self._virtual:
            self._spawn(self._browser_call(cid, method, params, sid))
        elif sid in self._roots:
            inner = {"id": cid, "method": method, "params": params}
            self._spawn(self._wrapped(cid, str(sid), str(sid), inner))
        elif sid in self._nested:
            self._spawn(self._wrapped(cid, str(sid), self._nested[sid], msg))
        else:
            self._answer_error(cid, sid, -32001, "Session with given id not found.")

    async def _browser_call(
        self, cid: Any, method: str, params: dict[str, Any], via: str | None
    ) -> None:
        """A call on the browser session, or on a browser session of the client's own
        (``via``: made by ``Target.attachToBrowserTarget``, answered and announced on it)."""
        try:
            if method == "Target.attachToTarget":
                result = await self._attach(str(params.get("targetId")), via)
            elif method == "Target.setAutoAttach" and via is None:
                result = await self._set_auto_attach(params)
            elif method == "Target.setDiscoverTargets" and via is None:
                result = await self._set_discover(params)
            elif method == "Target.attachToBrowserTarget":
                result = self._browser_session(via)
            elif method in ("Target.setAutoAttach", "Target.setDiscoverTargets"):
                result = {}  # a client browser session's own: not emulated (see the module)
            else:
                result = await self._cdp.send(method, params)
        except Exception as exc:
            self._answer_error(cid, via, -32000, _message(exc))
            return
        answer: dict[str, Any] = {"id": cid, "result": result}
        if via is not None:
            answer["sessionId"] = via
        self._in.put_nowait(answer)

    def _browser_session(self, via: str | None) -> dict[str, Any]:
        """A browser session of the client's own (Playwright's ``new_cdp_session`` makes one
        to attach from): a name of ours, its calls made on the relay's own session."""
        sid = f"bay-relay-browser-{next(self._names)}"
        self._virtual.add(sid)
        info = {"targetId": sid, "type": "browser", "title": "", "url": "", "attached": True}
        event: dict[str, Any] = {
            "method": "Target.attachedToTarget",
            "params": {"sessionId": sid, "targetInfo": info, "waitingForDebugger": False},
        }
        if via is not None:
            event["sessionId"] = via
        self._in.put_nowait(event)
        return {"sessionId": sid}

    async def _wrapped(self, cid: Any, sid: str, root: str, inner: dict[str, Any]) -> None:
        try:
            await self._cdp.send(
                "Target.sendMessageToTarget", {"sessionId": root, "message": json.dumps(inner)}
            )
        except Exception as exc:
            self._answer_error(cid, sid, -32001, _message(exc))

    async def _attach(self, target_id: str, via: str | None = None) -> dict[str, Any]:
        """Attach (wrapped), answering once its ``Target.attachedToTarget`` is queued: Chromium
        sends that event before the answer, and clients count on it (Playwright lists the
        pages attached by the time its auto-attach is answered)."""
        announced = asyncio.Event()
        self._announced[target_id] = announced
        if via is not None:
            self._via[target_id] = via
        try:
            got = await self._cdp.send(
                "Target.attachToTarget", {"targetId": target_id, "flatten": False}
            )
            self._roots.add(str(got["sessionId"]))
            if via is not None:
                self._root_via[str(got["sessionId"])] = via
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(announced.wait(), ANNOUNCE_WAIT)
        finally:
            self._announced.pop(target_id, None)
            self._via.pop(target_id, None)
        return got

    async def _set_auto_attach(self, params: dict[str, Any]) -> dict[str, Any]:
        if not params.get("autoAttach"):
            self._auto = None
            return {}
        self._auto = (params.get("filter"),)
        await self._cdp.send("Target.setDiscoverTargets", {"discover": True, "filter": [{}]})
        infos = (await self._cdp.send("Target.getTargets", {"filter": [{}]}))["targetInfos"]
        for info in infos:
            await self._auto_attach(info)
        return {}

    async def _set_discover(self, params: dict[str, Any]) -> dict[str, Any]:
        self._discover = (params.get("filter"),) if params.get("discover") else None
        if self._discover is None and self._auto is not None:
            return {}  # the emulated auto-attach still needs discovery
        discover = self._discover is not None or self._auto is not None
        # Our own discovery sees every target; what the client sees is filtered here.
        await self._cdp.send("Target.setDiscoverTargets", {"discover": discover, "filter": [{}]})
        return {}

    async def _auto_attach(self, info: dict[str, Any]) -> None:
        target = str(info.get("targetId"))
        kind = str(info.get("type"))
        if self._auto is None or target in self._attaching or not kept(self._auto[0], kind):
            return
        if kind == "browser":  # a browser-level session of somebody's: never auto-attached
            return
        self._attaching.add(target)
        with contextlib.suppress(Exception):  # it may have gone already
            await self._attach(target)

    # -- in ---------------------------------------------------------------------------

    def _event_handler(self, name: str) -> Any:
        def handle(params: dict[str, Any]) -> None:
            self._event(name, params)

        return handle

    def _event(self, method: str, params: dict[str, Any]) -> None:
        if method == "Target.receivedMessageFromTarget":
            self._unwrap(params)
            return
        if method == "Target.attachedToTarget":
            self._roots.add(str(params.get("sessionId")))
        if method == "Target.detachedFromTarget":
            gone = str(params.get("sessionId"))
            self._roots.discard(gone)
            for nested in [n for n, r in self._nested.items() if r == gone]:
                self._nested.pop(nested, None)
            self._attaching.discard(str(params.get("targetId")))
        if method == "Target.targetCreated" and self._auto is not None:
            self._spawn(self._auto_attach(params.get("targetInfo") or {}))
        if method == "Target.targetDestroyed":
            self._attaching.discard(str(params.get("targetId")))
        if method in DISCOVERY:
            info = params.get("targetInfo") or {}
            if self._discover is None or (
                info and not kept(self._discover[0], str(info.get("type")))
            ):
                return
        event: dict[str, Any] = {"method": method, "params": params}
        if method == "Target.attachedToTarget":
            via = self._via.get(str((params.get("targetInfo") or {}).get("targetId")))
        else:
            via = self._root_via.get(str(params.get("sessionId")))
        if via is not None:
            event["sessionId"] = via
        if method == "Target.detachedFromTarget":
            self._root_via.pop(str(params.get("sessionId")), None)
        self._in.put_nowait(event)
        if method == "Target.attachedToTarget":
            target = str((params.get("targetInfo") or {}).get("targetId"))
            announced = self._announced.get(target)
            if announced is not None:
                announced.set()

    def _unwrap(self, params: dict[str, Any]) -> None:
        root = str(params.get("sessionId"))
        try:
            inner = json.loads(str(params.get("message")))
        except ValueError:
            return
        if not isinstance(inner, dict):
            return
        inner.setdefault("sessionId", root)
        event = inner.get("method")
        if event == "Target.attachedToTarget":
            child = (inner.get("params") or {}).get("sessionId")
            if child:
                self._nested[str(child)] = root
        elif event == "Target.detachedFromTarget":
            self._nested.pop(str((inner.get("params") or {}).get("sessionId")), None)
        self._in.put_nowait(inner)

    def _answer_error(self, cid: Any, sid: Any, code: int, message: str) -> None:
        msg: dict[str, Any] = {"id": cid, "error": {"code": code, "message": message}}
        if sid is not None:
            msg["sessionId"] = sid
        self._in.put_nowait(msg)

    async def messages(self) -> AsyncIterator[dict[str, Any]]:
        while True:
            msg = await self._in.get()
            if msg is None:
                return
            yield msg

    # -- plumbing ---------------------------------------------------------------------

    def _spawn(self, work: Any) -> None:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(Exception):
            await self._cdp.detach()
        self._in.put_nowait(None)


def _message(exc: Exception) -> str:
    """Playwright's ``Protocol error (Method): text`` -> ``text`` (what Chromium said)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
    head, sep, tail = text.partition("): ")
    return tail if sep and "Protocol error" in head else text
