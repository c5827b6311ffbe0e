from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from browserbay.demo.server import serve
from tests.helpers import TEST_PLUGINS, Bay

HERE = Path(__file__).resolve().parent
CHROMIUM = "/usr/lib/chromium/chromium"


def make_bay(prefix: str, **env: str) -> Bay:
    home = Path(tempfile.mkdtemp(prefix=f"bay-{prefix}-", dir="/tmp"))
    return Bay(
        home,
        PYTHONPATH=f"{TEST_PLUGINS}{os.pathsep}{HERE}",
        BAY_PLUGIN_MODULES="recorder,lv_emulate",
        **env,
    )


def end_bay(b: Bay) -> None:
    b.stop()
    shutil.rmtree(b.home, ignore_errors=True)


@pytest.fixture(scope="module")
def demo() -> Iterator[str]:
    server, base = serve()
    yield base
    server.shutdown()


@pytest.fixture(scope="module")
def lbay() -> Iterator[Bay]:
    """One keeper for the module's tests (each test acts as its own session)."""
    b = make_bay("lv")
    yield b
    end_bay(b)


@pytest.fixture
def bay_with() -> Iterator[Callable[..., Bay]]:
    """Keepers of their own, configured through the environment."""
    made: list[Bay] = []

    def make(**env: str) -> Bay:
        made.append(make_bay("lvf", **env))
        return made[-1]

    yield make
    for b in made:
        end_bay(b)


@pytest.fixture(scope="module")
def viewer_browser() -> Iterator[Any]:
    """The human's browser: a second Chromium, driven by Playwright in the test process."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        exe = CHROMIUM if Path(CHROMIUM).exists() else None
        browser = pw.chromium.launch(
            executable_path=exe,
            args=["--no-sandbox", "--disable-background-networking", "--no-first-run"],
        )
        yield browser
        browser.close()


@pytest.fixture
def viewer(viewer_browser: Any) -> Iterator[Any]:
    """A viewer page whose window has another aspect than the session's page (letterboxed)."""
    context = viewer_browser.new_context(viewport={"width": 1000, "height": 560})
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def session(request: pytest.FixtureRequest) -> str:
    return f"lv-{request.node.name[:40]}-{os.getpid()}".replace("[", "-").replace("]", "")
