"""The ``phone`` provider row and its ``bay doctor`` row: the two hooks this plugin implements
(``bay_providers``, ``bay_doctor_checks``). Registered through the ``browserbay`` entry-point
group (pyproject.toml: ``phone = "browserbay_phone.plugin"``)."""

from __future__ import annotations

from browserbay.hookspecs import hookimpl
from browserbay.model import Capabilities, DoctorCheck, ProviderRow
from browserbay_phone import find
from browserbay_phone.driver import PhoneDriver


def probe() -> str | None:
    """Cheap (``bay plugins`` runs it): is there a Chromium to launch? None when there is."""
    if find.chromium() is None:
        return f"no Chromium found; {find.INSTALL}"
    return None


@hookimpl
def bay_providers() -> list[ProviderRow]:
    return [
        ProviderRow(
            id="phone",
            tier=1,
            summary=f"A local Chromium emulating a phone ({find.device_name()}: viewport, user "
            "agent, touch, device scale), launched by the keeper over Playwright's pipe.",
            capabilities=Capabilities(
                has_cdp=True,
                owns_dir=True,
                ephemeral_contexts=True,
                screenshots=True,
                key_scope="none",
                lease_kind="tab",
                headed=False,
                allowed_domains=True,
            ),
            driver_factory=PhoneDriver,
            probe=probe,
        )
    ]


@hookimpl
def bay_doctor_checks() -> list[DoctorCheck]:
    path = find.chromium()
    if path is None:
        return [DoctorCheck("browser", "phone", "fail", "no Chromium found", find.INSTALL)]
    return [DoctorCheck("browser", "phone", "ok", f"{path}, emulating {find.device_name()}")]
