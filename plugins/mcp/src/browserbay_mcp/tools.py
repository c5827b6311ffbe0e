"""The MCP tools, generated from the verb table: one tool per agent verb of the chosen tool
profiles (:data:`browserbay.verbs.TOOL_PROFILES`), named as the verb, its parameters the
verb's arguments with their help, kinds and choices — the table the CLI, the keeper, the API
and the docs read. A new row is a new tool with no edit here.

One tool per verb rather than one per family with an ``action`` enum: measured on the tool
list (``bench/run.py``, ``mcp_tool_list``), the families save little — a family's enum and
its merged description cost about what the separate tools' names and schemas did — while an
agent calling a verb's own tool gets that verb's own required arguments checked
(docs/mcp.md, "Tools").
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from browserbay.refusals import Refusal
from browserbay.verbs import TOOL_PROFILE, Arg, Verb, tool_verbs
from browserbay_mcp.wording import Wording

#: The default profile (``bay mcp`` with no ``--tools``).
DEFAULT_PROFILES = ("core",)

#: JSON Schema types of the table's argument types.
_JSON_TYPES = {"int": "integer", "float": "number"}
#: Argument kinds whose value is a list of words.
_LISTS = ("rest", "many", "tail")
#: The words a help that only lists an argument's choices has besides them.
_CHOICE_WORDS = frozenset({"or", "and", "default"})
#: Argument kinds a call must give.
_REQUIRED = ("pos", "rest")


def profiles_of(spec: str | None) -> tuple[str, ...]:
    """The tool profiles a ``--tools`` value names (comma-separated; default core); an
    unknown one is refused ``usage`` naming the profiles there are."""
    names = tuple(p.strip() for p in (spec or "").split(",") if p.strip()) or DEFAULT_PROFILES
    unknown = [p for p in names if p not in TOOL_PROFILE]
    if unknown:
        raise Refusal(
            "usage",
            detail=f"no tool profile {unknown[0]!r}; the profiles: {', '.join(TOOL_PROFILE)}",
            verb="mcp",
            way_out="bay mcp --tools core,io",
        )
    return names


def tool_names(
    profiles: Iterable[str] = DEFAULT_PROFILES, plugins: Iterable[Verb] = ()
) -> dict[str, str]:
    """The tools a server with ``profiles`` lists, each to the verb it runs (tool name →
    verb name; a census of the surfaces reads it); ``plugins``: the plugins' verb rows the
    keeper lists."""
    return {v.name: v.name for v in tool_verbs(list(profiles), plugins)}


#: Words that say nothing about a value by themselves.
_FILLER = frozenset(
    {"a", "an", "the", "of", "to", "on", "in", "at", "by", "for", "with", "or", "and"}
    | {"it", "its", "this", "your", "yours", "is", "be"}
)


def content_words(text: str) -> set[str]:
    """The content words of ``text``, lowercased, a plural or possessive as its stem."""
    found = (w.lower().removesuffix("'s") for w in re.findall(r"[A-Za-z][A-Za-z']*", text))
    return {w.removesuffix("s") if len(w) > 3 else w for w in found} - _FILLER


def _arg_schema(verb: Verb, arg: Arg, words: Wording) -> dict[str, Any]:
    """An argument's JSON schema: its type (none beside an ``enum``: the choices are words),
    its choices, and its help unless the help only lists the choices or the tool's
    description already names it as an option (``--full``: explained there)."""
    if arg.choices:
        schema: dict[str, Any] = {"enum": list(arg.choices)}
    elif arg.kind == "flag":
        schema = {"type": "boolean"}
    elif arg.kind in _LISTS:
        schema = {"type": "array", "items": {"type": "string"}}
    elif arg.type in _JSON_TYPES:
        schema = {"type": _JSON_TYPES[arg.type]}
    else:  # a word: a string, or a number or JSON value the server sends as its word
        schema = {}
    if arg.kind in ("flag", "value", "many") and re.search(
        rf"(?<![\w-]){re.escape(arg.long)}(?![\w-])", verb.summary
    ):
        return schema
    help_ = words.text(arg.help, verb)
    if content_words(help_) <= content_words(f"{arg.name} {verb.name} {verb.summary}"):
        return schema  # the name and the tool's description say it already
    if arg.bare is not None:  # a command line's bare option: no such thing in a schema
        help_ = re.sub(r"\s*\(given bare: [^)]*\)", "", help_)
    if not set(re.findall(r"[A-Za-z-]+", help_)) - set(arg.choices) - _CHOICE_WORDS:
        return schema  # the help only lists the choices: the enum says them
    schema["description"] = help_
    return schema


@dataclass(frozen=True)
class Tool:
    """One generated tool: the verb it runs and its MCP listing."""

    verb: Verb
    description: str
    input_schema: dict[str, Any]

    @property
    def name(self) -> str:
        return self.verb.name

    def listing(self) -> dict[str, Any]:
        """The tool as ``tools/list`` lists it."""
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
        }

    def arguments(self, given: Mapping[str, Any] | None) -> dict[str, Any]:
        """``given`` as the verb's arguments, checked against the table: an unknown argument,
        a missing required one, a value of the wrong type or not among the choices is refused
        ``usage`` naming the argument and what it takes (nothing is sent)."""
        given = dict(given or {})
        args = {a.name: a for a in self.verb.args}
        unknown = sorted(set(given) - set(args))
        if unknown:
            allowed = ", ".join(args) or "none"
            raise self._refuse(
                f"{self.name} has no argument {unknown[0]!r}; its arguments: {allowed}",
                f"call {self.name} with only: {allowed}",
            )
        out: dict[str, Any] = {}
        for name, arg in args.items():
            value = given.get(name)
            if value is None:
                if arg.kind in _REQUIRED:
                    raise self._refuse(
                        f"{self.name} needs {name} ({arg.help})", f"call {self.name} with {name}"
                    )
                continue
            out[name] = self._value(arg, value)
        return out

    def _value(self, arg: Arg, value: Any) -> Any:
        if arg.kind == "flag":
            if not isinstance(value, bool):
                raise self._wrong(arg, "true or false", value)
            return value
        if arg.kind in _LISTS:
            items = value if isinstance(value, list) else [value]
            if not all(isinstance(v, (str, int, float)) for v in items) or (
                arg.kind in _REQUIRED and not items
            ):
                raise self._wrong(arg, "a list of strings", value)
            return [str(v) for v in items]
        kind = _JSON_TYPES.get(arg.type)
        if kind == "integer":
            if isinstance(value, bool) or not isinstance(value, int):
                raise self._wrong(arg, "an integer", value)
        elif kind == "number":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise self._wrong(arg, "a number", value)
        elif isinstance(value, bool):
            raise self._wrong(arg, "a string", value)
        elif isinstance(value, (int, float)):
            value = f"{value:g}"  # as the CLI sends a number it read: its word
        elif isinstance(value, (dict, list)):
            value = json.dumps(value)  # a JSON argument (headers, a route's body) given as JSON
        if arg.choices and value not in arg.choices:
            raise self._wrong(arg, "one of " + ", ".join(arg.choices), value)
        return value

    def _wrong(self, arg: Arg, wants: str, value: Any) -> Refusal:
        got = json.dumps(value)[:60]
        return self._refuse(
            f"{self.name}: {arg.name} takes {wants}, not {got}",
            f"call {self.name} with {arg.name} as {wants}",
        )

    def _refuse(self, detail: str, way_out: str) -> Refusal:
        return Refusal("usage", detail=detail, verb=self.name, way_out=way_out)


#: The help of a file argument whose default, over MCP, is the image in the result.
IMAGE_HELP = "a file to write instead of returning the image"
#: An argument whose help is the same in at least this many tools is a term: said once, in
#: the server's instructions, and left out of those tools' schemas.
TERM_TOOLS = 3


@dataclass(frozen=True)
class Generated:
    """The tools of a server, by name in the table's order, and the terms their schemas share
    (argument name → its help; said once in the instructions)."""

    tools: dict[str, Tool]
    terms: dict[str, str]

    def instructions(self, lead: str) -> str:
        if not self.terms:
            return lead
        said = "; ".join(f"{name}: {help_}" for name, help_ in self.terms.items())
        return f"{lead}\nShared arguments — {said}."


def generate(
    profiles: Iterable[str],
    words: Wording,
    images: Mapping[str, str] | None = None,
    plugins: Iterable[Verb] = (),
    terms: Mapping[str, str] | None = None,
) -> Generated:
    """The tools of ``profiles`` (and of the ``plugins``' verbs the keeper lists); ``images``:
    verb → its file argument whose default is the image in the result; ``terms``: the shared
    arguments the server's instructions already say (they are sent once, at the start:
    plugins' tools learnt later use those), else found among these tools. No
    ``additionalProperties: false`` in a schema: the server refuses an argument the tool has
    not anyway (:meth:`Tool.arguments`), and the tool list is what every turn of the agent
    pays for."""
    verbs = tool_verbs(list(profiles), plugins)
    if terms is None:
        helps = Counter((a.name, a.help) for v in verbs for a in v.args)
        terms = {name: words.text(h) for (name, h), n in helps.items() if n >= TERM_TOOLS}
    tools: dict[str, Tool] = {}
    for verb in verbs:
        props = {a.name: _arg_schema(verb, a, words) for a in verb.args}
        for a in verb.args:
            if a.name in terms and terms[a.name] == props[a.name].get("description"):
                del props[a.name]["description"]
        image = (images or {}).get(verb.name)
        if image in props:
            props[image]["description"] = IMAGE_HELP
        schema: dict[str, Any] = {"type": "object"}
        if props:
            schema["properties"] = props
        required = [a.name for a in verb.args if a.kind in _REQUIRED]
        if required:
            schema["required"] = required
        tools[verb.name] = Tool(verb, words.text(verb.summary, verb), schema)
    return Generated(tools, dict(terms))
