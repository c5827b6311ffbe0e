"""The cloak rows: the provider (its seed minted once) and its licence-key integration, whose
test is shape-only (zero network)."""

from __future__ import annotations

import pytest

from browserbay.keys import KeyBook
from browserbay.keytest import run_test
from browserbay.model import KeySource
from browserbay.refusals import Refusal
from browserbay.testing import check_row
from browserbay_cloak import plugin


def test_the_provider_row_is_runnable_and_needs_no_key() -> None:
    (row,) = plugin.bay_providers()
    check_row(row)
    assert (row.id, row.tier, row.not_runnable) == ("cloak", 2, None)
    assert row.driver_factory is not None
    assert row.install is not None
    assert row.capabilities.key_scope == "user_or_cluster"
    assert not row.capabilities.remote_host


def test_a_profile_seed_is_minted_once_and_kept() -> None:
    minted = plugin.check_options({})
    assert set(minted) == {"seed", "platform"}
    assert minted["seed"].isdigit()
    assert 10000 <= int(minted["seed"]) <= 99999
    assert minted["platform"] in ("windows", "macos")
    assert plugin.check_options(minted) == minted  # answered unchanged: never re-minted
    others = {plugin.check_options({})["seed"] for _ in range(20)}
    assert len(others) > 1  # negative control: not one constant seed for everyone
    with pytest.raises(Refusal):
        plugin.check_options({"seed": "12"})


def test_the_integration_row_hands_the_key_to_the_vendors_own_variable() -> None:
    (row,) = plugin.bay_integrations()
    assert row.id == "cloak"
    assert row.test_kind == "shape-only"
    (field,) = row.fields
    assert (field.name, field.secret, field.required) == ("license_key", True, False)
    assert row.vendor_env == {"license_key": "CLOAKBROWSER_LICENSE_KEY"}


def _book(value: str | None) -> KeyBook:
    (row,) = plugin.bay_integrations()
    source = KeySource("mine", "user", lambda i, f: value)
    return KeyBook({"mine": source}, {row.id: row})


@pytest.mark.parametrize(("value", "ok"), [("cb_0123456789abcdef", True), ("0123456789", False)])
def test_the_key_test_checks_the_shape_without_network(
    value: str, ok: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    import browserbay.keytest as keytest

    monkeypatch.setattr(keytest, "one_request", None)  # any request would raise
    (row,) = plugin.bay_integrations()
    verdict = run_test(row, _book(value).resolve("cloak"))
    assert verdict.ok is ok
    assert verdict.host is None


def test_no_licence_is_the_free_tier_not_a_missing_key() -> None:
    (provider,) = plugin.bay_providers()
    book = _book(None)
    assert book.resolve("cloak").missing == ()
    assert book.child_env(provider) == {}
