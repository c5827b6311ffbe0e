"""keys-env: cluster defaults from BAY_INTEGRATION_<ID>_<FIELD> and the BAY_INTEGRATIONS list,
read from the keeper's sealed snapshot (never from a child's environment)."""

from __future__ import annotations

import json

import pytest

from browserbay import keys
from browserbay.keys import seal_environment
from browserbay.model import KeySource
from browserbay_keys_env import plugin
from browserbay_keys_env.plugin import ClusterEnvError, lookup, parse_integrations

KEY = "sk_cluster0123456789abcd"


def test_the_source_row_is_a_cluster_default() -> None:
    (source,) = plugin.bay_key_sources()
    assert isinstance(source, KeySource)
    assert (source.name, source.precedence, source.set, source.delete) == (
        "env",
        "cluster",
        None,
        None,
    )


def test_one_variable_per_field_with_the_id_spelled_in_capitals() -> None:
    env = {"BAY_INTEGRATION_CLOUD_BROWSER_USE_API_KEY": KEY}
    assert lookup(env, "cloud:browser-use", "api_key") == KEY
    assert lookup(env, "cloud:browser-use", "api_url") is None
    assert lookup(env, "cloud:steel", "api_key") is None


def test_a_json_list_for_many_rows_and_the_single_variable_wins() -> None:
    listing = json.dumps(
        [
            {"id": "cloud:steel", "values": {"api_key": "from-list-steel-0123"}},
            {"id": "cloak", "values": {"license_key": "cb_fromlist0123"}},
        ]
    )
    env = {"BAY_INTEGRATIONS": listing, "BAY_INTEGRATION_CLOUD_STEEL_API_KEY": KEY}
    assert lookup(env, "cloak", "license_key") == "cb_fromlist0123"
    assert lookup(env, "cloud:steel", "api_key") == KEY
    assert parse_integrations(listing)["cloud:steel"] == {"api_key": "from-list-steel-0123"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"id": "x"}', "is not a list"),
        ("[{oops", "is not JSON"),
        ('[{"id": "x"}]', "lacks an id or values"),
        ('[{"id": "x", "values": {"api_key": 7}}]', "must be strings"),
    ],
)
def test_a_malformed_list_is_named_without_its_content(text: str, message: str) -> None:
    with pytest.raises(ClusterEnvError, match=message) as info:
        parse_integrations(text)
    assert "oops" not in str(info.value)


def test_the_source_reads_the_sealed_snapshot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keys, "_sealed", None)
    monkeypatch.setenv("BAY_INTEGRATION_CLOAK_LICENSE_KEY", "cb_sealed0123")
    import os

    seal_environment()
    assert "BAY_INTEGRATION_CLOAK_LICENSE_KEY" not in os.environ
    assert plugin.get("cloak", "license_key") == "cb_sealed0123"
