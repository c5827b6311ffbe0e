"""Serve the demo site: ``python -m browserbay.demo.server [--port N]`` prints its URL.

Pages: ``/`` (index), ``/form.html`` (a sign-up form whose result page echoes what was
sent), ``/list.html?n=300`` (a long list), ``/popup.html`` (opens a tab), ``/shop.html`` (a
"Buy now" button for approval gates), ``/cookie`` (sets and shows a cookie), ``/status/403``
(answers with that status), ``/live.html`` (an animation, buttons at known places and a
form, for the live view), ``/markup-title.html`` (a title with markup in it),
``/escapes.html`` (title, text and a button holding terminal escape sequences),
``/account`` (the account page when logged in, else a script sends you to ``/login.html``;
``/do-login`` logs in).
"""

from __future__ import annotations

import contextlib
import html
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

SITE = Path(__file__).with_name("site")


class DemoHandler(SimpleHTTPRequestHandler):
    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, directory=str(SITE), **kwargs)  # type: ignore[arg-type]

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(self, body: str, status: int = 200, headers: dict[str, str] | None = None) -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        if url.path == "/list.html":
            n = min(int(query.get("n", ["300"])[0]), 5000)
            items = "".join(
                f'<li><a href="/item/{i}">Item {i}</a> <button>Add {i}</button></li>'
                for i in range(n)
            )
            self._send(
                f"<!doctype html><title>List of {n}</title><h1>{n} items</h1><ul>{items}</ul>"
            )
            return
        if url.path == "/result":
            fields = "".join(
                f"<dt>{html.escape(k)}</dt>"
                f"<dd id='v-{html.escape(k)}'>{html.escape(', '.join(v))}</dd>"
                for k, v in sorted(query.items())
            )
            self._send(f"<!doctype html><title>Signed up</title><h1>Thanks!</h1><dl>{fields}</dl>")
            return
        if url.path == "/cookie":
            value = query.get("set", [None])[0]
            headers = {"Set-Cookie": f"demo={value}; Path=/; Max-Age=86400"} if value else {}
            seen = html.escape(self.headers.get("Cookie", "") or "(none)")
            self._send(
                f"<!doctype html><title>cookie</title><p id=seen>{seen}</p>", headers=headers
            )
            return
        if url.path.startswith("/status/"):
            code = int(url.path.rsplit("/", 1)[-1])
            self._send(f"<!doctype html><title>Status {code}</title><p>{code}</p>", status=code)
            return
        if url.path == "/embed":
            # A page that loads a sub-resource from elsewhere (allowed-domains tests).
            src = html.escape(query.get("src", [""])[0], quote=True)
            self._send(f"<!doctype html><title>embed</title><img id=img src='{src}'>")
            return
        if url.path.startswith("/item/"):
            item = html.escape(url.path.rsplit("/", 1)[-1])
            self._send(f"<!doctype html><title>Item {item}</title><h1>Item {item}</h1>")
            return
        if url.path == "/account":
            # Logged in: the account page. Logged out: a script sends you to the login page
            # a moment later (login-check waits for the URL to settle).
            if "demo_login=ok" in (self.headers.get("Cookie") or ""):
                self._send("<!doctype html><title>Your account</title><h1>Welcome back</h1>")
            else:
                self._send(
                    "<!doctype html><title>Checking…</title><p>checking your login…</p>"
                    "<script>setTimeout(() => location.replace('/login.html?from=account'),"
                    " 300)</script>"
                )
            return
        if url.path == "/do-login":
            self._send(
                "<!doctype html><title>Logged in</title>"
                "<script>location.replace('/account')</script>",
                headers={"Set-Cookie": "demo_login=ok; Path=/; Max-Age=3600"},
            )
            return
        if url.path == "/slow":
            import time

            time.sleep(float(query.get("s", ["2"])[0]))
            self._send("<!doctype html><title>slow</title><p>done</p>")
            return
        super().do_GET()


def serve(port: int = 0) -> tuple[ThreadingHTTPServer, str]:
    """Start the site in a daemon thread; returns the server and its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", port), DemoHandler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def main() -> None:
    port = int(sys.argv[sys.argv.index("--port") + 1]) if "--port" in sys.argv else 0
    server = ThreadingHTTPServer(("127.0.0.1", port), DemoHandler)
    print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()


if __name__ == "__main__":
    main()
