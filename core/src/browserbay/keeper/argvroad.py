"""The CLI's warm road: ``bay`` sends the keeper its argv and the few facts of its own
environment a verb's frame is made of (:data:`browserbay.protocol.ARGV_FACTS`, its shell's
session), and the keeper parses the argv with its own verb table, runs the very frame the
whole client would have sent (:meth:`Keeper.handle`: the same channel gate, guards, audit)
and answers the text ``bay`` prints (:func:`browserbay.render.printed`, the rule the whole
client prints by). The warm client (:mod:`browserbay_cli.hot`) then imports neither the
verb table, the parser, the refusals nor the renderer: ~2 ms of CPU of a warm command's ~14
(bench/RESULTS-perf.md).

Whatever needs the client's own side is answered ``whole`` before anything runs, and the
whole client (:mod:`browserbay_cli.main`) does it as before: a usage mistake (its hints
look at what is installed where the client runs), ``--help``/``--version``, the verbs the
client answers itself (``help``, ``keeper``, the local ones), files (paths are the client's,
bytes move through the connection), secrets and ``-`` (stdin), an argument too large, a bad
``--timeout``. An answer longer than the client may print whole goes back as the frame
(``answer``): its full text is written into a file of the client's. Only on the owner's
channel: a session socket's client always sends its frames itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from browserbay import identity, protocol, render
from browserbay.argv import UsageError, parse
from browserbay.keeper.channels import Channel
from browserbay.keeper.files import Carried
from browserbay.scrub import scrub_frame
from browserbay.verbs import DEFAULT_TIMEOUT, KEEPER, LOCAL, PATH, Verb

if TYPE_CHECKING:  # the daemon imports this module before the keeper's (bind_first)
    from browserbay.keeper.keeper import Keeper

#: Verbs the whole client answers itself (``browserbay_cli.main._local``), beside LOCAL ones.
CLIENT_SIDE = frozenset({"help", "keeper"})


class _Long(Exception):
    """An answer too long to print whole: the client writes its full text into a file."""


def _uncut(text: str, verb: str) -> tuple[str, dict[str, Any] | None]:
    if len(text) > render.MAX_OUTPUT:
        raise _Long
    return text, None


class Asked:
    """An argv frame made into the verb frame the whole client would have sent."""

    def __init__(self, frame: dict[str, Any], verb: Verb, as_json: bool, full: bool) -> None:
        self.frame = frame
        self.verb = verb
        self.as_json = as_json
        self.full = full
        """``BAY_FOOTER=full``: the footer's whole line."""


def made(frame: dict[str, Any], table: dict[str, Verb], channel: Channel) -> Asked | str:
    """The verb frame for ``frame``'s argv, or why the whole client must run it (nothing
    has run then)."""
    if not channel.is_owner:
        return "a session socket's client sends its frames itself"
    argv, facts = frame.get("argv"), frame.get("facts")
    if not isinstance(argv, list) or not all(isinstance(w, str) for w in argv):
        return "argv must be a list of strings"
    env = facts.get("env") if isinstance(facts, dict) else None
    sid = facts.get("sid") if isinstance(facts, dict) else None
    if not isinstance(env, dict) or not isinstance(sid, int) or isinstance(sid, bool):
        return "facts must hold env and sid"
    env = {k: v for k, v in env.items() if k in protocol.ARGV_FACTS and isinstance(v, str)}
    try:
        verb, args, options = parse(argv, table)
    except UsageError:
        return "usage"  # said by the client: what would have worked may be its plugin's
    if options.get("help") or options.get("version"):
        return "help"
    if verb.scope == LOCAL or verb.name in CLIENT_SIDE:
        return "the client's own verb"
    # A secret argument is read by the client (a hidden prompt or stdin), given or not: the
    # keeper asks for it (secret_required) and the client asks again with it.
    paths = any(PATH in a.types for a in verb.args if a.name in args)
    if verb.moves_files or paths or any("secret" in a.types for a in verb.args):
        return "files or secrets"
    if any(args.get(name) == "-" for name in verb.secret_args):
        return "stdin"
    words = [v for value in args.values() for v in (value if isinstance(value, list) else [value])]
    if sum(len(w.encode("utf-8", "surrogatepass")) for w in words if isinstance(w, str)) > (
        protocol.MAX_ARG
    ):
        return "too large"
    timeout = float(options.get("timeout") or DEFAULT_TIMEOUT)
    if not 0 < timeout <= 3600:
        return "timeout"
    named = options.get("session")
    shell = identity.shell_session(sid)
    asked: dict[str, Any] = {"id": frame.get("id"), "verb": verb.name, "args": args}
    asked["session"] = identity.resolve(named, env=env, fallback=shell)
    asked["timeout"] = timeout
    asked["progress"] = True
    asked.update(identity.context(options.get("profile"), named, env=env, shell=shell))
    asked["road"] = "cli"
    return Asked(asked, verb, bool(options.get("json")), env.get("BAY_FOOTER") == "full")


async def answer(
    frame: dict[str, Any], channel: Channel, files: Carried, keeper: Keeper
) -> dict[str, Any]:
    """The argv frame's answer: ``printed`` (stdout, stderr, exit code), ``answer`` (the
    verb's frame, too long to print whole: the client cuts it), or ``whole`` (the reason
    the whole client runs it; nothing ran)."""
    rid = frame.get("id")
    asked = made(frame, keeper.route.table, channel)
    if isinstance(asked, str):
        return {"id": rid, "whole": asked}
    verb = asked.verb
    said = await keeper.handle(asked.frame, channel, files)
    # Scrubbed as the whole client would have received it, before it is rendered: a secret
    # value inside the printed text (JSON-escaped twice under --json) is no longer the
    # daemon's exact match.
    raw = protocol.encode(said)
    clean = scrub_frame(raw)
    if clean != raw:
        said = protocol.decode(clean)
    footed = verb.scope != KEEPER
    try:
        out, err, code = render.printed(
            said, verb.name, as_json=asked.as_json, footed=footed, full=asked.full, cut=_uncut
        )
    except _Long:
        return {
            "id": rid,
            "answer": said,
            "verb": verb.name,
            "json": asked.as_json,
            "footed": footed,
        }
    return {"id": rid, "printed": {"out": out, "err": err, "code": code}}
