"""The one closed table of refusal codes. Standard library only: the thin client imports it.

Every refusal an agent can meet has a stable ``code`` from :data:`CODES`, a message that says
what happened, a ``way_out`` that says what to run next, and ``data`` for machines. Adding a
code means adding a row here, a test that produces it (the census in ``tests/`` fails
otherwise) and a line in ``docs/refusals.md``.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_DEADLINE = 124


class Code:
    """One row of the table: the message and way-out templates and the exit code."""

    __slots__ = ("exit", "message", "name", "way_out")

    def __init__(self, name: str, message: str, way_out: str, exit: int = EXIT_REFUSED):
        self.name = name
        self.message = message
        self.way_out = way_out
        self.exit = exit


_ROWS = (
    Code("usage", "{detail}", "bay help {verb}", EXIT_USAGE),
    Code(
        "backend_unavailable",
        "The {provider} provider cannot start a browser: {reason}",
        "{fix}",
    ),
    Code(
        "capability_missing",
        "The {provider} provider cannot do '{verb}': it lacks the capability {capability}",
        "bay plugins  (lists providers and their capability cells)",
    ),
    Code(
        "local_scheme_refused",
        "Navigation to a {scheme}: URL is refused; only http, https and about:blank are allowed",
        "serve the file over http (python3 -m http.server) and open http://127.0.0.1:PORT/...",
    ),
    Code("tab_gone", "Tab {tab} is gone: {reason}", "bay tab list"),
    Code(
        "not_your_tab",
        "Tab {tab} belongs to another session; a session acts only on its own tabs",
        "bay tab list  (your tabs), or bay tab new <url>",
    ),
    Code(
        "ref_stale",
        "Reference {ref} is not in this page's last snapshot (the page changed or navigated)",
        "bay snapshot -i  (then act on a fresh @eN)",
    ),
    Code(
        "target_not_found",
        "Nothing on the page matches {target}",
        "bay snapshot -i  (and use an @eN reference)",
    ),
    Code("action_failed", "'{verb}' failed on the page: {reason}", "bay snapshot -i"),
    Code(
        "deadline",
        "'{verb}' did not finish within {timeout:g}s",
        "bay {verb} ... --timeout {longer:g}   (or bay wait --load first)",
        EXIT_DEADLINE,
    ),
    Code(
        "too_large",
        "{what} is {size} bytes; the limit is {limit} bytes",
        "{fix}",
    ),
    Code(
        "bad_frame",
        "The keeper could not read that frame: {reason}",
        "send one JSON object per line, UTF-8, under the frame limit (docs/protocol.md)",
    ),
    Code(
        "keeper_unavailable",
        "The keeper is not reachable: {reason}",
        "bay keeper logs   (then run the command again; the keeper starts by itself)",
    ),
    Code(
        "verb_refused",
        "'{verb}' was refused by the {plugin} plugin: {reason}",
        "{fix}",
    ),
    Code(
        "internal_error",
        "The keeper failed while running '{verb}': {reason}",
        "bay keeper logs   (and report it; nothing was changed on your behalf)",
    ),
)

#: code name -> row. Closed: :func:`refusal` refuses a name that is not here.
CODES: dict[str, Code] = {row.name: row for row in _ROWS}


class _Blank(dict):  # type: ignore[type-arg]
    """Format mapping that leaves an unknown placeholder visible instead of raising."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def render(code: str, fields: dict[str, Any]) -> tuple[str, str]:
    """The message and way-out of ``code`` filled from ``fields``."""
    row = CODES[code]
    mapping = _Blank(fields)
    try:
        message = row.message.format_map(mapping)
    except (ValueError, TypeError):
        message = row.message
    try:
        way_out = row.way_out.format_map(mapping)
    except (ValueError, TypeError):
        way_out = row.way_out
    return message, way_out.strip()


def exit_code(code: str) -> int:
    row = CODES.get(code)
    return row.exit if row else EXIT_REFUSED


class Refusal(Exception):
    """A typed refusal: raised anywhere in the keeper, answered to the agent as a frame.

    ``fields`` fill the message and way-out templates of the code's row and become ``data``.
    A plugin may pass ``way_out=`` to say a more specific next step.
    """

    def __init__(self, code: str, *, way_out: str | None = None, **fields: Any):
        if code not in CODES:
            raise ValueError(f"unknown refusal code {code!r}; add it to browserbay.refusals")
        self.code = code
        self.fields = fields
        self.explicit_way_out = way_out
        message, default_way_out = render(code, fields)
        self.message = message
        self.way_out = way_out if way_out is not None else default_way_out
        super().__init__(f"{code}: {message}")

    def with_defaults(self, **defaults: Any) -> Refusal:
        """The same refusal with fields it left out filled in (e.g. the keeper adds the
        ``verb`` a policy plugin refused)."""
        missing = {k: v for k, v in defaults.items() if k not in self.fields}
        if not missing:
            return self
        return Refusal(self.code, way_out=self.explicit_way_out, **missing, **self.fields)

    def frame(self) -> dict[str, Any]:
        data = {k: v for k, v in self.fields.items() if _jsonable(v)}
        return {
            "ok": False,
            "code": self.code,
            "message": self.message,
            "way_out": self.way_out,
            "data": data,
        }


def _jsonable(value: object) -> bool:
    return value is None or isinstance(value, (str, int, float, bool, list, dict))
