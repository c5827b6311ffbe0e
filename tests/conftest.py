from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from browserbay.demo.server import serve
from tests.helpers import Bay


@pytest.fixture(scope="session")
def demo() -> Iterator[str]:
    server, base = serve()
    yield base
    server.shutdown()


def _short_home(prefix: str) -> Path:
    # Short paths keep the socket path well under the AF_UNIX limit.
    return Path(tempfile.mkdtemp(prefix=f"bay-{prefix}-", dir="/tmp"))


@pytest.fixture(scope="module")
def bay() -> Iterator[Bay]:
    """One keeper shared by a test module (tests use distinct sessions)."""
    home = _short_home("m")
    b = Bay(home)
    yield b
    b.stop()
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def fresh_bay() -> Iterator[Bay]:
    """A keeper of its own, for tests that restart, kill or reconfigure it."""
    home = _short_home("f")
    b = Bay(home)
    yield b
    b.stop()
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def session_name(request: pytest.FixtureRequest) -> str:
    return f"{request.node.name[:40]}-{os.getpid()}".replace("[", "-").replace("]", "")
