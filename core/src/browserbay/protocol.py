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

from browserbay._version import PROTOCOL, __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    import json
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
#: The deadline of a request that names none (``--timeout``), in seconds.
DEFAULT_TIMEOUT = 30.0
#: The largest ``--timeout`` a command takes (seconds); more, NaN or infinity is ``usage``.
MAX_TIMEOUT = 3600.0
#: The caller's environment variables a CLI request is made of (``--profile``'s and
#: ``--session``'s defaults, the group, the footer's form): what ``bay``'s warm road sends
#: with its argv (``{"id", "argv", "facts": {"env", "sid"}}``, see
#: :mod:`browserbay.keeper.argvroad`), with its shell's session (``getsid``).
ARGV_FACTS = ("BAY_SESSION", "BAY_PROFILE", "BAY_GROUP", "BAY_FOOTER")


def hello(role: str) -> dict[str, Any]:
    return {"hello": {"role": role, "version": __version__, "protocol": PROTOCOL}}


def compatible(other: dict[str, Any]) -> bool:
    return other.get("version") == __version__ and other.get("protocol") == PROTOCOL


_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}


class _Decoding:
    """What :func:`json.loads` configures its C scanner with (``json.JSONDecoder()``'s
    settings), for :func:`loads`."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    array_hook = None  # read from Python 3.15 on
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__


def _not_serializable(o: object) -> object:
    raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")


try:  # CPython's own accelerator, which ``json`` drives: the same scanner and encoder
    from _json import encode_basestring, make_encoder, make_scanner
except ImportError:  # pragma: no cover - an interpreter without it: the json module
    _scan = _wire = _text = None
else:
    # typeshed types its context as the scanner itself ("needs the attrs above (ducktype)")
    _scan = make_scanner(_Decoding())  # type: ignore[arg-type]
    #: ``json.dumps(value, ensure_ascii=False, separators=(",", ":"))``
    _wire = make_encoder(
        {}, _not_serializable, encode_basestring, None, ":", ",", False, False, True
    )
    #: ``json.dumps(value, ensure_ascii=False)``
    _text = make_encoder(
        {}, _not_serializable, encode_basestring, None, ": ", ", ", False, False, True
    )


def encode(frame: dict[str, Any]) -> bytes:
    """One frame as a line: compact JSON, UTF-8, ending in a newline."""
    if _wire is None:  # pragma: no cover
        import json

        return json.dumps(frame, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
    return "".join(_wire(frame, 0)).encode() + b"\n"


def dumps(value: object) -> str:
    """``json.dumps(value, ensure_ascii=False)``, to the character: what ``bay --json``
    prints."""
    if _text is None:  # pragma: no cover
        import json

        return json.dumps(value, ensure_ascii=False)
    return "".join(_text(value, 0))


def loads(text: str) -> Any:
    """``json.loads(text)``: the same value, or the same ``json.JSONDecodeError``.

    The thin client's hot path calls CPython's C scanner itself (:mod:`_json`, which
    :mod:`json` wraps): ``import json`` costs ~6 ms of a ~12 ms command, as it loads ``re``
    and, through it, ``enum``. ``json`` is imported only to say what is wrong with a text
    the scanner does not take whole (or to read one with whitespace around it)."""
    if _scan is not None:
        try:
            value, end = _scan(text, 0)
        except (StopIteration, ValueError):
            pass
        else:
            if end == len(text):
                return value
    import json

    return json.loads(text)


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
        value = _slow_decoder().decode(text) if interruptible else loads(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except ValueError as exc:
        import json  # loaded already: loads() reads a text its scanner refused with json

        if isinstance(exc, json.JSONDecodeError):
            raise ValueError(f"not JSON: {exc.msg} at column {exc.colno}") from None
        raise
    if not isinstance(value, dict):
        raise ValueError("a frame must be a JSON object")
    if _depth(value) > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    if b"\\u" in line and not _unicode(value):
        # "\ud800" is valid JSON but no Unicode text: it could be neither stored nor answered.
        raise ValueError("a string holds a lone surrogate escape (\\ud800-\\udfff)")
    return value


def _slow_decoder() -> json.JSONDecoder:
    import json.scanner  # the keeper's, for a big frame: off the client's path

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
