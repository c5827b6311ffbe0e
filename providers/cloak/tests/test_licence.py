"""Licence failures classified from recorded launch failures, and the seat count's three
states (an unknown or stale total never refuses)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from browserbay.refusals import Refusal
from browserbay_cloak import licence
from browserbay_cloak.seats import STALE_AFTER, Ledger, Reading, Seats
from browserbay_testing import assert_refused

RECORDED = json.loads(Path(__file__).with_name("recorded_launch_failures.json").read_text())


def _classify(error: str, status_file: Path | None = None, source: str = "user") -> Refusal | None:
    found = licence.denial(error, status_file)
    if found is None:
        return None
    return licence.refusal_for(found, key_source=source, used=1, holders=["bp-00000001"])


@pytest.mark.parametrize("case", RECORDED, ids=[c["case"] for c in RECORDED])
def test_recorded_launch_failures_are_classified(case: dict[str, str | None]) -> None:
    refusal = _classify(str(case["error"]))
    if case["licence_refusal"] is None:
        assert refusal is None  # a crash or a sandbox failure is never called a licence failure
        return
    frame = assert_refused(refusal, str(case["licence_refusal"]))
    assert frame["data"]["exit_code" if frame["code"] != "backend_seat_taken" else "used"] >= 1


def test_each_licence_code_has_its_refusal_and_a_way_out() -> None:
    by_case = {c["case"]: str(c["error"]) for c in RECORDED}
    seat = assert_refused(_classify(by_case["exit76"]), "backend_seat_taken")
    assert "bp-00000001" in seat["message"]
    assert "bay keeper status" in seat["way_out"]
    key = assert_refused(_classify(by_case["exit77"]), "backend_key_invalid")
    assert key["way_out"].startswith("bay keys set cloak license_key")
    down = assert_refused(_classify(by_case["exit78"]), "backend_unavailable")
    assert "unreachable" in down["message"]
    assert "cloakbrowser.dev" in down["way_out"]
    local = assert_refused(_classify(by_case["exit79"]), "backend_unavailable")
    assert "cannot write" in local["message"]


def test_a_cluster_default_seat_refusal_does_not_pretend_to_know_the_holders() -> None:
    error = next(str(c["error"]) for c in RECORDED if c["case"] == "exit76")
    frame = assert_refused(_classify(error, source="cluster"), "backend_seat_taken")
    assert "cluster default" in frame["message"]
    assert "shared" in frame["message"]
    assert "bp-00000001" not in frame["message"]
    assert "bay keys set cloak license_key" in frame["way_out"]  # use your own key


def test_a_denial_after_the_handshake_is_read_from_the_status_file(tmp_path: Path) -> None:
    crash = next(str(c["error"]) for c in RECORDED if c["case"] == "exit139")
    status = tmp_path / "status.json"
    status.write_text("77")
    assert_refused(_classify(crash, status), "backend_key_invalid")
    assert not status.exists()  # consumed: a later launch never sees a stale code
    assert _classify(crash, status) is None  # negative control: no file, no licence label
    status.write_text('"77"')  # not an integer
    assert _classify(crash, status) is None
    status.write_text("3")  # not a licence code
    assert _classify(crash, status) is None


def test_an_exit_code_elsewhere_in_the_text_is_not_a_licence_code() -> None:
    assert licence.denial("page said exitCode=76 somewhere") is None
    assert licence.exit_code_of("<process did exit: exitCode=76, signal=null>") == 76


def test_a_failure_is_summarised_by_its_exit_code_and_last_stderr_line() -> None:
    sandbox = next(str(c["error"]) for c in RECORDED if c["case"] == "sandbox")
    said = licence.why_it_failed(sandbox)
    assert said.startswith("it exited with code 1")
    assert "No usable sandbox!" in said


# -- seats --------------------------------------------------------------------------------

NOW = 1_900_000_000.0


def test_three_states_and_only_fresh_can_refuse() -> None:
    fresh = Seats(used=2, reading=Reading(2, NOW - 3600), now=NOW)
    assert (fresh.state, fresh.total, fresh.at_ceiling()) == ("fresh", 2, True)
    assert "2 used / 2 total" in fresh.describe()
    below = Seats(used=1, reading=Reading(2, NOW - 3600), now=NOW)
    assert not below.at_ceiling()  # negative control: under the total
    stale = Seats(used=5, reading=Reading(2, NOW - STALE_AFTER - 1), now=NOW)
    assert (stale.state, stale.total, stale.at_ceiling()) == ("stale", None, False)
    assert "too old" in stale.describe()
    unknown = Seats(used=1000, reading=None, now=NOW)
    assert (unknown.state, unknown.total, unknown.at_ceiling()) == ("unknown", None, False)
    assert "unknown" in unknown.describe()
    assert "1000 used" in unknown.describe()


def test_a_total_is_learned_only_from_the_users_own_key_refused_while_we_held_seats(
    tmp_path: Path,
) -> None:
    book = Ledger(tmp_path / "seats.json")
    key = "cb_user_key_0123456789"
    book.refused_at(key, 0, "user")  # we held none: the seats are elsewhere, nothing learned
    assert book.seats(key, 0, "user").state == "unknown"
    book.refused_at(key, 2, "cluster")  # a cluster default's seats are shared: nothing learned
    assert book.seats(key, 2, "cluster").state == "unknown"
    assert book.reading(key) is None
    book.refused_at(key, 2, "user")
    seats = book.seats(key, 2, "user")
    assert (seats.state, seats.total, seats.at_ceiling()) == ("fresh", 2, True)
    assert book.seats(key, 2, "cluster").state == "unknown"  # the same key as a cluster default
    assert book.seats("cb_another_key_0123456", 2, "user").state == "unknown"
    assert key not in (tmp_path / "seats.json").read_text()  # only a digest is kept


def test_a_launch_beyond_a_recorded_total_drops_it_and_one_within_refreshes_it(
    tmp_path: Path,
) -> None:
    book = Ledger(tmp_path / "seats.json")
    key = "cb_user_key_0123456789"
    book.refused_at(key, 2, "user")
    first = book.reading(key)
    assert first is not None
    book.launched(key, 2)  # within the total: refreshed, kept
    again = book.reading(key)
    assert again is not None
    assert again.total == 2
    assert again.at >= first.at
    book.launched(key, 3)  # three ran at once: the total of 2 was wrong
    assert book.reading(key) is None
    assert book.seats(key, 3, "user").state == "unknown"
