"""Ways out, notices and tool descriptions in an MCP client's words.

The refusal table, the notices and the verb table speak to a shell user: ``bay snapshot -i``,
``bay dialog accept [text]``. An agent behind MCP has no shell; it has tools. Each ``bay
<verb> <words>`` in such a text is parsed against the verb table (its positional slots, its
``--long`` and ``-s`` options, exactly as the CLI reads them) and said as the tool call that
does it — ``snapshot(interactive=true)``, ``dialog(action="accept", text=…)`` — or, for a
verb that is no tool of this server, as what to do instead (ask the user to run it, or to
start the server with the profile that has it). Derived from the data, never a per-refusal
string: a new refusal's way out is worded with no edit here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping

from browserbay.verbs import BY_NAME, GLOBAL_OPTIONS, Arg, Verb, agent_verb, tool_profile_of

#: ``bay`` then a verb of the table, then its words: up to a delimiter (a backtick, a
#: parenthesis, ``,``/``;``/``|``, two spaces, a line's end).
_COMMAND = re.compile(r"`?\bbay ((?:[a-z][a-z-]*)(?: [^\s`(),;|]+)*)`?")
#: Where a command stands in our own words: after a backtick, a parenthesis, a line's start,
#: ``:``/``;``/``,``/``—``, two spaces, or a word that leads into one ("run", "then", "by"…).
#: A page's prose ("the bay close to town") has ``bay`` after another word: left as written.
_LEAD = re.compile(
    r"(?:^|[(`\n]|[:;,—]\s+|\s\s|\b(?:run|then|or|and|to|try|with|via|by|until|see|use|first|do)\s+)$"
)
#: Words that end a command in prose ("bay tab list or bay tab new").
_PROSE = frozenset({"or", "and", "then", "first", "to", "again", "for", "in", "with", "after"})
#: Local verbs whose work a tool listing does for an MCP client.
_INSTEAD = {"help": "the {tool} tool's description and input schema"}
#: The options every verb takes on the command line: no tool argument (the server's client
#: has its session, profile and deadline), so a way out's ``--timeout 60`` is left out.
_GLOBAL = {a.long: a for a in GLOBAL_OPTIONS}


def _value(word: str) -> str:
    """A word as a tool argument's value: a placeholder (``<url>``, ``[text]``, ``N``) as
    is, a number as a number, anything else as a JSON string."""
    if word[:1] in "<[" or word in ("N", "...", "…") or re.fullmatch(r"-?\d+(\.\d+)?", word):
        return word
    return json.dumps(word)


class Wording:
    """Says CLI commands as the tool calls of a server whose tools are ``tools``; ``table``:
    the verbs a command may name (the core's, plus the plugins' the keeper lists)."""

    def __init__(self, tools: Collection[str], table: Mapping[str, Verb] = BY_NAME):
        self.tools = frozenset(tools)
        self.table = table

    def text(self, text: str, verb: Verb | None = None) -> str:
        """``text`` with every ``bay <verb> …`` said as a tool call (or what to do instead);
        backticks around a command go with it. In ``verb``'s own help, its options' command
        line spellings (``--http-only``) are its tool's parameter names (``http_only``)."""
        said = _COMMAND.sub(self._command, text)
        for arg in verb.args if verb else ():
            said = re.sub(rf"(?<![\w-]){re.escape(arg.long)}(?![\w-])", arg.name, said)
        return said

    def _command(self, m: re.Match[str]) -> str:
        if not m.group(0).startswith("`") and not _LEAD.search(m.string[: m.start()]):
            return m.group(0)  # not where our words put a command: a page's text, as is
        words = m.group(1).split(" ")
        verb = self.table.get(words[0])
        if verb is None:
            return m.group(0)  # no verb of the table (a plugin's, another tool's): as written
        args, used = self._parse(verb, words[1:])
        tail = " ".join(words[1 + used :])
        return self.call(verb, words[1 : 1 + used], args) + (" " + tail if tail else "")

    def call(self, verb: Verb, words: list[str], args: list[str]) -> str:
        """``bay <verb> <words>`` (``args``: the words as tool arguments) as this server's
        client would do it."""
        if verb.name in _INSTEAD:
            return _INSTEAD[verb.name].format(tool=words[0] if words else "the")
        if verb.name in self.tools:
            return f"{verb.name}({', '.join(args)})"
        if not agent_verb(verb):
            return "(ask the user to run: " + " ".join(["bay", verb.name, *words]) + ")"
        profile = tool_profile_of(verb)
        return f"{verb.name}({', '.join(args)}) (not on this server: profile {profile})"

    @staticmethod
    def _parse(verb: Verb, words: list[str]) -> tuple[list[str], int]:
        """The command's words as tool arguments, and how many words are the command's (it
        ends at a word of prose, a word with a colon or full stop, or a positional word the
        verb has no slot left for)."""
        slots = [a for a in verb.args if a.kind in ("pos", "opt", "rest")]
        by_option: dict[str, Arg] = {a.long: a for a in verb.args}
        by_option.update({a.short: a for a in verb.args if a.short})
        out: list[str] = []
        i = 0
        while i < len(words):
            word = words[i].rstrip(":.")
            last = word != words[i]
            arg = by_option.get(word)
            if word in _PROSE or (arg is None and not word.startswith("-") and not slots):
                break
            if arg is not None and arg.kind == "flag":
                out.append(f"{arg.name}=true")
            elif arg is not None:
                value = words[i + 1] if i + 1 < len(words) else "…"
                out.append(f"{arg.name}={_value(value.rstrip(':.'))}")
                i += 1
            elif word in _GLOBAL:
                i += _GLOBAL[word].kind != "flag"  # and its value
            elif word.startswith("-"):
                out.append(word)  # an option the verb has not (a global one): as written
            elif slots[0].kind == "rest":  # it takes the words up to an option or prose
                n = 1
                while i + n < len(words) and words[i + n][:1] != "-" and words[i + n] not in _PROSE:
                    n += 1
                values = ", ".join(_value(w.rstrip(":.")) for w in words[i : i + n])
                out.append(f"{slots.pop(0).name}=[{values}]")
                i += n - 1
            else:
                out.append(f"{slots.pop(0).name}={_value(word)}")
            i += 1
            if last:
                break
        return out, min(i, len(words))
