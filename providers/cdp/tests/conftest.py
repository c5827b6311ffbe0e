"""Fixtures: a keeper on somebody else's Chromium (``place``, ``debug_browser`` and the demo
site come from the browserbay-testing pytest plugin)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from browserbay_testing import Bay
from browserbay_testing.cdp import DebugBrowser


@pytest.fixture(scope="module")
def cbay(place: Path, debug_browser: DebugBrowser) -> Iterator[Bay]:
    """One keeper for the module (its tests use distinct sessions)."""
    b = Bay(place / "bay", XDG_CONFIG_HOME=str(place / "config"))
    yield b
    b.stop()


@pytest.fixture(scope="module")
def work(cbay: Bay, debug_browser: DebugBrowser) -> str:
    """A cdp profile on the debug browser (its id)."""
    return str(cbay.ok("new", "work", "--provider", "cdp", "--cdp-url", debug_browser.http)["id"])
