"""``bay``: the thin client. Parses argv from the verb table, sends one frame to the keeper,
prints the value on stdout; on stderr its notice and hint lines and a footer naming the profile
when the agent could have it wrong (``BAY_FOOTER=full``: the whole line, session included).

Exit codes: 0 ok, 1 refused or failed, 2 usage, 124 deadline. ``--json`` prints exactly one
JSON object on stdout. Standard library only on this path.
"""

from __future__ import annotations

import os
import sys
import time

from browserbay import client, identity, protocol, render
from browserbay._version import __version__
from browserbay.argv import UsageError, help_text, parse
from browserbay.refusals import EXIT_OK, EXIT_USAGE, Refusal, exit_code, printable
from browserbay.sockpath import distrust, session_socket
from browserbay.verbs import DEFAULT_TIMEOUT, KEEPER, LOCAL, Verb

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from browserbay.distributions import Distribution

#: Local verbs whose code is imported only when they run (``browserbay_cli.extras.HANDLERS``;
#: a test holds the two to the table's local verbs).
OFF_HOT_PATH = ("mcp", "install", "uninstall", "doctor", "install-skill")

MAX_OUTPUT = render.MAX_OUTPUT


def whole_environment() -> None:
    """The interpreter's whole module path (site-packages and their ``.pth`` files), for
    what leaves the hot path — plugins, the MCP server, installed distributions' metadata —
    when the lean launcher (:mod:`browserbay_cli.launcher`) started ``bay`` without ``site``
    (``python -S``). Nothing when ``site`` ran at start, or has run since."""
    if sys.flags.no_site and "site" not in sys.modules:
        import site

        site.main()


def bay_paths() -> Any:
    """The full path set, imported only off the hot path (pathlib is not cheap)."""
    from browserbay.paths import bay_paths as full

    return full()


def _cut(text: str, verb: str) -> tuple[str, dict[str, Any] | None]:
    if len(text) <= MAX_OUTPUT:
        return text, None
    paths = bay_paths()
    path = paths.outputs / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{verb}.txt"
    try:
        paths.ensure()  # a read-only root (a sandbox's) or somebody else's directory: said below
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as exc:  # a full disk, no home: the answer is still shown, cut, and says so
        import contextlib  # off the hot path

        with contextlib.suppress(OSError):
            os.unlink(path)
        marker = (
            f"\n… [cut at {MAX_OUTPUT:,} of {len(text):,} characters; the full text could not "
            f"be saved under {paths.outputs}: {exc.strerror or exc}]"
        )
        return text[:MAX_OUTPUT] + marker, {"file": None, "chars": len(text), "shown": MAX_OUTPUT}
    marker = f"\n… [cut at {MAX_OUTPUT:,} of {len(text):,} characters; full text: {path}]"
    return text[:MAX_OUTPUT] + marker, {"file": str(path), "chars": len(text), "shown": MAX_OUTPUT}


def _emit_json(frame: dict[str, Any], verb: str) -> None:
    sys.stdout.write(render.json_line(frame, verb, _cut))


def show(frame: dict[str, Any], verb: str, as_json: bool, footed: bool) -> int:
    """Print the keeper's answer to ``verb`` (:func:`browserbay.render.printed`: the rule
    the keeper answers the warm road's text by, too) and answer the exit code."""
    full = os.environ.get("BAY_FOOTER") == "full"  # a human who wants the whole line
    out, err, code = render.printed(
        frame, verb, as_json=as_json, footed=footed, full=full, cut=_cut
    )
    sys.stdout.write(out)
    sys.stdout.flush()  # all of stdout, then stderr: the warm road's order (browserbay_cli.hot)
    sys.stderr.write(err)
    return code


def warm_said(said: dict[str, Any], argv: list[str]) -> int:
    """What the warm road (:mod:`browserbay_cli.hot`) does not print itself: an answer too
    long to print whole (its full text goes into a file here), and a request cut off after
    the keeper had it — its deadline passed, or the keeper went away — refused as
    :func:`browserbay.client.call` refuses them (it may have run: never sent again)."""
    if isinstance(said.get("answer"), dict):
        verb, as_json = str(said.get("verb") or ""), bool(said.get("json"))
        return show(said["answer"], verb, as_json, footed=bool(said.get("footed")))
    try:
        row, _, options = parse(argv)
        name, as_json = row.name, bool(options.get("json"))
    except UsageError:  # a plugin's verb: the core's table does not have it
        name, as_json = "", "--json" in argv
    if "deadline" in said:
        timeout = float(said["deadline"])
        refusal = Refusal("deadline", verb=name, timeout=timeout, longer=timeout * 2)
    else:
        refusal = Refusal("keeper_unavailable", reason="the keeper closed the connection")
    return _refuse(refusal, as_json, name)


def _say(stream: Any, text: str) -> None:
    """One line of text output: a page's (or an agent's) control characters never reach the
    terminal raw (``--json`` keeps them as JSON escapes instead)."""
    stream.write(printable(text) + "\n")


def _refuse(refusal: Refusal | dict[str, Any], as_json: bool, verb: str = "") -> int:
    frame = refusal.frame() if isinstance(refusal, Refusal) else refusal
    if as_json:
        _emit_json(frame, verb)
    else:
        _say(sys.stderr, render.refusal(frame, indent="  "))
    return exit_code(str(frame["code"]))


def _stdin_args(verb: Verb, args: dict[str, Any]) -> None:
    """``-`` as the text of fill/type or the script of eval reads it from stdin: typed
    secrets stay out of argv (and out of `ps`), and long values are not capped by it."""
    for name in verb.secret_args:
        if args.get(name) == "-":
            data = sys.stdin.buffer.read(protocol.MAX_ARG + 1)
            args[name] = data.decode("utf-8", "replace").removesuffix("\n")
            if len(data) > protocol.MAX_ARG:
                rest = len(sys.stdin.buffer.read())
                raise Refusal(
                    "too_large",
                    what=f"argument {name} (from stdin)",
                    size=len(data) + rest,
                    limit=protocol.MAX_ARG,
                    fix="pass a shorter value (put large data in a file the page fetches)",
                )


def _command(verb: Verb, args: dict[str, Any]) -> str:
    """``keys set cloud:steel api_key``: the verb and its words, secret ones left out."""
    words = [
        str(args[a.name])
        for a in verb.args
        if a.kind in ("pos", "opt") and a.type != "secret" and a.name in args
    ]
    return " ".join([verb.name, *words])


def _secret_args(verb: Verb, args: dict[str, Any]) -> None:
    """An argument of type ``secret`` (a key for ``bay keys set``) never comes from argv,
    where the process list and the shell history would show it: a word there is refused
    ``secret_on_argv`` before anything is sent; ``-`` reads it from stdin."""
    for a in verb.args:
        if a.type != "secret" or a.name not in args:
            continue
        if args[a.name] == "-":
            args[a.name] = _read_secret(a.name, _command(verb, args))
            continue
        del args[a.name]
        raise Refusal("secret_on_argv", verb=verb.name, arg=a.name, command=_command(verb, args))


def _read_secret(name: str, command: str) -> str:
    """A secret from a hidden prompt (stdin is a terminal) or from stdin (a pipe), one
    trailing newline dropped."""
    stdin = sys.stdin
    if stdin is not None and stdin.isatty():
        import getpass

        return getpass.getpass(f"bay {command}: {name} (hidden, Enter to finish): ")
    data = stdin.buffer.read(protocol.MAX_ARG + 1) if stdin is not None else b""
    if len(data) > protocol.MAX_ARG:
        raise Refusal(
            "too_large",
            what=f"{name} (from stdin)",
            size=len(data),
            limit=protocol.MAX_ARG,
            fix="pipe in only the value",
        )
    return data.decode("utf-8", "replace").removesuffix("\n").removesuffix("\r")


def _secret_wanted(verb: Verb, args: dict[str, Any], frame: dict[str, Any]) -> str | None:
    """The name of a ``secret`` argument the keeper answered ``secret_required`` for."""
    if frame.get("ok") or frame.get("code") != "secret_required":
        return None
    name = (frame.get("data") or {}).get("arg")
    wanted = [a.name for a in verb.args if a.name == name and a.type == "secret"]
    return wanted[0] if wanted and name not in args else None


def _check_sizes(args: dict[str, Any]) -> None:
    """A too-large argument (or all of them together) is refused here, before anything is
    sent."""
    total = sum(
        len(v.encode("utf-8", "surrogatepass"))
        for value in args.values()
        for v in (value if isinstance(value, list) else [value])
        if isinstance(v, str)
    )
    if total > protocol.MAX_ARG:
        raise Refusal(
            "too_large",
            what="the arguments together",
            size=total,
            limit=protocol.MAX_ARG,
            fix="pass shorter values (put large data in a file the page fetches)",
        )
    for name, value in args.items():
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, str) and len(v) * 4 > protocol.MAX_ARG:
                size = len(v.encode("utf-8", "surrogatepass"))
                if size > protocol.MAX_ARG:
                    raise Refusal(
                        "too_large",
                        what=f"argument {name}",
                        size=size,
                        limit=protocol.MAX_ARG,
                        fix="pass a shorter value (put large data in a file the page fetches)",
                    )


def _local_frame(verb: str, data: dict[str, Any]) -> dict[str, Any]:
    """The success shape for a verb the client answers itself (no profile acted on)."""
    return {
        "ok": True,
        "verb": verb,
        "session": identity.resolve(),
        "profile": None,
        "data": data,
    }


def _owner_only_here(verb: Verb, args: dict[str, Any]) -> None:
    """A verb the client runs itself (``install``, ``uninstall``) never reaches the keeper's
    gate: on a session socket (``BAY_SOCKET``) its owner-only calls are refused here, as the
    keeper would. Not a boundary (a program that can run ``bay`` can run pip): it tells an
    agent that the call is the human's."""
    if verb.scope != LOCAL or session_socket() is None:
        return
    condition = verb.owner_only_for(args)
    if condition is not None:
        raise Refusal(
            "owner_only",
            what=verb.owner_only_words(condition),
            command=verb.command_line(args),
            condition=condition,
        )


def _local(verb: str, args: dict[str, Any], as_json: bool) -> int | None:
    """Verbs (or actions) that never need a running keeper. On a session socket
    (``BAY_SOCKET``) the keeper's lifecycle is not the caller's: ``keeper start/stop/logs``
    go to the keeper as they are (which refuses them there), never handled here."""
    if verb == "keeper" and session_socket() is not None:
        return None
    if verb == "help":
        whole_environment()
        table = plugin_verbs(start=False)
        if args.get("verb"):
            text = help_text(args.get("verb"), table)
        else:
            from browserbay.distributions import missing_verbs
            from browserbay.manual import manual

            served = {name for name, v in table.items() if v.plugin}
            missing = {n for d in missing_verbs() for n in d.verbs if n not in served}
            text = manual((v for v in table.values() if v.plugin), missing).rstrip("\n")
        if as_json:
            _emit_json(_local_frame(verb, {"text": text}), verb)
        else:
            print(text)
        return EXIT_OK
    if verb == "keeper" and args.get("action") == "logs":
        paths = bay_paths()
        tail = client.log_tail(paths, 200)
        if as_json:
            _emit_json(_local_frame(verb, {"log": str(paths.keeper_log), "tail": tail}), verb)
        else:
            _say(sys.stdout, tail if tail else f"(no log yet at {paths.keeper_log})")
        return EXIT_OK
    if verb == "keeper" and args.get("action") in ("stop", "status"):
        try:
            conn = client.connect(autostart=False)
        except Refusal as r:
            if r.code != "keeper_unavailable":
                raise
            # Nothing to stop or report on; never start a keeper just to stop or ask it.
            socket = str(bay_paths().socket)
            if args["action"] == "stop":
                data: dict[str, Any] = {"stopping": False, "pid": None, "socket": socket}
                text = "no keeper is running"
            else:
                way_out = "bay keeper start   (or any verb: a keeper starts by itself)"
                data = {"running": False, "pid": None, "socket": socket, "way_out": way_out}
                text = f"no keeper is running (none listens on {socket})\n  way out: {way_out}"
            if as_json:
                _emit_json(_local_frame(verb, data), verb)
            else:
                print(text)
            return EXIT_OK
        conn.close()
    if verb == "keeper" and args.get("action") == "start":
        words = _set_words(args)
        keeper_args = tuple(a for w in words for a in ("--set", w))
        conn = client.connect(autostart=True, keeper_args=keeper_args)
        conn.close()
        if words:  # the keeper says whether it is the one started with them
            args["set"] = words
        else:
            args["action"] = "status"
    elif verb == "keeper" and args.get("set") is not None:
        raise Refusal("usage", detail="--set is for bay keeper start", verb="keeper")
    return None


def _needed(exc: UsageError) -> Distribution | None:
    """The browserbay plugin an unknown verb comes from, if one does (on the owner's channel:
    on a session socket the keeper's environment, not ours, has the plugins)."""
    if exc.unknown_verb is None or session_socket() is not None:
        return None
    from browserbay.distributions import providing_verb  # an unknown verb: off the hot path

    return providing_verb(exc.unknown_verb)


def _not_installed(exc: UsageError, dist: Distribution) -> Refusal:
    """Refused ``usage``: the verb's plugin is not installed here (the way out installs it)
    or not loaded by the running keeper (the way out restarts it)."""
    where = "in the running keeper" if dist.installed else "here"
    detail = f"'{exc.unknown_verb}' comes from the {dist.name} plugin, not installed {where}"
    if dist.installed:
        way_out = "bay keeper stop   (the next verb starts a keeper that loads it)"
    else:
        way_out = dist.install_hint()
    return Refusal("usage", detail=detail, verb=str(exc.unknown_verb), way_out=way_out)


def _set_words(args: dict[str, Any]) -> list[str]:
    """``bay keeper start --set NAME=VALUE ...`` as ``NAME=VALUE`` words. They go on the
    argv of a keeper started now (its own parser judges them: an unknown name or a bad value
    stops it at start, named in the refusal); the keeper then answers the start only if it is
    the one started with them (a keeper that ran already is refused ``usage``)."""
    if args.get("set") is None:
        return []
    words = [str(w).strip() for w in args.pop("set")]
    bad = next((w for w in words if "=" not in w), None)
    if bad is not None:
        raise Refusal(
            "usage", detail=f"--set takes NAME=VALUE (one setting each), not {bad!r}", verb="keeper"
        )
    return words


def plugin_verbs(*, start: bool) -> dict[str, Any]:
    """The verbs plugins add, as the keeper wrote them down at its start. Read only for a
    verb the core does not know; ``start`` starts the keeper when the file is missing."""
    from browserbay.verbs import BY_NAME, PLUGIN_VERBS_FILE, Verb

    if session_socket() is not None:
        return {**BY_NAME, **_keeper_plugin_verbs(quiet=not start)}
    paths = bay_paths()
    path = paths.runtime / PLUGIN_VERBS_FILE
    for attempt in (0, 1):
        try:
            # Only from a runtime dir of our own (one another user planted in /tmp could
            # hold any verb table); the keeper's socket check says why, below.
            if distrust(str(paths.runtime), directory=True) is not None:
                raise PermissionError
            with open(path, encoding="utf-8") as f:
                rows = protocol.loads(f.read())
            if rows.get("version") == __version__:
                extra = {r["name"]: Verb.from_row(r) for r in rows.get("verbs", [])}
                return {**BY_NAME, **extra}
        except (OSError, ValueError, KeyError):
            pass
        if attempt == 0 and start:
            try:
                client.connect().close()
            except Refusal as r:
                if r.code == "socket_untrusted":
                    raise
                break
    return dict(BY_NAME)


def _keeper_plugin_verbs(*, quiet: bool) -> dict[str, Any]:
    """On a session socket, the plugins' verbs as the keeper's own table lists them (``bay
    verbs``), asked over the socket: the owner's runtime directory, where the keeper writes
    them down, is not the agent's (in a sandbox it is not even there). ``quiet``: a socket
    that does not answer gives none (``bay help``) instead of its refusal."""
    from browserbay.verbs import Verb

    try:
        conn = client.connect()
    except Refusal:
        if quiet:
            return {}
        raise
    try:
        frame = conn.request("verbs", {}, identity.resolve(fixed=conn.fixed), 10.0)
    except (OSError, ValueError):  # cut as it answered: the verb is refused as unknown
        return {}
    finally:
        conn.close()
    data = frame.get("data") if frame.get("ok") else None
    rows = data.get("verbs") or [] if isinstance(data, dict) else []
    return {r["name"]: Verb.from_row(r) for r in rows if r.get("plugin")}


def _not_text(argv: list[str]) -> str | None:
    """A word of argv that is no UTF-8 text (bytes the shell passed through), as a usage
    error's detail: it can be neither sent nor echoed in a JSON answer."""
    for n, word in enumerate(argv, 1):
        try:
            word.encode("utf-8")
        except UnicodeEncodeError:
            raw = word.encode("utf-8", "surrogateescape")
            return f"argument {n} is not UTF-8 text ({raw!r})"
    return None


def run(argv: list[str]) -> int:
    as_json = "--json" in argv
    table = None
    bad = _not_text(argv)
    if bad is not None:
        return _refuse(Refusal("usage", detail=bad, verb=""), as_json)
    try:
        try:
            verb, args, options = parse(argv)
        except UsageError as exc:
            if exc.unknown_verb is None:
                raise
            whole_environment()  # a verb the core does not know: a plugin's, or none
            dist = _needed(exc)
            if dist is not None and not dist.installed:  # no keeper of ours could have it
                return _refuse(_not_installed(exc, dist), as_json)
            try:
                table = plugin_verbs(start=True)
            except Refusal as r:
                return _refuse(r, as_json)
            verb, args, options = parse(argv, table)
    except UsageError as exc:
        whole_environment()  # a mistake: what would have worked may be a plugin's
        dist = _needed(exc)
        if dist is not None:
            return _refuse(_not_installed(exc, dist), as_json)
        return _refuse(Refusal("usage", detail=str(exc), verb=exc.verb or ""), as_json)
    if options.get("version") and options.get("usage"):
        if options.get("json"):
            _emit_json(_local_frame("help", {"version": __version__}), "help")
        else:
            print(f"bay {__version__}")
        return EXIT_OK
    if options.get("help"):
        whole_environment()  # the plugins' verbs, and those not installed here
        if options.get("usage"):  # `bay --help`: bay's usage, plugin verbs as the keeper has them
            table = plugin_verbs(start=False)
        text = help_text(None if options.get("usage") else verb.name, table)
        if options.get("json"):  # --json prints exactly one JSON object, help included
            _emit_json(_local_frame("help", {"verb": verb.name, "text": text}), "help")
        else:
            print(text)
        return EXIT_OK
    as_json = bool(options.get("json"))
    given = options.get("timeout")  # 0 is out of range, not "the default"
    timeout = DEFAULT_TIMEOUT if given is None else float(given)
    if not 0 < timeout <= protocol.MAX_TIMEOUT:
        detail = f"--timeout must be in (0, {protocol.MAX_TIMEOUT:g}]"
        return _refuse(Refusal("usage", detail=detail, verb=verb.name), as_json)
    try:
        _owner_only_here(verb, args)
        if verb.name in OFF_HOT_PATH:
            whole_environment()
            from browserbay_cli.extras import run_extra  # heavier imports: off the hot path

            reply = run_extra(verb.name, args, options)
            if reply is None:
                return EXIT_OK
            if as_json:
                _emit_json(_local_frame(verb.name, reply.data), verb.name)
            else:
                print(reply.text)
            return reply.code
        local = _local(verb.name, args, as_json)
        if local is not None:
            return local
        _secret_args(verb, args)
        _stdin_args(verb, args)
        _check_sizes(args)
        args = verb.with_local_paths(args)  # a file of ours (`bay screenshot x.png`): our cwd
    except Refusal as r:
        return _refuse(r, as_json, verb.name)
    if verb.scope == LOCAL:  # pragma: no cover - every local verb is handled above
        return EXIT_USAGE
    # Who is asking is resolved after the hello: a session socket names its session.
    asking = {"named": options.get("session"), "profile": options.get("profile")}
    frame = client.call(verb.name, args, **asking, timeout=timeout, extra={"road": "cli"}, row=verb)
    secret = _secret_wanted(verb, args, frame)
    if secret is not None:  # the keeper asked for a secret argument: read it, ask again
        try:
            args[secret] = _read_secret(secret, _command(verb, args))
        except Refusal as r:
            return _refuse(r, as_json, verb.name)
        frame = client.call(
            verb.name, args, **asking, timeout=timeout, extra={"road": "cli"}, row=verb
        )
    return show(frame, verb.name, as_json, footed=verb.scope != KEEPER)


def main() -> None:
    try:
        code = run(sys.argv[1:])
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    if "threading" not in sys.modules:
        # Nothing is left to finish: the answer is out, the client writes files unbuffered
        # (browserbay.transfer) and no thread or atexit hook runs on this path. Skipping the
        # interpreter's teardown is ~13% of a warm command's CPU (4.7 of 35 ms, loaded).
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    main()
