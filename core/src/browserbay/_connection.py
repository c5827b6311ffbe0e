"""The Python clients' two roads to the keeper: :class:`AsyncConnection` (anyio) and
:class:`SyncConnection` (the thin client's own socket code), with one interface.

Each connects on the CLI's socket exactly as ``bay`` does (hello exchanged, a keeper started,
or one of another version replaced; on a session socket, never), sends a frame, reads its
answer, and says every failure as the refusal a verb would raise (``keeper_unavailable``,
``session_socket_gone``, ``deadline``). Only this module
differs between the two flavours, as httpcore's network backends do: the clients above it
are written once (:class:`browserbay.api.Client`; ``SyncClient`` is generated from it by
``scripts/unasync.py``).
"""

from __future__ import annotations

import functools
import os
import socket
import threading
import time
from collections.abc import Mapping
from typing import Any

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

from browserbay import client, protocol, sockpath, transfer
from browserbay._answers import refused
from browserbay.errors import BayRefusal
from browserbay.paths import BayPaths, bay_paths
from browserbay.refusals import Refusal
from browserbay.verbs import BY_NAME

#: Time the answer has to travel back, on top of the verb's own deadline (the keeper
#: enforces that one itself).
ANSWER_MARGIN = 5.0


def home_paths(home: str | os.PathLike[str] | None) -> BayPaths:
    """The paths of ``home`` (a ``BAY_HOME``), else of the environment."""
    if home is None:
        return bay_paths()
    return bay_paths({**os.environ, "BAY_HOME": os.fspath(home)})


def session_socket(
    socket: str | os.PathLike[str] | None, home: str | os.PathLike[str] | None
) -> str | None:
    """The session socket a Python client connects to: ``socket``, else none when ``home``
    names a home (its own socket: the owner's channel), else ``BAY_SOCKET``."""
    if socket is not None:
        return os.path.abspath(os.fspath(socket))
    return None if home is not None else sockpath.session_socket()


def clean_args(verb: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments as the keeper wants them: unset options left out, flags only when set, and
    a file the verb table says is the caller's (``screenshot``'s path) made absolute here:
    the keeper has another working directory."""
    given = {k: v for k, v in args.items() if v is not None and v is not False}
    row = BY_NAME.get(verb)
    return row.with_local_paths(given) if row else given


def unavailable(reason: str) -> BayRefusal:
    return refused(Refusal("keeper_unavailable", reason=reason))


def _deadline(frame: dict[str, Any]) -> BayRefusal:
    t = frame["timeout"]
    verb = str(frame.get("verb") or frame.get("op"))
    return refused(Refusal("deadline", verb=verb, timeout=t, longer=t * 2))


class AsyncConnection:
    """One connection for :class:`browserbay.api.Client`: the connect step (which may start
    a keeper) runs in a worker thread, then the protocol is spoken on the event loop.
    Exchanges take turns, so tasks sharing a client never read each other's answers."""

    def __init__(
        self, paths: BayPaths, autostart: bool | None, session_socket: str | None = None
    ) -> None:
        self.paths = paths
        self.autostart = autostart
        self.session_socket = session_socket
        """The session socket it connects to (None: the home's own socket)."""
        self.keeper: dict[str, Any] = {}
        """The keeper's hello (version, protocol, pid, channel, session), once connected."""
        self._stream: anyio.abc.SocketStream | None = None
        self._reader: BufferedByteReceiveStream | None = None
        self._lock = anyio.Lock()

    async def connect(self) -> None:
        async with self._lock:
            await self._connect()

    async def _connect(self) -> None:
        if self._stream is not None:
            return
        connect = functools.partial(
            client.connect,
            self.paths,
            autostart=self.autostart,
            session_socket=self.session_socket,
        )
        try:
            conn = await anyio.to_thread.run_sync(connect)
        except Refusal as r:
            raise refused(r) from None
        except OSError as exc:
            raise unavailable(str(exc) or type(exc).__name__) from None
        # The thin client's socket is a bare ``_socket.socket``; anyio takes ``socket`` ones.
        sock = socket.socket(fileno=conn.sock.detach())
        sock.settimeout(None)
        stream = await anyio.abc.UNIXSocketStream.from_socket(sock)
        self.keeper = conn.keeper
        self._stream = stream
        self._reader = BufferedByteReceiveStream(stream)
        if conn.buf:
            self._reader.feed_data(conn.buf)

    async def disconnect(self) -> None:
        stream, self._stream, self._reader = self._stream, None, None
        if stream is not None:
            await stream.aclose()

    async def exchange(self, frame: dict[str, Any]) -> dict[str, Any]:
        """Send ``frame`` (connecting first when needed) and read its answer; a verb whose
        files move through the connection sends and receives them around it, on it
        (:mod:`browserbay.transfer`: the caller's files are read and written here, in a
        worker thread)."""
        row = BY_NAME.get(str(frame.get("verb")))
        async with self._lock:
            if row is None or not row.moves_files:
                return await self._exchange(frame)
            gen = transfer.carry(row, frame)
            try:
                step = await anyio.to_thread.run_sync(transfer.step, gen, None)
                while not step.done:
                    got = await self._exchange(step.frame)
                    step = await anyio.to_thread.run_sync(transfer.step, gen, got)
                return step.frame
            except Refusal as r:
                raise refused(r) from None
            finally:
                gen.close()

    async def _exchange(self, frame: dict[str, Any]) -> dict[str, Any]:
        data = protocol.encode(frame)
        for attempt in (0, 1):
            await self._connect()
            assert self._stream is not None
            try:
                await self._stream.send(data)
                break
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                # Nobody read the request (the keeper we knew has gone): safe to send it to
                # the next one.
                await self.disconnect()
                if attempt:
                    raise unavailable("the keeper went away") from None
        assert self._reader is not None
        try:
            with anyio.fail_after(frame["timeout"] + ANSWER_MARGIN):
                line = await self._reader.receive_until(b"\n", protocol.MAX_ANSWER)
        except TimeoutError:
            await self.disconnect()  # its answer may still come: never read it as the next one's
            raise _deadline(frame) from None
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, OSError):
            await self.disconnect()
            raise unavailable(
                f"the keeper closed the connection during '{frame.get('verb')}' (it may or may not "
                "have run)"
            ) from None
        except anyio.DelimiterNotFound:
            await self.disconnect()
            raise unavailable("the keeper's answer exceeds the answer limit") from None
        return protocol.decode(line)


class SyncConnection:
    """One connection for ``SyncClient``, over the thin client's own socket code
    (:class:`browserbay.client.Connection`): no event loop, no thread. Exchanges take
    turns, so threads sharing a client never read each other's answers."""

    def __init__(
        self, paths: BayPaths, autostart: bool | None, session_socket: str | None = None
    ) -> None:
        self.paths = paths
        self.autostart = autostart
        self.session_socket = session_socket
        """The session socket it connects to (None: the home's own socket)."""
        self.keeper: dict[str, Any] = {}
        """The keeper's hello (version, protocol, pid, channel, session), once connected."""
        self._conn: client.Connection | None = None
        self._lock = threading.Lock()

    def connect(self) -> None:
        with self._lock:
            self._connect()

    def _connect(self) -> None:
        if self._conn is not None:
            return
        try:
            self._conn = client.connect(
                self.paths, autostart=self.autostart, session_socket=self.session_socket
            )
        except Refusal as r:
            raise refused(r) from None
        except OSError as exc:
            raise unavailable(str(exc) or type(exc).__name__) from None
        self.keeper = self._conn.keeper

    def disconnect(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def exchange(self, frame: dict[str, Any]) -> dict[str, Any]:
        """Send ``frame`` (connecting first when needed) and read its answer; a verb whose
        files move through the connection sends and receives them around it, on it
        (:mod:`browserbay.transfer`)."""
        row = BY_NAME.get(str(frame.get("verb")))
        with self._lock:
            if row is None or not row.moves_files:
                return self._exchange(frame)
            try:
                return transfer.drive(transfer.carry(row, frame), self._exchange)
            except Refusal as r:
                raise refused(r) from None

    def _exchange(self, frame: dict[str, Any]) -> dict[str, Any]:
        for attempt in (0, 1):
            self._connect()
            assert self._conn is not None
            try:
                self._conn.send(frame)
                break
            except OSError:
                self.disconnect()
                if attempt:
                    raise unavailable("the keeper went away") from None
        conn = self._conn
        assert conn is not None
        try:
            return conn.read(time.monotonic() + frame["timeout"] + ANSWER_MARGIN)
        except TimeoutError:
            self.disconnect()
            raise _deadline(frame) from None
        except (OSError, ValueError) as exc:
            self.disconnect()
            raise unavailable(
                f"the keeper closed the connection during '{frame.get('verb')}' (it may or may not "
                f"have run): {exc}"
            ) from None
