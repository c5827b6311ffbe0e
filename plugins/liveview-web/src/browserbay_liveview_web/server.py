"""The live-view server: a page and a WebSocket, inside the keeper's event loop, on
127.0.0.1 (an ephemeral port) unless ``BAY_LIVE_BIND`` says otherwise — beyond loopback only
over TLS (:mod:`browserbay_liveview_web.listen`).

Routes (GET only):

- ``/v/<view>/?ticket=T`` — exchange a one-use ticket for the credential cookie and serve
  the page (its script removes the ticket from the address bar);
- ``/v/<view>/`` — the page, for a valid credential cookie (else 401);
- ``/v/<view>/ws`` — the WebSocket: same-origin ``Origin`` only (else 403), a valid
  credential cookie (else 401).

Every request must name this server in its ``Host`` header (DNS rebinding). Frames, input,
tickets and cookies are never logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import ssl
import time
import weakref
from collections.abc import Mapping
from http import HTTPStatus
from http.cookies import CookieError, SimpleCookie
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from browserbay import wsguard
from browserbay.model import LiveViewer
from browserbay.refusals import Refusal, clip
from browserbay_liveview_web.dashboard import Dashboard
from browserbay_liveview_web.listen import (
    BIND_ENV,
    TLS_HANDSHAKE_TIMEOUT,
    Listen,
    read_listen,
    tls_context,
)
from browserbay_liveview_web.stream import TabStream
from browserbay_liveview_web.tickets import CREDENTIAL_TTL, Credential, Mode, Vault
from browserbay_liveview_web.viewer import Stream, Viewer
from browserbay_liveview_web.windowstream import WindowStream

if TYPE_CHECKING:
    from websockets.asyncio.server import Server, ServerConnection
    from websockets.http11 import Request, Response

    from browserbay.model import LiveHost, LiveLease, LiveWindow, PageDialog

log = logging.getLogger("browserbay.liveview")
COOKIE = "bay_live"
#: How often a watched lease is looked at (tabs, titles, the viewport, idle handbacks).
REFRESH = 1.0
WS_CLOSE_REVOKED = 4401


def _quiet_logger() -> logging.Logger:
    """The websockets library logs connection events; none of them may carry a request line
    (it holds the ticket), so only its errors get through."""
    wire = logging.getLogger("browserbay.liveview.wire")
    wire.setLevel(logging.ERROR)
    return wire


class Target:
    """Everything the server holds for one session's lease on one profile."""

    def __init__(self, transport: WebTransport, session_id: str, profile_id: str):
        self.transport = transport
        self.session_id = session_id
        self.profile_id = profile_id
        self.viewers: set[Viewer] = set()
        self.titles: dict[str, str] = {}
        self.poke = asyncio.Event()
        self.task: asyncio.Task[Any] | None = None

    @property
    def host(self) -> LiveHost:
        return self.transport.host

    def lease(self) -> LiveLease | None:
        return self.host.lease(self.session_id, self.profile_id)

    def ensure_running(self) -> None:
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self._refresher())

    async def _refresher(self) -> None:
        while self.viewers:
            try:
                self.transport.cut_expired(self)
                await self.sync()
            except Exception:
                log.exception("live view refresh failed")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(REFRESH):
                    await self.poke.wait()
            self.poke.clear()

    async def sync(self) -> None:
        """Attach each viewer to the tab (or the window) it shows, then tell every viewer
        the state."""
        lease = self.lease()
        window = lease.window if lease is not None else None
        if lease is not None and window is not None:
            await self._sync_window(lease, window)
            return
        pages = lease.pages() if lease is not None else {}
        # A tab with a dialog open runs no script until it is answered: its title and
        # viewport are not asked for (they would wait); the page shows the dialog instead.
        dialogs = self.host.dialogs_of(self.session_id, self.profile_id) if lease else {}
        for tab_id, page in pages.items():
            if tab_id in dialogs:
                continue
            with contextlib.suppress(Exception):
                async with asyncio.timeout(1.0):
                    self.titles[tab_id] = await page.title()
        for viewer in list(self.viewers):
            want = viewer.chosen_tab if viewer.chosen_tab in pages else None
            if want is None and lease is not None and lease.current in pages:
                want = lease.current
            if want is None and pages:
                want = next(iter(pages))
            current = viewer.stream.tab_id if viewer.stream is not None else None
            if viewer.stream is not None and (viewer.stream.closed or current != want):
                self.transport.detach(viewer)
            if want is not None and viewer.stream is None:
                await self.transport.attach(viewer, want, pages[want])
        for stream in {v.stream for v in self.viewers if v.stream is not None}:
            if stream.tab_id not in dialogs:
                await stream.read_viewport()
        self.push(lease, pages, dialogs=dialogs)

    async def _sync_window(self, lease: LiveLease, window: LiveWindow) -> None:
        for viewer in list(self.viewers):
            if viewer.stream is not None and viewer.stream.closed:
                self.transport.detach(viewer)
            if viewer.stream is None:
                await self.transport.attach_window(viewer, window)
        pause = lease.pause_info()
        if pause is None or pause.holder is None:  # nobody drives: no key stays held down
            with contextlib.suppress(Exception):
                await window.release()
        self.push(lease, {}, window)

    def who(self) -> dict[str, Any] | None:
        """Who holds what on the lease (the keeper's one status: bay status says the same):
        the input holder, the viewer that drives, every viewer, the session whose live view
        or handoff holds the browser."""
        status = self.host.status(self.session_id, self.profile_id)
        if status is None:
            return None
        row = status.as_row()
        return {k: row[k] for k in ("input_holder", "driver", "viewers", "paused", "memory_over")}

    @staticmethod
    def _holder(pause: Any, viewer: Viewer) -> str:
        if pause is None:
            return "agent"
        if pause.holder is None:
            return "nobody"
        return "you" if pause.holder == viewer.id else "other"

    def push(
        self,
        lease: LiveLease | None,
        pages: dict[str, Any],
        window: LiveWindow | None = None,
        dialogs: Mapping[str, PageDialog] | None = None,
    ) -> None:
        pause = lease.pause_info() if lease is not None else None
        who = self.who()
        if window is not None:
            for viewer in list(self.viewers):
                stream = viewer.stream
                viewer.offer_state(
                    {
                        "t": "state",
                        "kind": "window",
                        "me": viewer.id,
                        "mode": viewer.mode,
                        "holder": self._holder(pause, viewer),
                        "pause": None
                        if pause is None
                        else {"origin": pause.origin, "by": pause.by, "reason": pause.reason},
                        "running": stream is not None and not stream.closed,
                        "tab": window.handle,
                        "tabs": [],
                        "url": window.where,
                        "title": window.title,
                        "viewers": len(self.viewers),
                        "cursor": None,
                        "profile": lease.profile.label if lease is not None else "",
                        "session": self.session_id,
                        "who": who,
                    }
                )
            return
        dialogs = dialogs or {}  # the dialog open on each tab: shown, a control link answers it
        tabs = [
            {"id": t, "title": self.titles.get(t, ""), "url": p.url, "agent": t == lease.current}
            for t, p in pages.items()
            if lease is not None
        ]
        others = others_tabs(self.host, self.session_id, self.profile_id)
        for viewer in list(self.viewers):
            stream = viewer.stream
            shown = stream.tab_id if stream is not None else None
            holder = self._holder(pause, viewer)
            cursor = None
            point = lease.agent_point if lease is not None else None
            if (
                point is not None
                and stream is not None
                and stream.viewport
                and point[0] == shown
                and holder == "agent"
            ):
                cursor = [point[1] / stream.viewport[0], point[2] / stream.viewport[1]]
            page = pages.get(shown) if shown else None
            dialog = dialogs.get(shown) if shown else None
            viewer.offer_state(
                {
                    "t": "state",
                    "kind": "tab",
                    "me": viewer.id,
                    "mode": viewer.mode,
                    "holder": holder,
                    "pause": None
                    if pause is None
                    else {"origin": pause.origin, "by": pause.by, "reason": pause.reason},
                    "running": bool(pages),
                    "tab": shown,
                    "tabs": tabs,
                    "others": others,
                    "url": page.url if page is not None else "",
                    "title": self.titles.get(shown or "", ""),
                    "viewers": len(self.viewers),
                    "cursor": cursor,
                    "profile": lease.profile.label if lease is not None else "",
                    "session": self.session_id,
                    "who": who,
                    "dialog": None
                    if dialog is None
                    else {
                        "type": dialog.kind,
                        "message": clip(dialog.message, 500),
                        "default": clip(dialog.default, 500),
                    },
                    "approvals": approval_cards(self.host, self.session_id, self.profile_id),
                }
            )


class WebTransport:
    """The ``web`` live-view transport: made by the keeper with its :class:`LiveHost`,
    the keeper's environment (``BAY_LIVE_BIND`` and the rest of :mod:`.listen`, read when
    the server starts) and its state directory (a self-signed certificate is kept there)."""

    def __init__(self, host: LiveHost, env: Mapping[str, str], state: Path):
        self.host = host
        self.env = env
        self.state = state
        #: Where the server listens and how links reach it (None until it starts).
        self.listen: Listen | None = None
        #: The TLS certificate's SHA-256 fingerprint (None without TLS).
        self.fingerprint: str | None = None
        self._fingerprint_told = False
        #: The owner's dashboard (``/d/<view>/``).
        self.dashboard = Dashboard(self)
        self.vault = Vault()
        self.targets: dict[tuple[str, str], Target] = {}
        self.streams: dict[str, Stream] = {}
        self.port = 0
        self._server: Server | None = None
        self._start_lock: asyncio.Lock | None = None
        self._viewer_ids = 0
        self._idle_task: asyncio.Task[Any] | None = None
        self._pending: set[asyncio.Task[Any]] = set()
        self._by_conn: weakref.WeakKeyDictionary[ServerConnection, Credential] = (
            weakref.WeakKeyDictionary()
        )

    # -- the server -------------------------------------------------------------------

    async def start(self) -> None:
        """Listen where ``BAY_LIVE_BIND`` says (127.0.0.1, an ephemeral port, by default),
        over TLS when configured (once; the first link starts it). Refused, with nothing
        listening, when a bind beyond loopback has no TLS or the TLS files cannot be used."""
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if self._server is not None:
                return
            listen = read_listen(self.env, self.state)
            tls = await asyncio.to_thread(tls_context, listen)
            try:
                server = await self._serve(listen, tls[0] if tls else None)
            except OSError as exc:
                raise Refusal(
                    "usage",
                    detail=f"the live view cannot listen on {listen.bind_words}: "
                    f"{exc.strerror or exc}; set {BIND_ENV} to an address of this machine "
                    "and a free port (then bay keeper stop)",
                    verb="live",
                ) from None
            self.listen = listen
            self.fingerprint = tls[1] if tls else None
            self._server = server
            self.port = next(iter(server.sockets)).getsockname()[1]
            self._idle_task = asyncio.get_running_loop().create_task(self._idle_loop())
            log.info(
                "live view listening on %s (%s)%s",
                listen.base(self.port),
                "TLS" if tls else "no TLS",
                f", certificate SHA-256 {self.fingerprint}" if self.fingerprint else "",
            )

    async def _serve(self, listen: Listen, tls: ssl.SSLContext | None) -> Server:
        from websockets.asyncio.server import serve  # loaded with the first link

        extra: dict[str, Any] = {}
        if tls is not None:
            extra = {"ssl": tls, "ssl_handshake_timeout": TLS_HANDSHAKE_TIMEOUT}
        return await serve(
            self._handler,
            listen.host,
            listen.port,
            **extra,
            process_request=self._process_request,
            create_connection=wsguard.capped_connection(),
            open_timeout=wsguard.PREAUTH_TIMEOUT,
            server_header=None,
            compression=None,  # JPEG does not deflate; spare the CPU
            max_size=256 * 1024,
            max_queue=64,
            write_limit=64 * 1024,
            ping_interval=30,
            ping_timeout=30,
            logger=_quiet_logger(),
        )

    async def stop(self) -> None:
        if self._idle_task is not None:
            self._idle_task.cancel()
        for target in list(self.targets.values()):
            for viewer in list(target.viewers):
                await self._drop(viewer, "the keeper is stopping", 1001)
        for stream in list(self.streams.values()):
            await stream.stop()
        self.streams.clear()
        server, self._server = self._server, None
        if server is not None:
            server.close()
            with contextlib.suppress(Exception):
                async with asyncio.timeout(3):
                    await server.wait_closed()

    def _listening(self) -> Listen:
        if self.listen is None:  # pragma: no cover - a request reaches only a started server
            raise RuntimeError("the live view is not listening")
        return self.listen

    def base(self) -> str:
        """What links start with: ``BAY_LIVE_PUBLIC_URL``, else this server's address."""
        return self._listening().base(self.port)

    async def link(
        self, session_id: str, profile_id: str, mode: Mode, take_over: bool = False
    ) -> str:
        """A one-use link to the lease's live view (``take_over``: its page takes the
        controls as it opens)."""
        await self.start()
        ticket, grant = self.vault.ticket(session_id, profile_id, mode, take_over)
        return f"{self.base()}/v/{grant.view}/?ticket={ticket}"

    async def dashboard_link(self) -> str:
        """A one-use link to the owner's dashboard (mint it for the owner's channel only)."""
        await self.start()
        ticket, grant = self.vault.dashboard_ticket()
        return f"{self.base()}/d/{grant.view}/?ticket={ticket}"

    def fingerprint_news(self) -> str | None:
        """The certificate's fingerprint, the first time it is asked (once per keeper: the
        human compares it with the browser's warning)."""
        if self.fingerprint is None or self._fingerprint_told:
            return None
        self._fingerprint_told = True
        return self.fingerprint

    async def _idle_loop(self) -> None:
        while True:
            await asyncio.sleep(0.5)
            try:
                await self.host.expire_idle()
            except Exception:
                log.exception("idle handback failed")

    # -- HTTP -------------------------------------------------------------------------

    def _process_request(self, conn: ServerConnection, request: Request) -> Response | None:
        listen = self._listening()
        if request.headers.get("Host") not in listen.hosts(self.port):
            return _text(
                conn, HTTPStatus.FORBIDDEN, "this server answers only to its own address\n"
            )
        path, _, query = request.path.partition("?")
        parts = path.split("/")
        if len(parts) != 4 or parts[1] not in ("v", "d") or parts[3] not in ("", "ws"):
            return _text(conn, HTTPStatus.NOT_FOUND, "not found\n")
        view, route = parts[2], parts[1]
        if parts[3] == "ws":
            if request.headers.get("Origin") not in listen.origins(self.port):
                return _text(conn, HTTPStatus.FORBIDDEN, "cross-origin live view refused\n")
            credential = self._credential(request, view, route)
            if credential is None:
                return self._unauthorized(conn, request, view, "no live-view credential\n")
            held = sum(
                v.credential is credential for t in self.targets.values() for v in t.viewers
            ) + sum(c is credential for c in self._by_conn.values())
            held += sum(w.credential is credential for w in self.dashboard.watchers)
            full = wsguard.refusal(conn, held)
            if full is not None:
                return _text(conn, HTTPStatus(full[0]), full[1])
            self._by_conn[conn] = credential
            return None  # the WebSocket handshake goes on
        tickets = parse_qs(query).get("ticket")
        if tickets:
            credential = self.vault.redeem(tickets[0], view)
            if credential is not None and credential.grant.dashboard != (route == "d"):
                credential = None  # a lease's ticket on the dashboard's path, or back
            if credential is None:
                return _text(
                    conn,
                    HTTPStatus.FORBIDDEN,
                    "this live-view link was already used or has expired: "
                    "ask for a new one (bay live)\n",
                )
            cookie = (
                f"{COOKIE}={credential.token}; Path={listen.prefix}/{route}/{view}/; "
                f"Max-Age={int(CREDENTIAL_TTL)}; HttpOnly; SameSite=Strict"
                + ("; Secure" if listen.secure else "")
            )
            return self._page(conn, cookie, route)
        if self._credential(request, view, route) is None:
            return self._unauthorized(
                conn, request, view, "no live-view credential: open the link `bay live` printed\n"
            )
        return self._page(conn, None, route)

    def _credential(self, request: Request, view: str, route: str) -> Credential | None:
        """The request's valid credential for this view (a dashboard's on ``/d/`` only)."""
        credential = self.vault.check(_cookie(request), view)
        if credential is None or credential.grant.dashboard != (route == "d"):
            return None
        return credential

    def _unauthorized(
        self, conn: ServerConnection, request: Request, view: str, text: str
    ) -> Response:
        """401; a revoked credential is told so (``live_revoked``, with its way out)."""
        why = self.vault.revoked(_cookie(request), view)
        if why is not None:
            refusal = Refusal("live_revoked", why=why)
            text = f"live_revoked: {refusal.message}\n{refusal.way_out}\n"
        return _text(conn, HTTPStatus.UNAUTHORIZED, text)

    def _page(self, conn: ServerConnection, cookie: str | None, route: str = "v") -> Response:
        nonce = secrets.token_urlsafe(16)
        html = _page_html(route).replace("{nonce}", nonce).encode()
        sockets = " ".join(o.replace("http", "ws", 1) for o in self._listening().origins(self.port))
        csp = (
            f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; "
            f"img-src blob: data:; connect-src {sockets}; base-uri 'none'; "
            "form-action 'none'; frame-ancestors 'none'"
        )
        response = _text(conn, HTTPStatus.OK, "")
        headers = response.headers
        del headers["Content-Type"]
        del headers["Content-Length"]
        headers["Content-Type"] = "text/html; charset=utf-8"
        headers["Content-Length"] = str(len(html))
        headers["Content-Security-Policy"] = csp
        if cookie is not None:
            headers["Set-Cookie"] = cookie
        response.body = html
        return response

    # -- WebSocket --------------------------------------------------------------------

    async def _handler(self, ws: ServerConnection) -> None:
        credential = self._by_conn.pop(ws, None)
        if credential is None:  # pragma: no cover - process_request refused it already
            return
        grant = credential.grant
        if grant.dashboard:
            await self.dashboard.serve(ws, credential)
            return
        self._viewer_ids += 1
        viewer = Viewer(f"viewer {self._viewer_ids}", ws, credential, self._dispatch)
        key = (grant.session_id, grant.profile_id)
        target = self.targets.get(key)
        if target is None:
            target = self.targets[key] = Target(self, *key)
        target.viewers.add(viewer)
        self._viewing(target, viewer, True)
        viewer.start()
        if credential.take_over:  # the dashboard's Take over: this page drives at once
            credential.take_over = False
            viewer.queue_input({"t": "takeover"})
        target.ensure_running()
        target.poke.set()
        try:
            async for message in ws:
                if isinstance(message, str):
                    await self._message(target, viewer, message)
        except Exception:  # a closed or broken socket ends the viewer, nothing else
            log.debug("a viewer's socket broke")
        finally:
            await self._leave(target, viewer)

    async def _message(self, target: Target, viewer: Viewer, message: str) -> None:
        try:
            event = json.loads(message)
        except ValueError:
            return
        if not isinstance(event, dict):
            return
        kind = event.get("t")
        if kind in ("mouse", "wheel", "key", "text", "takeover", "handback"):
            viewer.queue_input(event)  # in order: a handback comes after the keys before it
        elif kind == "fps":
            with contextlib.suppress(TypeError, ValueError):
                viewer.fps = min(60.0, max(1.0, float(event.get("n", 30))))
        elif kind == "dialog":
            await self._answer_dialog(target, viewer, event)
        elif kind == "approval":
            await answer_approval(target, viewer, event)
        elif kind in ("close", "resume"):
            await tab_action(target, viewer, event)
        elif kind == "tab":
            tab = event.get("id")
            viewer.chosen_tab = str(tab) if tab else None
            target.poke.set()

    async def _control(self, viewer: Viewer, kind: str, note: str = "") -> None:
        grant = viewer.credential.grant
        target = self.targets.get((grant.session_id, grant.profile_id))
        if target is None:
            return
        if viewer.mode != "control":
            await _say(viewer, "this link can only watch: ask for a control link (bay live)")
            return
        try:
            if kind == "takeover":
                self.host.take_over(target.session_id, target.profile_id, viewer.id)
                self._flush(viewer)
            else:
                await self.host.hand_back(
                    target.session_id, target.profile_id, viewer.id, "explicit", note
                )
        except KeyError:
            await _say(viewer, "this session holds no browser on that profile right now")
        except Exception as exc:  # a Refusal: somebody else drives
            await _say(viewer, str(getattr(exc, "message", "refused")))
        target.poke.set()

    async def _answer_dialog(self, target: Target, viewer: Viewer, event: dict[str, Any]) -> None:
        """Accept or dismiss the dialog open on the tab the viewer shows (a control link
        only; its text, a prompt's answer, is never logged)."""
        if viewer.mode != "control":
            await _say(viewer, "this link can only watch: ask for a control link (bay live)")
            return
        stream = viewer.stream
        tab = stream.tab_id if stream is not None else None
        text = event.get("text")
        if tab is None or (text is not None and not isinstance(text, str)):
            return
        answered = await self.host.answer_dialog(
            target.session_id, target.profile_id, tab, bool(event.get("accept")), text, viewer.id
        )
        if not answered:
            await _say(viewer, "that dialog is no longer open")
        target.poke.set()

    @staticmethod
    def _flush(viewer: Viewer) -> None:
        if viewer.stream is not None:
            viewer.stream.flush_ack()

    async def _dispatch(self, viewer: Viewer, event: dict[str, Any]) -> None:
        """One input event of the human who drives, to the tab the viewer shows."""
        if event.get("t") in ("takeover", "handback"):
            note = event.get("note")  # the human's hand-back note: to the agent, never logged
            await self._control(viewer, str(event["t"]), note if isinstance(note, str) else "")
            return
        grant = viewer.credential.grant
        lease = self.host.lease(grant.session_id, grant.profile_id)
        pause = lease.pause_info() if lease is not None else None
        stream = viewer.stream
        if viewer.mode != "control" or pause is None or pause.holder != viewer.id:
            return
        if stream is None:
            return
        sent = await stream.deliver(event)
        if sent:
            self.host.note_input(grant.session_id, grant.profile_id)
            stream.flush_ack()  # the answer to the input shows without waiting for the pace

    # -- streams ----------------------------------------------------------------------

    async def attach(self, viewer: Viewer, tab_id: str, page: Any) -> None:
        stream = self.streams.get(tab_id)
        if stream is None or stream.closed:
            stream = TabStream(tab_id, page, self._stream_gone)
            if not await self._start(stream):
                return  # the page closed while we attached: the next sync moves on
        self._join(viewer, stream)

    async def attach_window(self, viewer: Viewer, window: LiveWindow) -> None:
        stream = self.streams.get(window.handle)
        if stream is None or stream.closed:
            stream = WindowStream(window, self._stream_gone)
            if not await self._start(stream):
                return  # the window went while we attached: the page shows it stopped
        self._join(viewer, stream)

    async def _start(self, stream: Stream) -> bool:
        self.streams[stream.tab_id] = stream
        try:
            await stream.start()
        except Exception:
            await stream.stop()
            if self.streams.get(stream.tab_id) is stream:
                del self.streams[stream.tab_id]
            return False
        return True

    def _join(self, viewer: Viewer, stream: Stream) -> None:
        stream.viewers.add(viewer)
        viewer.stream = stream
        if stream.last is not None:
            viewer.offer_frame(stream.last)

    def detach(self, viewer: Viewer) -> None:
        stream, viewer.stream = viewer.stream, None
        if stream is None:
            return
        stream.viewers.discard(viewer)
        if not stream.viewers:
            if self.streams.get(stream.tab_id) is stream:
                del self.streams[stream.tab_id]
            self._spawn(stream.stop())

    def _stream_gone(self, stream: Stream) -> None:
        if self.streams.get(stream.tab_id) is stream:
            del self.streams[stream.tab_id]
        self._spawn(stream.stop())
        for target in self.targets.values():
            if any(v.stream is stream for v in target.viewers):
                target.poke.set()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    def _viewing(self, target: Target, viewer: Viewer, on: bool) -> None:
        """Tell the keeper who watches the lease (bay status lists the viewers)."""
        seen = LiveViewer(viewer.id, viewer.credential.grant.mode)
        with contextlib.suppress(Exception):
            self.host.viewing(target.session_id, target.profile_id, seen, on)

    async def _leave(self, target: Target, viewer: Viewer) -> None:
        target.viewers.discard(viewer)
        self._viewing(target, viewer, False)
        self.detach(viewer)
        await viewer.stop()
        with contextlib.suppress(Exception):
            self.host.release(target.session_id, target.profile_id, viewer.id)
        target.poke.set()

    async def _drop(
        self,
        viewer: Viewer | ServerConnection,
        reason: str,
        code: int,
        refusal: Refusal | None = None,
    ) -> None:
        ws = viewer.ws if isinstance(viewer, Viewer) else viewer
        ended: dict[str, Any] = {"t": "ended", "reason": reason}
        if refusal is not None:
            ended["refusal"] = refusal.frame()
        with contextlib.suppress(Exception):
            await ws.send(json.dumps(ended))
        with contextlib.suppress(Exception):
            await ws.close(code, clip(reason, 100))

    def spawn_drop(self, ws: ServerConnection, why: str) -> None:
        """Cut a page off: its last message carries the ``live_revoked`` refusal."""
        refusal = Refusal("live_revoked", why=why)
        self._spawn(self._drop(ws, refusal.message, WS_CLOSE_REVOKED, refusal))

    # -- revocation (bay live --revoke) -----------------------------------------------

    def revoke(self, session_id: str, profile_id: str, why: str) -> int:
        """Every credential and ticket of the lease revoked, its open pages cut off now
        (they, and a reload, are told ``live_revoked``). Answers how many pages were cut
        plus credentials revoked that had none open."""
        count = self.vault.revoke(session_id, profile_id, why)
        target = self.targets.get((session_id, profile_id))
        for viewer in list(target.viewers) if target is not None else []:
            self.spawn_drop(viewer.ws, why)
        return count

    def cut_expired(self, target: Target) -> None:
        """A page whose credential expired (or was revoked) while open is cut off."""
        for viewer in list(target.viewers):
            credential = viewer.credential
            if self.vault.check(credential.token, credential.grant.view) is None:
                why = self.vault.revoked(credential.token, credential.grant.view) or "expired"
                self.spawn_drop(viewer.ws, why)

    # -- what the keeper tells us (hooks) ---------------------------------------------

    def lease_changed(self, session_id: str, profile_id: str, ended: str | None) -> None:
        if ended == "closed":
            self.vault.revoke(session_id, profile_id)
            target = self.targets.get((session_id, profile_id))
            if target is not None:
                for viewer in list(target.viewers):
                    self._spawn(
                        self._drop(
                            viewer,
                            "the session closed its browser: this live view has ended",
                            WS_CLOSE_REVOKED,
                        )
                    )
            return
        self.poke(session_id, profile_id)

    def poke(self, session_id: str, profile_id: str) -> None:
        target = self.targets.get((session_id, profile_id))
        if target is not None:
            target.poke.set()


# -- approval cards (an approval gate's Ask: the verb waits for a human) -------------------


def approval_cards(host: LiveHost, session_id: str, profile_id: str) -> list[dict[str, Any]]:
    """The lease's pending approvals as the page draws its cards (page-controlled text, set
    as text by the page: the element's name, the page's address)."""
    return [
        {
            "id": a.id,
            "verb": a.verb,
            "what": a.what,
            "url": a.url,
            "tab": a.tab,
            "reason": a.reason,
            "plugin": a.plugin,
            "session": a.session,
            "left": max(0, round(a.expires - time.time())),
        }
        for a in host.approvals_of(session_id, profile_id)
    ]


async def answer_approval(target: Target, viewer: Viewer, event: dict[str, Any]) -> None:
    """Approve or deny one of the lease's pending approvals (a control link, driving or
    not: the agent is waiting, not the page)."""
    if viewer.mode != "control":
        await _say(viewer, "this link can only watch: ask for a control link (bay live)")
        return
    approval = event.get("id")
    if not isinstance(approval, str):
        return
    answered = target.host.answer_approval(
        target.session_id, target.profile_id, approval, bool(event.get("approve")), viewer.id
    )
    if not answered:
        await _say(viewer, "that approval is no longer waiting (answered, timed out or cut)")
    target.poke.set()


# -- takeover: the tab strip's other sessions, Close and Resume ---------------------------


def others_tabs(host: LiveHost, session_id: str, profile_id: str) -> list[dict[str, str]]:
    """The tabs other sessions hold on the same browser: by id and session only (their
    pages are not this session's to show)."""
    return [
        {"id": t.id, "session": t.session} for t in host.tabs(session_id, profile_id) if not t.own
    ]


async def tab_action(target: Target, viewer: Viewer, event: dict[str, Any]) -> None:
    """``close`` one of the session's own tabs, or ``resume`` its kept tabs (a control
    link, driving or not)."""
    if viewer.mode != "control":
        await _say(viewer, "this link can only watch: ask for a control link (bay live)")
        return
    host, sid, pid = target.host, target.session_id, target.profile_id
    try:
        if event.get("t") == "close":
            tab = event.get("id")
            if not isinstance(tab, str) or not await host.close_tab(sid, pid, tab):
                await _say(viewer, "that tab is not this session's, or is already closed")
        else:
            restored = await host.resume_tabs(sid, pid)
            await _say(
                viewer,
                f"reopened {restored} kept tab(s)"
                if restored
                else "the session's kept tabs are open (none was parked)",
            )
    except KeyError:
        await _say(viewer, "this session holds no browser on that profile right now")
    except Exception as exc:  # a Refusal (its browser could not start), a deadline
        log.info("a live view's %s failed: %s", event.get("t"), type(exc).__name__)
        await _say(viewer, str(getattr(exc, "message", "that did not work")))
    target.poke.set()


def _text(conn: ServerConnection, status: HTTPStatus, body: str) -> Response:
    response = conn.respond(status, body)
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["X-Frame-Options"] = "DENY"
    return response


def _cookie(request: Request) -> str | None:
    raw = request.headers.get("Cookie")
    if not raw:
        return None
    try:
        jar: SimpleCookie = SimpleCookie(raw)
    except CookieError:
        return None
    morsel = jar.get(COOKIE)
    return morsel.value if morsel is not None else None


async def _say(viewer: Viewer, text: str) -> None:
    with contextlib.suppress(Exception):
        await viewer.ws.send(json.dumps({"t": "error", "text": text, "at": time.time()}))


_PAGE_CACHE: dict[str, str] = {}


def _page_html(route: str = "v") -> str:
    """The live page (``v``) or the dashboard (``d``), read once."""
    if route not in _PAGE_CACHE:
        name = "dashboard.html" if route == "d" else "page.html"
        _PAGE_CACHE[route] = (
            resources.files("browserbay_liveview_web").joinpath(name).read_text("utf-8")
        )
    return _PAGE_CACHE[route]
