"""Continuous recording: a persistent profile the owner opted in (``bay recording on
<profile>``) has every tab of its sessions recorded, from the tab's screencast, into video
segments under the trace store (``<data>/traces/<key>/rec-<ms>-<tab>.webm`` and its sidecar
``.json``), pruned by the trace's own :class:`~browserbay.tracestore.Retention` with the same
:func:`~browserbay.tracestore.prune` that removes trace actions (a segment is a unit of its
own: docs/trace.md "Recording").

Each segment is one :class:`~browserbay.keeper.recorder.Recording` (the recorder ``bay record``
uses: encoded off the loop in a process of its own, latest frame wins, 0600, renamed into
place only when complete), bounded in time (:data:`SEGMENT_SECONDS`), size
(:data:`SEGMENT_MB`) and frame rate (:data:`FPS`); at a bound the next segment starts. A
segment does not start when the trace store's disk has less than :data:`MIN_FREE` free, and
an encoder that fails (a disk that filled up) stops the profile's recording: its sessions are
told, the keeper goes on serving, and the owner turns it on again once there is room.

The agent is told once per (session, profile) that it is being recorded: a notice with its
next answer. The opt-in is kept in ``<state>/recording.json`` (0600), read at the keeper's
start: a setting of the owner's home, like the trace's own ``BAY_TRACE``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import shutil
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from browserbay.keeper.channels import OWNER, Channel
from browserbay.keeper.pageverbs import Answer
from browserbay.keeper.profiles import ProfileBook
from browserbay.keeper.recorder import JPEG_QUALITY, MAX_EDGE, Encoder, Limits, Recording
from browserbay.keeper.recording import part_file, require_encoder
from browserbay.keeper.sessions import Lease, Session, Tab
from browserbay.paths import ensure_private, write_private
from browserbay.refusals import Refusal
from browserbay.screencast import Screencast
from browserbay.tracestore import Retention, prune, trace_key

log = logging.getLogger("browserbay.keeper")

#: A segment's bounds: at either the next one starts.
SEGMENT_SECONDS = 300.0
SEGMENT_MB = 64
#: The frames a second a continuous recording asks of the screencast (``bay record``: 10).
FPS = 5.0
#: A segment does not start with less free space than this on the trace store's disk.
MIN_FREE = 32 << 20
OPT_IN_FILE = "recording.json"
NOTICE = (
    "this profile ({label}) is being recorded: a video of every tab of its sessions, kept in "
    "its trace (the owner's continuous recording; bay recording off {label} is the owner's)"
)


class OptIns:
    """The profiles whose sessions are recorded, by id, kept in a 0600 file of the state dir
    (written off the loop)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.ids: set[str] = set()

    async def load(self) -> None:
        """Read the file (off the loop): at the keeper's start. A missing or unreadable file
        is no opt-in."""
        self.ids = await anyio.to_thread.run_sync(self._read)

    def _read(self) -> set[str]:
        with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
            said = json.loads(self.path.read_text(encoding="utf-8"))
            return {str(p) for p in said.get("profiles", [])}
        return set()

    async def save(self) -> None:
        body = json.dumps({"profiles": sorted(self.ids)}).encode()
        await anyio.to_thread.run_sync(write_private, self.path, body)


@dataclass
class Tape:
    """One tab's continuous recording: the segment being written, the task that rolls them."""

    lease: Lease
    tab: Tab
    session: str
    recording: Recording | None = None
    stopping: bool = False
    done: anyio.Event = field(default_factory=anyio.Event)
    task: asyncio.Task[None] | None = None


def _sidecar(segment: Recording, tape: Tape, started: float, ended: float) -> bytes:
    enc = segment.encoder
    return json.dumps(
        {
            "video": enc.dest.name,
            "tab": tape.tab.id,
            "session": tape.session,
            "profile": tape.lease.profile.id,
            "started": started,
            "ended": ended,
            "frames": enc.frames,
            "dropped": enc.dropped,
            "size": list(enc.size),
            "stopped": segment.stopped,
        }
    ).encode()


def _room(d: Path) -> str | None:
    """Make the profile's trace directory; why a segment cannot start there (None: it can)."""
    ensure_private(d.parent)
    ensure_private(d)
    free = shutil.disk_usage(d).free
    if free < MIN_FREE:
        return (
            f"the disk of {d.parent} is full ({free >> 20} MiB free, a segment needs "
            f"{MIN_FREE >> 20})"
        )
    return None


class Continuous:
    """The keeper's continuous recordings. ``sync`` (after each verb of a session, under its
    lock) starts a tape for every tab of an opted-in profile that has none; a tape ends with
    its tab, with ``off`` or with the keeper."""

    def __init__(
        self,
        opt_ins: OptIns,
        root: Path,
        retention: Callable[[], Retention],
        sessions: Mapping[str, Session],
        profiles: ProfileBook,
    ) -> None:
        self.opt_ins = opt_ins
        self.root = root
        self.retention = retention
        self.sessions = sessions
        self.profiles = profiles
        self._tapes: dict[str, Tape] = {}
        self._told: set[tuple[str, str]] = set()
        #: Profiles whose recording stopped by itself (a full disk), and why, until ``on``.
        self.failed: dict[str, str] = {}

    # -- the tapes ----------------------------------------------------------------------

    def sync(self, session: Session) -> None:
        """Start recording each tab of the session's opted-in leases that is not yet; tell the
        session once that it is recorded (quick: the tapes start as tasks of the loop)."""
        for lease in session.running_leases:
            pid = lease.profile.id
            if pid not in self.opt_ins.ids or pid in self.failed or lease.window is not None:
                continue
            for tab_id, tab in lease.tabs.items():
                if tab_id in self._tapes or tab.page.is_closed():
                    continue
                tape = Tape(lease, tab, session.ref.id)
                self._tapes[tab_id] = tape
                self._spawn(tape)
            if (session.ref.id, pid) not in self._told:
                self._told.add((session.ref.id, pid))
                session.notices.append(NOTICE.format(label=lease.profile.label))

    def _spawn(self, tape: Tape) -> None:
        # The loop's own task: a tape outlives the verb that started it.
        tape.task = task = asyncio.get_running_loop().create_task(self._run(tape))
        task.add_done_callback(lambda _t: self._tapes.pop(tape.tab.id, None))

    async def _run(self, tape: Tape) -> None:
        try:
            while not tape.stopping and not tape.tab.page.is_closed():
                if not await self._segment(tape):
                    return
        except Exception as exc:  # never the keeper's: said to the sessions, logged
            log.exception("continuous recording of tab %s failed", tape.tab.id)
            self._fail(tape.lease.profile.id, f"{type(exc).__name__}: {exc}"[:200])
        finally:
            tape.done.set()

    async def _segment(self, tape: Tape) -> bool:
        """Record one segment of the tab; whether the next should follow."""
        pid = tape.lease.profile.id
        d = self.root / trace_key(pid)
        retention = self.retention()
        await anyio.to_thread.run_sync(prune, self.root, retention)
        full = await anyio.to_thread.run_sync(_room, d)
        if full is not None:
            self._fail(pid, full)
            return False
        started = time.time()
        dest = d / f"rec-{int(started * 1000):013d}-{tape.tab.id}.webm"
        fd, part = await anyio.to_thread.run_sync(part_file, dest)
        encoder = Encoder(fd, part, dest, Limits(SEGMENT_SECONDS, SEGMENT_MB << 20))
        began = time.monotonic()
        tab = tape.tab
        cast = Screencast(tab.id, tab.page, lambda c: segment.gone(c), MAX_EDGE, JPEG_QUALITY)
        segment = Recording(encoder, cast, tab.id, str(dest), None, lambda _said: None)
        segment.fps = FPS
        try:
            await encoder.start()
        except OSError as exc:
            await anyio.to_thread.run_sync(part.unlink)
            self._fail(pid, f"the encoder process did not start: {exc}")
            return False
        tape.recording = segment
        cast.viewers.add(segment)
        try:
            await cast.start()
        except Exception:  # the tab closed meanwhile
            await segment.finish()
            return False
        if tape.stopping:  # turned off while it started
            await segment.finish()
        await segment.done.wait()
        ended = time.time()
        # The video's clock began at the encoder's start, in wall-clock terms:
        zero = started + (encoder.begun - began)
        if encoder.error is not None:
            self._fail(pid, f"the encoder failed: {encoder.error}")
            return False
        if encoder.frames:
            side = dest.with_suffix(".json")
            body = _sidecar(segment, tape, zero, ended)
            await anyio.to_thread.run_sync(write_private, side, body)
        await anyio.to_thread.run_sync(prune, self.root, retention)
        return encoder.over is not None  # a bound rolled it: the next segment

    def _fail(self, profile_id: str, why: str) -> None:
        """The profile's recording stops: every session on it is told, once."""
        if profile_id in self.failed:
            return
        self.failed[profile_id] = why
        label = profile_id
        for session in self.sessions.values():
            lease = session.leases.get(profile_id)
            if lease is None:
                continue
            label = lease.profile.label
            session.notices.append(
                f"the continuous recording of profile {label} stopped: {why}; the keeper goes "
                f"on, this profile is no longer recorded (the owner: free space, then "
                f"bay recording on {label})"
            )
        log.warning("continuous recording of profile %s stopped: %s", label, why)
        for tape in self._of(profile_id):
            tape.stopping = True

    def _of(self, profile_id: str) -> list[Tape]:
        return [t for t in self._tapes.values() if t.lease.profile.id == profile_id]

    async def stop(self, tapes: Iterable[Tape]) -> None:
        """End these tapes, their segments complete on disk."""
        tapes = list(tapes)
        for tape in tapes:
            tape.stopping = True
            if tape.recording is not None:
                await tape.recording.finish()
        for tape in tapes:
            with anyio.move_on_after(10):
                await tape.done.wait()

    async def close(self) -> None:
        """The keeper stops: every segment is finished first."""
        await self.stop(list(self._tapes.values()))

    def recording(self, tab_id: str) -> bool:
        return tab_id in self._tapes

    # -- bay recording ------------------------------------------------------------------

    async def verb(self, args: dict[str, Any], handle: str | None, channel: Channel) -> Answer:
        action = str(args.get("action") or "list")
        if action == "list":
            return self._listing()
        given = args.get("profile")
        if not given:
            raise Refusal(
                "usage",
                detail=f"recording {action} needs a profile: bay recording {action} work",
                verb="recording",
            )
        row = await self.profiles.find_fresh(str(given), OWNER)
        if action == "on":
            await require_encoder()
            again = row.id in self.opt_ins.ids and row.id not in self.failed
            self.failed.pop(row.id, None)
            if not again:
                self.opt_ins.ids.add(row.id)
                await self.opt_ins.save()
                for session in self.sessions.values():
                    if row.id in session.leases:
                        self.sync(session)
            data = {"profile": row.id, "label": row.label, "recording": True, "changed": not again}
            if again:
                return data, (
                    f"continuous recording of {row.label} ({row.id}) is already on "
                    f"(bay recording off {row.label} ends it)"
                )
            return data, (
                f"continuous recording of {row.label} ({row.id}) is on: every tab of its "
                f"sessions is recorded into its trace (each session is told once); "
                f"bay recording off {row.label} ends it"
            )
        was = row.id in self.opt_ins.ids
        self.opt_ins.ids.discard(row.id)
        self.failed.pop(row.id, None)
        self._told = {t for t in self._told if t[1] != row.id}
        if was:
            await self.opt_ins.save()
        await self.stop(self._of(row.id))
        data = {"profile": row.id, "label": row.label, "recording": False, "changed": was}
        if not was:
            return data, f"continuous recording of {row.label} ({row.id}) was not on"
        return data, f"continuous recording of {row.label} ({row.id}) is off"

    def _listing(self) -> Answer:
        rows = []
        for row in self.profiles.rows.values():
            if row.id not in self.opt_ins.ids:
                continue
            tabs = sorted(t.tab.id for t in self._of(row.id))
            rows.append(
                {
                    "profile": row.id,
                    "label": row.label,
                    "tabs": tabs,
                    "stopped": self.failed.get(row.id),
                    "dir": str(self.root / trace_key(row.id)),
                }
            )
        if not rows:
            return {"profiles": []}, "no profile is recorded (bay recording on <profile>)"
        lines = [
            f"{r['label']} ({r['profile']}): "
            + (f"stopped: {r['stopped']}" if r["stopped"] else f"recording tabs {r['tabs']}")
            for r in rows
        ]
        return {"profiles": rows}, "\n".join(lines)
