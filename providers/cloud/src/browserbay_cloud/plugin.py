"""``cloud:<vendor>`` providers (tier 2: a vendor's hosted browser over CDP) and their
integration rows. The driver is not written yet: every row says so (``not_runnable``), and
the keys can be configured and tested first (``bay keys set cloud:steel api_key``,
``bay keys test cloud:steel``).

Each key test is a ``credential-exchange``: one read-only request to the host inside the
row's own URL field (the vendor's documented default, or what the user set), nothing else.
"""

from __future__ import annotations

from browserbay.hookspecs import hookimpl
from browserbay.model import Capabilities, IntegrationRow, ProviderRow
from browserbay_cloud.vendors import VENDORS

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


@hookimpl
def bay_providers() -> list[ProviderRow]:
    return [
        ProviderRow(
            id=v.id,
            tier=2,
            summary=f"{v.title}: a hosted browser reached over CDP.",
            capabilities=CAPABILITIES,
            driver_factory=None,
            not_runnable=(
                f"the {v.title} driver is not written yet; its key can be configured and "
                f"tested now (bay keys set {v.id} api_key; bay keys test {v.id})"
            ),
        )
        for v in VENDORS
    ]


@hookimpl
def bay_integrations() -> list[IntegrationRow]:
    return [v.row() for v in VENDORS]
