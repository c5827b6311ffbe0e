"""A test-only plugin (BAY_PLUGIN_MODULES=lv_emulate): ``bay emulate W H SCALE`` gives the
session's current page a CSS viewport and a device pixel ratio through CDP
``Emulation.setDeviceMetricsOverride`` (kept while its CDP session lives)."""

from __future__ import annotations

from typing import Any

from browserbay.hookspecs import hookimpl
from browserbay.model import PluginVerb, VerbContext
from browserbay.verbs import PLUGIN, Arg, Verb

_KEEP: list[Any] = []


async def emulate(ctx: VerbContext) -> tuple[dict[str, Any], str]:
    page = await ctx.page()
    cdp = await page.context.new_cdp_session(page)
    width, height = int(ctx.args["width"]), int(ctx.args["height"])
    scale = float(ctx.args["scale"])
    await cdp.send(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": scale, "mobile": False},
    )
    _KEEP.append(cdp)
    dpr = await page.evaluate("devicePixelRatio")
    return {"dpr": dpr, "width": width, "height": height}, f"dpr {dpr}"


@hookimpl
def bay_verbs() -> list[PluginVerb]:
    return [
        PluginVerb(
            Verb(
                "emulate",
                PLUGIN,
                "Test only: set the page's CSS viewport and device pixel ratio.",
                (
                    Arg("width", "pos", "CSS pixels", type="int"),
                    Arg("height", "pos", "CSS pixels", type="int"),
                    Arg("scale", "pos", "device pixel ratio", type="float"),
                ),
                needs=("has_cdp",),
            ),
            emulate,
        )
    ]
