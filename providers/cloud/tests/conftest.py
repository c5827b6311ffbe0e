"""Fixtures: the demo site (a page with a known title) for the FAKE vendors' browsers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from browserbay.demo.server import serve


@pytest.fixture(scope="module")
def demo() -> Iterator[str]:
    server, base = serve()
    yield base
    server.shutdown()
