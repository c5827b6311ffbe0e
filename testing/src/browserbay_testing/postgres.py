"""A real PostgreSQL server for the tests (issue 22): Debian's ``initdb`` + ``pg_ctl`` into a
temporary directory, listening on a unix socket only (no TCP port), run as ``nobody``
(PostgreSQL refuses to run as root), one per test session; each test gets a schema of its
own (:meth:`PgServer.schema_url`), emptied after it — emptying a schema costs milliseconds,
migrating a new one most of a second, a new server seconds."""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import psycopg

#: The server's user for the tests' connections (trust, over the private socket only).
USER = "bay"
DBNAME = "postgres"


def pg_bin(name: str) -> str:
    """A PostgreSQL server program: Debian keeps them under /usr/lib/postgresql/<major>/bin
    (not on PATH); the newest major installed."""
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=_major)
    if found:
        return found[-1]
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(f"no {name}: run scripts/setup.sh (it installs Debian's postgresql)")
    return path


def _nobody() -> tuple[int, int]:
    row = pwd.getpwnam("nobody")
    return row.pw_uid, row.pw_gid


def _major(path: str) -> int:
    part = Path(path).parent.parent.name
    return int(part) if part.isdigit() else 0


class PgServer:
    """One running server in ``root`` (its data, socket and log), owned by ``nobody``."""

    def __init__(self, root: Path):
        self.root = root
        self.data = root / "data"
        self.log = root / "server.log"
        self._n = itertools.count(1)
        self._free: list[str] = []

    def _as_owner(self, *argv: str) -> None:
        uid, gid = _nobody()
        who = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups"]
        subprocess.run(
            [*who, *argv],
            check=True,
            capture_output=True,
            cwd=self.root,
            timeout=120,
            env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"},
        )

    def start(self) -> None:
        uid, gid = _nobody()
        os.chown(self.root, uid, gid)
        self._as_owner(
            pg_bin("initdb"),
            *("-D", str(self.data), "-U", USER, "--auth=trust", "--no-locale", "-E", "UTF8"),
            "--no-sync",
        )
        settings = (
            f"-c listen_addresses='' -c unix_socket_directories='{self.root}' "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        self._as_owner(
            pg_bin("pg_ctl"),
            *("-D", str(self.data), "-l", str(self.log), "-o", settings, "-w", "-t", "60"),
            "start",
        )

    def stop(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            self._as_owner(pg_bin("pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def url(self, schema: str | None = None) -> str:
        """A ``postgresql://`` URL over the socket, its ``search_path`` set to ``schema``."""
        url = f"postgresql://{USER}@/{DBNAME}?host={quote(str(self.root), safe='/')}"
        if schema is not None:
            url += "&options=" + quote(f"-csearch_path={schema}", safe="")
        return url

    @contextlib.contextmanager
    def fresh_schema_url(self) -> Iterator[str]:
        """A new empty schema and the URL whose tables are made in it; dropped after."""
        schema = f"t{os.getpid()}_{next(self._n)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')
        try:
            yield self.url(schema)
        finally:
            with psycopg.connect(self.url(), autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA "{schema}" CASCADE')

    @contextlib.contextmanager
    def schema_url(self) -> Iterator[str]:
        """A schema of the test's own, empty of rows: the first is new; after a test its
        tables are emptied (milliseconds, where migrating a new schema takes most of a
        second) and the next test is given it again."""
        schema = self._free.pop() if self._free else None
        if schema is None:
            schema = f"t{os.getpid()}_{next(self._n)}"
            with psycopg.connect(self.url(), autocommit=True) as conn:
                conn.execute(f'CREATE SCHEMA "{schema}"')
        try:
            yield self.url(schema)
        finally:
            with psycopg.connect(self.url(), autocommit=True) as conn:
                tables = conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = %s "
                    "AND tablename NOT IN ('bay_schema', 'change_clock')",
                    (schema,),
                ).fetchall()
                # DELETE, not TRUNCATE: a handful of rows go faster than new relation files.
                script = "".join(f'DELETE FROM "{schema}"."{t}";' for (t,) in tables)
                if script:
                    conn.execute(script.encode())
            self._free.append(schema)


@contextlib.contextmanager
def pg_server() -> Iterator[PgServer]:
    """A started server in a fresh private directory; stopped and removed after."""
    root = Path(tempfile.mkdtemp(prefix="bay-pg-", dir="/tmp"))
    server = PgServer(root)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
