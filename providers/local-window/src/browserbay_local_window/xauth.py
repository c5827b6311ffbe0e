"""The Xauthority cookie of the display we own.

Our Xvfb runs with ``-auth <file>``: it then accepts only clients that present the file's
MIT-MAGIC-COOKIE-1 (16 random bytes). The file is written here, in the Xauthority binary
format (no ``xauth`` program needed), mode 0600 in the display's private runtime directory:

    family (u16 BE) · address (u16 length + bytes) · display number (u16 length + bytes)
    · auth name (u16 length + bytes) · auth data (u16 length + bytes)

Two entries carry the one cookie: ``FamilyLocal`` with this host's name (what python-xlib
and libXau look up for a unix-socket display) and ``FamilyWild`` (what libXau also accepts,
whatever the host name). The X server reads every entry's cookie at start and ignores the
address and the number, so the file is written before the display number is known and again
once it is.

Applications, the walker and every other child get ``XAUTHORITY=<file>``. The keeper's own
python-xlib connections get the cookie directly (:func:`remember`): python-xlib reads only
``$XAUTHORITY`` of the keeper's process, which must stay the user's (their desktop's).
"""

from __future__ import annotations

import os
import secrets
import socket
import struct
import threading
from pathlib import Path
from typing import Any

FAMILY_LOCAL = 256
FAMILY_WILD = 65535
AUTH_NAME = b"MIT-MAGIC-COOKIE-1"

_COOKIES: dict[str, bytes] = {}
_LOCK = threading.Lock()
_INSTALLED: list[Any] = []


def new_cookie() -> bytes:
    return secrets.token_bytes(16)


def _field(value: bytes) -> bytes:
    return struct.pack(">H", len(value)) + value


def entry(family: int, address: bytes, number: bytes, data: bytes) -> bytes:
    return struct.pack(">H", family) + b"".join(
        _field(v) for v in (address, number, AUTH_NAME, data)
    )


def write(path: Path, cookie: bytes, number: str = "") -> None:
    """Write the file (atomically, mode 0600) with the cookie for display ``number``."""
    num = number.lstrip(":").split(".")[0].encode()
    host = socket.gethostname().encode()
    body = entry(FAMILY_LOCAL, host, num, cookie) + entry(FAMILY_WILD, b"", num, cookie)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(body)
    os.replace(tmp, path)


def read(path: Path) -> list[tuple[int, bytes, bytes, bytes, bytes]]:
    """The file's entries: (family, address, number, name, data)."""
    raw = path.read_bytes()
    out = []
    at = 0
    while at < len(raw):
        (family,) = struct.unpack_from(">H", raw, at)
        at += 2
        parts = []
        for _ in range(4):
            (length,) = struct.unpack_from(">H", raw, at)
            parts.append(raw[at + 2 : at + 2 + length])
            at += 2 + length
        out.append((family, parts[0], parts[1], parts[2], parts[3]))
    return out


def remember(display: str, cookie: bytes) -> None:
    """Our python-xlib connections to ``display`` present ``cookie``."""
    _install()
    with _LOCK:
        _COOKIES[display] = cookie


def forget(display: str) -> None:
    with _LOCK:
        _COOKIES.pop(display, None)


def _install() -> None:
    """Wrap python-xlib's cookie lookup once: a display of ours answers with its cookie,
    any other display (the user's desktop) is looked up as python-xlib always does."""
    with _LOCK:
        if _INSTALLED:
            return
        from Xlib.support import connect

        original = connect.get_auth

        def get_auth(
            sock: socket.socket, dname: object, protocol: Any, host: object, dno: int
        ) -> tuple[bytes, bytes]:
            with _LOCK:
                cookie = _COOKIES.get(str(dname))
            if cookie is not None:
                return AUTH_NAME, cookie
            return original(sock, dname, protocol, host, dno)

        connect.get_auth = get_auth
        _INSTALLED.append(original)
