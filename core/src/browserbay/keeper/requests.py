"""Checking a request frame: the verb and its arguments against the verb table, the session,
the timeout, and the frame's ``profile``/``group``/``actor``."""

from __future__ import annotations

import math
from typing import Any

from browserbay import identity, protocol, verbs
from browserbay.model import SessionRef
from browserbay.refusals import Refusal

#: The largest number an argument may be (JSON's safe integers; SQLite's are 64-bit).
MAX_NUMBER = 2**53


def _context(
    frame: dict[str, Any], ref: SessionRef
) -> tuple[str | None, str | None, SessionRef | None]:
    """The frame's ``profile`` handle, ``group`` and ``actor`` (who asks, when it acts on
    another session), checked."""
    handle = frame.get("profile")
    if handle is not None and (not isinstance(handle, str) or not 0 < len(handle) <= 256):
        raise Refusal("bad_frame", reason="profile must be a handle of 1-256 characters")
    group = frame.get("group")
    if group is not None and not identity.is_session_id(group):
        raise Refusal("bad_frame", reason=f"group is {identity.RULE}")
    actor = identity.from_row(frame.get("actor"))
    actor_ref = None if actor is None else SessionRef(actor[0], "flag")
    return handle, group, actor_ref


# -- request validation -------------------------------------------------------------------


def _validate(
    frame: dict[str, Any], table: dict[str, verbs.Verb] | None = None
) -> tuple[verbs.Verb, dict[str, Any], SessionRef, float]:
    table = verbs.BY_NAME if table is None else table
    name = frame.get("verb")
    if not isinstance(name, str) or name not in table:
        raise Refusal("bad_frame", reason=f"unknown verb {name!r}")
    verb = table[name]
    if verb.scope == verbs.LOCAL:
        raise Refusal("bad_frame", reason=f"'{name}' runs in the client, not the keeper")
    args = frame.get("args", {})
    if not isinstance(args, dict):
        raise Refusal("bad_frame", reason="args must be an object")
    known = {a.name: a for a in verb.args}
    clean: dict[str, Any] = {}
    for key, value in args.items():
        spec = known.get(key)
        if spec is None:
            raise Refusal("bad_frame", reason=f"'{name}' takes no argument {key!r}")
        clean[key] = _check_arg(name, spec, value)
    for spec in verb.args:
        if spec.kind in ("pos", "rest") and spec.name not in clean:
            raise Refusal("usage", detail=f"'{name}' needs <{spec.name}>", verb=name)
    session = frame.get("session")
    if not isinstance(session, dict) or not isinstance(session.get("id"), str):
        raise Refusal("bad_frame", reason="session must be an object with an id")
    ref = identity.from_row(session)
    if ref is None:
        raise Refusal("bad_frame", reason=f"a session id is {identity.RULE}")
    sid, origin = ref
    timeout = frame.get("timeout", verbs.DEFAULT_TIMEOUT)
    if (
        not isinstance(timeout, (int, float))
        or isinstance(timeout, bool)
        or not 0 < timeout <= 3600
    ):
        raise Refusal("bad_frame", reason="timeout must be a number of seconds in (0, 3600]")
    return verb, clean, SessionRef(sid, origin), float(timeout)


def _check_arg(verb: str, spec: verbs.Arg, value: Any) -> Any:
    if spec.kind == "flag":
        if not isinstance(value, bool):
            raise Refusal("bad_frame", reason=f"{spec.name} must be true or false")
        return value
    if spec.bare is not None and value is True:
        return spec.bare  # a flag that became an option: an older client sends it as one
    listed = spec.kind in ("rest", "tail", "many")
    values = value if listed else [value]
    if listed and (not isinstance(value, list) or not value):
        raise Refusal("bad_frame", reason=f"{spec.name} must be a non-empty list")
    for v in values:
        if spec.type == "int":
            if not isinstance(v, int) or isinstance(v, bool) or abs(v) > MAX_NUMBER:
                raise Refusal(
                    "usage", detail=f"{spec.name} must be a whole number (|n| <= 2^53)", verb=verb
                )
        elif spec.type == "float":
            if (
                not isinstance(v, (int, float))
                or isinstance(v, bool)
                or not math.isfinite(v)
                or abs(v) > MAX_NUMBER
            ):
                raise Refusal(
                    "usage", detail=f"{spec.name} must be a finite number (|n| <= 2^53)", verb=verb
                )
        elif not isinstance(v, str):
            raise Refusal("bad_frame", reason=f"{spec.name} must be a string")
        elif len(v.encode("utf-8", "surrogatepass")) > protocol.MAX_ARG:
            raise Refusal(
                "too_large",
                what=f"argument {spec.name}",
                size=len(v.encode("utf-8", "surrogatepass")),
                limit=protocol.MAX_ARG,
                fix="pass a shorter value (put large data in a file the page fetches)",
            )
        if spec.choices and v not in spec.choices:
            raise Refusal(
                "usage", detail=f"{spec.name} must be one of {', '.join(spec.choices)}", verb=verb
            )
    return value


def _redact(verb: verbs.Verb, args: dict[str, Any]) -> dict[str, Any]:
    """What hooks and the audit may see: typed text becomes its length."""
    return {k: ({"chars": len(str(v))} if k in verb.secret_args else v) for k, v in args.items()}
