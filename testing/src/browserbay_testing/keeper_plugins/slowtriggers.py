"""A fault injector, loaded into the keeper with BAY_PLUGIN_MODULES=slowtriggers: every
trigger request waits :data:`DELAY` seconds between its claim in the registry and its action,
so a test can kill the keeper in that window and check the ``uncertain`` answer after the
restart. Product code has no such knob; this module installs it when the keeper imports it
(a monkeypatch of ``TriggerIntake._act``, for the keeper's whole life) and registers no hook."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from browserbay.keeper.triggers import TriggerIntake

#: Seconds between a request's claim and its action.
DELAY = 3.0

_act = TriggerIntake._act


async def _slow_act(self: TriggerIntake, request: dict[str, Any]) -> dict[str, Any]:
    await anyio.sleep(DELAY)
    return await _act(self, request)


pytest.MonkeyPatch().setattr(TriggerIntake, "_act", _slow_act)
