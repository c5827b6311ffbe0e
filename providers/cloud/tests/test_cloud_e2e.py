"""cloud:<vendor> profiles end to end through the real keeper and ``bay``, against FAKE vendors
(``fakecloud.FakeCloud``: local servers playing each vendor's documented session API; a real
local Chromium behind each session). The real services are never reached from here.

One keeper for the module, its keys given as cluster defaults (``BAY_INTEGRATION_*``) that
point each row's URL field at its fake. One Chromium per vendor for the round trip, one more
for the browser the vendor drops.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from browserbay.keys import env_name
from browserbay_cloud.vendors import VENDORS, Vendor
from browserbay_testing import Bay, assert_refused
from providers.cloud.tests.fakecloud import FakeCloud

KEY = "bu_fakeKEY0123456789abcdefGHIJ"
WRONG = "bu_wrongKEY0123456789abcdefXY"
BY_NAME = {v.name: v for v in VENDORS}

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def place() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="bay-cloud-", dir="/tmp"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def fakes() -> Iterator[dict[str, FakeCloud]]:
    made = {v.name: FakeCloud(v, KEY).__enter__() for v in VENDORS}
    yield made
    for fake in made.values():
        fake.__exit__(None, None, None)


def keys_for(vendor: Vendor, fake: FakeCloud, key: str) -> dict[str, str]:
    return {
        env_name(vendor.id, "api_key"): key,
        env_name(vendor.id, vendor.url_field): fake.url,
        env_name(vendor.id, "project_id"): "proj-fake",
    }


@pytest.fixture(scope="module")
def bay(place: Path, fakes: dict[str, FakeCloud]) -> Iterator[Bay]:
    env: dict[str, str] = {"BAY_BROWSER_GRACE": "1", "BAY_TICK": "0.5"}
    for vendor in VENDORS:
        env.update(keys_for(vendor, fakes[vendor.name], KEY))
    b = Bay(place / "bay", **env)
    yield b
    b.stop()


@pytest.mark.parametrize("vendor", VENDORS, ids=lambda v: v.id)
def test_open_a_page_then_a_failing_verb_then_close_releases_the_session(
    vendor: Vendor, bay: Bay, fakes: dict[str, FakeCloud], demo: str
) -> None:
    fake = fakes[vendor.name]
    profile = bay.ok("new", f"c-{vendor.name}", "--provider", vendor.id)["id"]
    who = f"s-{vendor.name}"
    bay.ok("use", profile, session=who)
    opened = bay.ok("open", f"{demo}/shop.html", session=who)
    assert opened["title"] == "Shop"
    (sid,) = fake.sessions
    assert fake.live() == [sid]
    live = bay.ok("live", session=who)
    if vendor.has_viewer:  # the vendor's own viewer, as its create (or view) call answered
        assert live["transport"] == "provider-view"
        assert live["url"] == f"{fake.url}/live/{sid}"
    else:  # Browserless documents none: the CDP-screencast link of the web transport
        assert live["transport"] == "web"
        assert live["url"].startswith("http://127.0.0.1:")
        assert fake.url not in live["url"]
    # A verb that fails in the vendor's page (at once: nothing waits on a clock).
    failed = bay("eval", "(() => { throw new Error('on purpose') })()", session=who)
    assert "on purpose" in assert_refused(failed, "action_failed")["message"]
    assert fake.released == []  # a failed verb leaves the session to its owner
    bay.ok("close", session=who)
    assert fake.wait_released(sid) == ("release" if vendor.contract.release else "disconnect")
    assert fake.live() == []
    assert fake.launches == 1
    logs = list(bay.home.rglob("*.log"))
    assert logs
    for path in logs:  # neither the key nor a CDP URL carrying it
        text = path.read_text(errors="replace")
        assert KEY not in text, path
        assert "apiKey=" not in text, path
        assert "token=" not in text, path
    for path in bay.home.rglob("*"):  # the registry, its WAL, kept tabs, traces: no key
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    assert KEY not in bay("status", session=who).stdout


def test_a_browser_the_vendor_drops_is_released_and_the_next_verb_gets_a_new_one(
    bay: Bay, fakes: dict[str, FakeCloud], demo: str
) -> None:
    vendor = BY_NAME["hyperbrowser"]
    fake = fakes[vendor.name]
    profile = bay.ok("new", "c-dropped", "--provider", vendor.id)["id"]
    before = set(fake.sessions)
    bay.ok("use", profile, session="s-drop")
    live = bay.ok("live", session="s-drop")  # before any page verb: it starts the browser
    (first,) = set(fake.sessions) - before
    assert live["url"] == f"{fake.url}/live/{first}"
    bay.ok("open", f"{demo}/shop.html", session="s-drop")
    assert set(fake.sessions) - before == {first}
    fake.kill(first)  # the vendor's timeout or crash: not a release we asked for
    # The keeper saw the disconnect and made the documented release call anyway.
    assert fake.wait_released(first) == "release"
    again = bay.ok("open", f"{demo}/form.html", session="s-drop")
    assert again["title"] == "Sign up"
    (second,) = set(fake.sessions) - before - {first}
    assert fake.live() == [second]
    assert bay.ok("live", session="s-drop")["url"] == f"{fake.url}/live/{second}"
    bay.ok("close", session="s-drop")
    fake.wait_released(second)


@pytest.fixture(scope="module")
def misconfigured(place: Path, fakes: dict[str, FakeCloud]) -> Iterator[Bay]:
    """A keeper whose Steel row has no key at all and whose Kernel key is wrong; sessions that
    ask for nothing get an ephemeral Browser Use browser (its key is right)."""
    env = keys_for(BY_NAME["kernel"], fakes["kernel"], WRONG)
    env.update(keys_for(BY_NAME["browser-use"], fakes["browser-use"], KEY))
    env[env_name("cloud:steel", "api_url")] = fakes["steel"].url
    env.update(BAY_DEFAULT_PROVIDER="cloud:browser-use", BAY_BROWSER_GRACE="1", BAY_TICK="0.5")
    b = Bay(place / "bay-misconfigured", **env)
    yield b
    b.stop()


def test_a_missing_key_is_the_keys_refusal_with_its_way_out(
    misconfigured: Bay, fakes: dict[str, FakeCloud], demo: str
) -> None:
    profile = misconfigured.ok("new", "c-nokey", "--provider", "cloud:steel")["id"]
    seen = len(fakes["steel"].seen)
    misconfigured.ok("use", profile, session="nk")
    r = misconfigured("open", f"{demo}/shop.html", session="nk")
    frame = assert_refused(r, "backend_no_key")
    assert frame["way_out"].startswith("bay keys set cloud:steel api_key")
    assert len(fakes["steel"].seen) == seen  # nothing was asked of the vendor


def test_a_wrong_key_is_the_vendors_401_as_backend_key_invalid(
    misconfigured: Bay, fakes: dict[str, FakeCloud], demo: str
) -> None:
    fake = fakes["kernel"]
    profile = misconfigured.ok("new", "c-wrong", "--provider", "cloud:kernel")["id"]
    before = len(fake.seen)
    misconfigured.ok("use", profile, session="wk")
    r = misconfigured("open", f"{demo}/shop.html", session="wk")
    frame = assert_refused(r, "backend_key_invalid")
    assert frame["data"]["status"] == 401
    assert frame["way_out"].startswith("bay keys set cloud:kernel api_key")
    assert WRONG not in r.stdout + r.stderr
    (seen,) = fake.seen[before:]
    assert (seen.method, seen.path, seen.authorized) == ("POST", "/browsers", False)


def test_an_ephemeral_session_on_a_cloud_default_provider_is_released_at_close(
    misconfigured: Bay, fakes: dict[str, FakeCloud], demo: str
) -> None:
    """BAY_DEFAULT_PROVIDER=cloud:browser-use: a session that asks for nothing gets its own
    context in a vendor session of its own, released when the session closes."""
    fake = fakes["browser-use"]
    before = set(fake.sessions)
    opened = misconfigured("open", f"{demo}/shop.html", session="eph").frame
    assert opened["data"]["title"] == "Shop"
    assert opened["profile"]["ephemeral"] is True
    assert opened["profile"]["provider"] == "cloud:browser-use"
    (sid,) = set(fake.sessions) - before
    misconfigured.ok("close", session="eph")
    assert fake.wait_released(sid) == "release"


def test_keeper_stop_releases_a_running_session(
    misconfigured: Bay, fakes: dict[str, FakeCloud], demo: str
) -> None:
    """No close, no idle: the keeper stopping (bay keeper stop) releases what still runs."""
    fake = fakes["browser-use"]
    before = set(fake.sessions)
    assert misconfigured.ok("open", f"{demo}/shop.html", session="stop")["title"] == "Shop"
    (sid,) = set(fake.sessions) - before
    assert fake.sessions[sid].released is None
    misconfigured.stop()
    assert fake.wait_released(sid) == "release"
    assert fake.live() == []
