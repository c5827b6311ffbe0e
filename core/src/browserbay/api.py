"""The Python API: :class:`Client` (async, anyio) and :class:`SyncClient` (blocking).

Both speak the CLI's protocol on the CLI's socket — one connection, kept open, hello
exchanged, a keeper started (or a keeper of another version replaced) exactly as ``bay``
does; on a session socket (``socket=``, else ``BAY_SOCKET``) never — so a warm verb costs
one socket round trip and the keeper's work, without a Python start. Every method mirrors a
verb of the table (:mod:`browserbay.verbs`) and returns an :class:`Answer` (or a subclass
with typed accessors) that names the session and the profile it acted on; a refusal is
raised as the exception class of its code (:mod:`browserbay.errors`)::

    import anyio
    from browserbay import Client

    async def main() -> None:
        async with Client(session="my-agent") as bay:
            page = await bay.open("https://example.org")
            snap = await bay.snapshot(interactive=True)
            print(page.title, snap.refs, snap.profile.label)

    anyio.run(main)

The session is the ``session`` argument, else ``BAY_SESSION``, else — on a session socket —
the session the socket is bound to, else the calling shell's session (like ``bay``); the
keeper records its origin as ``api`` (``socket`` for the socket's own).

:class:`Client` is written once, here; ``SyncClient`` (:mod:`browserbay._sync_api`) is
generated from it by ``scripts/unasync.py`` (``async``/``await`` taken out, the connection
swapped for :class:`browserbay._connection.SyncConnection`), so the two cannot drift apart.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Literal

from browserbay import identity
from browserbay._answers import (
    A,
    Answer,
    Page,
    ProfileInfo,
    SessionInfo,
    Shot,
    ShotLabel,
    Snapshot,
    Status,
    Tab,
    Tabs,
    Value,
    answer,
    api_session,
    refused,
)
from browserbay._connection import AsyncConnection, clean_args, home_paths, session_socket
from browserbay._sync_api import SyncClient
from browserbay.paths import BayPaths
from browserbay.refusals import Refusal
from browserbay.verbs import DEFAULT_TIMEOUT

__all__ = [
    "Answer",
    "Client",
    "Page",
    "ProfileInfo",
    "SessionInfo",
    "Shot",
    "ShotLabel",
    "Snapshot",
    "Status",
    "SyncClient",
    "Tab",
    "Tabs",
    "Value",
    "api_session",
]


class Client:
    """A client of one session, over one connection to the keeper: opened at the first verb
    (or ``async with``) and kept open. Verbs sent on it take turns (tasks or threads sharing
    it wait), as one session's verbs do in the keeper anyway: use one client per session.
    :meth:`aclose` closes the connection only (the session stays: ``await close()`` ends
    it).

    ``socket`` (else ``BAY_SOCKET``, unless ``home`` is given) is a session socket the owner
    granted: the client connects there and never starts, stops or replaces a keeper; a socket
    that is gone is refused ``session_socket_gone``. ``fallback`` is the session when none is
    named and the socket fixes none (default: the calling shell's)."""

    def __init__(
        self,
        session: str | None = None,
        *,
        home: str | os.PathLike[str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        profile: str | None = None,
        autostart: bool | None = None,
        socket: str | os.PathLike[str] | None = None,
        fallback: str | None = None,
    ):
        self._named = identity.named(session)
        self._fallback = fallback
        self.timeout = timeout
        self.profile = profile
        """A profile handle every verb acts on (the frame's ``profile`` field, like ``bay
        --profile``); None: the session's default."""
        self.road = "api"
        """The road the keeper's audit names for this client's verbs (the MCP server's client
        says ``mcp``): a label only; every road passes the same guards."""
        self._conn = AsyncConnection(home_paths(home), autostart, session_socket(socket, home))
        self._n = 0

    @property
    def session(self) -> dict[str, str]:
        """The session this client acts as (a frame's ``session``): the ``session`` argument,
        else ``BAY_SESSION`` (as it was when the client was made), else — on a session socket,
        once connected — the session the socket is bound to, else ``fallback`` or the calling
        shell's session. A named session is sent as named, never replaced by the socket's
        (the keeper refuses another one ``session_fixed``)."""
        fixed = identity.fixed_by(self._conn.keeper)
        return identity.pick(self._named, fixed=fixed, fallback=self._fallback, origin="api")

    @property
    def socket(self) -> str | None:
        """The session socket this client connects to (None: the home's own socket, the
        owner's channel)."""
        return self._conn.session_socket

    @property
    def paths(self) -> BayPaths:
        """The paths of the home this client reaches the keeper in."""
        return self._conn.paths

    @property
    def autostart(self) -> bool | None:
        """Whether connecting starts a keeper when none runs (None: unless
        ``BAY_NO_AUTOSTART`` is set)."""
        return self._conn.autostart

    @property
    def keeper(self) -> dict[str, Any]:
        """The keeper's hello (version, protocol, pid, channel, session), once connected."""
        return self._conn.keeper

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
        await self._conn.connect()

    async def aclose(self) -> None:
        """Close the connection (the session and its browser stay: ``await close()`` ends
        them)."""
        await self._conn.disconnect()

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
        if self._named is None:  # the session may be the socket's: its hello says which
            await self._conn.connect()
        return answer(await self._conn.exchange(self._frame(verb, args, timeout)), kind)

    def _frame(self, verb: str, args: Mapping[str, Any], timeout: float | None) -> dict[str, Any]:
        t = self.timeout if timeout is None else timeout
        if not 0 < t <= 3600:
            raise refused(Refusal("usage", detail="timeout must be in (0, 3600]", verb=verb))
        self._n += 1
        frame: dict[str, Any] = {
            "id": str(self._n),
            "verb": verb,
            "args": clean_args(verb, args),
            "session": self.session,
            "timeout": t,
            "road": self.road,
        }
        if self.profile:
            frame["profile"] = self.profile
        return frame

    # -- page verbs ---------------------------------------------------------------------

    async def open(self, url: str, *, timeout: float | None = None) -> Page:
        """Navigate the current tab (http, https or about:blank); waits for load."""
        return await self._request("open", {"url": url}, timeout, Page)

    async def snapshot(
        self,
        *,
        interactive: bool = False,
        depth: int | None = None,
        selector: str | None = None,
        delta: bool = False,
        limit: int | None = None,
        page: int | None = None,
        timeout: float | None = None,
    ) -> Snapshot:
        """The ARIA tree with ``@eN`` references (``interactive``: only what can be
        acted on, flat; ``selector``: the subtree of an ``@ref`` or a selector; ``delta``:
        only what changed since the tab's last snapshot; ``limit``/``page``: which page of
        lines, ``data["next"]`` naming the next one)."""
        args: dict[str, Any] = {"interactive": interactive, "depth": depth, "delta": delta}
        for name, value in (("selector", selector), ("limit", limit), ("page", page)):
            if value is not None:
                args[name] = value
        return await self._request("snapshot", args, timeout, Snapshot)

    async def click(self, target: str, *, timeout: float | None = None) -> Answer:
        """Click an element (an ``@eN`` reference from the last snapshot, or a selector)."""
        return await self._request("click", {"target": target}, timeout, Answer)

    async def dblclick(self, target: str, *, timeout: float | None = None) -> Answer:
        """Double-click an element (refused ``action_failed`` when it is covered or disabled:
        never pressed then)."""
        return await self._request("dblclick", {"target": target}, timeout, Answer)

    async def drag(self, target: str, to: str, *, timeout: float | None = None) -> Answer:
        """Drag ``target`` onto ``to`` (HTML5 drag and drop and pointer-driven lists alike);
        ``data["point"]`` is the drop point in CSS pixels of the viewport."""
        return await self._request("drag", {"target": target, "to": to}, timeout, Answer)

    async def focus(self, target: str, *, timeout: float | None = None) -> Answer:
        """Focus an element (refused ``action_failed`` when it cannot take the focus)."""
        return await self._request("focus", {"target": target}, timeout, Answer)

    async def fill(self, target: str, text: str, *, timeout: float | None = None) -> Answer:
        """Replace a field's value (never logged, audited or shown to plugins)."""
        return await self._request("fill", {"target": target, "text": text}, timeout, Answer)

    async def type(self, target: str, text: str, *, timeout: float | None = None) -> Answer:
        """Type key by key, keeping what is there."""
        return await self._request("type", {"target": target, "text": text}, timeout, Answer)

    async def press(self, key: str, *, timeout: float | None = None) -> Answer:
        """Press a key or chord on the focused element (``Enter``, ``Tab``, ``Control+a``)."""
        return await self._request("press", {"key": key}, timeout, Answer)

    async def keydown(self, key: str, *, timeout: float | None = None) -> Answer:
        """Hold a key down until :meth:`keyup`; ``data["held"]`` lists the keys held."""
        return await self._request("keydown", {"key": key}, timeout, Answer)

    async def keyup(self, key: str, *, timeout: float | None = None) -> Answer:
        """Release a key held with :meth:`keydown` (``data["was_held"]`` says if it was)."""
        return await self._request("keyup", {"key": key}, timeout, Answer)

    async def keyboard_type(self, text: str, *, timeout: float | None = None) -> Answer:
        """Type to the focused element key by key (key events for each character; never
        logged); ``data["focused"]`` names where the keys went."""
        args = {"action": "type", "text": text}
        return await self._request("keyboard", args, timeout, Answer)

    async def insert_text(self, text: str, *, timeout: float | None = None) -> Answer:
        """Insert text into the focused element at once, with no key events (never
        logged)."""
        args = {"action": "inserttext", "text": text}
        return await self._request("keyboard", args, timeout, Answer)

    async def mouse_move(self, x: float, y: float, *, timeout: float | None = None) -> Answer:
        """Move the pointer to (``x``, ``y``), CSS pixels of the viewport."""
        args = {"action": "move", "first": f"{x:g}", "second": f"{y:g}"}
        return await self._request("mouse", args, timeout, Answer)

    async def mouse_down(self, button: str = "left", *, timeout: float | None = None) -> Answer:
        """Press a mouse button (``left``, ``right``, ``middle``) where the pointer is."""
        return await self._request("mouse", {"action": "down", "first": button}, timeout, Answer)

    async def mouse_up(self, button: str = "left", *, timeout: float | None = None) -> Answer:
        """Release a mouse button where the pointer is."""
        return await self._request("mouse", {"action": "up", "first": button}, timeout, Answer)

    async def mouse_wheel(
        self, dy: float, dx: float = 0, *, timeout: float | None = None
    ) -> Answer:
        """Scroll by the wheel at the pointer (positive ``dy``: down); ``data["scroll"]`` is
        the page's scroll position once it settled."""
        args = {"action": "wheel", "first": f"{dy:g}", "second": f"{dx:g}"}
        return await self._request("mouse", args, timeout, Answer)

    async def select(self, target: str, *values: str, timeout: float | None = None) -> Answer:
        """Choose options by value or label; ``data["selected"]`` lists the chosen values."""
        args = {"target": target, "values": list(values)}
        return await self._request("select", args, timeout, Answer)

    async def check(self, target: str, *, timeout: float | None = None) -> Answer:
        """Tick a checkbox or radio."""
        return await self._request("check", {"target": target}, timeout, Answer)

    async def uncheck(self, target: str, *, timeout: float | None = None) -> Answer:
        """Untick a checkbox."""
        return await self._request("uncheck", {"target": target}, timeout, Answer)

    async def hover(self, target: str, *, timeout: float | None = None) -> Answer:
        """Move the pointer over an element."""
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

    async def scroll_into_view(self, target: str, *, timeout: float | None = None) -> Answer:
        """Scroll an element into view; ``data["box"]`` is its box (CSS pixels)."""
        return await self._request("scrollintoview", {"target": target}, timeout, Answer)

    async def wait(
        self,
        what: str | int | None = None,
        *,
        text: str | None = None,
        url: str | None = None,
        load: str | bool | None = None,
        fn: str | None = None,
        state: str | None = None,
        timeout: float | None = None,
    ) -> Answer:
        """Until exactly one condition holds: a target is visible (or in ``state``: hidden,
        attached, detached), ``what`` milliseconds pass, ``text`` appears, the URL matches
        the glob ``url``, the page reaches the ``load`` state (``True``: the load event), or
        the JavaScript expression ``fn`` is truthy. Raises ``WaitTimeout`` (code
        ``wait_timeout``) saying what it still waited for."""
        args = {
            "what": None if what is None else str(what),
            "text": text,
            "url": url,
            "load": "load" if load is True else load or None,
            "fn": fn,
            "state": state,
        }
        return await self._request("wait", args, timeout, Answer)

    async def get(
        self,
        what: str,
        target: str | None = None,
        name: str | None = None,
        *,
        timeout: float | None = None,
    ) -> Value:
        """``title``, ``url``, or an element's (the page's) ``text``, ``value``, ``html``; a
        selector's ``count``; an element's ``box`` (x, y, width, height in CSS pixels),
        ``attr`` (``name``: the attribute) or ``styles`` (``name``: properties,
        comma-separated)."""
        args = {"what": what, "target": target, "name": name}
        return await self._request("get", args, timeout, Value)

    async def is_(self, what: str, target: str, *, timeout: float | None = None) -> Value:
        """Whether the element is ``visible``, ``enabled`` or ``checked``: ``value`` is
        True or False (``bay is``)."""
        return await self._request("is", {"what": what, "target": target}, timeout, Value)

    async def find(
        self,
        by: str,
        value: str,
        action: str,
        text: str | None = None,
        *,
        name: str | None = None,
        exact: bool = False,
        timeout: float | None = None,
    ) -> Value:
        """Find exactly one element ``by`` role, text, label, placeholder, alt, title or
        testid, and do ``action`` (click, dblclick, fill/type ``text``, check, uncheck,
        hover, focus, or ``text``: ``value`` is its text). ``name``: the accessible name of
        a role; ``exact``: whole, case-sensitive matches."""
        args = {
            "by": by,
            "value": value,
            "action": action,
            "text": text,
            "name": name,
            "exact": exact,
        }
        return await self._request("find", args, timeout, Value)

    async def frame(self, target: str, *, timeout: float | None = None) -> Answer:
        """Act inside the iframe ``target`` (later calls resolve targets and read there),
        or ``"main"``: the page again."""
        return await self._request("frame", {"target": target}, timeout, Answer)

    async def eval(self, js: str, *, timeout: float | None = None) -> Value:
        """Evaluate a JavaScript expression in the page; ``value`` is its JSON value."""
        return await self._request("eval", {"js": js}, timeout, Value)

    async def screenshot(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        full: bool = False,
        annotate: bool = False,
        format: Literal["png", "jpeg"] | None = None,
        quality: int | None = None,
        max_bytes: int | None = None,
        max_px: int | None = None,
        if_changed: bool = False,
        timeout: float | None = None,
    ) -> Shot:
        """Save a picture of the viewport (``full``: the whole page) at ``path`` (default: the
        state dir); ``Shot.path`` says where. ``format``: png or jpeg (default: from the
        path's suffix, else png) at ``quality`` (0-100, JPEG only); scaled down to fit
        ``max_bytes`` and ``max_px`` (longest side), ``Shot.scale`` says by how much.
        ``annotate``: ``Shot.labels``, each drawn on an interactive element, whose ref the
        next call acts on. ``if_changed``: ``Shot.unchanged`` and no file when the picture is
        the tab's last one again."""
        args = {
            "path": path,
            "full": full,
            "annotate": annotate,
            "format": format,
            "quality": quality,
            "max_bytes": max_bytes,
            "max_px": max_px,
            "if_changed": if_changed,
        }
        return await self._request("screenshot", args, timeout, Shot)

    async def cookies(
        self, *, name: str | None = None, domain: str | None = None, timeout: float | None = None
    ) -> Answer:
        """``data["cookies"]``: your browser's cookies (name, domain, path, expires, flags; the
        value clipped, ``value_chars`` its length); ``name``/``domain``: only those."""
        args = {"action": "get", "name": name, "domain": domain}
        return await self._request("cookies", args, timeout, Answer)

    async def set_cookie(
        self,
        name: str,
        value: str,
        *,
        url: str | None = None,
        domain: str | None = None,
        path: str | None = None,
        http_only: bool = False,
        secure: bool = False,
        same_site: str | None = None,
        expires: float | None = None,
        timeout: float | None = None,
    ) -> Answer:
        """Set a cookie for ``url`` (default: the current page's) or ``domain``/``path``;
        ``same_site``: ``Strict``, ``Lax`` or ``None``; ``expires``: epoch seconds."""
        args = {
            "action": "set",
            "cookie": name,
            "value": value,
            "url": url,
            "domain": domain,
            "path": path,
            "http_only": http_only,
            "secure": secure,
            "same_site": same_site,
            "expires": expires,
        }
        return await self._request("cookies", args, timeout, Answer)

    async def clear_cookies(
        self, *, name: str | None = None, domain: str | None = None, timeout: float | None = None
    ) -> Answer:
        """Clear every cookie, or those of ``name``/``domain``; ``data["cleared"]`` counts."""
        args = {"action": "clear", "name": name, "domain": domain}
        return await self._request("cookies", args, timeout, Answer)

    async def storage(
        self, area: str, key: str | None = None, *, timeout: float | None = None
    ) -> Answer:
        """The current page's ``local`` or ``session`` storage: ``data["items"]``, or with
        ``key`` its ``data["value"]`` (values clipped; ``data["found"]``)."""
        args = {"area": area, "action": "get", "key": key}
        return await self._request("storage", args, timeout, Answer)

    async def set_storage(
        self, area: str, key: str, value: str, *, timeout: float | None = None
    ) -> Answer:
        """Set ``key`` in the current page's ``local`` or ``session`` storage."""
        args = {"area": area, "action": "set", "key": key, "value": value}
        return await self._request("storage", args, timeout, Answer)

    async def clear_storage(self, area: str, *, timeout: float | None = None) -> Answer:
        """Clear the current page's ``local`` or ``session`` storage."""
        return await self._request("storage", {"area": area, "action": "clear"}, timeout, Answer)

    async def save_state(
        self, path: str | os.PathLike[str], *, timeout: float | None = None
    ) -> Answer:
        """Write your browser's storage state (Playwright's: cookies and localStorage) to
        ``path`` on this machine, mode 0600 (a secret: the answer carries counts only)."""
        return await self._request("state", {"action": "save", "file": path}, timeout, Answer)

    async def load_state(
        self, path: str | os.PathLike[str], *, timeout: float | None = None
    ) -> Answer:
        """Replace your ephemeral browser's cookies and storage with the state file at
        ``path`` (read here and sent; checked whole before anything is applied)."""
        return await self._request("state", {"action": "load", "file": path}, timeout, Answer)

    async def upload(
        self, target: str, *files: str | os.PathLike[str], timeout: float | None = None
    ) -> Answer:
        """Set ``files`` (yours: this client reads them and sends their bytes, 50 MiB
        together) on the file input ``target``; ``data["files"]`` names each as the page got
        it (name, size)."""
        args = {"target": target, "files": [os.fspath(f) for f in files]}
        return await self._request("upload", args, timeout, Answer)

    async def download(
        self, target: str, path: str | os.PathLike[str], *, timeout: float | None = None
    ) -> Answer:
        """Click ``target`` and save the download it starts at ``path`` (yours: the bytes come
        through the connection and this client writes them, 0600; a directory gets the file
        under its own name); ``data["path"]`` says where."""
        args = {"target": target, "path": os.fspath(path)}
        return await self._request("download", args, timeout, Answer)

    async def downloads(
        self,
        action: str = "list",
        name: str | None = None,
        path: str | os.PathLike[str] | None = None,
        *,
        timeout: float | None = None,
    ) -> Answer:
        """The downloads pages started by themselves, kept for this session: ``list``
        (``data["downloads"]``: name, size, at), ``get`` ``name`` to ``path`` (written by this
        client), ``clear`` (one ``name``, or all)."""
        args = {"action": action, "name": name, "path": None if path is None else os.fspath(path)}
        return await self._request("downloads", args, timeout, Answer)

    # -- console, errors, network --------------------------------------------------------

    async def pdf(self, path: str | os.PathLike[str], *, timeout: float | None = None) -> Answer:
        """The current page as PDF, written at ``path`` by this client (``data["path"]``,
        ``data["bytes"]``); headless browsers only."""
        return await self._request("pdf", {"path": path}, timeout, Answer)

    async def record_start(
        self,
        path: str | os.PathLike[str],
        *,
        cursor: bool = False,
        max_seconds: float | None = None,
        max_mb: float | None = None,
        timeout: float | None = None,
    ) -> Answer:
        """Record the current tab to ``path`` (``.webm`` or ``.mp4``), written by the keeper
        (0600) when :meth:`record_stop` ends it; owner-only on a session socket."""
        args: dict[str, Any] = {"action": "start", "path": path, "cursor": cursor}
        if max_seconds is not None:
            args["max_seconds"] = max_seconds
        if max_mb is not None:
            args["max_mb"] = max_mb
        return await self._request("record", args, timeout, Answer)

    async def record_stop(self, *, timeout: float | None = None) -> Answer:
        """End the recording: ``data["frames"]``, ``data["size"]``, ``data["stopped"]`` (why it
        had stopped by itself: a limit, the tab closed; None)."""
        return await self._request("record", {"action": "stop"}, timeout, Answer)

    async def emulate(
        self,
        setting: str,
        value: str | float | dict[str, str] | None = None,
        second: str | float | None = None,
        *,
        timeout: float | None = None,
    ) -> Answer:
        """``bay set``: emulate for your tabs until close. ``emulate("viewport", 375, 812)``,
        ``("device", "iPhone 12")``, ``("geo", 52.52, 13.4)``, ``("offline", "on")``,
        ``("media", "dark", "reduced-motion")``, ``("timezone", "Asia/Tokyo")``, ``("locale",
        "de-DE")``, ``("headers", {"X-A": "1"})`` (a dict is sent as JSON). ``data
        ["emulation"]``: every setting now (header names only)."""
        first = json.dumps(value) if isinstance(value, dict) else value
        args: dict[str, Any] = {"setting": setting}
        if first is not None:
            args["value"] = str(first)
        if second is not None:
            args["second"] = str(second)
        return await self._request("set", args, timeout, Answer)

    async def console(self, *, clear: bool = False, timeout: float | None = None) -> Answer:
        """The current tab's console messages (``data["messages"]``: type, text, location,
        at; the newest 500); ``clear`` empties the log once answered."""
        return await self._request("console", {"clear": clear}, timeout, Answer)

    async def errors(self, *, clear: bool = False, timeout: float | None = None) -> Answer:
        """The current tab's uncaught page errors (``data["errors"]``: name, message, stack,
        url, at; the newest 100)."""
        return await self._request("errors", {"clear": clear}, timeout, Answer)

    async def requests(
        self, *, filter: str | None = None, clear: bool = False, timeout: float | None = None
    ) -> Answer:
        """The current tab's requests (``data["requests"]``: method, url, status, type, ms,
        failure, routed; the newest 500), only URLs containing ``filter`` (a glob when it
        has ``*``, ``?`` or ``[``)."""
        args = {"action": "requests", "filter": filter, "clear": clear}
        return await self._request("network", args, timeout, Answer)

    async def route(
        self,
        glob: str,
        *,
        abort: bool = False,
        body: Any = None,
        body_file: str | os.PathLike[str] | None = None,
        status: int | None = None,
        content_type: str | None = None,
        timeout: float | None = None,
    ) -> Answer:
        """Requests of your pages matching ``glob`` fail (``abort``) or get ``body`` (a
        string as is, any other value as JSON; or the content of ``body_file``, read by this
        client) with ``status`` (200) and ``content_type``. Routes end with :meth:`close`."""
        text = body if body is None or isinstance(body, str) else json.dumps(body)
        args = {
            "action": "route",
            "arg": glob,
            "abort": abort,
            "body": text,
            "body_file": body_file,
            "status": status,
            "content_type": content_type,
        }
        return await self._request("network", args, timeout, Answer)

    async def unroute(self, glob: str | None = None, *, timeout: float | None = None) -> Answer:
        """Remove the route of ``glob`` (refused ``route_unknown`` when there is none), or
        every route."""
        return await self._request("network", {"action": "unroute", "arg": glob}, timeout, Answer)

    async def har_start(self, *, timeout: float | None = None) -> Answer:
        """Record a HAR of your session's requests from now on."""
        return await self._request("network", {"action": "har", "arg": "start"}, timeout, Answer)

    async def har_stop(
        self, path: str | os.PathLike[str] | None = None, *, timeout: float | None = None
    ) -> Answer:
        """Stop recording: the HAR (credentials masked, no bodies) written at ``path`` by this
        client (``data["path"]``), or in ``data["har"]`` without one."""
        args = {"action": "har", "arg": "stop", "file": path}
        return await self._request("network", args, timeout, Answer)

    async def back(self, *, timeout: float | None = None) -> Page:
        """Go back in the tab's history."""
        return await self._request("back", {}, timeout, Page)

    async def forward(self, *, timeout: float | None = None) -> Page:
        """Go forward in the tab's history."""
        return await self._request("forward", {}, timeout, Page)

    async def reload(self, *, timeout: float | None = None) -> Page:
        """Reload the page."""
        return await self._request("reload", {}, timeout, Page)

    # -- tabs and the session ---------------------------------------------------------

    async def tabs(self, *, timeout: float | None = None) -> Tabs:
        """The session's own tabs (``current`` marks the one verbs act on)."""
        return await self._request("tab", {"action": "list"}, timeout, Tabs)

    async def new_tab(self, url: str | None = None, *, timeout: float | None = None) -> Page:
        """Open a tab (at ``url``) and make it current."""
        return await self._request("tab", {"action": "new", "arg": url}, timeout, Page)

    async def close_tab(self, tab: str | None = None, *, timeout: float | None = None) -> Answer:
        """Close one of your tabs (default: the current one)."""
        return await self._request("tab", {"action": "close", "arg": tab}, timeout, Answer)

    async def switch_tab(self, tab: str, *, timeout: float | None = None) -> Page:
        """Make one of your tabs (an id from :meth:`tabs`) the current one."""
        return await self._request("tab", {"action": tab}, timeout, Page)

    async def dialog_accept(
        self, text: str | None = None, *, timeout: float | None = None
    ) -> Answer:
        """Accept the dialog a page opened on the current tab (``text``: a prompt's answer;
        without it, its default value). While one is open, every answer's ``notice`` names
        it and page verbs on its tab raise ``dialog_open``."""
        return await self._request("dialog", {"action": "accept", "text": text}, timeout, Answer)

    async def dialog_dismiss(self, *, timeout: float | None = None) -> Answer:
        """Dismiss (Cancel) the dialog a page opened on the current tab."""
        return await self._request("dialog", {"action": "dismiss"}, timeout, Answer)

    async def dialog_status(self, *, timeout: float | None = None) -> Answer:
        """``data["dialogs"]``: the dialogs open on your tabs (tab, type, message, default,
        url); empty when none is."""
        return await self._request("dialog", {"action": "status"}, timeout, Answer)

    async def close(self, *, timeout: float | None = None) -> Answer:
        """End the session: its tabs and browser context (other sessions are untouched)."""
        return await self._request("close", {}, timeout, Answer)

    async def status(self, *, timeout: float | None = None) -> Status:
        """Your session, the profile it acts on, its browser and tabs."""
        return await self._request("status", {}, timeout, Status)

    # -- the keeper ---------------------------------------------------------------------

    async def plugins(self, *, timeout: float | None = None) -> Answer:
        """``data["plugins"]`` (name, distribution, version, hooks) and ``data["providers"]``."""
        return await self._request("plugins", {}, timeout, Answer)

    async def verbs(self, *, timeout: float | None = None) -> Answer:
        """``data["verbs"]``: the verb table as the keeper knows it, plugins' verbs included."""
        return await self._request("verbs", {}, timeout, Answer)

    async def new_profile(
        self,
        label: str,
        *,
        from_session: bool = False,
        sharing: str | None = None,
        allowed_domains: str | None = None,
        timeout: float | None = None,
    ) -> Answer:
        """Register a persistent profile (``data["id"]``); ``from_session``: with the login
        this session's ephemeral browser has now (``data["seeded"]``)."""
        args = {
            "label": label,
            "from_session": from_session,
            "sharing": sharing,
            "allowed_domains": allowed_domains,
        }
        return await self._request("new", args, timeout, Answer)

    async def keeper_status(self, *, timeout: float | None = None) -> Answer:
        """The keeper's own status: version, pid, its browsers."""
        return await self._request("keeper", {"action": "status"}, timeout, Answer)
