"""FAKE cloud-browser vendors: one local server that plays any vendor's documented session API,
driven by that vendor's own contract row (``browserbay_cloud.vendors``). The real services
cannot be reached from here; this is NOT the vendor, it is what its documentation says.

What the fake does, per its vendor's row:

- checks the key on every REST call where the row says it goes (a header, or the query) and
  answers 401 otherwise;
- on the create call, starts a REAL local Chromium (``--remote-debugging-port=0``, its own
  temporary directory; the ws URL read from ``DevToolsActivePort``) and answers the vendor's
  fields: the session id, the CDP URL (a WebSocket proxy of its own in front of that Chromium,
  or an ``http://`` discovery endpoint for a vendor whose CDP URL is one) and a live-viewer URL;
- the proxy checks the key in the CDP URL's query where the row says the key goes there
  (401 at the handshake otherwise);
- on the release call (or, for a vendor without one, when the CDP connection closes) stops that
  Chromium and records the release.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response
from websockets.sync.client import connect
from websockets.sync.server import Server, ServerConnection, serve

from browserbay_chromium.driver import CLOSED_NETWORK_FLAGS
from browserbay_chromium.find import find_chromium
from browserbay_cloud.vendors import Call, Vendor

#: The vendor's browser: the Chromium the chromium provider would launch, headless, with the
#: same closed-network switches.
FLAGS = ("--headless=new", *CLOSED_NETWORK_FLAGS)


def chromium() -> str:
    return str(find_chromium())


@dataclass
class FakeSession:
    id: str
    proc: subprocess.Popen[bytes] | None = None
    directory: Path | None = None
    upstream: str = ""
    """Chromium's own browser WebSocket URL."""
    released: str | None = None
    """How it ended: ``release`` (the documented call) or ``disconnect``."""
    connections: int = 0

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)


@dataclass
class Seen:
    method: str
    path: str
    authorized: bool
    body: Any = None


@dataclass
class FakeCloud:
    """A FAKE of ``vendor``'s session API accepting exactly ``key``."""

    vendor: Vendor
    key: str
    refuse_connect: bool = False
    """Every CDP handshake fails (502): the vendor created a session we cannot reach."""
    create_status: int | None = None
    """Set: the create call answers this HTTP status with an error body (and starts nothing)."""
    hold_create: threading.Event | None = None
    """Set: a create call waits for this event before it starts the browser and answers (a
    test cuts the caller meanwhile)."""
    viewer_query: str | None = None
    """Set: the live-viewer URL carries the key in this query parameter (``?apiKey=<key>``),
    as a vendor whose viewer authenticates by its URL would answer."""
    sessions: dict[str, FakeSession] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    launches: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _closed: bool = False
    _http: ThreadingHTTPServer | None = None
    _ws: Server | None = None

    # -- lifetime -----------------------------------------------------------------------------

    def __enter__(self) -> FakeCloud:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _any(self) -> None:
                fake._rest(self)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        threading.Thread(target=self._http.serve_forever, daemon=True).start()
        self._ws = serve(
            self._proxy,
            "127.0.0.1",
            0,
            process_request=self._handshake,
            max_size=None,
            compression=None,
        )
        threading.Thread(target=self._ws.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._closed = True  # a create still in flight stops its own browser
        if self._ws is not None:
            self._ws.shutdown()
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
        for s in list(self.sessions.values()):
            s.stop()

    @property
    def url(self) -> str:
        """The fake's API base URL (what the row's URL field is set to). A vendor without a
        create call is reached at its CDP WebSocket on that same host: its proxy's port."""
        assert self._http is not None
        if self.vendor.contract.create is None:
            return self.ws_base.replace("ws://", "http://", 1)
        return f"http://127.0.0.1:{self._http.server_address[1]}"

    @property
    def ws_base(self) -> str:
        assert self._ws is not None
        return f"ws://127.0.0.1:{self._ws.socket.getsockname()[1]}"

    # -- what a test reads --------------------------------------------------------------------

    @property
    def released(self) -> list[str]:
        return [s.id for s in self.sessions.values() if s.released]

    def live(self) -> list[str]:
        """Sessions whose Chromium still runs."""
        return [s.id for s in self.sessions.values() if s.proc and s.proc.poll() is None]

    def wait_released(self, session_id: str, timeout: float = 30) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            s = self.sessions.get(session_id)
            if s is not None and s.released:
                return s.released
            time.sleep(0.05)
        raise AssertionError(f"the FAKE {self.vendor.title} never saw {session_id} released")

    def kill(self, session_id: str) -> None:
        """The vendor's browser goes away by itself (its timeout, a crash). Not a release:
        only the release call (or, without one, the disconnect) marks it released."""
        self.sessions[session_id].stop()

    # -- the key ------------------------------------------------------------------------------

    def _authorized(self, headers: Any, query: dict[str, list[str]]) -> bool:
        for name, template in self.vendor.headers.items():
            if headers.get(name) != template.format(api_key=self.key):
                return False
        for name, template in self.vendor.query.items():
            if query.get(name) != [template.format(api_key=self.key)]:
                return False
        return True

    # -- REST ---------------------------------------------------------------------------------

    def _rest(self, h: BaseHTTPRequestHandler) -> None:
        parts = urllib.parse.urlsplit(h.path)
        query = urllib.parse.parse_qs(parts.query)
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        discovery = re.fullmatch(r"/cdp/([\w-]+)/json/version/?", parts.path)
        if discovery:  # an http CDP URL: Playwright asks it for the WebSocket URL
            self._answer(h, 200, {"webSocketDebuggerUrl": self._proxy_url(discovery.group(1))})
            return
        ok = self._authorized(h.headers, query)
        self.seen.append(Seen(h.command, parts.path, ok, body))
        if not ok:
            self._answer(h, 401, {"error": "Unauthorized: invalid API key"})
            return
        c = self.vendor.contract
        if self._matches(c.create, h.command, parts.path) is not None:
            if self.hold_create is not None:
                self.hold_create.wait(60)
            if self.create_status is not None:
                self._answer(h, self.create_status, {"error": "capacity exhausted, try later"})
                return
            self._answer(h, 201 if h.command == "POST" else 200, self._create())
            return
        sid = self._matches(c.view, h.command, parts.path)
        if sid is not None and sid in self.sessions and c.view_answer_field:
            self._answer(h, 200, {c.view_answer_field: self.viewer_url(sid), "pages": []})
            return
        sid = self._matches(c.release, h.command, parts.path)
        if sid is not None and sid in self.sessions:
            self._release(sid, "release")
            self._answer(h, 200, {"success": True, "id": sid})
            return
        self._answer(h, 404, {"error": f"no such route or session: {h.command} {parts.path}"})

    @staticmethod
    def _matches(call: Call | None, method: str, path: str) -> str | None:
        """The session id of ``path`` if it is ``call`` (``""`` for a call without one)."""
        if call is None or call.method != method:
            return None
        pattern = re.escape(call.path).replace(re.escape("{session_id}"), "([\\w-]+)")
        found = re.fullmatch(pattern, path)
        if found is None:
            return None
        return found.group(1) if found.groups() else ""

    @staticmethod
    def _answer(h: BaseHTTPRequestHandler, status: int, value: Any) -> None:
        data = json.dumps(value).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def _create(self) -> dict[str, Any]:
        # A session whose browser cannot be reached needs no browser behind it.
        session = (
            self._record(FakeSession(self._new_id())) if self.refuse_connect else self._launch()
        )
        c = self.vendor.contract
        answer: dict[str, Any] = {c.id_field: session.id, "status": "RUNNING"}
        if c.cdp_field:
            answer[c.cdp_field] = self._cdp_url_for(session.id)
        if c.view_field:
            answer[c.view_field] = self.viewer_url(session.id)
        return answer

    def viewer_url(self, sid: str) -> str:
        """The session's live-viewer URL (with the key in its query when ``viewer_query``)."""
        url = f"{self.url}/live/{sid}"
        if self.viewer_query:
            url += "?" + urllib.parse.urlencode({self.viewer_query: self.key})
        return url

    def _cdp_url_for(self, sid: str) -> str:
        """The CDP URL in the shape the vendor documents: an http discovery endpoint when its
        docs say so (Browser Use's ``cdpUrl``), else a WebSocket URL; Steel's carries a query
        the client adds ``&apiKey=`` to."""
        if self.vendor.contract.cdp_kind == "http":
            return f"{self.url}/cdp/{sid}"
        if self.vendor.contract.connect_query:
            return f"{self.ws_base}/session/{sid}?sessionId={sid}"
        return self._proxy_url(sid)

    def _proxy_url(self, sid: str) -> str:
        return f"{self.ws_base}/session/{sid}"

    def _launch(self, sid: str | None = None) -> FakeSession:
        exe = chromium()
        directory = Path(tempfile.mkdtemp(prefix="bay-fakecloud-", dir="/tmp"))
        (directory / "home").mkdir()
        argv = [
            exe,
            *FLAGS,
            "--remote-debugging-port=0",
            f"--user-data-dir={directory / 'profile'}",
        ]
        if os.geteuid() == 0:
            argv.append("--no-sandbox")
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(directory / "home")}
        log = open(directory / "chromium.log", "wb")  # noqa: SIM115 - the child holds it
        proc = subprocess.Popen(
            [*argv, "about:blank"], stdout=log, stderr=log, env=env, start_new_session=True
        )
        log.close()
        session = FakeSession(sid or self._new_id(), proc, directory)
        port_file = directory / "profile" / "DevToolsActivePort"
        end = time.monotonic() + 30
        while time.monotonic() < end and not session.upstream:
            try:
                port, path = port_file.read_text().split("\n")[:2]
                if port and path:
                    session.upstream = f"ws://127.0.0.1:{int(port)}{path}"
            except (OSError, ValueError):
                time.sleep(0.05)
        if not session.upstream:
            session.stop()
            raise AssertionError(f"the FAKE's Chromium did not open its port ({directory})")
        with self._lock:
            self.launches += 1
        return self._record(session)

    @staticmethod
    def _new_id() -> str:
        return f"fake-{os.urandom(6).hex()}"

    def _record(self, session: FakeSession) -> FakeSession:
        with self._lock:
            self.sessions[session.id] = session
            closed = self._closed
        if closed:  # the fake was closed while this create ran: nothing may outlive it
            session.stop()
        return session

    def _release(self, sid: str, how: str) -> None:
        session = self.sessions[sid]
        session.stop()  # before it is marked: a test that sees the mark sees it stopped
        if session.released is None:
            session.released = how

    # -- the CDP WebSocket ----------------------------------------------------------------------

    def _handshake(self, conn: ServerConnection, request: Request) -> Response | None:
        parts = urllib.parse.urlsplit(request.path)
        query = urllib.parse.parse_qs(parts.query)
        for name, template in self.vendor.contract.connect_query.items():
            if query.get(name) != [template.format(api_key=self.key)]:
                return conn.respond(HTTPStatus.UNAUTHORIZED, "invalid API key\n")
        if self.refuse_connect:
            return conn.respond(HTTPStatus.BAD_GATEWAY, "the browser is not reachable\n")
        found = re.fullmatch(r"/session/([\w-]+)", parts.path)
        if self.vendor.contract.create is None:
            return None  # connecting starts the browser (the handler launches it)
        if found is None or found.group(1) not in self.sessions:
            return conn.respond(HTTPStatus.NOT_FOUND, "no such session\n")
        if self.sessions[found.group(1)].released:
            return conn.respond(HTTPStatus.GONE, "session released\n")
        return None

    def _proxy(self, conn: ServerConnection) -> None:
        assert conn.request is not None
        path = urllib.parse.urlsplit(conn.request.path).path
        if self.vendor.contract.create is None:
            session = self._launch()
        else:
            session = self.sessions[path.rsplit("/", 1)[-1]]
        session.connections += 1
        try:
            with connect(session.upstream, max_size=None, compression=None) as upstream:

                def back() -> None:
                    try:
                        for message in upstream:
                            conn.send(message)
                    except ConnectionClosed:
                        pass
                    finally:
                        conn.close()

                pump = threading.Thread(target=back, daemon=True)
                pump.start()
                try:
                    for message in conn:
                        upstream.send(message)
                except ConnectionClosed:
                    pass
                finally:
                    upstream.close()
                pump.join(10)
        except (OSError, ConnectionClosed):
            conn.close()
        finally:
            if self.vendor.contract.release is None:
                self._release(session.id, "disconnect")
