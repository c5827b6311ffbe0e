"""The ``bay window`` actions, on the book of windows (:mod:`browserbay_local_window.book`)."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import shutil
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from browserbay import procfs, sandbox
from browserbay.model import VerbContext
from browserbay.refusals import Refusal
from browserbay.urls import normalize_url
from browserbay_local_window import chromium, procs
from browserbay_local_window.book import X_TIMEOUT, Window, Windows, toplevels, windows_of
from browserbay_local_window.display import Display
from browserbay_local_window.doctor import probe_matrix
from browserbay_local_window.live import WindowLive
from browserbay_local_window.names import ACTIONS as ACTION_NAMES
from browserbay_local_window.tree import render_tree
from browserbay_local_window.walkerclient import WalkerError
from browserbay_local_window.x11 import KeyNameError, TopLevel, XError, parse_chord

log = logging.getLogger("browserbay.local_window")

WINDOW_WAIT = 10.0
CLOSE_GRACE = 5.0
#: Characters typed through XTEST per X call (a cut verb stops within one run).
TYPE_RUN = 16
_REF = re.compile(r"^@?(e\d+)$")
_AT = re.compile(r"^\s*(-?\d+)\s*,\s*(-?\d+)\s*$")
#: Action names a click by reference prefers, in order; else the first that is not a menu.
CLICK_ACTIONS = ("click", "press", "jump", "activate", "toggle", "open", "dodefault")


def left(ctx: VerbContext, cap: float) -> float:
    """Seconds left before the verb's deadline (less a margin for the answer), at most cap."""
    return max(0.2, min(cap, ctx.deadline - time.monotonic() - 0.5))


# -- the actions ---------------------------------------------------------------------------


async def act_open(book: Windows, ctx: VerbContext) -> tuple[dict[str, Any], str]:
    command = [str(a) for a in ctx.args.get("command") or ()]
    if not command:
        raise Refusal(
            "usage",
            detail="say what to start: bay window open -- <command> [args...]",
            verb="window",
        )
    display = await book.ensure_own(ctx)
    program = shutil.which(command[0], path=display.env.get("PATH"))
    if program is None:
        await book.stop_own_if_unused(ctx)
        raise Refusal(
            "action_failed",
            verb="window open",
            reason=f"{command[0]!r} was not found on PATH",
        )
    return await _start(book, ctx, display, [program, *command[1:]], "app", display.env)


async def act_browser(book: Windows, ctx: VerbContext) -> tuple[dict[str, Any], str]:
    url = normalize_url(str(ctx.args.get("handle") or "about:blank"))
    binary = chromium.find()
    if binary is None:
        raise Refusal(
            "display_unavailable",
            reason="no Chromium was found for bay window browser",
            fix=chromium.INSTALL,
        )
    display = await book.ensure_own(ctx)
    assert display.home is not None
    profile = display.home / f"chromium-{secrets.token_hex(4)}"
    profile.mkdir(mode=0o700)
    width, height = (int(v) for v in book.settings.screen.split("x")[:2])
    await anyio.to_thread.run_sync(sandbox.state)  # the probe runs once, off the loop
    argv = chromium.argv(binary, profile, url, (width, height))
    data, text = await _start(book, ctx, display, argv, "browser", chromium.env(display.env))
    book.windows[data["handle"]].url = url
    data["url"] = url
    return data, text


async def _start(
    book: Windows,
    ctx: VerbContext,
    display: Display,
    argv: list[str],
    kind: str,
    env: dict[str, str],
) -> tuple[dict[str, Any], str]:
    cwd = str(display.home) if display.home is not None else None
    proc = await procs.spawn(argv, env, f"window app {Path(argv[0]).name}", cwd=cwd)
    window = Window(
        handle=book.new_handle(),
        display=display,
        program=Path(argv[0]).name,
        kind=kind,
        proc=proc,
        pid=proc.pid,
    )
    book.windows[window.handle] = window
    book.hold(window, ctx, WindowLive(book, window))
    main: TopLevel | None = None
    end = time.monotonic() + left(ctx, WINDOW_WAIT)
    while time.monotonic() < end and proc.returncode is None:
        main = await book.main_window(window)
        if main is not None and main.viewable:
            break
        await anyio.sleep(0.05)
    if proc.returncode is not None:
        book.drop(window, f"its application exited (code {proc.returncode})", ctx)
        procs.LIVE.pop(proc.pid, None)
        await book.stop_own_if_unused(ctx)
        raise Refusal(
            "action_failed",
            verb="window open",
            reason=f"{window.program} exited with code {proc.returncode} before showing a window",
        )
    data = _row(window, main, ctx)
    shown = f"“{main.title}”" if main is not None and main.title else "(no window shown yet)"
    return data, f"{window.handle}  {window.program}  {shown}  on {display.label}"


def _row(window: Window, main: TopLevel | None, ctx: VerbContext) -> dict[str, Any]:
    return {
        "handle": window.handle,
        "kind": window.kind,
        "program": window.program,
        "pid": window.pid,
        "display": window.display.name,
        "desktop": window.desktop,
        "title": main.title if main is not None else None,
        "geometry": [main.x, main.y, main.width, main.height] if main is not None else None,
        "holder": window.holder,
        "mine": window.holder == ctx.session.id,
        "input": "user" if window.lease is not None and window.lease.pause_info() else "agent",
        "url": window.url,
    }


def _in_reach(window: Window, ctx: VerbContext) -> bool:
    """On a session socket (an agent's channel, its sandbox's only way out) a session sees
    the windows it holds and free ones of ours, never one of the human's desktop it was not
    handed (one of them may be a terminal) nor another session's; on the owner's channel,
    every window."""
    if ctx.channel_session is None or window.holder == ctx.session.id:
        return True
    return window.holder is None and not window.desktop


async def act_list(book: Windows, ctx: VerbContext) -> tuple[dict[str, Any], str]:
    await book.reap(ctx)
    desk = book.desktop()
    if desk is not None and ctx.channel_session is None:
        await _discover_desktop(book, desk)
    rows = []
    for window in [w for w in book.windows.values() if _in_reach(w, ctx)]:
        try:
            main = await book.main_window(window)
        except XError:
            main = None
        rows.append(_row(window, main, ctx))
    lines = [
        f"{'*' if r['mine'] else ' '} {r['handle']:<4} {r['program']:<14} "
        f"{(r['title'] or '(no window)')[:50]:<50} {r['display']}"
        + ("  [your desktop]" if r["desktop"] else "")
        + (f"  held by {r['holder']}" if r["holder"] and not r["mine"] else "")
        + ("  free" if not r["holder"] else "")
        for r in rows
    ]
    data: dict[str, Any] = {
        "windows": rows,
        "displays": {
            "ours": book.own.name if book.own is not None else None,
            "processes": {w: p.pid for w, p in book.own.children} if book.own else {},
            "desktop": desk.name if desk is not None else None,
            "desktop_enabled": book.settings.desktop,
        },
    }
    text = "\n".join(lines) if lines else "(no windows: bay window open -- <command>)"
    return data, text


async def _discover_desktop(book: Windows, desk: Display) -> None:
    try:
        tops = await desk.x.run(X_TIMEOUT, toplevels)
    except XError as exc:
        log.info("desktop %s not readable: %s", desk.name, exc.reason)
        return
    known = {w.xid for w in book.windows.values() if w.desktop}
    for top in tops:
        if top.xid in known or not top.viewable or top.width < 2 or top.height < 2:
            continue
        handle = book.new_handle(desktop=True)
        book.windows[handle] = Window(
            handle=handle,
            display=desk,
            program=(top.title or "window")[:30],
            kind="desktop",
            pid=top.pid,
            xid=top.xid,
        )


async def act_attach(book: Windows, ctx: VerbContext) -> tuple[dict[str, Any], str]:
    await book.reap(ctx)
    window = book.lookup(ctx.args.get("handle"), ctx, held=False)
    if window.desktop and window.holder != ctx.session.id and ctx.channel_session is not None:
        raise Refusal(
            "owner_only",
            what=f"window attach {window.handle} (a window of the human's desktop)",
            command=f"bay window attach {window.handle} --session {ctx.session.id}",
            condition="a desktop window",
        )
    if window.holder not in (None, ctx.session.id):
        raise Refusal(
            "not_your_window",
            window=window.handle,
            held="held by another session",
            holder=window.holder,
        )
    book.hold(window, ctx, WindowLive(book, window))
    return _row(window, None, ctx), f"{window.handle} is yours"


async def act_detach(book: Windows, ctx: VerbContext) -> tuple[dict[str, Any], str]:
    window = book.lookup(ctx.args.get("handle"), ctx)
    book.let_go(window, ctx)
    window.holder = None
    window.refs.clear()
    return _row(
        window, None, ctx
    ), f"{window.handle} detached (it keeps running; bay window attach {window.handle})"


async def act_close(book: Windows, ctx: VerbContext) -> tuple[dict[str, Any], str]:
    await book.reap(ctx)
    window = book.lookup(ctx.args.get("handle"), ctx)
    if window.desktop:
        book.drop(window, "let go with bay window close (it stays open on your desktop)", ctx)
        return {"handle": window.handle, "closed": False, "desktop": True}, (
            f"{window.handle} is a window of your desktop: browserbay did not start it and does "
            "not close it; let go of it (bay window list shows it again, with a new handle)"
        )
    proc = window.proc
    assert proc is not None
    assert window.pid is not None
    polite = 0
    try:
        family = set(await anyio.to_thread.run_sync(procfs.tree, window.pid))
        tops = await window.display.x.run(X_TIMEOUT, windows_of, family)
        for top in tops:
            if await window.display.x.run(X_TIMEOUT, _delete, top.xid):
                polite += 1
    except XError:
        polite = 0
    if polite:
        with anyio.move_on_after(min(CLOSE_GRACE, left(ctx, CLOSE_GRACE))):
            await proc.wait()
    how = "closed its windows" if proc.returncode is not None else "ended it"
    code = await procs.end(proc, grace=2.0)
    book.drop(window, "closed by bay window close", ctx)
    stopped = await book.stop_own_if_unused(ctx)
    data = {"handle": window.handle, "closed": True, "exit_code": code, "display_stopped": stopped}
    tail = f"; display {window.display.name} stopped (no window left)" if stopped else ""
    return data, f"{window.handle}: {how}{tail}"


def _delete(x: Any, xid: int) -> bool:
    return bool(x.delete(xid))


async def act_snapshot(book: Windows, ctx: VerbContext) -> tuple[dict[str, Any], str]:
    window = book.lookup(ctx.args.get("handle"), ctx)
    budget = int(ctx.args.get("max_nodes") or 4000)
    if budget < 1:
        raise Refusal("usage", detail="--max-nodes must be at least 1", verb="window")
    pids = await book.pids(window)
    origin = await _origin_or_zero(book, window)
    total = left(ctx, 60.0)
    walk_ms = int(max(0.2, total - 1.0) * 1000)
    try:
        answer = await window.display.walker.call(
            "snapshot",
            total,
            pids=pids,
            budget=budget,
            deadline_ms=walk_ms,
            call_ms=min(book.settings.call_ms, walk_ms),
        )
    except WalkerError as exc:
        if exc.kind != "timeout":
            raise _unreadable(window, exc) from None
        answer = {
            "nodes": [],
            "walked": 0,
            "hung": ["(walker)"],
            "expired": True,
            "elapsed_ms": total * 1000,
            "unreadable_reason": exc.reason,
        }
    nodes = answer["nodes"]
    if not nodes and not answer.get("unreadable_reason"):
        # Not (yet) on the accessibility bus: a GTK app registers when its window shows.
        answer["unreadable_reason"] = (
            "the application exposes no accessibility tree on the bus (yet): it may not "
            "support AT-SPI, or be starting"
        )
    refs, text, census = render_tree(nodes, origin, interactive=bool(ctx.args.get("interactive")))
    window.refs = refs
    if answer.get("unreadable_reason"):
        census["unreadable"] += 1
        text += f"\n- unreadable subtree: {answer['unreadable_reason']}"
    header = (
        f"window {window.handle} · {window.program} · display {window.display.label}\n"
        f"census: {census['nodes']} nodes · {census['action']} with actions · "
        f"{census['editable_text']} with editable text · {census['unreadable']} unreadable · "
        f"walked in {answer.get('elapsed_ms', 0):.0f} ms"
        + (" · node budget reached" if census["truncated"] else "")
    )
    data = {
        "handle": window.handle,
        "census": census,
        "origin": list(origin),
        "elapsed_ms": answer.get("elapsed_ms"),
        "hung": answer.get("hung", []),
        "expired": answer.get("expired", False),
        "unreadable": answer.get("unreadable_reason"),
        "nodes": [dict(n, ref=r) for r, n in _with_refs(refs, nodes)],
        "tree": text,
    }
    return data, header + "\n" + text


def _with_refs(refs: dict[str, dict[str, Any]], nodes: list[dict[str, Any]]) -> Any:
    by_path = {(v["bus"], v["path"]): k for k, v in refs.items()}
    for node in nodes:
        key = (node["bus"], node["path"])
        row = {k: v for k, v in node.items() if k not in ("bus", "path", "d")}
        row["depth"] = node["d"]
        yield by_path.get(key), row


async def _origin_or_zero(book: Windows, window: Window) -> tuple[int, int]:
    try:
        return await book.origin(window)
    except XError:
        return (0, 0)


def _unreadable(window: Window, exc: WalkerError) -> Refusal:
    return Refusal(
        "accessibility_unavailable",
        window=window.handle,
        reason=exc.reason,
        probe={"walker": exc.kind, "detail": exc.reason, "display": window.display.name},
    )


async def _node(
    book: Windows, window: Window, ctx: VerbContext
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """The @eN of this verb, as it is now: (ref, stored, probe). ``ref_stale`` when the node
    is gone or is now something else."""
    raw = str(ctx.args.get("target") or "")
    m = _REF.match(raw)
    if m is None:
        raise Refusal(
            "usage",
            detail=f"say which node: an @eN from bay window snapshot {window.handle} (got {raw!r})",
            verb="window",
        )
    ref = m.group(1)
    stored = window.refs.get(ref)
    snap = f"bay window snapshot {window.handle}  (then act on a fresh @eN)"
    if stored is None:
        raise Refusal("ref_stale", ref="@" + ref, way_out=snap)
    try:
        probe = await window.display.walker.call(
            "node",
            left(ctx, 10.0),
            bus=stored["bus"],
            path=stored["path"],
            call_ms=book.settings.call_ms,
        )
    except WalkerError as exc:
        if exc.kind == "gone":
            raise Refusal("ref_stale", ref="@" + ref, way_out=snap) from None
        raise _unreadable(window, exc) from None
    probe.pop("ok", None)
    probe.pop("id", None)
    if probe.get("role") != stored["role"]:
        raise Refusal("ref_stale", ref="@" + ref, way_out=snap)
    return ref, stored, probe


def pick_action(actions: list[str]) -> int | None:
    low = [a.lower() for a in actions]
    for name in CLICK_ACTIONS:
        if name in low:
            return low.index(name)
    for i, name in enumerate(low):
        if name and name != "showcontextmenu":
            return i
    return 0 if actions else None


async def act_click(book: Windows, ctx: VerbContext) -> tuple[dict[str, Any], str]:
    window = book.lookup(ctx.args.get("handle"), ctx)
    at = ctx.args.get("at")
    if at is not None:
        return await _click_at(book, window, ctx, str(at))
    ref, stored, probe = await _node(book, window, ctx)
    index = pick_action(list(probe.get("actions") or []))
    if index is None:
        raise Refusal(
            "no_action",
            ref="@" + ref,
            role=probe.get("role", ""),
            name=probe.get("name", ""),
            window=window.handle,
            probe=probe,
        )
    action = probe["actions"][index]
    try:
        done = await window.display.walker.call(
            "do_action",
            left(ctx, 10.0),
            bus=stored["bus"],
            path=stored["path"],
            index=index,
            call_ms=book.settings.call_ms,
        )
    except WalkerError as exc:
        raise _unreadable(window, exc) from None
    if not done.get("done"):
        raise Refusal(
            "action_failed",
            verb="window click",
            reason=f"the application declined the action {action!r} of @{ref}",
        )
    data = {
        "handle": window.handle,
        "ref": "@" + ref,
        "action": action,
        "via": "action",
        "role": probe.get("role"),
        "name": probe.get("name"),
    }
    return data, f"{action} on @{ref} ({probe.get('role')} “{probe.get('name')}”)"


async def _click_at(
    book: Windows, window: Window, ctx: VerbContext, at: str
) -> tuple[dict[str, Any], str]:
    m = _AT.match(at)
    if m is None:
        raise Refusal(
            "usage", detail=f"--at takes X,Y in the window's pixels, not {at!r}", verb="window"
        )
    await book.require_injection(window, "click --at")
    x, y = int(m.group(1)), int(m.group(2))
    main = await book.main_window(window)
    ox, oy = (main.x, main.y) if main is not None else (0, 0)
    xid = main.xid if main is not None else None
    if xid is not None:
        await window.display.x.run(X_TIMEOUT, _raise, xid)
    await window.display.x.run(X_TIMEOUT, _click, ox + x, oy + y)
    data = {"handle": window.handle, "at": [x, y], "screen": [ox + x, oy + y], "via": "xtest"}
    return data, f"clicked {window.handle} at {x},{y} (XTEST)"


def _raise(x: Any, xid: int) -> None:
    x.focus(xid)


def _click(x: Any, sx: int, sy: int) -> None:
    x.click(sx, sy)


async def act_key(book: Windows, ctx: VerbContext) -> tuple[dict[str, Any], str]:
    window = book.lookup(ctx.args.get("handle"), ctx)
    chord = str(ctx.args.get("target") or "")
    try:
        syms = parse_chord(chord)
    except KeyNameError as exc:
        raise Refusal("usage", detail=str(exc), verb="window") from None
    await book.require_injection(window, "key")
    main = await book.main_window(window)
    await window.display.x.run(X_TIMEOUT, _chord, syms, main.xid if main is not None else None)
    return {
        "handle": window.handle,
        "key": chord,
        "via": "xtest",
    }, f"pressed {chord} in {window.handle}"


def _chord(x: Any, syms: list[int], xid: int | None) -> None:
    x.chord(syms, xid)


async def act_type(book: Windows, ctx: VerbContext) -> tuple[dict[str, Any], str]:
    window = book.lookup(ctx.args.get("handle"), ctx)
    text = ctx.args.get("text")
    if text is None:
        raise Refusal(
            "usage", detail="say what to type: bay window type <h> @eN <text|->", verb="window"
        )
    text = str(text)
    ref, stored, probe = await _node(book, window, ctx)
    ifaces = probe.get("interfaces") or []
    if "EditableText" in ifaces:
        try:
            done = await window.display.walker.call(
                "insert_text",
                left(ctx, 10.0),
                bus=stored["bus"],
                path=stored["path"],
                text=text,
                call_ms=book.settings.call_ms,
            )
        except WalkerError as exc:
            raise _unreadable(window, exc) from None
        if not done.get("done"):
            raise Refusal(
                "action_failed", verb="window type", reason=f"@{ref} refused the text (read-only?)"
            )
        via = "editable_text"
    else:
        await book.require_injection(window, "type")
        main = await book.main_window(window)
        xid = main.xid if main is not None else None
        if xid is not None:
            await window.display.x.run(X_TIMEOUT, _raise, xid)
        if "Component" in ifaces:
            try:
                await window.display.walker.call(
                    "grab_focus",
                    left(ctx, 10.0),
                    bus=stored["bus"],
                    path=stored["path"],
                    call_ms=book.settings.call_ms,
                )
            except WalkerError as exc:
                raise _unreadable(window, exc) from None
            await anyio.sleep(0.05)
        # In short runs, each its own X call: a takeover (or the deadline) that cuts the verb
        # stops the typing within one run, instead of a worker thread typing on unseen.
        for at in range(0, len(text), TYPE_RUN):
            await window.display.x.run(left(ctx, 60.0), _type, text[at : at + TYPE_RUN])
        via = "focus+xtest"
    data = {"handle": window.handle, "ref": "@" + ref, "chars": len(text), "via": via}
    how = "AT-SPI EditableText" if via == "editable_text" else "focus + XTEST keys"
    return data, f"typed {len(text)} characters into @{ref} ({how})"


def _type(x: Any, text: str) -> None:
    x.type_text(text, None)


async def act_screenshot(book: Windows, ctx: VerbContext) -> tuple[dict[str, Any], str]:
    window = book.lookup(ctx.args.get("handle"), ctx)
    main = await book.main_window(window)
    if main is None or not main.viewable:
        raise Refusal(
            "action_failed", verb="window screenshot", reason=f"{window.handle} shows no window"
        )
    await window.display.x.run(X_TIMEOUT, _raise, main.xid)
    await anyio.sleep(0.1)  # let it repaint what was under another window
    width, height, pixels = await window.display.x.run(
        X_TIMEOUT, _grab, main.x, main.y, main.width, main.height
    )
    shots = ctx.state_dir / "local-window" / "shots"
    path = shots / f"{window.handle}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}.jpg"
    size = await anyio.to_thread.run_sync(_save_jpeg, path, width, height, pixels)
    data = {
        "handle": window.handle,
        "path": str(path),
        "width": width,
        "height": height,
        "bytes": size,
    }
    return data, str(path)


def _grab(x: Any, gx: int, gy: int, w: int, h: int) -> tuple[int, int, bytes]:
    result: tuple[int, int, bytes] = x.grab(gx, gy, w, h)
    return result


def _save_jpeg(path: Path, width: int, height: int, pixels: bytes) -> int:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    image = Image.frombytes("RGB", (width, height), pixels, "raw", "BGRX")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        image.save(f, "JPEG", quality=80)
    return path.stat().st_size


async def act_doctor(book: Windows, ctx: VerbContext) -> tuple[dict[str, Any], str]:
    return await probe_matrix(book, ctx)


ACTIONS: dict[str, Any] = {
    "open": act_open,
    "browser": act_browser,
    "list": act_list,
    "attach": act_attach,
    "detach": act_detach,
    "close": act_close,
    "snapshot": act_snapshot,
    "click": act_click,
    "type": act_type,
    "key": act_key,
    "screenshot": act_screenshot,
    "doctor": act_doctor,
}

assert tuple(ACTIONS) == ACTION_NAMES, "names.ACTIONS and windows.ACTIONS must agree"


async def handle(book: Windows, ctx: VerbContext) -> tuple[dict[str, Any], str]:
    """``bay window <action>`` on the keeper's book of windows (the plugin's own)."""
    action = str(ctx.args.get("action"))
    fn = ACTIONS.get(action)
    if fn is None:
        raise Refusal(
            "usage",
            detail=f"unknown window action {action!r}; one of {', '.join(ACTIONS)}",
            verb="window",
        )
    if action not in ("list", "doctor", "open", "browser", "attach", "close"):
        with contextlib.suppress(XError):
            await book.reap(ctx)
    answer: tuple[dict[str, Any], str] = await fn(book, ctx)
    return answer
