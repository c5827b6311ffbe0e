"""The action trace plugin: ``bay_action_traced`` keeps each page action's before/after
frames and position per profile; ``bay trace show`` writes the HTML report.

Recorded: the verb, the target as the agent gave it, the tab, when, how long, the outcome
(ok or the refusal code), the page's address without query and fragment, the target's box
and the pointer's point, two JPEG frames (every text field masked by the keeper). Never
recorded: typed text, keys pressed, ``eval`` source, query strings. See docs/trace.md.

Off unless the keeper starts with ``BAY_TRACE=1``: frames of every page an agent acts on are
kept on disk for days, and each traced action pays for two screenshots (~35 ms each). The
hook is defined only then, and the keeper takes frames only when some plugin implements it;
``bay trace show`` works either way and says when tracing is off.
"""

from __future__ import annotations

import itertools
import os
import secrets
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio

from browserbay import tracestore
from browserbay.hookspecs import hookimpl
from browserbay.model import (
    ActionTrace,
    Frame,
    PluginVerb,
    VerbCall,
    VerbContext,
    VerbOutcome,
)
from browserbay.paths import bay_paths, write_private
from browserbay.refusals import Refusal
from browserbay.verbs import PLUGIN, Arg, Verb
from browserbay_trace.store import Retention, TraceStore, prune, trace_key
from browserbay_trace.writer import Job, Writer

DEFAULT_LAST = 20
MAX_LAST = 500
TRACE_ENV = "BAY_TRACE"
TRACE_OFF = (
    "tracing is off in this keeper: bay keeper stop, then run your next command with BAY_TRACE=1 "
    "in its environment (the keeper it starts traces every page action)"
)


def tracing_on(env: Mapping[str, str] = os.environ) -> bool:
    """``BAY_TRACE=1`` (or ``on``/``true``/``yes``) in the keeper's environment."""
    return env.get(TRACE_ENV, "").strip().lower() in ("1", "on", "true", "yes")


def traces_root() -> Path:
    return tracestore.traces_root(bay_paths())


def _frame_row(frame: Frame | None) -> dict[str, int] | None:
    if frame is None:
        return None
    return {"width": frame.width, "height": frame.height, "bytes": len(frame.jpeg)}


def action_job(call: VerbCall, outcome: VerbOutcome, trace: ActionTrace, serial: int) -> Job:
    """One action's record and frames, for the writer (``serial`` tells apart two actions
    of one millisecond)."""
    profile = call.profile
    profile_id = profile.id if profile is not None else f"ep-{call.session.id}"
    action_id = f"{int(trace.at * 1000):013d}-{serial % 1_000_000:06d}"
    record: dict[str, Any] = {
        "id": action_id,
        "at": trace.at,
        "verb": trace.verb,
        "target": trace.target,
        "tab": trace.tab,
        "url": trace.url,
        "url_after": trace.url_after,
        "box": list(trace.box) if trace.box is not None else None,
        "point": list(trace.point) if trace.point is not None else None,
        "before": _frame_row(trace.before),
        "after": _frame_row(trace.after),
        "missing": list(trace.missing),
        "ok": outcome.ok,
        "code": outcome.code,
        "ms": round(outcome.elapsed_ms, 1),
        "session": call.session.id,
        "profile": {
            "id": profile_id,
            "label": profile.label if profile is not None else "ephemeral",
            "ephemeral": profile.ephemeral if profile is not None else True,
        },
    }
    frames = {w: f.jpeg for w, f in (("before", trace.before), ("after", trace.after)) if f}
    return Job(trace_key(profile_id), action_id, record, frames)


# -- bay trace show ---------------------------------------------------------------------------


def link_recordings(records: list[dict[str, Any]], segments: list[tracestore.Segment]) -> None:
    """Each record whose action a finished segment of continuous recording covers (its tab,
    its session, its time) gets ``recording``: the video's path and the action's offset into
    it in seconds (``bay recording on``; docs/trace.md)."""
    for record in records:
        at, tab = float(record.get("at", 0)), str(record.get("tab"))
        for seg in segments:
            if seg.covers(tab, at) and seg.session == record.get("session"):
                record["recording"] = {
                    "path": str(seg.video),
                    "offset": round(at - seg.started, 2),
                }
                break


TRACE_VERB = Verb(
    "trace",
    PLUGIN,
    "Write an HTML report of your profile's last actions (before/after frames, where each "
    "acted) and print its path. --profile H or --session S picks whose.",
    (
        Arg("action", "pos", "show", choices=("show",)),
        Arg("last", "value", f"the newest N actions (default {DEFAULT_LAST})", type="int"),
        Arg("out", "value", "the HTML file to write (an absolute path; default: the reports dir)"),
    ),
    # The keeper writes --out as its user, over any file: outside a session's sandbox.
    owner_only=("out",),
    example="bay trace show --last 5",
    tool_profile="network",  # with the console, errors and requests: what went wrong
)


def _out_path(ctx: VerbContext, key: str) -> Path:
    given = ctx.args.get("out")
    if given:
        path = Path(str(given))
        if not path.is_absolute():
            raise Refusal(
                "usage",
                detail="--out must be an absolute path (e.g. $PWD/trace.html)",
                verb="trace",
            )
        if not path.parent.is_dir():
            raise Refusal("usage", detail=f"--out: no directory {path.parent}", verb="trace")
        return path
    store = TraceStore(traces_root())
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    return store.ensure(store.reports) / f"{key}-{stamp}-{secrets.token_hex(3)}.html"


def _report(ctx: VerbContext, last: int, writer: Writer | None) -> tuple[dict[str, Any], str]:
    """Runs in a worker thread: reading frames and writing the page is disk work (after what
    ``writer`` still holds is on disk)."""
    key = trace_key(ctx.profile.id)
    if writer is not None:
        writer.flush()
    store = TraceStore(traces_root())
    warning = None
    try:
        prune(store.root, Retention.from_env())
    except ValueError as exc:  # a bad BAY_TRACE_DAYS or BAY_TRACE_MB: show, not prune
        warning = f"traces were not pruned: {exc}"
    records = store.actions(key, last, ctx.channel_session)
    link_recordings(records, tracestore.segments(store.root, key))
    who = (
        f"session {ctx.session.id} (ephemeral)"
        if ctx.profile.ephemeral
        else f"{ctx.profile.label} ({ctx.profile.id})"
    )
    path = _out_path(ctx, key)
    from browserbay_trace.report import render  # html escaping: at a report, not at load

    write_private(path, render(f"browserbay trace · {who}", records, path.parent).encode())
    data: dict[str, Any] = {
        "path": str(path),
        "key": key,
        "profile": ctx.profile.as_row(),
        "actions": records,
    }
    data["tracing"] = tracing_on()
    if not data["tracing"]:
        data["hint"] = TRACE_OFF  # on stderr, after the path
    if warning:
        data["warning"] = warning
    return data, str(path)


class TracePlugin:
    """The plugin (the entry point names this class: one instance per load). Its writer is
    made at the keeper's first traced action (a bad ``BAY_TRACE_DAYS`` fails that action's
    hook, logged, not the keeper's start) and flushed at the process's exit."""

    def __init__(self) -> None:
        self._writer: Writer | None = None
        self._serials = itertools.count()

    def writer(self) -> Writer:
        if self._writer is None:
            self._writer = Writer(traces_root(), Retention.from_env())
        return self._writer

    if tracing_on():  # read once, as the keeper loads its plugins

        @hookimpl
        def bay_action_traced(
            self, call: VerbCall, outcome: VerbOutcome, trace: ActionTrace
        ) -> None:
            """Queue the action for the writer's thread (off the keeper's loop)."""
            self.writer().put(action_job(call, outcome, trace, next(self._serials)))

    async def trace(self, ctx: VerbContext) -> tuple[dict[str, Any], str]:
        last = ctx.args.get("last")
        n = DEFAULT_LAST if last is None else int(last)
        if not 1 <= n <= MAX_LAST:
            raise Refusal("usage", detail=f"--last must be 1 to {MAX_LAST}, not {n}", verb="trace")
        return await anyio.to_thread.run_sync(_report, ctx, n, self._writer)

    @hookimpl
    def bay_verbs(self) -> list[PluginVerb]:
        return [PluginVerb(TRACE_VERB, self.trace, while_paused=True)]
