"""Session identity: the rule a session id follows, and which session a caller is.

A session's identity is what the caller names: ``--session ID`` (origin ``flag``), else
``BAY_SESSION`` (``env``), else the calling shell's session, ``shell-<sid>`` (``shell``). A
program using the Python API acts the same way with origin ``api``; the MCP server, one agent
conversation, falls back to ``mcp-<pid>`` instead of the shell. On a **session socket**
(``BAY_SOCKET``) the keeper's hello names the one session the socket is bound to
(:func:`fixed_by`): it takes the place of the fallback (origin ``socket``), never of a session
the caller named — that one is sent as named, and the keeper refuses it ``session_fixed`` when
it is another (the keeper is the boundary, not this module). The thin client resolves it here
(:func:`resolve`) and the keeper checks what arrives in a frame here (:func:`from_row`), so
both read one rule.

Standard library only and cheap to import: the CLI's hot path imports it.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, Literal

    Origin = Literal["flag", "env", "shell", "api", "socket"]

#: What a session id (and a group name) is, as the refusals say it.
RULE = "1-128 of A-Z a-z 0-9 . _ : @ -"
_ID = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:@-"

#: Where an identity came from: ``--session``, ``BAY_SESSION``, the calling shell's session,
#: a program using the Python API, the session socket's hello.
ORIGINS = ("flag", "env", "shell", "api", "socket")


def is_session_id(value: object) -> bool:
    """``value`` is a session id (or a group name): 1-128 characters of :data:`RULE`, the
    whole string (a trailing newline is not one of them)."""
    # Stripping every allowed character leaves nothing: all are allowed (``re``, with ``enum``,
    # costs the thin client ~5 ms to import).
    return isinstance(value, str) and 0 < len(value) <= 128 and not value.strip(_ID)


def shell_session(sid: int | None = None) -> str:
    """The calling shell's session: every command of one terminal shares it (``sid``: the
    caller's ``getsid(0)``, when the caller is another process: the CLI's warm road)."""
    return f"shell-{os.getsid(0) if sid is None else sid}"


def shell_of(session_id: str) -> int | None:
    """The shell session (``getsid``) a ``shell-<sid>`` identity names; None for any other."""
    prefix, _, number = session_id.partition("-")
    return int(number) if prefix == "shell" and number.isdigit() else None


def named(
    explicit: str | None = None, env: Mapping[str, str] | None = None
) -> tuple[str, str] | None:
    """The session the caller names, as ``(id, origin)``: ``explicit`` (``flag``), else
    ``BAY_SESSION`` (``env``; of ``env``, else of this process); None when it names none
    (an empty value names none)."""
    if explicit:
        return explicit, "flag"
    value = (os.environ if env is None else env).get("BAY_SESSION", "")
    return (value, "env") if value else None


def fixed_by(hello: Mapping[str, object]) -> str | None:
    """The session a keeper's hello says this connection is bound to (``"channel":
    "session"``, ``"session": <id>``): a session socket's; None on the owner's channel (or
    from a keeper that predates channels)."""
    sid = hello.get("session")
    if hello.get("channel") == "session" and isinstance(sid, str) and is_session_id(sid):
        return sid
    return None


def pick(
    name: tuple[str, str] | None,
    *,
    fixed: str | None = None,
    fallback: str | None = None,
    origin: str | None = None,
) -> dict[str, str]:
    """A frame's ``session`` field from what the caller named (:func:`named`), else
    ``fixed`` (the session socket's session, origin ``socket``), else ``fallback`` or the
    calling shell's session (``shell``). ``origin``, when given, is the origin of a named or
    fallback id (``api``); a socket's session always says ``socket``."""
    if name is not None:
        sid, where = name
    elif fixed is not None:
        return {"id": fixed, "origin": "socket"}
    else:
        sid, where = fallback or shell_session(), "shell"
    return {"id": sid, "origin": origin or where}


def resolve(
    explicit: str | None = None,
    *,
    fallback: str | None = None,
    origin: str | None = None,
    fixed: str | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The calling session as a frame's ``session`` field: ``explicit`` (``flag``), else
    ``BAY_SESSION`` (``env``), else ``fixed`` (``socket``: the session a session socket's
    hello names), else ``fallback`` or the calling shell's session (``shell``). ``origin``,
    when given, is the origin of a named or fallback id (``api``). ``env``: the caller's
    environment when it is not this process's (the CLI's warm road)."""
    return pick(named(explicit, env), fixed=fixed, fallback=fallback, origin=origin)


def context(
    profile: str | None = None,
    session_flag: str | None = None,
    *,
    fixed: str | None = None,
    env: Mapping[str, str] | None = None,
    shell: str | None = None,
) -> dict[str, Any]:
    """The frame fields that say where a verb acts: ``--profile``/``BAY_PROFILE``,
    ``BAY_GROUP``, and the caller's own identity when it acts on another session (on a
    session socket, ``fixed``: the socket's session, unless ``BAY_SESSION`` names one).
    ``env`` and ``shell`` (its shell's session): the caller's, when it is another process
    (the CLI's warm road, :mod:`browserbay.keeper.argvroad`)."""
    env = os.environ if env is None else env
    extra: dict[str, Any] = {}
    handle = profile or env.get("BAY_PROFILE", "")
    if handle:
        extra["profile"] = handle
    group = env.get("BAY_GROUP", "")
    if group:
        extra["group"] = group
    if session_flag:
        extra["actor"] = resolve(fixed=fixed, env=env, fallback=shell)
    return extra


def from_row(row: object) -> tuple[str, Origin] | None:
    """A frame's ``session`` (or ``actor``) object as ``(id, origin)``; None when it has no
    valid id. An origin the keeper does not know is taken for ``api``."""
    if not isinstance(row, dict) or not is_session_id(row.get("id")):
        return None
    origin = row.get("origin", "api")
    return str(row["id"]), origin if origin in ORIGINS else "api"
