"""The Python API: :class:`Client` (async, anyio) and :class:`SyncClient` (blocking).

Both speak the CLI's protocol on the CLI's socket — one connection, kept open, hello
exchanged, a keeper started (or a keeper of another version replaced) exactly as ``bay``
does — so a warm verb costs one socket round trip and the keeper's work, without a Python
start. Every method mirrors a verb of the table (:mod:`browserbay.verbs`) and returns an
:class:`Answer` (or a subclass with typed accessors) that names the session and the profile
it acted on; a refusal is raised as the exception class of its code
(:mod:`browserbay.errors`)::

    import anyio
    from browserbay import Client

    async def main() -> None:
        async with Client(session="my-agent") as bay:
            page = await bay.open("https://example.org")
            snap = await bay.snapshot(interactive=True)
            print(page.title, snap.refs, snap.profile.label)

    anyio.run(main)

The session is the ``session`` argument, else ``BAY_SESSION``, else the calling shell's
session (like ``bay``); the keeper records its origin as ``api``.
"""

from __future__ import annotations

import functools
import os
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

from browserbay import client, protocol
from browserbay.errors import BayRefusal
from browserbay.paths import BayPaths, bay_paths
from browserbay.refusals import Refusal
from browserbay.verbs import DEFAULT_TIMEOUT

__all__ = [
    "Answer",
    "Client",
    "Page",
    "ProfileInfo",
    "SessionInfo",
    "Shot",
    "Snapshot",
    "Status",
    "SyncClient",
    "Tab",
    "Tabs",
    "Value",
    "api_session",
]

#: Time the answer has to travel back, on top of the verb's own deadline (the keeper
#: enforces that one itself).
ANSWER_MARGIN = 5.0


# -- results ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SessionInfo:
    id: str
    origin: str

    @classmethod
    def from_row(cls, row: Any) -> SessionInfo:
        row = row if isinstance(row, dict) else {}
        return cls(str(row.get("id", "")), str(row.get("origin", "")))


@dataclass(frozen=True)
class ProfileInfo:
    """The profile a verb acted on (``ephemeral``: the session's own isolated browser).
    ``row`` keeps every field the keeper sent, including ones newer than this client."""

    id: str
    label: str
    provider: str
    tier: int
    ephemeral: bool
    attached: int = 1
    row: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_row(cls, row: Any) -> ProfileInfo | None:
        if not isinstance(row, dict):
            return None
        return cls(
            id=str(row.get("id", "")),
            label=str(row.get("label", "")),
            provider=str(row.get("provider", "")),
            tier=int(row.get("tier") or 0),
            ephemeral=bool(row.get("ephemeral")),
            attached=int(row.get("attached") or 1),
            row=dict(row),
        )


@dataclass(frozen=True)
class Answer:
    """One verb's answer: what it did (``data``, as ``bay --json`` prints it; ``text``, as
    ``bay`` prints it), for which session, on which profile (None for the keeper's own
    verbs), plus a one-time ``notice`` when there is one."""

    verb: str
    session: SessionInfo
    profile: ProfileInfo | None
    data: dict[str, Any]
    text: str = ""
    notice: str | None = None

    @classmethod
    def from_frame(cls: type[A], frame: dict[str, Any]) -> A:
        data = frame.get("data")
        return cls(
            verb=str(frame.get("verb", "")),
            session=SessionInfo.from_row(frame.get("session")),
            profile=ProfileInfo.from_row(frame.get("profile")),
            data=data if isinstance(data, dict) else {},
            text=str(frame.get("text") or ""),
            notice=frame.get("notice"),
        )

    def __getitem__(self, key: str) -> Any:
        return self.data[key]


A = TypeVar("A", bound=Answer)


class Page(Answer):
    """After ``open``, ``back``, ``forward``, ``reload``, ``new_tab`` and ``switch_tab``."""

    @property
    def url(self) -> str:
        return str(self.data.get("url", ""))

    @property
    def title(self) -> str:
        return str(self.data.get("title", ""))

    @property
    def tab(self) -> str:
        return str(self.data.get("tab") or self.data.get("id") or "")

    @property
    def status(self) -> int | None:
        """The HTTP status of the navigation, when there was one."""
        value = self.data.get("status")
        return int(value) if isinstance(value, int) else None

    @property
    def hint(self) -> str | None:
        """A tier hint (worded as a hint, never a detection), when a plugin gave one."""
        value = self.data.get("hint")
        return str(value) if value else None


class Snapshot(Answer):
    """The page's ARIA tree with ``[ref=eN]`` references to act on."""

    @property
    def tree(self) -> str:
        return str(self.data.get("snapshot", ""))

    @property
    def refs(self) -> int:
        return int(self.data.get("refs") or 0)

    @property
    def url(self) -> str:
        return str(self.data.get("url", ""))

    @property
    def tab(self) -> str:
        return str(self.data.get("tab", ""))


class Value(Answer):
    """After ``get`` and ``eval``: ``value`` is the title, url, text, value, html or the
    script's JSON value."""

    @property
    def value(self) -> Any:
        return self.data.get("value")


class Shot(Answer):
    """After ``screenshot``: where the PNG was written."""

    @property
    def path(self) -> Path:
        return Path(str(self.data.get("path", "")))

    @property
    def bytes(self) -> int:
        return int(self.data.get("bytes") or 0)


@dataclass(frozen=True)
class Tab:
    id: str
    url: str
    title: str
    current: bool
    opener: str | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Tab:
        return cls(
            id=str(row.get("id", "")),
            url=str(row.get("url", "")),
            title=str(row.get("title", "")),
            current=bool(row.get("current")),
            opener=row.get("opener"),
        )


class Tabs(Answer):
    """The session's own tabs (``current`` marks the one verbs act on)."""

    @property
    def tabs(self) -> list[Tab]:
        return [Tab.from_row(r) for r in self.data.get("tabs") or () if isinstance(r, dict)]

    @property
    def current(self) -> Tab | None:
        return next((t for t in self.tabs if t.current), None)


class Status(Tabs):
    """The session, the profile it acts on, that profile's browser (None until the first
    page verb) and its tabs. ``data`` has the whole picture (every lease, when the session
    has several profiles attached)."""

    @property
    def browser(self) -> str | None:
        value = self.data.get("browser")
        return str(value) if value else None

    @property
    def tabs(self) -> list[Tab]:
        rows = self.data.get("tabs")
        if rows is None:  # one row per lease: the tabs of the one this answer acted on
            leases = [x for x in self.data.get("leases") or () if isinstance(x, dict)]
            mine = self.profile.id if self.profile else None
            chosen = [x for x in leases if (x.get("profile") or {}).get("id") == mine]
            rows = [r for x in chosen or leases for r in x.get("tabs") or ()]
        return [Tab.from_row(r) for r in rows if isinstance(r, dict)]


# -- the frame, both ways -----------------------------------------------------------------


def api_session(session: str | None = None) -> dict[str, str]:
    """The identity a program acts as: ``session``, else ``BAY_SESSION``, else the calling
    shell's session; origin ``api`` either way."""
    sid = session or os.environ.get("BAY_SESSION", "") or f"shell-{os.getsid(0)}"
    return {"id": sid, "origin": "api"}


def _clean(args: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments as the keeper wants them: unset options left out, flags only when set."""
    return {k: v for k, v in args.items() if v is not None and v is not False}


def _answer(frame: dict[str, Any], kind: type[A]) -> A:
    if frame.get("ok"):
        return kind.from_frame(frame)
    raise BayRefusal.from_frame(frame)


def _refused(refusal: Refusal) -> BayRefusal:
    return BayRefusal.from_frame(refusal.frame())


def _unavailable(reason: str) -> BayRefusal:
    return _refused(Refusal("keeper_unavailable", reason=reason))


def _shot_args(path: str | os.PathLike[str] | None, full: bool) -> dict[str, Any]:
    """A relative path is the caller's, as for ``bay screenshot``: made absolute here."""
    return {"path": None if path is None else os.path.abspath(path), "full": full}


def _paths(home: str | os.PathLike[str] | None) -> BayPaths:
    if home is None:
        return bay_paths()
    return bay_paths({**os.environ, "BAY_HOME": os.fspath(home)})


class _Base:
    """What both clients share: identity, defaults, and the request frame."""

    def __init__(
        self,
        session: str | None = None,
        *,
        home: str | os.PathLike[str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        profile: str | None = None,
        autostart: bool | None = None,
    ):
        self.session = api_session(session)
        self.paths = _paths(home)
        self.timeout = timeout
        self.profile = profile
        """A profile handle every verb acts on (the frame's ``profile`` field, like ``bay
        --profile``); None: the session's default."""
        self.autostart = autostart
        self.road = "api"
        """The road the keeper's audit names for this client's verbs (the MCP server's client
        says ``mcp``): a label only; every road passes the same guards."""
        self.keeper: dict[str, Any] = {}
        """The keeper's hello (version, protocol, pid), once connected."""
        self._n = 0

    def _frame(self, verb: str, args: Mapping[str, Any], timeout: float | None) -> dict[str, Any]:
        t = self.timeout if timeout is None else timeout
        if not 0 < t <= 3600:
            raise _refused(Refusal("usage", detail="timeout must be in (0, 3600]", verb=verb))
        self._n += 1
        frame: dict[str, Any] = {
            "id": str(self._n),
            "verb": verb,
            "args": _clean(args),
            "session": self.session,
            "timeout": t,
            "road": self.road,
        }
        if self.profile:
            frame["profile"] = self.profile
        return frame


# -- async ------------------------------------------------------------------------------


class Client(_Base):
    """The async client (anyio: asyncio or trio). One connection, opened at the first verb
    (or ``async with``), serialised: concurrent tasks sharing a client take turns, as one
    session's verbs do in the keeper anyway. Use one client per session."""

    def __init__(
        self,
        session: str | None = None,
        *,
        home: str | os.PathLike[str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        profile: str | None = None,
        autostart: bool | None = None,
    ):
        super().__init__(session, home=home, timeout=timeout, profile=profile, autostart=autostart)
        self._stream: anyio.abc.SocketStream | None = None
        self._reader: BufferedByteReceiveStream | None = None
        self._lock = anyio.Lock()

    async def __aenter__(self) -> Client:
        await self.connect()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def connect(self) -> None:
        """Connect (starting the keeper when needed). Verbs connect by themselves."""
        if self._stream is not None:
            return
        try:
            conn = await anyio.to_thread.run_sync(
                functools.partial(client.connect, self.paths, autostart=self.autostart)
            )
        except Refusal as r:
            raise _refused(r) from None
        except OSError as exc:
            raise _unavailable(str(exc) or type(exc).__name__) from None
        sock: socket.socket = conn.sock
        sock.settimeout(None)
        stream = await anyio.abc.UNIXSocketStream.from_socket(sock)
        self.keeper = conn.keeper
        self._stream = stream
        self._reader = BufferedByteReceiveStream(stream)
        if conn.buf:
            self._reader.feed_data(conn.buf)

    async def aclose(self) -> None:
        """Close the connection (the session and its browser stay: ``await close()`` ends
        them)."""
        stream, self._stream, self._reader = self._stream, None, None
        if stream is not None:
            await stream.aclose()

    async def call(
        self,
        verb: str,
        args: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        **kwargs: Any,
    ) -> Answer:
        """Any verb by name — the core's or a plugin's (``bay_verbs``) — with its arguments
        as the verb table names them: ``await bay.call("greet", name="Ada")``."""
        return await self._request(verb, {**(args or {}), **kwargs}, timeout, Answer)

    async def _request(
        self, verb: str, args: Mapping[str, Any], timeout: float | None, kind: type[A]
    ) -> A:
        frame = self._frame(verb, args, timeout)
        async with self._lock:
            return _answer(await self._exchange(frame), kind)

    async def _exchange(self, frame: dict[str, Any]) -> dict[str, Any]:
        data = protocol.encode(frame)
        for attempt in (0, 1):
            await self.connect()
            assert self._stream is not None
            try:
                await self._stream.send(data)
                break
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                # Nobody read the request (the keeper we knew has gone): safe to send it to
                # the next one.
                await self.aclose()
                if attempt:
                    raise _unavailable("the keeper went away") from None
        assert self._reader is not None
        try:
            with anyio.fail_after(frame["timeout"] + ANSWER_MARGIN):
                line = await self._reader.receive_until(b"\n", protocol.MAX_ANSWER)
        except TimeoutError:
            await self.aclose()  # its answer may still come: never read it as the next one's
            t = frame["timeout"]
            raise _refused(
                Refusal("deadline", verb=frame["verb"], timeout=t, longer=t * 2)
            ) from None
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, OSError):
            await self.aclose()
            raise _unavailable(
                f"the keeper closed the connection during '{frame['verb']}' (it may or may not "
                "have run)"
            ) from None
        except anyio.DelimiterNotFound:
            await self.aclose()
            raise _unavailable("the keeper's answer exceeds the answer limit") from None
        return protocol.decode(line)

    # -- page verbs ---------------------------------------------------------------------

    async def open(self, url: str, *, timeout: float | None = None) -> Page:
        """Navigate the current tab (http, https or about:blank); waits for load."""
        return await self._request("open", {"url": url}, timeout, Page)

    async def snapshot(
        self, *, interactive: bool = False, depth: int | None = None, timeout: float | None = None
    ) -> Snapshot:
        """The ARIA tree with ``[ref=eN]`` references (``interactive``: only what can be
        acted on, flat)."""
        args = {"interactive": interactive, "depth": depth}
        return await self._request("snapshot", args, timeout, Snapshot)

    async def click(self, target: str, *, timeout: float | None = None) -> Answer:
        return await self._request("click", {"target": target}, timeout, Answer)

    async def fill(self, target: str, text: str, *, timeout: float | None = None) -> Answer:
        """Replace a field's value (never logged, audited or shown to plugins)."""
        return await self._request("fill", {"target": target, "text": text}, timeout, Answer)

    async def type(self, target: str, text: str, *, timeout: float | None = None) -> Answer:
        """Type key by key, keeping what is there."""
        return await self._request("type", {"target": target, "text": text}, timeout, Answer)

    async def press(self, key: str, *, timeout: float | None = None) -> Answer:
        return await self._request("press", {"key": key}, timeout, Answer)

    async def select(self, target: str, *values: str, timeout: float | None = None) -> Answer:
        """Choose options by value or label; ``data["selected"]`` lists the chosen values."""
        args = {"target": target, "values": list(values)}
        return await self._request("select", args, timeout, Answer)

    async def check(self, target: str, *, timeout: float | None = None) -> Answer:
        return await self._request("check", {"target": target}, timeout, Answer)

    async def uncheck(self, target: str, *, timeout: float | None = None) -> Answer:
        return await self._request("uncheck", {"target": target}, timeout, Answer)

    async def hover(self, target: str, *, timeout: float | None = None) -> Answer:
        return await self._request("hover", {"target": target}, timeout, Answer)

    async def scroll(
        self,
        direction: str = "down",
        pixels: int | None = None,
        *,
        timeout: float | None = None,
    ) -> Answer:
        """``up``/``down``/``left``/``right`` by ``pixels`` (default 600), or a target to
        bring into view."""
        args = {"direction": direction, "pixels": pixels}
        return await self._request("scroll", args, timeout, Answer)

    async def wait(
        self, what: str | int | None = None, *, load: bool = False, timeout: float | None = None
    ) -> Answer:
        """Until a target is visible, ``what`` milliseconds pass, or (``load``) the load
        event."""
        args = {"what": None if what is None else str(what), "load": load}
        return await self._request("wait", args, timeout, Answer)

    async def get(
        self, what: str, target: str | None = None, *, timeout: float | None = None
    ) -> Value:
        """``title``, ``url``, or an element's (the page's) ``text``, ``value``, ``html``."""
        return await self._request("get", {"what": what, "target": target}, timeout, Value)

    async def eval(self, js: str, *, timeout: float | None = None) -> Value:
        """Evaluate a JavaScript expression in the page; ``value`` is its JSON value."""
        return await self._request("eval", {"js": js}, timeout, Value)

    async def screenshot(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        full: bool = False,
        timeout: float | None = None,
    ) -> Shot:
        args = _shot_args(path, full)
        return await self._request("screenshot", args, timeout, Shot)

    async def back(self, *, timeout: float | None = None) -> Page:
        return await self._request("back", {}, timeout, Page)

    async def forward(self, *, timeout: float | None = None) -> Page:
        return await self._request("forward", {}, timeout, Page)

    async def reload(self, *, timeout: float | None = None) -> Page:
        return await self._request("reload", {}, timeout, Page)

    # -- tabs and the session ---------------------------------------------------------

    async def tabs(self, *, timeout: float | None = None) -> Tabs:
        return await self._request("tab", {"action": "list"}, timeout, Tabs)

    async def new_tab(self, url: str | None = None, *, timeout: float | None = None) -> Page:
        """Open a tab (at ``url``) and make it current."""
        return await self._request("tab", {"action": "new", "arg": url}, timeout, Page)

    async def close_tab(self, tab: str | None = None, *, timeout: float | None = None) -> Answer:
        """Close one of your tabs (default: the current one)."""
        return await self._request("tab", {"action": "close", "arg": tab}, timeout, Answer)

    async def switch_tab(self, tab: str, *, timeout: float | None = None) -> Page:
        return await self._request("tab", {"action": tab}, timeout, Page)

    async def close(self, *, timeout: float | None = None) -> Answer:
        """End the session: its tabs and browser context (other sessions are untouched)."""
        return await self._request("close", {}, timeout, Answer)

    async def status(self, *, timeout: float | None = None) -> Status:
        return await self._request("status", {}, timeout, Status)

    # -- the keeper ---------------------------------------------------------------------

    async def plugins(self, *, timeout: float | None = None) -> Answer:
        """``data["plugins"]`` (name, distribution, version, hooks) and ``data["providers"]``."""
        return await self._request("plugins", {}, timeout, Answer)

    async def verbs(self, *, timeout: float | None = None) -> Answer:
        """``data["verbs"]``: the verb table as the keeper knows it, plugins' verbs included."""
        return await self._request("verbs", {}, timeout, Answer)

    async def keeper_status(self, *, timeout: float | None = None) -> Answer:
        return await self._request("keeper", {"action": "status"}, timeout, Answer)


# -- sync -------------------------------------------------------------------------------


class SyncClient(_Base):
    """The blocking client: the same methods as :class:`Client`, without ``await``, over the
    thin client's own socket code (no event loop, no thread). Use it as a context manager
    or call :meth:`disconnect`."""

    def __init__(
        self,
        session: str | None = None,
        *,
        home: str | os.PathLike[str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        profile: str | None = None,
        autostart: bool | None = None,
    ):
        super().__init__(session, home=home, timeout=timeout, profile=profile, autostart=autostart)
        self._conn: client.Connection | None = None

    def __enter__(self) -> SyncClient:
        self.connect()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.disconnect()

    def connect(self) -> None:
        if self._conn is not None:
            return
        try:
            self._conn = client.connect(self.paths, autostart=self.autostart)
        except Refusal as r:
            raise _refused(r) from None
        except OSError as exc:
            raise _unavailable(str(exc) or type(exc).__name__) from None
        self.keeper = self._conn.keeper

    def disconnect(self) -> None:
        """Close the connection (the session and its browser stay: ``close()`` ends them)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def call(
        self,
        verb: str,
        args: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        **kwargs: Any,
    ) -> Answer:
        """Any verb by name, the core's or a plugin's: ``bay.call("greet", name="Ada")``."""
        return self._request(verb, {**(args or {}), **kwargs}, timeout, Answer)

    def _request(
        self, verb: str, args: Mapping[str, Any], timeout: float | None, kind: type[A]
    ) -> A:
        return _answer(self._exchange(self._frame(verb, args, timeout)), kind)

    def _exchange(self, frame: dict[str, Any]) -> dict[str, Any]:
        for attempt in (0, 1):
            self.connect()
            assert self._conn is not None
            try:
                self._conn.send(frame)
                break
            except OSError:
                self.disconnect()
                if attempt:
                    raise _unavailable("the keeper went away") from None
        conn = self._conn
        assert conn is not None
        t = frame["timeout"]
        try:
            return conn.read(time.monotonic() + t + ANSWER_MARGIN)
        except TimeoutError:
            self.disconnect()
            raise _refused(
                Refusal("deadline", verb=frame["verb"], timeout=t, longer=t * 2)
            ) from None
        except (OSError, ValueError) as exc:
            self.disconnect()
            raise _unavailable(
                f"the keeper closed the connection during '{frame['verb']}' (it may or may not "
                f"have run): {exc}"
            ) from None

    # -- page verbs ---------------------------------------------------------------------

    def open(self, url: str, *, timeout: float | None = None) -> Page:
        return self._request("open", {"url": url}, timeout, Page)

    def snapshot(
        self, *, interactive: bool = False, depth: int | None = None, timeout: float | None = None
    ) -> Snapshot:
        args = {"interactive": interactive, "depth": depth}
        return self._request("snapshot", args, timeout, Snapshot)

    def click(self, target: str, *, timeout: float | None = None) -> Answer:
        return self._request("click", {"target": target}, timeout, Answer)

    def fill(self, target: str, text: str, *, timeout: float | None = None) -> Answer:
        return self._request("fill", {"target": target, "text": text}, timeout, Answer)

    def type(self, target: str, text: str, *, timeout: float | None = None) -> Answer:
        return self._request("type", {"target": target, "text": text}, timeout, Answer)

    def press(self, key: str, *, timeout: float | None = None) -> Answer:
        return self._request("press", {"key": key}, timeout, Answer)

    def select(self, target: str, *values: str, timeout: float | None = None) -> Answer:
        return self._request("select", {"target": target, "values": list(values)}, timeout, Answer)

    def check(self, target: str, *, timeout: float | None = None) -> Answer:
        return self._request("check", {"target": target}, timeout, Answer)

    def uncheck(self, target: str, *, timeout: float | None = None) -> Answer:
        return self._request("uncheck", {"target": target}, timeout, Answer)

    def hover(self, target: str, *, timeout: float | None = None) -> Answer:
        return self._request("hover", {"target": target}, timeout, Answer)

    def scroll(
        self, direction: str = "down", pixels: int | None = None, *, timeout: float | None = None
    ) -> Answer:
        args = {"direction": direction, "pixels": pixels}
        return self._request("scroll", args, timeout, Answer)

    def wait(
        self, what: str | int | None = None, *, load: bool = False, timeout: float | None = None
    ) -> Answer:
        args = {"what": None if what is None else str(what), "load": load}
        return self._request("wait", args, timeout, Answer)

    def get(self, what: str, target: str | None = None, *, timeout: float | None = None) -> Value:
        return self._request("get", {"what": what, "target": target}, timeout, Value)

    def eval(self, js: str, *, timeout: float | None = None) -> Value:
        return self._request("eval", {"js": js}, timeout, Value)

    def screenshot(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        full: bool = False,
        timeout: float | None = None,
    ) -> Shot:
        args = _shot_args(path, full)
        return self._request("screenshot", args, timeout, Shot)

    def back(self, *, timeout: float | None = None) -> Page:
        return self._request("back", {}, timeout, Page)

    def forward(self, *, timeout: float | None = None) -> Page:
        return self._request("forward", {}, timeout, Page)

    def reload(self, *, timeout: float | None = None) -> Page:
        return self._request("reload", {}, timeout, Page)

    # -- tabs and the session ---------------------------------------------------------

    def tabs(self, *, timeout: float | None = None) -> Tabs:
        return self._request("tab", {"action": "list"}, timeout, Tabs)

    def new_tab(self, url: str | None = None, *, timeout: float | None = None) -> Page:
        return self._request("tab", {"action": "new", "arg": url}, timeout, Page)

    def close_tab(self, tab: str | None = None, *, timeout: float | None = None) -> Answer:
        return self._request("tab", {"action": "close", "arg": tab}, timeout, Answer)

    def switch_tab(self, tab: str, *, timeout: float | None = None) -> Page:
        return self._request("tab", {"action": tab}, timeout, Page)

    def close(self, *, timeout: float | None = None) -> Answer:
        return self._request("close", {}, timeout, Answer)

    def status(self, *, timeout: float | None = None) -> Status:
        return self._request("status", {}, timeout, Status)

    # -- the keeper ---------------------------------------------------------------------

    def plugins(self, *, timeout: float | None = None) -> Answer:
        return self._request("plugins", {}, timeout, Answer)

    def verbs(self, *, timeout: float | None = None) -> Answer:
        return self._request("verbs", {}, timeout, Answer)

    def keeper_status(self, *, timeout: float | None = None) -> Answer:
        return self._request("keeper", {"action": "status"}, timeout, Answer)
