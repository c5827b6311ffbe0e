"""The keeper socket protocol: NDJSON frames over a unix socket. Standard library only.

A connection opens with a hello frame from the client (``{"hello": {...}}``) that the keeper
answers with its own; then each request frame gets exactly one answer frame with the same
``id``. A client may pipeline its hello and first request in one write.

Request: ``{"id", "verb", "args", "session": {"id", "origin"}, "timeout"}``
Answer:  ``{"id", "ok": true, "verb", "session", "profile", "data"}`` or
         ``{"id", "ok": false, "code", "message", "way_out", "data"}``
Control: ``{"id", "op": "shutdown"}`` asks the keeper to exit gracefully.
"""

from __future__ import annotations

import json

from browserbay._version import PROTOCOL, __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Largest frame the keeper reads. A longer line gets a ``too_large`` error frame.
MAX_FRAME = 4 * 1024 * 1024
#: Largest single argument (a URL, a text to type, a script). Refused before sending.
MAX_ARG = 1024 * 1024
#: Largest answer a client accepts (``get html`` of a big page).
MAX_ANSWER = 64 * 1024 * 1024
#: Deepest JSON nesting accepted in a request.
MAX_DEPTH = 16
#: A keeper's first argument when the client that spawns it has a page verb to send: the
#: keeper starts the browser's chain (Playwright and its driver) before its own modules.
KEEPER_WARM = "--warm"


def hello(role: str) -> dict[str, Any]:
    return {"hello": {"role": role, "version": __version__, "protocol": PROTOCOL}}


def compatible(other: dict[str, Any]) -> bool:
    return other.get("version") == __version__ and other.get("protocol") == PROTOCOL


def encode(frame: dict[str, Any]) -> bytes:
    return json.dumps(frame, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def decode(line: bytes, *, interruptible: bool = False) -> dict[str, Any]:
    """Parse one frame; raises ValueError with a reason an agent can read. ``interruptible``:
    with the pure-Python scanner, which gives up the interpreter lock between its steps
    (for a big frame parsed in a worker thread; the C scanner holds it for the whole
    parse, stalling every other thread — the keeper's event loop too)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 at byte {exc.start}") from None
    try:
        value = _slow_decoder().decode(text) if interruptible else json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc.msg} at column {exc.colno}") from None
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if not isinstance(value, dict):
        raise ValueError("a frame must be a JSON object")
    if _depth(value) > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    if b"\\u" in line and not _unicode(value):
        # "\ud800" is valid JSON but no Unicode text: it could be neither stored nor answered.
        raise ValueError("a string holds a lone surrogate escape (\\ud800-\\udfff)")
    return value


def _slow_decoder() -> json.JSONDecoder:
    import json.scanner

    decoder = json.JSONDecoder()
    decoder.scan_once = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
    return decoder


def _unicode(value: object) -> bool:
    """Every string (keys too) is Unicode text: no lone surrogates from ``\\u`` escapes."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, dict):
        return all(_unicode(k) and _unicode(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_unicode(v) for v in value)
    return True


def _depth(value: object, level: int = 0) -> int:
    if level > MAX_DEPTH:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level
