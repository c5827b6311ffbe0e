"""A keeper cut off from the shared registry fences itself (issue 22): its claims expire
``BAY_FLEET_TTL`` after its last renewal, and then another keeper may take a profile and
start its browser — so before that, the cut-off keeper has closed its own browser of the
profile and refuses verbs ``fleet_fenced``. Real keepers, the real PostgreSQL; only the
cut-off keeper's path to it is the test's (a TCP proxy that it cuts: ``RegistryCut``)."""

from __future__ import annotations

import threading
from pathlib import Path

import psycopg

from browserbay.paths import bay_paths
from browserbay_testing import Result, assert_refused, wait_for
from browserbay_testing.fleet import Fleet, Member, RegistryCut, _alive, keeper_fleet
from browserbay_testing.postgres import PgServer

#: Long enough for a loaded machine's Chromium to close within the fence's margin.
TTL = 6.0


def _browser_pids(fleet: Fleet, member: Member) -> list[int]:
    """The pids of the browsers the member's keeper runs, as its registry rows say."""
    return [
        int(p)
        for (p,) in fleet.rows(
            "SELECT pid FROM browsers"
            " WHERE keeper_id=%s AND stopped_at IS NULL AND pid IS NOT NULL",
            member.keeper_id(),
        )
    ]


def _claim_free(fleet: Fleet, profile: str) -> bool:
    """The server's own view: any keeper may take the profile's claim now."""
    rows = fleet.rows(
        "SELECT released_at IS NOT NULL"
        " OR renewed_at < CAST(extract(epoch FROM clock_timestamp()) AS DOUBLE PRECISION) - %s"
        " FROM profile_claims WHERE profile=%s",
        fleet.ttl,
        profile,
    )
    return rows == [(True,)]


def _server_now(fleet: Fleet) -> float:
    return float(
        fleet.rows("SELECT CAST(extract(epoch FROM clock_timestamp()) AS DOUBLE PRECISION)")[0][0]
    )


def _renewed_since(fleet: Fleet, profile: str, since: float) -> bool:
    """The profile's claim was renewed (on the server's clock) after ``since``."""
    rows = fleet.rows(
        "SELECT renewed_at > %s FROM profile_claims WHERE profile=%s AND released_at IS NULL",
        since,
        profile,
    )
    return rows == [(True,)]


def _waiting_on_attachments(fleet: Fleet) -> int:
    """The server backends whose statement on ``attachments`` waits for a lock."""
    return int(
        fleet.rows(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            " AND query ILIKE '%%attachments%%' AND pid <> pg_backend_pid()"
        )[0][0]
    )


def test_a_keeper_cut_off_from_the_registry_stops_its_profile_before_another_can_claim_it(
    postgres: PgServer, tmp_path: Path, demo: str
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    cut = RegistryCut(postgres)
    try:
        with keeper_fleet(
            postgres, tmp_path, 2, ttl=TTL, start=False, env={"BAY_FLEET_DATA": str(shared)}
        ) as fleet:
            a, b = fleet["a"], fleet["b"]
            a.env["BAY_REGISTRY"] = cut.url(fleet.url)
            a.start()
            pid = str(a.ok("new", "work", session=None)["id"])
            a.ok("use", pid)
            a.ok("open", f"{demo}/")
            (browser,) = _browser_pids(fleet, a)
            assert _alive(browser)
            b.ok("use", pid)  # the same session a, on B

            cut.cut()
            # The first moment the server would let another keeper take the claim...
            wait_for(lambda: _claim_free(fleet, pid), timeout=TTL * 5, what="A's claim free")
            # ...A's browser of the profile is gone already, and A serves no verb.
            assert not _alive(browser)
            frame = assert_refused(a("get", "url"), "fleet_fenced")
            assert frame["data"]["host"] == "host-a"
            assert "bay doctor" in frame["way_out"]

            # B takes the profile now (the data is shared) and serves it, A's tab restored.
            r = wait_for(
                lambda: (lambda r: r if r.code == 0 else None)(b("get", "url")),
                timeout=TTL * 5,
                what="B serving the profile",
            )
            assert demo in str(r.data)
            assert fleet.rows("SELECT keeper_id FROM profile_claims WHERE profile=%s", pid) == [
                (b.keeper_id(),)
            ]

            # The registry comes back to A: A serves again, but never the profile's browser
            # beside B's — its verb there is B's to run (A has no link: refused naming B).
            cut.mend()
            r = wait_for(
                lambda: (lambda r: r if r.frame.get("code") != "fleet_fenced" else None)(
                    a("get", "url")
                ),
                timeout=TTL * 5,
                what="A no longer fenced",
            )
            assert_refused(r, "fleet_link_refused")
            assert _browser_pids(fleet, a) == []
            assert fleet.rows(
                "SELECT stop_reason FROM browsers WHERE keeper_id=%s", a.keeper_id()
            ) == [("fenced",)]
    finally:
        cut.close()


def test_a_verb_held_up_in_the_registry_does_not_hold_up_the_heartbeat(
    postgres: PgServer, tmp_path: Path, demo: str
) -> None:
    """The heartbeat has a registry lane of its own (its thread, its pooled connection): a
    verb's registry call that waits on a lock another transaction holds — for longer than
    the TTL — delays no beat, so keeper A renews its claim all along, is not fenced, keeps
    its browser, and keeper B cannot take the profile (its data is shared: B could serve
    it). When the beat shared the verbs' lane it queued behind that call: no renewal got
    through, A fenced itself after two thirds of the TTL and the claim fell free."""
    shared = tmp_path / "shared"
    shared.mkdir()
    with keeper_fleet(postgres, tmp_path, 2, ttl=TTL, env={"BAY_FLEET_DATA": str(shared)}) as fleet:
        a, b = fleet["a"], fleet["b"]
        pid = str(a.ok("new", "work", session=None)["id"])
        a.ok("use", pid)
        a.ok("open", f"{demo}/")
        (browser,) = _browser_pids(fleet, a)
        b.ok("use", pid)  # the same session a, on B
        held: list[Result] = []
        with psycopg.connect(fleet.url) as locker:
            # Writes to attachments wait (reads do not): session c's `use` on A waits in
            # A's registry call, on A's verb lane, until the lock goes.
            locker.execute("LOCK TABLE attachments IN EXCLUSIVE MODE")
            verb = threading.Thread(
                target=lambda: held.append(a("use", pid, session="c", timeout=TTL * 20))
            )
            verb.start()
            try:
                wait_for(
                    lambda: _waiting_on_attachments(fleet) == 1,
                    timeout=TTL * 5,
                    what="A's use waiting on the lock",
                )
                since = _server_now(fleet)
                # A whole TTL on the server's clock, and A's claim renewed after it...
                wait_for(
                    lambda: _renewed_since(fleet, pid, since + TTL),
                    timeout=TTL * 5,
                    what="A's claim renewed a TTL after its verb began waiting",
                )
                # ...while that verb's call still waits: no beat waited for it.
                assert _waiting_on_attachments(fleet) == 1
                assert not held
                assert "fenced" not in bay_paths(a.env).keeper_log.read_text()
                assert not _claim_free(fleet, pid)
                assert _alive(browser)
                # B does not take the profile: A's claim holds (B has no link to A).
                r = b("get", "url")
                frame = assert_refused(r, "fleet_link_refused")
                assert frame["data"]["host"] == "host-a", frame
                assert fleet.rows("SELECT keeper_id FROM profile_claims WHERE profile=%s", pid) == [
                    (a.keeper_id(),)
                ]
            finally:
                locker.rollback()  # the lock goes
                verb.join()
        # The held verb is answered once the lock goes, and A serves the profile as before.
        (r,) = held
        assert r.code == 0, r
        assert demo in str(a.ok("get", "url"))
        assert _browser_pids(fleet, a) == [browser]
