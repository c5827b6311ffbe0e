"""The ``chromium`` provider row (tier 1): a local Chromium/Chrome/Edge the keeper launches."""

from __future__ import annotations

from browserbay.hookspecs import hookimpl
from browserbay.ladder import binary_major
from browserbay.model import Capabilities, DoctorCheck, ProviderRow
from browserbay_chromium.doctor import browser_checks
from browserbay_chromium.driver import ChromiumDriver
from browserbay_chromium.find import NotFound, find_chromium


def browser_major() -> int | None:
    """The Chromium major of the binary the driver would launch (``--version``, cached)."""
    try:
        return binary_major(str(find_chromium()))
    except NotFound:
        return None


def probe() -> str | None:
    try:
        find_chromium()
    except NotFound as exc:
        return f"{exc.reason}; {exc.fix}"
    return None


@hookimpl
def bay_providers() -> list[ProviderRow]:
    return [
        ProviderRow(
            id="chromium",
            tier=1,
            summary="A local Chromium/Chrome/Edge launched by the keeper over Playwright's pipe.",
            capabilities=Capabilities(
                has_cdp=True,
                owns_dir=True,
                ephemeral_contexts=True,
                screenshots=True,
                key_scope="none",
                can_switch_to=("cloak",),
                lease_kind="tab",
                headed=False,
                allowed_domains=True,
            ),
            driver_factory=ChromiumDriver,
            probe=probe,
            browser_major=browser_major,
        )
    ]


@hookimpl
def bay_doctor_checks() -> list[DoctorCheck]:
    """The browser this provider would launch, and that it runs."""
    return browser_checks()
