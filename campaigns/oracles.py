"""The hostile campaign's oracles: what tells that an attack worked, by observing the world —
never by reading the refusal code the keeper gave.

- :class:`Servers` — the allowed site (127.0.0.1) and an "outside" server (127.0.0.1,
  127.0.0.2 and ``[::1]`` on one port, so other *names* of loopback reach it); every request
  is logged with the ``Host`` the browser sent, and attributed to the attempt whose id is in
  its path. An outside hit is a request that carries an attempt's id and a ``Host`` the fence
  does not allow.
- :class:`Listener` — a TCP listener (an attacker's "vendor API"): every byte it receives.
- :func:`secrets_in` — a planted secret's bytes in any text (answers, stdout, a CDP
  transcript, ``/proc/<pid>/environ``).
- :func:`page_leaks` — what a page shows: a privileged scheme loaded (``chrome:``, ``file:``,
  ``devtools:``, ``view-source:``…), the marker file's content, the other session's URL token
  or cookie, the DevTools endpoint's answer.
- :class:`Watch` — the keeper's pid and the shared browsers' pids (a change is a death/crash).
"""

from __future__ import annotations

import contextlib
import html
import http.server
import json
import socket
import threading
import time
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

#: Schemes a tab of an agent may show (anything else loaded is a leak of capability):
#: the web's own, and Chromium's error page (what any failed load shows).
WEB_SCHEMES = ("http:", "https:", "about:", "data:", "blob:", "filesystem:", "chrome-error:")


# -- the servers -----------------------------------------------------------------------------


@dataclass
class Hit:
    at: float
    server: str  # "site" or "outside"
    host: str  # the Host header as sent
    path: str
    method: str
    cookie: str = ""  # the Cookie header as sent: whose browser asked (a profile's cookie)


class _Handler(http.server.BaseHTTPRequestHandler):
    log: ClassVar[list[Hit]] = []
    lock: ClassVar[threading.Lock] = threading.Lock()
    server_name_: ClassVar[str] = "site"
    victim_cookie: ClassVar[str] = ""
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _record(self) -> None:
        with self.lock:
            self.log.append(
                Hit(
                    time.monotonic(),
                    self.server_name_,
                    self.headers.get("Host") or "",
                    self.path,
                    self.command,
                    self.headers.get("Cookie") or "",
                )
            )

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        headers = {"Content-Type": "text/html; charset=utf-8", **(headers or {})}
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(min(length, 1 << 20))
        self.do_GET()

    def do_GET(self) -> None:
        self._record()
        url = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(url.query))
        parts = url.path.strip("/").split("/")
        if parts[0] == "victim":
            body = b"<!doctype html><title>victim</title><p>victim page</p>"
            self._send(200, body, {"Set-Cookie": f"victim={self.victim_cookie}; Path=/"})
        elif parts[0] == "plant" and len(parts) >= 2:  # /plant/<value>: a profile's mark
            body = b"<!doctype html><title>planted</title><p>planted</p>"
            self._send(200, body, {"Set-Cookie": f"plant={parts[1]}; Path=/; Max-Age=86400"})
        elif parts[0] == "attacker":
            body = (
                b"<!doctype html><title>attacker</title><input type=file id=f>"
                b"<a id=go href='/t/none'>go</a>"
            )
            self._send(200, body)
        elif parts[0] == "r" and len(parts) >= 3:  # /r/<aid>/<n>?code=&to=
            n = int(parts[2]) if parts[2].isdigit() else 0
            to = q.get("to", "/")
            if n > 0:
                rest = urllib.parse.urlencode({"code": q.get("code", "302"), "to": to})
                to = f"/r/{parts[1]}/{n - 1}?{rest}"
            self._send(int(q.get("code", "302")), b"", {"Location": to})
        elif parts[0] == "p" and len(parts) >= 2:
            self._page(parts[1], q.get("mode", ""), q.get("to", "/"))
        elif parts[0] == "download":
            self._send(
                200,
                b"downloaded-" + parts[-1].encode(),
                {
                    "Content-Type": "application/octet-stream",
                    "Content-Disposition": f"attachment; filename=dl-{parts[-1]}.bin",
                },
            )
        elif parts[0] == "esc":
            text = q.get("t", "")
            body = f"<!doctype html><title>{text}</title><p id=p>{text}</p>".encode()
            self._send(200, body)
        else:
            self._send(200, b"<!doctype html><title>reached</title><p>reached</p>")

    def _page(self, aid: str, mode: str, to: str) -> None:
        js = json.dumps(to)
        attr = html.escape(to, quote=True)
        if mode.startswith("redirect-") and mode[9:].isdigit():
            self._send(int(mode[9:]), b"", {"Location": to})
            return
        if mode == "redirect-chain-3":
            self._send(
                302,
                b"",
                {"Location": f"/r/{aid}/2?" + urllib.parse.urlencode({"code": "302", "to": to})},
            )
            return
        bodies = {
            "meta-refresh": f"<meta http-equiv=refresh content='0;url={attr}'>",
            "script-location": f"<script>location.href={js}</script>",
            "window-open": f"<script>window.open({js})</script>",
            "fetch": f"<script>fetch({js},{{mode:'no-cors'}}).catch(()=>0)</script>",
            "fetch-via-redirect": "<script>fetch('/r/"
            + aid
            + "/0?to='+encodeURIComponent("
            + js
            + "),{mode:'no-cors'}).catch(()=>0)</script>",
            "img": f"<img src='{attr}'>",
            "iframe": f"<iframe src='{attr}'></iframe>",
            "link-click": f"<a id=go href='{attr}'>go</a>",
            "form-post": f"<form id=f method=post action='{attr}'><input name=a value=1>"
            "</form><script>document.getElementById('f').submit()</script>",
        }
        body = "<!doctype html><title>fence</title>" + bodies.get(mode, "")
        self._send(200, body.encode())


def _quiet(request: Any, client_address: Any) -> None:
    pass


class Servers:
    """The site and the outside server, with one shared log."""

    def __init__(self, victim_cookie: str):
        handler: type[_Handler] = type(
            "H", (_Handler,), {"log": [], "lock": threading.Lock(), "victim_cookie": victim_cookie}
        )
        self.log: list[Hit] = handler.log
        self._servers: list[http.server.ThreadingHTTPServer] = []
        site = self._serve(handler, "site", "127.0.0.1", 0, socket.AF_INET)
        self.port = site.server_address[1]
        self.site = f"http://127.0.0.1:{self.port}"
        for _ in range(20):
            first = self._serve(handler, "outside", "127.0.0.2", 0, socket.AF_INET)
            self.out_port = first.server_address[1]
            try:
                self._serve(handler, "outside", "127.0.0.1", self.out_port, socket.AF_INET)
                self._serve(handler, "outside", "::1", self.out_port, socket.AF_INET6)
                break
            except OSError:
                self.close()
                site = self._serve(handler, "site", "127.0.0.1", self.port, socket.AF_INET)
        else:
            raise OSError("no port free on 127.0.0.1, 127.0.0.2 and ::1 at once")

    def _serve(
        self, handler: type[_Handler], name: str, host: str, port: int, family: int
    ) -> http.server.ThreadingHTTPServer:
        cls = type(
            "S",
            (http.server.ThreadingHTTPServer,),
            {"address_family": family, "daemon_threads": True},
        )
        h = type("N", (handler,), {"server_name_": name})
        server: http.server.ThreadingHTTPServer = cls((host, port), h)
        server.handle_error = _quiet  # type: ignore[method-assign]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self._servers.append(server)
        return server

    def hits(self, aid: str, allowed: Iterable[str] = ("127.0.0.1",)) -> list[Hit]:
        """Requests carrying ``aid`` whose Host is not one the fence allows."""
        allowed = tuple(allowed)
        out = []
        for hit in list(self.log):
            if f"/{aid}/" not in hit.path and not hit.path.endswith(f"/{aid}"):
                continue
            host = urllib.parse.urlsplit("http://" + hit.host).hostname or hit.host
            if host.rstrip(".").lower() not in allowed:
                out.append(hit)
        return out

    def asked(self, aid: str) -> list[Hit]:
        """Every request carrying ``aid``, whatever its Host (the site's included)."""
        return [h for h in list(self.log) if f"/{aid}/" in h.path or h.path.endswith(f"/{aid}")]

    def close(self) -> None:
        for s in self._servers:
            with contextlib.suppress(Exception):
                s.shutdown()
                s.server_close()
        self._servers.clear()


# -- a listener ------------------------------------------------------------------------------


class Listener:
    """A TCP listener on 127.0.0.1 and ``[::1]`` (one port) that keeps every byte it gets and
    answers a plain 200, as an attacker's stand-in for a vendor's API."""

    def __init__(self) -> None:
        self.received: list[bytes] = []
        self.connections = 0
        self._socks: list[socket.socket] = []
        self._stop = threading.Event()
        for _ in range(20):
            a = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            a.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            a.bind(("127.0.0.1", 0))
            self.port = a.getsockname()[1]
            b = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
            try:
                b.bind(("::1", self.port))
            except OSError:
                a.close()
                b.close()
                continue
            self._socks = [a, b]
            break
        for s in self._socks:
            s.listen(64)
            s.settimeout(0.2)
            threading.Thread(target=self._loop, args=(s,), daemon=True).start()

    def _loop(self, s: socket.socket) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = s.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            conn.settimeout(2)
            data = b""
            with contextlib.suppress(OSError):
                while b"\r\n\r\n" not in data and len(data) < 1 << 16:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
            conn.close()
            self.received.append(data)

    def bytes_since(self, n: int) -> bytes:
        return b"".join(self.received[n:])

    def close(self) -> None:
        self._stop.set()
        for s in self._socks:
            s.close()


# -- texts -----------------------------------------------------------------------------------


def secrets_in(text: str | bytes, planted: dict[str, str]) -> list[str]:
    """The names of the planted secrets whose bytes are in ``text`` (also JSON-escaped)."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    found = []
    for name, value in planted.items():
        if not value:
            continue
        forms = {
            value.encode(),
            json.dumps(value)[1:-1].encode(),
            urllib.parse.quote(value).encode(),
        }
        if any(f in data for f in forms):
            found.append(name)
    return found


def page_leaks(href: str, content: str, planted: dict[str, str]) -> list[str]:
    """What a page the attacker's tab shows gives away."""
    out = []
    scheme = href.split(":", 1)[0].lower() + ":" if ":" in href else ""
    if href and scheme not in WEB_SCHEMES:
        out.append(f"privileged page loaded: {href[:80]}")
    if "webSocketDebuggerUrl" in content or '"devtoolsFrontendUrl"' in content:
        out.append("the browser's DevTools endpoint answered in the page")
    out += [f"{name} in the page" for name in secrets_in(content, planted)]
    return out


def raw_escapes(data: bytes) -> list[str]:
    """Terminal control bytes in output meant for a terminal."""
    found = []
    if b"\x1b" in data:
        found.append("ESC")
    if b"\x07" in data:
        found.append("BEL")
    if "\x9b".encode() in data or b"\x9b" in data:
        found.append("C1 CSI")
    return found


# -- processes -------------------------------------------------------------------------------


@dataclass
class Watch:
    """Pids to keep an eye on: a change of the keeper's, or a shared browser gone, is a death."""

    keeper: int | None = None
    browsers: dict[str, int] = field(default_factory=dict)
    debug_browser: Any = None  # a browserbay_testing.cdp.DebugBrowser

    def deaths(self, keeper_now: int | None, browsers_now: dict[str, int]) -> list[str]:
        out = []
        if self.keeper is not None and keeper_now != self.keeper:
            out.append(f"keeper pid {self.keeper} -> {keeper_now}")
        for bid, pid in self.browsers.items():
            if browsers_now.get(bid) != pid:
                out.append(f"shared browser {bid} (pid {pid}) is gone")
        if self.debug_browser is not None and not self.debug_browser.answers():
            out.append("the cdp profile's shared browser is down")
        return out
