"""A test plugin whose verb asks the session's browser itself (CDP, not the keeper's books)
how many contexts and page targets it holds: `browserside`."""

from __future__ import annotations

from typing import Any

from browserbay.hookspecs import hookimpl
from browserbay.model import PluginVerb, VerbContext
from browserbay.verbs import PLUGIN, Verb


async def browserside(ctx: VerbContext) -> tuple[dict[str, Any], str]:
    lease: Any = ctx.lease
    running = lease.browser if lease is not None else None
    if running is None or running.handle.browser is None:
        return {"browser": None, "contexts": 0, "pages": 0}, "no browser"
    cdp = await running.handle.browser.new_browser_cdp_session()
    try:
        contexts = (await cdp.send("Target.getBrowserContexts"))["browserContextIds"]
        targets = (await cdp.send("Target.getTargets"))["targetInfos"]
    finally:
        await cdp.detach()
    pages = [t for t in targets if t["type"] == "page"]
    data = {"browser": running.id, "contexts": len(contexts), "pages": len(pages)}
    return data, str(data)


@hookimpl
def bay_verbs() -> list[PluginVerb]:
    return [
        PluginVerb(
            Verb("browserside", PLUGIN, "What the session's browser itself holds (a test)."),
            browserside,
        )
    ]
