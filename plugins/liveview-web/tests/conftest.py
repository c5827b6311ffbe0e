from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from browserbay_testing import KEEPER_PLUGINS, Bay

HERE = Path(__file__).resolve().parent
CHROMIUM = "/usr/lib/chromium/chromium"


def make_bay(prefix: str, **env: str) -> Bay:
    home = Path(tempfile.mkdtemp(prefix=f"bay-{prefix}-", dir="/tmp"))
    return Bay(
        home,
        PYTHONPATH=f"{KEEPER_PLUGINS}{os.pathsep}{HERE}",
        BAY_PLUGIN_MODULES="recorder,lv_emulate",
        **env,
    )


def end_bay(b: Bay) -> None:
    b.stop()
    shutil.rmtree(b.home, ignore_errors=True)


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


@pytest.fixture
def session(request: pytest.FixtureRequest) -> str:
    return f"lv-{request.node.name[:40]}-{os.getpid()}".replace("[", "-").replace("]", "")
