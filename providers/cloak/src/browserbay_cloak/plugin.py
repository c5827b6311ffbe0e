"""The ``cloak`` provider (tier 2: CloakBrowser, a per-profile fingerprint seed) and its
integration row. The driver is not written yet: the row says so (``not_runnable``), and the
licence key can be configured and checked first (``bay keys set cloak license_key``).

The key is optional (none = CloakBrowser's free tier). Its test is ``shape-only``: a real
probe would need the vendor binary and its network, which opening a key's test must not
trigger. The vendor reads the key from ``CLOAKBROWSER_LICENSE_KEY``, set only in the
environment of the one CloakBrowser process the keeper starts.
"""

from __future__ import annotations

from browserbay.hookspecs import hookimpl
from browserbay.model import Capabilities, IntegrationRow, KeyField, ProviderRow

NOT_RUNNABLE = (
    "the CloakBrowser driver is not written yet; its licence key can be configured now "
    "(bay keys set cloak license_key)"
)

CAPABILITIES = Capabilities(
    has_cdp=True,
    owns_dir=True,
    ephemeral_contexts=False,
    screenshots=True,
    key_scope="user_or_cluster",
    lease_kind="tab",
    headed=False,
    allowed_domains=True,
)


@hookimpl
def bay_providers() -> list[ProviderRow]:
    return [
        ProviderRow(
            id="cloak",
            tier=2,
            summary="CloakBrowser: a Chromium with a consistent per-profile fingerprint.",
            capabilities=CAPABILITIES,
            driver_factory=None,
            not_runnable=NOT_RUNNABLE,
        )
    ]


@hookimpl
def bay_integrations() -> list[IntegrationRow]:
    return [
        IntegrationRow(
            id="cloak",
            summary="CloakBrowser licence (optional: without one, the free tier)",
            fields=(
                KeyField(
                    "license_key",
                    secret=True,
                    required=False,
                    pattern=r"cb_[A-Za-z0-9_\-]{8,}",
                    help="a CloakBrowser licence key, cb_…",
                ),
            ),
            vendor_env={"license_key": "CLOAKBROWSER_LICENSE_KEY"},
            test_kind="shape-only",
        )
    ]
