"""The keeper process: bind first, then load plugins and the registry, then serve NDJSON
frames on the unix socket until asked to stop (``bay keeper stop``, SIGTERM, SIGINT)."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import signal
import socket
import stat
import sys
import time
from pathlib import Path
from typing import IO, Any

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

from browserbay import progress, protocol, verbs
from browserbay._version import __version__
from browserbay.paths import BayPaths, NotYours, bay_paths
from browserbay.refusals import Refusal
from browserbay.scrub import scrub, scrub_frame

log = logging.getLogger("browserbay.keeper")
TICK = float(os.environ.get("BAY_TICK", "15"))
KEEPER_IDLE = float(os.environ.get("BAY_KEEPER_IDLE", "3600"))


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


def _setup_logging(paths: BayPaths) -> None:
    handler = logging.FileHandler(paths.keeper_log)
    os.chmod(paths.keeper_log, 0o600)
    handler.addFilter(Scrubbed())
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(os.environ.get("BAY_LOG_LEVEL", "INFO"))


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
    async def sink(text: str) -> None:
        await _send(stream, {"id": frame.get("id"), "progress": text})

    return sink


#: How much of one oversized frame the keeper reads past (and drops) before hanging up.
MAX_SKIP = 256 * 1024 * 1024


async def _skip_line(reader: BufferedByteReceiveStream) -> bool:
    """Drop the rest of an oversized line so the connection can go on with the next frame.
    False when the peer went away or the line exceeds even MAX_SKIP."""
    skipped = 0
    try:
        while skipped < MAX_SKIP:
            chunk = await reader.receive()
            newline = chunk.find(b"\n")
            if newline >= 0:
                reader.feed_data(chunk[newline + 1 :])
                return True
            skipped += len(chunk)
    except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
        return False
    return False


async def serve_connection(stream: anyio.abc.ByteStream, keeper: Any) -> None:
    """One client: hello, then one answer per request frame. A bad or oversized frame gets
    an error frame (the rest of an oversized line is read and dropped) and the connection
    goes on with the next frame."""
    reader = BufferedByteReceiveStream(stream)
    async with stream:
        while True:
            try:
                line = await reader.receive_until(b"\n", protocol.MAX_FRAME)
            except anyio.DelimiterNotFound:
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
                if not await _skip_line(reader):
                    return
                continue
            except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, OSError):
                return
            if not line.strip():
                continue
            try:
                frame = protocol.decode(line)
            except ValueError as exc:
                await _send(stream, Refusal("bad_frame", reason=str(exc)).frame())
                continue
            if "hello" in frame:
                reply = protocol.hello("keeper")
                reply["hello"]["pid"] = os.getpid()
                await _send(stream, reply)
                continue
            if frame.get("op") == "shutdown":
                log.info("asked to stop (%s)", frame.get("reason", "request"))
                keeper.begin_stop()
                await _send(stream, {"id": frame.get("id"), "ok": True, "data": {"stopping": True}})
                continue
            keeper.inflight += 1
            # A client that asked for progress lines gets them before the answer.
            said = progress.SINK.set(
                _progress_sink(stream, frame) if frame.get("progress") else None
            )
            try:
                answer = await keeper.handle(frame)
            finally:
                progress.SINK.reset(said)
                keeper.inflight -= 1
                keeper.last_request = time.monotonic()
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


async def guarded_connection(stream: anyio.abc.ByteStream, keeper: Any) -> None:
    """One connection, whatever happens on it: a client that hangs up while it is being
    answered (a hello, an error frame, a progress line) ends only its own connection. An
    exception out of a connection handler would end the listener — the whole keeper."""
    try:
        await serve_connection(stream, keeper)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass
    except Exception:
        log.exception("a connection failed; the keeper goes on")


async def _run(sock: socket.socket, paths: BayPaths) -> None:
    from browserbay.keeper import outputs
    from browserbay.keeper.browsers import sweep_orphans
    from browserbay.keeper.keeper import Keeper
    from browserbay.plugins import load_plugins
    from browserbay.store import SqliteRegistry

    registry = await anyio.to_thread.run_sync(SqliteRegistry, paths.registry)
    plugins = load_plugins(strict=False)
    keeper = Keeper(plugins, registry, paths)
    await keeper.start()
    listener = await anyio.abc.SocketListener.from_socket(sock)

    async def on_signal() -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for signum in signals:
                log.info("signal %d: stopping", signum)
                keeper.begin_stop()

    async def housekeeping() -> None:
        while True:
            await anyio.sleep(TICK)
            try:
                await keeper.tick()
                await anyio.to_thread.run_sync(outputs.prune, paths.outputs)
            except Exception:
                log.exception("housekeeping failed")
            idle = time.monotonic() - keeper.last_request
            browsing = any(s.running_leases for s in keeper.sessions.values())
            if not browsing and not keeper.pool.running and idle > KEEPER_IDLE:
                log.info("idle for %.0fs with nothing running: exiting", idle)
                keeper.begin_stop()

    async def prewarm() -> None:
        # The Playwright driver takes ~500 ms to import and start: begin at once.
        try:
            await keeper.playwright()
        except Exception:
            log.exception("the Playwright driver failed to start")

    async def triggers() -> None:
        from browserbay.keeper.triggers import TriggerIntake

        try:
            await TriggerIntake(keeper).run()
        except Exception:
            log.exception("the trigger intake stopped")

    serving = anyio.CancelScope()

    async def serve() -> None:
        with serving:
            await listener.serve(lambda stream: guarded_connection(stream, keeper))

    async with anyio.create_task_group() as tg:
        # The driver's start overlaps the rest of ours; requests wait for it only if they
        # need a browser.
        tg.start_soon(prewarm)
        await anyio.to_thread.run_sync(write_plugin_verbs, paths, keeper.plugin_verb_rows())
        keeper.swept = await anyio.to_thread.run_sync(sweep_orphans, registry)
        await anyio.to_thread.run_sync(outputs.prune, paths.outputs)
        if keeper.swept:
            log.info("swept %d orphaned browser(s): %s", len(keeper.swept), ", ".join(keeper.swept))
        await keeper.db(registry.keeper_started, os.getpid(), __version__)
        log.info("keeper %s (pid %d) listening on %s", __version__, os.getpid(), paths.socket)
        tg.start_soon(serve)
        tg.start_soon(on_signal)
        tg.start_soon(housekeeping)
        tg.start_soon(triggers)
        await keeper.stop_event.wait()
        with anyio.move_on_after(5):
            while keeper.inflight:  # noqa: ASYNC110 - a counter, polled only at shutdown
                await anyio.sleep(0.01)
        await anyio.sleep(0.05)  # let the last answers leave
        serving.cancel()
        await listener.aclose()
        tg.cancel_scope.cancel()
    started = time.monotonic()
    with anyio.CancelScope(shield=True):
        await keeper.close()
        await keeper.db(registry.keeper_stopped, os.getpid())
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


def main() -> None:
    from browserbay.keys import exec_without_keys, seal_environment

    # Keys (BAY_INTEGRATION_*, BAY_INTEGRATIONS, BAY_KEYS_PASSPHRASE) leave the process
    # environment before anything starts: a re-exec with a clean one (its /proc environ
    # block holds none), their values on an inherited fd; no child the keeper starts
    # inherits them either.
    exec_without_keys()
    seal_environment()
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
    _setup_logging(paths)
    for line in MOVED_ASIDE:
        log.warning(line)
    _private_tmp(paths)
    try:
        anyio.run(_run, sock, paths)
    except Exception:
        log.exception("keeper crashed")
        raise
    finally:
        lock.close()


if __name__ == "__main__":
    main()
