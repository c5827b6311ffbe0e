"""A test provider that needs a key, loaded with BAY_PLUGIN_MODULES=keyed.

- ``keyed``: a real Chromium (the chromium driver) whose row has ``key_scope`` from
  $BAY_TEST_KEY_SCOPE (default ``user``) and an integration row ``keyed`` with one secret
  field, ``api_key``, handed to the browser as ``KEYED_VENDOR_API_KEY``. The keeper must
  resolve the key at launch and put it only in that child's environment.
- ``keyed-remote``: the same need, on a ``remote_host``: refused ``provider_needs_local_key``
  before anything is resolved (its driver fails the test if it is ever called).
- a ``keyed-calls`` key source (user precedence, read-only, holds nothing) that appends each
  ``get(integration, field)`` it is asked — names only, never a value — to $BAY_KEYED_CALLS,
  so a test can count resolutions.
"""

from __future__ import annotations

import os

from browserbay.hookspecs import hookimpl
from browserbay.model import Capabilities, IntegrationRow, KeyField, KeySource, ProviderRow
from browserbay_chromium.driver import ChromiumDriver

VENDOR_ENV = "KEYED_VENDOR_API_KEY"


class NeverDriver:
    async def launch(self, playwright: object, spec: object) -> object:
        raise AssertionError("a remote key-bearing provider reached its driver")


@hookimpl
def bay_providers() -> list[ProviderRow]:
    scope = os.environ.get("BAY_TEST_KEY_SCOPE", "user")
    return [
        ProviderRow(
            id="keyed",
            tier=1,
            summary="test-only: a Chromium that needs a key",
            capabilities=Capabilities(key_scope=scope),  # type: ignore[arg-type]
            driver_factory=ChromiumDriver,
        ),
        ProviderRow(
            id="keyed-remote",
            tier=1,
            summary="test-only: needs a key, runs on another machine",
            capabilities=Capabilities(key_scope="user", remote_host=True),
            driver_factory=NeverDriver,  # type: ignore[arg-type]
        ),
    ]


@hookimpl
def bay_integrations() -> list[IntegrationRow]:
    return [
        IntegrationRow(
            "keyed",
            (KeyField("api_key", secret=True, pattern=r"kd_[A-Za-z0-9]{16,}"),),
            vendor_env={"api_key": VENDOR_ENV},
            summary="test-only integration",
        )
    ]


def _count(integration_id: str, field: str) -> str | None:
    path = os.environ.get("BAY_KEYED_CALLS")
    if path:
        with open(path, "a") as f:
            f.write(f"{integration_id} {field}\n")
    return None


@hookimpl
def bay_key_sources() -> list[KeySource]:
    return [KeySource("keyed-calls", "user", _count, order=1)]
