"""The verb table: every command, its arguments and what it needs. Standard library only.

The CLI parses argv from it, the keeper dispatches and checks capability cells from it, the
docs list it, and the MCP server maps onto it. A behaviour lives in the keeper's handler for
the verb, never in the CLI.
"""

from __future__ import annotations

import os

from browserbay import protocol

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

# Where a verb runs:
PAGE = "page"  # on the session's current tab (its browser starts lazily)
SESSION = "session"  # on the session's state (tabs, close, status)
KEEPER = "keeper"  # on the keeper itself
LOCAL = "local"  # in the client, no keeper needed
PLUGIN = "plugin"  # contributed by a plugin (bay_verbs): its handler runs in the keeper

#: The :attr:`Arg.type` of a file on the caller's machine (``bay screenshot shot.png``, ``bay run
#: steps.py``): every client makes it absolute against its own working directory before
#: sending, since the keeper has another one (:meth:`Verb.with_local_paths`).
PATH = "path"
#: The :attr:`Arg.type` of a file of the caller's that the verb's bytes come from (``bay
#: upload @e3 cv.pdf``): the client reads it and sends its content through the connection
#: (:mod:`browserbay.transfer`); the keeper gets a transfer handle, never the path.
FILE_IN = "file_in"
#: The :attr:`Arg.type` of a file of the caller's that the verb's answer is written to (``bay
#: download @e5 report.csv``): the keeper answers the bytes, the client writes them there
#: (:mod:`browserbay.transfer`); the keeper never opens the path.
FILE_OUT = "file_out"
#: The argument types that name a file on the caller's machine (made absolute by the client).
LOCAL_FILES = (PATH, FILE_IN, FILE_OUT)


class Arg:
    """One argument. ``kind``: ``pos`` (required word), ``opt`` (optional word), ``rest``
    (one or more words), ``tail`` (optional: every word after ``--``, as a list), ``flag``
    (boolean option), ``value`` (option with a value), ``many`` (an option with a value that
    may be given again: its values, as a list). ``type``: ``str``, ``int``, ``float``,
    ``secret`` (never from argv: ``-`` reads it from stdin), :data:`PATH`, or a file whose
    bytes move through the connection: :data:`FILE_IN`, :data:`FILE_OUT`. ``bare``: the
    value a ``value`` option with ``choices`` takes when given without one (``bay wait
    --load`` is ``--load load``: a flag that became an option keeps its old spelling).
    ``when``: another type for some calls, ``{"action=load": FILE_IN}`` (:meth:`type_for`)."""

    __slots__ = (
        "bare",
        "choices",
        "default",
        "help",
        "kind",
        "long",
        "name",
        "short",
        "type",
        "when",
    )

    def __init__(
        self,
        name: str,
        kind: str,
        help: str,
        *,
        type: str = "str",
        choices: tuple[str, ...] = (),
        default: object = None,
        short: str = "",
        bare: str | None = None,
        when: Mapping[str, str] | None = None,
    ):
        self.name = name
        self.kind = kind
        self.help = help
        self.type = type
        self.when = dict(when or {})
        """``name=value`` -> the argument's type when argument ``name`` is ``value``: one
        word that is a file written in one action and read in another (``bay state save F``,
        ``bay state load F``)."""
        self.choices = choices
        self.default = default
        self.short = short
        self.bare = bare
        self.long = "--" + name.replace("_", "-")

    def to_row(self) -> dict[str, object]:
        return {
            "name": self.name,
            "kind": self.kind,
            "help": self.help,
            "type": self.type,
            "choices": list(self.choices),
            "default": self.default,
            "short": self.short,
            "bare": self.bare,
            "when": dict(self.when),
        }

    def type_for(self, args: Mapping[str, Any]) -> str:
        """The argument's type in a call with ``args``: the one :attr:`when` gives for it, else
        :attr:`type`."""
        for cond, typ in self.when.items():
            name, _, value = cond.partition("=")
            if args.get(name) == value:
                return typ
        return self.type

    @property
    def types(self) -> tuple[str, ...]:
        """Every type the argument may have."""
        return (self.type, *self.when.values())

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Arg:
        return cls(
            str(row["name"]),
            str(row["kind"]),
            str(row.get("help", "")),
            type=str(row.get("type", "str")),
            choices=tuple(row.get("choices") or ()),
            default=row.get("default"),
            short=str(row.get("short") or ""),
            bare=None if row.get("bare") is None else str(row["bare"]),
            when={str(k): str(v) for k, v in (row.get("when") or {}).items()},
        )


class Verb:
    __slots__ = (
        "args",
        "example",
        "mutates",
        "name",
        "needs",
        "owner_only",
        "plugin",
        "pointer",
        "scope",
        "secret_args",
        "summary",
        "tool_profile",
    )

    def __init__(
        self,
        name: str,
        scope: str,
        summary: str,
        args: tuple[Arg, ...] = (),
        *,
        needs: tuple[str, ...] = (),
        mutates: bool = False,
        secret_args: tuple[str, ...] = (),
        example: str = "",
        plugin: str = "",
        pointer: bool = False,
        owner_only: tuple[str, ...] = (),
        tool_profile: str = "",
    ):
        self.name = name
        self.scope = scope
        self.summary = summary
        self.args = args
        self.needs = needs
        self.mutates = mutates
        self.secret_args = secret_args
        self.example = example
        self.plugin = plugin
        """The plugin that contributed the verb (empty for the core's own)."""
        self.pointer = pointer
        """It acts with the pointer at its target's point (an action trace marks where)."""
        self.owner_only = owner_only
        """The calls of it only the owner's channel may make (refused ``owner_only`` on a
        session socket), as conditions: ``*`` every call; ``name=value`` when argument
        ``name`` is ``value``; ``name`` when argument (or flag) ``name`` is given."""
        self.tool_profile = tool_profile
        """A plugin's verb: the MCP tool profile that offers it (``core``, ``network``…; empty:
        ``all`` only). The core's verbs are named by the :data:`TOOL_PROFILES` rows instead."""

    def to_row(self) -> dict[str, object]:
        return {
            "name": self.name,
            "scope": self.scope,
            "summary": self.summary,
            "args": [a.to_row() for a in self.args],
            "needs": list(self.needs),
            "mutates": self.mutates,
            "secret_args": list(self.secret_args),
            "example": self.example,
            "plugin": self.plugin,
            "pointer": self.pointer,
            "owner_only": list(self.owner_only),
            "tool_profile": self.tool_profile,
        }

    def arg(self, name: str) -> Arg:
        """The argument called ``name`` (a KeyError when the verb has none)."""
        for a in self.args:
            if a.name == name:
                return a
        raise KeyError(f"{self.name} has no argument {name!r}")

    def owner_only_for(self, args: dict[str, Any]) -> str | None:
        """The first :attr:`owner_only` condition ``args`` meet (None: anyone may call it so)."""
        for cond in self.owner_only:
            name, eq, value = cond.partition("=")
            if cond == "*":
                return cond
            given = args.get(name)
            if eq and given == value:
                return cond
            if not eq and given not in (None, False, "", []):
                return cond
        return None

    def owner_only_problems(self) -> list[str]:
        """The :attr:`owner_only` conditions that could never match (an argument the verb
        does not have, a value its choices exclude, ``=`` on a flag): a typo there would
        open an owner's verb to every session, so the keeper refuses to start with one."""
        problems = []
        for cond in self.owner_only:
            if cond == "*":
                continue
            name, eq, value = cond.partition("=")
            spec = next((a for a in self.args if a.name == name), None)
            if spec is None:
                problems.append(f"{self.name}: owner_only {cond!r} names no argument")
            elif eq and (spec.kind == "flag" or (spec.choices and value not in spec.choices)):
                problems.append(f"{self.name}: owner_only {cond!r} can never match")
        return problems

    def owner_only_words(self, condition: str) -> str:
        """An :attr:`owner_only` condition as the command reads: ``keeper``, ``keys set``,
        ``hints --forget``, ``new --provider cdp``, ``chrome -- ARGS`` (the manual, ``bay
        help`` and the ``owner_only`` refusal say it so)."""
        if condition == "*":
            return self.name
        name, eq, value = condition.partition("=")
        spec = self.arg(name)
        if spec.kind in ("pos", "opt", "rest"):
            return f"{self.name} {value if eq else '<' + name + '>'}"
        if spec.kind == "tail":
            return f"{self.name} -- {name.upper()}"
        return f"{self.name} {spec.long}" + (f" {value}" if eq else "")

    def owner_only_phrase(self) -> str:
        """Every owner-only call of the verb in one phrase: ``keeper``, ``hints --forget``,
        ``keys set/clear/test`` (the manual and ``bay help VERB`` say them so)."""
        if "*" in self.owner_only:
            return self.name
        prefix = self.name + " "
        return prefix + "/".join(
            self.owner_only_words(c).removeprefix(prefix) for c in self.owner_only
        )

    def command_line(self, args: Mapping[str, Any]) -> str:
        """``bay click @e3``: the verb as one would run it again. Typed text never appears
        (a secret argument is shown as ``<text>``), and an argument of type ``secret`` (a
        key) not at all: it is read from stdin, never taken from the command line."""
        words, tail = ["bay", self.name], []
        for a in self.args:
            if a.name not in args or a.type == "secret":
                continue
            value = args[a.name]
            shown = f"<{a.name}>" if a.name in self.secret_args else value
            many = [str(v) for v in (shown if isinstance(shown, list) else [shown])]
            if a.kind == "flag":
                if value:
                    words.append(a.long)
            elif a.bare is not None and value in (True, a.bare):
                words.append(a.long)
            elif a.kind in ("pos", "opt", "rest"):
                words.extend(many)
            elif a.kind == "tail":
                tail = ["--", *many]
            elif a.kind == "many":
                for v in many:
                    words += [a.long, v]
            else:
                words += [a.long, str(shown)]
        return " ".join(words + tail)

    def with_local_paths(self, args: dict[str, Any]) -> dict[str, Any]:
        """``args`` with each given :data:`PATH`, :data:`FILE_IN` or :data:`FILE_OUT` argument
        (one word or a list of them) made absolute (the CLI, the Python API and the MCP server
        all send it so)."""
        local = {a.name for a in self.args if any(t in LOCAL_FILES for t in a.types)}

        def absolute(v: Any) -> Any:
            return os.path.abspath(v) if isinstance(v, (str, os.PathLike)) and v else v

        return {
            k: ([absolute(x) for x in v] if isinstance(v, list) else absolute(v))
            if k in local
            else v
            for k, v in args.items()
        }

    @property
    def moves_files(self) -> bool:
        """An argument of it is a file whose bytes move through the connection
        (:data:`FILE_IN`, :data:`FILE_OUT`): the client carries them
        (:mod:`browserbay.transfer`)."""
        return any(t in (FILE_IN, FILE_OUT) for a in self.args for t in a.types)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Verb:
        return cls(
            str(row["name"]),
            str(row["scope"]),
            str(row.get("summary", "")),
            tuple(Arg.from_row(a) for a in row.get("args", ())),
            needs=tuple(row.get("needs") or ()),
            mutates=bool(row.get("mutates")),
            secret_args=tuple(row.get("secret_args") or ()),
            example=str(row.get("example") or ""),
            plugin=str(row.get("plugin") or ""),
            pointer=bool(row.get("pointer")),
            owner_only=tuple(str(c) for c in row.get("owner_only") or ()),
            tool_profile=str(row.get("tool_profile") or ""),
        )


_T = Arg("target", "pos", "an @eN reference from the last snapshot, or a CSS/Playwright selector")
_CDP = ("has_cdp",)

VERBS: tuple[Verb, ...] = (
    Verb(
        "open",
        PAGE,
        "Navigate the current tab to a URL (http, https or about:blank).",
        (Arg("url", "pos", "the URL to open"),),
        needs=_CDP,
        mutates=True,
        example="bay open https://example.org",
    ),
    Verb(
        "snapshot",
        PAGE,
        "The page's ARIA tree with @eN references to act on.",
        (
            Arg("interactive", "flag", "only what you can act on, flat", short="-i"),
            Arg("depth", "value", "the tree's depth", type="int", short="-d"),
            Arg("selector", "value", "only the subtree of this @ref or selector", short="-s"),
            Arg("delta", "flag", "only what changed since the tab's last snapshot"),
            Arg("limit", "value", "lines per page (default 400; 0: no bound)", type="int"),
            Arg("page", "value", "which page of lines (from 1)", type="int"),
        ),
        needs=_CDP,
        example="bay snapshot -i",
    ),
    Verb("click", PAGE, "Click an element.", (_T,), needs=_CDP, mutates=True, pointer=True),
    Verb(
        "dblclick",
        PAGE,
        "Double-click an element.",
        (_T,),
        needs=_CDP,
        mutates=True,
        pointer=True,
        example="bay dblclick @e4",
    ),
    Verb(
        "drag",
        PAGE,
        "Drag an element onto another (HTML5 or pointer-driven).",
        (
            _T,
            Arg("to", "pos", "where to drop it (a reference or selector too)"),
        ),
        needs=_CDP,
        mutates=True,
        pointer=True,
        example="bay drag @e3 @e7",
    ),
    Verb(
        "focus",
        PAGE,
        "Focus an element (keys then go to it).",
        (_T,),
        needs=_CDP,
        mutates=True,
        example="bay focus @e5",
    ),
    Verb(
        "fill",
        PAGE,
        "Replace the value of a text field.",
        (_T, Arg("text", "pos", "the value")),
        needs=_CDP,
        mutates=True,
        secret_args=("text",),
        example='bay fill @e7 "Ada"',
    ),
    Verb(
        "type",
        PAGE,
        "Type text key by key into an element (keeps what is there).",
        (_T, Arg("text", "pos", "the text to type")),
        needs=_CDP,
        mutates=True,
        secret_args=("text",),
    ),
    Verb(
        "press",
        PAGE,
        "Press a key or chord on the focused element (Enter, Control+a).",
        (Arg("key", "pos", "a key name as Playwright spells it"),),
        needs=_CDP,
        mutates=True,
        example="bay press Control+Shift+k",
    ),
    Verb(
        "keydown",
        PAGE,
        "Hold a key down (Shift, Control, a letter…) until bay keyup releases it.",
        (Arg("key", "pos", "a key name as Playwright spells it"),),
        needs=_CDP,
        mutates=True,
        example="bay keydown Shift",
    ),
    Verb(
        "keyup",
        PAGE,
        "Release a key held with bay keydown.",
        (Arg("key", "pos", "a key name as Playwright spells it"),),
        needs=_CDP,
        mutates=True,
        example="bay keyup Shift",
    ),
    Verb(
        "keyboard",
        PAGE,
        "To the focused element: type text with key events, or insert it with none.",
        (
            Arg(
                "action",
                "pos",
                "type: key by key; inserttext: at once, no key events",
                choices=("type", "inserttext"),
            ),
            Arg("text", "pos", "the text"),
        ),
        needs=_CDP,
        mutates=True,
        secret_args=("text",),
        example='bay keyboard inserttext "Hello"',
    ),
    Verb(
        "mouse",
        PAGE,
        "The mouse at viewport coordinates (CSS pixels).",
        (
            Arg(
                "action", "pos", "move, down, up or wheel", choices=("move", "down", "up", "wheel")
            ),
            Arg(
                "first",
                "opt",
                "move: x; wheel: dy (+ down); down/up: left|right|middle",
            ),
            Arg("second", "opt", "move: y; wheel: dx (+ right)"),
        ),
        needs=_CDP,
        mutates=True,
        pointer=True,
        example="bay mouse move 120 240",
    ),
    Verb(
        "select",
        PAGE,
        "Choose options of a <select> by value or label.",
        (_T, Arg("values", "rest", "option values or labels")),
        needs=_CDP,
        mutates=True,
        example="bay select @e9 red blue",
    ),
    Verb(
        "upload",
        PAGE,
        "Set files of yours on a file input (50 MiB in all).",
        (_T, Arg("files", "rest", "files of yours", type=FILE_IN)),
        needs=_CDP,
        mutates=True,
        example="bay upload @e4 ./cv.pdf",
    ),
    Verb("check", PAGE, "Tick a checkbox or radio.", (_T,), needs=_CDP, mutates=True, pointer=True),
    Verb("uncheck", PAGE, "Untick a checkbox.", (_T,), needs=_CDP, mutates=True, pointer=True),
    Verb("hover", PAGE, "Move the pointer over an element.", (_T,), needs=_CDP, pointer=True),
    Verb(
        "scroll",
        PAGE,
        "Scroll the page (up/down/left/right by pixels) or an element into view.",
        (
            Arg("direction", "opt", "up, down, left, right, or a target to bring into view"),
            Arg("pixels", "opt", "how far (default 600)", type="int"),
        ),
        needs=_CDP,
    ),
    Verb(
        "scrollintoview",
        PAGE,
        "Scroll an element into view; prints its box (CSS pixels of the viewport).",
        (_T,),
        needs=_CDP,
        example="bay scrollintoview @e40",
    ),
    Verb(
        "wait",
        PAGE,
        "Wait for an element (visible, or --state), milliseconds, text, a URL, a load state "
        "or a JS condition.",
        (
            Arg("what", "opt", "a target, or milliseconds"),
            Arg("text", "value", "a substring to appear", short="-t"),
            Arg("url", "value", "a URL glob", short="-u"),
            Arg(
                "load",
                "value",
                "load, domcontentloaded or networkidle (given bare: load)",
                choices=("load", "domcontentloaded", "networkidle"),
                short="-l",
                bare="load",
            ),
            Arg("fn", "value", "a JS expression to become truthy", short="-f"),
            Arg(
                "state",
                "value",
                "with a target: the state to wait for (default visible)",
                choices=("visible", "hidden", "attached", "detached"),
            ),
        ),
        needs=_CDP,
        secret_args=("fn",),
        example="bay wait --text 'Saved'",
    ),
    Verb(
        "get",
        PAGE,
        "Read the page's title or url, or an element's text, value, html, attribute, box or "
        "computed styles, or count a selector's matches.",
        (
            Arg(
                "what",
                "pos",
                "what to read",
                choices=("title", "url", "text", "value", "html", "count", "box", "attr", "styles"),
            ),
            Arg(
                "target",
                "opt",
                "the element (text/html default to the whole page); for count, a selector",
            ),
            Arg(
                "name",
                "opt",
                "attr: the attribute's name; styles: CSS properties, comma-separated "
                "(default: a short list of the common ones)",
            ),
        ),
        needs=_CDP,
        example="bay get attr @e4 href",
    ),
    Verb(
        "is",
        PAGE,
        "Say true or false: is an element visible, enabled or checked (exit status 0 either way).",
        (
            Arg("what", "pos", "the state to ask about", choices=("visible", "enabled", "checked")),
            _T,
        ),
        needs=_CDP,
        example="bay is visible @e4",
    ),
    Verb(
        "find",
        PAGE,
        "Find one element by role, text, label, placeholder, alt, title or test id, and act on "
        "it (click, fill, …) or read its text.",
        (
            Arg(
                "by",
                "pos",
                "how to find it",
                choices=("role", "text", "label", "placeholder", "alt", "title", "testid"),
            ),
            Arg("value", "pos", "the role (button, link, …), or the text to match"),
            Arg(
                "action",
                "pos",
                "what to do with the one element found",
                choices=(
                    "click",
                    "dblclick",
                    "fill",
                    "type",
                    "check",
                    "uncheck",
                    "hover",
                    "focus",
                    "text",
                ),
            ),
            Arg("text", "opt", "fill/type: the text"),
            Arg("name", "value", "role: the accessible name it must have"),
            Arg("exact", "flag", "match the text or name whole and case-sensitively"),
        ),
        needs=_CDP,
        mutates=True,
        pointer=True,
        secret_args=("text",),
        example='bay find role button click --name "Sign in"',
    ),
    Verb(
        "frame",
        PAGE,
        "Act inside an iframe (later verbs: snapshot, click, get, …) until `bay frame main`.",
        (Arg("target", "pos", "the iframe (@eN from a snapshot, or a selector), or main"),),
        needs=_CDP,
        example="bay frame @e4",
    ),
    Verb(
        "eval",
        PAGE,
        "Evaluate a JavaScript expression in the page and print its JSON value.",
        (Arg("js", "pos", "the expression"),),
        needs=_CDP,
        mutates=True,
        secret_args=("js",),
    ),
    Verb(
        "screenshot",
        PAGE,
        "Screenshot the viewport (or --full page); --annotate numbers what you can act on "
        "([3] is @e3).",
        (
            Arg(
                "path",
                "opt",
                "where to write it, on your machine (default: the keeper's state dir)",
                type=FILE_OUT,
            ),
            Arg("full", "flag", "the whole page"),
            Arg("annotate", "flag", "draw the refs' numbers"),
            Arg(
                "format",
                "value",
                "png (default) or jpeg",
                choices=("png", "jpeg"),
            ),
            Arg("quality", "value", "0-100 (default 80)", type="int"),
            Arg("max_bytes", "value", "scale down to fit", type="int"),
            Arg("max_px", "value", "the longest side (default 8000)", type="int"),
            Arg("if_changed", "flag", "no image if the same as the tab's last"),
        ),
        needs=("has_cdp", "screenshots"),
        example="bay screenshot --annotate --format jpeg --max-px 1568 shot.jpg",
        # No owner_only: the picture comes back through the connection and the caller's own
        # client writes it at the path (browserbay.transfer); the keeper never opens it.
    ),
    Verb(
        "download",
        PAGE,
        "Click an element and save the download it starts at a path of yours.",
        (
            _T,
            Arg(
                "path",
                "pos",
                "where to write it, on your machine (a directory: under the file's own name)",
                type=FILE_OUT,
            ),
        ),
        needs=_CDP,
        mutates=True,
        pointer=True,
        example="bay download @e5 ./report.csv",
    ),
    Verb(
        "downloads",
        SESSION,
        "Downloads pages started by themselves, kept for you: list, get <name> <path>, "
        "clear [name].",
        (
            Arg("action", "opt", "list (default), get, clear", choices=("list", "get", "clear")),
            Arg("name", "opt", "get, clear: a download's name, as listed"),
            Arg("path", "opt", "get: where to write it, on your machine", type=FILE_OUT),
        ),
        example="bay downloads get report.csv ./report.csv",
    ),
    Verb(
        "pdf",
        PAGE,
        "Save the page as PDF to a file of yours (headless browsers only).",
        (Arg("path", "pos", "a file of yours", type=FILE_OUT),),
        needs=_CDP,
        example="bay pdf page.pdf",
        # No owner_only: the PDF's bytes come back through the connection and the caller's
        # client writes them (browserbay.transfer); the keeper never opens the path.
    ),
    Verb(
        "record",
        PAGE,
        "Record your current tab as a video: start <file.webm|.mp4> [--cursor], then stop.",
        (
            Arg("action", "pos", "start or stop", choices=("start", "stop")),
            Arg("path", "opt", "start: the .webm or .mp4 file (the keeper writes it)", type=PATH),
            Arg("cursor", "flag", "start: draw where your last pointer verb acted"),
            Arg(
                "max_seconds",
                "value",
                "start: stop after this long (600; at most 3600)",
                type="float",
            ),
            Arg(
                "max_mb",
                "value",
                "start: stop at this size in MiB (256; at most 2048)",
                type="float",
            ),
        ),
        needs=_CDP,
        example="bay record start demo.webm",
        # The keeper writes the video at the caller's path as its own user: owner-only on a
        # session socket (browserbay.keeper.recording says why not FILE_OUT).
        owner_only=("action=start",),
    ),
    Verb(
        "recording",
        KEEPER,
        "Continuous recording of a persistent profile: on, every tab of its sessions is "
        "recorded into its trace (pruned by the trace's retention); off; list.",
        (
            Arg("action", "pos", "what to do", choices=("list", "on", "off")),
            Arg("profile", "opt", "on, off: the profile (label or id)"),
        ),
        mutates=True,
        # Whether an agent is filmed is the owner's call (the agent is told, never asked).
        owner_only=("*",),
        example="bay recording on work",
    ),
    Verb(
        "set",
        PAGE,
        "Emulate a setting for your tabs until they close.",
        (
            Arg(
                "setting",
                "pos",
                "viewport, device, geo, offline, media, timezone, locale or headers",
                choices=(
                    "viewport",
                    "device",
                    "geo",
                    "offline",
                    "media",
                    "timezone",
                    "locale",
                    "headers",
                ),
            ),
            Arg(
                "value",
                "opt",
                "viewport: width; device: 'iPhone 12'…; geo: latitude; offline: on|off; "
                "media: dark|light|reduced-motion; timezone: Europe/Berlin; locale: de-DE; "
                "headers: JSON",
            ),
            Arg("second", "opt", "viewport: height; geo: longitude; media: reduced-motion"),
        ),
        needs=_CDP,
        mutates=True,
        secret_args=("value",),
        example="bay set viewport 375 812",
    ),
    Verb(
        "console",
        PAGE,
        "The tab's console messages (the newest 500).",
        (Arg("clear", "flag", "empty the log after"),),
        needs=_CDP,
        example="bay console --clear",
    ),
    Verb(
        "errors",
        PAGE,
        "The tab's uncaught page errors (the newest 100): message, stack, time.",
        (Arg("clear", "flag", "empty the tab's error log once shown"),),
        needs=_CDP,
        example="bay errors",
    ),
    Verb(
        "network",
        PAGE,
        "The tab's requests; routes that mock or fail them; a HAR (credentials masked, no bodies).",
        (
            Arg(
                "action",
                "pos",
                "requests, route, unroute or har",
                choices=("requests", "route", "unroute", "har"),
            ),
            Arg("arg", "opt", "route/unroute: a URL glob (**/api/*); har: start|stop"),
            Arg("file", "opt", "har stop: a file of yours", type=FILE_OUT),
            Arg("filter", "value", "requests: a URL substring or glob"),
            Arg("clear", "flag", "requests: empty the log after"),
            Arg("abort", "flag", "route: fail the requests"),
            Arg("body", "value", "route: JSON or text"),
            Arg(
                "body_file",
                "value",
                "route: the body from a file",
                type=FILE_IN,
            ),
            Arg("status", "value", "route: default 200", type="int"),
            Arg(
                "content_type",
                "value",
                "route: default by the body",
            ),
        ),
        needs=_CDP,
        example="bay network route '**/api/users' --body '{\"users\": []}'",
    ),
    Verb(
        "login-check",
        PAGE,
        "Open a URL, let it settle, and say logged_in, logged_out or unknown from URL globs.",
        (
            Arg("url", "value", "the page to open (a page that needs the login)"),
            Arg("logged_in", "value", "a glob the settled URL matches when logged in"),
            Arg("logged_out", "value", "a glob the settled URL matches when logged out"),
        ),
        needs=_CDP,
        mutates=True,
        example="bay login-check --url https://app.example/home --logged-in '*/home*' "
        "--logged-out '*/login*'",
    ),
    Verb(
        "cookies",
        PAGE,
        "Your browser's cookies (values clipped).",
        (
            Arg("action", "opt", "get (default), set or clear", choices=("get", "set", "clear")),
            Arg("cookie", "opt", "set: its name"),
            Arg("value", "opt", "set: its value"),
            Arg("url", "value", "set: default the page's"),
            Arg(
                "domain",
                "value",
                "set: instead of --url (.x.org: and subdomains); get/clear: filter",
            ),
            Arg("path", "value", "set: default /"),
            Arg("http_only", "flag", "set: hidden from scripts"),
            Arg("secure", "flag", "set: https only"),
            Arg(
                "same_site",
                "value",
                "set: None needs --secure",
                choices=("Strict", "Lax", "None"),
            ),
            Arg(
                "expires",
                "value",
                "set: epoch seconds",
                type="float",
            ),
            Arg("name", "value", "get/clear: filter"),
        ),
        needs=_CDP,
        mutates=True,
        secret_args=("value",),
        example="bay cookies set sid abc123 --url https://app.example --http-only --secure",
    ),
    Verb(
        "storage",
        PAGE,
        "The page's localStorage or sessionStorage.",
        (
            Arg("area", "pos", "local or session", choices=("local", "session")),
            Arg("action", "opt", "get (default), set or clear", choices=("get", "set", "clear")),
            Arg("key", "opt", "get: one (else all); set: it"),
            Arg("value", "opt", "set: its value"),
        ),
        needs=_CDP,
        mutates=True,
        secret_args=("value",),
        example="bay storage local set theme dark",
    ),
    Verb(
        "state",
        PAGE,
        "Save your cookies and localStorage to a file of yours (0600, never printed), or load one.",
        (
            Arg("action", "pos", "save or load", choices=("save", "load")),
            Arg(
                "file",
                "pos",
                "a file of yours",
                type=FILE_OUT,
                when={"action=load": FILE_IN},
            ),
        ),
        needs=_CDP,
        mutates=True,
        example="bay state save login.json",
    ),
    Verb("back", PAGE, "Go back in the tab's history.", needs=_CDP, mutates=True),
    Verb("forward", PAGE, "Go forward in the tab's history.", needs=_CDP, mutates=True),
    Verb("reload", PAGE, "Reload the page.", needs=_CDP, mutates=True),
    Verb(
        "tab",
        SESSION,
        "List, open, close or switch your tabs.",
        (
            Arg("action", "opt", "list (default), new, close, or a tab id to switch"),
            Arg("arg", "opt", "new: a URL; close: a tab id"),
        ),
        needs=_CDP,
        example="bay tab new https://example.org",
    ),
    Verb(
        "dialog",
        SESSION,
        "Answer a page's dialog (alert, confirm, prompt, beforeunload), or list those open.",
        (
            Arg(
                "action",
                "pos",
                "accept, dismiss or status",
                choices=("accept", "dismiss", "status"),
            ),
            Arg("text", "opt", "accept: a prompt's answer"),
        ),
        needs=_CDP,
        mutates=True,
        secret_args=("text",),
        example="bay dialog accept",
    ),
    Verb(
        "close",
        SESSION,
        "Close your tabs and leases (kept for `bay resume`).",
    ),
    Verb(
        "resume",
        SESSION,
        "Reopen the tabs kept when your browser stopped or you closed it.",
        needs=_CDP,
    ),
    Verb(
        "use",
        SESSION,
        "Attach a profile to your session (the first is the default), or --ephemeral.",
        (
            Arg("profile", "opt", "a profile's label or id (see bay profiles)"),
            Arg("alias", "value", "a short handle for it in this session"),
            Arg("exclusive", "flag", "hold it for your group; others wait (FIFO)"),
            Arg("wait", "value", "seconds to wait for an exclusive hold", type="float"),
            Arg("ephemeral", "flag", "configure your own isolated browser instead"),
            Arg("allowed_domains", "value", "with --ephemeral: domains it may reach (a,b)"),
        ),
        example="bay use work --alias w",
    ),
    Verb(
        "detach",
        SESSION,
        "Remove a profile from your session's set (--profile H, or the only one).",
    ),
    Verb(
        "pin",
        SESSION,
        "Make one attached profile the default for bare verbs (or --none).",
        (
            Arg("profile", "opt", "the handle to pin"),
            Arg("none", "flag", "unpin"),
        ),
    ),
    Verb(
        "new",
        KEEPER,
        "Register a persistent profile (its own browser, cookies that survive).",
        (
            Arg("label", "pos", "a free-text name (never a path)"),
            Arg("provider", "value", "the provider (default chromium)"),
            Arg("proxy", "value", "a proxy URL for its browser"),
            Arg("allowed_domains", "value", "domains its browser may reach (a,b)"),
            Arg("headed", "flag", "run its browser with a window"),
            Arg("cdp_url", "value", "cdp provider: http://host:port, ws://..., or auto"),
            Arg(
                "sharing",
                "value",
                "owner: only its owner uses it; granted: the owner may grant it to a session "
                "socket (default: granted on the owner's channel, owner on a session socket)",
                choices=("owner", "granted"),
            ),
            Arg(
                "from_session",
                "flag",
                "keep the login your ephemeral browser has now: its cookies and localStorage "
                "are copied into the new profile",
            ),
        ),
        # A cdp profile drives somebody else's running browser (the human's own, at a
        # debugging port): which one is the owner's call.
        owner_only=("provider=cdp", "cdp_url"),
        example="bay new work",
    ),
    Verb(
        "profiles",
        KEEPER,
        "Persistent profiles: owner, sharing, provider, tier, running, sessions, disk, memory, "
        "last used (on a session socket: the ones it may use).",
        (Arg("orphans", "flag", "also profile directories no registry row owns"),),
        owner_only=("orphans",),  # the home's whole profiles directory
    ),
    Verb(
        "forget",
        KEEPER,
        "Archive a profile's directory, then remove the profile.",
        (Arg("profile", "pos", "label or id"),),
        owner_only=("*",),
    ),
    Verb(
        "adopt",
        KEEPER,
        "Register an existing browser user-data-dir as a profile.",
        (Arg("dir", "pos", "the directory"), Arg("label", "pos", "a free-text name")),
        owner_only=("*",),  # any directory of the keeper's user: the human's own browser's
    ),
    Verb(
        "group",
        KEEPER,
        "Set a group's default profile (sessions with BAY_GROUP=<name> use it).",
        (
            Arg("action", "pos", "what to do", choices=("default",)),
            Arg("name", "pos", "the group"),
            Arg("profile", "pos", "label or id"),
        ),
        owner_only=("*",),  # every session of that group
    ),
    Verb(
        "triggers",
        KEEPER,
        "The trigger intake directory (drop <uuid>.json requests there; docs/triggers.md).",
        (Arg("action", "pos", "what to show", choices=("path",)),),
        owner_only=("*",),  # a request dropped there acts as any session it names
        example="bay triggers path",
    ),
    Verb(
        "audit",
        KEEPER,
        "The audit trail: at, session, profile, verb, ok (never a typed value).",
        (Arg("last", "value", "how many rows (default 50)", type="int"),),
        owner_only=("*",),  # every session's verbs
    ),
    Verb(
        "backend",
        SESSION,
        "Providers by tier (available?, key source, capabilities); with a provider, switch "
        "this profile's backend to it (a proposal when others hold it).",
        (
            Arg("provider", "opt", "switch the profile to this provider (see the listing)"),
            Arg("confirm_version", "flag", "switch although the Chromium version is unknown"),
            Arg("accept", "flag", "accept the switch proposed for this profile"),
            Arg("decline", "flag", "drop the switch proposed for this profile"),
        ),
        example="bay backend cloak --profile work",
    ),
    Verb("status", SESSION, "Your session, its profile, browser and tabs."),
    Verb(
        "blocked",
        SESSION,
        "Say a page blocked you: your claim is recorded as a site hint for the user (never a "
        "switch); answers what the hints say for that host.",
        (
            Arg("url", "value", "the page that blocked you"),
            Arg("why", "value", "what you saw (a captcha, HTTP 403, 'access denied'…)"),
            Arg("tier", "value", "the tier you suggest (2 or 3), when you name no backend"),
            Arg("backend", "value", "the provider you suggest (cloak, cloud:steel…)"),
        ),
        example="bay blocked --url https://shop.example/cart --why 'captcha on every load'",
    ),
    Verb(
        "hints",
        KEEPER,
        "The site hints agents recorded with `bay blocked`, per host; --forget drops a host's.",
        (
            Arg("host", "opt", "one exact host (default: every host)"),
            Arg("forget", "flag", "drop that host's hints (the user's call)"),
        ),
        mutates=True,
        owner_only=("forget",),
        example="bay hints shop.example",
    ),
    Verb(
        "session",
        KEEPER,
        "Session sockets: grant one bound to a session (owner), list, revoke; mint a child "
        "session (a sub-agent with its own browser).",
        (
            Arg("action", "pos", "what to do", choices=("grant", "list", "revoke", "child")),
            Arg("id", "opt", "the session (grant, revoke)"),
            Arg(
                "socket",
                "value",
                "grant: the unix socket to create (in a directory of yours only you can write)",
                type=PATH,
            ),
            Arg("profile", "many", "grant: a persistent profile it may use (again for more)"),
            Arg("ttl", "value", "grant: seconds until the socket stops answering", type="float"),
        ),
        owner_only=("action=grant", "action=revoke"),
        example="bay session grant agent-1 --socket /run/agents/a1/bay.sock --profile work",
    ),
    Verb(
        "keeper",
        KEEPER,
        "The keeper daemon: status, stop, logs.",
        (
            Arg("action", "pos", "what to do", choices=("status", "stop", "logs", "start")),
            Arg(
                "set",
                "many",
                "start: a keeper setting for this start, NAME=VALUE (again for more; beats "
                "BAY_* and the config file)",
            ),
        ),
        owner_only=("*",),  # every session's browsers; status lists them all
        example="bay keeper start --set max_browsers=2 --set idle_timeout=600",
    ),
    Verb("plugins", KEEPER, "Installed plugins: name, distribution, version, hooks; providers."),
    Verb("verbs", KEEPER, "The verb table as the keeper knows it, plugins' verbs included."),
    Verb(
        "help",
        LOCAL,
        "The agent manual, or help on one verb.",
        (Arg("verb", "opt", "a verb"),),
        example="bay help snapshot",
    ),
    Verb(
        "doctor",
        LOCAL,
        "Check this machine (browser, display, AT-SPI, keychain, plugins, keeper, disk): "
        "ok/warn/fail and the fix. Starts no keeper.",
        example="bay doctor --json",
    ),
    Verb(
        "install-skill",
        LOCAL,
        "Write the agent manual as a skill: Claude's SKILL.md or a block in AGENTS.md.",
        (
            Arg("claude", "flag", "write .claude/skills/browserbay/SKILL.md"),
            Arg("codex", "flag", "write a marked block in AGENTS.md (as --agents)"),
            Arg("agents", "flag", "write a marked block in AGENTS.md (the default)"),
            Arg("dir", "value", "the project directory (default: the current one)"),
        ),
        example="bay install-skill --claude",
    ),
    Verb(
        "mcp",
        LOCAL,
        "Serve MCP on stdio for an agent harness: the agent verbs as tools, by profile.",
        (
            Arg(
                "tools",
                "value",
                "tool profiles, comma-separated: core (default), io, network, state, tabs, "
                "windows, all",
            ),
        ),
        example="bay mcp --tools core,io",
    ),
    Verb(
        "install",
        LOCAL,
        "Install plugin distributions into bay's own environment, then list their plugins.",
        (
            Arg("distributions", "rest", "names, paths or URLs, as pip takes them"),
            Arg("upgrade", "flag", "upgrade them if installed"),
            Arg("no_deps", "flag", "do not install their dependencies"),
        ),
        owner_only=("*",),  # code the keeper loads at its next start
        example="bay install ./plugins/mcp",
    ),
    Verb(
        "uninstall",
        LOCAL,
        "Remove plugin distributions from bay's own environment.",
        (Arg("distributions", "rest", "distribution names"),),
        owner_only=("*",),
    ),
)

BY_NAME: dict[str, Verb] = {v.name: v for v in VERBS}


class ToolProfile:
    """A named set of verbs an MCP server offers as tools (``bay mcp --tools core,io``): a
    capability row. A verb an agent may call (:func:`agent_verb`) that no profile names is a
    tool of ``all`` only, so a new row is exposed with no edit here."""

    __slots__ = ("name", "summary", "verbs")

    def __init__(self, name: str, summary: str, verbs: tuple[str, ...] = ()):
        self.name = name
        self.summary = summary
        self.verbs = verbs


#: The MCP server's tool profiles, in the order its tools are listed. ``all``: every agent
#: verb, those of no other profile included.
TOOL_PROFILES: tuple[ToolProfile, ...] = (
    ToolProfile(
        "core",
        "navigate, read the page and act on it by reference (the default)",
        (
            "open",
            "back",
            "forward",
            "reload",
            "snapshot",
            "click",
            "dblclick",
            "fill",
            "type",
            "press",
            "select",
            "check",
            "uncheck",
            "hover",
            "focus",
            "scroll",
            "scrollintoview",
            "wait",
            "get",
            "is",
            "find",
            "frame",
            "eval",
            "screenshot",
            "dialog",
            "status",
            "close",
        ),
    ),
    ToolProfile(
        "io",
        "the keyboard and mouse by hand, drag, files in and out",
        (
            "drag",
            "keyboard",
            "keydown",
            "keyup",
            "mouse",
            "upload",
            "download",
            "downloads",
            "pdf",
            "record",
        ),
    ),
    ToolProfile(
        "network", "console, page errors, requests, routes, a HAR", ("console", "errors", "network")
    ),
    ToolProfile(
        "state",
        "cookies, storage, a state file, a login check",
        ("cookies", "storage", "state", "login-check"),
    ),
    ToolProfile("tabs", "your tabs: list, new, switch, close, resume", ("tab", "resume")),
    ToolProfile(
        "windows", "what the window shows the page: viewport, device, media, geo", ("set",)
    ),
    ToolProfile("all", "every verb an agent may call, profiles and site hints included"),
)

TOOL_PROFILE: dict[str, ToolProfile] = {p.name: p for p in TOOL_PROFILES}


def agent_verb(verb: Verb) -> bool:
    """Whether an agent with no shell (an MCP client) may be offered the verb as a tool: it
    runs in the keeper (never a local verb: the help, doctor, install…) and some call of it
    is not the owner's alone."""
    return verb.scope != LOCAL and "*" not in verb.owner_only


def tool_profile_of(verb: Verb) -> str:
    """The tool profile that offers ``verb``: the :data:`TOOL_PROFILES` row naming it, else
    the one a plugin's row names (:attr:`Verb.tool_profile`), else ``all``."""
    named = next((p.name for p in TOOL_PROFILES if verb.name in p.verbs), "")
    return named or (verb.tool_profile if verb.tool_profile in TOOL_PROFILE else "all")


def tool_verbs(
    profiles: tuple[str, ...] | list[str], plugins: Iterable[Verb] = ()
) -> tuple[Verb, ...]:
    """The verbs the tool profiles ``profiles`` offer: the core's in the table's order, then
    the ``plugins``' verbs (rows the keeper lists, :attr:`Verb.plugin` set) in theirs. A
    KeyError for an unknown profile."""
    names = {p for p in profiles if TOOL_PROFILE[p]}
    rows = (*VERBS, *(v for v in plugins if v.plugin and v.name not in BY_NAME))
    return tuple(
        v for v in rows if agent_verb(v) and ("all" in names or tool_profile_of(v) in names)
    )


#: The file (in the runtime dir) where the keeper writes plugins' verbs for the thin client,
#: which reads it only for a verb that is not in :data:`VERBS`.
PLUGIN_VERBS_FILE = "plugin-verbs.json"

#: Options every verb takes.
GLOBAL_OPTIONS = (
    Arg("json", "flag", "print exactly one JSON object on stdout"),
    Arg("timeout", "value", "deadline in seconds (default 30)", type="float"),
    Arg("session", "value", "act as this session (default: $BAY_SESSION, else your shell's)"),
    Arg("profile", "value", "act on this attached profile (default: $BAY_PROFILE, the pin)"),
)

DEFAULT_TIMEOUT = protocol.DEFAULT_TIMEOUT
