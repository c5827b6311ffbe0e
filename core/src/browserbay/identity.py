"""Session identity: the rule a session id follows, and which session a caller is.

A session's identity is self-declared (until session sockets): ``--session ID`` (origin
``flag``), else ``BAY_SESSION`` (``env``), else the calling shell's session, ``shell-<sid>``
(``shell``). A program using the Python API acts the same way with origin ``api``; the MCP
server, one agent conversation, falls back to ``mcp-<pid>`` instead of the shell. The thin
client resolves it here (:func:`resolve`) and the keeper checks what arrives in a frame
here (:func:`from_row`), so both read one rule.

Standard library only and cheap to import: the CLI's hot path imports it.
"""

from __future__ import annotations

import os
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    Origin = Literal["flag", "env", "shell", "api"]

#: What a session id (and a group name) is, as the refusals say it.
RULE = "1-128 of A-Z a-z 0-9 . _ : @ -"
_ID = re.compile(r"[A-Za-z0-9._:@-]{1,128}")

#: Where an identity came from: ``--session``, ``BAY_SESSION``, the calling shell's session,
#: a program using the Python API.
ORIGINS = ("flag", "env", "shell", "api")


def is_session_id(value: object) -> bool:
    """``value`` is a session id (or a group name): 1-128 characters of :data:`RULE`, the
    whole string (a trailing newline is not one of them)."""
    return isinstance(value, str) and _ID.fullmatch(value) is not None


def shell_session() -> str:
    """The calling shell's session: every command of one terminal shares it."""
    return f"shell-{os.getsid(0)}"


def shell_of(session_id: str) -> int | None:
    """The shell session (``getsid``) a ``shell-<sid>`` identity names; None for any other."""
    prefix, _, number = session_id.partition("-")
    return int(number) if prefix == "shell" and number.isdigit() else None


def resolve(
    explicit: str | None = None, *, fallback: str | None = None, origin: str | None = None
) -> dict[str, str]:
    """The calling session as a frame's ``session`` field: ``explicit`` (``flag``), else
    ``BAY_SESSION`` (``env``), else ``fallback`` or the calling shell's session (``shell``).
    ``origin``, when given, is the origin whichever source the id came from (``api``)."""
    if explicit:
        sid, where = explicit, "flag"
    elif os.environ.get("BAY_SESSION"):
        sid, where = os.environ["BAY_SESSION"], "env"
    else:
        sid, where = fallback or shell_session(), "shell"
    return {"id": sid, "origin": origin or where}


def from_row(row: object) -> tuple[str, Origin] | None:
    """A frame's ``session`` (or ``actor``) object as ``(id, origin)``; None when it has no
    valid id. An origin the keeper does not know is taken for ``api``."""
    if not isinstance(row, dict) or not is_session_id(row.get("id")):
        return None
    origin = row.get("origin", "api")
    return str(row["id"]), origin if origin in ORIGINS else "api"
