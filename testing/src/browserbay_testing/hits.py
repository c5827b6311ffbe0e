"""A site that counts the navigations it receives: the observable side effect of an action,
counted where it lands, not taken from the keeper's word (the trigger tests and the
``triggers`` campaign count actions done twice with it).

``GET /hit/<id>`` counts one hit of ``id``, runs the hook set for ``id`` (kill a keeper,
hold the answer back…) in the server's thread before it answers, then redirects to
``/landed/<id>`` — so a tab restored later at its last URL loads ``/landed/…`` and is not
counted again. ``GET /landed/<id>`` is a page titled ``id``.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from browserbay_testing.pages import send_html


class HitSite:
    def __init__(self) -> None:
        self.hits: collections.Counter[str] = collections.Counter()
        self.order: list[str] = []
        """Every hit's id, in the order they arrived."""
        self.landed: collections.Counter[str] = collections.Counter()
        self.on_hit: dict[str, Callable[[], None]] = {}
        """id -> what to do when it is hit, before the answer (once)."""
        self.base = ""
        self._lock = threading.Lock()

    def url(self, hit_id: str) -> str:
        return f"{self.base}/hit/{hit_id}"

    def _hit(self, hit_id: str) -> None:
        with self._lock:
            self.hits[hit_id] += 1
            self.order.append(hit_id)
            hook = self.on_hit.pop(hit_id, None)
        if hook is not None:
            hook()

    @contextmanager
    def serve(self) -> Iterator[HitSite]:
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                parts = self.path.split("?", 1)[0].strip("/").split("/")
                if len(parts) == 2 and parts[0] == "hit":
                    site._hit(parts[1])
                    self.send_response(302)
                    self.send_header("Location", f"/landed/{parts[1]}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if len(parts) == 2 and parts[0] == "landed":
                    with site._lock:
                        site.landed[parts[1]] += 1
                    body, status = f"<!doctype html><title>{parts[1]}</title>landed", 200
                else:
                    body, status = "<!doctype html><title>hits</title>", 200
                send_html(self, body, status)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{server.server_address[1]}"
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()
