"""A test-only plugin (BAY_PLUGIN_MODULES=mcp_plugin) whose verbs the MCP server must offer
as tools in the profile each names: ``greet`` (profile ``core``), ``shelve`` (no profile:
``all`` only) and ``wipe`` (the owner's alone: never a tool)."""

from __future__ import annotations

from typing import Any

from browserbay.hookspecs import hookimpl
from browserbay.model import PluginVerb, VerbContext
from browserbay.refusals import Refusal
from browserbay.verbs import PLUGIN, Arg, Verb


async def greet(ctx: VerbContext) -> tuple[dict[str, Any], str]:
    name = str(ctx.args["name"])
    if name == "nobody":
        raise Refusal(
            "usage",
            detail="greet needs someone to greet",
            verb="greet",
            way_out="bay greet Ada --loud  (or look with bay snapshot -i first)",
        )
    text = f"hello {name}" + ("!" if ctx.args.get("loud") else "")
    return {"greeted": name, "times": 1}, text


async def shelve(ctx: VerbContext) -> tuple[dict[str, Any], str]:
    return {}, "shelved"


async def wipe(ctx: VerbContext) -> tuple[dict[str, Any], str]:
    return {}, "wiped"


@hookimpl
def bay_verbs() -> list[PluginVerb]:
    return [
        PluginVerb(
            Verb(
                "greet",
                PLUGIN,
                "Test only: greet someone (refused for nobody, with a way out).",
                (Arg("name", "pos", "whom to greet"), Arg("loud", "flag", "with a bang")),
                tool_profile="core",
            ),
            greet,
            lease_free=True,
        ),
        PluginVerb(Verb("shelve", PLUGIN, "Test only: a tool of all."), shelve, lease_free=True),
        PluginVerb(
            Verb("wipe", PLUGIN, "Test only: the owner's alone.", owner_only=("*",)),
            wipe,
            lease_free=True,
        ),
    ]
