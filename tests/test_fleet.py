"""Keepers as a fleet (issue 22, items 2 and 5) through the real CLI and keepers: several
keepers, each with its own BAY_HOME, on one real PostgreSQL schema (``keeper_fleet``).

Each keeper registers and beats; a keeper's start sweeps only its own rows (never a live
neighbour's browser or tabs); a persistent profile's browser runs on one keeper at a time
(its claim), and another keeper is refused with where it runs; after ``kill -9`` of the
keeper holding it, the claim expires after ``BAY_FLEET_TTL`` and another keeper serves the
profile when its data is on storage both mount (``BAY_FLEET_DATA``), else refuses
``profile_host_down`` naming the host — within the TTL plus one verb, never a hang.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import psycopg

from browserbay.keeper.fleet import KEEPER_ID
from browserbay_testing import Bay, assert_refused, wait_for
from browserbay_testing.fleet import Fleet, Member, keeper_fleet
from browserbay_testing.postgres import PgServer


def _profile(member: Member, label: str = "work") -> str:
    """A persistent profile made on ``member``, attached to its session ``a``: its id."""
    made = member.ok("new", label, session=None)
    pid = str(made["id"])
    member.ok("use", pid)
    return pid


def _browsers(fleet: Fleet, keeper_id: str) -> list[tuple[str, bool]]:
    return fleet.rows(
        "SELECT id, stopped_at IS NULL FROM browsers WHERE keeper_id=%s ORDER BY started_at",
        keeper_id,
    )


def test_each_keeper_of_a_fleet_registers_under_its_own_id_and_beats(
    postgres: PgServer, tmp_path: Path
) -> None:
    with keeper_fleet(postgres, tmp_path, 2) as fleet:
        ids = [m.keeper_id() for m in fleet]
        assert all(KEEPER_ID.fullmatch(i) for i in ids)
        assert len(set(ids)) == 2
        for m in fleet:
            mode = os.stat(m.home / "state" / "keeper-id").st_mode & 0o777
            assert mode == 0o600
        rows = fleet.rows("SELECT id, host, pid, stopped_at FROM keepers ORDER BY host")
        pids = [m.keeper_pid() for m in fleet]
        assert rows == [(ids[0], "host-a", pids[0], None), (ids[1], "host-b", pids[1], None)]
        (first,) = fleet.rows("SELECT beat_at FROM keepers WHERE id=%s", ids[0])
        wait_for(
            lambda: fleet.rows("SELECT beat_at FROM keepers WHERE id=%s", ids[0]) != [first],
            timeout=fleet.ttl * 3,
            what="a heartbeat",
        )
        fleet["a"].stop()
        (stopped,) = fleet.rows("SELECT stopped_at FROM keepers WHERE id=%s", ids[0])
        assert stopped[0] is not None  # a stop is said, not only a silence
        fleet["a"].start()  # the same home keeps its id
        assert fleet["a"].keeper_id() == ids[0]


def test_a_neighbours_start_does_not_sweep_a_live_keepers_browser_or_tabs(
    postgres: PgServer, tmp_path: Path, demo: str
) -> None:
    """Attack: keeper B starts while keeper A runs a persistent profile's browser with a
    live tab. B's start-up sweeps (orphaned browsers, live tabs, grants) must leave A's
    alone: A's browser still runs and its tab still answers. (On main before this change,
    B was refused registry_unreachable — one keeper per schema; without that lock, B's
    sweep SIGTERMed A's browser and marked its live tabs auto.)"""
    with keeper_fleet(postgres, tmp_path, 2, start=False) as fleet:
        a, b = fleet["a"], fleet["b"]
        a.start()
        _profile(a)
        a.ok("open", f"{demo}/")
        a_id = a.keeper_id()
        running = _browsers(fleet, a_id)
        assert [alive for _, alive in running] == [True]
        assert fleet.rows("SELECT DISTINCT state FROM kept_tabs") in ([], [("live",)])
        b.start()
        b.ok("open", "about:blank", session="b1")  # B at work too
        assert _browsers(fleet, a_id) == running  # not swept
        assert fleet.rows("SELECT DISTINCT state FROM kept_tabs WHERE keeper_id=%s", a_id) in (
            [],
            [("live",)],
        )
        assert a("get", "title").code == 0  # A's tab still answers


def test_a_profile_running_on_another_keeper_is_refused_with_where_it_runs(
    postgres: PgServer, tmp_path: Path, demo: str
) -> None:
    """A persistent profile's browser runs on one keeper at a time: A holds its claim, so
    B does not start a second browser on the same data; B, which has no fleet secret to
    forward the verb (tests/test_fleet_link.py forwards it), refuses fleet_link_refused
    naming A's host."""
    with keeper_fleet(postgres, tmp_path, 2, start=False) as fleet:
        a, b = fleet["a"], fleet["b"]
        a.start()
        pid = _profile(a)
        a.ok("open", f"{demo}/")
        b.ok("use", pid, session="b1")
        frame = assert_refused(b("open", f"{demo}/", session="b1"), "fleet_link_refused")
        assert frame["data"]["host"] == "host-a"
        assert frame["data"]["keeper"] == a.keeper_id()
        assert "host-a" in frame["way_out"]
        claims = fleet.rows("SELECT keeper_id, released_at FROM profile_claims")
        assert claims == [(a.keeper_id(), None)]  # B took nothing
        assert _browsers(fleet, b.keeper_id()) == []  # nor started a browser


def test_after_kill_9_a_dead_keepers_profile_without_shared_data_is_refused_host_down(
    postgres: PgServer, tmp_path: Path, demo: str
) -> None:
    """A's data is on A's disk: after A's kill -9, B refuses profile_host_down naming A's
    host — once the claim expired, at once (the TTL plus one verb), never a hang."""
    with keeper_fleet(postgres, tmp_path, 2, start=False) as fleet:
        a, b = fleet["a"], fleet["b"]
        a.start()
        pid = _profile(a)
        a.ok("open", f"{demo}/")
        b.ok("use", pid, session="b1")
        a.kill()
        killed = time.monotonic()
        deadline = killed + fleet.ttl + 30
        while True:
            r = b("open", f"{demo}/", session="b1")
            frame = r.frame
            if frame.get("code") != "fleet_link_refused" or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        frame = assert_refused(r, "profile_host_down")
        assert frame["data"]["host"] == "host-a"
        assert time.monotonic() - killed < fleet.ttl + 30
        assert "BAY_FLEET_DATA" in frame["way_out"]
        assert _browsers(fleet, b.keeper_id()) == []


def test_after_kill_9_another_keeper_serves_the_profile_from_shared_data(
    postgres: PgServer, tmp_path: Path, demo: str
) -> None:
    """Both keepers mount the profiles' data (BAY_FLEET_DATA; here at different paths of
    one directory, as two machines would mount it): after A's kill -9, B serves A's
    profile within the TTL plus one verb, with its login cookie, and restores A's tabs."""
    shared = tmp_path / "shared"
    shared.mkdir()
    (tmp_path / "mnt").mkdir()
    alias = tmp_path / "mnt" / "data"
    alias.symlink_to(shared)
    member_env = {"a": {"BAY_FLEET_DATA": str(shared)}, "b": {"BAY_FLEET_DATA": str(alias)}}
    with keeper_fleet(postgres, tmp_path, 2, start=False, member_env=member_env) as fleet:
        a, b = fleet["a"], fleet["b"]
        a.start()
        pid = _profile(a)
        assert (shared / "profiles" / pid).is_dir()
        (stored,) = fleet.rows("SELECT dir FROM profiles WHERE id=%s", pid)
        assert stored == (f"profiles/{pid}",)  # no machine's absolute path
        a.ok("open", f"{demo}/")
        a.ok("cookies", "set", "login", "yes", "--url", demo, "--expires", "4102444800")
        assert "yes" in str(a.ok("cookies", "get", "--name", "login"))
        a.stop()  # (Chromium writes its cookies out at its end)
        a.start()
        a.ok("open", f"{demo}/")
        b.ok("use", pid)
        a.kill()
        killed = time.monotonic()
        deadline = killed + fleet.ttl + 30
        while True:
            r = b("get", "url")
            if r.code == 0 or time.monotonic() > deadline:
                break
            assert r.frame["code"] == "fleet_link_refused", r
            time.sleep(0.2)
        assert r.code == 0, r
        assert time.monotonic() - killed < fleet.ttl + 30
        assert demo in str(r.data)  # A's live tab restored on B
        assert "yes" in str(b.ok("cookies", "get", "--name", "login"))  # the same login
        (claim,) = fleet.rows("SELECT keeper_id, released_at FROM profile_claims")
        assert claim == (b.keeper_id(), None)


def test_keeper_status_lists_the_fleet_alive_or_not_with_its_claims(
    postgres: PgServer, tmp_path: Path, demo: str
) -> None:
    with keeper_fleet(postgres, tmp_path, 3, start=False) as fleet:
        a, b, c = fleet["a"], fleet["b"], fleet["c"]
        for m in fleet:
            m.start()
        _profile(a)
        a.ok("open", f"{demo}/")
        c.kill()
        time.sleep(fleet.ttl + 0.5)
        data = b.ok("keeper", "status", session=None)
        rows = {r["host"]: r for r in data["fleet"]}
        assert data["keeper_id"] == b.keeper_id()
        assert (rows["host-a"]["alive"], rows["host-a"]["claims"]) == (True, 1)
        assert (rows["host-b"]["alive"], rows["host-b"]["me"]) == (True, True)
        assert rows["host-c"]["alive"] is False
        assert rows["host-c"]["beat_age_s"] >= fleet.ttl
        text = b("keeper", "status", session=None, json_=False).stdout
        assert "3 keeper(s)" in text
        assert "silent" in text
        assert "(this keeper)" in text


def test_a_profile_made_on_a_live_keeper_is_not_started_empty_on_another(
    postgres: PgServer, tmp_path: Path
) -> None:
    """Attack: keeper A made a profile (its data on A's disk) and never ran it; a session
    on keeper B uses it. B must not start a browser on an empty directory of its own (a
    profile without its logins, silently): it answers that the profile runs on A. (Before,
    B took the free claim and started a fresh browser on B's own empty profiles/<id>.)"""
    with keeper_fleet(postgres, tmp_path, 2, start=False) as fleet:
        a, b = fleet["a"], fleet["b"]
        a.start()
        pid = str(a.ok("new", "work", session=None)["id"])
        b.ok("use", pid, session="b1")
        frame = assert_refused(b("open", "about:blank", session="b1"), "fleet_link_refused")
        assert frame["data"]["host"] == "host-a"
        assert _browsers(fleet, b.keeper_id()) == []
        assert not (b.home / "data" / "profiles" / pid).exists()
        (claim,) = fleet.rows("SELECT keeper_id, released_at IS NOT NULL FROM profile_claims")
        assert claim == (a.keeper_id(), True)  # still where its data is


def test_a_fleet_ttl_under_one_second_is_refused_at_start_naming_the_variable(
    tmp_path: Path,
) -> None:
    """A TTL the heartbeat cannot keep (it beats every third of it) or no number: the keeper
    does not start, and the answer names the variable and what it needs."""
    for bad in ("0.5", "-3", "nan", "soon"):
        r = Bay(tmp_path / bad)("open", "about:blank", env={"BAY_FLEET_TTL": bad})
        frame = assert_refused(r, "keeper_unavailable")
        assert f"BAY_FLEET_TTL='{bad}': needs a number" in frame["message"], frame
        assert "bay keeper logs" in frame["way_out"]


def test_an_audit_row_held_up_by_the_database_does_not_hold_up_the_next_verbs(
    postgres: PgServer, tmp_path: Path, demo: str
) -> None:
    """On PostgreSQL a verb's audit row goes on a registry lane of its own: with the audit
    table locked by another connection (every insert into it waits), the next verbs still
    read the registry and answer; the held rows are written, in order, once the lock goes.
    With one lane for all, the second verb's registry read queued behind the first verb's
    audit insert and the verb ran out of time."""
    with keeper_fleet(postgres, tmp_path, 1) as fleet:
        a = fleet["a"]
        a.ok("open", f"{demo}/form.html")
        before = fleet.rows("SELECT count(*) FROM audit WHERE verb='get'")[0][0]
        with psycopg.connect(fleet.url) as locker:
            locker.execute("LOCK TABLE audit IN EXCLUSIVE MODE")  # inserts wait; reads do not
            titles = [a.ok("get", "title", "--timeout", "15")["value"] for _ in range(3)]
            assert titles == ["Sign up"] * 3
            held = fleet.rows("SELECT count(*) FROM audit WHERE verb='get'")[0][0]
            assert held == before  # every row is still waiting on the lock
            locker.rollback()  # the lock goes
        wait_for(
            lambda: fleet.rows("SELECT count(*) FROM audit WHERE verb='get'")[0][0] == before + 3,
            timeout=30,
            what="the three held audit rows",
        )
        assert fleet.rows("SELECT ok FROM audit WHERE verb='get' ORDER BY id")[-3:] == [(1,)] * 3
