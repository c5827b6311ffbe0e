"""The thin client: talk to the keeper over its unix socket, starting it when needed.

Two channels reach a keeper. The home's own socket is the owner's: a keeper that is not
running is started there, one of another version replaced. A session socket (``BAY_SOCKET``,
made by the owner's ``bay session grant``) is an agent's: through it no keeper is ever
started, stopped or replaced (:func:`connect_session`), and the session is the one its hello
names unless the caller names another (the keeper refuses that one ``session_fixed``).

Standard library only, and only cheap modules on the hot path (no typing, dataclasses,
argparse or subprocess unless the keeper has to be spawned; ``_socket``, not ``socket``, which
imports ``enum`` and ``selectors``; no ``json``, see :func:`browserbay.protocol.loads`): a warm
command costs one Python start plus one socket round trip.
"""

from __future__ import annotations

import os
import sys
import time
from _socket import AF_UNIX, SOCK_STREAM, SOL_SOCKET, socket

from browserbay import identity, protocol, sockpath
from browserbay.refusals import Refusal, printable
from browserbay.sockpath import distrust, socket_path
from browserbay.verbs import PAGE

if sys.platform == "linux":
    from _socket import SO_PEERCRED

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from browserbay.paths import BayPaths
    from browserbay.verbs import Verb

SPAWN_WAIT = 20.0  # seconds a new keeper has to bind its socket


class Connection:
    """One socket to the keeper, with the hello exchanged. ``session_socket``: its path when
    it is a session socket (None: the home's own socket)."""

    def __init__(self, sock: socket, session_socket: str | None = None):
        self.sock = sock
        self.buf = b""
        self.keeper: dict[str, Any] = {}
        self.session_socket = session_socket
        self._n = 0

    @property
    def fixed(self) -> str | None:
        """The session this connection is bound to, as the keeper's hello says (a session
        socket's); None on the owner's channel."""
        return identity.fixed_by(self.keeper)

    def send(self, frame: dict[str, Any]) -> None:
        self.sock.sendall(protocol.encode(frame))

    def read(self, deadline: float | None) -> dict[str, Any]:
        while b"\n" not in self.buf:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                self.sock.settimeout(left)
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("the keeper closed the connection")
            self.buf += chunk
            if len(self.buf) > protocol.MAX_ANSWER:
                raise ConnectionError("the keeper's answer exceeds the answer limit")
        line, self.buf = self.buf.split(b"\n", 1)
        return protocol.decode(line)

    def frame(
        self,
        verb: str,
        args: dict[str, Any],
        session: dict[str, str],
        timeout: float,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A verb's request frame, with the next id on this connection."""
        self._n += 1
        frame: dict[str, Any] = {"id": str(self._n), "verb": verb, "args": args}
        frame["session"] = session
        frame["timeout"] = timeout
        frame["progress"] = True  # lines said while the verb runs (a link for a human)
        if extra:
            frame.update(extra)
        return frame

    def request(
        self,
        verb: str,
        args: dict[str, Any],
        session: dict[str, str],
        timeout: float,
        extra: dict[str, Any] | None = None,
        row: Verb | None = None,
    ) -> dict[str, Any]:
        """One verb. ``extra`` adds frame fields: ``profile`` (a handle), ``group``, and
        ``actor`` (who is asking, when it is not ``session`` itself). ``row``: the verb's row,
        when its files move through the connection (:mod:`browserbay.transfer`): the client
        reads and writes them, never the keeper."""
        frame = self.frame(verb, args, session, timeout, extra)
        if row is not None and row.moves_files:  # its files' bytes go with it, both ways
            from browserbay import transfer  # base64 and contextlib: only the verbs with files

            return transfer.drive(transfer.carry(row, frame), self.exchange)
        return self.exchange(frame)

    def exchange(self, frame: dict[str, Any]) -> dict[str, Any]:
        """Send one frame (a verb's, or a file's ``put``/``get``) and read its answer; a
        verb's progress lines go to stderr meanwhile."""
        self.send(frame)
        return self.answer(frame)

    def answer(self, frame: dict[str, Any]) -> dict[str, Any]:
        """The answer to ``frame``, sent already; its progress lines go to stderr."""
        rid, timeout = frame.get("id"), float(frame.get("timeout") or 30.0)
        # The keeper enforces the deadline itself; the margin covers the answer's trip.
        try:
            while True:
                answer = self.read(time.monotonic() + timeout + 5.0)
                if "progress" in answer and answer.get("id") == rid and "ok" not in answer:
                    sys.stderr.write(printable(f"{answer['progress']}") + "\n")
                    sys.stderr.flush()
                    continue
                if answer.get("id") != rid and "id" in answer:
                    raise ConnectionError("the keeper answered another frame than the one sent")
                return answer
        except TimeoutError:
            verb = str(frame.get("verb") or frame.get("op"))
            raise Refusal("deadline", verb=verb, timeout=timeout, longer=timeout * 2) from None

    def close(self) -> None:
        self.sock.close()


def _connect(path: str) -> socket | None:
    """A socket to the keeper at ``path``, or None when none listens there. Nothing is sent
    to a socket another user could control (``socket_untrusted``): its directory must be
    this user's own, 0700 and no symlink, the socket file this user's, and the process
    listening on it running as this user (``SO_PEERCRED``)."""
    _trust_path(path)
    s = socket(AF_UNIX, SOCK_STREAM)
    try:
        s.connect(path)
    except (FileNotFoundError, ConnectionRefusedError):
        s.close()
        return None
    try:
        _trust_peer(s, path)
    except Refusal:
        s.close()
        raise
    return s


def _trust_path(path: str) -> None:
    directory = os.path.dirname(path)
    try:
        why = distrust(directory, directory=True, mode=False)
        loose = None if why else distrust(directory, directory=True)
        if loose:  # ours, but others can reach into it
            fix = f"chmod 700 {directory}   (or set BAY_HOME to a private directory of yours)"
            raise Refusal("socket_untrusted", socket=path, reason=loose, fix=fix)
        why = why or distrust(path, directory=False)
    except FileNotFoundError:
        return  # no keeper yet: the one we start creates it private, or refuses to
    if why is not None:
        fix = (
            f"remove {directory} (another user may have planted it: as its owner, or root), "
            "or set BAY_HOME to a private directory of yours (or XDG_RUNTIME_DIR to your own "
            "runtime directory)"
        )
        raise Refusal("socket_untrusted", socket=path, reason=why, fix=fix)


def _trust_peer(sock: socket, path: str) -> None:
    if sys.platform != "linux":  # pragma: no cover - macOS: the directory and file checks only
        return
    raw = sock.getsockopt(SOL_SOCKET, SO_PEERCRED, 12)  # struct ucred: pid, uid, gid
    uid = int.from_bytes(raw[4:8], sys.byteorder)
    if uid != os.getuid():
        raise Refusal(
            "socket_untrusted",
            socket=path,
            reason=f"the peer listening on it runs as uid {uid}, not as you (uid {os.getuid()})",
            fix=f"find who listens on {path} (ss -xlp), remove it, or set BAY_HOME to a private "
            "directory of yours",
        )


#: The way out of a session socket that cannot serve: only the owner can grant another.
ASK_OWNER = (
    "ask the human who runs the keeper to grant you a session socket again: bay session grant "
    "<id> --socket <path>   (on the owner's channel), then set BAY_SOCKET to that path"
)


def connect_session(path: str) -> Connection:
    """The session socket at ``path``, hello exchanged. Through it no keeper is ever started,
    stopped or replaced — the owner's channel is the only one that does that: a socket that
    is gone (revoked, expired, or its keeper down) is refused ``session_socket_gone``, a
    keeper of another version ``keeper_unavailable`` naming both versions. Trusted as
    :func:`_trust_session` says before a byte is sent."""
    _trust_session(path)
    s = socket(AF_UNIX, SOCK_STREAM)
    try:
        s.connect(path)
    except (FileNotFoundError, NotADirectoryError):
        s.close()
        raise Refusal("session_socket_gone", socket=path, reason="it is not there") from None
    except ConnectionRefusedError:
        s.close()
        reason = "nobody listens on it"
        raise Refusal("session_socket_gone", socket=path, reason=reason) from None
    except OSError as exc:
        s.close()
        reason = f"cannot connect to the session socket {path}: {exc.strerror or exc}"
        raise Refusal("keeper_unavailable", reason=reason, way_out=ASK_OWNER) from None
    try:
        _trust_peer(s, path)
        conn = _handshake(s, path)
    except Refusal:
        s.close()
        raise
    except (ConnectionError, ValueError):
        # Closed before its hello: revoked as we connected, or its keeper on its way out.
        s.close()
        reason = "it closed the connection before its hello"
        raise Refusal("session_socket_gone", socket=path, reason=reason) from None
    except (OSError, TimeoutError) as exc:
        s.close()
        reason = f"no hello on the session socket {path} ({exc or type(exc).__name__})"
        raise Refusal("keeper_unavailable", reason=reason, way_out=ASK_OWNER) from None
    if not protocol.compatible(conn.keeper):
        conn.close()
        theirs = f"{conn.keeper.get('version')} (protocol {conn.keeper.get('protocol')})"
        ours = protocol.hello("client")["hello"]
        reason = (
            f"the keeper on the session socket {path} is version {theirs}, this client "
            f"{ours['version']} (protocol {ours['protocol']}); a session socket never replaces "
            "its keeper, so nothing was sent"
        )
        way_out = (
            "ask the human to restart the keeper with this version (bay keeper stop on the "
            f"owner's channel), or run a bay of version {conn.keeper.get('version')}"
        )
        raise Refusal("keeper_unavailable", reason=reason, way_out=way_out)
    return conn


def _trust_session(path: str) -> None:
    """A session socket's checks: the socket file is not a symlink and is this user's
    (``lstat``), and its listener runs as this user (:func:`_trust_peer`, after connecting).
    Its directory is not held to the home's rule (this user's, mode 0700), on purpose: the
    owner chose it at ``bay session grant`` (where the keeper refuses a directory the owner
    does not own), and inside a sandbox the agent sees only what the harness mounted the
    socket into — a tmpfs, or a directory whose owner reads as the overflow uid in a user
    namespace. Whoever else can write in that directory still cannot make a socket file
    that is this user's, nor listen as this user: a socket swapped in there is refused
    ``socket_untrusted`` before a byte is sent."""
    try:
        why = distrust(path, directory=False)
    except (FileNotFoundError, NotADirectoryError):
        raise Refusal("session_socket_gone", socket=path, reason="it is not there") from None
    if why is not None:
        fix = (
            f"do not use {path}: find who made it (ls -l {path}; ss -xlp | grep {path}), and "
            + ASK_OWNER
        )
        raise Refusal("socket_untrusted", socket=path, reason=why, fix=fix)


def _handshake(sock: socket, session_socket: str | None = None) -> Connection:
    conn = Connection(sock, session_socket)
    conn.send(protocol.hello("client"))
    reply = conn.read(time.monotonic() + 10.0)
    conn.keeper = reply.get("hello", {})
    return conn


def connect(
    paths: BayPaths | None = None,
    *,
    autostart: bool | None = None,
    keeper_args: tuple[str, ...] = (),
    session_socket: str | None = None,
    warm: bool = False,
) -> Connection:
    """Connect to a keeper of this version, starting (or replacing) it when needed — on the
    owner's channel only; ``keeper_args``: the argv a keeper started now gets (``bay keeper
    start --set``); ``warm``: a keeper started now begins with the browser's chain (the
    caller has a page verb to send: see ``browserbay.keeper.daemon._run``).
    ``session_socket`` (else ``BAY_SOCKET``, when no ``paths`` name a home) connects to a
    session socket instead, which never starts or replaces a keeper (:func:`connect_session`);
    ``autostart``, ``keeper_args`` and ``warm`` do not apply there."""
    if session_socket is None and paths is None:
        session_socket = sockpath.session_socket()
    if session_socket is not None:
        return connect_session(session_socket)
    if autostart is None:
        autostart = os.environ.get("BAY_NO_AUTOSTART", "") in ("", "0")
    path = str(paths.socket) if paths is not None else socket_path()
    sock = _connect(path)
    if sock is not None:
        try:
            conn = _handshake(sock)
        except (ConnectionError, ValueError) as exc:
            # A keeper that died as we connected (killed, or on its way out): its socket
            # is stale now. Start the next one, like with no socket at all.
            sock.close()
            if not autostart:
                raise Refusal(
                    "keeper_unavailable", reason=f"no hello from the keeper ({exc})"
                ) from None
            time.sleep(0.2)
            conn = None
        except (OSError, TimeoutError) as exc:
            sock.close()
            raise Refusal(
                "keeper_unavailable", reason=f"no hello from the keeper ({exc})"
            ) from None
        if conn is not None:
            if protocol.compatible(conn.keeper):
                return conn
            _retire(conn, path)
    if not autostart:
        raise Refusal(
            "keeper_unavailable",
            reason=f"no keeper is listening on {path} and BAY_NO_AUTOSTART is set",
            way_out="bay keeper start   (or unset BAY_NO_AUTOSTART)",
        )
    if paths is None:
        from browserbay.paths import bay_paths

        paths = bay_paths()
    return _spawn_and_connect(paths, (protocol.KEEPER_WARM, *keeper_args) if warm else keeper_args)


def _retire(conn: Connection, path: str) -> None:
    """Ask a keeper of another version to exit, and wait until its socket is gone."""
    try:
        conn.send({"id": "retire", "op": "shutdown", "reason": "version"})
        conn.read(time.monotonic() + 15.0)
    except (OSError, ValueError, TimeoutError):
        pass
    conn.close()
    end = time.monotonic() + 15.0
    while time.monotonic() < end:
        s = _connect(path)
        if s is None:
            return
        s.close()
        time.sleep(0.05)


def _spawn_and_connect(paths: BayPaths, keeper_args: tuple[str, ...] = ()) -> Connection:
    import fcntl
    import subprocess

    paths.ensure()
    with open(paths.spawn_lock, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        # Somebody else may have started it while we waited for the lock.
        sock = _connect(str(paths.socket))
        if sock is None:
            env = dict(os.environ)
            if paths.home is not None:  # the keeper must serve the home we were given
                env["BAY_HOME"] = str(paths.home)
            with open(paths.keeper_log, "ab") as log:
                os.chmod(paths.keeper_log, 0o600)
                proc = subprocess.Popen(
                    [sys.executable, "-m", "browserbay.keeper", *keeper_args],
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    start_new_session=True,
                    close_fds=True,
                )
            end = time.monotonic() + SPAWN_WAIT
            while sock is None:
                sock = _connect(str(paths.socket))
                if sock is not None:
                    break
                if proc.poll() is not None:
                    raise Refusal(
                        "keeper_unavailable",
                        reason=f"the keeper exited at start (code {proc.returncode}): "
                        + log_tail(paths, 3),
                    )
                if time.monotonic() > end:
                    raise Refusal(
                        "keeper_unavailable",
                        reason=f"the keeper did not listen within {SPAWN_WAIT:g}s",
                    )
                time.sleep(0.005)
    try:
        conn = _handshake(sock)
    except (OSError, ValueError, TimeoutError) as exc:
        sock.close()
        time.sleep(0.2)  # let a keeper that is dying finish its log
        raise Refusal(
            "keeper_unavailable",
            reason=f"no hello from the new keeper ({exc}); its log says: " + log_cause(paths),
        ) from None
    return conn


def log_cause(paths: BayPaths) -> str:
    """Why a keeper that just exited did: its last ERROR (or CRITICAL) line among the log's
    last 40 — what follows it (children being stopped) would push the cause out of a clipped
    refusal — else the last two lines."""
    tail = log_tail(paths).splitlines()
    for line in reversed(tail):
        for level in (" ERROR ", " CRITICAL "):
            at = line.find(level)
            if at >= 0:  # the message, without its time, level and logger (the refusal is clipped)
                name_end = line.find(": ", at)
                return line[name_end + 2 :] if name_end >= 0 else line
    return "\n".join(tail[-2:])


def log_tail(paths: BayPaths, lines: int = 40) -> str:
    try:
        with open(paths.keeper_log, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            text = f.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _pipelined(
    paths: BayPaths | None,
    verb: str,
    args: dict[str, Any],
    session: dict[str, str],
    timeout: float,
    extra: dict[str, Any],
) -> dict[str, Any] | None:
    """One verb on the owner's channel with the hello and the request in one write: one
    round trip to the keeper instead of two (~0.3 ms of a warm command). None when no keeper
    of this version answered it — none listens, it closed before its hello, or it is of
    another version (then retired: it ran nothing after the hello, see
    ``browserbay.keeper.daemon._other_version``) — and :func:`connect`'s road takes over
    (start, replace, then send). The owner's channel binds no session, so the request needs
    nothing from the keeper's hello; a session socket's does, and files take several
    frames: both go the other road."""
    path = str(paths.socket) if paths is not None else socket_path()
    sock = _connect(path)
    if sock is None:
        return None
    conn = Connection(sock)
    try:
        frame = conn.frame(verb, args, session, timeout, extra)
        sock.sendall(protocol.encode(protocol.hello("client")) + protocol.encode(frame))
        try:
            conn.keeper = conn.read(time.monotonic() + 10.0).get("hello", {})
        except (ConnectionError, ValueError):
            return None  # on its way out before its hello: it read nothing we sent
        except (OSError, TimeoutError) as exc:
            raise Refusal(
                "keeper_unavailable", reason=f"no hello from the keeper ({exc})"
            ) from None
        if not protocol.compatible(conn.keeper):
            import contextlib  # a keeper to replace: off the hot path

            with contextlib.suppress(OSError, ValueError, Refusal):
                conn.answer(frame)  # its refusal of the request: it ran nothing
            _retire(conn, path)
            return None
        return conn.answer(frame)
    finally:
        conn.close()


def call(
    verb: str,
    args: dict[str, Any] | None = None,
    *,
    session: dict[str, str] | None = None,
    named: str | None = None,
    profile: str | None = None,
    timeout: float = 30.0,
    paths: BayPaths | None = None,
    extra: dict[str, Any] | None = None,
    row: Verb | None = None,
) -> dict[str, Any]:
    """One verb, one answer frame (``ok`` true or a refusal frame). Never raises a refusal:
    a keeper that cannot be reached is answered as a ``keeper_unavailable`` frame (on a
    session socket, ``session_socket_gone``).

    ``session`` is sent as given; else the caller's identity is resolved once the hello says
    whether the socket fixes one: ``named`` (``--session``), else ``BAY_SESSION``, else the
    session socket's session, else the shell's. ``extra`` adds frame fields to
    :func:`browserbay.identity.context`'s (``profile``: ``--profile``); ``row``: the verb's
    row, to carry its files (:meth:`Connection.request`)."""
    target = sockpath.session_socket() if paths is None else None
    warm = row is not None and row.scope == PAGE
    try:
        if target is None and not (row is not None and row.moves_files):
            fields = {**identity.context(profile, named), **(extra or {})}
            answer = _pipelined(
                paths, verb, args or {}, session or identity.resolve(named), timeout, fields
            )
            if answer is not None:
                return answer
        try:
            conn = connect(paths, session_socket=target, warm=warm)
        except Refusal as r:
            if r.code != "keeper_unavailable" or target is not None:
                raise
            # The keeper may have been on its way out as we connected: one more try.
            time.sleep(0.1)
            conn = connect(paths, warm=warm)
        try:
            me = session or identity.resolve(named, fixed=conn.fixed)
            fields = {**identity.context(profile, named, fixed=conn.fixed), **(extra or {})}
            return conn.request(verb, args or {}, me, timeout, fields, row)
        finally:
            conn.close()
    except Refusal as r:
        return r.frame()
    except (OSError, ValueError) as exc:
        return Refusal("keeper_unavailable", reason=str(exc) or type(exc).__name__).frame()
