"""Downloads a page starts: kept in the session's own directory, bounded per session.

Until the downloads verbs exist (issue 18), this is the whole policy: Playwright saves a
download into its artifacts directory (under the keeper's private ``run/tmp``); the keeper
watches its size while it arrives and, once finished, moves it to
``<runtime>/downloads/<session>/`` (0700; the file 0600) under a name of its own making (the
page's suggested name, reduced to one safe path component: a name never leaves the
directory). A session's downloads together stay under ``max_bytes``
(``BAY_DOWNLOAD_MAX_MB``, default 100 MiB): a download that would pass it is cancelled as it
arrives, its partial file removed, and the session's next answer carries a notice saying so
with the way out. A finished download also leaves a notice (where it is).
"""

from __future__ import annotations

import functools
import logging
import os
import re
import unicodedata
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from browserbay.keeper.outputs import regular_files
from browserbay.paths import ensure_private

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


def _reserve(directory: Path, name: str) -> Path:
    """A new empty 0600 file ``directory/name`` (or ``name (2)``, ``name (3)``… if taken),
    made with O_EXCL so that nothing there is ever written through or over."""
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem:
        stem, ext = name, ""
    n = 1
    path = directory / name
    while True:
        assert path.parent == directory
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            return path
        except FileExistsError:
            n += 1
            path = directory / (f"{stem} ({n}).{ext}" if ext else f"{stem} ({n})")


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


class Downloads:
    """The downloads of this keeper's sessions (``root``: ``<runtime>/downloads``)."""

    def __init__(self, root: Path, max_bytes: int):
        self.root = root
        #: The most bytes one session's downloads may weigh together (0: none is allowed).
        self.max_bytes = max_bytes
        #: session id -> {download key: bytes arrived so far} of downloads still arriving.
        self.arriving: dict[str, dict[int, int]] = {}

    def watch(self, page: Any, session_of: Callable[[], Session | None]) -> None:
        """Take every download of ``page`` for the session ``session_of()`` answers."""

        async def on_download(download: Download) -> None:
            try:
                await self.take(download, session_of())
            except Exception:
                log.exception("a download could not be handled")
                try:
                    await download.cancel()
                except Exception:
                    log.debug("cancelling it failed too", exc_info=True)

        page.on("download", on_download)

    async def take(self, download: Download, session: Session | None) -> None:
        if session is None:  # a page of no session: nobody to keep it for
            await download.cancel()
            return
        sid = session.ref.id
        directory = session_dir(self.root, sid)
        await anyio.to_thread.run_sync(ensure_private, self.root)
        await anyio.to_thread.run_sync(ensure_private, directory)
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
            if over is not None:
                await _discard(download, artifact)
                session.notices.append(
                    f"download {name!r} cancelled: it would pass this session's download "
                    f"bound ({_mib(self.max_bytes)}, BAY_DOWNLOAD_MAX_MB; {_mib(kept)} kept in "
                    f"{directory}); remove files there, or ask the user to raise the bound"
                )
                log.info("a download of session %s was cancelled at the bound", sid)
                return
            if failure is not None:
                await _discard(download, artifact)
                session.notices.append(f"download {name!r} failed: {failure[:200]}")
                return
            target = await anyio.to_thread.run_sync(_reserve, directory, name)
            await download.save_as(target)
            await download.delete()
            await anyio.to_thread.run_sync(os.chmod, target, 0o600)
            session.notices.append(f"downloaded {target.name!r} ({_mib(size)}) to {target}")
        finally:
            arriving.pop(key, None)
