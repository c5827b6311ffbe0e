"""The client's heavier local verbs, imported only when one of them runs (never on the hot
path): ``bay mcp`` (the MCP server, from the browserbay-mcp plugin), ``bay install`` /
``bay uninstall`` (pip in bay's own environment, the way llm and datasette do it),
``bay doctor`` and ``bay install-skill``.

Each returns its answer (:class:`Reply`) for :mod:`browserbay_cli.main` to print, as it prints
every other answer: this module never imports the hot path back."""

from __future__ import annotations

import importlib
import importlib.util
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from browserbay import client, identity, procfs
from browserbay.distributions import BY_NAME
from browserbay.plugins import ENTRY_POINT_GROUP
from browserbay.refusals import EXIT_OK, Refusal
from browserbay_cli.doctor import run_doctor
from browserbay_cli.skill import install_skill

#: Distributions `bay uninstall` will not remove: without them there is no `bay`.
PROTECTED = frozenset({"browserbay", "browserbay-core", "browserbay-cli"})


@dataclass(frozen=True)
class Reply:
    """A local verb's answer: ``data`` for ``--json``, ``text`` for the terminal, the exit
    code."""

    data: dict[str, Any]
    text: str
    code: int = EXIT_OK


#: A local verb's handler: the parsed arguments and global options in, its answer out (None
#: when it wrote its own output: ``bay mcp`` speaks MCP on stdout until the client hangs up).
Handler = Callable[[dict[str, Any], dict[str, Any]], Reply | None]


def _mcp(args: dict[str, Any], options: dict[str, Any]) -> None:
    mcp(options.get("session"), args.get("tools"))


def _doctor(args: dict[str, Any], options: dict[str, Any]) -> Reply:
    return Reply(*run_doctor())


def _install_skill(args: dict[str, Any], options: dict[str, Any]) -> Reply:
    return Reply(*install_skill(args))


def _install(args: dict[str, Any], options: dict[str, Any]) -> Reply:
    dists = [str(d) for d in args["distributions"]]
    upgrade, no_deps = bool(args.get("upgrade")), bool(args.get("no_deps"))
    return Reply(*install(dists, upgrade=upgrade, no_deps=no_deps, quiet=bool(options.get("json"))))


def _uninstall(args: dict[str, Any], options: dict[str, Any]) -> Reply:
    dists = [str(d) for d in args["distributions"]]
    return Reply(*uninstall(dists, quiet=bool(options.get("json"))))


#: The handler of each local verb of the table that runs here (every one but ``help``, which
#: stays on the hot path); a test holds it to the table and to ``main.OFF_HOT_PATH``.
HANDLERS: dict[str, Handler] = {
    "mcp": _mcp,
    "doctor": _doctor,
    "install-skill": _install_skill,
    "install": _install,
    "uninstall": _uninstall,
}


def run_extra(verb: str, args: dict[str, Any], options: dict[str, Any]) -> Reply | None:
    """Run one of the heavier local verbs (see :data:`HANDLERS`)."""
    return HANDLERS[verb](args, options)


# -- mcp ----------------------------------------------------------------------------------


def mcp(session: str | None, tools: str | None = None) -> None:
    """Serve MCP on stdin/stdout until the client hangs up, its tools those of the
    comma-separated profiles ``tools`` (default: core)."""
    try:
        from browserbay_mcp.server import main as serve
    except ImportError as exc:
        raise Refusal(
            "usage",
            detail=f"bay mcp needs the browserbay-mcp plugin, which is not installed here "
            f"({exc.name or exc} cannot be imported)",
            verb="mcp",
            way_out=BY_NAME["browserbay-mcp"].install_hint(),
        ) from None
    serve(session, tools)


# -- install / uninstall --------------------------------------------------------------------


def installer(action: str) -> tuple[list[str], str]:
    """The command that installs into *this* Python's environment: ``uv pip`` when uv is on
    PATH (a uv-made venv has no pip), else ``python -m pip``."""
    uv = shutil.which("uv")
    if uv:
        return [uv, "pip", action, "--python", sys.executable], "uv"
    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip", action, *(["-y"] if action == "uninstall" else [])], (
            "pip"
        )
    raise Refusal(
        "install_failed",
        verb=action,
        what="plugins",
        reason=f"neither uv nor pip is available to {sys.executable}",
        fix=f"install uv (python3 -m pip install --user uv) or pip into {sys.prefix}, then "
        "run it again",
    )


def _plugins_now() -> dict[str, tuple[str | None, str | None]]:
    """Entry point name -> (distribution, version), read afresh from the environment."""
    importlib.invalidate_caches()
    return {
        ep.name: (ep.dist.name if ep.dist else None, ep.dist.version if ep.dist else None)
        for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)
    }


def _run(cmd: list[str], verb: str, what: str, quiet: bool) -> None:
    if quiet:
        captured = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        code, output = captured.returncode, (captured.stdout + captured.stderr).strip()
    else:  # the installer's progress goes to stderr: stdout stays the answer
        code = subprocess.run(cmd, stdout=sys.stderr.fileno(), stdin=subprocess.DEVNULL).returncode
        output = ""
    if code != 0:
        last = output.splitlines()[-1] if output else "see its output above"
        raise Refusal(
            "install_failed",
            verb=verb,
            what=what,
            reason=f"{cmd[0].rsplit('/', 1)[-1]} exited {code}: {last}",
            fix="check the name or path (and the network, for a package index), then run it again",
            output=output[-4000:],
        )


def _listing(names: set[str]) -> list[dict[str, Any]]:
    """``bay plugins`` rows of the named plugins: each imported and checked against the hook
    specifications, as a keeper loads it."""
    import pluggy

    from browserbay import hookspecs

    rows = []
    for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        if ep.name not in names:
            continue
        dist = ep.dist.name if ep.dist else None
        pm = pluggy.PluginManager(hookspecs.PROJECT)
        pm.add_hookspecs(hookspecs)
        try:
            plugin = ep.load()
            pm.register(plugin, name=ep.name)
            pm.check_pending()
        except Exception as exc:
            raise Refusal(
                "install_failed",
                verb="install",
                what=str(dist or ep.name),
                reason=f"it is installed, but its plugin {ep.name!r} does not load: {exc!r}",
                fix=f"bay uninstall {dist or ep.name}   (or fix it and install it again)",
            ) from None
        hooks = sorted(h.name for h in pm.get_hookcallers(plugin) or ())
        version = ep.dist.version if ep.dist else None
        rows.append(
            {"name": ep.name, "distribution": dist, "version": version, "hooks": hooks}
            | {"builtin": False}
        )
    return rows


def reload_keeper() -> str:
    """A running keeper loads plugins at its start. Stop it when it runs no browser (the next
    command starts one that loads the change); leave a busy one be and say so."""
    try:
        conn = client.connect(autostart=False)
    except (Refusal, OSError):
        return "not running"
    try:
        me = identity.resolve()
        status = conn.request("keeper", {"action": "status"}, me, 10.0)
        browsers = (status.get("data") or {}).get("browsers") or []
        if browsers:
            return f"busy ({len(browsers)} browser(s) running): `bay keeper stop` to load it"
        answer = conn.request("keeper", {"action": "stop"}, me, 10.0)
        pid = (answer.get("data") or {}).get("pid")
    finally:
        conn.close()
    end = time.monotonic() + 15
    while pid and procfs.alive(pid) and time.monotonic() < end:
        time.sleep(0.05)
    return "stopped"


def _keeper_line(state: str) -> str:
    if state == "stopped":
        return "keeper: stopped; the next command starts one with this change"
    if state == "not running":
        return "keeper: not running; the next command starts one with this change"
    return f"keeper: {state}"


def install(
    dists: list[str], *, upgrade: bool = False, no_deps: bool = False, quiet: bool = False
) -> tuple[dict[str, Any], str]:
    cmd, tool = installer("install")
    cmd += [*(["--upgrade"] if upgrade else []), *(["--no-deps"] if no_deps else []), *dists]
    before = _plugins_now()
    _run(cmd, "install", ", ".join(dists), quiet)
    after = _plugins_now()
    changed = {name for name, row in after.items() if before.get(name) != row}
    rows = _listing(changed)
    keeper = reload_keeper() if changed else "unchanged"
    lines = [
        f"{r['name']:<16} {r['distribution'] or '-':<26} {r['version'] or '-':<8} "
        + (", ".join(r["hooks"]) or "(no hooks)")
        for r in rows
    ]
    if not rows:
        lines.append(f"installed {', '.join(dists)}; it adds or changes no browserbay plugin")
    lines.append(_keeper_line(keeper))
    data = {"installed": rows, "installer": tool, "keeper": keeper, "python": sys.executable}
    return data, "\n".join(lines)


def uninstall(dists: list[str], *, quiet: bool = False) -> tuple[dict[str, Any], str]:
    core = sorted(d for d in dists if d.lower().replace("_", "-") in PROTECTED)
    if core:
        raise Refusal(
            "usage",
            detail=f"bay uninstall will not remove {', '.join(core)}: bay itself is in it",
            verb="uninstall",
            way_out="bay plugins   (lists what can be removed: the plugins' distributions)",
        )
    cmd, tool = installer("uninstall")
    before = _plugins_now()
    _run([*cmd, *dists], "uninstall", ", ".join(dists), quiet)
    after = _plugins_now()
    removed = [
        {"name": name, "distribution": row[0], "version": row[1]}
        for name, row in sorted(before.items())
        if after.get(name) != row
    ]
    keeper = reload_keeper() if removed else "unchanged"
    lines = [f"removed plugin {r['name']} ({r['distribution']} {r['version']})" for r in removed]
    if not removed:
        lines.append(f"uninstalled {', '.join(dists)}; no browserbay plugin went with it")
    lines.append(_keeper_line(keeper))
    data = {"removed": removed, "installer": tool, "keeper": keeper, "python": sys.executable}
    return data, "\n".join(lines)
