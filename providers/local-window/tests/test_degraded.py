"""Each capability is probed at runtime and a verb that needs a missing one is refused with
the probe's finding: a display started without XTEST (BAY_WINDOW_XTEST=0), a walker python
without PyGObject, no X server binary at all. Page verbs on a local-window session are
refused by capability."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from browserbay_testing import Bay, assert_refused

from .conftest import DEBIAN_PYTHON, GTK_APP, finish, have_gtk, new_home, node, wopen

pytestmark = pytest.mark.skipif(not have_gtk(), reason="needs Xvfb and Debian's python3-gi")


@pytest.fixture(scope="module")
def degraded() -> Iterator[Bay]:
    """A keeper whose display has no XTEST and whose walker python (the venv's) has no gi,
    with local-window as the provider of its sessions."""
    home = new_home("wd")
    b = Bay(
        home,
        BAY_WINDOW_XTEST="0",
        BAY_WINDOW_PYTHON=sys.executable,
        BAY_DEFAULT_PROVIDER="local-window",
    )
    yield b
    finish(b)


@pytest.fixture(scope="module")
def app(degraded: Bay) -> str:
    return str(wopen(degraded, DEBIAN_PYTHON, GTK_APP)["handle"])


def test_key_and_click_at_refuse_with_the_probe_when_injection_is_disabled(
    degraded: Bay, app: str
) -> None:
    frame = assert_refused(degraded("window", "key", app, "ctrl+s"), "injection_unavailable")
    probe = frame["data"]["probe"]["xtest"]
    assert probe["ok"] is False
    assert "has no XTEST extension" in probe["detail"]
    assert "BAY_WINDOW_XTEST=0" in frame["message"]
    frame = assert_refused(
        degraded("window", "click", app, "--at", "10,10"), "injection_unavailable"
    )
    assert frame["data"]["verb"] == "click --at"
    assert "bay window click" in frame["way_out"]


def test_a_walker_without_pyatspi_refuses_the_snapshot_by_name(degraded: Bay, app: str) -> None:
    frame = assert_refused(degraded("window", "snapshot", app), "accessibility_unavailable")
    assert "gi" in frame["message"]  # ModuleNotFoundError: No module named 'gi'
    assert frame["data"]["probe"]["walker"] == "unavailable"


def test_screenshots_still_work_and_doctor_shows_what_is_missing(degraded: Bay, app: str) -> None:
    shot = degraded.ok("window", "screenshot", app)
    assert shot["width"] == 400
    data = degraded.ok("window", "doctor")
    ours = next(d for d in data["displays"] if d["kind"] == "ours")
    assert ours["probes"]["xtest"]["ok"] is False
    assert ours["probes"]["walker_python"]["ok"] is False
    assert ours["probes"]["screenshot"]["ok"] is True


def test_page_verbs_on_a_local_window_session_are_refused_by_capability(degraded: Bay) -> None:
    frame = assert_refused(degraded("open", "about:blank"), "capability_missing")
    assert frame["data"]["provider"] == "local-window"
    assert frame["data"]["capability"] == "has_cdp"
    provider = next(p for p in degraded.ok("plugins")["providers"] if p["id"] == "local-window")
    assert provider["tier"] == 3
    assert provider["capabilities"]["has_cdp"] is False
    assert provider["capabilities"]["lease_kind"] == "window"
    assert provider["problem"] is None


def test_no_x_server_is_display_unavailable_naming_the_fix() -> None:
    home = new_home("wx")
    b = Bay(home, BAY_WINDOW_XVFB="/nonexistent/Xvfb")
    try:
        r = b("window", "open", "--json", "--", DEBIAN_PYTHON, GTK_APP, json_=False)
        frame = assert_refused(r, "display_unavailable")
        assert "/nonexistent/Xvfb" in frame["message"]
        assert "apt-get install" in frame["way_out"]
        assert b.ok("window", "list")["windows"] == []
    finally:
        finish(b)


def test_type_into_an_editable_text_needs_no_injection(degraded: Bay) -> None:
    # EditableText is an accessibility road: it works without XTEST. (This keeper's walker
    # cannot read trees, so the tree is read through a keeper that can.)
    home = new_home("wt")
    b = Bay(home, BAY_WINDOW_XTEST="0")
    try:
        handle = wopen(b, DEBIAN_PYTHON, GTK_APP)["handle"]
        snap = b.ok("window", "snapshot", handle)
        entry = node(snap, "text", "Your name")["ref"]
        assert b.ok("window", "type", handle, f"@{entry}", "Zoë")["via"] == "editable_text"
        assert node(b.ok("window", "snapshot", handle), "text")["value"] == "Zoë"
        button = node(snap, "push button", "Greet")["ref"]
        assert b.ok("window", "click", handle, f"@{button}")["via"] == "action"
        assert_refused(b("window", "key", handle, "Return"), "injection_unavailable")
    finally:
        finish(b)
