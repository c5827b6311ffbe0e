"""A test provider row with no CDP (like a native-window provider): page verbs must be
refused by capability before anything runs. Its driver is never called."""

from __future__ import annotations

from browserbay.hookspecs import hookimpl
from browserbay.model import Capabilities, ProviderRow


class NeverDriver:
    async def launch(self, playwright: object, spec: object) -> object:
        raise AssertionError("a verb needing has_cdp reached a provider without it")


@hookimpl
def bay_providers() -> list[ProviderRow]:
    return [
        ProviderRow(
            id="windowish",
            tier=3,
            summary="test-only provider without CDP",
            capabilities=Capabilities(has_cdp=False, ephemeral_contexts=False, lease_kind="window"),
            driver_factory=NeverDriver,  # type: ignore[arg-type]
        )
    ]
