"""Issue 15, item 2 against the FAKE vendors (``fakecloud.FakeCloud``), through the real
keeper and ``bay``: a user's cloud key goes only to the host it was stored for (an agent that
points ``api_url`` at its own listener and starts a browser gets nothing), and no URL carrying
the key leaves the keeper (``bay live`` on a vendor whose viewer URL holds the key in its
query hands out the keeper's own screencast link instead; the answer, the keeper log and the
registry never hold the key)."""

from __future__ import annotations

import json
import shutil
import tempfile
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from browserbay.paths import bay_paths
from browserbay_cloud.vendors import VENDORS
from browserbay_testing import Bay, assert_refused
from browserbay_testing.fakevendor import Listener
from providers.cloud.tests.fakecloud import FakeCloud

KEY = "sk_fakeKEY+0123456789/abcdefGHIJ"
STEEL = next(v for v in VENDORS if v.name == "steel")

pytestmark = pytest.mark.browser


@pytest.fixture
def bay() -> Iterator[Bay]:
    root = Path(tempfile.mkdtemp(prefix="bay-cloudkeys-", dir="/tmp"))
    b = Bay(
        root,
        BAY_BROWSER_GRACE="1",
        BAY_TICK="0.5",
        DBUS_SESSION_BUS_ADDRESS=f"unix:path={root}/no-bus",  # the user store: the file
    )
    yield b
    b.stop()
    shutil.rmtree(root, ignore_errors=True)


def _set(b: Bay, field: str, value: str) -> None:
    b.ok("keys", "set", STEEL.id, field, stdin=value + "\n")


def _no_key_in(b: Bay, *answers: str) -> None:
    quoted = urllib.parse.quote(KEY, safe="")
    for text in answers:
        assert KEY not in text, text
        assert quoted not in text, text
    for path in b.home.rglob("*"):  # the keeper log, the registry (audit) and its WAL
        if path.is_file() and path.name not in ("keys.json", "keys.key"):
            data = path.read_bytes()
            assert KEY.encode() not in data, path
            assert quoted.encode() not in data, path
    registry = bay_paths({"BAY_HOME": str(b.home)}).registry
    assert registry.exists()
    assert (b.home / "state" / "keeper.log").exists() or list(b.home.rglob("keeper.log"))


def test_a_browser_start_never_sends_the_key_to_a_changed_api_url(bay: Bay, demo: str) -> None:
    with FakeCloud(STEEL, KEY) as fake, Listener() as listener:
        _set(bay, "api_url", fake.url)
        _set(bay, "api_key", KEY)
        profile = bay.ok("new", "c-steel", "--provider", STEEL.id)["id"]
        bay.ok("use", profile)
        # The negative control: the host the key was stored for starts the browser.
        assert bay.ok("open", f"{demo}/shop.html")["title"] == "Shop"
        (sid,) = fake.sessions
        bay.ok("close")
        fake.wait_released(sid)
        # The attack: api_url pointed at the agent's own listener, then a browser start.
        _set(bay, "api_url", listener.url)
        started = bay("open", f"{demo}/shop.html")
        assert not listener.got(KEY), "the listener received the stored key"
        assert listener.received == []
        assert_refused(started, "backend_no_key")
        assert list(fake.sessions) == [sid]


def test_bay_live_never_hands_out_a_viewer_url_that_carries_the_key(bay: Bay) -> None:
    with FakeCloud(STEEL, KEY, viewer_query="apiKey") as fake:
        _set(bay, "api_url", fake.url)
        _set(bay, "api_key", KEY)
        profile = bay.ok("new", "c-live", "--provider", STEEL.id)["id"]
        bay.ok("use", profile)
        live = bay("live")
        text = bay("live", json_=False)
        assert live.code == 0, live
        _no_key_in(bay, live.stdout, live.stderr, text.stdout, text.stderr)
        frame = json.loads(live.stdout)
        # The vendor's viewer would need the key in its URL: the keeper's own screencast
        # link (127.0.0.1, one use) is handed out instead, and says why.
        assert frame["data"]["transport"] == "web"
        assert frame["data"]["url"].startswith("http://127.0.0.1:")
        assert fake.url not in frame["data"]["url"]
        assert "credential" in text.stdout
        audit = bay.ok("audit")
        _no_key_in(bay, json.dumps(audit))
        bay.ok("close")


def test_a_key_stored_without_a_pin_starts_no_browser_off_the_documented_host(bay: Bay) -> None:
    """A key written before pins (or by another tool) beside a URL that is not the vendor's
    documented host: the launch is refused by name and nothing is sent."""
    from browserbay_keys_file.store import FileStore

    with Listener() as listener:
        store = FileStore(bay_paths({"BAY_HOME": str(bay.home)}).data / "keys")
        store.set(STEEL.id, "api_key", KEY)
        store.set(STEEL.id, "api_url", listener.url)
        bay.ok("use", bay.ok("new", "c-nopin", "--provider", STEEL.id)["id"])
        frame = assert_refused(bay("open", "about:blank"), "key_host_mismatch")
        assert frame["data"]["pinned"] == STEEL.api_url
        assert listener.received == []
