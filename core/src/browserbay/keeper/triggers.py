"""Trigger intake: a versioned file protocol to open, resume or stop a session's browser,
acted on exactly once whatever happens — for cron jobs, other agents and harnesses with no
shell attached to the session (docs/triggers.md).

A request is ``<lowercase-uuid>.json`` (≤ 64 KiB), published into the triggers directory by
rename::

    {"version": 1, "action": "open", "session": "S", "profile": "H?", "url": "U?",
     "timeout_ms": 30000}

Validation runs in a fixed order and the first failure is the result's ``reason`` — a
stable string, the versioned protocol's own where the two share a check; anything dynamic
goes to ``error``/``detail``. The result (:func:`envelope`) goes to
``processed/<uuid>.result.json``, then the request is removed.

Exactly once rests on the registry's record of each UUID (:mod:`browserbay.registry.
triggers`): a request is *admitted* (its place in its session's FIFO, kept across a
restart), *claimed*, marked *acting* just before its action's first effect, and *done* with
its first terminal result, which nothing overwrites — a refusal included, so a reused UUID
is answered from the record and never run. A new keeper first answers every request an
earlier one left claimed (``interrupted by restart``; ``uncertain`` when it was acting),
whether or not its file is still there, then takes up the queued ones in their order, and
only then reads new files. A result file that cannot be written is retried, logged, and
never holds up the intake.
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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from browserbay import identity, verbs
from browserbay.keeper.base import Lifecycle
from browserbay.keeper.channels import OWNER
from browserbay.keeper.choosing import LeaseChooser
from browserbay.keeper.controls import Controls
from browserbay.keeper.faults import FaultPlan
from browserbay.keeper.leases import Leases, goto_guarded
from browserbay.keeper.roads import Guards
from browserbay.keeper.roster import Roster
from browserbay.model import SessionRef, VerbCall, VerbOutcome
from browserbay.paths import BayPaths, ensure_private
from browserbay.refusals import Refusal
from browserbay.registry import PARKED, Db, KeptTabs, TriggerClaims, TriggerRecord
from browserbay.urls import normalize_url

log = logging.getLogger("browserbay.triggers")

VERSION = 1
MAX_BYTES = 64 * 1024
ACTIONS = ("open", "resume", "stop")
REQUIRED = ("session",)
#: The fields each action allows (``version`` and ``action`` besides).
FIELDS = {
    "open": frozenset({"version", "action", "session", "profile", "url", "timeout_ms"}),
    "resume": frozenset({"version", "action", "session", "profile", "timeout_ms"}),
    "stop": frozenset({"version", "action", "session", "profile", "timeout_ms"}),
}
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
DEFAULT_TIMEOUT_MS = 30_000
MAX_TIMEOUT_MS = 600_000
CONCURRENCY = 4
#: Seconds before the one second read of a file that is not valid JSON (not yet whole).
PARSE_RETRY = 0.05
#: Seconds before each new attempt at a result file that could not be written, then
#: every :data:`REPUBLISH_EVERY` seconds until it is.
PUBLISH_RETRIES = (0.05, 0.25, 1.0)
REPUBLISH_EVERY = 5.0
#: The verb each action is, as the guards, the hooks and the audit see it.
VERB = {"open": "open", "resume": "resume", "stop": "close"}
#: The audit's code of a result's reason that is no refusal code.
AUDIT_CODES = {"session action timed out": "deadline"}


class Refused(Exception):
    """A request refused before it was admitted: its stable reason, and what varies."""

    def __init__(self, reason: str, detail: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


@dataclasses.dataclass(frozen=True)
class Request:
    """An admitted request, as validated."""

    uuid: str
    action: str
    session: str
    profile: str | None
    url: str | None
    timeout_ms: int
    published_at: float

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Request:
        return cls(**json.loads(text))

    @property
    def name(self) -> str:
        return f"{self.uuid}.json"


def parse(raw: bytes) -> object:
    """The file's JSON, or ``invalid JSON`` (the parser's message as the detail)."""
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise Refused("invalid JSON", f"not UTF-8: {exc.reason}") from None
    except ValueError as exc:
        raise Refused("invalid JSON", str(exc)) from None


def validate(stem: str, body: object, published_at: float) -> Request:
    """The request, or :class:`Refused` with the exact reason of the first failing check,
    in the protocol's order (docs/triggers.md tables them)."""
    if not isinstance(body, dict):
        raise Refused("trigger must be an object")
    version = body.get("version")
    if type(version) is not int or version != VERSION:  # never coerced: not true, not 1.0
        raise Refused("unsupported version")
    action = body.get("action")
    if not isinstance(action, str) or action not in ACTIONS:
        raise Refused("unsupported action")
    if not _UUID.fullmatch(stem):
        raise Refused("trigger filename must be a lowercase UUID")
    for key in REQUIRED:
        if key not in body:
            raise Refused(f"missing required field: {key}")
    unsupported = sorted(key for key in body if key not in FIELDS[action])
    if unsupported:  # every field is a scalar, so the path is a top-level name
        raise Refused(f"unsupported field: {unsupported[0]}")
    session = body["session"]
    if not identity.is_session_id(session):
        raise Refused("session must be a session id", "1-128 of A-Z a-z 0-9 . _ : @ -")
    profile = body.get("profile")
    if "profile" in body and (not isinstance(profile, str) or not 0 < len(profile) <= 256):
        raise Refused("profile must be a profile handle", "a string of 1-256 characters")
    url = body.get("url")
    if "url" in body:
        if not isinstance(url, str) or not url:
            raise Refused("url must be an http, https or about:blank URL")
        try:
            url = normalize_url(url)
        except Refusal as r:
            raise Refused("url must be an http, https or about:blank URL", r.message) from None
    timeout = body.get("timeout_ms", DEFAULT_TIMEOUT_MS)
    if type(timeout) is not int or not 1 <= timeout <= MAX_TIMEOUT_MS:
        raise Refused("invalid timeout_ms", f"a whole number in 1..{MAX_TIMEOUT_MS}")
    return Request(stem, action, session, profile, url, timeout, published_at)


def envelope(
    sent: object,
    ok: bool,
    outcome: str,
    reason: str | None,
    session: object = None,
    *,
    uncertain: bool = False,
    error: str | None = None,
    detail: str | None = None,
) -> dict[str, Any]:
    """A result: ``version`` and ``action`` as sent (null when missing, never coerced),
    ``reason`` null on success and a stable string otherwise, ``session`` the session id
    once it is a valid one, ``uncertain`` true only when an interrupted or timed-out
    action may have taken effect; ``error``/``detail``: what varies."""
    fields: Mapping[str, object] = sent if isinstance(sent, dict) else {}
    return {
        "version": fields.get("version"),
        "action": fields.get("action"),
        "ok": ok,
        "outcome": outcome,
        "reason": reason,
        "session": session if identity.is_session_id(session) else None,
        "uncertain": uncertain,
        "error": error,
        "detail": detail,
    }


def _sent(request: Request) -> dict[str, Any]:
    return {"version": VERSION, "action": request.action}


@dataclasses.dataclass
class _Attempt:
    """How far one action got: the call as the guards judged it (None: it never reached
    them, so it is not audited), and whether anything of it started (a cut is then
    ``uncertain``)."""

    call: VerbCall | None = None
    started: bool = False


class TriggerIntake:
    """``poll``: seconds between scans of the directory; ``max_age``: seconds after its
    publication a request is refused as stale; ``faults``: the points a test or campaign
    kills the keeper at (a no-op in a real keeper)."""

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
        faults: FaultPlan | None = None,
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
        self.faults = faults or FaultPlan()
        self.dir = triggers_dir(paths)
        self.processed = self.dir / "processed"
        self._seen: set[str] = set()
        """Request files being handled: the scan passes them over."""
        self._queues: dict[str, deque[Request]] = {}
        self._limiter = anyio.CapacityLimiter(CONCURRENCY)
        self.unpublished: dict[str, tuple[str, str]] = {}
        """Results whose file could not be written yet: stem -> (result, request file)."""
        self._republish_at = 0.0

    # -- the loop ------------------------------------------------------------------------

    async def run(self) -> None:
        await anyio.to_thread.run_sync(self._prepare)
        async with anyio.create_task_group() as tg:
            await self._recover(tg)
            while not self.life.stop_event.is_set():
                try:
                    found = await anyio.to_thread.run_sync(self._scan)
                except OSError as exc:  # the directory went away: make it again, next round
                    log.error("the triggers directory could not be read: %s", exc)
                    found = []
                    with contextlib.suppress(OSError):
                        await anyio.to_thread.run_sync(self._prepare)
                for name, mtime in found:
                    if self.life.stop_event.is_set():
                        break  # a keeper on its way out admits nothing new
                    self._seen.add(name)
                    await self._take(name, mtime, tg)
                if self.unpublished and time.monotonic() >= self._republish_at:
                    for stem, (answer, name) in list(self.unpublished.items()):
                        await self._publish(stem, answer, name, retries=())
                await anyio.sleep(self.poll)

    def _prepare(self) -> None:
        """The directories, and no temporary file a killed keeper left half written."""
        ensure_private(self.dir)
        ensure_private(self.processed)
        for leftover in self.processed.glob(".*.tmp"):
            with contextlib.suppress(OSError):
                leftover.unlink()

    async def _recover(self, tg: anyio.abc.TaskGroup) -> None:
        """What an earlier keeper left, before any new file and before any age check: a
        claimed request is answered ``interrupted by restart`` (never acted on again; its
        file may be gone), a result not yet written is written, and the queued requests
        go back into their sessions' queues in the order they were admitted."""
        for record in await self.db(self.claims.unsettled):
            self._seen.add(f"{record.uuid}.json")
            try:
                if record.phase in ("claimed", "acting"):
                    await self._finish(record.uuid, record.session, _interrupted(record))
                elif record.phase == "done" and record.result is not None:
                    await self._publish(record.uuid, record.result, f"{record.uuid}.json")
                elif record.request is not None:
                    self._enqueue(Request.from_json(record.request), tg)
            except Exception:
                log.exception("trigger %s could not be recovered", record.uuid)

    def _scan(self) -> list[tuple[str, float]]:
        """New request files (name, modification time), oldest publication first."""
        found = []
        with os.scandir(self.dir) as it:
            for entry in it:
                if not entry.name.endswith(".json") or entry.name.startswith("."):
                    continue
                if entry.name in self._seen or not entry.is_file(follow_symlinks=False):
                    continue
                with contextlib.suppress(OSError):
                    st = entry.stat(follow_symlinks=False)
                    found.append((st.st_mtime_ns, entry.name, st.st_mtime))
        found.sort()
        return [(name, mtime) for _ns, name, mtime in found]

    def _read(self, name: str) -> bytes | None:
        """The file's bytes; None when it is larger than :data:`MAX_BYTES` (never parsed)."""
        with (self.dir / name).open("rb") as f:
            raw = f.read(MAX_BYTES + 1)
        return raw if len(raw) <= MAX_BYTES else None

    # -- intake --------------------------------------------------------------------------

    async def _take(self, name: str, mtime: float, tg: anyio.abc.TaskGroup) -> None:
        """One new file: a recorded UUID is answered from its record, before any check;
        otherwise size, JSON (read once more after :data:`PARSE_RETRY` when it is not yet
        whole), validation and age, then admission into its session's queue."""
        stem = name[: -len(".json")]
        try:
            if _UUID.fullmatch(stem):
                record = await self.db(self.claims.record, stem)
                if record is not None:
                    if record.phase == "done" and record.result is not None:
                        await self._publish(stem, record.result, name)  # never re-run
                    return  # in its queue or under way: its result removes the file
            raw = await anyio.to_thread.run_sync(self._read, name)
            if raw is None:
                await self._refuse(stem, name, None, Refused("trigger too large (max 64 KiB)"))
                return
            try:
                body = parse(raw)
            except Refused:
                tg.start_soon(self._reread, name, mtime, tg)
                return
            await self._admit(stem, name, body, mtime, tg)
        except FileNotFoundError:
            self._seen.discard(name)  # withdrawn before it was admitted
        except Exception:
            log.exception("trigger %s could not be taken in", stem)

    async def _reread(self, name: str, mtime: float, tg: anyio.abc.TaskGroup) -> None:
        """The one parse retry: a file written in place may not have been whole."""
        stem = name[: -len(".json")]
        await anyio.sleep(PARSE_RETRY)
        await self.faults.ahit("trigger.reread", stem)
        try:
            raw = await anyio.to_thread.run_sync(self._read, name)
            try:
                body = parse(raw) if raw is not None else None
            except Refused as refused:
                await self._refuse(stem, name, None, refused)
                return
            if raw is None:
                await self._refuse(stem, name, None, Refused("trigger too large (max 64 KiB)"))
                return
            await self._admit(stem, name, body, mtime, tg)
        except FileNotFoundError:
            self._seen.discard(name)
        except Exception:
            log.exception("trigger %s could not be taken in", stem)

    async def _admit(
        self, stem: str, name: str, body: object, mtime: float, tg: anyio.abc.TaskGroup
    ) -> None:
        try:
            request = validate(stem, body, mtime)
            age = time.time() - mtime
            if age > self.max_age:
                raise Refused("stale trigger", self._stale(age))
        except Refused as refused:
            await self._refuse(stem, name, body, refused)
            return
        record = await self.db(
            self.claims.admit, request.uuid, request.session, request.to_json(), mtime
        )
        if record.phase == "queued":
            self._enqueue(request, tg)
        elif record.phase == "done" and record.result is not None:
            await self._publish(stem, record.result, name)

    def _stale(self, age: float) -> str:
        return f"published {age:.0f}s ago; the limit is {self.max_age:.0f}s (BAY_TRIGGER_MAX_AGE)"

    async def _refuse(self, stem: str, name: str, body: object, refused: Refused) -> None:
        """A refusal before admission: recorded under its UUID (a filename that is no UUID
        names no request, so it has no record), then published."""
        session = body.get("session") if isinstance(body, dict) else None
        answer = envelope(body, False, "refused", refused.reason, session, detail=refused.detail)
        if _UUID.fullmatch(stem):
            await self._finish(stem, answer["session"], answer, name)
        else:
            await self._publish(stem, json.dumps(answer), name, recorded=False)

    def _enqueue(self, request: Request, tg: anyio.abc.TaskGroup) -> None:
        queue = self._queues.setdefault(request.session, deque())
        queue.append(request)
        if len(queue) == 1:  # nobody is draining this session's queue yet
            tg.start_soon(self._drain, request.session)

    async def _drain(self, session: str) -> None:
        queue = self._queues[session]
        while queue and not self.life.stop_event.is_set():
            async with self._limiter:
                await self._handle(queue[0])
            queue.popleft()
        self._queues.pop(session, None)

    async def _handle(self, request: Request) -> None:
        """Claim, act, record, publish. Never raises: one request's failure stops no other
        (a request whose result could not even be recorded stays claimed, and the next
        keeper answers it ``interrupted by restart``)."""
        uuid = request.uuid
        try:
            before = await self.db(self.claims.claim, uuid)
            if before.phase == "done" and before.result is not None:
                await self._publish(uuid, before.result, request.name)
                return
            if before.phase != "queued":  # claimed before, by a keeper that is gone
                await self._finish(uuid, request.session, _interrupted(before))
                return
            await self.faults.ahit("trigger.claimed", uuid)
            age = time.time() - request.published_at
            if age > self.max_age:  # it waited in its queue (or through a restart)
                answer = envelope(
                    _sent(request),
                    False,
                    "refused",
                    "stale trigger",
                    request.session,
                    detail=self._stale(age),
                )
            else:
                try:
                    answer = await self._act(request)
                except Exception as exc:
                    log.exception("trigger %s failed", uuid)
                    now = await self.db(self.claims.record, uuid)
                    answer = envelope(
                        _sent(request),
                        False,
                        "refused",
                        "internal error",
                        request.session,
                        uncertain=now is not None and now.phase == "acting",
                        error=type(exc).__name__,
                        detail="see the keeper log",
                    )
            await self.faults.ahit("trigger.acted", uuid)
            await self._finish(uuid, request.session, answer)
        except Exception:
            log.exception("trigger %s: its result could not be recorded", uuid)

    async def _finish(
        self, uuid: str, session: str | None, answer: dict[str, Any], name: str | None = None
    ) -> None:
        """Record the terminal result (the first one stands), then publish what stands."""
        stored = await self.db(self.claims.finish, uuid, session, json.dumps(answer))
        await self.faults.ahit("trigger.recorded", uuid)
        await self._publish(uuid, stored, name or f"{uuid}.json")

    # -- the action ----------------------------------------------------------------------

    async def _act(self, request: Request) -> dict[str, Any]:
        """One action, through the keeper's guards (browserbay.keeper.roads) on the road
        ``trigger``: a human holding the controls, a backend switch's gap, a plugin's
        ``bay_before_verb`` veto and the domain fence refuse it as they refuse a verb, and
        a takeover cuts it as it cuts a verb. Every action that reached the guards is in the
        audit with its outcome."""
        args = {"url": request.url} if request.url else {}
        sid = request.session
        call = VerbCall(
            VERB[request.action], args, SessionRef(sid, "api"), None, "trigger", "trigger"
        )
        began = time.monotonic()
        state = _Attempt()
        answer = await self._guarded(request, call, state)
        if state.call is not None:  # it reached the guards: one audit row, as a verb's
            code = None if answer["ok"] else AUDIT_CODES.get(answer["reason"], answer["reason"])
            elapsed = (time.monotonic() - began) * 1000
            await self.guards.done(state.call, VerbOutcome(answer["ok"], code, elapsed))
        return answer

    async def _start(self, request: Request, state: _Attempt) -> None:
        """The action's first effect is next: from here an interruption may leave it done,
        and the record says so first."""
        await self.db(self.claims.acting, request.uuid)
        state.started = True
        await self.faults.ahit("trigger.acting", request.uuid)

    async def _guarded(self, request: Request, call: VerbCall, state: _Attempt) -> dict[str, Any]:
        guards, action, sid = self.guards, request.action, request.session
        sent = _sent(request)
        verb = verbs.BY_NAME[call.verb]

        def done(outcome: str, detail: str) -> dict[str, Any]:
            return envelope(sent, True, outcome, None, sid, detail=detail)

        def not_found(reason: str) -> dict[str, Any]:
            return envelope(sent, False, "not-found", reason, sid)

        try:
            with anyio.fail_after(request.timeout_ms / 1000):
                if action == "stop":
                    existing = self.roster.by_id.get(sid)
                    if existing is None or not existing.running_leases:
                        return not_found("no running browser for this session")
                    async with existing.lock:
                        running = existing.running_leases
                        state.call = call
                        # Nobody's road cuts a human off: refused while one holds the controls.
                        state.call = guards.check(call, None, ending=running)
                        await self._start(request, state)
                        for lease in running:
                            await self.leases.end(existing, lease, "trigger_stop")
                    return done("stopped", "stopped gracefully; its tabs are kept")
                session = self.roster.session(call.session, None)
                async with session.lock:
                    lease = await self.chooser.choose(session, request.profile, OWNER)
                    state.call = dataclasses.replace(call, profile=lease.profile)
                    state.call = guards.check(state.call, lease)
                    if action == "resume":
                        kept = []
                        for key in (lease.profile.id, lease.profile.id + PARKED):
                            kept += (await self.db(self.kept_tabs.kept, sid, key)).tabs
                        if not kept and lease.context is None:
                            return not_found("no kept tabs for this session")
                        await self._start(request, state)
                        before = len(lease.tabs)

                        async def resume() -> None:
                            await self.leases.ensure(session, lease)
                            await self.leases.resume_parked(session, lease)

                        await self.controls.run(lease, verb, call.args, False, resume)
                        return done("resumed", f"reopened {len(lease.tabs) - before} kept tab(s)")
                    await self._start(request, state)
                    url = request.url

                    async def navigate() -> str:
                        tab = await self.leases.current_tab(session, lease)
                        if url:
                            await goto_guarded(lease, tab.page, url, wait_until="load")
                        await self.leases.persist(session, lease)
                        return str(tab.page.url)

                    # A takeover during the navigation cuts it (browser_interrupted).
                    where = await self.controls.run(lease, verb, call.args, False, navigate)
                    session.last_used = time.monotonic()
                    return done("opened", f"browser running; current tab {where}")
        except Refusal as r:
            return envelope(
                sent,
                False,
                "refused",
                r.code,
                sid,
                uncertain=state.started and r.code == "browser_interrupted",
                detail=r.message,
            )
        except TimeoutError:
            return envelope(
                sent,
                False,
                "refused",
                "session action timed out",
                sid,
                uncertain=state.started,
                detail=f"timeout_ms ({request.timeout_ms}) ran out",
            )
        except Exception as exc:
            if type(exc).__module__.startswith("playwright"):
                text = str(exc).strip()
                return envelope(
                    sent,
                    False,
                    "refused",
                    "action_failed",
                    sid,
                    uncertain=state.started,
                    error=text.splitlines()[0] if text else type(exc).__name__,
                )
            raise

    # -- publication ---------------------------------------------------------------------

    async def _publish(
        self,
        stem: str,
        answer: str,
        name: str,
        recorded: bool = True,
        retries: tuple[float, ...] = PUBLISH_RETRIES,
    ) -> None:
        """The result file (atomically; left as it is when it already holds this result),
        then the request file is removed. A write that fails is retried after each of
        ``retries``, then once every :data:`REPUBLISH_EVERY` seconds from the loop, and
        logged — it never stops the intake, and until it succeeds the request stays in
        ``_seen`` (never taken again)."""
        data = answer.encode("utf-8")
        for delay in (0.0, *retries):
            await anyio.sleep(delay)
            try:
                await anyio.to_thread.run_sync(self._write, stem, data, name)
                break
            except OSError as exc:
                error = exc
        else:
            if stem not in self.unpublished:
                log.error("trigger %s: its result could not be written: %s", stem, error)
            self.unpublished[stem] = (answer, name)
            self._republish_at = time.monotonic() + REPUBLISH_EVERY
            return
        if self.unpublished.pop(stem, None) is not None:
            log.info("trigger %s: its result is written now", stem)
        if recorded:
            await self.db(self.claims.published, stem)
        self._seen.discard(name)
        outcome = json.loads(answer)
        log.info("trigger %s: %s %s", stem, outcome.get("action"), outcome.get("outcome"))

    def _write(self, stem: str, data: bytes, name: str) -> None:
        target = self.processed / f"{stem}.result.json"
        try:
            already = target.read_bytes() == data
        except FileNotFoundError:
            already = False
        if not already:
            tmp = self.processed / f".{stem}.{os.getpid()}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                half = len(data) // 2
                f.write(data[:half])
                f.flush()
                self.faults.hit("trigger.writing", stem)
                f.write(data[half:])
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, target)
            dirfd = os.open(self.processed, os.O_RDONLY)
            try:
                os.fsync(dirfd)
            finally:
                os.close(dirfd)
        self.faults.hit("trigger.written", stem)
        with contextlib.suppress(FileNotFoundError):
            (self.dir / name).unlink()


def _interrupted(record: TriggerRecord) -> dict[str, Any]:
    """The answer to a request an earlier keeper claimed and never finished: never acted on
    again; ``uncertain`` when its action had started (it may have taken effect)."""
    action = None
    if record.request is not None:
        action = Request.from_json(record.request).action
    acting = record.phase == "acting"
    return envelope(
        {"version": VERSION, "action": action},
        False,
        "refused",
        "interrupted by restart",
        record.session,
        uncertain=acting,
        detail=(
            "the keeper stopped while this request's action was under way; it may have taken effect"
            if acting
            else "the keeper stopped after claiming this request, before its action began; "
            "nothing of it was done"
        ),
    )


def triggers_dir(paths: BayPaths) -> Path:
    return paths.data / "triggers"
