"""Pages a test serves itself: a dict of path -> HTML on 127.0.0.1, plus ``/slow?ms=N`` (a
response that takes N milliseconds) for pages that keep the network busy."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


def send_html(handler: BaseHTTPRequestHandler, body: str, status: int = 200) -> None:
    """One uncached HTML answer of a test server's handler."""
    data = body.encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "text/html; charset=utf-8")
    handler.send_header("Content-Length", str(len(data)))
    handler.send_header("Cache-Control", "no-store")
    handler.end_headers()
    handler.wfile.write(data)


@contextlib.contextmanager
def serve_pages(pages: Mapping[str, str]) -> Iterator[str]:
    """Serve ``pages`` (a path without its query -> the page's HTML) until the block ends;
    yields the base URL. Any other path is a 404."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            if url.path == "/slow":
                time.sleep(int(parse_qs(url.query).get("ms", ["1000"])[0]) / 1000)
                body, status = "slow", 200
            elif url.path in pages:
                body, status = pages[url.path], 200
            else:
                body, status = "<!doctype html><title>404</title>", 404
            send_html(self, body, status)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
