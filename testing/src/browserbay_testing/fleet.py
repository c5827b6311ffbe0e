"""A fleet of real keepers for the tests (issue 22): N keepers on this machine, each with its
own ``BAY_HOME`` (its socket, state and keeper id), all on one fresh PostgreSQL schema of the
session's server, with a short ``BAY_FLEET_TTL`` so a death is seen in seconds.

``with keeper_fleet(postgres, tmp_path, 2) as fleet:`` gives :class:`Fleet` whose members
are :class:`Member` (a :class:`~browserbay_testing.bay.Bay` with a name: ``a``, ``b``, …);
every keeper still running at the end is stopped, one killed with :meth:`Member.kill` is
waited for. The schema is dropped after (a fleet's rows never leak into another test).
Other helpers of the fleet's tests extend this module (the link's secret and addresses,
the holds' waits): pass their variables in ``env`` or per member in ``member_env``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import ssl
import string
import threading
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import psycopg

from browserbay_testing.bay import Bay, wait_for, wait_for_no_keeper
from browserbay_testing.postgres import PgServer

#: Seconds after which a silent keeper is dead in a test fleet (it beats every sixth).
TEST_TTL = 3.0


class Member(Bay):
    """One keeper of the fleet: the real CLI against its own home."""

    def __init__(self, name: str, home: Path, **env: str):
        super().__init__(home, **env)
        self.name = name

    def start(self) -> int:
        """Start its keeper (``bay keeper start``) and answer its pid."""
        return self.keeper_pid()

    def keeper_id(self) -> str:
        """Its keeper id (made by its first start)."""
        return (self.home / "state" / "keeper-id").read_text().strip()

    def kill(self) -> None:
        """``kill -9`` of its keeper (a real death: no stop is recorded, its claims expire
        only after the TTL); waits until the process is gone."""
        pid = self.keeper_pid()
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not _alive(pid), timeout=30)
        wait_for_no_keeper(self.home)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


@dataclass
class Fleet:
    """The members and the registry they share."""

    url: str
    members: list[Member]
    ttl: float
    by_name: dict[str, Member] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_name = {m.name: m for m in self.members}

    def __getitem__(self, name: str) -> Member:
        return self.by_name[name]

    def __iter__(self) -> Iterator[Member]:
        return iter(self.members)

    def rows(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        """Read the shared registry directly (what the keepers wrote)."""
        with psycopg.connect(self.url, autocommit=True) as conn:
            return [tuple(r) for r in conn.execute(sql, params).fetchall()]


@contextlib.contextmanager
def keeper_fleet(
    postgres: PgServer,
    root: Path,
    n: int = 2,
    *,
    ttl: float = TEST_TTL,
    env: Mapping[str, str] | None = None,
    member_env: Mapping[str, Mapping[str, str]] | None = None,
    start: bool = True,
) -> Iterator[Fleet]:
    """``n`` keepers (homes ``root/a``, ``root/b``, …) on one fresh schema; started when
    ``start`` (else by the test's first command). ``env``: variables of every member;
    ``member_env``: a member's own, by name (``{"b": {"BAY_FLEET_DATA": ...}}``)."""
    with postgres.fresh_schema_url() as url:
        members = []
        for name in string.ascii_lowercase[:n]:
            home = root / name
            home.mkdir(parents=True, exist_ok=True)
            variables = {
                "BAY_REGISTRY": url,
                "BAY_FLEET_TTL": f"{ttl:g}",
                "BAY_FLEET_HOST": f"host-{name}",
                **(env or {}),
                **((member_env or {}).get(name, {})),
            }
            members.append(Member(name, home, **variables))
        fleet = Fleet(url, members, ttl)
        try:
            if start:
                for m in members:
                    m.start()
            yield fleet
        finally:
            for m in members:
                with contextlib.suppress(Exception):
                    m.stop()


def free_port() -> int:
    """A loopback TCP port nobody listens on now (for a keeper's ``BAY_FLEET_LISTEN``)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_secret(where: Path, text: str | None = None, mode: int = 0o600) -> Path:
    """``where/fleet.secret``: the fleet link's secret (``BAY_FLEET_SECRET_FILE``), 32 random
    bytes in hex unless ``text`` is given; ``mode`` other than 0600 for the attack tests."""
    path = where / "fleet.secret"
    path.write_text((text if text is not None else os.urandom(32).hex()) + "\n")
    path.chmod(mode)
    return path


def link_env(names: Iterable[str], **extra: str) -> dict[str, dict[str, str]]:
    """Each member's own ``BAY_FLEET_LISTEN`` on a free loopback port (and ``extra``)."""
    return {n: {"BAY_FLEET_LISTEN": f"127.0.0.1:{free_port()}", **extra} for n in names}


@contextlib.contextmanager
def linked_fleet(
    postgres: PgServer, root: Path, n: int = 2, secret: str | None = None, **extra: str
) -> Iterator[Fleet]:
    """:func:`keeper_fleet` whose ``n`` keepers each listen on a fleet link of their own,
    all with one secret file (under ``root/secret``); not started (the first command
    starts a member). ``extra``: more variables of every member."""
    secrets = root / "secret"
    secrets.mkdir(parents=True, exist_ok=True)
    path = write_secret(secrets, secret)
    names = string.ascii_lowercase[:n]
    with keeper_fleet(
        postgres,
        root,
        n,
        env={"BAY_FLEET_SECRET_FILE": str(path)},
        member_env=link_env(names, **extra),
        start=False,
    ) as fleet:
        yield fleet


class RegistryCut:
    """A TCP proxy between one keeper and the tests' PostgreSQL (its unix socket): the
    keeper's ``BAY_REGISTRY`` is :meth:`url`; :meth:`cut` ends every connection through it
    and refuses new ones (a network partition that answers with resets), :meth:`mend`
    lets connections through again. The database is the real one; only the path is
    the test's. Threads, no event loop; :meth:`close` ends it."""

    def __init__(self, postgres: PgServer):
        self.target = str(postgres.root / ".s.PGSQL.5432")
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port = int(self._listener.getsockname()[1])
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._cut = False
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, schema_url: str) -> str:
        """``schema_url`` (the fleet's, over the unix socket) through this proxy."""
        parts = urllib.parse.urlsplit(schema_url)
        query = [
            (k, v) for k, v in urllib.parse.parse_qsl(parts.query) if k not in ("host", "port")
        ]
        query += [("host", "127.0.0.1"), ("port", str(self.port))]
        return urllib.parse.urlunsplit(
            (parts.scheme, "bay@", parts.path, urllib.parse.urlencode(query), "")
        )

    def cut(self) -> None:
        with self._lock:
            self._cut = True
            for s in self._open:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()
            self._open.clear()

    def mend(self) -> None:
        with self._lock:
            self._cut = False

    def close(self) -> None:
        self._closed = True
        self.cut()
        self._listener.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _addr = self._listener.accept()
            except OSError:
                return
            with self._lock:
                if self._cut:
                    client.close()
                    continue
                server = socket.socket(socket.AF_UNIX)
                try:
                    server.connect(self.target)
                except OSError:
                    client.close()
                    server.close()
                    continue
                self._open |= {client, server}
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while chunk := src.recv(65536):
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            with self._lock:
                for s in (src, dst):
                    if s in self._open:
                        self._open.discard(s)
                        with contextlib.suppress(OSError):
                            s.shutdown(socket.SHUT_RDWR)
                        s.close()


async def read_frame(stream: anyio.abc.ByteStream, timeout: float = 8.0) -> dict[str, Any] | None:
    """The next line a keeper sends on a fleet link (or a raw TLS stream to one), as a
    frame; None when the peer hung up first. The first line only: the tests read one
    answer at a time."""
    buf = b""
    with anyio.fail_after(timeout):
        while b"\n" not in buf:
            try:
                buf += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError, ssl.SSLError):
                return None
    return dict(json.loads(buf.split(b"\n", 1)[0]))
