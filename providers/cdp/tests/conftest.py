"""Fixtures: somebody else's Chromium (a debugging port), a keeper, the demo site."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from browserbay.demo.server import serve
from providers.cdp.tests.cdp_helpers import DebugBrowser, start_debug_browser
from tests.helpers import Bay


@pytest.fixture(scope="module")
def demo() -> Iterator[str]:
    server, base = serve()
    yield base
    server.shutdown()


@pytest.fixture(scope="module")
def place() -> Iterator[Path]:
    """A short directory of the module's own (socket paths stay short)."""
    root = Path(tempfile.mkdtemp(prefix="bay-cdp-", dir="/tmp"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def debug_browser(place: Path) -> Iterator[DebugBrowser]:
    """Somebody else's Chromium. Its directory is ``<config>/chromium``, where
    ``--cdp-url auto`` looks when ``XDG_CONFIG_HOME`` is ``<config>``."""
    browser = start_debug_browser(place / "config" / "chromium")
    yield browser
    browser.close()


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
