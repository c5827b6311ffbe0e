"""``bay``'s warm road: the argv, as it is, to a running keeper on the owner's channel,
which parses it with its own verb table, runs it and answers the text to print
(:mod:`browserbay.keeper.argvroad`). This module is all a warm verb's process imports of
ours beyond the protocol and the socket path — no verb table, parser, refusals or renderer
(~2 ms of CPU of a warm command's ~14, bench/RESULTS-perf.md); cli/tests/test_cli.py
holds it.

Anything else is the whole client's (:mod:`browserbay_cli.main`), run as before in this
process, with nothing run yet: no keeper listening (it starts one), one of another version
(it replaces it), a session socket (``BAY_SOCKET``), a socket not to be trusted (it says
why), an argv that is no text, and whatever the keeper answers ``whole`` (a usage mistake,
help, files, secrets, stdin, the client's own verbs). Standard library only.
"""

from __future__ import annotations

import os
import sys
import time
from _socket import AF_UNIX, SOCK_STREAM, SOL_SOCKET, socket

from browserbay import protocol
from browserbay.sockpath import distrust, session_socket, socket_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _trusted(path: str) -> socket | None:
    """A socket to the keeper at ``path`` when every check the whole client makes passes
    (``browserbay.client._connect``: the directory this user's own, 0700, no symlink; the
    socket file this user's; its listener running as this user); else None, and the whole
    client makes them again and says what failed."""
    try:
        if distrust(os.path.dirname(path), directory=True) or distrust(path, directory=False):
            return None
    except OSError:
        return None
    s = socket(AF_UNIX, SOCK_STREAM)
    try:
        s.connect(path)
        if sys.platform == "linux":
            from _socket import SO_PEERCRED

            raw = s.getsockopt(SOL_SOCKET, SO_PEERCRED, 12)  # struct ucred: pid, uid, gid
            if int.from_bytes(raw[4:8], sys.byteorder) != os.getuid():
                s.close()
                return None
    except OSError:
        s.close()
        return None
    return s


def _deadline(argv: list[str]) -> float | None:
    """The seconds to wait for the answer: ``--timeout``'s (as the parser reads it), else
    the default, plus the margin the whole client gives the answer's trip; None when the
    value is no number or out of the parser's range, (0, 3600] — ``1e400`` is infinite, and
    a socket timeout that far off overflows (the whole client refuses it as ``usage``)."""
    value: str | None = None
    for n, word in enumerate(argv):
        if word == "--":
            break
        if word == "--timeout" and n + 1 < len(argv):
            value = argv[n + 1]
        elif word.startswith("--timeout="):
            value = word.partition("=")[2]
    try:
        seconds = float(value) if value is not None else protocol.DEFAULT_TIMEOUT
    except ValueError:
        return None
    if not 0 < seconds <= protocol.MAX_TIMEOUT:  # NaN too
        return None
    return seconds + 5.0


def _warm(argv: list[str]) -> dict[str, Any] | None:
    """The keeper's answer to the argv frame (``printed`` or ``answer``), or None when the
    whole client must run the command (nothing has run)."""
    if session_socket() is not None:
        return None
    try:
        "\0".join(argv).encode("utf-8")
    except UnicodeEncodeError:
        return None
    wait = _deadline(argv)
    if wait is None:
        return None
    sock = _trusted(socket_path())
    if sock is None:
        return None
    env = {k: os.environ[k] for k in protocol.ARGV_FACTS if k in os.environ}
    frame = {"id": "1", "argv": argv, "facts": {"env": env, "sid": os.getsid(0)}, "progress": True}
    end = time.monotonic() + wait
    try:
        sock.settimeout(10.0)
        sock.sendall(protocol.encode(protocol.hello("client")) + protocol.encode(frame))
        return _answer(sock, b"", None, end, wait)
    except OSError:  # no hello yet: nothing ran
        return None
    finally:
        sock.close()


def _answer(
    sock: socket, buf: bytes, hello: dict[str, Any] | None, end: float, wait: float
) -> dict[str, Any] | None:
    """The keeper's lines, ``buf`` first, then what ``sock`` brings: the hello (``hello``
    None: not read yet), progress written to stderr, then the answer as :func:`_warm`
    answers it — until ``end`` (monotonic), then the deadline of ``wait`` seconds."""
    try:
        while True:
            while b"\n" not in buf:
                sock.settimeout(max(end - time.monotonic(), 0.001) if hello is not None else 10.0)
                chunk = sock.recv(1 << 20)
                if not chunk:
                    return None if hello is None else _cut_off()
                buf += chunk
                if len(buf) > protocol.MAX_ANSWER:
                    return _cut_off()
            line, buf = buf.split(b"\n", 1)
            said = protocol.decode(line)
            if hello is None:
                hello = said.get("hello", {})
                if not protocol.compatible(hello):
                    return None  # another version: it ran nothing; the client replaces it
                continue
            if "progress" in said and "ok" not in said and said.get("id") == "1":
                sys.stderr.write(f"{said['progress']}\n")
                sys.stderr.flush()
                continue
            if "printed" in said or "answer" in said:
                return said
            return None  # "whole", or a keeper that does not know the road: nothing ran
    except TimeoutError:
        if hello is None:
            return None
        return {"deadline": wait - 5.0}
    except (OSError, ValueError):
        return None if hello is None else _cut_off()


def _cut_off() -> dict[str, Any]:
    """The keeper went away after it had the request: it may have run, so it is not sent
    again — said as the whole client says it."""
    return {"cut_off": True}


#: How a native ``bay`` client (issue 19) hands a command over to this one, read and removed
#: from the environment before anything else (no child inherits it): ``whole`` (the keeper
#: answered that the whole client runs it, or is of another version: nothing ran),
#: ``deadline`` or ``cut_off`` (the keeper had the request: it is never sent again),
#: ``said:FD`` (the keeper's answer frame, one line, in the inherited file FD, never in argv),
#: or ``rest:FD:SOCK:MS`` (a line after the hello the native reader could not judge — a
#: progress line with a NaN, one str() prints its own way, or the answer — and what it had
#: read after it, in FD; then the keeper's socket itself, SOCK, with MS milliseconds left:
#: this client reads the rest as :func:`_warm` would have).
HANDED = "BAY_HANDED"


def _read_fd(fd: int) -> bytes | None:
    """The bytes in the inherited file ``fd`` (closed then), None past MAX_ANSWER."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        data = b""
        while len(data) <= protocol.MAX_ANSWER:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    return None if len(data) > protocol.MAX_ANSWER else data


def _rest(words: str, argv: list[str]) -> dict[str, Any] | None:
    """``rest:FD:SOCK:MS``: the keeper's lines in FD, then the rest from SOCK (a socket to
    a listener of this user's, checked again), as :func:`_warm` reads them after the hello."""
    fd, sock_fd, ms = (int(w) for w in words.split(":"))
    try:
        data = _read_fd(fd)
        sock = socket(fileno=sock_fd)
    except (OSError, ValueError):
        return _cut_off()  # the process ends soon after: SOCK with it
    try:
        if sys.platform == "linux":
            from _socket import SO_PEERCRED

            raw = sock.getsockopt(SOL_SOCKET, SO_PEERCRED, 12)
            if int.from_bytes(raw[4:8], sys.byteorder) != os.getuid():
                return _cut_off()
        if data is None:
            return _cut_off()
        wait = _deadline(argv) or protocol.DEFAULT_TIMEOUT + 5.0
        return _answer(sock, data, {}, time.monotonic() + max(ms, 0) / 1000, wait)
    except OSError:
        return _cut_off()
    finally:
        sock.close()


def _handed(argv: list[str]) -> dict[str, Any] | str | None:
    """What the native client handed over: ``"whole"``, the keeper's frame (as
    :func:`_warm` answers it), or None (it handed nothing: the warm road as usual)."""
    how = os.environ.pop(HANDED, "")
    if how == "whole":
        return how
    if how == "deadline":
        return {"deadline": (_deadline(argv) or protocol.DEFAULT_TIMEOUT + 5.0) - 5.0}
    if how.startswith("said:"):
        try:
            data = _read_fd(int(how[5:]))
            if data is None:
                return _cut_off()
            return protocol.decode(data.rstrip(b"\n"))
        except (OSError, ValueError):
            return _cut_off()  # it ran: said as a keeper that went away, never sent again
    if how.startswith("rest:"):
        try:
            rest = _rest(how[5:], argv)
        except ValueError:  # not its three numbers
            return _cut_off()
        return "whole" if rest is None else rest  # the keeper said "whole": nothing ran
    if how:
        return _cut_off()  # "cut_off" (or a word of a newer client): it may have run
    return None


def run(argv: list[str]) -> int | None:
    """The exit code of the command run on the warm road; None: the whole client runs it."""
    handed = _handed(argv)
    if handed == "whole":
        return None
    said = handed if isinstance(handed, dict) else _warm(argv)
    if said is None:
        return None
    printed = said.get("printed")
    if isinstance(printed, dict):
        # All of stdout, then all of stderr: one order on a pipe and on a terminal, whatever
        # their buffers (the native client writes them so, cli/tests/test_native.py).
        sys.stdout.write(str(printed.get("out", "")))
        sys.stdout.flush()
        sys.stderr.write(str(printed.get("err", "")))
        return int(printed.get("code", 1))
    from browserbay_cli import main  # a long answer, a deadline, a keeper gone: rare

    return main.warm_said(said, argv)


def main() -> None:
    try:
        code = run(sys.argv[1:])
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:
        code = 1
    if code is None:
        from browserbay_cli.main import main as whole

        whole()
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        code = 1
    os._exit(code)  # nothing is left to finish (see browserbay_cli.main.main)
