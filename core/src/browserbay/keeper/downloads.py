"""Downloads a page starts: kept in the session's own directory, bounded per session.

Playwright saves a download into its artifacts directory (under the keeper's private
``run/tmp``); the keeper watches its size while it arrives and, once finished, moves it to
``<runtime>/downloads/<session>/`` (0700; the file 0600) under a name of its own making (the
page's suggested name, reduced to one safe path component: a name never leaves the
directory). A session's downloads together stay under ``max_bytes``
(``BAY_DOWNLOAD_MAX_MB``, default 100 MiB): a download that would pass it is cancelled as it
arrives, its partial file removed, and the session's next answer carries a notice saying so
with the way out. A finished download also leaves a notice: its name, its size and the
command that fetches it (``bay downloads get <name> <path>``: the bytes go through the
connection, browserbay.keeper.fileverbs).

A verb that clicks for a download (``bay download``) claims the session's next one instead
(:meth:`Downloads.claiming`): it is saved where the verb says (a staged file it then answers),
under the same bound, refused ``download_quota`` past it; nothing of it is kept here.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import secrets
import shlex
import unicodedata
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from browserbay.keeper.outputs import regular_files
from browserbay.paths import ensure_private
from browserbay.refusals import Refusal

if TYPE_CHECKING:
    from playwright.async_api import Download

    from browserbay.keeper.sessions import Session

log = logging.getLogger("browserbay.keeper")


#: How often an arriving download's size is read.
POLL_S = 0.1
#: The longest file name kept (characters).
MAX_NAME = 120

_UNSAFE = re.compile(r"[\x00-\x1f\x7f/\\:*?\"<>|]+")
_SESSION_SAFE = re.compile(r"[^A-Za-z0-9_-]+")


def session_dir(root: Path, session_id: str) -> Path:
    """The session's downloads directory: its id reduced to safe characters plus a checksum
    of the whole id (``..`` is a valid session id; it never names a parent here)."""
    safe = _SESSION_SAFE.sub("_", session_id)[:60].strip("_") or "session"
    return root / f"{safe}-{zlib.crc32(session_id.encode()):08x}"


def safe_name(suggested: str) -> str:
    """One path component: the last part of the suggested name, without separators,
    control characters or leading dots, at most :data:`MAX_NAME` characters."""
    name = unicodedata.normalize("NFC", suggested or "")
    name = name.replace("\\", "/").rsplit("/", 1)[-1]
    name = _UNSAFE.sub("_", name).strip(" .")
    if len(name) > MAX_NAME:
        stem, dot, ext = name.rpartition(".")
        keep = ext if dot and 0 < len(ext) <= 16 else ""
        name = (stem if keep else name)[: MAX_NAME - len(keep) - 1].rstrip(" .") + (
            "." + keep if keep else ""
        )
    return name or "download"


def _place(directory: Path, name: str, arrived: Path) -> Path:
    """Give the complete file ``arrived`` (a temporary name in ``directory``) its name there:
    ``name``, or ``name (2)``, ``name (3)``… if taken. A hard link never replaces what is
    there, and a file appears under its name only whole (a listing never shows it half
    arrived)."""
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem:
        stem, ext = name, ""
    n = 1
    path = directory / name
    while True:
        assert path.parent == directory
        try:
            os.link(arrived, path)
            break
        except FileExistsError:
            n += 1
            path = directory / (f"{stem} ({n}).{ext}" if ext else f"{stem} ({n})")
    arrived.unlink()
    return path


def _used(directory: Path) -> int:
    return sum(size for _, size, _ in regular_files(directory))


def _size(artifact: str) -> int:
    """The bytes arrived so far (Chromium writes ``<guid>.crdownload``, then ``<guid>``)."""
    for path in (artifact + ".crdownload", artifact):
        try:
            return os.stat(path).st_size
        except OSError:
            continue
    return 0


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB"


async def _discard(download: Download, artifact: str) -> None:
    """Remove what arrived of it (a cancelled one says so by raising: already gone), and
    the partial ``<artifact>.crdownload`` a cancel leaves for Chromium to remove in its own
    time: gone before the notice says so."""
    try:
        await download.delete()
    except Exception:
        log.debug("the download's file was already gone", exc_info=True)
    if artifact:
        partial = Path(artifact + ".crdownload")
        await anyio.to_thread.run_sync(functools.partial(partial.unlink, missing_ok=True))


def size_text(n: int) -> str:
    """``532 bytes``, ``12.3 KiB``, ``1.2 MiB``: a size as an answer says it."""
    if n < 10 * 1024:
        return f"{n} bytes"
    if n < 1 << 20:
        return f"{n / 1024:.1f} KiB"
    return _mib(n)


@dataclass
class Claim:
    """A verb waiting for the next download its session's pages start (``bay download``)."""

    arrived: anyio.Event = field(default_factory=anyio.Event)
    download: Download | None = None


@dataclass(frozen=True)
class Arrival:
    """How a download ended: ``size`` when it finished within the bound; ``over`` (the total
    it would have made) when it was cancelled at the bound; ``failure`` when it failed."""

    name: str
    artifact: str
    kept: int
    size: int = 0
    over: int | None = None
    failure: str | None = None


class Downloads:
    """The downloads of this keeper's sessions (``root``: ``<runtime>/downloads``)."""

    def __init__(self, root: Path, max_bytes: int):
        self.root = root
        #: The most bytes one session's downloads may weigh together (0: none is allowed).
        self.max_bytes = max_bytes
        #: session id -> {download key: bytes arrived so far} of downloads still arriving.
        self.arriving: dict[str, dict[int, int]] = {}
        #: session id -> the verb waiting for its next download (``bay download``).
        self.claims: dict[str, Claim] = {}

    def directory(self, session_id: str) -> Path:
        """The session's own downloads directory (it may not exist yet)."""
        return session_dir(self.root, session_id)

    def watch(self, page: Any, session_of: Callable[[], Session | None]) -> None:
        """Take every download of ``page`` for the session ``session_of()`` answers (or
        hand it to the verb of that session waiting for one: :meth:`claiming`)."""

        async def on_download(download: Download) -> None:
            session = session_of()
            claim = self.claims.pop(session.ref.id, None) if session is not None else None
            if claim is not None:
                claim.download = download
                claim.arrived.set()
                return
            try:
                await self.take(download, session)
            except Exception:
                log.exception("a download could not be handled")
                try:
                    await download.cancel()
                except Exception:
                    log.debug("cancelling it failed too", exc_info=True)

        page.on("download", on_download)

    @contextlib.contextmanager
    def claiming(self, session_id: str) -> Iterator[Claim]:
        """While inside, the next download a page of the session starts is the caller's
        (``claim.download`` once ``claim.arrived``), not kept in its directory; one that
        starts after is kept as usual."""
        claim = Claim()
        self.claims[session_id] = claim
        try:
            yield claim
        finally:
            if self.claims.get(session_id) is claim:
                del self.claims[session_id]

    async def _arrive(self, download: Download, sid: str) -> Arrival:
        """Wait until ``download`` has finished, failed, or been cancelled at the session's
        bound (counting what its directory keeps and what else arrives meanwhile)."""
        directory = self.directory(sid)
        name = safe_name(download.suggested_filename)
        # The file Chromium writes as it arrives: Playwright offers no public name for it
        # before the download finished (its artifact's absolutePath, plus .crdownload).
        impl: Any = getattr(download, "_impl_obj", download)
        artifact = str(impl._artifact._initializer.get("absolutePath") or "")
        arriving = self.arriving.setdefault(sid, {})
        key = id(download)
        arriving[key] = 0
        over: int | None = None
        try:
            kept = await anyio.to_thread.run_sync(_used, directory)
            finished = anyio.Event()

            async def poll() -> None:
                nonlocal over
                while not finished.is_set():
                    arriving[key] = await anyio.to_thread.run_sync(_size, artifact)
                    total = kept + sum(arriving.values())
                    if total > self.max_bytes or self.max_bytes == 0:
                        over = total
                        await download.cancel()
                        return
                    await anyio.sleep(POLL_S)

            async with anyio.create_task_group() as tg:
                tg.start_soon(poll)
                failure = await download.failure()  # waits until it finished or stopped
                finished.set()
                tg.cancel_scope.cancel()
            size = 0
            if failure is None and over is None:  # finished: its real size decides
                done = await download.path()
                size = await anyio.to_thread.run_sync(_size, str(done))
                total = kept + size + sum(v for k, v in arriving.items() if k != key)
                if total > self.max_bytes:
                    over = total
            return Arrival(name, artifact, kept, size, over, failure if over is None else None)
        finally:
            arriving.pop(key, None)

    def _over(self, arrival: Arrival) -> str:
        return (
            f"download {arrival.name!r} cancelled: it would pass this session's download "
            f"bound ({_mib(self.max_bytes)}, BAY_DOWNLOAD_MAX_MB; {_mib(arrival.kept)} kept); "
            "bay downloads clear makes room, or ask the user to raise the bound"
        )

    async def take(self, download: Download, session: Session | None) -> None:
        """Keep a download a page started by itself in its session's directory, and tell
        the session at its next answer (name, size, the command that fetches it)."""
        if session is None:  # a page of no session: nobody to keep it for
            await download.cancel()
            return
        sid = session.ref.id
        directory = self.directory(sid)
        await anyio.to_thread.run_sync(ensure_private, self.root)
        await anyio.to_thread.run_sync(ensure_private, directory)
        arrival = await self._arrive(download, sid)
        if arrival.over is not None:
            await _discard(download, arrival.artifact)
            session.notices.append(self._over(arrival))
            log.info("a download of session %s was cancelled at the bound", sid)
            return
        if arrival.failure is not None:
            await _discard(download, arrival.artifact)
            session.notices.append(f"download {arrival.name!r} failed: {arrival.failure[:200]}")
            return
        # Saved under a name no listing shows (no kept name starts with a dot), then named.
        arrived = directory / f".{secrets.token_hex(8)}.part"
        try:
            await download.save_as(arrived)
            await anyio.to_thread.run_sync(os.chmod, arrived, 0o600)
            target = await anyio.to_thread.run_sync(_place, directory, arrival.name, arrived)
            # Said at once: the answer that lists it may be the next (no await in between).
            session.notices.append(
                f"the page downloaded {target.name!r} ({size_text(arrival.size)}), kept for "
                f"you: bay downloads get {shlex.quote(target.name)} <path>"
            )
        except BaseException:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(functools.partial(arrived.unlink, missing_ok=True))
            raise
        finally:
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await download.delete()

    async def receive(self, download: Download, session_id: str, dest: Path) -> Arrival:
        """Save a download a verb claimed (``bay download``) at ``dest`` (a staged file of
        the keeper's), within the session's bound: past it the download is cancelled and
        refused ``download_quota``, a failed one ``action_failed``; nothing of it is kept
        either way (a verb cut meanwhile cancels it too)."""
        try:
            arrival = await self._arrive(download, session_id)
            if arrival.over is not None:
                raise Refusal(
                    "download_quota",
                    name=arrival.name,
                    limit=_mib(self.max_bytes),
                    kept=_mib(arrival.kept),
                )
            if arrival.failure is not None:
                reason = f"the download failed: {arrival.failure[:200]}"
                raise Refusal("action_failed", verb="download", reason=reason)
            await download.save_as(dest)
            await anyio.to_thread.run_sync(os.chmod, dest, 0o600)
            return arrival
        except BaseException:
            with anyio.CancelScope(shield=True):
                with contextlib.suppress(Exception):
                    await download.cancel()
                await _discard(download, "")
                await anyio.to_thread.run_sync(functools.partial(dest.unlink, missing_ok=True))
            raise
        finally:
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await download.delete()
