"""Sessions anywhere (issue 22, item 3): a verb of a session here, on a persistent profile
whose browser runs on another keeper of the fleet, is sent there over the fleet link
(:mod:`browserbay.keeper.link`) and answered with that keeper's answer.

The keeper that runs the browser judges the verb: its pause, restart gap, fence, approval
hooks and audit (actor ``fleet:<this keeper>/<session>``: the verb's one audit row, this
keeper writes none for a verb that keeper answered — :data:`ANSWERED`), its own reading of
the session's attachment and the profile's exclusive hold, and tab ownership on the session's
namespaced id (``<session>@<this keeper>``: it never sees that keeper's sessions' tabs). What
is sent: the verb, its arguments, the session id and group, the profile's id, the time left,
the road, and the scope of the channel it came in on — the grant's profiles when the agent here
is on a session socket (that keeper confines it to them), else the one profile. A file the verb
takes (``FILE_IN``) goes in ``put`` frames on the same link connection before the verb; a file it
answers (``FILE_OUT``) is fetched in ``get`` frames and offered on the caller's connection here,
as the socket protocol does (docs/protocol.md, Files). The answer's profile says where it ran
(``host``: ``profile: work · on host-a``).

Connections are kept per keeper (a proven link costs a TLS handshake and two proofs) and
reused one request at a time; one that fails mid-request is closed, never reused.
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import dataclasses
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio

from browserbay import progress, protocol, transfer, verbs
from browserbay.keeper.channels import Channel
from browserbay.keeper.files import Carried
from browserbay.keeper.fleet import Fleet, OnKeeper
from browserbay.keeper.keyhomes import KeyHomeBook
from browserbay.keeper.link import LINK_FIX, LinkClosed, LinkConfig, LinkStream, connect_peer
from browserbay.keeper.sessions import Lease, Session
from browserbay.model import ProfileRef
from browserbay.refusals import CODES, Refusal, clip
from browserbay.registry import THE_OWNER, KeeperRow, group_owner

log = logging.getLogger("browserbay.keeper")

#: Idle link connections kept per keeper.
IDLE_PER_KEEPER = 8
#: Answers longer than this are parsed in a worker thread (as the daemon parses frames).
PARSE_INLINE = 64 * 1024

T = TypeVar("T")

#: The keepers that answered a forwarded verb of the request in flight (set by
#: :meth:`Keeper.handle`): each wrote the verb's audit row where it ran, naming this keeper
#: and its session as the origin (``fleet:<this keeper>/<session>``), so this keeper
#: writes none. A verb no keeper answered (refused here, or its link failed) is audited here.
ANSWERED: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "browserbay_forward_answered", default=None
)


class _Gone(Exception):
    """The peer closed a connection before answering anything of this request."""


class Unsent(Exception):
    """No connection to the keeper could be made (its refusal in ``refusal``): nothing of
    the request was sent there."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(str(refusal))
        self.refusal = refusal


class Replace(Exception):
    """The keeper a cached placement named did not run the verb (it refused it as not
    where the profile's browser runs, or no connection reached it): the caller places the
    profile again, once, from the registry (``refusal``: what to answer if it is still
    there)."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(str(refusal))
        self.refusal = refusal


#: A keeper's refusals that say the profile's browser is not (or no longer) there: a cached
#: placement that led to one is read again (:class:`Replace`).
NOT_THERE = frozenset({"fleet_link_refused", "profile_host_down"})


class PeerConnection:
    """One proven link connection to another keeper: frames out, answer lines in (at most
    :data:`browserbay.protocol.MAX_ANSWER` bytes each)."""

    def __init__(self, stream: LinkStream) -> None:
        self.stream = stream
        self.buf = bytearray()
        self.lines = 0  # answer lines read for the current request

    async def send(self, frame: dict[str, Any]) -> None:
        """A connection the peer had closed (its stop, a restart) before a byte of the frame
        went out is :class:`_Gone`, as a closed one found on reading; one that broke while
        the frame went out is not (the peer may have read it whole)."""
        try:
            await self.stream.send(protocol.encode(frame))
        except LinkClosed:
            raise _Gone from None

    async def line(self) -> dict[str, Any]:
        while True:
            newline = self.buf.find(b"\n")
            if newline >= 0:
                raw = bytes(self.buf[:newline])
                del self.buf[: newline + 1]
                self.lines += 1
                if len(raw) <= PARSE_INLINE:
                    return protocol.decode(raw)
                return await anyio.to_thread.run_sync(
                    functools.partial(protocol.decode, raw, interruptible=True)
                )
            if len(self.buf) > protocol.MAX_ANSWER:
                raise ValueError("an answer longer than the protocol's largest")
            try:
                chunk = await self.stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                raise _Gone from None
            self.buf += chunk

    async def exchange(self, frame: dict[str, Any]) -> dict[str, Any]:
        """Send ``frame``, answer its answer; progress lines on the way are said here too."""
        await self.send(frame)
        while True:
            answer = await self.line()
            if "progress" in answer and "ok" not in answer:
                await progress.say_progress(str(answer["progress"]))
                continue
            if answer.get("id") == frame.get("id"):
                return answer

    async def aclose(self) -> None:
        with contextlib.suppress(Exception):
            await self.stream.aclose()


class PeerLinks:
    """The link connections to the other keepers of the fleet, kept per keeper."""

    def __init__(self, config: LinkConfig, me: str) -> None:
        self.config = config
        self.me = me
        self.idle: dict[str, list[PeerConnection]] = {}

    async def _open(self, keeper: KeeperRow, listen: str) -> PeerConnection:
        stream = await connect_peer(listen, self.config.secret, self.me, keeper.id)
        conn = PeerConnection(stream)
        try:
            with anyio.fail_after(5):
                await conn.send(protocol.hello("fleet"))
                hello = await conn.line()
        except (TimeoutError, _Gone, ValueError):
            await conn.aclose()
            raise _link_down(keeper, "it did not answer the hello") from None
        theirs = hello.get("hello")
        if not isinstance(theirs, dict) or not protocol.compatible(theirs):
            await conn.aclose()
            version = theirs.get("version") if isinstance(theirs, dict) else None
            raise _link_down(keeper, f"it runs another version ({version}) than this keeper")
        return conn

    async def call(self, keeper: KeeperRow, run: Callable[[PeerConnection], Awaitable[T]]) -> T:
        """``run`` on a connection to ``keeper`` (a kept one, else a new one). A kept one
        the peer closed meanwhile (its restart) before answering anything is replaced once;
        one that fails otherwise, or is cut, is closed."""
        listen = keeper.listen
        if not listen:
            raise _link_down(keeper, "it registered no BAY_FLEET_LISTEN address")
        kept = self.idle.get(keeper.id) or []
        for attempt in range(2):
            reused = bool(kept) and attempt == 0
            try:
                conn = kept.pop() if reused else await self._open(keeper, listen)
            except Refusal as r:
                raise Unsent(r) from None
            conn.lines = 0
            try:
                result = await run(conn)
            except _Gone:
                await conn.aclose()
                if reused and conn.lines == 0:
                    continue  # a stale kept connection: nothing of the request ran there
                raise _link_down(keeper, "it closed the connection before answering") from None
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await conn.aclose()
                raise
            pool = self.idle.setdefault(keeper.id, [])
            if len(pool) < IDLE_PER_KEEPER:
                pool.append(conn)
            else:
                await conn.aclose()
            return result
        raise _link_down(keeper, "it closed the connection before answering")

    async def close(self) -> None:
        for pool in self.idle.values():
            for conn in pool:
                await conn.aclose()
        self.idle.clear()


def _link_down(keeper: KeeperRow, reason: str) -> Refusal:
    return Refusal(
        "fleet_link_refused",
        link=f"to keeper {keeper.id} on {keeper.host} ({keeper.listen})",
        reason=reason,
        fix=LINK_FIX,
        keeper=keeper.id,
        host=keeper.host,
    )


def relayed(answer: dict[str, Any]) -> Refusal:
    """The other keeper's refusal, as it said it (code, message, way out, data)."""
    code = str(answer.get("code"))
    data = answer.get("data")
    fields = dict(data) if isinstance(data, dict) else {}
    if code not in CODES:
        return Refusal("internal_error", verb="a forwarded verb", reason=f"its answer {code}")
    refusal = Refusal(code, way_out=str(answer.get("way_out") or ""), **fields)
    # The other keeper's words, clipped here as every refusal's fields are (Refusal clips
    # its fields and way out; a message set after the fact would not be).
    refusal.message = str(clip(str(answer.get("message") or refusal.message)))
    return refusal


@dataclass(frozen=True)
class ForwardCall:
    """A verb of a session here on a lease whose browser runs on another keeper."""

    verb: verbs.Verb
    args: dict[str, Any]
    session: Session
    lease: Lease
    channel: Channel
    files: Carried
    deadline: float
    """On the monotonic clock (the keeper's request deadline)."""
    road: str
    part: bool = False
    """A part of a verb this keeper audits itself (a whole-session ``close``'s close of a
    lease there): the other keeper writes no row of it, and this one's is written."""
    clock: int | None = None
    """The change clock this keeper's choice of the lease read (``choosing.READ_CLOCK``),
    sent as the frame's ``clock``: the other keeper serves the verb's standing from what it
    heard only when it heard the changes up to it (None: it reads it)."""


class Forwarder:
    """Where a lease's browser runs (the fleet's claims) and the verbs sent there."""

    def __init__(
        self,
        fleet: Fleet,
        links: PeerLinks | None,
        data_of: Callable[[str], Path | None],
        key_homes: KeyHomeBook,
    ) -> None:
        """``key_homes``: where a keyed profile's key lives (its browser starts only
        there, so its verbs go there while that keeper is alive)."""
        self.fleet = fleet
        self.key_homes = key_homes
        #: None: this keeper has no fleet secret, so it forwards nothing (refused).
        self.links = links
        #: A persistent profile's data directory here (None: it has none).
        self.data_of = data_of

    async def elsewhere(self, lease: Lease, fresh: bool = False) -> OnKeeper | None:
        """The keeper the lease's verbs go to; None: here (an ephemeral browser, a lease
        whose browser runs here, a profile no other live keeper runs). A keyed profile
        whose key home is another live keeper goes there even when no keeper runs its
        browser: only that keeper may start it, with its own key (a dead key home: the
        start here refuses ``provider_needs_local_key``). The placement is kept a while
        (:meth:`Fleet.where`; ``fresh``: read of the registry now)."""
        if lease.profile.ephemeral or lease.context is not None:
            return None
        profile = lease.profile
        placed = await self.fleet.where(profile.id, self.data_of(profile.id), fresh=fresh)
        if placed is not None:
            return placed
        home = await self.key_homes.elsewhere(profile.id, profile.provider)
        if home is None:
            return None
        return await self.fleet.on_live(profile.id, home.keeper_id)

    async def run(
        self, placed: OnKeeper, call: ForwardCall
    ) -> tuple[dict[str, Any], str, ProfileRef]:
        """The verb's answer from ``placed``'s keeper: its data, text and the lease's
        profile with ``host`` (its refusal raised as it said it)."""
        keeper = placed.keeper
        if self.links is None:
            raise Refusal(
                "fleet_link_refused",
                link=f"to keeper {keeper.id} on {keeper.host}",
                reason=f"profile {call.lease.profile.label}'s browser runs there, and this "
                "keeper has no fleet secret to reach it",
                fix="give this keeper the fleet's secret (BAY_FLEET_SECRET_FILE), or run the "
                f"command on {keeper.host}",
                keeper=keeper.id,
                host=keeper.host,
                profile=call.lease.profile.id,
            )
        pid = call.lease.profile.id
        try:
            answer = await self.links.call(keeper, functools.partial(self._exchange, call))
        except Unsent as e:
            self.fleet.forget(pid)
            if placed.cached:
                raise Replace(e.refusal) from None
            raise e.refusal from None
        except Refusal:
            self.fleet.forget(pid)  # the link failed mid-request: never sent again
            raise
        answered = ANSWERED.get()
        if answered is not None and not call.part:
            answered.append(keeper.id)  # it audited the verb (its refusal too)
        if not answer.get("ok"):
            refusal = relayed(answer)
            if refusal.code in NOT_THERE:
                self.fleet.forget(pid)
                if placed.cached:
                    raise Replace(refusal)
            raise refusal
        notice = answer.get("notice")
        if notice:
            call.session.notices.append(str(notice))
        data = answer.get("data")
        profile = dataclasses.replace(call.lease.profile, host=keeper.host)
        return (data if isinstance(data, dict) else {}), str(answer.get("text") or ""), profile

    async def _exchange(self, call: ForwardCall, conn: PeerConnection) -> dict[str, Any]:
        rid = f"fw-{id(call):x}"
        left = call.deadline - time.monotonic()
        timeout = max(0.1, left - 0.05)  # answered here before this keeper's deadline cuts
        args = dict(call.args)
        for spec in call.verb.args:
            if spec.name in args and spec.type_for(args) == verbs.FILE_IN:
                args[spec.name] = await self._send_files(
                    conn, call.files, spec.name, args[spec.name], rid, timeout
                )
        grant = call.channel.grant
        pid = call.lease.profile.id
        # The grant's profiles, and the one chosen here (this keeper judged it usable: a
        # session group's own profile is usable without being in its grant).
        scope = None if grant is None else list(dict.fromkeys((*grant.profiles, pid)))
        frame: dict[str, Any] = {
            "id": rid,
            "verb": call.verb.name,
            "args": args,
            "session": call.session.ref.as_row(),
            "group": call.session.group,
            "profile": pid,
            "timeout": timeout,
            "road": call.road,
            "scope": scope,
            # Whose the caller's own profiles are (the owner's, or its session group's):
            # one whose sharing is ``owner`` is reachable there for its owner only.
            "owner": THE_OWNER if grant is None else group_owner(grant.session),
        }
        if call.part:  # audited here, not there
            frame["part"] = True
        if call.clock is not None:
            frame["clock"] = call.clock
        if call.lease.profile.chosen == "instance":  # this keeper's BAY_DEFAULT_PROFILE
            frame["standing"] = "instance"
        if progress.SINK.get() is not None:
            frame["progress"] = True
        answer = await conn.exchange(frame)
        data = answer.get("data")
        offer = data.get("file") if isinstance(data, dict) and answer.get("ok") else None
        if isinstance(offer, dict):
            assert isinstance(data, dict)
            data["file"] = await self._fetch_file(conn, call.files, offer, rid, timeout)
        return answer

    async def _send_files(
        self, conn: PeerConnection, files: Carried, arg: str, value: Any, rid: str, timeout: float
    ) -> Any:
        """The staged files ``value`` names (a handle, or a list of them), sent on ``conn``
        in ``put`` frames: answers the other keeper's handles in their place."""
        many = isinstance(value, list)
        theirs = []
        for n, handle in enumerate(value if many else [value]):
            up = files.take(handle, arg)
            sent: str | None = None
            offset = 0
            while True:
                chunk = await anyio.to_thread.run_sync(_read, up.path, offset, transfer.CHUNK)
                frame_id = f"{rid}.put{n}.{offset}"
                put = transfer.put_frame(frame_id, timeout, offset, chunk, sent, up.name, up.size)
                answer = await conn.exchange(put)
                if not answer.get("ok"):
                    raise relayed(answer)
                sent = str(answer["data"]["handle"])
                offset += len(chunk)
                if offset >= up.size:
                    break
            theirs.append(sent)
        return theirs if many else theirs[0]

    async def _fetch_file(
        self,
        conn: PeerConnection,
        files: Carried,
        offer: dict[str, Any],
        rid: str,
        timeout: float,
    ) -> dict[str, Any]:
        """The file the other keeper answered, fetched whole in ``get`` frames and offered on
        the caller's connection here: answers this keeper's offer row in its place."""
        size = int(offer.get("size") or 0)
        got = bytearray()
        n = 0
        while True:
            frame = transfer.get_frame(f"{rid}.get{n}", timeout, str(offer.get("handle")), len(got))
            answer = await conn.exchange(frame)
            if not answer.get("ok"):
                raise relayed(answer)
            got += base64.b64decode(answer["data"]["data"])
            if len(got) > size:
                raise Refusal("bad_frame", reason="the other keeper sent more than it offered")
            n += 1
            if answer["data"].get("eof"):
                break
        mine = await files.offer_bytes(bytes(got), str(offer.get("name") or "file"))
        return mine.row()

    async def close(self) -> None:
        if self.links is not None:
            await self.links.close()


def _read(path: Path, offset: int, size: int) -> bytes:
    with path.open("rb") as f:
        f.seek(offset)
        return f.read(size)
