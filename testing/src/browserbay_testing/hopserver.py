"""Loopback servers for the redirect attacks: ``/r302?to=URL`` (and 301, 303, 307, 308)
redirect, ``/page?html=...`` serves the given HTML (``?js=...``: the given script),
everything else a small page; each server
keeps its access log, so a test can prove that nothing arrived at an outside host."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, urlsplit


class HopServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, host: str = "127.0.0.1"):
        super().__init__((host, 0), _Handler)
        self.log: list[str] = []
        self.host = host
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def url(self, path: str = "/", host: str | None = None) -> str:
        return f"http://{host or self.host}:{self.port}{path}"


class _Handler(BaseHTTPRequestHandler):
    server: HopServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _handle(self) -> None:
        self.server.log.append(f"{self.command} {self.path}")
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        if parts.path[:2] == "/r" and parts.path[2:].isdigit():
            self.send_response(int(parts.path[2:]))
            self.send_header("Location", query["to"][0])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        script = query.get("js", [None])[0]
        body = script or query.get("html", ["<!doctype html><title>landed</title>landed"])[0]
        data = body.encode()
        self.send_response(200)
        kind = "text/javascript" if script is not None else "text/html; charset=utf-8"
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _handle


def hop(base: str, to: str, code: int = 302) -> str:
    """``base``'s redirect to ``to``."""
    return f"{base}/r{code}?to={quote(to, safe='')}"


def page(base: str, html: str) -> str:
    return f"{base}/page?html={quote(html, safe='')}"


def script(base: str, js: str) -> str:
    return f"{base}/script?js={quote(js, safe='')}"
