"""The fleet campaign's two-holders oracle (campaigns/fleet.py ``_overlaps``): holders'
intervals, from the grant's answer to the ``detach`` sent, may touch but never overlap —
including an interval that overlaps one that is not its neighbour in start order."""

from __future__ import annotations

from campaigns.fleet import _overlaps


def test_back_to_back_holders_are_one_holder_at_a_time() -> None:
    assert _overlaps([(0.0, 1.0, "x0"), (1.0, 2.0, "x1"), (2.5, 3.0, "x2")]) == []


def test_a_grant_before_the_previous_holder_let_go_is_two_holders() -> None:
    found = _overlaps([(0.0, 1.0, "x0"), (0.5, 2.0, "x1")])
    assert found == ["x0 and x1 held at once for 0.50 s"]


def test_an_overlap_with_a_long_hold_that_is_not_the_neighbour_is_found() -> None:
    # x0 holds 0..10; x1 (1..2) and x2 (3..4) both overlap it, x2 not x1.
    found = _overlaps([(0.0, 10.0, "x0"), (1.0, 2.0, "x1"), (3.0, 4.0, "x2")])
    assert [f.split(" held")[0] for f in found] == ["x0 and x1", "x0 and x2"]
