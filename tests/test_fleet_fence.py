"""A keeper cut off from the shared registry fences itself (issue 22): its claims expire
``BAY_FLEET_TTL`` after its last renewal, and then another keeper may take a profile and
start its browser — so before that, the cut-off keeper has closed its own browser of the
profile and refuses verbs ``fleet_fenced``. Real keepers, the real PostgreSQL; only the
cut-off keeper's path to it is the test's (a TCP proxy that it cuts: ``RegistryCut``)."""

from __future__ import annotations

from pathlib import Path

from browserbay_testing import assert_refused, wait_for
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
