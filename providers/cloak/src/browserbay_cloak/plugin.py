"""The ``cloak`` provider (tier 2: CloakBrowser, a per-profile fingerprint seed) and its
integration row.

A cloak profile's fingerprint ``seed`` (and the ``platform`` its fingerprint presents) is
minted once, when ``bay new --provider cloak`` stores the profile (``check_options``), and
carried by every launch after it. The binary comes from ``CLOAKBROWSER_BINARY_PATH`` or the
vendor's cache; ``bay provider install cloak`` fetches it, only when asked.

The key is optional (none = CloakBrowser's free tier). Its test is ``shape-only``: a real
probe would need the vendor binary and its network, which opening a key's test must not
trigger. The vendor reads the key from ``CLOAKBROWSER_LICENSE_KEY``, set only in the
environment of the one CloakBrowser process the keeper starts.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from browserbay.hookspecs import hookimpl
from browserbay.ladder import binary_major, parse_major
from browserbay.model import (
    Capabilities,
    DoctorCheck,
    Installer,
    IntegrationRow,
    KeyField,
    ProviderRow,
)
from browserbay.refusals import Refusal
from browserbay_cloak import contract
from browserbay_cloak.driver import CloakDriver, Seats
from browserbay_cloak.find import find_binary

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


def check_options(given: Mapping[str, str]) -> dict[str, str]:
    """The profile's options with its fingerprint minted once: a stored seed and platform
    are answered unchanged (so a switch back to cloak keeps them), a missing one is minted."""
    options = dict(given)
    if "seed" in options and not contract.valid_seed(options["seed"]):
        raise Refusal(
            "usage",
            detail=f"a fingerprint seed is a number from {contract.SEED_MIN} to "
            f"{contract.SEED_MAX}",
            verb="new",
        )
    options.setdefault("seed", contract.mint_seed())
    options.setdefault("platform", contract.default_fingerprint_platform())
    return options


def probe() -> str | None:
    try:
        find_binary()
    except Refusal as exc:
        return f"{exc.fields.get('reason')}; {exc.fields.get('fix')}"
    return None


@hookimpl
def bay_doctor_checks() -> list[DoctorCheck]:
    """Where the CloakBrowser binary is, or how to install it. Never runs the binary (a Pro
    build checks its licence with the vendor at start)."""
    try:
        path = find_binary()
    except Refusal as exc:
        reason, fix = str(exc.fields.get("reason")), str(exc.fields.get("fix"))
        return [DoctorCheck("browser", "cloak", "warn", f"tier 2 unavailable: {reason}", fix)]
    return [DoctorCheck("browser", "cloak", "ok", str(path))]


def browser_major() -> int | None:
    """The Chromium major of the binary a launch would use, for the version ladder of ``bay
    backend cloak``: read from the vendor's cache directory name (``chromium-146.0.7680.177.5``)
    without running anything; only a binary named by ``CLOAKBROWSER_BINARY_PATH`` outside that
    layout is asked ``--version`` (with no licence key in its environment). None: no binary,
    or it cannot tell."""
    try:
        path = find_binary()
    except Refusal:
        return None
    for parent in path.parents[:4]:  # chromium-<version>[-pro]/chrome (or a macOS bundle)
        if parent.name.startswith("chromium-") and (major := parse_major(parent.name)):
            return major
    return binary_major(str(path))


def install(installer: Installer) -> str:
    from browserbay_cloak.install import install as run

    return run(installer)


@hookimpl
def bay_providers() -> list[ProviderRow]:
    """Called once per load (one keeper): the row's drivers share that load's seat count."""
    return [
        ProviderRow(
            id="cloak",
            tier=2,
            summary="CloakBrowser: a Chromium with a consistent per-profile fingerprint.",
            capabilities=CAPABILITIES,
            driver_factory=functools.partial(CloakDriver, Seats()),
            probe=probe,
            check_options=check_options,
            install=install,
            browser_major=browser_major,
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
            vendor_env={"license_key": contract.LICENSE_ENV},
            test_kind="shape-only",
        )
    ]
