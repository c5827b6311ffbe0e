"""An approval gate that asks instead of refusing: the verb waits while the live view shows a
card (what, which page, which session) with Approve and Deny; the agent gets the action's
answer or ``approval_denied``, and ``approval_timeout`` when nobody answers in time.

Real Chromium for the session (run by the keeper, through the real CLI) and a second one for
the human (Playwright here) showing the live page; the gate is examples/approval-gate in its
default ``ask`` mode."""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from browserbay_testing import Bay, Result, assert_refused, wait_for
from browserbay_testing.live import approval_card, asking_gate_env

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def asking() -> Iterator[Bay]:
    """A keeper with the approval gate (ask mode) and the live view."""
    home = Path(tempfile.mkdtemp(prefix="bay-ask-", dir="/tmp"))
    b = Bay(home, **asking_gate_env())
    yield b
    b.stop()
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=2) as p:
        yield p


def _buy_ref(b: Bay, session: str) -> str:
    snap = b.ok("snapshot", "-i", session=session)["snapshot"]
    m = re.search(r'button "Buy now"[^\n]*? @(e\d+)\b', snap)
    assert m, snap
    return "@" + m.group(1)


def _live(b: Bay, session: str, viewer: Any, *flags: str) -> None:
    viewer.goto(b.ok("live", *flags, session=session)["url"])
    wait_for(lambda: viewer.evaluate("!!(window.__live && window.__live.state)"), what="state")


def _status(b: Bay, session: str) -> str:
    return str(b.ok("get", "text", "#status", session=session)["value"])


def test_an_approval_card_approves_one_click_and_denies_another(
    asking: Bay, demo: str, viewer: Any, pool: ThreadPoolExecutor
) -> None:
    s = "buyer"
    asking.ok("open", f"{demo}/shop.html", session=s)
    buy = _buy_ref(asking, s)
    _live(asking, s, viewer)
    assert viewer.locator(".approval").count() == 0

    # The click waits for the human; the card says what, where and whose.
    clicked: Future[Result] = pool.submit(asking, "click", buy, session=s)
    card = approval_card(viewer)
    text = card.inner_text()
    assert 'click button "Buy now"' in text
    assert "/shop.html" in text
    assert "session buyer" in text
    assert "approval-gate" in text
    assert not clicked.done()
    card.locator(".approval-approve").click()
    answer = clicked.result(timeout=30)
    assert answer.code == 0, answer
    assert _status(asking, s) == "Order placed: 1 kettle"
    wait_for(lambda: viewer.locator(".approval").count() == 0, what="the card gone")

    # Another press of the same button: denied by the human, nothing bought.
    again: Future[Result] = pool.submit(asking, "click", "#buy", session=s)
    approval_card(viewer).locator(".approval-deny").click()
    frame = assert_refused(again.result(timeout=30), "approval_denied")
    assert frame["data"]["by"].startswith("a human in the live view (viewer")
    assert frame["way_out"].startswith("do not run it again")
    assert _status(asking, s) == "Order placed: 1 kettle"
    wait_for(lambda: viewer.locator(".approval").count() == 0, what="the card gone")
    asking.ok("close", session=s)


def test_while_a_verb_waits_for_approval_other_sessions_act_and_nobody_answering_times_out(
    asking: Bay, demo: str, viewer: Any, pool: ThreadPoolExecutor
) -> None:
    s, other = "waiter", "other-shopper"
    asking.ok("open", f"{demo}/shop.html", session=s)
    asking.ok("open", f"{demo}/shop.html", session=other)
    _live(asking, s, viewer)
    began = time.monotonic()
    waiting: Future[Result] = pool.submit(asking, "click", "#buy", "--timeout", "6", session=s)
    approval_card(viewer)
    # The keeper's loop and other sessions go on while the click waits.
    asking.ok("click", "#wish", session=other)
    assert _status(asking, other) == "Added to your wishlist"
    assert not waiting.done()
    frame = assert_refused(waiting.result(timeout=30), "approval_timeout")
    took = time.monotonic() - began
    assert 4 <= took < 15, took  # bounded by the verb's own deadline, less a moment to answer
    assert "bay live" in frame["way_out"]
    assert "--timeout" in frame["way_out"]
    assert frame["data"]["waited"] <= 6
    wait_for(lambda: viewer.locator(".approval").count() == 0, what="the card gone")
    assert _status(asking, s) == ""  # nothing was bought
    for each in (s, other):
        asking.ok("close", session=each)


def test_a_takeover_cuts_a_verb_waiting_for_approval_and_a_watch_link_cannot_answer(
    asking: Bay, demo: str, viewer: Any, pool: ThreadPoolExecutor
) -> None:
    s = "taken"
    asking.ok("open", f"{demo}/shop.html", session=s)
    _live(asking, s, viewer, "--watch")
    waiting: Future[Result] = pool.submit(asking, "click", "#buy", session=s)
    card = approval_card(viewer)
    assert card.locator("button").count() == 0  # a watch link shows the card only
    # Sent by hand anyway: refused, the click still waits.
    viewer.evaluate(
        "() => { const ws = new WebSocket('ws://' + location.host + location.pathname + 'ws');"
        " ws.onmessage = (m) => { if (typeof m.data !== 'string') return;"
        " const s = JSON.parse(m.data); if (s.t === 'state' && s.approvals.length)"
        " ws.send(JSON.stringify({t: 'approval', id: s.approvals[0].id, approve: true})); }; }"
    )
    viewer.wait_for_timeout(1500)
    assert not waiting.done()
    # A human with a control link takes over instead: the waiting click is cut.
    control = viewer.context.new_page()
    _live(asking, s, control)
    control.click("#toggle")
    frame = assert_refused(waiting.result(timeout=30), "browser_interrupted")
    assert frame["data"]["command"].startswith("bay click")
    wait_for(lambda: control.locator(".approval").count() == 0, what="the card gone")
    control.click("#toggle")  # hand back: the keeper lets the pause go a moment later
    wait_for(
        lambda: asking("get", "title", session=s).frame.get("code") != "browser_paused",
        what="the handback",
    )
    assert _status(asking, s) == ""
    control.close()
    asking.ok("close", session=s)


def test_the_sessions_next_page_verb_never_overtakes_a_verb_waiting_for_approval(
    asking: Bay, demo: str, pool: ThreadPoolExecutor
) -> None:
    """While a click waits for a human, the same session's next page verb (a click the gate
    does not ask about) waits behind it — it must not act on the page before the card's verb
    is answered — whereas ``bay live`` (how the human gets the card) answers at once."""
    s = "queued"
    asking.ok("open", f"{demo}/shop.html", session=s)
    waiting: Future[Result] = pool.submit(asking, "click", "#buy", "--timeout", "5", session=s)
    time.sleep(1.0)  # the click reaches its gate and waits
    began = time.monotonic()
    link = asking.ok("live", session=s)  # the human's link: not held up by the wait
    assert link["url"]
    assert time.monotonic() - began < 3
    nxt: Future[Result] = pool.submit(asking, "click", "#wish", session=s)
    time.sleep(1.5)
    assert not waiting.done()
    assert not nxt.done(), nxt.result()  # old code: the wishlist click ran at once
    assert_refused(waiting.result(timeout=30), "approval_timeout")
    assert nxt.result(timeout=30).code == 0
    assert _status(asking, s) == "Added to your wishlist"
    asking.ok("close", session=s)


def test_a_before_verb_hook_may_ask_and_the_page_verb_waits_for_the_human(
    demo: str, viewer: Any, pool: ThreadPoolExecutor
) -> None:
    """``bay_before_verb`` answering an Ask (the recorder test plugin, for ``scroll``): the
    verb waits while the live view shows a card naming it as the agent typed it; approved it
    runs, denied it is ``approval_denied``. Old code took the Ask for a refusal object and
    answered ``internal_error``."""
    home = Path(tempfile.mkdtemp(prefix="bay-askv-", dir="/tmp"))
    b = Bay(home, BAY_TEST_ASK_VERB="scroll", BAY_TEST_ASK_TIMEOUT="40")
    try:
        s = "verb-asked"
        b.ok("open", f"{demo}/shop.html", session=s)
        _live(b, s, viewer)
        waiting: Future[Result] = pool.submit(b, "scroll", "down", session=s)
        card = approval_card(viewer)
        text = card.inner_text()
        assert "bay scroll down" in text
        assert "recorder" in text
        assert not waiting.done()
        card.locator(".approval-approve").click()
        assert waiting.result(timeout=30).code == 0
        wait_for(lambda: viewer.locator(".approval").count() == 0, what="the card gone")
        again: Future[Result] = pool.submit(b, "scroll", "up", session=s)
        approval_card(viewer).locator(".approval-deny").click()
        frame = assert_refused(again.result(timeout=30), "approval_denied")
        assert frame["data"]["plugin"] == "recorder"
        b.ok("close", session=s)
    finally:
        b.stop()
        shutil.rmtree(home, ignore_errors=True)
