"""``cloud:<vendor>`` providers (tier 2: a vendor's hosted browser over CDP) and their
integration rows. A browser is a session created through the vendor's REST API, reached over
CDP and released at stop (see :mod:`browserbay_cloud.driver`); keys are configured and tested
with ``bay keys set cloud:steel api_key`` and ``bay keys test cloud:steel``.

Each key test is a ``credential-exchange``: one read-only request to the host inside the
row's own URL field (the vendor's documented default, or what the user set), nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from browserbay.hookspecs import hookimpl
from browserbay.model import Capabilities, Driver, IntegrationRow, ProviderRow, TransportRow
from browserbay_cloud.vendors import VENDORS, Vendor

PROVIDER_VIEW = "provider-view"

CAPABILITIES = Capabilities(
    has_cdp=True,
    owns_dir=False,
    ephemeral_contexts=False,
    screenshots=True,
    key_scope="user_or_cluster",
    lease_kind="tab",
    headed=False,
    allowed_domains=False,
)


def driver_factory(vendor: Vendor) -> Callable[[], Driver]:
    """The vendor's driver, imported at its first launch (httpx and Playwright stay out of
    the keeper's start)."""

    def make() -> Driver:
        from browserbay_cloud.driver import CloudDriver

        return CloudDriver(vendor)

    return make


@hookimpl
def bay_providers() -> list[ProviderRow]:
    return [
        ProviderRow(
            id=v.id,
            tier=2,
            summary=f"{v.title}: a hosted browser session, created through its API, reached "
            "over CDP, released at stop.",
            capabilities=replace(CAPABILITIES, provider_view=v.has_viewer),
            driver_factory=driver_factory(v),
        )
        for v in VENDORS
    ]


@hookimpl
def bay_integrations() -> list[IntegrationRow]:
    return [v.row() for v in VENDORS]


@hookimpl
def bay_live_view_transports() -> list[TransportRow]:
    return [
        TransportRow(
            PROVIDER_VIEW,
            "the vendor's own live viewer of a cloud session (a URL it hosts; bay live answers "
            "it for providers with the provider_view cell)",
            (PROVIDER_VIEW,),
        )
    ]
