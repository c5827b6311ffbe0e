"""The human side, as one person meets it (issue 20's first Done-when, in one scenario).

A keeper whose live view is bound on a non-loopback address of this machine (the
``remote_address`` veth end) over self-signed TLS, with the approval gate asking; two sessions
sharing one browser; a phone-sized Chromium (Playwright here) driving the live page's own
controls — Take over, the note field, Hand back, the approval card's buttons, the dialog's
answer. The agent's side is the real CLI. Every wait is bounded and load-tolerant: polled
against a deadline, never slept on."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from browserbay_testing import Bay, assert_refused, wait_for
from browserbay_testing.live import (
    DIALOG_JS,
    PATIENCE,
    approval_card,
    asking_gate_env,
    dialog_answered,
    finished,
    in_background,
    live_state,
    live_stats,
    open_live_link,
    press_hand_back,
    press_take_over,
    share_profile,
)
from browserbay_testing.plugin import keeper

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}
NOTE = "I signed in for you"


@pytest.fixture
def remote_bay(remote_address: str) -> Iterator[Bay]:
    """One keeper: live view on the remote address over self-signed TLS, the gate asking."""
    env = asking_gate_env()
    with keeper(
        "hs", BAY_LIVE_BIND=f"{remote_address}:0", BAY_LIVE_TLS="self-signed", **env
    ) as bay:
        yield bay


@pytest.fixture
def phone(viewer_browser: Any) -> Iterator[Any]:
    """The human's page: a phone-sized window that accepts the self-signed certificate."""
    context = viewer_browser.new_context(
        viewport=PHONE, is_mobile=True, has_touch=True, ignore_https_errors=True
    )
    yield context.new_page()
    context.close()


def _more_frames(viewer: Any, than: int, by: int = 5) -> int:
    return int(
        wait_for(
            lambda: live_stats(viewer)["distinct"] >= than + by and live_stats(viewer)["distinct"],
            PATIENCE,
            what=f"{by} more distinct frames",
        )
    )


def _text(bay: Bay, session: str, selector: str) -> str:
    return str(bay.ok("get", "text", selector, session=session)["value"])


def test_a_person_on_a_phone_over_tls_watches_takes_over_notes_approves_and_answers(
    remote_bay: Bay, remote_address: str, demo: str, phone: Any
) -> None:
    bay, viewer = remote_bay, phone
    share_profile(bay, "shared", "sa", "sb")
    bay.ok("open", f"{demo}/live.html", session="sa")  # animated: frames keep coming
    bay.ok("open", f"{demo}/form.html", session="sb")  # a tab of its own, same browser

    # Frames flow over TLS on the remote address, and the picture fits the phone.
    url = open_live_link(bay, "sa", viewer)
    assert urlsplit(url).scheme == "https"
    assert urlsplit(url).hostname == remote_address
    _more_frames(viewer, live_stats(viewer)["distinct"])
    box = viewer.evaluate("window.__live.drawn")
    assert box["right"] <= PHONE["width"] + 0.5
    assert box["bottom"] <= PHONE["height"] + 0.5

    # The agent's busy script stalls the page's painting...
    busy = in_background(bay, "sa", "eval", "(() => { while (true) {} })()", "--timeout", "90")

    def stalled() -> bool:
        before = live_stats(viewer)["frames"]
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            viewer.wait_for_timeout(100)
        return bool(live_stats(viewer)["frames"] <= before + 1)

    wait_for(stalled, PATIENCE, what="the busy page to stop painting")
    # ...the human takes over: the script is stopped, the agent's eval cut, frames come again.
    press_take_over(viewer)
    assert_refused(finished(busy), "browser_interrupted")
    frames = live_stats(viewer)["frames"]
    wait_for(lambda: live_stats(viewer)["frames"] > frames + 10, PATIENCE, what="frames again")

    # The sibling session on the same browser is refused, naming who holds it.
    paused = assert_refused(bay("get", "title", session="sb"), "browser_paused")
    assert "session sa" in paused["data"]["by"]
    assert paused["data"]["session"] == "sa"

    # bay status names the input holder — for the session viewed and for its sibling.
    mine = bay.ok("status", session="sa")["leases"][0]
    assert mine["input_holder"] == "user"
    assert mine["driver"] == live_state(viewer)["me"]
    assert bay.ok("status", session="sb")["leases"][0]["input_holder"] == "user"
    assert "input: user" in bay("status", session="sa", json_=False).stdout

    # Hand back with a note: it reaches the agent in its next answer, and the sibling's.
    viewer.fill("#handnote", NOTE)
    press_hand_back(viewer)
    told = bay("get", "title", session="sa").frame
    assert told["ok"], told
    assert f'the human handed back: "{NOTE}"' in told["notice"]
    sibling = bay("get", "title", session="sb").frame
    assert sibling["ok"], sibling
    assert f'the human handed back: "{NOTE}"' in sibling["notice"]
    assert bay.ok("status", session="sa")["leases"][0]["input_holder"] == "agent"

    # An approval card approves one click...
    bay.ok("open", f"{demo}/shop.html", session="sa")
    snap = bay.ok("snapshot", "-i", session="sa")["snapshot"]
    ref = re.search(r'button "Buy now"[^\n]*? @(e\d+)\b', snap)
    assert ref, snap
    first = in_background(bay, "sa", "click", "@" + ref.group(1), "--timeout", "60")
    card = approval_card(viewer)
    assert 'click button "Buy now"' in card.inner_text()
    assert "session sa" in card.inner_text()
    assert first.poll() is None  # it waits for the human
    card.locator(".approval-approve").click()
    approved = finished(first)
    assert approved.code == 0, approved
    assert _text(bay, "sa", "#status") == "Order placed: 1 kettle"
    wait_for(lambda: viewer.locator(".approval").count() == 0, PATIENCE, what="the card gone")
    # ...and denies another: nothing more is bought.
    second = in_background(bay, "sa", "click", "#buy", "--timeout", "60")
    approval_card(viewer).locator(".approval-deny").click()
    denied = assert_refused(finished(second), "approval_denied")
    assert denied["data"]["by"].startswith("a human in the live view (viewer")
    assert _text(bay, "sa", "#status") == "Order placed: 1 kettle"
    wait_for(lambda: viewer.locator(".approval").count() == 0, PATIENCE, what="the card gone")

    # A dialog the page opens is answered from the live page.
    assert bay.ok("eval", DIALOG_JS, session="sa")["value"] == "ok"
    bay.ok("click", "#ask", session="sa")
    wait_for(lambda: viewer.locator("#dialog").is_visible(), PATIENCE, what="the dialog shown")
    assert viewer.locator("#dialog-message").inner_text() == "Your name?"
    viewer.fill("#dialog-text", "Grace Hopper")
    viewer.click("#dialog-accept")
    answer = dialog_answered(bay, "sa", PATIENCE)
    assert "accepted with text they typed" in answer["notice"]
    assert "Grace" not in answer["notice"]
    assert _text(bay, "sa", "#out") == "prompt Grace Hopper"
    wait_for(lambda: viewer.locator("#dialog").is_hidden(), PATIENCE, what="the dialog gone")
    # The live view still shows a moving picture at the end.
    assert live_stats(viewer)["frames"] > frames
