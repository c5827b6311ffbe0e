"""The pytest plugin of browserbay's tests (entry point ``pytest11``: loaded wherever
browserbay-testing is installed). The fixtures every test directory used to copy into its own
conftest: the demo site, keepers of a test module's own or a test's own, somebody else's
Chromium, the human's browser for the live view, and a keeper run as ``nobody``."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browserbay.demo.server import serve
from browserbay_testing.asuser import AsUser, as_nobody
from browserbay_testing.bay import Bay
from browserbay_testing.cdp import DebugBrowser, start_debug_browser
from browserbay_testing.postgres import PgServer, pg_server
from browserbay_testing.remote import veth_address

CHROMIUM = "/usr/lib/chromium/chromium"


def short_home(prefix: str) -> Path:
    """A new directory under /tmp: short paths keep the socket path well under the AF_UNIX
    limit."""
    return Path(tempfile.mkdtemp(prefix=f"bay-{prefix}-", dir="/tmp"))


@contextlib.contextmanager
def keeper(prefix: str, **env: str) -> Iterator[Bay]:
    """A Bay on a home of its own; its keeper stopped (and waited for) and its home removed
    after."""
    b = Bay(short_home(prefix), **env)
    try:
        yield b
    finally:
        b.stop()
        shutil.rmtree(b.home, ignore_errors=True)


@pytest.fixture(scope="session")
def demo() -> Iterator[str]:
    """The bundled demo site on 127.0.0.1 (its base URL)."""
    server, base = serve()
    yield base
    server.shutdown()


@pytest.fixture(scope="module")
def bay() -> Iterator[Bay]:
    """One keeper shared by a test module (tests use distinct sessions)."""
    with keeper("m") as b:
        yield b


@pytest.fixture
def fresh_bay() -> Iterator[Bay]:
    """A keeper of its own, for tests that restart, kill or reconfigure it."""
    with keeper("f") as b:
        yield b


@pytest.fixture
def session_name(request: pytest.FixtureRequest) -> str:
    """A session id of this test's own."""
    return f"{request.node.name[:40]}-{os.getpid()}".replace("[", "-").replace("]", "")


@pytest.fixture(scope="module")
def place() -> Iterator[Path]:
    """A short directory of the module's own (socket paths stay short)."""
    root = short_home("p")
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def debug_browser(place: Path) -> Iterator[DebugBrowser]:
    """Somebody else's Chromium (a debugging port). Its directory is ``<config>/chromium``,
    where ``--cdp-url auto`` looks when ``XDG_CONFIG_HOME`` is ``<place>/config``."""
    browser = start_debug_browser(place / "config" / "chromium")
    yield browser
    browser.close()


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
    """The human's page for the live view, in a window of another aspect than the
    session's page (letterboxed)."""
    context = viewer_browser.new_context(viewport={"width": 1000, "height": 560})
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture(scope="module")
def remote_address() -> Iterator[str]:
    """A non-loopback IPv4 address of this machine (a veth end), for the module's tests."""
    with veth_address() as address:
        yield address


@pytest.fixture(scope="session")
def postgres() -> Iterator[PgServer]:
    """One real PostgreSQL server for the whole run (unix socket only, run as ``nobody``);
    a test takes a schema of its own with ``postgres.schema_url()``."""
    with pg_server() as server:
        yield server


@pytest.fixture
def nobody() -> Iterator[AsUser]:
    """The real CLI and keeper as the user ``nobody``, with a home of its own."""
    with as_nobody() as user:
        yield user
