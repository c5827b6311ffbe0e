"""How an answer reads as text, for ``bay``, the MCP server and the Python API alike.

The footer names the profile a verb acted on and the session that asked, one line under every
answer (``bay`` prints it on stderr, the MCP server ends each result with it, the Python API
has it as :attr:`browserbay.api.Answer.footer`)::

    profile: work (bp-3f9a1c02) · chromium · default · 2 attached · session a7 (from BAY_SESSION)

A refusal reads ``refused [<code>]: <message>`` and, under it, ``way out: <what to run next>``.

Both read the frame's rows, so the thin client renders them without the Python API's
classes. Standard library only and cheap to import: the CLI's hot path imports it.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

#: Where a session's identity came from, as the footer says it (see browserbay.identity).
ORIGINS = {
    "env": "BAY_SESSION",
    "flag": "--session",
    "shell": "your shell's session",
    "api": "the API",
    "socket": "your session socket",
}


def footer(profile: Mapping[str, Any] | None, session: Mapping[str, Any]) -> str:
    """``profile: <label> (<id>) · <provider> · <how chosen> · <n> attached · session <id>
    (from <origin>)`` (``own isolated browser`` for an ephemeral profile); just the session
    part when the verb acted on no profile."""
    origin = ORIGINS.get(str(session.get("origin")), ORIGINS["api"])
    who = f"session {session.get('id')} (from {origin})"
    if not profile:
        return who
    if profile.get("ephemeral"):
        how = "own isolated browser"
    else:
        how = f"{profile.get('chosen')} · {profile.get('attached', 0)} attached"
    return (
        f"profile: {profile.get('label')} ({profile.get('id')}) · {profile.get('provider')} · "
        f"{how} · {who}"
    )


def refusal(frame: Mapping[str, Any], indent: str = "") -> str:
    """A refusal frame as text: ``refused [<code>]: <message>``, then ``way out: …`` on its
    own line (after ``indent``: ``bay`` sets it off by two spaces) when it has one."""
    text = f"refused [{frame.get('code')}]: {frame.get('message')}"
    way_out = frame.get("way_out")
    return f"{text}\n{indent}way out: {way_out}" if way_out else text
