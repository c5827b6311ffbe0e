"""``BAY_REGISTRY=postgresql://…`` through the real CLI and keeper, on the session's real
PostgreSQL server (``postgres`` fixture): the keeper keeps its registry there and writes no
SQLite file; a URL that is none, or a server that does not answer, is refused with its code
by the keeper the command started — within the connect timeout, never a hang — and nothing
is written; ``bay doctor`` says which backend and whether it connects."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import psycopg
import pytest

from browserbay.registry import RegistryUnreachable
from browserbay.registry.pg import PgDatabase
from browserbay_testing import Bay, assert_refused
from browserbay_testing.postgres import PgServer


def test_a_keeper_on_postgresql_keeps_its_registry_there(
    tmp_path: Path, postgres: PgServer
) -> None:
    bay = Bay(tmp_path)
    with postgres.schema_url() as url:
        try:
            r = bay("keeper", "start", env={"BAY_REGISTRY": url})
            assert r.code == 0, r
            status = bay("keeper", "status", env={"BAY_REGISTRY": url}).frame["data"]
            with psycopg.connect(url) as conn:
                runs = conn.execute("SELECT pid, stopped_at FROM keeper_runs").fetchall()
        finally:
            bay.stop()
        assert runs == [(status["pid"], None)], (runs, status)
        assert status["registry"] == url  # (no password in this URL to hide)
        assert not list(tmp_path.rglob("registry.sqlite3*"))  # the file was never made
        with psycopg.connect(url) as conn:
            (stopped,) = conn.execute("SELECT stopped_at FROM keeper_runs").fetchone()
        assert stopped is not None  # its stop was recorded there too


def test_a_second_keeper_with_a_copied_keeper_id_is_refused_and_the_first_goes_on(
    tmp_path: Path, postgres: PgServer
) -> None:
    """Keepers of a fleet share the tables, each under its own keeper id; two homes with one
    id (a copied state/keeper-id) would sweep each other's browsers and tabs as their own:
    the second is refused, and says which file to remove."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b" / "state").mkdir(parents=True)
    first, second = Bay(tmp_path / "a"), Bay(tmp_path / "b")
    with postgres.schema_url() as url:
        try:
            assert first("keeper", "start", env={"BAY_REGISTRY": url}).code == 0
            copied = (tmp_path / "a" / "state" / "keeper-id").read_text()
            (tmp_path / "b" / "state" / "keeper-id").write_text(copied)
            r = second("open", "about:blank", env={"BAY_REGISTRY": url})
            frame = assert_refused(r, "registry_unreachable")
            assert frame["data"]["where"] == url
            assert copied.strip() in frame["data"]["reason"]
            assert "state/keeper-id" in frame["data"]["reason"]
            status = first("keeper", "status").frame["data"]  # the first one goes on
            with psycopg.connect(url) as conn:
                runs = conn.execute("SELECT pid FROM keeper_runs").fetchall()
            assert runs == [(status["pid"],)]  # the refused keeper wrote nothing
        finally:
            first.stop()
            second.stop()  # (a keeper that wrongly started)
        # the lock went with the first keeper: the next one starts
        try:
            assert second("keeper", "start", env={"BAY_REGISTRY": url}).code == 0
        finally:
            second.stop()


def test_a_malformed_bay_registry_is_refused_and_the_keeper_writes_nothing(
    tmp_path: Path,
) -> None:
    bay = Bay(tmp_path)
    start = time.monotonic()
    r = bay("open", "about:blank", env={"BAY_REGISTRY": "mysql://db.example/bay"})
    frame = assert_refused(r, "registry_url_bad")
    assert "postgresql://" in frame["message"]
    assert "BAY_REGISTRY" in frame["way_out"]
    assert time.monotonic() - start < 30
    assert not list(tmp_path.rglob("registry.sqlite3*"))  # no fallback to the SQLite file


def test_an_unreachable_registry_server_is_refused_with_its_reason(tmp_path: Path) -> None:
    url = f"postgresql://bay:s3cret@/postgres?host={tmp_path}/no-server-here"
    r = Bay(tmp_path)("open", "about:blank", env={"BAY_REGISTRY": url})
    frame = assert_refused(r, "registry_unreachable")
    assert "s3cret" not in r.stdout + r.stderr  # the password is never shown
    assert (
        frame["data"]["where"] == f"postgresql://bay:***@/postgres?host={tmp_path}/no-server-here"
    )
    assert "No such file" in frame["data"]["reason"] or "connect" in frame["data"]["reason"]
    assert not list(tmp_path.rglob("registry.sqlite3*"))


def test_a_server_that_never_answers_is_given_up_at_the_connect_timeout(tmp_path: Path) -> None:
    """A socket that takes the connection and never speaks (a stuck server): libpq's connect
    timeout ends the wait, the store says so — the keeper never hangs on it."""
    stuck = socket.socket(socket.AF_UNIX)
    stuck.bind(str(tmp_path / ".s.PGSQL.5432"))
    stuck.listen(8)
    start = time.monotonic()
    with pytest.raises(RegistryUnreachable, match="timeout"):
        PgDatabase(f"postgresql://bay@/postgres?host={tmp_path}", connect_timeout=2)
    assert time.monotonic() - start < 10
    stuck.close()


def test_doctor_says_which_registry_and_whether_it_connects(
    tmp_path: Path, postgres: PgServer
) -> None:
    bay = Bay(tmp_path)

    def row(**env: str) -> dict[str, str]:
        data = bay("doctor", session=None, env=env, timeout=120).frame["data"]
        (found,) = [c for c in data["checks"] if c["area"] == "registry"]
        return dict(found)

    assert row()["detail"].startswith("SQLite file ")
    with postgres.schema_url() as url:
        good = row(BAY_REGISTRY=url)
        assert (good["status"], "connects" in good["detail"]) == ("ok", True), good
    bad = row(BAY_REGISTRY=f"postgresql://bay@/postgres?host={tmp_path}/none")
    assert (bad["status"], "does not answer" in bad["detail"]) == ("fail", True), bad
    assert row(BAY_REGISTRY="not a url")["status"] == "fail"


def test_a_pooled_connection_the_server_dropped_is_replaced_not_answered_as_an_error(
    postgres: PgServer,
) -> None:
    """A connection the server ended while it sat in the pool (a server restart, an
    operator's ``pg_terminate_backend``, a proxy's idle cut) was handed to the next
    registry call, which failed: the fleet campaign saw its verbs answered ``internal_error``.
    The pool checks a connection before lending it, so the call gets a live one."""
    with postgres.fresh_schema_url() as url:
        db = PgDatabase(url)
        try:
            row = db.execute("SELECT pg_backend_pid()").fetchone()
            pooled = int(row[0])
            with psycopg.connect(url, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (pooled,))
                for _ in range(50):  # the server ends it at once; wait until it has
                    gone = admin.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pooled,)
                    ).fetchone()
                    if gone is not None and gone[0] == 0:
                        break
                    time.sleep(0.05)
            again = db.execute("SELECT pg_backend_pid()").fetchone()
            assert int(again[0]) != pooled
        finally:
            db.close()
