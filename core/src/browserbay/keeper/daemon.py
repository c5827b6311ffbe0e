"""The keeper process: bind first, then load plugins and the registry, then serve NDJSON
frames on the unix socket until asked to stop (``bay keeper stop``, SIGTERM, SIGINT)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import functools
import gc
import importlib
import logging
import math
import os
import resource
import signal
import socket
import stat
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import anyio
import anyio.abc

from browserbay import progress, protocol, verbs
from browserbay._version import __version__
from browserbay.keeper import argvroad
from browserbay.keeper.channels import OWNER, Channel
from browserbay.keeper.driver import PlaywrightDriver
from browserbay.keeper.early import EarlyDriver, compile_caches
from browserbay.keeper.files import Carried, party_of
from browserbay.paths import BayPaths, NotYours, bay_paths
from browserbay.refusals import Refusal, printable
from browserbay.scrub import scrub, scrub_frame
from browserbay.settings import Configured, SettingsError, flags_from_argv, load_settings

if TYPE_CHECKING:
    from browserbay.keeper.app import App
    from browserbay.keeper.browsers import BrowserPool
    from browserbay.model import BrowserHandle, LaunchSpec, ProviderRow
    from browserbay.plugins import Plugins

log = logging.getLogger("browserbay.keeper")


class AlreadyRunning(Exception):
    pass


def bind_first(paths: BayPaths) -> tuple[socket.socket, IO[str]]:
    """Take the keeper lock and bind the socket before anything slow happens, so a client
    that spawned us can connect while we load. Another live keeper: :class:`AlreadyRunning`."""
    paths.ensure()  # the socket's directory too: ours, 0700, no symlink (or NotYours)
    sock_path = paths.socket
    lock = open(paths.runtime / "keeper.lock", "a")  # noqa: SIM115 - held for the process's life
    end = time.monotonic() + 30.0
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            # A keeper holds the lock. Serving: leave it be. Shutting down (its socket is
            # already closed): wait for it to finish, then take over.
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(str(sock_path))
                serving = True
            except OSError:
                serving = False
            finally:
                probe.close()
            if serving or time.monotonic() > end:
                lock.close()
                raise AlreadyRunning from None
            time.sleep(0.05)
    moved = clear_socket_path(sock_path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(str(sock_path))
    finally:
        os.umask(old)
    sock.listen(128)
    if moved is not None:  # said once the log is open
        MOVED_ASIDE.append(f"a directory stood at {sock_path}; moved it to {moved}")
    return sock, lock


class Scrubbed(logging.Filter):
    """Every keeper log line goes through :func:`browserbay.scrub.scrub`: remembered secret
    values and the credentials of any URL (a vendor's error, a library's traceback) are
    blotted out before the line is written."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            record.msg = scrub(record.getMessage())
        except Exception:  # a malformed call: keep no part of it that was not scrubbed
            record.msg = scrub(str(record.msg))
        record.args = ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub(record.exc_text)
        return True


#: What :func:`bind_first` moved out of the socket's way, logged once logging is set up.
MOVED_ASIDE: list[str] = []


def clear_socket_path(sock_path: Path) -> Path | None:
    """Make room for the socket (we hold the lock: whatever is there is stale). A socket,
    file or symlink is unlinked (never followed); a directory — it cannot be unlinked, and
    may hold something of the user's — is renamed aside inside the same private directory,
    never removed. Answers where it went."""
    try:
        st = sock_path.lstat()
    except FileNotFoundError:
        return None
    if not stat.S_ISDIR(st.st_mode):
        with contextlib.suppress(FileNotFoundError):
            sock_path.unlink()
        return None
    aside = sock_path.with_name(f"{sock_path.name}.moved-{time.strftime('%Y%m%d-%H%M%S')}")
    n = 0
    while aside.exists():
        n += 1
        aside = aside.with_name(f"{aside.name.split('~')[0]}~{n}")
    os.rename(sock_path, aside)
    return aside


def _setup_logging(paths: BayPaths, level: str = "INFO") -> None:
    handler = logging.FileHandler(paths.keeper_log)
    os.chmod(paths.keeper_log, 0o600)
    handler.addFilter(Scrubbed())
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


def write_plugin_verbs(paths: BayPaths, rows: list[dict[str, Any]]) -> None:
    """The plugins' verbs, for the thin client (atomically: write, then rename)."""
    import json

    target = paths.runtime / verbs.PLUGIN_VERBS_FILE
    tmp = target.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({"version": __version__, "verbs": rows}, f)
    os.replace(tmp, target)


async def _send(stream: anyio.abc.ByteStream, frame: dict[str, Any]) -> None:
    await stream.send(scrub_frame(protocol.encode(frame)))


def _progress_sink(stream: anyio.abc.ByteStream, frame: dict[str, Any]) -> progress.Sink:
    """Progress lines to the client; the CLI's warm road (``argv``) prints them as they
    come, so they come printable (its client imports no refusals)."""
    clean = "argv" in frame

    async def sink(text: str) -> None:
        await _send(stream, {"id": frame.get("id"), "progress": printable(text) if clean else text})

    return sink


#: How much of one oversized frame the keeper reads past (and drops) before hanging up.
MAX_SKIP = 256 * 1024 * 1024
#: Connections the keeper serves at once. At the cap it stops accepting: the next clients
#: wait in the listen backlog until a connection ends (no descriptor is spent on them).
MAX_CONNECTIONS = 256
#: Connections one session socket is served at once (its agent needs a few; the rest wait
#: in its backlog): an agent cannot take the keeper's descriptors from the owner and the
#: other agents, whose sockets have their own slots.
SESSION_CONNECTIONS = 64
#: Bytes of a partial frame every connection may hold on its own; beyond that a frame's
#: bytes come out of one budget shared by all connections (``FRAME_BUDGET``), waited for.
FRAME_ALLOWANCE = 64 * 1024
#: What all connections of the home's socket together may hold in partial frames beyond their
#: own allowance (256 x 64 KiB + 64 MiB bound it); every session socket together has another
#: budget of this size (each socket 64 connections x 64 KiB besides).
FRAME_BUDGET = 64 * 1024 * 1024
#: Frames longer than this are parsed in a worker thread (with the pure-Python scanner,
#: which lets the loop run between its steps), one at a time.
PARSE_INLINE = 64 * 1024
_CHUNK = FRAME_ALLOWANCE
#: errno values of an accept that failed for want of resources: back off and go on.
_SCARCE = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}
#: Seconds between two log lines of failed accepts (a flood would write one per attempt).
ACCEPT_WARN_EVERY = 10.0


class _FrameTimeout(Exception):
    pass


class _TooLarge(Exception):
    pass


class Budget:
    """The partial-frame bytes all connections share, in ``_CHUNK`` units."""

    def __init__(self, total: int = FRAME_BUDGET) -> None:
        self.units = anyio.Semaphore(max(1, total // _CHUNK))
        self.parse = anyio.CapacityLimiter(1)


class FrameReader:
    """Newline-delimited frames from one connection, holding at most ``FRAME_ALLOWANCE``
    bytes of its own plus what it takes from the shared :class:`Budget`. ``timeout``: the
    seconds a frame may take from its first byte to its newline (the hello: from the
    connect); then the connection gets a ``bad_frame`` and is closed. Idle between frames is
    fine (a Python API client keeps its connection)."""

    def __init__(self, stream: anyio.abc.ByteStream, budget: Budget, timeout: float) -> None:
        self.stream = stream
        self.budget = budget
        self.timeout = timeout
        self.buf = bytearray()
        self.held = 0  # budget units this connection holds
        self.started: float | None = time.monotonic()  # the hello's clock runs from connect

    def _needed(self, size: int) -> int:
        return max(0, -(-(size - FRAME_ALLOWANCE) // _CHUNK))

    def _release_to(self, units: int) -> None:
        while self.held > units:
            self.budget.units.release()
            self.held -= 1

    def close(self) -> None:
        self._release_to(0)
        self.buf.clear()

    async def frame(self) -> bytes:
        """The next line, without its newline. Raises ``_TooLarge`` (the rest of the line is
        not read), ``_FrameTimeout``, or ``anyio.EndOfStream`` and the like when the peer
        goes away."""
        scanned = 0
        while True:
            newline = self.buf.find(b"\n", scanned)
            if newline >= 0:
                line = bytes(self.buf[:newline])
                del self.buf[: newline + 1]
                self._release_to(self._needed(len(self.buf)))
                self.started = time.monotonic() if self.buf else None
                return line
            scanned = len(self.buf)
            if scanned > protocol.MAX_FRAME:
                self.close()
                raise _TooLarge
            if self.started is None and self.buf:
                self.started = time.monotonic()
            left = None if self.started is None else self.started + self.timeout
            with anyio.move_on_after(
                math.inf if left is None else left - time.monotonic()
            ) as scope:
                # Up to the allowance a read takes nothing from the budget (a small frame
                # that arrives in pieces never waits for it); past it, a unit per chunk.
                want = FRAME_ALLOWANCE - len(self.buf)
                if want <= 0:
                    want = _CHUNK
                    while self.held < self._needed(len(self.buf) + _CHUNK):
                        await self.budget.units.acquire()
                        self.held += 1
                chunk = await self.stream.receive(want)
            if scope.cancelled_caught:
                self.close()
                raise _FrameTimeout
            self.buf += chunk

    async def skip_line(self) -> bool:
        """Drop the rest of an oversized line (nothing of it is kept) so the connection can
        go on with the next frame. False when the peer went away, the line exceeds even
        MAX_SKIP, or it does not end within the frame timeout."""
        skipped = 0
        with anyio.move_on_after(self.timeout):
            try:
                while skipped < MAX_SKIP:
                    chunk = await self.stream.receive(_CHUNK)
                    newline = chunk.find(b"\n")
                    if newline >= 0:
                        self.buf += chunk[newline + 1 :]  # at most one chunk: within the allowance
                        self.started = time.monotonic() if self.buf else None
                        return True
                    skipped += len(chunk)
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                return False
        return False


async def decode(line: bytes, budget: Budget) -> dict[str, Any]:
    """A frame parsed on the loop when small, else in a worker thread (one at a time) with
    the pure-Python scanner: a 4 MiB frame of nested arrays takes ~2 s to parse, and the C
    scanner would hold the interpreter lock — and so the loop — for all of it."""
    if len(line) <= PARSE_INLINE:
        return protocol.decode(line)
    return await anyio.to_thread.run_sync(
        functools.partial(protocol.decode, line, interruptible=True), limiter=budget.parse
    )


async def serve_connection(
    stream: anyio.abc.ByteStream,
    app: App,
    budget: Budget | None = None,
    frame_timeout: float = 10.0,
    channel: Channel = OWNER,
) -> None:
    """One client on ``channel``: hello, then one answer per request frame. A bad or
    oversized frame gets an error frame (the rest of an oversized line is read and dropped)
    and the connection goes on with the next frame; a frame that does not end within
    ``frame_timeout`` seconds ends it."""
    reader = FrameReader(stream, budget if budget is not None else Budget(), frame_timeout)
    # The files this connection sends and is answered, bounded with its party's others.
    files = app.carrier.connection(party_of(channel, app.grants.of))
    async with stream:
        try:
            await _serve_frames(stream, reader, app, channel, files)
        finally:
            reader.close()
            with anyio.CancelScope(shield=True):
                await files.close()


def _other_version(hello: object) -> str | None:
    """What a client's hello states that differs from this keeper's version or protocol
    (``"0.2.0 (protocol 2)"``), or None: a hello that states neither (a test's, a tool's)
    is taken as it always was."""
    if not isinstance(hello, dict):
        return None
    ours = protocol.hello("keeper")["hello"]
    if all(hello.get(k, ours[k]) == ours[k] for k in ("version", "protocol")):
        return None
    return f"{hello.get('version', '?')} (protocol {hello.get('protocol', '?')})"


async def _serve_frames(
    stream: anyio.abc.ByteStream, reader: FrameReader, app: App, channel: Channel, files: Carried
) -> None:
    # A client of another version sent its hello: it replaces this keeper (the shutdown op)
    # and nothing else it sends runs here, not even a request it wrote with its hello.
    other: str | None = None
    while True:
        try:
            line = await reader.frame()
        except _TooLarge:
            await _send(
                stream,
                Refusal(
                    "too_large",
                    what="a frame",
                    size=f"more than {protocol.MAX_FRAME}",
                    limit=protocol.MAX_FRAME,
                    fix="send smaller frames; large values belong in files",
                ).frame(),
            )
            if not await reader.skip_line():
                return
            continue
        except _FrameTimeout:
            reason = (
                f"no end of frame (newline) within {reader.timeout:g}s: the connection is closed"
            )
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await _send(stream, Refusal("bad_frame", reason=reason).frame())
            return
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, OSError):
            return
        if not line.strip():
            continue
        try:
            frame = await decode(line, reader.budget)
        except ValueError as exc:
            await _send(stream, Refusal("bad_frame", reason=str(exc)).frame())
            continue
        if "hello" in frame:
            reply = protocol.hello("keeper")
            reply["hello"]["pid"] = os.getpid()
            reply["hello"].update(channel.hello())
            await _send(stream, reply)
            other = _other_version(frame["hello"])
            continue
        if other is not None and frame.get("op") != "shutdown":
            ours = protocol.hello("keeper")["hello"]
            reason = (
                f"this keeper is version {ours['version']} (protocol {ours['protocol']}), the "
                f"client {other}: nothing but the shutdown op runs after its hello"
            )
            await _send(
                stream,
                dict(Refusal("keeper_unavailable", reason=reason).frame(), id=frame.get("id")),
            )
            continue
        if frame.get("op") == "shutdown" and not channel.is_owner:
            refusal = Refusal("owner_only", what="shutdown", command="bay keeper stop")
            await _send(stream, dict(refusal.frame(), id=frame.get("id")))
            continue
        if frame.get("op") == "shutdown":
            log.info("asked to stop (%s)", frame.get("reason", "request"))
            app.life.begin_stop()
            await _send(stream, {"id": frame.get("id"), "ok": True, "data": {"stopping": True}})
            continue
        if frame.get("op") in ("put", "get"):
            # A file's bytes, in or out (browserbay.transfer): bound to this connection, on
            # every channel. Sent as they are: a scrub of secrets would change a file's bytes.
            await stream.send(protocol.encode(await files.frame(frame)))
            continue
        app.life.inflight += 1
        # A client that asked for progress lines gets them before the answer.
        said = progress.SINK.set(_progress_sink(stream, frame) if frame.get("progress") else None)
        try:
            if "argv" in frame:  # the CLI's warm road: parsed, run and printed here
                answer = await argvroad.answer(frame, channel, files, app.keeper)
            else:
                answer = await app.keeper.handle(frame, channel, files)
            await files.spent()  # the files sent for it go
        finally:
            progress.SINK.reset(said)
            app.life.inflight -= 1
            app.life.last_request = time.monotonic()
        try:
            data = scrub_frame(protocol.encode(answer))  # no secret value leaves
        except (TypeError, ValueError):
            log.exception("an answer could not be encoded")
            failed = Refusal(
                "internal_error", verb=str(frame.get("verb")), reason="unencodable answer"
            )
            data = protocol.encode(dict(failed.frame(), id=frame.get("id")))
        try:
            await stream.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            return
        finally:  # the verb's audit row, now that its answer has left
            with anyio.CancelScope(shield=True):
                await app.keeper.audit.flush()


#: Seconds a keeper that cannot open its registry waits for a request before it exits.
REFUSING_IDLE = 2.0


async def refuse_until_idle(
    sock: socket.socket, refusal: Refusal, idle: float = REFUSING_IDLE
) -> None:
    """A keeper without its registry serves nothing, but the command that started it hears
    why, as a refusal with its code — not the log tail of a keeper that exited. The first
    request is answered ``refusal`` (so is any other that came meanwhile), then the keeper
    exits: the next command starts a new keeper, which tries the registry again. With no
    request for ``idle`` seconds it exits too."""
    log.error("%s (%s)", refusal.message, refusal.code)
    resume_gc()
    listener = await anyio.abc.SocketListener.from_socket(sock)
    answered = anyio.Event()

    async def answer(stream: anyio.abc.ByteStream) -> None:
        reader = FrameReader(stream, Budget(), idle)
        with contextlib.suppress(Exception):
            async with stream:
                while True:
                    frame = protocol.decode(await reader.frame())
                    if "hello" in frame:
                        await _send(stream, protocol.hello("keeper"))
                        continue
                    await _send(stream, dict(refusal.frame(), id=frame.get("id")))
                    answered.set()
                    return

    async with listener, anyio.create_task_group() as tg:

        async def accept() -> None:
            while True:
                tg.start_soon(answer, await listener.accept())

        tg.start_soon(accept)
        with anyio.move_on_after(idle):
            await answered.wait()
        tg.cancel_scope.cancel()


async def accept_loop(
    listener: anyio.abc.SocketListener,
    handler: Callable[[Any], Awaitable[None]],
    limit: int = MAX_CONNECTIONS,
) -> None:
    """Accept connections until the listener closes, at most ``limit`` served at once. An
    accept that fails — the process is out of descriptors (EMFILE), the system too (ENFILE),
    or memory — is logged and retried after a back-off (up to 1 s): the pending clients wait
    in the backlog; the keeper and every session's browser go on."""
    slots = anyio.Semaphore(limit)
    delay = 0.05
    warned = 0.0

    async def served(stream: Any) -> None:
        try:
            await handler(stream)
        finally:
            slots.release()

    async with anyio.create_task_group() as tg:
        while True:
            await slots.acquire()
            try:
                stream = await listener.accept()
            except anyio.ClosedResourceError:
                slots.release()
                return
            except (anyio.BrokenResourceError, OSError) as exc:
                slots.release()
                cause = exc.__cause__ if isinstance(exc, anyio.BrokenResourceError) else exc
                if time.monotonic() - warned > 10:
                    warned = time.monotonic()
                    scarce = isinstance(cause, OSError) and cause.errno in _SCARCE
                    log.warning(
                        "accept failed (%s): %s; backing off, still serving",
                        os.strerror(cause.errno)
                        if isinstance(cause, OSError) and cause.errno
                        else type(cause).__name__,
                        "out of file descriptors or memory" if scarce else "retrying",
                    )
                await anyio.sleep(delay)
                delay = min(delay * 2, 1.0)
                continue
            except BaseException:
                slots.release()
                raise
            delay = 0.05
            tg.start_soon(served, stream)


def raise_nofile_limit() -> tuple[int, int]:
    """The soft RLIMIT_NOFILE raised to the hard limit (every browser's pipes, every
    client and viewer take descriptors). Answers (soft, hard) as they are now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else 1 << 20
    if soft == resource.RLIM_INFINITY or soft >= want:
        return soft, hard
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    except (ValueError, OSError):
        return soft, hard
    return want, hard


async def guarded_connection(
    stream: anyio.abc.ByteStream,
    app: App,
    budget: Budget | None = None,
    frame_timeout: float = 10.0,
    channel: Channel = OWNER,
) -> None:
    """One connection, whatever happens on it: a client that hangs up while it is being
    answered (a hello, an error frame, a progress line) ends only its own connection. An
    exception out of a connection handler would end the listener — the whole keeper."""
    try:
        await serve_connection(stream, app, budget, frame_timeout, channel)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass
    except Exception:
        log.exception("a connection failed; the keeper goes on")


def peer_uid(stream: anyio.abc.ByteStream) -> int | None:
    """The uid of the process at the other end of a unix socket stream (``SO_PEERCRED``;
    None where the system has no such option)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:  # pragma: no cover - macOS: the socket's mode is the check
        return None
    raw = stream.extra(anyio.abc.SocketAttribute.raw_socket)  # noqa: S610 - anyio, not Django
    cred = raw.getsockopt(socket.SOL_SOCKET, option, 12)  # struct ucred: pid, uid, gid
    return int.from_bytes(cred[4:8], sys.byteorder)


async def session_connection(
    stream: anyio.abc.ByteStream,
    app: App,
    budget: Budget,
    frame_timeout: float,
    channel: Channel,
) -> None:
    """One connection on a session socket. Its peer must run as the keeper's user: the
    socket's mode (0600) already keeps every other user but root out, and this keeps root
    out too (a root process on a non-root keeper's grant): such a connection is closed
    unanswered."""
    uid = peer_uid(stream)
    if uid is not None and uid != os.getuid():
        log.warning(
            "%s: a peer of uid %d (not the keeper's %d) was hung up on",
            channel.label,
            uid,
            os.getuid(),
        )
        await stream.aclose()
        return
    await guarded_connection(stream, app, budget, frame_timeout, channel)


#: The keeper's own modules, imported after the socket is bound (see bind_first): the ones
#: :func:`_serve` imports.
KEEPER_MODULES = (
    "browserbay.sandbox",
    "browserbay.keeper.outputs",
    "browserbay.keeper.app",
    "browserbay.keeper.browsers",
    "browserbay.plugins",
    "browserbay.registry",
)


def _import_keeper() -> None:
    for name in KEEPER_MODULES:
        importlib.import_module(name)


def _load_plugins() -> Plugins:
    """Imports and entry-point scans (~200 ms): run in a worker thread, so the loop meanwhile
    carries the Playwright driver's start instead of holding it."""
    from browserbay.plugins import load_plugins

    return load_plugins(strict=False)


class Spare:
    """A warm start's browser, launched beside the keeper's own imports: a page verb is on
    its way, and the browser it waits for is, unless it names a profile, a shared ephemeral
    one of the default provider, unfenced. Launched by that provider's own driver with the
    spec the pool would give it (:meth:`BrowserPool._launch`: its own ``bb-`` id and private
    home, headless, no proxy, no options): the same executable, flags and sandbox. Only for
    a provider that runs here, shares one process between isolated contexts, owns its
    directories and needs no key (nothing is resolved before the pool exists).

    No registry row until :meth:`hand_to`, after the orphan sweep: a keeper that dies first
    takes the browser with it (the driver's pipe closes); one that does not start closes it
    (:meth:`discard`). Taken in, it is the pool's like any other (BrowserPool.adopt): a first
    verb that wants it makes its context there; one that does not leaves it idle, and the
    idle grace stops it."""

    def __init__(self, row: ProviderRow, spec: LaunchSpec) -> None:
        self.row = row
        self.spec = spec
        self.handle: BrowserHandle | None = None
        self.done = anyio.Event()
        self.taken = False

    @classmethod
    def for_default(cls, plugins: Plugins, provider: str, paths: BayPaths) -> Spare | None:
        from browserbay.keeper.browsers import mint_browser_id
        from browserbay.model import LaunchSpec

        row = plugins.providers.get(provider)
        if row is None or row.not_runnable or row.driver_factory is None:
            return None
        caps = row.capabilities
        if not caps.ephemeral_contexts or not caps.owns_dir or caps.key_scope != "none":
            return None
        if caps.remote_host or caps.cdp_endpoint:
            return None
        browser_id = mint_browser_id()
        return cls(row, LaunchSpec(browser_id=browser_id, home=paths.browsers / browser_id))

    async def launch(self, driver: PlaywrightDriver) -> None:
        """Never raises: a spare that fails is logged, and the verb launches its own."""
        from browserbay.keeper.faults import FaultPlan

        try:
            playwright = await driver.get()
            assert self.row.driver_factory is not None
            await anyio.to_thread.run_sync(
                functools.partial(self.spec.home.mkdir, parents=True, mode=0o700)
            )
            with anyio.CancelScope(shield=True):  # never a launch cut half-way
                self.handle = await self.row.driver_factory().launch(playwright, self.spec)
            await FaultPlan.from_environ().ahit("keeper.spare_launched", "*")
        except Exception as exc:
            log.info("no browser launched at the keeper's start (%s): the verb launches it", exc)
            await anyio.to_thread.run_sync(_remove, self.spec.home)
        finally:
            self.done.set()

    async def hand_to(
        self,
        pool: BrowserPool,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Into ``pool`` once launched. Holds its launch lock from the call on: a first verb
        waits for this browser rather than starting another."""
        async with pool.launch_lock:
            task_status.started()
            await self.done.wait()
            handle, self.handle = self.handle, None
            if handle is None:
                return
            browser = handle.browser
            if browser is None or not browser.is_connected():
                await self._close(handle)
                return
            self.taken = True
            try:
                await pool.adopt(self.row, self.spec, handle)  # closes it when it fails
            except Exception:
                log.exception("the browser launched at the keeper's start was not taken in")

    async def discard(self) -> None:
        await self.done.wait()
        handle, self.handle = self.handle, None
        if handle is not None and not self.taken:
            await self._close(handle)

    async def _close(self, handle: BrowserHandle) -> None:
        with contextlib.suppress(Exception):
            await handle.close(5.0)
        await anyio.to_thread.run_sync(_remove, self.spec.home)


def _remove(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def _quiet_accept_errors(loop: asyncio.AbstractEventLoop) -> None:
    """asyncio's own servers (a plugin's: the live view) log every accept that fails for want
    of descriptors, with its traceback — under a connection flood that is tens of thousands
    of lines a second, filling the disk and holding the loop the flood meant to starve. One
    line per :data:`ACCEPT_WARN_EVERY` seconds is kept, as the keeper's own accept loop does;
    every other error goes to the default handler."""
    warned = [-ACCEPT_WARN_EVERY]

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        scarce = isinstance(exc, OSError) and exc.errno in _SCARCE
        if scarce and "accept" in str(context.get("message", "")):
            if time.monotonic() - warned[0] >= ACCEPT_WARN_EVERY:
                warned[0] = time.monotonic()
                log.warning("a server's accept failed (%s); backing off, still serving", exc)
            return
        loop.default_exception_handler(context)

    loop.set_exception_handler(handler)


async def _run(
    sock: socket.socket,
    paths: BayPaths,
    configured: Configured,
    warm: bool = False,
    early: EarlyDriver | None = None,
) -> None:
    """Serve until stopped. ``warm``: a page verb is on its way, so the one chain it waits
    for goes first — Playwright's import, then its Node.js driver, which boots on another
    core while the keeper's own modules are imported (in a worker thread: the loop carries
    the driver's start meanwhile). Else the driver starts once the keeper listens. A driver
    that fails to start is logged; the verb that needs it tries again and is refused
    ``backend_unavailable`` (browserbay.keeper.browsers), nothing recorded."""
    driver = PlaywrightDriver(compile_caches(paths.state), early)
    _quiet_accept_errors(asyncio.get_running_loop())

    async def prewarm() -> None:
        try:
            await driver.get()
        except Exception:
            log.exception("the Playwright driver failed to start")

    spare: Spare | None = None
    plugins: Plugins | None = None
    try:
        async with anyio.create_task_group() as first:
            if warm:
                with contextlib.suppress(Exception):  # said by the driver's start, below
                    await driver.load()
                first.start_soon(prewarm)
                # The plugins first (the provider of the verb's browser), so that browser's
                # launch runs beside the keeper's own imports (Spare).
                plugins = await anyio.to_thread.run_sync(_load_plugins)
                spare = await anyio.to_thread.run_sync(
                    Spare.for_default, plugins, configured.settings.default_provider, paths
                )
                if spare is not None:
                    first.start_soon(spare.launch, driver)
                await anyio.to_thread.run_sync(_import_keeper)
            await _serve(sock, paths, configured, driver, None if warm else prewarm, plugins, spare)
    finally:
        with anyio.CancelScope(shield=True):
            if spare is not None:
                await spare.discard()  # never taken in: the keeper did not start
            await driver.stop()  # stopped by app.close() already, unless the start failed


async def _serve(
    sock: socket.socket,
    paths: BayPaths,
    configured: Configured,
    driver: PlaywrightDriver,
    prewarm: Callable[[], Coroutine[Any, Any, None]] | None,
    plugins: Plugins | None = None,
    spare: Spare | None = None,
) -> None:
    # Imported here, after the socket is bound (see bind_first): the keeper's own modules,
    # the plugins and Playwright's import chain take a while, and a client may connect now.
    from browserbay import sandbox
    from browserbay.keeper import outputs
    from browserbay.keeper.app import App
    from browserbay.keeper.browsers import sweep_orphans, sweep_strays
    from browserbay.keeper.fleet import KeeperIdBad, data_root, keeper_id
    from browserbay.keeper.link import LinkServer, link_config
    from browserbay.keys import registry_url
    from browserbay.registry import (
        RegistryUnreachable,
        RegistryUrlBad,
        open_registry,
        redact,
    )

    settings = configured.settings

    def prune_outputs() -> None:
        outputs.prune(paths.outputs, settings.outputs_max_age, settings.outputs_max_bytes)

    try:  # never a plain link: a listen address without its secret stops the start
        link = await anyio.to_thread.run_sync(link_config, settings.fleet_listen, paths.state)
    except Refusal as unlinked:
        await refuse_until_idle(sock, unlinked)
        return
    url = registry_url()  # sealed with the keys when it carries a password
    # Profiles' relative directories are under the fleet's shared data, else the home's.
    profiles_data = data_root(settings.fleet_data, paths.data)
    try:
        me = await anyio.to_thread.run_sync(keeper_id, paths.state)
        registry = await anyio.to_thread.run_sync(
            open_registry, url, paths.registry, me, profiles_data
        )
    except KeeperIdBad as exc:
        where = redact(url) if url else str(paths.registry)
        await refuse_until_idle(sock, Refusal("registry_unreachable", where=where, reason=str(exc)))
        return
    except RegistryUrlBad as exc:
        await refuse_until_idle(sock, Refusal("registry_url_bad", reason=str(exc)))
        return
    except RegistryUnreachable as exc:
        refusal = Refusal("registry_unreachable", where=redact(url), reason=str(exc))
        await refuse_until_idle(sock, refusal)
        return
    # Imports and entry-point scans (~200 ms): in a worker thread, so the loop meanwhile
    # carries the Playwright driver's start (a warm start began it) instead of holding it.
    if plugins is None:
        plugins = await anyio.to_thread.run_sync(_load_plugins)
    app = App(plugins, registry, paths, settings, configured, driver, link)
    life = app.life
    await app.start()
    listener = await anyio.abc.SocketListener.from_socket(sock)

    async def on_signal() -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for signum in signals:
                log.info("signal %d: stopping", signum)
                life.begin_stop()

    async def housekeeping() -> None:
        while True:
            await anyio.sleep(settings.tick)
            try:
                await app.housekeeping.tick()
                await anyio.to_thread.run_sync(prune_outputs)
            except Exception:
                log.exception("housekeeping failed")
            idle = time.monotonic() - life.last_request
            browsing = any(s.running_leases for s in app.roster.by_id.values())
            # A live grant keeps the keeper: its agent can never start one (a session
            # socket's client never autostarts a keeper).
            granted = bool(app.grants.live)
            if not (browsing or granted) and not app.pool.running and idle > settings.keeper_idle:
                log.info("idle for %.0fs with nothing running: exiting", idle)
                life.begin_stop()

    async def triggers() -> None:
        try:
            await app.triggers.run()
        except Exception:
            log.exception("the trigger intake stopped")

    serving = anyio.CancelScope()

    budget = Budget()
    # The session sockets' half-sent frames come out of a budget of their own: an agent can
    # hold at most that (and starve only the agents), never what the owner's frames wait for.
    session_budget = Budget()

    async def serve() -> None:
        with serving:
            await accept_loop(
                listener,
                lambda stream: guarded_connection(stream, app, budget, settings.frame_timeout),
            )

    # Another keeper's forwarded verbs: frames as on the home's socket, a budget of their own.
    link_budget = Budget()

    async def serve_link(stream: anyio.abc.ByteStream, channel: Channel) -> None:
        await guarded_connection(stream, app, link_budget, settings.frame_timeout, channel)

    async def listen_link() -> None:
        assert link is not None
        try:
            await LinkServer(link, me).run(serve_link)
        except OSError as exc:  # its port is taken: this keeper serves its own socket still
            log.error(
                "the fleet link cannot listen on %s: %s (other keepers cannot forward here)",
                link.listen,
                exc.strerror or exc,
            )
        except Exception:
            log.exception("the fleet link stopped; this keeper serves its own socket still")

    async def listen_session(sock: socket.socket, channel: Channel) -> None:
        """A grant's socket (see browserbay.keeper.grants), served as the home's is, with
        the grant's channel and at most SESSION_CONNECTIONS connections at once; every
        session socket shares one frame budget, apart from the owner's."""
        async with await anyio.abc.SocketListener.from_socket(sock) as granted:
            await accept_loop(
                granted,
                lambda stream: session_connection(
                    stream, app, session_budget, settings.frame_timeout, channel
                ),
                SESSION_CONNECTIONS,
            )

    async with anyio.create_task_group() as tg:
        # The driver's start overlaps the rest of ours; requests wait for it only if they
        # need a browser. (Begun already in a warm start.)
        if prewarm is not None:
            tg.start_soon(prewarm)
        await anyio.to_thread.run_sync(write_plugin_verbs, paths, app.admin.plugin_verb_rows())
        life.swept = await anyio.to_thread.run_sync(sweep_orphans, registry.browsers)
        # Dirs no row names (a keeper killed before its early browser's adoption); never
        # the early browser this start launches (it has no row yet either).
        keep = () if spare is None else (spare.spec.browser_id,)
        strays = await anyio.to_thread.run_sync(
            sweep_strays, paths.browsers, registry.browsers, keep
        )
        if strays:
            log.info("removed %d stray browser dir(s): %s", len(strays), ", ".join(strays))
        if spare is not None:  # after the sweep (it would take the new row for an orphan)
            await tg.start(spare.hand_to, app.pool)
        await anyio.to_thread.run_sync(prune_outputs)
        said = await anyio.to_thread.run_sync(sandbox.state)
        if not said.sandboxed:  # root (Chromium's rule), or no sandbox possible: refused
            log.warning("Chromium's renderer sandbox is off: %s", said.detail)
        if life.swept:
            log.info("swept %d orphaned browser(s): %s", len(life.swept), ", ".join(life.swept))
        await app.db(registry.runs.started, os.getpid(), __version__)
        log.info("keeper %s (pid %d) listening on %s", __version__, os.getpid(), paths.socket)
        resume_gc()
        await tg.start(app.grants.run, listen_session)  # the live grants' sockets again
        tg.start_soon(app.fleet.run)  # the heartbeat (its first beat was the start's row)
        if app.change_listener is not None:  # the registry's change channel, in its thread
            app.hear_changes(asyncio.get_running_loop().call_soon_threadsafe)
            app.change_listener.start()
        tg.start_soon(serve)
        if link is not None and link.host is not None:
            tg.start_soon(listen_link)
        tg.start_soon(on_signal)
        tg.start_soon(housekeeping)
        tg.start_soon(triggers)
        await life.stop_event.wait()
        with anyio.move_on_after(5):
            while life.inflight:  # noqa: ASYNC110 - a counter, polled only at shutdown
                await anyio.sleep(0.01)
        await anyio.sleep(0.05)  # let the last answers leave
        serving.cancel()
        await listener.aclose()
        await app.grants.close()  # every session socket and its connections end; files go
        tg.cancel_scope.cancel()
    started = time.monotonic()
    if app.change_listener is not None:
        app.change_listener.stop()
    with anyio.CancelScope(shield=True):
        await app.keeper.audit.flush()  # the rows of the last answers
        await app.close()
        await app.fleet.stop()
        await app.db(registry.runs.stopped, os.getpid())
    registry.close()
    log.info("keeper stopped (shutdown took %.2fs)", time.monotonic() - started)


def _private_tmp(paths: BayPaths) -> None:
    """Everything the keeper's children put in a temp dir (Playwright's profile and
    artifact dirs) goes under the runtime dir, where a killed keeper's leftovers are found:
    no other keeper uses this home while we hold its lock, so what is there is stale."""
    import shutil

    from browserbay.paths import ensure_private

    tmp = paths.runtime / "tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    ensure_private(tmp)
    os.environ["TMPDIR"] = str(tmp)


#: The collector was paused for the start (``python -m browserbay.keeper``): see resume_gc.
_gc_paused = False


def resume_gc() -> None:
    """The start is over (the keeper listens, or serves only its refusal): the cyclic
    collector paused by ``python -m browserbay.keeper`` runs again, the objects the start
    made (modules, classes, the App: they live as long as the keeper) moved out of its
    reach first (:func:`gc.freeze`), so no collection walks them again. Once; a no-op when
    the collector was not paused here."""
    global _gc_paused
    if _gc_paused:
        _gc_paused = False
        gc.freeze()
        gc.enable()
        log.info("garbage collector on (%d objects of the start frozen)", gc.get_freeze_count())


def main(early: EarlyDriver | None = None, gc_paused: bool = False) -> None:
    """The keeper; ``early``: its Playwright driver, spawned already by ``python -m
    browserbay.keeper`` (:mod:`browserbay.keeper.early`), ended here if the keeper does not
    start. ``gc_paused``: that start paused the cyclic collector (:func:`resume_gc`)."""
    global _gc_paused
    from browserbay.keys import hide_keys

    _gc_paused = gc_paused and not gc.isenabled()

    hide_keys()  # done already by `python -m browserbay.keeper`; a no-op then
    try:
        _main(early)
    finally:
        if early is not None and not early.taken:
            early.discard()


def _main(early: EarlyDriver | None) -> None:
    paths = bay_paths()
    try:
        sock, lock = bind_first(paths)
    except AlreadyRunning:
        print("another keeper holds the lock; leaving it be", file=sys.stderr)
        sys.exit(0)
    except NotYours as exc:  # a directory another user planted: never bind there
        print(f"keeper: {exc}", file=sys.stderr)
        sys.exit(1)
    except OSError as exc:  # the socket's place cannot be cleared or bound: say where
        print(
            f"keeper: cannot listen on {paths.socket}: {exc.strerror or exc}; remove what is "
            "there (or set BAY_HOME to another place), then run the command again",
            file=sys.stderr,
        )
        sys.exit(1)
    argv = sys.argv[1:]
    warm = argv[:1] == [protocol.KEEPER_WARM]  # browserbay.client.connect(warm=True)
    try:
        flags = flags_from_argv(argv[1:] if warm else argv)
        configured = load_settings(file=paths.config_file, flags=flags)
    except SettingsError as exc:
        _setup_logging(paths)
        log.error("%s", exc)  # `bay keeper logs` shows why the keeper did not start
        print(f"keeper: {exc}", file=sys.stderr)
        sys.exit(1)
    settings = configured.settings
    _setup_logging(paths, settings.log_level)
    for line in MOVED_ASIDE:
        log.warning(line)
    soft, hard = raise_nofile_limit()
    log.info("file descriptors: soft limit %s, hard %s", soft, hard)
    _private_tmp(paths)
    try:
        anyio.run(_run, sock, paths, configured, warm, early)
    except Exception:
        log.exception("keeper crashed")
        raise
    finally:
        lock.close()


if __name__ == "__main__":
    main()
