"""A FAKE cloud vendor for key tests — not any real vendor, and never contacted outside tests.

It implements the documented shape of a vendor's key check, as an integration row's
``exchange`` describes it: a ``GET`` to one path carrying the key in a header or the query,
answered 200 when the credential matches and 401 when it does not (404 for any other path).
It listens on 127.0.0.1 only and records every request (method, host, path, query, header
names and the credential it saw), so a test can assert that exactly one request reached
exactly this host::

    with FakeVendor("/v1/sessions", headers={"steel-api-key": key}) as vendor:
        ...  # point the row's URL field at vendor.url, run the test
        assert len(vendor.requests) == 1
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Seen:
    """One request the fake vendor got."""

    method: str
    host: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    accepted: bool


@dataclass
class FakeVendor:
    """A fake vendor API on ``127.0.0.1:<free port>``: ``url``, ``host``, ``requests``."""

    path: str
    headers: Mapping[str, str] = field(default_factory=dict)
    """Header name -> the exact value a valid credential sends."""
    query: Mapping[str, str] = field(default_factory=dict)
    """Query parameter -> the exact value a valid credential sends."""
    requests: list[Seen] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    @property
    def host(self) -> str:
        assert self._server is not None, "start the fake vendor first"
        return f"127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FakeVendor:
        if self._server is not None:
            return self
        vendor = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urllib.parse.urlsplit(self.path)
                query = dict(urllib.parse.parse_qsl(parts.query))
                headers = {k.lower(): v for k, v in self.headers.items()}
                right_path = parts.path == vendor.path
                accepted = right_path and all(
                    headers.get(k.lower()) == v for k, v in vendor.headers.items()
                )
                accepted = accepted and all(query.get(k) == v for k, v in vendor.query.items())
                vendor.requests.append(
                    Seen("GET", headers.get("host", ""), parts.path, query, headers, accepted)
                )
                status = 200 if accepted else (401 if right_path else 404)
                body = json.dumps({"ok": accepted, "fake": True}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return  # quiet: the test reads vendor.requests

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> FakeVendor:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Listener:
    """An attacker's loopback listener for tests: accepts any connection on 127.0.0.1,
    records every byte of what it is sent (``received``), and answers HTTP 401. A test
    points an integration's URL field at ``url`` and asserts nothing carrying a key came."""

    def __init__(self) -> None:
        import socket

        self.received: list[bytes] = []
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._sock.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def got(self, needle: str) -> bool:
        """Whether any connection carried ``needle`` (raw, or URL-quoted)."""
        quoted = urllib.parse.quote(needle, safe="").encode()
        return any(needle.encode() in r or quoted in r for r in self.received)

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1.0)
                data = b""
                try:
                    while b"\r\n\r\n" not in data and len(data) < 65536:
                        chunk = conn.recv(4096)
                        if not chunk:
                            break
                        data += chunk
                    self.received.append(data)
                    conn.sendall(
                        b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n"
                        b"Connection: close\r\n\r\n"
                    )
                except OSError:
                    self.received.append(data)

    def __enter__(self) -> Listener:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sock.close()
