"""The hostile agent's channel: how an attacker session reaches the keeper in a campaign.

Two modes (issue 17):

- **owner**: the agent shares the owner's channel — the home's own socket, its whole
  environment (``BAY_HOME``), and it names its session in every frame. On a single-user
  machine this channel is the owner's: what an agent does there, the owner could have done.
- **session**: the harness (the owner) runs ``bay session grant <id> --socket <path>`` and
  the agent gets only ``BAY_SOCKET=<path>``: its frames go to that socket, its ``bay``
  processes run with no ``BAY_HOME``, no ``BAY_SESSION`` and a ``HOME`` of their own (a
  keeper such a client started anyway would live there, where :func:`stray_keepers` finds it).

An :class:`Agent` never raises for a refusal: every call answers a frame, as the client does.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from browserbay import procfs, protocol
from browserbay.client import Connection
from campaigns.common import BAY, Home

OWNER, SESSION = "owner", "session"
MODES = (OWNER, SESSION)


class RawConnection:
    """One connection to a keeper socket, the hello exchanged, frames as given: what an agent
    that writes its own frames sends (another session's id, an ``actor`` of its choosing,
    an ``op``). Frames are read by the client's own :class:`browserbay.client.Connection`
    (the answer bound, partial lines), not by a reader of the campaign's."""

    def __init__(self, path: Path, timeout: float = 10.0):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        self.conn = Connection(sock)
        self.sock = sock
        self.n = 0
        try:
            sock.connect(str(path))
            self.conn.send(protocol.hello("client"))
            self.hello: dict[str, Any] = self.conn.read(time.monotonic() + timeout).get("hello", {})
        except BaseException:
            self.conn.close()
            raise

    def send(self, frame: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
        """One frame (its ``id`` set when it has none), its answer (progress lines skipped)."""
        self.n += 1
        self.conn.send({"id": f"r{self.n}", **frame})
        deadline = time.monotonic() + timeout + 5
        while True:
            answer = self.conn.read(deadline)
            if "progress" in answer and "ok" not in answer:
                continue
            return answer

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.close()


def _failed(exc: BaseException) -> dict[str, Any]:
    """What an agent got when the socket gave no answer: not a keeper's refusal."""
    return {"ok": False, "code": f"no-answer:{type(exc).__name__}", "message": str(exc)[:200]}


@dataclass
class Agent:
    """An attacker session on its channel. ``socket`` None: the owner's channel."""

    home: Home
    session: str
    socket: Path | None = None
    env_home: Path | None = None
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def mode(self) -> str:
        return OWNER if self.socket is None else SESSION

    @property
    def path(self) -> Path:
        """The socket the agent's frames go to."""
        return self.socket if self.socket is not None else self.home.paths.socket

    def frame(
        self, verb: str, args: dict[str, Any], *, as_session: str | None = None, **extra: Any
    ) -> dict[str, Any]:
        """A request frame as the agent would write it: its own session unless it claims
        ``as_session``; ``extra`` adds top-level fields (``actor``, ``profile``, …)."""
        return {
            "verb": verb,
            "args": args,
            "session": {"id": as_session or self.session, "origin": "api"},
            "timeout": 30,
            **extra,
        }

    def send(self, frame: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
        """One raw frame on a new connection (what the CLI does: a connection per verb)."""
        try:
            conn = RawConnection(self.path)
        except (OSError, ValueError, TimeoutError) as exc:
            return _failed(exc)
        try:
            return conn.send(frame, timeout)
        except (OSError, ValueError, TimeoutError) as exc:
            return _failed(exc)
        finally:
            conn.close()

    def call(self, verb: str, timeout: float = 30.0, **args: Any) -> dict[str, Any]:
        """One verb as this agent's own session."""
        frame = self.frame(verb, args)
        frame["timeout"] = timeout
        return self.send(frame, timeout)

    def ok(self, verb: str, timeout: float = 30.0, **args: Any) -> dict[str, Any]:
        frame = self.call(verb, timeout, **args)
        if not frame.get("ok"):
            raise RuntimeError(f"{self.session}: {verb} {args} was refused: {frame}")
        data = frame["data"]
        assert isinstance(data, dict)
        return data

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of the agent's ``bay`` processes."""
        if self.socket is None:  # this home's (another Home may have set BAY_HOME since)
            env = {**os.environ, "BAY_HOME": str(self.home.root), "BAY_SESSION": self.session}
            return {**env, **self.extra_env, **extra}
        keep = ("PATH", "LANG", "LC_ALL", "TERM", "TMPDIR")
        env = {k: v for k, v in os.environ.items() if k in keep}
        env["HOME"] = str(self.env_home or self.home.root / "agent-home")
        env["BAY_SOCKET"] = str(self.socket)
        return {**env, **self.extra_env, **extra}

    def bay(
        self, *argv: str, stdin: str | None = None, timeout: float = 120, **env: str
    ) -> subprocess.CompletedProcess[str]:
        """The real ``bay`` with the agent's environment (``env`` added to it)."""
        environment = self.env(**env)
        Path(environment["HOME"]).mkdir(parents=True, exist_ok=True)
        try:
            return subprocess.run(
                [BAY, *argv],
                capture_output=True,
                text=True,
                env=environment,
                input=stdin,
                stdin=None if stdin is not None else subprocess.DEVNULL,
                timeout=timeout,
                check=False,
                cwd=environment["HOME"],
            )
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout if isinstance(exc.stdout, str) else ""
            return subprocess.CompletedProcess([BAY, *argv], 124, out, "timeout")


def cli_frame(p: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The JSON frame a ``bay … --json`` printed last, or a stand-in saying it printed none."""
    with contextlib.suppress(Exception):
        frame = json.loads(p.stdout.strip().splitlines()[-1])
        if isinstance(frame, dict):
            return frame
    return {"ok": p.returncode == 0, "code": f"exit {p.returncode}", "data": {}}


# -- grants (the owner's side) ---------------------------------------------------------------


class GrantError(Exception):
    pass


def grant(
    h: Home, session: str, *, profiles: tuple[str, ...] = (), ttl: float | None = None
) -> Path:
    """As the owner: ``bay session grant <session> --socket <path>`` (a private directory of
    the home's); the socket's path."""
    directory = h.root / "s"
    directory.mkdir(mode=0o700, exist_ok=True)
    path = directory / f"{session}.sock"
    argv = ["session", "grant", session, "--socket", str(path), "--json"]
    for p in profiles:
        argv += ["--profile", p]
    if ttl is not None:
        argv += ["--ttl", f"{ttl:g}"]
    p = h.bay(*argv, session="boss")
    frame = cli_frame(p)
    if not frame.get("ok"):
        raise GrantError(
            f"bay session grant {session}: {p.stdout.strip()[-300:]} {p.stderr[-300:]}"
        )
    return path


def revoke(h: Home, session: str) -> dict[str, Any]:
    """As the owner: ``bay session revoke <session>``."""
    return cli_frame(h.bay("session", "revoke", session, "--json", session="boss"))


def answers(path: Path) -> bool:
    """A keeper answers a hello on ``path``."""
    try:
        RawConnection(path, timeout=3).close()
    except (OSError, ValueError, TimeoutError):
        return False
    return True


def stray_keepers(h: Home) -> list[int]:
    """Keepers not serving the campaign's home whose environment says an agent of this home
    started them (their HOME is the agents' own, under the home's root)."""
    root = str(h.root) + "/"
    out = []
    for pid in procfs.pids():
        if "browserbay.keeper" not in procfs.argv(pid) or not procfs.alive(pid):
            continue
        env = procfs.environ(pid)
        if env.get("BAY_HOME") != str(h.root) and env.get("HOME", "").startswith(root):
            out.append(pid)
    return out
