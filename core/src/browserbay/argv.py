"""argv -> (verb, args, options), from the verb table. Standard library only, no argparse:
the hot path of ``bay`` must cost little more than a bare Python start."""

from __future__ import annotations

from browserbay.verbs import BY_NAME, GLOBAL_OPTIONS, VERBS, Arg, Verb

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class UsageError(Exception):
    def __init__(self, message: str, verb: str | None = None, unknown_verb: str | None = None):
        super().__init__(message)
        self.verb = verb
        self.unknown_verb = unknown_verb


def suggest(word: str, choices: list[str]) -> str:
    import difflib

    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def _convert(arg: Arg, raw: str, verb: str) -> object:
    if arg.type == "int":
        try:
            return int(raw)
        except ValueError:
            raise UsageError(
                f"{arg.long if arg.kind == 'value' else arg.name} must be a whole number, "
                f"not {raw!r}",
                verb,
            ) from None
    if arg.type == "float":
        try:
            return float(raw)
        except ValueError:
            raise UsageError(f"{arg.long} must be a number, not {raw!r}", verb) from None
    if arg.choices and raw not in arg.choices:
        raise UsageError(
            f"{arg.name} must be one of {', '.join(arg.choices)}{suggest(raw, list(arg.choices))}",
            verb,
        )
    return raw


def parse(
    argv: list[str], table: dict[str, Verb] | None = None
) -> tuple[Verb, dict[str, Any], dict[str, Any]]:
    """Parse argv against ``table`` (default: the core's verbs)."""
    table = BY_NAME if table is None else table
    options: dict[str, Any] = {}
    words: list[str] = []
    i = 0
    verb: Verb | None = None
    flags: dict[str, Arg] = {}
    for g in GLOBAL_OPTIONS:
        flags[g.long] = g
    dashdash = False
    tail: list[str] | None = None  # the words after `--`, for a verb with a `tail` argument
    args: dict[str, Any] = {}
    while i < len(argv):
        tok = argv[i]
        i += 1
        if tail is not None:
            tail.append(tok)
            continue
        if dashdash or not tok.startswith("-") or tok == "-" or _is_number(tok):
            if verb is None:
                if tok not in table:
                    raise UsageError(
                        f"unknown verb '{tok}'{suggest(tok, list(table))} (bay help lists them)",
                        unknown_verb=tok,
                    )
                verb = table[tok]
                for a in verb.args:
                    if a.kind in ("flag", "value", "many"):
                        flags[a.long] = a
                        if a.short:
                            flags[a.short] = a
                continue
            words.append(tok)
            continue
        if tok == "--":
            dashdash = True
            if verb is not None and any(a.kind == "tail" for a in verb.args):
                tail = []
            continue
        if tok in ("-h", "--help"):
            options["help"] = True
            continue
        if tok == "--version" and verb is None:
            options["version"] = True
            continue
        name, eq, inline = tok.partition("=")
        spec = flags.get(name)
        if spec is None:
            known = [*sorted(flags), "--help"]
            where = f" for '{verb.name}'" if verb else ""
            raise UsageError(
                f"unknown option '{name}'{where}{suggest(name, known)}", verb.name if verb else None
            )
        if spec.kind == "flag":
            if eq:
                raise UsageError(f"{name} takes no value", verb.name if verb else None)
            value: object = True
        elif spec.bare is not None and not eq and (i >= len(argv) or argv[i] not in spec.choices):
            value = spec.bare  # given bare: the next word (if any) is not its value
        else:
            if eq:
                raw = inline
            elif i < len(argv):
                raw = argv[i]
                i += 1
            else:
                raise UsageError(f"{name} needs a value", verb.name if verb else None)
            value = _convert(spec, raw, verb.name if verb else "")
        if spec in GLOBAL_OPTIONS:
            options[spec.name] = value
        elif spec.kind == "many":
            args.setdefault(spec.name, []).append(value)
        else:
            args[spec.name] = value
    if verb is None:
        if options.get("help") or options.get("version"):  # `bay --help`: bay's own usage
            return BY_NAME["help"], {}, {**options, "usage": True}
        raise UsageError("no verb given (bay --help: bay's usage; bay help: the agent manual)")
    if options.get("help"):
        return verb, args, options
    positional = [a for a in verb.args if a.kind in ("pos", "opt", "rest")]
    for a in positional:
        if a.kind == "rest":
            if not words:
                raise UsageError(f"'{verb.name}' needs <{a.name}>", verb.name)
            args[a.name] = [str(_convert(a, w, verb.name)) for w in words]
            words = []
            break
        if not words:
            if a.kind == "pos":
                raise UsageError(f"'{verb.name}' needs <{a.name}>: {a.help}", verb.name)
            continue
        args[a.name] = _convert(a, words.pop(0), verb.name)
    if words:
        raise UsageError(f"'{verb.name}' takes no more words (got {' '.join(words)!r})", verb.name)
    tail_arg = next((a for a in verb.args if a.kind == "tail"), None)
    if tail_arg is not None and tail:
        args[tail_arg.name] = tail
    return verb, args, options


def _is_number(tok: str) -> bool:
    try:
        float(tok)
    except ValueError:
        return False
    return True


def usage_line(verb: Verb) -> str:
    parts = [f"bay {verb.name}"]
    for a in verb.args:
        if a.kind == "pos":
            parts.append(f"<{a.name}>")
        elif a.kind == "opt":
            parts.append(f"[{a.name}]")
        elif a.kind == "rest":
            parts.append(f"<{a.name}...>")
        elif a.kind == "tail":
            parts.append(f"[-- {a.name}...]")
        elif a.kind == "flag":
            parts.append(f"[{a.short or a.long}]")
        elif a.kind == "many":
            parts.append(f"[{a.long} N]...")
        elif a.bare is not None:
            parts.append(f"[{a.long} [N]]")
        else:
            parts.append(f"[{a.long} N]")
    return " ".join(parts)


def help_text(name: str | None, table: dict[str, Verb] | None = None) -> str:
    table = BY_NAME if table is None else table
    if name and name not in table:
        from browserbay.distributions import providing_verb  # a verb not here: off the hot path

        dist = providing_verb(name)
        if dist is not None:
            return (
                f"bay {name}: from the {dist.name} plugin, which is not installed here.\n"
                f"install it: {dist.install_hint()}"
            )
    if name and name in table:
        v = table[name]
        lines = [usage_line(v), "", v.summary, ""]
        for a in v.args:
            label = (
                a.name
                if a.kind in ("pos", "opt", "rest", "tail")
                else (a.short + ", " if a.short else "") + a.long
            )
            lines.append(f"  {label:<18} {a.help}")
        if v.example:
            lines += ["", "example: " + v.example]
        if v.owner_only:
            lines += [
                "",
                f"owner only: {v.owner_only_phrase()} (refused owner_only on a session socket: "
                "the human runs it on the owner's channel)",
            ]
        lines += ["", "options: --json, --timeout SECONDS, --session ID"]
        return "\n".join(lines)
    lines = [
        "usage: bay <verb> [args] [--json] [--timeout S] [--session ID] [--profile H]",
        "",
        "  bay help           the agent manual: verbs, refs, profiles, the rules, every refusal",
        "  bay help <verb>    one verb's arguments (also: bay <verb> --help)",
        "  bay --version      the version installed here",
        "",
        "verbs:",
    ]
    lines += [f"  {v.name:<11} {v.summary}" for v in VERBS]
    extra = [v for v in table.values() if v.plugin]
    if extra:
        lines += ["", "from plugins:"]
        lines += [f"  {v.name:<11} {v.summary}  ({v.plugin})" for v in extra]
    lines += not_installed_lines(table)
    lines += ["", "Docs: docs/agent-manual.md (bay help prints its short form)"]
    return "\n".join(lines)


def not_installed_lines(table: dict[str, Verb]) -> list[str]:
    """The verbs of browserbay's own plugins that are not installed here, each with the
    plugin that adds it and the command that installs it."""
    from browserbay.distributions import NOT_PUBLISHED, checkout, missing_verbs  # off the hot path

    served = {name for name, v in table.items() if v.plugin}  # the keeper has them loaded
    missing = [d for d in missing_verbs() if not served & set(d.verbs)]
    if not missing:
        return []
    lines = ["", "not installed here (a plugin adds them):"]
    lines += [f"  {', '.join(d.verbs)}: {d.name}, {d.install_command()}" for d in missing]
    if checkout() is None:
        lines.append(f"  ({NOT_PUBLISHED} --package <name>)")
    return lines
