"""The cloud driver against FAKE vendors (``fakecloud.FakeCloud``: local servers playing each
vendor's documented session API, with a real local Chromium behind each session). The real
services are never reached from here.

Chromium launches are kept few: the failure paths stop before any browser starts (a refused
key, a create without a CDP URL) or reuse one fake per vendor.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from browserbay.model import LaunchSpec
from browserbay.refusals import Refusal
from browserbay.testing import check_provider
from browserbay_cloud.driver import CloudDriver
from browserbay_cloud.sessions import VendorApi
from browserbay_cloud.vendors import VENDORS, Vendor
from browserbay_testing import assert_refused
from providers.cloud.tests.fakecloud import FakeCloud

KEY = "bu_fakeKEY0123456789abcdefGHIJ"  # fits every vendor's pattern
WRONG = "bu_wrongKEY0123456789abcdefXY"
BY_NAME = {v.name: v for v in VENDORS}
#: The create body each vendor's docs describe, with a project id set and stealth not set
#: (an optional field without a value is left to the vendor's default).
CREATE_BODY: dict[str, Any] = {
    "browserbase": {"projectId": "proj-fake"},
    "kernel": {},
    "steel": {},
    "hyperbrowser": {},
    "browser-use": {},
}

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def playwright() -> AsyncIterator[Any]:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        yield p


def spec(vendor: Vendor, fake: FakeCloud, tmp_path: Path, key: str = KEY) -> LaunchSpec:
    """What the keeper hands a driver: the key's fields under the vendor's own names."""
    env = vendor.row().vendor_env
    values = {"api_key": key, vendor.url_field: fake.url, "project_id": "proj-fake"}
    return LaunchSpec(
        browser_id="bb-test",
        home=tmp_path,
        user_data_dir=tmp_path / "profile",  # a persistent profile (the directory is unused)
        env={env[f]: v for f, v in values.items() if f in env},
    )


@pytest.mark.parametrize("vendor", VENDORS, ids=lambda v: v.id)
async def test_create_connect_open_and_release_at_stop(
    vendor: Vendor, playwright: Any, tmp_path: Path, demo: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="browserbay")
    with FakeCloud(vendor, KEY) as fake:
        handle = await CloudDriver(vendor).launch(playwright, spec(vendor, fake, tmp_path))
        assert fake.launches == 1
        (sid,) = fake.sessions
        assert handle.pid is None
        assert handle.persistent_context is not None
        page = await handle.persistent_context.new_page()
        await page.goto(demo + "/shop.html")
        assert await page.title() == "Shop"
        assert fake.released == []  # nothing released while it is in use
        if vendor.contract.view_field or vendor.contract.view:
            assert handle.live_view_url == f"{fake.url}/live/{sid}"
        else:
            assert handle.live_view_url is None
        await handle.close(10)
        how = fake.wait_released(sid)
        assert how == ("release" if vendor.contract.release else "disconnect")
        assert fake.live() == []
        assert all(s.authorized for s in fake.seen)
        create = vendor.contract.create
        bodies = [s.body for s in fake.seen if create and s.path == create.path]
        assert bodies == ([CREATE_BODY[vendor.name]] if create else [])
    logged = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("browserbay"))
    assert f"session {sid if vendor.contract.release else '-'} released" in logged
    assert KEY not in logged
    assert "ws://" not in logged


@pytest.mark.parametrize("vendor", VENDORS, ids=lambda v: v.id)
async def test_a_failed_connect_after_create_still_releases(
    vendor: Vendor, playwright: Any, tmp_path: Path
) -> None:
    """The vendor created a session whose browser cannot be reached (502 at the handshake):
    refused, and the session released the documented way (Browserless: never created)."""
    with FakeCloud(vendor, KEY, refuse_connect=True) as fake:
        with pytest.raises(Refusal) as caught:
            await CloudDriver(vendor).launch(playwright, spec(vendor, fake, tmp_path))
        frame = assert_refused(caught.value, "backend_unavailable")
        assert KEY not in str(frame)
        assert "<a URL held back>" in frame["message"]
        assert "/session/" not in frame["message"]
        assert fake.launches == 0
        if vendor.contract.create is None:
            assert fake.sessions == {}
            return
        (sid,) = fake.sessions
        assert fake.wait_released(sid) == "release"
        release = vendor.contract.release
        assert release is not None
        released = [x for x in fake.seen if x.method == release.method and sid in x.path]
        assert len(released) == 1  # exactly once


@pytest.mark.parametrize("vendor", VENDORS, ids=lambda v: v.id)
async def test_a_wrong_key_is_the_vendors_401_classified(
    vendor: Vendor, playwright: Any, tmp_path: Path
) -> None:
    """A header key (refused at the create) and a key in the CDP URL (Browserless: refused at
    the WebSocket handshake) end the same way, and nothing starts."""
    with FakeCloud(vendor, KEY) as fake:
        with pytest.raises(Refusal) as caught:
            await CloudDriver(vendor).launch(playwright, spec(vendor, fake, tmp_path, WRONG))
        frame = assert_refused(caught.value, "backend_key_invalid")
        assert frame["data"]["status"] == 401
        assert frame["way_out"].startswith(f"bay keys set {vendor.id} api_key")
        assert WRONG not in str(frame)
        assert fake.launches == 0


async def test_a_create_answer_without_a_cdp_url_releases_what_it_created(
    playwright: Any, tmp_path: Path
) -> None:
    """A vendor answer that lacks the documented field is refused by name, and the session it
    did create is released (negative control for the field names in the rows)."""
    from dataclasses import replace

    vendor = BY_NAME["hyperbrowser"]
    broken = replace(vendor, contract=replace(vendor.contract, cdp_field="noSuchField"))
    with FakeCloud(vendor, KEY) as fake:
        with pytest.raises(Refusal) as caught:
            await CloudDriver(broken).launch(playwright, spec(broken, fake, tmp_path))
        frame = assert_refused(caught.value, "backend_unavailable")
        assert "noSuchField" in frame["message"]
        (sid,) = fake.sessions
        assert fake.wait_released(sid) == "release"


def test_scrub_blots_the_key_and_urls_out_of_any_message() -> None:
    vendor = BY_NAME["steel"]
    api = VendorApi(vendor, {"api_key": KEY, "api_url": "http://127.0.0.1:9"})
    url = api.connect_url("wss://connect.example/?sessionId=s1")
    assert f"apiKey={KEY}" in url
    text = api.scrub(f"Unexpected status 401 when connecting to {url}; key {KEY}")
    assert KEY not in text
    assert "connect.example" not in text
    assert "401" in text


async def test_a_launch_cut_while_the_vendor_creates_still_releases_the_session(
    playwright: Any, tmp_path: Path
) -> None:
    """A deadline that cuts the launch while the create is in flight: the create completes
    (so the session id is known), then the session is released and the cut goes on."""
    vendor = BY_NAME["kernel"]
    with FakeCloud(vendor, KEY, hold_create=threading.Event()) as fake:
        assert fake.hold_create is not None
        scopes: list[anyio.CancelScope] = []
        handles: list[Any] = []

        async def launch() -> None:
            with anyio.CancelScope() as scope:
                scopes.append(scope)
                handles.append(
                    await CloudDriver(vendor).launch(playwright, spec(vendor, fake, tmp_path))
                )

        async with anyio.create_task_group() as tg:
            tg.start_soon(launch)
            while not fake.seen:  # the create request reached the vendor
                await anyio.sleep(0.02)
            scopes[0].cancel()
            fake.hold_create.set()
        assert handles == []
        (sid,) = fake.sessions
        assert fake.wait_released(sid) == "release"
        assert fake.live() == []


@pytest.mark.parametrize("vendor", VENDORS, ids=lambda v: v.id)
async def test_a_driver_handed_no_key_asks_the_vendor_nothing(
    vendor: Vendor, playwright: Any, tmp_path: Path
) -> None:
    with FakeCloud(vendor, KEY) as fake:
        bare = LaunchSpec(browser_id="bb-test", home=tmp_path, env={})
        with pytest.raises(Refusal) as caught:
            await CloudDriver(vendor).launch(playwright, bare)
        assert_refused(caught.value, "backend_no_key")
        assert fake.seen == []


def test_conformance_suite_against_the_fake(tmp_path: Path, demo: str) -> None:
    """The core's provider conformance suite (browserbay.testing) on one cloud row, pointed
    at its FAKE; then the session it made was released."""
    from browserbay_cloud import plugin

    vendor = BY_NAME["steel"]
    (row,) = [r for r in plugin.bay_providers() if r.id == vendor.id]
    with FakeCloud(vendor, KEY) as fake:
        check_provider(
            row, tmp_path, f"{demo}/form.html", env=dict(spec(vendor, fake, tmp_path).env)
        )
        (sid,) = fake.sessions
        assert fake.wait_released(sid) == "release"


async def test_a_vendor_error_at_create_is_backend_unavailable_naming_the_call(
    playwright: Any, tmp_path: Path
) -> None:
    """Not a key problem (a 503): refused backend_unavailable with the vendor's words and the
    call, the way out is the key test; nothing was created, so nothing is released."""
    vendor = BY_NAME["browser-use"]
    with FakeCloud(vendor, KEY, create_status=503) as fake:
        with pytest.raises(Refusal) as caught:
            await CloudDriver(vendor).launch(playwright, spec(vendor, fake, tmp_path))
        frame = assert_refused(caught.value, "backend_unavailable")
        assert "POST /api/v3/browsers" in frame["message"]
        assert "HTTP 503" in frame["message"]
        assert "capacity exhausted" in frame["message"]
        assert frame["way_out"].startswith("bay keys test cloud:browser-use")
        assert fake.sessions == {}
        assert [s.method for s in fake.seen] == ["POST"]  # no release of what never existed
