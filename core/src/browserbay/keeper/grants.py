"""Session sockets: the grants the owner makes (``bay session grant``), each a unix socket
bound to one session, listened on for as long as the grant lives.

:class:`GrantBook` owns them: the registry rows (:class:`browserbay.registry.Grants`), the
socket files it made, and one listener task per live grant. What is served on a socket is
the daemon's (:data:`Listen`: the same connection code as the home's socket, with the
grant's :class:`~browserbay.keeper.channels.Channel`); the book only says when a socket
starts and when it stops. A revoke, or the grant's ``--ttl`` running out, cancels the
listener and every connection on it at once, removes the socket file, records
``revoked_at`` and ends the session's leases (its tabs kept, as for an idle stop).

Grants outlive the keeper: at start the book binds every live grant's socket again. The
book never removes a file it did not make: a path that exists is refused, and at start only
a stale socket of ours (nobody listening on it) gives way.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import math
import os
import socket
import stat
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from browserbay import identity
from browserbay.keeper.base import Answer
from browserbay.keeper.channels import Channel, Grant
from browserbay.keeper.leases import Leases
from browserbay.keeper.profiles import ProfileBook
from browserbay.keeper.sessions import Session
from browserbay.refusals import Refusal
from browserbay.registry import Db, GrantRow, Grants, GrantTaken

log = logging.getLogger("browserbay.keeper")

#: Serve one bound, listening socket with ``channel`` until cancelled (the daemon's accept
#: loop and connection code); the socket is closed when it returns.
Listen = Callable[[socket.socket, Channel], Awaitable[None]]

#: ``bay session child``'s handler, ``(args, channel)``: the children's, which call the book.
ChildVerb = Callable[[dict[str, Any], Channel], Awaitable[Answer]]

#: The longest path a unix socket can be bound at (``sun_path`` holds 108 bytes with its NUL).
MAX_SOCKET_PATH = 107


class _Refused(Exception):
    """Why a socket cannot be made at a path, and what to do instead."""

    def __init__(self, reason: str, fix: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.fix = fix


def check_place(path: Path) -> None:
    """``path`` may get a new session socket: an absolute path, short enough for AF_UNIX,
    where nothing is yet, in a directory of the keeper's user that no symlink leads to and
    that neither group nor others can write (else another user could swap the socket), below
    directories of root's or the keeper's user that only their owner can rename entries of
    (not group/other-writable, or sticky as /tmp is). :class:`_Refused` says why not."""
    if not path.is_absolute():
        raise _Refused(f"{path} is not an absolute path", "give the socket's absolute path")
    size = len(os.fsencode(path))
    if size > MAX_SOCKET_PATH:
        raise _Refused(
            f"{path} is {size} bytes, longer than a unix socket path can be ({MAX_SOCKET_PATH})",
            "choose a shorter path (a private directory under /tmp or $XDG_RUNTIME_DIR)",
        )
    directory = path.parent
    private = (
        f"mkdir -m 700 <dir> (a directory of your own), then bay session grant ... "
        f"--socket <dir>/{path.name}"
    )
    try:
        st = os.lstat(directory)
    except FileNotFoundError:
        raise _Refused(f"the directory {directory} does not exist", private) from None
    if stat.S_ISLNK(st.st_mode):
        raise _Refused(f"{directory} is a symlink", f"name the real directory, or: {private}")
    if not stat.S_ISDIR(st.st_mode):
        raise _Refused(f"{directory} is not a directory", private)
    if st.st_uid != os.getuid():
        raise _Refused(
            f"{directory} is owned by uid {st.st_uid}, not by the keeper's user "
            f"(uid {os.getuid()})",
            private,
        )
    if st.st_mode & 0o022:
        raise _Refused(
            f"{directory} has mode {stat.S_IMODE(st.st_mode):04o}: its group or others can "
            "write in it (and replace the socket)",
            f"chmod go-w {directory}, or: {private}",
        )
    real = Path(os.path.realpath(directory))
    if real != directory:
        raise _Refused(
            f"{directory} is reached through a symlink (it is {real})",
            f"name the real path: --socket {real / path.name}",
        )
    for above in directory.parents:  # whoever may rename one of them may swap the directory
        st = os.lstat(above)
        if st.st_uid not in (0, os.getuid()):
            raise _Refused(f"{above}, above it, is owned by uid {st.st_uid}", private)
        if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            raise _Refused(
                f"{above}, above it, has mode {stat.S_IMODE(st.st_mode):04o}: its group or "
                f"others could move {directory} away and put their own in its place",
                f"chmod go-w {above} (or +t), or: {private}",
            )
    try:
        os.lstat(path)
    except FileNotFoundError:
        return
    raise _Refused(
        f"{path} exists already (nothing there is ever removed for a grant)",
        "choose a path where nothing is, or remove what is there yourself",
    )


def _stale_socket(path: Path) -> bool:
    """``path`` is a socket of ours that nobody listens on: what a keeper that was killed
    leaves of a grant's socket. Anything else stays where it is."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.getuid():
        return False
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except ConnectionRefusedError:
        return True
    except OSError:
        return False
    finally:
        probe.close()
    return False


@dataclass(frozen=True)
class _Made:
    """A socket the book bound: its listening socket and the file's identity (device,
    inode), so only that file is ever removed."""

    sock: socket.socket
    inode: tuple[int, int]


def bind_socket(path: Path, *, restore: bool = False) -> _Made:
    """Bind and listen at ``path`` (checked by :func:`check_place`), the file mode 0600
    before anyone can connect: ``listen`` comes after the ``chmod``, and until then a
    connect is refused. ``restore``: at keeper start, a stale socket of ours at the path
    (see :func:`_stale_socket`) gives way first. Blocking: run it in a worker thread."""
    if restore and _stale_socket(path):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    check_place(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    made: tuple[int, int] | None = None
    try:
        try:
            sock.bind(str(path))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:  # something came there since the check
                raise _Refused(f"{path} exists already", "choose a path where nothing is") from None
            raise
        st = os.lstat(path)
        made = (st.st_dev, st.st_ino)
        _chmod_ours(path, made)
        after = os.lstat(path)
        if (after.st_dev, after.st_ino) != made or stat.S_IMODE(after.st_mode) != 0o600:
            raise _Refused(f"{path} changed while it was made", "run the grant again")
        sock.listen(128)
    except BaseException:
        sock.close()
        if made is not None:
            _unlink_ours(path, made)
        raise
    return _Made(sock, made)


def _chmod_ours(path: Path, inode: tuple[int, int]) -> None:
    """Mode 0600 on the socket the book just bound, and on nothing else: whoever can write
    the directory (the agent the socket is for, in its sandbox) could put a symlink to one of
    the owner's files at the path between the bind and a ``chmod(path)``, which follows it.
    The path is opened without following (``O_PATH | O_NOFOLLOW``), the inode checked to be
    that socket, and the mode set through the descriptor."""
    fd = os.open(path, os.O_PATH | os.O_NOFOLLOW)
    try:
        st = os.fstat(fd)
        if not stat.S_ISSOCK(st.st_mode) or (st.st_dev, st.st_ino) != inode:
            raise _Refused(f"{path} changed while it was made", "run the grant again")
        os.chmod(f"/proc/self/fd/{fd}", 0o600)
    finally:
        os.close(fd)


def _unlink_ours(path: Path, inode: tuple[int, int]) -> None:
    """Remove ``path`` only while it is still the socket the book made."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if (st.st_dev, st.st_ino) == inode:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


@dataclass
class _Bound:
    """A live grant and its listener."""

    grant: Grant
    made: _Made
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    done: anyio.Event = field(default_factory=anyio.Event)
    ending: bool = False
    """A revoke or the keeper's stop is closing it (else its ttl ran out)."""


@dataclass(frozen=True)
class _Serving:
    """The book's task group, where each grant's listener runs, and what serves a socket."""

    tg: anyio.abc.TaskGroup
    listen: Listen


def _grant_of(row: GrantRow) -> Grant:
    return Grant(
        row.session,
        Path(row.socket),
        row.profiles,
        row.parent,
        row.created_at,
        row.expires_at,
    )


class GrantBook:
    """The live grants, their sockets and listeners (see the module's docstring)."""

    def __init__(
        self,
        grants: Grants,
        db: Db,
        profiles: ProfileBook,
        leases: Leases,
        sessions: dict[str, Session],
    ) -> None:
        self.grants = grants
        self.db = db
        self.profiles = profiles
        self.leases = leases
        self.sessions = sessions
        """The roster's sessions (``Roster.by_id``): a revoked grant's session loses its
        leases."""
        self._bound: dict[str, _Bound] = {}
        self._lock = anyio.Lock()
        #: What a grant's end (``revoked`` or ``expired``) does beyond the book's own part:
        #: its child sessions reaped (set by the keeper: the children's service needs the
        #: book first). Called after the grant is gone and outside the book's lock, so it
        #: may revoke more grants.
        self.on_end: Callable[[Grant, str], Awaitable[None]] | None = None
        self._serving: _Serving | None = None
        """Set while :meth:`run` runs: where new listeners start."""

    @property
    def live(self) -> tuple[Grant, ...]:
        """The grants being listened on now, oldest first."""
        return tuple(b.grant for b in self._bound.values())

    def of(self, session: str) -> Grant | None:
        bound = self._bound.get(session)
        return None if bound is None else bound.grant

    # -- the listeners' life -----------------------------------------------------------

    async def run(
        self, listen: Listen, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Serve every grant with ``listen`` until cancelled: first the live grants the
        registry holds (their sockets made again), then each new one. Started by the
        daemon with ``task_group.start``; :meth:`close` ends every listener first."""
        async with anyio.create_task_group() as tg:
            self._serving = _Serving(tg, listen)
            lapsed = await self.db(self.grants.lapse, time.time())
            if lapsed:
                log.info("grant(s) that expired while no keeper ran: %s", ", ".join(lapsed))
            for row in await self.db(self.grants.live, time.time()):
                try:
                    made = await anyio.to_thread.run_sync(
                        functools.partial(bind_socket, Path(row.socket), restore=True)
                    )
                except (_Refused, OSError) as exc:
                    reason = exc.reason if isinstance(exc, _Refused) else str(exc)
                    log.warning(
                        "grant for session %s not restored (its socket %s: %s): revoked",
                        row.session,
                        row.socket,
                        reason,
                    )
                    await self.db(self.grants.revoke, row.session, time.time())
                    continue
                self._start(_Bound(_grant_of(row), made))
            if self._bound:
                log.info("%d session socket(s) listening again", len(self._bound))
            task_status.started()
            await anyio.sleep_forever()

    def _start(self, bound: _Bound) -> None:
        serving = self._serving
        if serving is None:  # a grant before the daemon started the book, or after its stop
            bound.made.sock.close()
            raise RuntimeError("GrantBook.run is not running: no grant can be listened on")
        self._bound[bound.grant.session] = bound
        if bound.grant.expires is not None:
            left = bound.grant.expires - time.time()
            bound.scope.deadline = anyio.current_time() + max(0.0, left)
        serving.tg.start_soon(self._serve, bound, serving.listen)

    async def _serve(self, bound: _Bound, listen: Listen) -> None:
        failed = False
        try:
            with bound.scope:
                try:
                    await listen(bound.made.sock, Channel(bound.grant))
                except Exception:
                    failed = True
                    log.exception("session socket %s failed", bound.grant.socket)
        finally:
            bound.made.sock.close()
            bound.done.set()
        if bound.ending:  # a revoke or the keeper's stop ends it: theirs to finish
            return
        reason = "revoked" if failed else "expired"  # else its ttl ran out
        why = "its listener failed" if failed else "its ttl"
        log.info("grant for session %s ended (%s)", bound.grant.session, why)
        async with self._lock:
            await self._end(bound, reason)
        await self._ended(bound.grant, reason)

    async def close(self) -> None:
        """The keeper stops: every listener and connection ends, every socket file the book
        made goes. The grants stay live in the registry; the next keeper binds them again."""
        for bound in list(self._bound.values()):
            bound.ending = True
            bound.scope.cancel()
        for bound in list(self._bound.values()):
            await bound.done.wait()
            await anyio.to_thread.run_sync(_unlink_ours, bound.grant.socket, bound.made.inode)
        self._bound.clear()

    # -- grant, revoke, list -----------------------------------------------------------

    async def grant(
        self,
        session: str,
        socket_path: Path,
        handles: Sequence[str] = (),
        ttl: float | None = None,
        *,
        parent: str | None = None,
        until: float | None = None,
    ) -> Grant:
        """A new session socket for ``session`` at ``socket_path``, listening before this
        returns. ``handles``: the persistent profiles it may use (labels or ids, stored as
        ids). ``parent``: the session whose child ``session`` is (``bay session child``);
        ``until``: the wall-clock time it ends by at the latest, whatever ``ttl`` says (its
        parent's end).
        Refused ``grant_refused`` (nothing made) for a session that has a live grant, a
        profile that does not exist, or a path :func:`check_place` refuses."""
        if not identity.is_session_id(session):
            raise Refusal(
                "usage", detail=f"a session id is {identity.RULE}, not {session!r}", verb="session"
            )
        if ttl is not None and not (math.isfinite(ttl) and ttl > 0):
            raise Refusal(
                "usage", detail="--ttl must be a number of seconds above 0", verb="session"
            )
        ids = self.profiles.grantable(session, handles)  # each one's sharing is granted
        async with self._lock:
            held = self._bound.get(session)
            if held is not None:
                raise Refusal(
                    "grant_refused",
                    session=session,
                    reason=f"it has a live grant already (socket {held.grant.socket})",
                    fix=f"bay session revoke {session}   (then grant it again), or grant "
                    "another session id",
                )
            try:
                made = await anyio.to_thread.run_sync(bind_socket, socket_path)
            except _Refused as exc:
                raise Refusal(
                    "grant_refused", session=session, reason=exc.reason, fix=exc.fix
                ) from None
            except OSError as exc:
                raise Refusal(
                    "grant_refused",
                    session=session,
                    reason=f"{socket_path} cannot be bound: {exc.strerror or exc}",
                    fix="choose another path, in a private directory of yours",
                ) from None
            now = time.time()
            expires = None if ttl is None else now + ttl
            if until is not None:
                expires = until if expires is None else min(expires, until)
            grant = Grant(session, socket_path, ids, parent, now, expires)
            row = GrantRow(session, str(socket_path), ids, parent, now, grant.expires)
            try:
                await self.db(self.grants.create, row, now)
            except BaseException as exc:
                made.sock.close()
                await anyio.to_thread.run_sync(_unlink_ours, socket_path, made.inode)
                if isinstance(exc, GrantTaken):
                    raise Refusal(
                        "grant_refused",
                        session=session,
                        reason="a live grant holds that session or socket in the registry",
                        fix="bay session list, then bay session revoke <its id>",
                    ) from None
                raise
            self._start(_Bound(grant, made))
        log.info(
            "session socket %s granted to session %s (%d profile(s)%s)",
            socket_path,
            session,
            len(ids),
            "" if ttl is None else f", ttl {ttl:g}s",
        )
        return grant

    async def revoke(self, session: str) -> Grant:
        """End ``session``'s grant now: the socket stops answering (open connections are
        cut mid-request), its file goes, the registry records ``revoked_at``, the session's
        leases end; then :attr:`on_end`. ``grant_refused`` when it has no live grant."""
        async with self._lock:
            bound = self._bound.get(session)
            if bound is None:
                raise Refusal(
                    "grant_refused",
                    session=session,
                    reason="it has no live grant to revoke",
                    fix="bay session list   (the live grants)",
                )
            await self._end(bound, "revoked")
        log.info("grant for session %s revoked", session)
        await self._ended(bound.grant, "revoked")
        return bound.grant

    async def _end(self, bound: _Bound, reason: str) -> None:
        """Close one grant's socket and record its end (the caller holds the book's lock):
        when this returns nothing answers on the socket any more."""
        bound.ending = True
        bound.scope.cancel()
        await bound.done.wait()
        grant = bound.grant
        await anyio.to_thread.run_sync(_unlink_ours, grant.socket, bound.made.inode)
        at = time.time()
        if reason == "expired" and grant.expires is not None:
            at = min(at, grant.expires)
        await self.db(self.grants.revoke, grant.session, at)
        self._bound.pop(grant.session, None)

    async def _ended(self, grant: Grant, reason: str) -> None:
        """What follows a grant's end, outside the book's lock (a verb of that session on
        the owner's channel may hold the session for a while): the session's leases end as
        for an idle stop (its tabs kept), then :attr:`on_end`."""
        state = self.sessions.get(grant.session)
        if state is not None:
            async with state.lock:
                for lease in state.running_leases:
                    try:
                        await self.leases.end(state, lease, reason)
                    except Exception:
                        log.exception("a lease of session %s did not end", grant.session)
        if self.on_end is None:
            return
        try:
            await self.on_end(grant, reason)
        except Exception:  # the grant is gone either way; what follows it must not undo that
            log.exception("after the end of session %s's grant", grant.session)

    def listing(self, channel: Channel) -> list[Grant]:
        """The live grants ``channel`` may see: every one on the owner's; on a session
        socket its own and its children's."""
        if channel.is_owner:
            return list(self.live)
        return [g for g in self.live if channel.session in (g.session, g.parent)]


def grant_row(grant: Grant) -> dict[str, Any]:
    """A grant as ``bay session`` answers it."""
    return {
        "session": grant.session,
        "socket": str(grant.socket),
        "profiles": list(grant.profiles),
        "parent": grant.parent,
        "created": grant.created,
        "expires": grant.expires,
    }


class GrantVerbs:
    """``bay session grant | list | revoke``; ``child`` is :class:`browserbay.keeper.
    children`'s (it calls :meth:`GrantBook.grant` with ``parent``)."""

    def __init__(self, book: GrantBook, child: ChildVerb) -> None:
        self.book = book
        self.child = child
        """``bay session child`` (:meth:`browserbay.keeper.children.Children.child`)."""

    async def session(self, args: dict[str, Any], handle: str | None, channel: Channel) -> Answer:
        """The ``session`` verb's handler. ``handle`` (the frame's ``--profile``/
        ``BAY_PROFILE``) is not read: a grant's profiles are its own repeated ``--profile``."""
        action = args["action"]
        if action == "grant":
            return await self.grant(args)
        if action == "revoke":
            return await self.revoke(args)
        if action == "list":
            return self.listing(channel)
        return await self.child(args, channel)

    async def grant(self, args: dict[str, Any]) -> Answer:
        """Owner only: the verb row's ``owner_only`` (refused by the gate before this runs)."""
        sid = args.get("id")
        if sid is None:
            raise Refusal("usage", detail="'session grant' needs <id>", verb="session")
        where = args.get("socket")
        if not where:
            raise Refusal("usage", detail="'session grant' needs --socket <path>", verb="session")
        ttl = args.get("ttl")
        grant = await self.book.grant(
            str(sid), Path(str(where)), tuple(args.get("profile") or ()), ttl
        )
        text = f"session {grant.session} may connect at {grant.socket}"
        if ttl is not None:
            text += f" for {ttl:g}s"
        if grant.profiles:
            text += f"; profiles: {', '.join(self._labels(grant))}"
        text += f"\nits agent runs: BAY_SOCKET={grant.socket} bay <verb>"
        return grant_row(grant), text

    async def revoke(self, args: dict[str, Any]) -> Answer:
        """Owner only, as :meth:`grant`."""
        sid = args.get("id")
        if sid is None:
            raise Refusal("usage", detail="'session revoke' needs <id>", verb="session")
        grant = await self.book.revoke(str(sid))
        return {"revoked": grant.session, "socket": str(grant.socket)}, (
            f"session {grant.session}'s socket {grant.socket} is closed"
        )

    def listing(self, channel: Channel) -> Answer:
        grants = self.book.listing(channel)
        lines = [
            f"{g.session:<24} {g.socket}"
            + (f"  profiles {', '.join(self._labels(g))}" if g.profiles else "")
            + (f"  child of {g.parent}" if g.parent else "")
            + ("" if g.expires is None else f"  expires in {max(0, g.expires - time.time()):.0f}s")
            for g in grants
        ]
        return {"grants": [grant_row(g) for g in grants]}, "\n".join(lines) or "no live grants"

    def _labels(self, grant: Grant) -> list[str]:
        rows = self.book.profiles.rows
        return [rows[p].label if p in rows else p for p in grant.profiles]
