"""``bay record start <file.webm|.mp4> [--cursor]`` / ``bay record stop``: a video of the
session's current tab, from its screencast, encoded off the loop (the recorder:
:mod:`browserbay.keeper.recorder`, which says the bounds, the encoder and the file's mode).

The keeper writes the file at the caller's path, as its own user: ``record start`` is
owner-only on a session socket (a sandboxed agent's paths are not the keeper's). Moving the
bytes through the connection instead (``FILE_OUT``) would need the destination at the stop,
two commands apart, and a recording may outweigh what one answer carries.
"""

from __future__ import annotations

import importlib
import os
import secrets
from pathlib import Path

import anyio

from browserbay.keeper.act import Act
from browserbay.keeper.pageverbs import Answer, page_verb
from browserbay.keeper.recorder import (
    DEFAULT_MB,
    DEFAULT_SECONDS,
    FORMATS,
    JPEG_QUALITY,
    MAX_EDGE,
    MOST_MB,
    MOST_SECONDS,
    Encoder,
    Limits,
    Recording,
    Recordings,
)
from browserbay.refusals import Refusal
from browserbay.screencast import Screencast


def encoder_missing() -> str | None:
    """Why PyAV, the optional encoder, does not load (None: it does)."""
    try:
        importlib.import_module("av")
    except ImportError as exc:
        return str(exc)[:200] or type(exc).__name__
    return None


async def require_encoder() -> None:
    """Refuse ``recorder_unavailable`` when PyAV does not load (its import, off the loop)."""
    missing = await anyio.to_thread.run_sync(encoder_missing)
    if missing is not None:
        raise Refusal(
            "recorder_unavailable",
            reason=f"PyAV (the av package) does not load in the keeper: {missing}",
            fix="install browserbay-core[record] (PyAV) into bay's environment, then "
            "bay keeper stop",
        )


def _limits(act: Act) -> Limits:
    def bounded(name: str, default: float, most: float) -> float:
        value = act.args.get(name)
        number = default if value is None else float(value)
        if not 0 < number <= most:
            flag = "--" + name.replace("_", "-")
            raise Refusal(
                "usage", detail=f"{flag} must be more than 0 and at most {most:g}", verb="record"
            )
        return number

    seconds = bounded("max_seconds", DEFAULT_SECONDS, MOST_SECONDS)
    mb = bounded("max_mb", DEFAULT_MB, MOST_MB)
    return Limits(seconds, int(mb * (1 << 20)))


def part_file(dest: Path) -> tuple[int, Path]:
    """The 0600 temporary file beside the destination (its directory must be writable)."""
    part = dest.with_name(f".{dest.name}.{secrets.token_hex(4)}.part")
    return os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600), part


async def start(act: Act, book: Recordings) -> Answer:
    lease = act.lease
    raw = str(act.args.get("path") or "")
    if not raw:
        raise Refusal(
            "usage", detail="record start needs a file: bay record start demo.webm", verb="record"
        )
    dest = Path(raw)
    if dest.suffix.lower() not in FORMATS:
        raise Refusal(
            "usage",
            detail=f"record start writes .webm (VP8) or .mp4 (H.264), not {dest.name!r}",
            verb="record",
        )
    running = book.get(lease.session.id, lease.profile.id)
    if running is not None and not running.done.is_set():
        raise Refusal("recording_running", path=running.path, tab=running.tab)
    await require_encoder()
    limits = _limits(act)
    try:
        fd, part = await anyio.to_thread.run_sync(part_file, dest)
    except OSError as exc:
        raise Refusal(
            "file_unwritable", path=raw, reason=exc.strerror or type(exc).__name__
        ) from None
    encoder = Encoder(fd, part, dest, limits)
    tab = act.tab
    cast = Screencast(tab.id, tab.page, lambda c: recording.gone(c), MAX_EDGE, JPEG_QUALITY)
    cursor = bool(act.args.get("cursor"))

    def point() -> tuple[float, float] | None:
        """Where the agent last pointed on this tab, as fractions of its viewport."""
        at = lease.agent_point
        if at is None or at[0] != tab.id or cast.viewport is None:
            return None
        return at[1] / cast.viewport[0], at[2] / cast.viewport[1]

    recording = Recording(
        encoder, cast, tab.id, raw, point if cursor else None, act.notify or (lambda _n: None)
    )
    try:
        await encoder.start()
    except OSError as exc:
        await anyio.to_thread.run_sync(encoder.part.unlink)
        raise Refusal(
            "recorder_unavailable",
            reason=f"the encoder process did not start: {exc}",
            fix="bay doctor, then bay keeper logs",
        ) from None
    cast.viewers.add(recording)
    try:
        await cast.start()
    except Exception as exc:
        await recording.finish()
        raise Refusal(
            "action_failed", verb="record", reason=f"the screencast did not start: {exc}"
        ) from None
    book.put(lease.session.id, lease.profile.id, recording)
    data = {"recording": True, **recording.row(), "cursor": cursor}
    return data, (
        f"recording tab {tab.id} to {raw} (at most {limits.seconds:g} s, "
        f"{limits.bytes >> 20} MiB); bay record stop ends it"
    )


#: How long ``record stop`` waits for a tab's first frame when none has come yet (seconds).
FIRST_FRAME_WAIT = 2.0


async def stop(act: Act, book: Recordings) -> Answer:
    recording = book.pop(act.lease.session.id, act.lease.profile.id)
    if recording is None:
        raise Refusal("no_recording", fix="bay record start demo.webm")
    # A stop right after the start (a few ms with the native bay) may come before the tab's
    # first screencast frame: wait for it, bounded, rather than refuse a recording that
    # would have had it a moment later.
    if recording.stopped is None and recording.encoder.error is None:
        with anyio.move_on_after(FIRST_FRAME_WAIT):
            await recording.encoder.offered.wait()
    await recording.finish()
    enc = recording.encoder
    if enc.error is not None:
        raise Refusal("action_failed", verb="record", reason=f"the encoder failed: {enc.error}")
    data = {"recording": False, **recording.row(), "stopped": recording.stopped}
    if not enc.frames:
        raise Refusal(
            "action_failed",
            verb="record",
            reason="no frame came from the tab (nothing was written)",
        )
    text = f"{recording.path}: {enc.frames} frames, {enc.size[0]}x{enc.size[1]}"
    if recording.stopped:
        text += f" (stopped before: {recording.stopped})"
    return data, text


@page_verb("record")
async def verb_record(act: Act) -> Answer:
    book = act.recordings
    if book is None:
        raise Refusal(
            "recorder_unavailable",
            reason="this keeper keeps no recordings",
            fix="bay keeper stop  (the next command starts a keeper that does)",
        )
    if act.args.get("action") == "start":
        return await start(act, book)
    return await stop(act, book)
