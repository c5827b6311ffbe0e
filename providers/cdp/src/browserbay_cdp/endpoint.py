"""Where a ``cdp`` profile's browser answers: ``--cdp-url`` checked at ``bay new`` and resolved
to the browser's WebSocket URL at connect time. Standard library only (``urllib``); every
function here blocks, so the keeper calls them in a worker thread.

A ``--cdp-url`` is one of:

- ``http://host:port`` (``https``): the browser's DevTools HTTP endpoint; its
  ``/json/version`` names the WebSocket URL;
- ``ws://host:port/devtools/browser/<id>`` (``wss``): that WebSocket URL itself;
- ``auto``: the first local browser whose user-data-dir holds a live ``DevToolsActivePort``
  (the directories ``bay chrome`` makes, then Chrome's and Chromium's usual ones);
- an absolute path: that user-data-dir's ``DevToolsActivePort`` (a browser started with
  ``--remote-debugging-port=0`` writes its port there, so a restart on another port is found).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from browserbay.refusals import Refusal

PORT_FILE = "DevToolsActivePort"
PROBE_TIMEOUT = 3.0

START_HINT = (
    "start the browser with --remote-debugging-port=9222 and a --user-data-dir of its own "
    "(Chrome 136+ refuses debugging on its default one), or let bay chrome do it"
)


def chrome_root() -> Path:
    """Where ``bay chrome`` keeps the dedicated user-data-dirs it starts Chrome on."""
    from browserbay.paths import bay_paths

    return bay_paths().data / "chrome"


def usual_dirs(env: Mapping[str, str] | None = None) -> list[Path]:
    """User-data-dirs a local browser is usually started on (``auto`` looks in each)."""
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home())
    if sys.platform == "darwin":
        support = home / "Library" / "Application Support"
        names = ["Google/Chrome", "Google/Chrome Beta", "Chromium", "Microsoft Edge"]
        return [support / n for n in names]
    config = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    names = ["google-chrome", "google-chrome-beta", "chromium", "microsoft-edge"]
    return [config / n for n in names]


def read_port_file(directory: Path) -> tuple[int, str] | None:
    """``(port, /devtools/browser/<id>)`` from a user-data-dir's ``DevToolsActivePort``."""
    try:
        lines = (directory / PORT_FILE).read_text().split("\n")
        port = int(lines[0].strip())
    except (OSError, ValueError, IndexError):
        return None
    path = lines[1].strip() if len(lines) > 1 else ""
    return (port, path) if 0 < port < 65536 else None


def version(http_url: str, timeout: float = PROBE_TIMEOUT) -> dict[str, str]:
    """The browser's ``/json/version`` (raises OSError/ValueError when nothing answers)."""
    import urllib.request  # at the first probe, not with every keeper's plugins

    url = http_url.rstrip("/") + "/json/version"
    with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 - http(s) only
        data = json.loads(r.read(1 << 20))
    if not isinstance(data, dict) or not isinstance(data.get("webSocketDebuggerUrl"), str):
        raise ValueError(f"{url} answered no webSocketDebuggerUrl")
    return {str(k): str(v) for k, v in data.items()}


def ws_from_http(http_url: str, timeout: float = PROBE_TIMEOUT) -> str:
    """The WebSocket URL a DevTools HTTP endpoint names, on the host and port we reached it
    at (a browser behind a tunnel names its own loopback address)."""
    ws = version(http_url, timeout)["webSocketDebuggerUrl"]
    given, named = urlsplit(http_url), urlsplit(ws)
    scheme = "wss" if given.scheme == "https" else "ws"
    return urlunsplit((scheme, given.netloc, named.path, named.query, ""))


def from_dir(directory: Path, timeout: float = PROBE_TIMEOUT) -> str | None:
    """The WebSocket URL of a live browser on ``directory``, or None."""
    found = read_port_file(directory)
    if found is None:
        return None
    try:
        return ws_from_http(f"http://127.0.0.1:{found[0]}", timeout)
    except (OSError, ValueError):
        return None


def find_local(timeout: float = 1.0) -> Path | None:
    """The first user-data-dir with a live debugging port: ``bay chrome``'s, then the usual."""
    root = chrome_root()
    ours = sorted(root.iterdir()) if root.is_dir() else []
    for directory in [d for d in ours if d.is_dir()] + usual_dirs():
        if from_dir(directory, timeout) is not None:
            return directory
    return None


def _unreachable(what: str, why: str) -> Refusal:
    return Refusal(
        "backend_unavailable",
        provider="cdp",
        reason=f"no browser answers at {what} ({why})",
        fix=START_HINT,
    )


def check_options(options: Mapping[str, str]) -> dict[str, str]:
    """``bay new --provider cdp --cdp-url ...``: checked now (a browser must answer), stored
    as given; ``auto`` is pinned to the directory it found."""
    url = options.get("cdp_url", "").strip()
    if not url:
        raise Refusal(
            "usage",
            detail="a cdp profile needs --cdp-url (http://127.0.0.1:9222, a ws:// URL, a "
            "user-data-dir, or auto)",
            verb="new",
        )
    if url == "auto":
        found = find_local()
        if found is None:
            raise _unreachable(
                "auto",
                "no DevToolsActivePort with a live browser in bay chrome's or the usual "
                "user-data-dirs",
            )
        return {"cdp_url": "auto", "devtools_dir": str(found)}
    if url.startswith("/"):
        directory = Path(url)
        if from_dir(directory) is None:
            raise _unreachable(url, f"no live {PORT_FILE} in that directory")
        return {"cdp_url": url, "devtools_dir": url}
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https", "ws", "wss") or not parts.hostname:
        raise Refusal(
            "usage",
            detail=f"--cdp-url {url!r} is not http(s)://host:port, ws(s)://..., a directory or "
            "auto",
            verb="new",
        )
    if parts.scheme in ("http", "https"):
        try:
            ws_from_http(url)
        except (OSError, ValueError) as exc:
            raise _unreachable(url, str(exc) or type(exc).__name__) from None
    return {"cdp_url": url}


def resolve(options: Mapping[str, str]) -> str:
    """The WebSocket URL to connect to now (a restarted browser may be on another port)."""
    directory = options.get("devtools_dir")
    if directory:
        ws = from_dir(Path(directory))
        if ws is None:
            raise _unreachable(directory, f"its {PORT_FILE} names no live port")
        return ws
    url = options.get("cdp_url", "")
    if not url:
        raise Refusal(
            "backend_unavailable",
            provider="cdp",
            reason="this profile has no cdp_url",
            fix="bay forget <it>, then bay new <label> --provider cdp --cdp-url URL",
        )
    if url.startswith(("http://", "https://")):
        try:
            return ws_from_http(url)
        except (OSError, ValueError) as exc:
            raise _unreachable(url, str(exc) or type(exc).__name__) from None
    return url
