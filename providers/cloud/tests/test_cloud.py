"""The cloud:<vendor> rows: runnable providers whose session contract is data, and one
integration row per vendor whose key test is a credential exchange with the host inside its
own URL field.
Each vendor's documented key check is exercised against browserbay_testing.fakevendor — a local
FAKE of that contract, not the vendor."""

from __future__ import annotations

import urllib.parse

import pytest

from browserbay.keys import PIN_SUFFIX, KeyBook, check_value, origin
from browserbay.keytest import derive_target, run_test
from browserbay.model import KeySource
from browserbay.testing import check_row
from browserbay_cloud import plugin
from browserbay_cloud.vendors import VENDORS, Vendor
from browserbay_testing.fakevendor import FakeVendor

IDS = {
    "cloud:browserbase",
    "cloud:browserless",
    "cloud:kernel",
    "cloud:steel",
    "cloud:hyperbrowser",
    "cloud:browser-use",
}
KEY = "bu_fake0123456789abcdefGHIJ"  # fits every vendor's pattern


def test_every_vendor_has_a_runnable_provider_row() -> None:
    rows = {r.id: r for r in plugin.bay_providers()}
    assert set(rows) == IDS
    for row in rows.values():
        check_row(row)
        assert row.tier == 2
        assert row.driver_factory is not None
        assert row.not_runnable is None
        assert row.capabilities.key_scope == "user_or_cluster"


@pytest.mark.parametrize("vendor", VENDORS, ids=lambda v: v.id)
def test_each_contract_is_complete_data(vendor: Vendor) -> None:
    """Every row says where it was read, where the CDP URL and the session id are, and how
    the session ends; every field a driver needs reaches it under a vendor variable name."""
    c = vendor.contract
    assert c.docs
    assert all(d.startswith("https://") for d in c.docs)
    if c.create is None:  # connecting starts it, disconnecting ends it
        assert c.release is None
        assert not c.cdp_field
        assert c.connect_query, "a create-less vendor takes its key in the CDP URL"
    else:
        assert c.cdp_field
        assert c.id_field
        assert c.release is not None
        assert "{session_id}" in c.release.path
        assert "{session_id}" not in c.create.path
    env = vendor.row().vendor_env
    assert {"api_key", vendor.url_field} <= set(env)
    assert vendor.fields_from_env({env["api_key"]: KEY, "UNRELATED": "x"}) == {"api_key": KEY}


def test_every_integration_row_is_a_credential_exchange_with_a_derivable_default_host() -> None:
    rows = {r.id: r for r in plugin.bay_integrations()}
    assert set(rows) == IDS
    for row in rows.values():
        assert row.test_kind == "credential-exchange"
        assert row.exchange is not None
        names = [f.name for f in row.fields]
        assert names[0] == "api_key"
        assert row.fields[0].secret
        assert row.exchange.url_field in names
        url_field = next(f for f in row.fields if f.name == row.exchange.url_field)
        assert url_field.default
        assert url_field.default.startswith("https://")
        assert not url_field.secret
        assert row.vendor_env["api_key"].endswith("_API_KEY")
        res = KeyBook(
            {"k": KeySource("k", "user", lambda i, f: KEY if f == "api_key" else None)}, rows
        ).resolve(row.id)
        target = derive_target(row, res)
        assert target.host == urllib.parse.urlsplit(url_field.default).netloc


@pytest.mark.parametrize("vendor", VENDORS, ids=lambda v: v.id)
def test_each_vendors_key_check_against_a_fake_of_its_contract(vendor: Vendor) -> None:
    row = vendor.row()
    assert row.exchange is not None
    headers = {k: v.format(api_key=KEY) for k, v in row.exchange.headers.items()}
    query = {k: v.format(api_key=KEY) for k, v in row.exchange.query.items()}
    with FakeVendor(row.exchange.path, headers=headers, query=query) as fake:
        for key, ok in ((KEY, True), ("bu_wrong0123456789abcdefXX", False)):
            url_field = row.exchange.url_field
            values = {  # as `bay keys set` leaves them: the key pinned to the fake's origin
                "api_key": key,
                url_field: fake.url,
                url_field + PIN_SUFFIX: origin(fake.url),
            }
            book = KeyBook(
                {"k": KeySource("k", "user", lambda i, f, v=values: v.get(f))}, {row.id: row}
            )
            verdict = run_test(row, book.resolve(row.id))
            assert verdict.ok is ok, verdict
            assert verdict.host == fake.host
        assert len(fake.requests) == 2
        assert all(r.path == row.exchange.path for r in fake.requests)


def test_a_url_field_accepts_a_region_or_self_hosted_base_and_refuses_junk() -> None:
    (row,) = [r for r in plugin.bay_integrations() if r.id == "cloud:browserless"]
    url = next(f for f in row.fields if f.name == "api_url")
    check_value(row, url, "https://production-lon.browserless.io")
    check_value(row, url, "http://127.0.0.1:3000")
    from browserbay.refusals import Refusal

    with pytest.raises(Refusal):
        check_value(row, url, "production-lon.browserless.io")


def test_the_vendors_own_viewer_is_a_provider_view_target_where_documented() -> None:
    rows = {r.id: r for r in plugin.bay_providers()}
    viewers = {v.id for v in VENDORS if v.has_viewer}
    assert viewers == IDS - {"cloud:browserless"}  # Browserless documents no viewer URL
    for pid, row in rows.items():
        assert row.capabilities.provider_view is (pid in viewers)
    (transport,) = plugin.bay_live_view_transports()
    assert transport.target_kinds == ("provider-view",)
    assert transport.factory is None  # the page is the vendor's
