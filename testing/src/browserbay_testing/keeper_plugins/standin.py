"""A test provider for backend switches, loaded with BAY_PLUGIN_MODULES=standin.

``standin`` (tier 2) is the real Debian Chromium launched under another provider id — a
stand-in for a fingerprint browser, named so in the tests: stock Chromium ignores the seed.
Its row says it opens the same user-data-dir as ``chromium`` (``can_switch_to``), its
``check_options`` mints a fingerprint ``seed`` when the profile has none (a switch keeps
one the profile holds), and its browser carries the seed in its argv as the inert switch
``--bay-test-seed=<seed>`` so a test can read it from /proc.

Test knobs (environment of the keeper):

- ``BAY_TEST_STANDIN_MAJOR``: the Chromium major the row reports (default: the binary's
  ``--version``), to put the version ladder's target below what wrote a directory;
- ``BAY_TEST_STANDIN_GATE=<dir>``: while ``<dir>/armed`` exists, a launch writes
  ``<dir>/waiting`` and waits (without blocking the keeper) until ``<dir>/open`` exists — a
  test holds a switch in its gap this way;
- ``BAY_TEST_STANDIN_FAIL=<dir>``: while ``<dir>/fail`` exists, a launch is refused
  ``backend_unavailable`` (a switch must roll back).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio

from browserbay import sandbox
from browserbay.hookspecs import hookimpl
from browserbay.ladder import binary_major
from browserbay.model import Capabilities, LaunchSpec, ProviderRow
from browserbay.refusals import Refusal
from browserbay_chromium.driver import ChromiumHandle, browser_env, find_pid, launch_args
from browserbay_chromium.find import find_chromium

SEED_SWITCH = "--bay-test-seed="


def mint_seed(options: Mapping[str, str]) -> dict[str, str]:
    """The options to store: a seed minted once, when the profile has none."""
    given = dict(options)
    given.setdefault("seed", str(secrets.randbelow(2**31)))
    return given


def major() -> int | None:
    forced = os.environ.get("BAY_TEST_STANDIN_MAJOR")
    if forced:
        return int(forced)
    return binary_major(str(find_chromium()))


async def _gate() -> None:
    gate = os.environ.get("BAY_TEST_STANDIN_GATE")
    if not gate or not (Path(gate) / "armed").exists():
        return
    (Path(gate) / "waiting").write_text("")
    with anyio.fail_after(60):
        while not (Path(gate) / "open").exists():
            await anyio.sleep(0.05)


class StandinDriver:
    async def launch(self, playwright: Any, spec: LaunchSpec) -> ChromiumHandle:
        await _gate()
        fail = os.environ.get("BAY_TEST_STANDIN_FAIL")
        if fail and (Path(fail) / "fail").exists():
            raise Refusal(
                "backend_unavailable",
                provider="standin",
                reason="the test made its launch fail",
                fix=f"remove {fail}/fail",
            )
        for sub in (".config", ".cache", ".local/share", "tmp"):
            (spec.home / sub).mkdir(parents=True, exist_ok=True, mode=0o700)
        args = [*launch_args(spec), SEED_SWITCH + spec.options.get("seed", "none")]
        assert spec.user_data_dir is not None, "standin runs persistent profiles only"
        ctx = await playwright.chromium.launch_persistent_context(
            str(spec.user_data_dir),
            executable_path=str(find_chromium()),
            headless=spec.headless,
            args=args,
            env=browser_env(spec),
            handle_sigint=False,
            handle_sigterm=False,
            handle_sighup=False,
            **sandbox.PLAYWRIGHT_OPTIONS,  # as every launch of ours: no --no-sandbox but root's
        )
        pid = await anyio.to_thread.run_sync(find_pid, spec.browser_id)
        return ChromiumHandle(spec.browser_id, ctx.browser, ctx, pid)


@hookimpl
def bay_providers() -> list[ProviderRow]:
    return [
        ProviderRow(
            id="standin",
            tier=2,
            summary="test-only: Debian Chromium under another provider id (a stand-in)",
            capabilities=Capabilities(ephemeral_contexts=False, can_switch_to=("chromium",)),
            driver_factory=StandinDriver,
            check_options=mint_seed,
            browser_major=major,
        )
    ]
