"""How an answer reads as text, for ``bay``, the MCP server and the Python API alike.

An answer is its value, then — when there is one — a ``notice:`` line (said once, in full) and
a ``hint:`` line, then the footer. The footer says only what an agent could get wrong, in at
most :data:`FOOTER_MAX` characters: the profile the verb acted on when the session has two or
more attached (so a bare verb could have meant another) or when it is not the one the
session's previous answer acted on (its first answer counts from its own isolated browser)::

    profile: work (2 attached)
    profile: work (changed)

or when its browser runs on another keeper of the fleet (the verb was forwarded there)::

    profile: work · on host-a

and nothing at all otherwise (a session on its own isolated browser never reads one). Every
answer carried the whole line before (~100 characters, 39 % of what an agent read on MiniWoB
tasks); ``--json`` and the Python API still carry every field, and ``BAY_FOOTER=full`` makes
``bay`` print the whole line (:func:`full_footer`) for a human who wants it::

    profile: work (bp-3f9a1c02) · chromium · default · 2 attached · session a7 (from BAY_SESSION)

A refusal reads ``refused [<code>]: <message>`` and, under it, ``way out: <what to run next>``.

Both read the frame's rows, so the thin client renders them without the Python API's
classes. Standard library only and cheap to import: the CLI's hot path imports it.
"""

from __future__ import annotations

from browserbay import protocol
from browserbay.refusals import EXIT_OK, exit_code, json_safe, printable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    #: Cuts a text longer than :data:`MAX_OUTPUT` for ``verb``: (the text shown, what was cut).
    Cut = Callable[[str, str], tuple[str, dict[str, Any] | None]]

#: Output longer than this is cut; the full text goes to a file the marker names.
MAX_OUTPUT = 50_000

#: Where a session's identity came from, as the full footer says it (see browserbay.identity).
ORIGINS = {
    "env": "BAY_SESSION",
    "flag": "--session",
    "shell": "your shell's session",
    "api": "the API",
    "socket": "your session socket",
}

#: The most characters the footer takes (:func:`footer`); a long label is clipped to fit.
FOOTER_MAX = 40


def footer(profile: Mapping[str, Any] | None) -> str:
    """``profile: <label> (<n> attached)`` when the session chose among ``n`` ≥ 2 attached
    profiles, ``(changed)`` when the profile is another than the previous answer's,
    ``(changed, <n> attached)`` when both, then `` · on <host>`` when its browser runs on
    another keeper of the fleet (always said); ``""`` when none of these (or the verb acted on
    no profile). At most :data:`FOOTER_MAX` characters (the label is clipped first)."""
    if not profile:
        return ""
    among = int(profile.get("among") or 0)
    why = [*(["changed"] if profile.get("changed") else []), *([f"{among} attached"] * (among > 1))]
    host = str(profile.get("host") or "")[:20]
    if not why and not host:
        return ""
    tail = (f" ({', '.join(why)})" if why else "") + (f" · on {host}" if host else "")
    room = FOOTER_MAX - len("profile: ") - len(tail)
    label = str(profile.get("label") or profile.get("id") or "")
    if len(label) > room:
        label = label[: room - 1] + "…"
    return f"profile: {label}{tail}"


def full_footer(profile: Mapping[str, Any] | None, session: Mapping[str, Any]) -> str:
    """``profile: <label> (<id>) · <provider> · <how chosen> · <n> attached · session <id>
    (from <origin>)`` (``own isolated browser`` for an ephemeral profile; ``<n> attached``:
    how many sessions have the profile attached); just the session part when the verb acted
    on no profile. What ``BAY_FOOTER=full`` prints."""
    origin = ORIGINS.get(str(session.get("origin")), ORIGINS["api"])
    who = f"session {session.get('id')} (from {origin})"
    if not profile:
        return who
    if profile.get("ephemeral"):
        how = "own isolated browser"
    else:
        how = f"{profile.get('chosen')} · {profile.get('attached', 0)} attached"
    where = f" · on {profile['host']}" if profile.get("host") else ""
    return (
        f"profile: {profile.get('label')} ({profile.get('id')}) · {profile.get('provider')} · "
        f"{how}{where} · {who}"
    )


def notes(frame: Mapping[str, Any]) -> list[str]:
    """The lines said under a successful answer's value, footer excluded: its ``notice:``
    (in full) and its ``hint:`` (a tier hint), each when there is one."""
    data = frame.get("data")
    hint = data.get("hint") if isinstance(data, dict) else None
    return [
        *([f"notice: {frame['notice']}"] if frame.get("notice") else []),
        *([f"hint: {hint}"] if hint else []),
    ]


def plain(frame: Mapping[str, Any], text: str | None = None) -> str:
    """A successful answer as one text with no footer: its value (``text``, else the
    frame's), then its :func:`notes`. For a surface whose caller reads the profile from the
    structured answer (the MCP server): nothing in it repeats the frame's rows."""
    body = str(frame.get("text") or "") if text is None else text
    return "\n".join(line for line in (body, *notes(frame)) if line)


def refusal(frame: Mapping[str, Any], indent: str = "") -> str:
    """A refusal frame as text: ``refused [<code>]: <message>``, then ``way out: …`` on its
    own line (after ``indent``: ``bay`` sets it off by two spaces) when it has one."""
    text = f"refused [{frame.get('code')}]: {frame.get('message')}"
    way_out = frame.get("way_out")
    return f"{text}\n{indent}way out: {way_out}" if way_out else text


def json_line(frame: dict[str, Any], verb: str, cut: Cut) -> str:
    """``bay --json``'s one line for an answer frame: every field but ``text`` and ``id``,
    a data string longer than :data:`MAX_OUTPUT` cut by ``cut`` (named under ``cut``)."""
    frame = {k: v for k, v in frame.items() if k not in ("text", "id")}
    data = frame.get("data")
    if isinstance(data, dict):
        for key, value in list(data.items()):
            if isinstance(value, str) and len(value) > MAX_OUTPUT:
                data[key], info = cut(value, verb)
                data.setdefault("cut", {})[key] = info
    return json_safe(protocol.dumps(frame)) + "\n"


def printed(
    frame: dict[str, Any], verb: str, *, as_json: bool, footed: bool, full: bool, cut: Cut
) -> tuple[str, str, int]:
    """What ``bay`` prints for the keeper's answer to ``verb``: (stdout, stderr, exit code).
    The value on stdout, its :func:`notes` and — ``footed``: a verb on a profile's browser
    — the footer on stderr (``full``: ``BAY_FOOTER=full``'s whole line); a refusal on
    stderr; ``--json`` one line on stdout. Every line :func:`printable` (a page's control
    characters never reach the terminal raw). One rule for the client, which prints it,
    and the keeper, which answers it on the CLI's warm road (:mod:`browserbay.keeper.argvroad`):
    ``cut`` writes what is too long into a file of the client's (the keeper's refuses)."""
    code = EXIT_OK if frame.get("ok") else exit_code(str(frame.get("code")))
    if as_json:
        return json_line(frame, verb, cut), "", code
    if not frame.get("ok"):
        return "", printable(refusal(frame, indent="  ")) + "\n", code
    text, _ = cut(str(frame.get("text", "")), verb)
    lines = notes(frame)
    if footed:
        profile = frame.get("profile")
        line = full_footer(profile, frame.get("session") or {}) if full else footer(profile)
        if line:
            lines.append(line)
    out = printable(text) + "\n" if text else ""
    return out, "".join(printable(line) + "\n" for line in lines), code
