"""``bay keys``: list, set, clear and test provider keys — a built-in plugin verb.

``bay keys list`` shows every integration with its source (``user``, ``cluster`` or
``none``), a masked view of each secret (``••••`` + last 4), what is missing and the last
test verdict with its date. ``bay keys set <id> <field>`` takes the value from stdin or a
hidden prompt (the thin client refuses one on argv: ``secret_on_argv``). ``bay keys clear
<id>`` drops the user's values; precedence then lands where it lands. ``bay keys test <id>``
runs the row's test (see :mod:`browserbay.keytest`).
"""

from __future__ import annotations

import functools
import json
import os
import time
from pathlib import Path
from typing import Any

import anyio

from browserbay.hookspecs import hookimpl
from browserbay.model import KeyAdmin, PluginVerb, VerbContext
from browserbay.refusals import Refusal
from browserbay.verbs import PLUGIN, Arg, Verb

ACTIONS = ("list", "set", "clear", "test")

KEYS_VERB = Verb(
    "keys",
    PLUGIN,
    "Provider keys: list, set <id> <field>, clear <id>, test <id>. A value is never "
    "taken from the command line: pipe it in or type it at the hidden prompt.",
    (
        Arg("action", "pos", "list, set, clear or test", choices=ACTIONS),
        Arg("integration", "opt", "an integration id (bay keys list shows them all)"),
        Arg("field", "opt", "the field to set (set only)"),
        Arg(
            "value",
            "opt",
            "never here: read from stdin, or typed at a hidden prompt",
            type="secret",
        ),
    ),
    mutates=True,
    secret_args=("value",),
    # Listing where each key comes from (never a value) stays open to every session: it is
    # how an agent sees why a provider is not runnable. Changing or spending a key is not.
    owner_only=("action=set", "action=clear", "action=test"),
    example='printf %s "$STEEL_API_KEY" | bay keys set cloud:steel api_key',
)


def _admin(ctx: VerbContext) -> KeyAdmin:
    if ctx.keys is None:  # pragma: no cover - the keeper always passes it
        raise RuntimeError("this keeper passes no keys to plugin verbs")
    return ctx.keys


def _verdict_file(ctx: VerbContext) -> Path:
    return ctx.state_dir / "keys" / "verdicts.json"


def _verdicts(ctx: VerbContext) -> dict[str, Any]:
    try:
        value = json.loads(_verdict_file(ctx).read_text())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _save_verdict(ctx: VerbContext, row: dict[str, Any]) -> None:
    """The verdicts (never a value) in the state dir, written atomically and privately."""
    path = _verdict_file(ctx)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    verdicts = _verdicts(ctx)
    verdicts[row["integration"]] = row
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(verdicts, f)
    os.replace(tmp, path)


def _need(ctx: VerbContext, name: str) -> str:
    value = ctx.args.get(name)
    if not value:
        action = ctx.args["action"]
        usage = {
            "set": "bay keys set <integration> <field>",
            "clear": "bay keys clear <integration>",
            "test": "bay keys test <integration>",
        }[action]
        raise Refusal("usage", detail=f"'keys {action}' needs <{name}>: {usage}", verb="keys")
    return str(value)


def _when(at: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(at)) if at else ""


def _line(view: dict[str, Any], verdict: dict[str, Any] | None) -> str:
    parts = []
    for f in view["fields"]:
        if f["set"]:
            pinned = f" (the key goes only to {f['pinned']})" if f.get("pinned") else ""
            parts.append(f"{f['name']} {f['view']} [{f['from']}]{pinned}")
        elif f["required"]:
            parts.append(f"{f['name']} MISSING")
    text = f"{view['id']:<19} {view['source']:<8} " + (" · ".join(parts) or "(nothing set)")
    if view["missing"]:
        text += f"  → bay keys set {view['id']} {view['missing'][0]}"
    for problem in view["problems"]:
        text += f"\n{'':<28}problem: {problem}"
    if verdict:
        state = "ok" if verdict["ok"] else "FAILED"
        text += f"\n{'':<28}last test: {state} {_when(verdict['at'])} ({verdict['detail']})"
    return text


async def _list(ctx: VerbContext) -> tuple[dict[str, Any], str]:
    admin = _admin(ctx)
    verdicts = _verdicts(ctx)

    only = ctx.args.get("integration")

    def views() -> list[dict[str, Any]]:
        return [admin.view(i) for i in ([str(only)] if only else admin.ids())]

    rows = await anyio.to_thread.run_sync(views)
    for row in rows:
        row["last_test"] = verdicts.get(row["id"])
    sources = await anyio.to_thread.run_sync(admin.sources)
    src = " · ".join(
        f"{s['name']} ({s['precedence']}"
        + ("" if s["available"] else f", unavailable: {s['problem']}")
        + ")"
        for s in sources
    )
    lines = [f"key sources: {src or 'none installed'}"]
    lines += [f"  {s['name']}: {s['protection']}" for s in sources if s.get("protection")]
    lines.append("")
    lines += [_line(r, r["last_test"]) for r in rows] or ["(no integration is installed)"]
    return {"sources": sources, "integrations": rows}, "\n".join(lines)


async def _set(ctx: VerbContext) -> tuple[dict[str, Any], str]:
    admin = _admin(ctx)
    integration, field = _need(ctx, "integration"), _need(ctx, "field")
    value = ctx.args.get("value")
    if not isinstance(value, str):
        raise Refusal(
            "secret_required",
            verb="keys",
            arg="value",
            command=f"keys set {integration} {field}",
        )
    stored = await anyio.to_thread.run_sync(admin.set, integration, field, value)
    view = await anyio.to_thread.run_sync(admin.view, integration)
    data = {
        "integration": integration,
        "field": field,
        "store": stored.store,
        "view": stored.view,
        "source": view["source"],
        "cleared": list(stored.cleared),
        "pinned": stored.pinned,
    }
    text = f"stored {integration} {field} {stored.view} in {stored.store}"
    if stored.pinned:
        text += f", sent only to {stored.pinned}"
    text += f"; source now: {view['source']}"
    if stored.cleared:
        names = ", ".join(stored.cleared)
        text += (
            f"\n{field} moved to another host, so your {names} was dropped (a key is only sent "
            f"to the host it was stored for): bay keys set {integration} {stored.cleared[0]}"
        )
    return data, text


async def _clear(ctx: VerbContext) -> tuple[dict[str, Any], str]:
    admin = _admin(ctx)
    integration = _need(ctx, "integration")
    if ctx.args.get("field"):
        raise Refusal(
            "usage",
            detail="'keys clear' drops all of your values of one integration; give no field",
            verb="keys",
        )
    cleared = await anyio.to_thread.run_sync(admin.clear, integration)
    view = await anyio.to_thread.run_sync(admin.view, integration)
    where = ", ".join(cleared) if cleared else "no store (you had no values set)"
    text = f"cleared your {integration} values from {where}; source now: {view['source']}"
    return {"integration": integration, "cleared": cleared, "source": view["source"]}, text


async def _test(ctx: VerbContext) -> tuple[dict[str, Any], str]:
    admin = _admin(ctx)
    integration = _need(ctx, "integration")
    verdict = await anyio.to_thread.run_sync(functools.partial(admin.test, integration))
    row = verdict.as_row()
    await anyio.to_thread.run_sync(_save_verdict, ctx, row)
    if not verdict.ok:
        raise Refusal(
            "key_test_failed",
            integration=integration,
            kind=verdict.kind,
            reason=verdict.detail,
            host=verdict.host,
            fix=verdict.fix or "bay keys list",
        )
    return row, f"{integration}: ok ({verdict.kind}): {verdict.detail}"


async def keys(ctx: VerbContext) -> tuple[dict[str, Any], str]:
    """The ``keys`` verb's handler."""
    action = ctx.args["action"]
    if action != "set" and ctx.args.get("value") is not None:
        raise Refusal("usage", detail=f"'keys {action}' takes no value", verb="keys")
    handler = {"list": _list, "set": _set, "clear": _clear, "test": _test}[action]
    return await handler(ctx)


@hookimpl
def bay_verbs() -> list[PluginVerb]:
    return [PluginVerb(KEYS_VERB, keys, lease_free=True)]
