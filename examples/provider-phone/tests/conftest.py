import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# Not a workspace member: inside the browserbay repository its tests import it from its source
# tree. Installed (pip install ./examples/provider-phone), the installed package is found first.
try:
    import browserbay_phone  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


@pytest.fixture(scope="session")
def demo_url() -> Iterator[str]:
    """The demo site that ships with browserbay-core, on 127.0.0.1."""
    from browserbay.demo.server import serve

    server, base = serve()
    yield f"{base}/form.html"
    server.shutdown()
