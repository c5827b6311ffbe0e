"""A test plugin that adds verbs through bay_verbs: `greet` (no browser), `heading`
(reads the current page through ctx.page()) and `chatter` (progress lines, then its
answer: cli/tests/test_native.py)."""

from __future__ import annotations

from typing import Any

from browserbay.hookspecs import hookimpl
from browserbay.model import PluginVerb, VerbContext
from browserbay.refusals import Refusal
from browserbay.verbs import PLUGIN, Arg, Verb


async def greet(ctx: VerbContext) -> tuple[dict[str, Any], str]:
    name = str(ctx.args["name"])
    if name == "nobody":
        raise Refusal("target_not_found", target=name)
    text = f"hello {name}" + ("!" if ctx.args.get("shout") else "")
    return {"greeting": text, "session": ctx.session.id}, text


async def heading(ctx: VerbContext) -> tuple[dict[str, Any], str]:
    page = await ctx.page()
    text = await page.locator("h1").first.inner_text()
    return {"heading": text}, text


async def chatter(ctx: VerbContext) -> tuple[dict[str, Any], str]:
    for n in range(1, 4):
        await ctx.progress(f"step {n}/3 — ça avance")
    await ctx.progress(float("nan"))  # type: ignore[arg-type]  # a plugin that breaks the type
    return {"steps": 3}, "done: 3 steps ✓"


@hookimpl
def bay_verbs() -> list[PluginVerb]:
    return [
        PluginVerb(
            Verb(
                "greet",
                PLUGIN,
                "Say hello (a test plugin's verb).",
                (Arg("name", "pos", "who"), Arg("shout", "flag", "loudly")),
            ),
            greet,
        ),
        PluginVerb(
            Verb("heading", PLUGIN, "The page's first h1.", needs=("has_cdp",)),
            heading,
        ),
        PluginVerb(Verb("chatter", PLUGIN, "Progress lines, then an answer."), chatter),
    ]
