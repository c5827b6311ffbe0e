"""The parameter rules of the session-scoped CDP endpoint (the ``rule`` column of the census):
what a URL-bearing method may load, which files a file-taking method may hand to a page, and
the upload directory of a lease.

- ``url`` (``Page.navigate``, ``Target.createTarget``, ``Network.loadNetworkResource``,
  ``Fetch.continueRequest``; the redirect a ``Fetch.fulfillRequest``/``continueResponse``
  forges with a ``Location`` or ``Refresh`` header): the scheme rule of ``bay open``
  (:func:`browserbay.urls.check_scheme`: http, https, the exact about:blank),
  and never the browser's own DevTools port (``devtools_refused``: its ``/json/list`` names
  every tab's WebSocket URL), whatever host spelling reaches it.
- ``files`` (``DOM.setFileInputFiles``, ``Input.dispatchDragEvent``): every path is an
  existing regular file inside the lease's upload directory, symbolic links resolved, no
  ``..``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from browserbay.refusals import Refusal
from browserbay.urls import check_scheme

#: Default ports of the schemes whose URLs a browser reads as host:port (WHATWG "special").
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
_DROPPED = re.compile(r"[\t\n\r]")
_BLANKS = "".join(chr(c) for c in range(0x21))


def url_port(url: str) -> int | None:
    """The port a browser connects to for ``url`` (http/https/ws/wss), read as the URL
    standard reads a special URL: tabs and newlines dropped, leading and trailing blanks and
    controls stripped, ``\\`` as ``/``, any number of slashes after the scheme, userinfo
    skipped, leading zeros of the port ignored. None for another scheme or no host."""
    text = _DROPPED.sub("", url).strip(_BLANKS)
    scheme, colon, rest = text.partition(":")
    scheme = scheme.lower()
    if not colon or scheme not in DEFAULT_PORTS:
        return None
    rest = rest.replace("\\", "/").lstrip("/")
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0].rsplit("@", 1)[-1]
    if authority.startswith("["):
        _host, _, tail = authority.partition("]")
        port = tail[1:] if tail.startswith(":") else ""
    else:
        port = authority.rpartition(":")[2] if ":" in authority else ""
    if not port:
        return DEFAULT_PORTS[scheme]
    return int(port) if port.isdigit() else None


def check_url(method: str, url: object, devtools_ports: Iterable[int]) -> None:
    """Raise the refusal when a URL-bearing call would load what ``bay open`` never would,
    or the browser's own DevTools endpoint."""
    text = url if isinstance(url, str) else str(url)
    shown = text if len(text) <= 120 else text[:120] + "…"
    check_scheme(text, shown)
    port = url_port(text)
    if port is not None and port in set(devtools_ports):
        raise Refusal("devtools_refused", endpoint=f"port {port}", method=method)


#: What a relative redirect is resolved against (its scheme is the request's: http or https).
RELATIVE_BASE = "http://relative.invalid/"
_REFRESH_URL = re.compile(r"url\s*=\s*['\"]?([^'\"]*)", re.IGNORECASE)


def forged_redirects(params: dict[str, Any]) -> list[str]:
    """The URLs a ``Fetch.fulfillRequest``/``continueResponse`` would send the tab to: its
    ``Location`` headers and the URL of a ``Refresh`` header, plain or base64-encoded."""
    pairs: list[tuple[str, str]] = []
    for header in params.get("responseHeaders") or []:
        if isinstance(header, dict):
            pairs.append((str(header.get("name", "")), str(header.get("value", ""))))
    raw = params.get("binaryResponseHeaders")
    if isinstance(raw, str):
        try:
            text = base64.b64decode(raw).decode("utf-8", "replace")
        except (binascii.Error, ValueError):
            text = ""
        for line in text.split("\0"):
            name, _, value = line.partition(":")
            pairs.append((name, value.strip()))
    out: list[str] = []
    for name, value in pairs:
        key = name.strip().lower()
        if key == "location":
            out.append(value)
        elif key == "refresh":
            found = _REFRESH_URL.search(value)
            if found:
                out.append(found.group(1))
    return out


def check_redirects(method: str, params: dict[str, Any], devtools_ports: Iterable[int]) -> None:
    """A forged redirect passes the same rule as a URL (a relative one keeps the request's
    scheme; its port is judged both as written and resolved)."""
    ports = set(devtools_ports)
    for target in forged_redirects(params):
        check_url(method, urljoin(RELATIVE_BASE, target.strip()), ports)
        port = url_port(target)
        if port is not None and port in ports:
            check_url(method, target, ports)


def upload_dir_for(session_id: str, profile_id: str) -> Path:
    """The lease's upload directory (under the keeper's run dir; the ids never reach the
    path as such)."""
    from browserbay.paths import bay_paths

    key = hashlib.sha256(f"{session_id}\0{profile_id}".encode()).hexdigest()[:16]
    return bay_paths().runtime / "uploads" / key


def make_upload_dir(path: Path) -> None:
    """Create it 0700 (and its parent), refusing one somebody else owns. Blocks: a worker
    thread's."""
    from browserbay.paths import ensure_private

    ensure_private(path.parent)
    ensure_private(path)


def remove_upload_dir(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def _outside(method: str, upload: Path, why: str) -> Refusal:
    return Refusal(
        "method_refused",
        method=method,
        why=f"for that file ({why}): a page gets only files inside the session's upload "
        f"directory {upload}",
        fix=f"copy the file into {upload} (bay cdp-url names it as upload_dir), then pass "
        "its absolute path",
    )


def check_files(method: str, files: Any, upload: Path) -> None:
    """Every path an existing regular file under ``upload`` once links are resolved. Blocks
    (it reads the disk): a worker thread's."""
    if files is None:
        return
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise _outside(method, upload, "not a list of paths")
    root = os.path.realpath(upload)
    for given in files:
        if not os.path.isabs(given):
            raise _outside(method, upload, "a relative path")
        if ".." in Path(given).parts:
            raise _outside(method, upload, "a path with '..'")
        real = os.path.realpath(given)
        if os.path.commonpath([root, real]) != root or real == root:
            raise _outside(method, upload, "outside it, links resolved")
        if not os.path.isfile(real):
            raise _outside(method, upload, "not an existing regular file")


def files_of(method: str, params: dict[str, Any]) -> Any:
    """The paths a ``files`` call hands to the page."""
    if method == "Input.dispatchDragEvent":
        data = params.get("data")
        return data.get("files") if isinstance(data, dict) else None
    return params.get("files", [])
