"""The keeper's side of files moving through the connection (:mod:`browserbay.transfer`).

A verb's file argument is the caller's file, on the caller's machine (which may be a sandbox
sharing no filesystem with the keeper): the keeper never opens that path. It gets the bytes
in ``put`` frames and answers bytes in ``get`` frames, both answered by the daemon on the
connection they came in on, bound to it:

- :class:`Carrier` (one per keeper): the staging directory (``<runtime>/transfers``, 0700)
  and the bounds on what is staged at once: one command's files (:data:`transfer.MAX_IN`, a
  connection's), one party's connections together (:data:`PER_SESSION`: a session socket's
  session with its child sessions, or the owner's channel), every connection together
  (:data:`MAX_STAGED`). One agent cannot take the keeper's whole staging from the others.
- :class:`Carried` (one per connection): its staged uploads (each a 0600 file named as the
  caller's file was, in a directory of its own: Playwright's ``set_input_files`` takes the
  name from the path) and its offers (files the keeper answers). A handle is 64 random bits
  and is looked up in its own connection's book only: no other connection — another
  session's socket, or the owner's — can name it. Uploads go when the next verb on the
  connection has been answered; an offer once its last byte is fetched; everything when the
  connection ends.
- :class:`SessionFiles` (one per keeper): what a session keeps beyond its connections — its
  kept downloads and the uploads set on its inputs — removed when the session is closed.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import logging
import os
import secrets
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from browserbay import transfer
from browserbay.keeper.channels import Channel, Grant
from browserbay.keeper.downloads import safe_name, session_dir
from browserbay.paths import ensure_private
from browserbay.refusals import Refusal

log = logging.getLogger("browserbay.keeper")

#: The most bytes one party's connections (a session with its children, or the owner's
#: channel) stage at once: two commands' worth.
PER_SESSION = 2 * transfer.MAX_IN
#: The most bytes every connection's staged uploads weigh together.
MAX_STAGED = 8 * transfer.MAX_IN


@dataclass
class Received:
    """A file the caller sent, staged for the verb that names it."""

    handle: str
    path: Path
    name: str
    size: int
    received: int = 0

    @property
    def complete(self) -> bool:
        return self.received == self.size


@dataclass
class Offer:
    """A file the keeper answers: ``path`` is the keeper's own (staged, or a kept download);
    ``remove``: it goes once fetched (a staged copy), else it is left where it is."""

    handle: str
    path: Path
    name: str
    size: int
    remove: bool

    def row(self) -> dict[str, Any]:
        """What the verb's answer carries as ``data.file``."""
        return {"handle": self.handle, "name": self.name, "size": self.size}


def party_of(channel: Channel, grant_of: Callable[[str], Grant | None]) -> str:
    """Whose staging bound a connection on ``channel`` counts against: the owner's channel is
    one party (``owner``: anything on it is the owner); a session socket's is the session at
    the root of its grants' family (``grant_of``: a live session's grant), since a session
    mints child sessions, each with a socket of its own, and must not multiply its share."""
    if channel.link is not None:  # another keeper's requests: one party per keeper
        return "fleet:" + channel.link.keeper
    grant = channel.grant
    if grant is None:
        return "owner"
    for _ in range(64):  # a family is never that deep; a loop is never followed for ever
        parent = grant_of(grant.parent) if grant.parent is not None else None
        if parent is None:
            break
        grant = parent
    return "session:" + grant.session


def _bad(reason: str) -> Refusal:
    return Refusal("bad_frame", reason=reason)


def _append(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _read(path: Path, offset: int, size: int) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        return os.pread(fd, size, offset)
    finally:
        os.close(fd)


def _write_new(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


class Carrier:
    """Every connection's files: where they are staged, and the bound on them together."""

    def __init__(
        self, root: Path, max_staged: int = MAX_STAGED, per_session: int = PER_SESSION
    ) -> None:
        self.root = root
        self.max_staged = max_staged
        self.per_session = per_session
        #: Bytes every connection's uploads have declared, staged or arriving.
        self.staged = 0
        #: The same, per party (:meth:`connection`).
        self.by_party: dict[str, int] = {}

    def reserve(self, party: str, size: int) -> None:
        """Count ``size`` declared bytes against ``party``'s bound and the keeper's, or
        refuse them (``too_large`` naming the bound that is full)."""
        mine = self.by_party.get(party, 0)
        if mine + size > self.per_session:
            raise Refusal(
                "too_large",
                what="the files your session's connections (its child sessions' included) are "
                f"sending at once ({transfer.mib(mine + size)})",
                size=mine + size,
                limit=self.per_session,
                fix=f"a session stages at most {transfer.mib(self.per_session)} at once: let "
                "its other uploads finish (or close their connections), then send it again",
            )
        if self.staged + size > self.max_staged:
            raise Refusal(
                "too_large",
                what="the files every connection is sending to this keeper at once",
                size=self.staged + size,
                limit=self.max_staged,
                fix="wait a moment and send it again",
            )
        self.by_party[party] = mine + size
        self.staged += size

    def release(self, party: str, size: int) -> None:
        self.staged -= size
        left = self.by_party.get(party, 0) - size
        if left > 0:
            self.by_party[party] = left
        else:
            self.by_party.pop(party, None)

    @property
    def uploads_root(self) -> Path:
        """Where the sessions' kept uploads are (``<runtime>/uploads``): :meth:`Carried.settle`."""
        return self.root.parent / "uploads"

    def connection(self, party: str) -> Carried:
        """A new connection's book (empty; its directory is made at its first file).
        ``party``: whose bound its uploads count against (:func:`party_of`)."""
        return Carried(self, self.root / secrets.token_hex(8), party)


class SessionFiles:
    """A session's files on the keeper's disk that outlive a verb: its kept downloads
    (``<runtime>/downloads/<session>``) and the uploads set on its inputs
    (``<runtime>/uploads/<session>``, :meth:`Carried.settle`). Both are removed when the
    session is closed — its own ``bay close`` (of the whole session), or its end as a child
    (its parent closed or idled out, or the parent's grant was revoked or expired) — since its
    browser contexts are gone by then. An idle stop, the close of one of its profiles
    (``bay close <profile>``) and the end of its own grant keep them: the session goes on,
    and may still fetch a download."""

    def __init__(self, downloads: Path, uploads: Path) -> None:
        self.downloads = downloads
        self.uploads = uploads

    def of(self, session_id: str) -> tuple[Path, Path]:
        return session_dir(self.downloads, session_id), session_dir(self.uploads, session_id)

    async def remove(self, session_id: str) -> None:
        """Remove the session's downloads and uploads (nothing when it has none)."""
        for directory in self.of(session_id):
            await anyio.to_thread.run_sync(
                functools.partial(shutil.rmtree, directory, ignore_errors=True)
            )


@dataclass
class Carried:
    """One connection's files (see the module's docstring)."""

    carrier: Carrier
    directory: Path
    party: str
    """Whose staging bound its uploads count against (:meth:`Carrier.reserve`)."""
    uploads: dict[str, Received] = field(default_factory=dict)
    offers: dict[str, Offer] = field(default_factory=dict)
    _made: bool = False

    async def _dir(self) -> Path:
        if not self._made:
            await anyio.to_thread.run_sync(ensure_private, self.carrier.root)
            await anyio.to_thread.run_sync(ensure_private, self.directory)
            self._made = True
        return self.directory

    def _declared(self) -> int:
        return sum(u.size for u in self.uploads.values())

    # -- in -------------------------------------------------------------------------------

    async def put(self, frame: dict[str, Any]) -> dict[str, Any]:
        """One ``put`` frame: a new upload (``name``, ``size``) or the next bytes of one
        (``handle``), at ``offset`` (the bytes received so far: nothing is out of order)."""
        data = frame.get("data")
        offset = frame.get("offset")
        if not isinstance(data, str) or not isinstance(offset, int):
            raise _bad("a put frame carries data (base64) and offset (a whole number)")
        try:
            chunk = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise _bad("a put frame's data is not base64") from None
        if len(chunk) > transfer.CHUNK:
            raise _bad(f"a put frame carries at most {transfer.CHUNK} bytes")
        handle = frame.get("handle")
        up = self.uploads.get(handle) if isinstance(handle, str) else None
        if handle is not None and up is None:
            raise _bad("no file of this connection has that handle")
        if up is None:
            up = await self._begin(frame)
        if offset != up.received:
            await self._drop(up)
            raise _bad(f"put at offset {offset}, but {up.received} bytes were received")
        if up.received + len(chunk) > up.size:
            await self._drop(up)
            raise _bad(f"more bytes than the {up.size} declared")
        await anyio.to_thread.run_sync(_append, up.path, chunk)
        up.received += len(chunk)
        answer = {"handle": up.handle, "received": up.received, "complete": up.complete}
        return {"id": frame.get("id"), "ok": True, "data": answer}

    async def _begin(self, frame: dict[str, Any]) -> Received:
        name, size = frame.get("name"), frame.get("size")
        if not isinstance(name, str) or not isinstance(size, int) or size < 0:
            raise _bad("a new file's put frame names it (name) and its size in bytes (size)")
        if len(self.uploads) >= transfer.MAX_FILES:
            raise Refusal(
                "too_large",
                what=f"{len(self.uploads) + 1} files",
                size=self._declared() + size,
                limit=transfer.MAX_IN,
                fix=f"send at most {transfer.MAX_FILES} files in one command",
            )
        if self._declared() + size > transfer.MAX_IN:
            raise Refusal(
                "too_large",
                what=f"the files of one command ({transfer.mib(self._declared() + size)})",
                size=self._declared() + size,
                limit=transfer.MAX_IN,
                fix=f"send at most {transfer.mib(transfer.MAX_IN)} in one command",
            )
        self.carrier.reserve(self.party, size)
        handle = "f-" + secrets.token_hex(8)
        home = await self._dir() / handle
        path = home / safe_name(name)

        def make() -> None:
            os.mkdir(home, 0o700)
            _write_new(path, b"")

        try:
            await anyio.to_thread.run_sync(make)
        except BaseException:
            self.carrier.release(self.party, size)
            raise
        up = Received(handle, path, path.name, size)
        self.uploads[handle] = up
        return up

    def take(self, handle: object, arg: str) -> Received:
        """The complete upload ``handle`` names, for the verb's argument ``arg``."""
        up = self.uploads.get(handle) if isinstance(handle, str) else None
        if up is None or not up.complete:
            raise _bad(
                f"{arg} names no file sent on this connection: the client sends the file's "
                "bytes in put frames first and names their handle (docs/protocol.md, Files)"
            )
        return up

    def uploads_of(self, session_id: str) -> Path:
        """The session's kept uploads (``<runtime>/uploads/<session>``): see :meth:`settle`."""
        return session_dir(self.carrier.uploads_root, session_id)

    async def settle(self, up: Received, directory: Path) -> Path:
        """Move a complete upload out of the connection's staging into ``directory`` (the
        session's own uploads, 0700), where it outlives the connection: a browser reads a
        file set on an input from its path when the page reads or submits it, later.
        Answers its path there; the upload is no longer the connection's."""
        home = up.path.parent

        def move() -> Path:
            ensure_private(directory.parent)
            ensure_private(directory)
            os.rename(home, directory / home.name)
            return directory / home.name / up.path.name

        path = await anyio.to_thread.run_sync(move)
        if self.uploads.pop(up.handle, None) is not None:
            self.carrier.release(self.party, up.size)
        return path

    async def _drop(self, up: Received) -> None:
        if self.uploads.pop(up.handle, None) is not None:
            self.carrier.release(self.party, up.size)
        await anyio.to_thread.run_sync(lambda: shutil.rmtree(up.path.parent, ignore_errors=True))

    async def spent(self) -> None:
        """A verb was answered: the uploads staged for it go."""
        for up in list(self.uploads.values()):
            await self._drop(up)

    # -- out ------------------------------------------------------------------------------

    async def offer_bytes(self, data: bytes, name: str) -> Offer:
        """Answer ``data`` as a file called ``name``: staged (0600) until it is fetched."""
        handle = "f-" + secrets.token_hex(8)
        path = await self._dir() / f"{handle}.out"
        await anyio.to_thread.run_sync(_write_new, path, data)
        return self._offer(Offer(handle, path, safe_name(name), len(data), remove=True))

    def offer_path(self, path: Path, name: str, size: int, *, remove: bool) -> Offer:
        """Answer the keeper's own file at ``path`` (``remove``: it goes once fetched)."""
        return self._offer(Offer("f-" + secrets.token_hex(8), path, safe_name(name), size, remove))

    async def staging(self, name: str) -> Path:
        """A fresh path in this connection's directory for a file the keeper makes and then
        offers (``offer_path(..., remove=True)``): a download saved there, say."""
        home = await self._dir() / ("f-" + secrets.token_hex(8))
        await anyio.to_thread.run_sync(os.mkdir, home, 0o700)
        return home / safe_name(name)

    def _offer(self, offer: Offer) -> Offer:
        self.offers[offer.handle] = offer
        return offer

    async def get(self, frame: dict[str, Any]) -> dict[str, Any]:
        """One ``get`` frame: the bytes of an offer from ``offset``, :data:`transfer.CHUNK` at
        most; ``eof`` on the last, after which the offer is gone."""
        handle, offset = frame.get("handle"), frame.get("offset")
        offer = self.offers.get(handle) if isinstance(handle, str) else None
        if offer is None:
            raise _bad("no file of this connection has that handle")
        if not isinstance(offset, int) or not 0 <= offset <= offer.size:
            raise _bad(f"get at an offset in 0..{offer.size}")
        want = min(transfer.CHUNK, offer.size - offset)
        chunk = await anyio.to_thread.run_sync(_read, offer.path, offset, want)
        eof = offset + len(chunk) >= offer.size or not chunk
        if eof:
            await self._withdraw(offer)
        data = {
            "data": base64.b64encode(chunk).decode("ascii"),
            "offset": offset,
            "size": offer.size,
            "eof": eof,
        }
        return {"id": frame.get("id"), "ok": True, "data": data}

    async def _withdraw(self, offer: Offer) -> None:
        self.offers.pop(offer.handle, None)
        if offer.remove:
            await anyio.to_thread.run_sync(self._remove, offer.path)

    def _remove(self, path: Path) -> None:
        with contextlib.suppress(OSError):
            path.unlink()
        if path.parent != self.directory:  # a file of its own directory (staging())
            shutil.rmtree(path.parent, ignore_errors=True)

    # -- the end ------------------------------------------------------------------------

    async def close(self) -> None:
        """The connection ended: everything it staged goes."""
        for up in list(self.uploads.values()):
            self.uploads.pop(up.handle, None)
            self.carrier.release(self.party, up.size)
        self.offers.clear()
        if self._made:
            await anyio.to_thread.run_sync(
                lambda: shutil.rmtree(self.directory, ignore_errors=True)
            )

    async def frame(self, frame: dict[str, Any]) -> dict[str, Any]:
        """Answer a ``put`` or ``get`` frame (a refusal as its frame, the id kept)."""
        op = frame.get("op")
        try:
            return await (self.put(frame) if op == "put" else self.get(frame))
        except (Refusal, OSError) as exc:
            if op == "put":  # the command it was for is not sent: what it sent goes
                await self.spent()
            if isinstance(exc, OSError):  # the keeper's own disk (full, say)
                log.warning("a file's %s failed: %s", op, exc.strerror or exc)
                why = f"the keeper could not stage the file: {exc.strerror or exc}"
                exc = Refusal("internal_error", verb=str(op), reason=why)
            return dict(exc.frame(), id=frame.get("id"))
