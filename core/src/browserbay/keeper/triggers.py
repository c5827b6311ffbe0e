"""Trigger intake: a versioned file protocol to open, resume or stop a session's browser,
acted on exactly once — for cron jobs, other agents and harnesses with no shell attached to
the session.

A request is ``<lowercase-uuid>.json`` (≤ 64 KiB), published into the triggers directory by
rename::

    {"version": 1, "action": "open", "session": "S", "profile": "H?", "url": "U?",
     "timeout_ms": 30000}

Validation runs in a fixed order and the first failure is the reason. The result goes to
``processed/<uuid>.result.json`` (written atomically), then the request is removed. The UUID
is claimed in the registry before anything is done, so a repeated UUID gets the first result
back and is never replayed — also across a ``kill -9`` of the keeper, after which an
interrupted claim is answered ``uncertain: true``. Requests of one session run in FIFO order;
different sessions run concurrently (bounded).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import re
import time
from collections import deque
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from browserbay import identity, verbs
from browserbay.keeper.base import Lifecycle
from browserbay.keeper.channels import OWNER
from browserbay.keeper.choosing import LeaseChooser
from browserbay.keeper.controls import Controls
from browserbay.keeper.leases import Leases, goto_guarded
from browserbay.keeper.roads import Guards
from browserbay.keeper.roster import Roster
from browserbay.model import SessionRef, VerbCall, VerbOutcome
from browserbay.paths import BayPaths, ensure_private
from browserbay.refusals import Refusal
from browserbay.registry import PARKED, Db, KeptTabs, TriggerClaims
from browserbay.urls import normalize_url

log = logging.getLogger("browserbay.triggers")

VERSION = 1
MAX_BYTES = 64 * 1024
ACTIONS = ("open", "resume", "stop")
FIELDS = {
    "open": ({"version", "action", "session"}, {"profile", "url", "timeout_ms"}),
    "resume": ({"version", "action", "session"}, {"profile", "timeout_ms"}),
    "stop": ({"version", "action", "session"}, {"profile", "timeout_ms"}),
}
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
DEFAULT_TIMEOUT_MS = 30_000
CONCURRENCY = 4
#: The verb each action is, as the guards, the hooks and the audit see it.
VERB = {"open": "open", "resume": "resume", "stop": "close"}


def validate(name: str, raw: bytes) -> dict[str, Any]:
    """The request, or ValueError with the exact reason (first failure wins)."""
    try:
        request = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ValueError("not an object") from None
    if not isinstance(request, dict):
        raise ValueError("not an object")
    if request.get("version") != VERSION:
        raise ValueError(f"unsupported version: {json.dumps(request.get('version'))}")
    action = request.get("action")
    if action not in ACTIONS:
        raise ValueError(f"unsupported action: {json.dumps(action)}")
    if not _UUID.match(name):
        raise ValueError("filename not a lowercase UUID")
    required, optional = FIELDS[action]
    for key in sorted(required):
        if key not in request:
            raise ValueError(f"missing field: {key}")
    for key in sorted(request):
        if key not in required | optional:
            raise ValueError(f"unsupported field: {key}")
    session = request["session"]
    if not identity.is_session_id(session):
        raise ValueError("bad session id")
    profile = request.get("profile")
    if profile is not None and (not isinstance(profile, str) or not 0 < len(profile) <= 256):
        raise ValueError("bad profile handle")
    if "url" in request:
        url = request["url"]
        if not isinstance(url, str) or not url:
            raise ValueError("bad URL")
        try:
            request["url"] = normalize_url(url)
        except Refusal:
            raise ValueError("bad URL: only http, https and about:blank") from None
    timeout = request.get("timeout_ms", DEFAULT_TIMEOUT_MS)
    if not isinstance(timeout, int) or isinstance(timeout, bool) or not 1 <= timeout <= 600_000:
        raise ValueError("bad timeout: timeout_ms is a whole number in 1..600000")
    request["timeout_ms"] = timeout
    return request


def result(
    action: Any, session: Any, ok: bool, outcome: str, reason: str, uncertain: bool = False
) -> dict[str, Any]:
    return {
        "version": VERSION,
        "action": action if action in ACTIONS else None,
        "ok": ok,
        "outcome": outcome,
        "reason": reason,
        "session": session if isinstance(session, str) else None,
        "uncertain": uncertain,
    }


@dataclasses.dataclass
class _Attempt:
    """How far one action got: the call as the guards judged it (None: it never reached
    them, so it is not audited), and whether anything of it started (a cut is then
    ``uncertain``)."""

    call: VerbCall | None = None
    started: bool = False


class TriggerIntake:
    """``poll``: seconds between scans of the directory; ``max_age``: seconds after its
    publication a request is refused as stale."""

    def __init__(
        self,
        paths: BayPaths,
        claims: TriggerClaims,
        kept_tabs: KeptTabs,
        db: Db,
        roster: Roster,
        chooser: LeaseChooser,
        leases: Leases,
        controls: Controls,
        guards: Guards,
        life: Lifecycle,
        poll: float = 0.2,
        max_age: float = 3600.0,
    ) -> None:
        self.poll = poll
        self.max_age = max_age
        self.claims = claims
        self.kept_tabs = kept_tabs
        self.db = db
        self.roster = roster
        self.chooser = chooser
        self.leases = leases
        self.controls = controls
        self.guards = guards
        self.life = life
        self.dir = triggers_dir(paths)
        self.processed = self.dir / "processed"
        self._seen: set[str] = set()
        self._queues: dict[str, deque[tuple[str, dict[str, Any]]]] = {}
        self._limiter = anyio.CapacityLimiter(CONCURRENCY)

    async def run(self) -> None:
        await anyio.to_thread.run_sync(ensure_private, self.dir)
        await anyio.to_thread.run_sync(ensure_private, self.processed)
        async with anyio.create_task_group() as tg:
            while not self.life.stop_event.is_set():
                for name, raw, age in await anyio.to_thread.run_sync(self._scan):
                    if self.life.stop_event.is_set():
                        break  # a keeper on its way out claims nothing new
                    self._seen.add(name)
                    tg.start_soon(self._intake, name, raw, age, tg)
                await anyio.sleep(self.poll)

    def _scan(self) -> list[tuple[str, bytes | None, float]]:
        """New request files, oldest publication first. ``raw`` is None when too large."""
        found = []
        now = time.time()
        with os.scandir(self.dir) as it:
            for entry in it:
                if not entry.name.endswith(".json") or entry.name.startswith("."):
                    continue
                if entry.name in self._seen or not entry.is_file(follow_symlinks=False):
                    continue
                st = entry.stat(follow_symlinks=False)
                found.append((st.st_mtime_ns, entry.name, st.st_size, now - st.st_mtime))
        found.sort()
        out: list[tuple[str, bytes | None, float]] = []
        for _mtime, name, size, age in found:
            raw = None
            if size <= MAX_BYTES:
                try:
                    raw = (self.dir / name).read_bytes()[: MAX_BYTES + 1]
                except OSError:
                    continue
            out.append((name, raw if raw is None or len(raw) <= MAX_BYTES else None, age))
        return out

    async def _intake(
        self, name: str, raw: bytes | None, age: float, tg: anyio.abc.TaskGroup
    ) -> None:
        stem = name[: -len(".json")]
        if raw is None:
            await self._answer(
                stem,
                name,
                result(None, None, False, "refused", f"too large (limit {MAX_BYTES} bytes)"),
            )
            return
        try:
            request = validate(stem, raw)
        except ValueError as exc:
            try:
                loose = json.loads(raw)
            except ValueError:
                loose = {}
            loose = loose if isinstance(loose, dict) else {}
            await self._answer(
                stem,
                name,
                result(loose.get("action"), loose.get("session"), False, "refused", str(exc)),
            )
            return
        if age > self.max_age:
            reason = f"stale request: published {age:.0f}s ago (limit {self.max_age:.0f}s)"
            await self._answer(
                stem, name, result(request["action"], request["session"], False, "refused", reason)
            )
            return
        queue = self._queues.setdefault(request["session"], deque())
        queue.append((stem, request))
        if len(queue) == 1:  # nobody is draining this session's queue yet
            tg.start_soon(self._drain, request["session"])

    async def _drain(self, session: str) -> None:
        queue = self._queues[session]
        while queue and not self.life.stop_event.is_set():
            stem, request = queue[0]
            async with self._limiter:
                try:
                    answer = await self._once(stem, request)
                except Exception:
                    log.exception("trigger %s failed", stem)
                    answer = result(
                        request["action"],
                        session,
                        False,
                        "refused",
                        "internal error: see the keeper log",
                    )
                await self._answer(stem, stem + ".json", answer)
            queue.popleft()
        self._queues.pop(session, None)

    async def _once(self, stem: str, request: dict[str, Any]) -> dict[str, Any]:
        db, claims = self.db, self.claims
        previous = await db(claims.claim, stem, request["action"], request["session"])
        if previous:
            return dict(json.loads(previous))  # handled before: the first result, no replay
        if previous == "":
            answer = result(
                request["action"],
                request["session"],
                False,
                "refused",
                "interrupted: a keeper stopped after claiming this request and before its "
                "result; the action may have taken effect",
                uncertain=True,
            )
        else:
            answer = await self._act(request)
        await db(claims.finish, stem, json.dumps(answer))
        return answer

    async def _act(self, request: dict[str, Any]) -> dict[str, Any]:
        """One action, through the keeper's guards (browserbay.keeper.roads) on the road
        ``trigger``: a human holding the controls, a backend switch's gap, a plugin's
        ``bay_before_verb`` veto and the domain fence refuse it as they refuse a verb, and
        a takeover cuts it as it cuts a verb. Every action that reached the guards is in the
        audit with its outcome."""
        action, sid = request["action"], request["session"]
        args = {"url": request["url"]} if request.get("url") else {}
        call = VerbCall(VERB[action], args, SessionRef(sid, "api"), None, "trigger", "trigger")
        began = time.monotonic()
        state = _Attempt()
        answer = await self._guarded(action, sid, call, request, state)
        if state.call is not None:  # it reached the guards: one audit row, as a verb's
            code = None if answer["ok"] else answer["reason"].split(":", 1)[0]
            elapsed = (time.monotonic() - began) * 1000
            await self.guards.done(state.call, VerbOutcome(answer["ok"], code, elapsed))
        return answer

    async def _guarded(
        self,
        action: str,
        sid: str,
        call: VerbCall,
        request: dict[str, Any],
        state: _Attempt,
    ) -> dict[str, Any]:
        guards = self.guards
        verb = verbs.BY_NAME[call.verb]
        try:
            with anyio.fail_after(request["timeout_ms"] / 1000):
                if action == "stop":
                    existing = self.roster.by_id.get(sid)
                    if existing is None or not existing.running_leases:
                        return result(
                            action, sid, False, "not-found", "no running browser for this session"
                        )
                    async with existing.lock:
                        running = existing.running_leases
                        state.call = call
                        # Nobody's road cuts a human off: refused while one holds the controls.
                        state.call = guards.check(call, None, ending=running)
                        state.started = True
                        for lease in running:
                            await self.leases.end(existing, lease, "trigger_stop")
                    return result(
                        action, sid, True, "stopped", "stopped gracefully; its tabs are kept"
                    )
                session = self.roster.session(call.session, None)
                async with session.lock:
                    lease = await self.chooser.choose(session, request.get("profile"), OWNER)
                    state.call = dataclasses.replace(call, profile=lease.profile)
                    state.call = guards.check(state.call, lease)
                    if action == "resume":
                        kept = []
                        for key in (lease.profile.id, lease.profile.id + PARKED):
                            kept += (await self.db(self.kept_tabs.kept, sid, key)).tabs
                        if not kept and lease.context is None:
                            return result(
                                action, sid, False, "not-found", "no kept tabs for this session"
                            )
                        state.started = True
                        before = len(lease.tabs)

                        async def resume() -> None:
                            await self.leases.ensure(session, lease)
                            await self.leases.resume_parked(session, lease)

                        await self.controls.run(lease, verb, call.args, False, resume)
                        restored = len(lease.tabs) - before
                        return result(
                            action, sid, True, "resumed", f"reopened {restored} kept tab(s)"
                        )
                    state.started = True
                    url = request.get("url")

                    async def navigate() -> str:
                        tab = await self.leases.current_tab(session, lease)
                        if url:
                            await goto_guarded(lease, tab.page, url, wait_until="load")
                        await self.leases.persist(session, lease)
                        return str(tab.page.url)

                    # A takeover during the navigation cuts it (browser_interrupted).
                    where = await self.controls.run(lease, verb, call.args, False, navigate)
                    session.last_used = time.monotonic()
                    return result(
                        action, sid, True, "opened", f"browser running; current tab {where}"
                    )
        except Refusal as r:
            return result(
                action,
                sid,
                False,
                "refused",
                f"{r.code}: {r.message}",
                uncertain=state.started and r.code == "browser_interrupted",
            )
        except TimeoutError:
            return result(
                action,
                sid,
                False,
                "refused",
                "deadline: timeout_ms ran out",
                uncertain=state.started,
            )
        except Exception as exc:
            if type(exc).__module__.startswith("playwright"):
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                return result(
                    action,
                    sid,
                    False,
                    "refused",
                    f"action_failed: {first}",
                    uncertain=state.started,
                )
            raise

    async def _answer(self, stem: str, name: str, answer: dict[str, Any]) -> None:
        """The result file (atomically), then the request is removed."""

        def write() -> None:
            target = self.processed / f"{stem}.result.json"
            tmp = self.processed / f".{stem}.{os.getpid()}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump(answer, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, target)
            with contextlib.suppress(FileNotFoundError):
                (self.dir / name).unlink()

        await anyio.to_thread.run_sync(write)
        self._seen.discard(name)
        log.info("trigger %s: %s %s", stem, answer["action"], answer["outcome"])


def triggers_dir(paths: BayPaths) -> Path:
    return paths.data / "triggers"
