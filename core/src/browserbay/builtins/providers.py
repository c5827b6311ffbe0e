"""``bay provider install <id>``: fetch what a provider needs to run (the CloakBrowser
binary), only when the user asks — a built-in plugin verb over ``ProviderRow.install``.

The provider's own ``install`` does the work in a worker thread (never on the keeper's
loop), says its progress as lines the client prints, checks what it fetched (the vendor's
signature and checksum) and leaves nothing installed when a check fails.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import anyio.from_thread

from browserbay.hookspecs import hookimpl
from browserbay.model import Installer, PluginVerb, VerbContext
from browserbay.refusals import Refusal
from browserbay.verbs import PLUGIN, Arg, Verb

PROVIDER_VERB = Verb(
    "provider",
    PLUGIN,
    "Provider set-up: install <id> fetches what it needs to run (the cloak provider's "
    "browser), with a progress bar and the vendor's signature check. Nothing is downloaded "
    "unless you run this.",
    (
        Arg("action", "pos", "install", choices=("install",)),
        Arg("id", "pos", "a provider id (bay plugins lists them)"),
    ),
    mutates=True,
    owner_only=("*",),  # a download installed for every session of the keeper
    example="bay provider install cloak --timeout 1800",
)


async def provider_verb(ctx: VerbContext) -> tuple[dict[str, Any], str]:
    ident = str(ctx.args["id"])
    row = ctx.providers.get(ident)
    if row is None:
        raise Refusal(
            "backend_unavailable",
            provider=ident,
            reason="no installed plugin provides it",
            fix="bay plugins   (lists the providers you can use)",
        )
    if row.install is None:
        raise Refusal(
            "usage",
            detail=f"the {ident} provider has nothing to install",
            verb="provider",
        )
    install = row.install

    async def progress(line: str) -> None:
        await ctx.progress(line)

    def say(line: str) -> None:
        anyio.from_thread.run(progress, line)

    # A second behind the verb's own deadline, so the installer stops (and cleans up) first.
    installer = Installer(say=say, deadline=ctx.deadline - 1.0)
    started = time.monotonic()
    text = await anyio.to_thread.run_sync(install, installer)
    elapsed = round(time.monotonic() - started, 1)
    return {"provider": ident, "installed": text, "elapsed_s": elapsed}, text


@hookimpl
def bay_verbs() -> list[PluginVerb]:
    return [PluginVerb(PROVIDER_VERB, provider_verb, while_paused=True, lease_free=True)]
