"""`bay window browser`: Debian's Chromium headed on our display with accessibility on and no
automation at all, driven by reference (a link followed through its action) and by keys
(text typed into a web field by focus + XTEST), everything checked through its own tree."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from browserbay import procfs
from browserbay.demo.server import serve
from browserbay_local_window import chromium
from browserbay_testing import Bay, assert_refused

from .conftest import have_gtk, snapshot, wait_for

pytestmark = pytest.mark.skipif(
    not have_gtk() or chromium.find() is None, reason="needs Xvfb, python3-gi and Chromium"
)


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    server, base = serve()
    yield base
    server.shutdown()


@pytest.fixture(scope="module")
def browser(wbay: Bay, site: str) -> dict[str, Any]:
    data: dict[str, Any] = wbay.ok("window", "browser", f"{site}/")
    return data


def find(snap: dict[str, Any], role: str, name: str) -> dict[str, Any] | None:
    return next((n for n in snap["nodes"] if n["role"] == role and n["name"] == name), None)


def test_its_argv_carries_no_debugging_port_and_no_automation_flag(
    wbay: Bay, browser: dict[str, Any]
) -> None:
    pid = browser["pid"]
    family = procfs.tree(pid)
    assert len(family) > 1  # the browser and its helpers
    for p in family:
        # Chromium rewrites its /proc cmdline into one space-separated string: read it whole.
        cmdline = " ".join(procfs.argv(p))
        assert "--remote-debugging" not in cmdline, cmdline
        assert "--enable-automation" not in cmdline, cmdline
        assert "--headless" not in cmdline, cmdline
    main = " ".join(procfs.argv(pid)).split()
    assert "--force-renderer-accessibility" in main
    assert main[0] == chromium.find()
    assert browser["kind"] == "browser"


def test_its_web_content_is_in_the_tree_and_a_link_is_followed_by_its_action(
    wbay: Bay, browser: dict[str, Any]
) -> None:
    handle = browser["handle"]
    snap = wait_for(
        lambda: (s := snapshot(wbay, handle)) and find(s, "link", "Sign-up form") and s, 15
    )
    assert snap, "the page's link never appeared in the accessibility tree"
    link = find(snap, "link", "Sign-up form")
    assert link is not None
    assert "jump" in link["actions"]
    clicked = wbay.ok("window", "click", handle, f"@{link['ref']}")
    assert clicked["action"] == "jump"
    assert clicked["name"] == "Sign-up form"
    form = wait_for(lambda: (s := snapshot(wbay, handle)) and find(s, "entry", "Name") and s, 15)
    assert form, "following the link did not reach the form"
    assert find(form, "heading", "Sign up") is not None


def test_text_goes_into_a_web_field_by_focus_and_xtest_keys(
    wbay: Bay, browser: dict[str, Any]
) -> None:
    handle = browser["handle"]
    snap = wait_for(lambda: (s := snapshot(wbay, handle)) and find(s, "entry", "Name") and s, 15)
    entry = find(snap, "entry", "Name")
    assert entry is not None
    assert "EditableText" not in entry["ifaces"]  # Chromium's web fields lack it
    typed = wbay.ok("window", "type", handle, f"@{entry['ref']}", "-", stdin="Grâce Hopper")
    assert typed["via"] == "focus+xtest"

    def value() -> str | None:
        found = find(snapshot(wbay, handle), "entry", "Name")
        return found["value"] if found else None

    assert wait_for(lambda: value() == "Grâce Hopper", 10), value()
    wbay.ok("window", "key", handle, "Return")  # submits the form
    done = wait_for(
        lambda: (
            "Grâce Hopper" in (s := snapshot(wbay, handle))["tree"]
            and "Name" not in [n["name"] for n in s["nodes"] if n["role"] == "entry"]
        ),
        15,
    )
    assert done, "the form's result page never showed the typed name"


def test_a_local_scheme_is_refused_and_closing_stops_the_display(
    wbay: Bay, browser: dict[str, Any]
) -> None:
    assert_refused(wbay("window", "browser", "file:///etc/passwd"), "local_scheme_refused")
    infra = wbay.ok("window", "list")["displays"]["processes"]
    closed = wbay.ok("window", "close", browser["handle"])
    assert closed["closed"] is True
    assert closed["display_stopped"] is True
    assert wait_for(lambda: not procfs.alive(browser["pid"]), 10)
    assert wait_for(lambda: not any(procfs.alive(p) for p in infra.values()), 10)
