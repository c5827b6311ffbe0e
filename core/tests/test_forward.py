"""What keeper B answers for a refusal keeper A sent back over the fleet link
(browserbay.keeper.forward.relayed): A's code and words, bounded like every refusal here."""

from __future__ import annotations

from browserbay.keeper.forward import relayed
from browserbay.refusals import CLIP


def test_a_peers_refusal_keeps_its_code_and_is_clipped_like_any_other() -> None:
    """A's message was set on B's refusal whole: a peer (or a page's text A echoed in it)
    could make B print any length. Its fields and way out were clipped, its message not."""
    long = "x" * 5000
    r = relayed(
        {
            "ok": False,
            "code": "not_your_tab",
            "message": long,
            "way_out": long,
            "data": {"tab": long},
        }
    )
    assert r.code == "not_your_tab"
    assert len(r.message) < CLIP + 20
    assert len(r.way_out) < CLIP + 20
    assert len(r.fields["tab"]) < CLIP + 20


def test_a_code_this_keeper_does_not_know_is_internal_error() -> None:
    r = relayed({"ok": False, "code": "no_such_code_here", "message": "m"})
    assert r.code == "internal_error"
