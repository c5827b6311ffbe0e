"""Regression tests for what the security census (campaigns/census.py) found."""

from __future__ import annotations

from browserbay.keeper.pageverbs import mask_passwords
from tests.helpers import Bay


def test_a_typed_password_never_shows_in_a_snapshot(bay: Bay, demo: str) -> None:
    """The accessibility snapshot read a password field's value out in clear (Playwright's
    aria snapshot takes input.value): a password typed through stdin came back in the answer."""
    secret = "pw-census-7f3a9c"
    bay.ok("open", f"{demo}/login.html", session="census")
    bay.ok("fill", "input[name=password]", "-", stdin=secret, session="census")
    for flags in ((), ("-i",)):
        r = bay("snapshot", *flags, session="census")
        assert r.code == 0
        assert secret not in r.stdout
        assert "••••" in r.frame["data"]["snapshot"]
    bay.ok("close", session="census")


def test_mask_passwords_masks_textboxes_holding_a_password_value_and_nothing_else() -> None:
    raw = (
        '- textbox "Name" [ref=e2]: hunter2\n- textbox "Password" [ref=e3]: hunter2\n'
        "- text: hunter2"
    )
    assert mask_passwords(raw, ["hunter2"]) == (
        '- textbox "Name" [ref=e2]: ••••\n- textbox "Password" [ref=e3]: ••••\n- text: hunter2'
    )
    assert mask_passwords(raw, []) == raw
