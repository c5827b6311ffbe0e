"""Sub-agents: ``bay session child`` mints a child session ``<parent>.<n>`` with its own
ephemeral browser and its own session socket, and the children go when their parent goes.

A child is a grant whose ``parent`` is set (the grants table's column): a restart keeps it as
it keeps any grant, and :class:`~browserbay.keeper.grants.GrantBook` binds its socket again.

- **Its id**: ``<parent>.<n>``, ``n`` one more than any child the parent has had (its rows are
  kept while the parent lives, so an ``n`` is never reused), skipping an id the registry
  already knows (a child never becomes a session with a history: somebody's kept tabs,
  attachments). A dot is part of the id rule (:data:`browserbay.identity.RULE`), so the id
  itself says nothing: the parent is the grant's ``parent``, never read from the name.
- **Its socket**: beside the parent's, ``<parent socket>.<n>``, bound to the child only. A
  parent without a socket (a session of the owner's channel) has its children's sockets
  beside the keeper's own, ``children/<child id>.sock`` in its (private, short) directory.
- **Its profiles**: none of the parent's (a child's group is its own id, so it owns none of
  the parent group's profiles either), unless named with ``--profile``; and only one the
  parent may use itself (on a session socket: one its grant names, else
  ``profile_not_granted``).
- **Its end**: never after its parent's (``--ttl`` is capped by the parent's expiry), and with
  the parent: :meth:`Children.reap` closes every descendant (their leases ended, their grants
  revoked, their sockets removed) when the parent is closed (``bay close``), revoked, expires,
  or is reaped for idleness. A child closing does not touch its parent.

Bounds (typed refusals, ``grant_refused``): :data:`MAX_CHILDREN` live children per session,
:data:`MAX_DEPTH` generations, the id rule's length, the unix socket path's length.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from pathlib import Path
from typing import Any

import anyio

from browserbay import identity
from browserbay.keeper.base import Answer
from browserbay.keeper.channels import Channel, Grant
from browserbay.keeper.files import SessionFiles
from browserbay.keeper.grants import MAX_SOCKET_PATH, GrantBook
from browserbay.keeper.leases import Leases
from browserbay.keeper.profiles import ProfileBook
from browserbay.keeper.roster import Roster
from browserbay.keeper.sessions import Session
from browserbay.paths import ensure_private
from browserbay.refusals import Refusal
from browserbay.registry import Attachments, Db, Grants, Sessions

log = logging.getLogger("browserbay.keeper")

#: Live children one session may have at a time.
MAX_CHILDREN = 8
#: Generations below a session that was not minted as a child: a child (1), its child (2),
#: that one's child (3); a child of the third is refused.
MAX_DEPTH = 3


def child_socket(parent_socket: Path, n: int) -> Path:
    """The ``n``-th child's socket beside its parent's: ``<parent socket>.<n>``."""
    return parent_socket.with_name(f"{parent_socket.name}.{n}")


def _refused(session: str, reason: str, fix: str) -> Refusal:
    return Refusal("grant_refused", session=session, reason=reason, fix=fix)


class Children:
    """Mints children (``bay session child``) and closes them with their parent. The live
    grants are the book's (:class:`~browserbay.keeper.grants.GrantBook`): a child is one
    whose ``parent`` is set."""

    def __init__(
        self,
        book: GrantBook,
        grants: Grants,
        sessions: Sessions,
        attachments: Attachments,
        db: Db,
        profiles: ProfileBook,
        leases: Leases,
        roster: Roster,
        home: Path,
        files: SessionFiles,
    ) -> None:
        self.book = book
        self.grants = grants
        self.sessions = sessions
        self.attachments = attachments
        self.db = db
        self.profiles = profiles
        self.leases = leases
        self.roster = roster
        self.home = home
        """The directory of the keeper's own socket (private, and short for AF_UNIX): its
        ``children/`` holds the sockets of children whose parent has none."""
        self.files = files
        """The sessions' downloads and uploads, removed as each session is closed."""
        self._minting = anyio.Lock()  # two children of one parent never get the same n

    def of(self, parent: str) -> list[Grant]:
        """The live children of ``parent``, oldest first."""
        return [g for g in self.book.live if g.parent == parent]

    def depth(self, session: str) -> int:
        """Generations above ``session`` (0: it is no live grant's child)."""
        depth, grant = 0, self.book.of(session)
        while grant is not None and grant.parent is not None and depth <= MAX_DEPTH:
            depth, grant = depth + 1, self.book.of(grant.parent)
        return depth

    # -- minting ------------------------------------------------------------------------

    async def child(self, args: dict[str, Any], channel: Channel) -> Answer:
        """``bay session child [<parent>] [--profile H]... [--ttl S]``: on a session socket
        the parent is the socket's session (naming another is ``session_fixed``); on the
        owner's channel it is ``<parent>``, which must be given."""
        parent = _parent(args.get("id"), channel)
        if args.get("socket"):
            raise Refusal(
                "usage",
                detail="bay session child takes no --socket: a child's socket is made beside "
                "its parent's (<parent socket>.<n>)",
                verb="session",
            )
        async with self._minting:
            grant = await self._mint(parent, args, channel)
        socket = str(grant.socket)
        env = {"BAY_SOCKET": socket}
        if channel.is_owner:
            env["BAY_SESSION"] = grant.session
        data = {
            "session": grant.session,
            "parent": parent,
            "socket": socket,
            "profiles": list(grant.profiles),
            "expires": grant.expires,
            "depth": self.depth(grant.session),
            "env": env,
        }
        given = ", but may use " + ", ".join(self._labels(grant)) if grant.profiles else ""
        text = (
            f"{grant.session}: a child of {parent} with its own browser (none of {parent}'s "
            f"tabs or profiles{given}); closed with {parent}\n"
            f"its channel: BAY_SOCKET={socket} bay <verb>"
        )
        if channel.is_owner:
            text += f"\non this (the owner's) channel: BAY_SESSION={grant.session} bay <verb>"
        return data, text

    async def _mint(self, parent: str, args: dict[str, Any], channel: Channel) -> Grant:
        pgrant = self.book.of(parent)
        depth = self.depth(parent) + 1
        if depth > MAX_DEPTH:
            raise _refused(
                f"a child of {parent}",
                f"{parent} is a child {depth - 1} generation(s) deep, and a child may be at "
                f"most {MAX_DEPTH} deep",
                f"mint it from {pgrant.parent if pgrant else 'a session higher up'} instead",
            )
        live = self.of(parent)
        if len(live) >= MAX_CHILDREN:
            raise _refused(
                f"a child of {parent}",
                f"{parent} has {len(live)} live children ({', '.join(g.session for g in live)}), "
                f"the most a session may have ({MAX_CHILDREN})",
                f"bay close as {parent} (closes your children with your own browsers), or ask "
                f"the human to run: bay session revoke {live[0].session}",
            )
        # Only a profile the parent may use itself (on a session socket: profile_not_granted).
        handles = self.profiles.usable_ids(args.get("profile") or [], channel)
        had = await self.db(self.grants.children, parent)
        n = 1 + max((_number(parent, row.session) for row in had), default=0)
        while True:
            sid = f"{parent}.{n}"
            if not identity.is_session_id(sid):
                raise _refused(
                    f"a child of {parent}",
                    f"its id {parent}.{n} would be {len(sid)} characters, and a session id is "
                    f"{identity.RULE}",
                    "mint children from a session with a shorter id",
                )
            # A child starts with no history: an id some session already has is skipped.
            if self.book.of(sid) is None and not await self.db(self.sessions.known, sid):
                break
            n += 1
        path = await self._socket(pgrant, sid, n)
        until = None if pgrant is None else pgrant.expires  # never past the parent's end
        return await self.book.grant(
            sid, path, handles, args.get("ttl"), parent=parent, until=until
        )

    async def _socket(self, pgrant: Grant | None, sid: str, n: int) -> Path:
        """The child's socket: ``<parent socket>.<n>`` beside the parent's; for a parent
        without one, ``children/<child id>.sock`` beside the keeper's own socket."""
        if pgrant is not None:
            path, where = child_socket(pgrant.socket, n), f"beside {pgrant.socket}"
            fix = "ask the human to grant the parent a socket at a shorter path"
        else:
            home = self.home / "children"
            await anyio.to_thread.run_sync(ensure_private, home)
            path, where = home / f"{sid}.sock", f"in {home}"
            fix = "mint children from a session with a shorter id"
        size = len(os.fsencode(path))
        if size > MAX_SOCKET_PATH:
            raise _refused(
                sid,
                f"its socket {where} would be {size} bytes long, and a unix socket path has "
                f"at most {MAX_SOCKET_PATH}",
                fix,
            )
        return path

    def _labels(self, grant: Grant) -> list[str]:
        rows = self.profiles.rows
        return [rows[p].label if p in rows else p for p in grant.profiles]

    # -- closing ------------------------------------------------------------------------

    async def close(self, session: Session) -> tuple[int, list[str]]:
        """``bay close`` of a whole session (the caller holds its lock): its running leases
        ended (their tabs kept for ``bay resume``), its exclusive holds released, the
        registry told; then its children reaped. Answers the tabs closed and the children."""
        closed = await self._end(session)
        return closed, await self.reap(session.ref.id, "was closed")

    async def ended(self, grant: Grant, reason: str) -> None:
        """``grant`` was revoked or expired (:attr:`GrantBook.on_end`): its children go."""
        await self.reap(grant.session, f"was {reason}")

    async def reap(self, parent: str, why: str) -> list[str]:
        """Close every live descendant of ``parent``, deepest first: its grant revoked (its
        socket stops answering and its file goes), its leases ended, its holds released.
        ``parent`` itself is not touched. Answers the sessions closed."""
        gone: list[str] = []
        for child in self.of(parent):
            gone += await self.reap(child.session, why)
            with contextlib.suppress(Refusal):  # revoked, or expired, meanwhile
                await self.book.revoke(child.session)
            session = self.roster.by_id.get(child.session)
            if session is None:
                await self.db(self.sessions.closed, child.session)
                await self.files.remove(child.session)
            else:
                async with session.lock:
                    await self._end(session)
            log.info("session %s closed: its parent %s %s", child.session, parent, why)
            gone.append(child.session)
        return gone

    async def _end(self, session: Session) -> int:
        closed = 0
        for lease in session.running_leases:
            closed += await self.leases.end(session, lease, "closed")
        for pid, _alias in await self.db(self.attachments.of_session, session.ref.id):
            await self.leases.release_hold(session, pid)
        await self.db(self.sessions.closed, session.ref.id)
        await self.files.remove(session.ref.id)
        return closed

    def busy(self, parent: str, idle_for: float) -> bool:
        """A descendant of ``parent`` is running a verb, ran one in the last ``idle_for``
        seconds, or was minted that recently: its parent is not idle while it works."""
        wall, now = time.time(), time.monotonic()
        for child in self.of(parent):
            session = self.roster.by_id.get(child.session)
            if wall - child.created < idle_for or self.busy(child.session, idle_for):
                return True
            if session is not None and (
                session.lock.locked() or now - session.last_used < idle_for
            ):
                return True
        return False


def _parent(named: object, channel: Channel) -> str:
    """The session a child is minted for (see :meth:`Children.child`)."""
    fixed = channel.session
    if fixed is not None:
        if named not in (None, fixed):
            raise Refusal(
                "session_fixed",
                fixed=fixed,
                asked=str(named),
                what="the parent of a child: session",
                via="bay session child <parent>",
                drop="<parent> (bay session child alone mints your own child)",
            )
        return fixed
    if named is None:
        raise Refusal(
            "usage",
            detail="on the owner's channel, name the parent: bay session child <parent>",
            verb="session",
        )
    parent = str(named)
    if not identity.is_session_id(parent):
        raise Refusal("usage", detail=f"a session id is {identity.RULE}", verb="session")
    return parent


def _number(parent: str, child: str) -> int:
    """The ``n`` of a child ``<parent>.<n>`` (0 for any other id)."""
    tail = child[len(parent) + 1 :]
    return int(tail) if child.startswith(f"{parent}.") and tail.isdigit() else 0
