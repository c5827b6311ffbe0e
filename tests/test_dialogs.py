"""Dialogs a page opens are never answered silently: they stay open until the session
answers them (``bay dialog``), every answer names them meanwhile, a page verb on their tab
is refused rather than left to its deadline, an unanswered one is dismissed by
``BAY_DIALOG_TIMEOUT`` with a notice, and closing a tab never waits on ``beforeunload``.

Real pages (the demo site's form, buttons added by ``eval``) in real Chromium, through the
real keeper and CLI."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from browserbay import errors
from browserbay.api import SyncClient
from browserbay.settings import BaySettings
from browserbay_testing import Bay, assert_refused, wait_for
from browserbay_testing.pages import serve_pages
from browserbay_testing.plugin import keeper

pytestmark = pytest.mark.browser

#: Buttons that open each kind of dialog and write what it answered into #out.
SETUP_JS = """(() => {
  const out = (v) => { document.getElementById('out').textContent = v; };
  window.out = out;
  document.body.insertAdjacentHTML('beforeend', `
    <button id=alert onclick="alert('Saved.'); out('alerted')">Alert</button>
    <button id=confirm onclick="out('confirm ' + confirm('Delete everything?'))">Confirm</button>
    <button id=prompt onclick="out('prompt ' + prompt('Your name?', 'Bob'))">Prompt</button>
    <button id=later onclick="setTimeout(() => alert('Later.'), 50)">Later</button>
    <p id=out>nothing yet</p>`);
  return 'ok';
})()"""

LEAVE_JS = """(() => {
  window.addEventListener('beforeunload', (e) => { e.preventDefault(); e.returnValue = ''; });
  return 'guarded';
})()"""


#: A page that asks as it loads: its ``load`` waits for the answer.
GREETS = (
    "<!doctype html><title>Greets</title><p id=out>hi</p><script>alert('Welcome aboard.')</script>"
)


def _page(bay: Bay, demo: str, s: str) -> None:
    bay.ok("open", f"{demo}/form.html", session=s)
    assert bay.ok("eval", SETUP_JS, session=s)["value"] == "ok"


def _out(bay: Bay, s: str) -> str:
    return str(bay.ok("get", "text", "#out", session=s)["value"])


def test_a_click_that_opens_a_confirm_is_answered_at_once_and_names_it(bay: Bay, demo: str) -> None:
    s = "dlg-confirm"
    _page(bay, demo, s)
    started = time.monotonic()
    r = bay("click", "#confirm", session=s, timeout=60)
    took = time.monotonic() - started
    frame = r.frame
    assert r.code == 0, frame
    assert took < 10, took  # not the 30 s deadline
    assert frame["data"]["dialog"]["type"] == "confirm"
    assert frame["data"]["dialog"]["message"] == "Delete everything?"
    assert 'dialog: confirm "Delete everything?"' in frame["notice"]
    assert "bay dialog accept | dismiss" in frame["notice"]
    # Every answer while it is open carries the notice, session verbs too.
    listing = bay("tab", "list", session=s).frame
    assert 'confirm "Delete everything?"' in listing["notice"]
    assert listing["data"]["tabs"][0]["dialog"]["type"] == "confirm"
    status = bay("dialog", "status", session=s).frame
    assert [d["type"] for d in status["data"]["dialogs"]] == ["confirm"]
    assert status["data"]["dialogs"][0]["url"] == f"{demo}/form.html"
    accepted = bay("dialog", "accept", session=s).frame
    assert accepted["ok"], accepted
    assert accepted["data"]["action"] == "accepted"
    assert "notice" not in accepted  # answered: no longer named
    assert _out(bay, s) == "confirm true"  # the page got the answer
    # Dismissed, the page gets false.
    bay.ok("click", "#confirm", session=s)
    assert bay.ok("dialog", "dismiss", session=s)["action"] == "dismissed"
    assert _out(bay, s) == "confirm false"
    after = bay("dialog", "status", session=s).frame
    assert after["data"]["dialogs"] == []
    assert "notice" not in after


def test_an_alert_and_a_prompt_with_text(bay: Bay, demo: str) -> None:
    s = "dlg-prompt"
    _page(bay, demo, s)
    r = bay("click", "#alert", session=s).frame
    assert 'dialog: alert "Saved."' in r["notice"]
    assert bay.ok("dialog", "accept", session=s)["type"] == "alert"
    assert _out(bay, s) == "alerted"
    r = bay("click", "#prompt", session=s).frame
    assert 'prompt "Your name?" (default "Bob")' in r["notice"]
    assert "bay dialog accept [text] | dismiss" in r["notice"]
    answered = bay("dialog", "accept", "Ada Lovelace", session=s).frame
    assert answered["ok"], answered
    assert "Ada Lovelace" not in str(answered)  # typed text is never echoed
    assert _out(bay, s) == "prompt Ada Lovelace"
    # Accepted without text: its default value.
    bay.ok("click", "#prompt", session=s)
    bay.ok("dialog", "accept", session=s)
    assert _out(bay, s) == "prompt Bob"
    # Dismissed: null.
    bay.ok("click", "#prompt", session=s)
    bay.ok("dialog", "dismiss", session=s)
    assert _out(bay, s) == "prompt null"
    # Text for a dialog that takes none is bad input: refused, the dialog stays open.
    bay.ok("click", "#confirm", session=s)
    assert_refused(bay("dialog", "accept", "yes", session=s), "usage")
    assert bay.ok("dialog", "status", session=s)["dialogs"][0]["type"] == "confirm"
    bay.ok("dialog", "dismiss", session=s)
    # The audit never holds the typed answer.
    audit = bay("audit", "--last", "50", session=None).stdout
    assert "Ada Lovelace" not in audit


def test_a_page_verb_while_a_dialog_is_open_is_refused_naming_it(bay: Bay, demo: str) -> None:
    s = "dlg-refused"
    _page(bay, demo, s)
    bay.ok("click", "#later", session=s)  # the alert opens after the verb answered
    wait_for(lambda: bay.ok("dialog", "status", session=s)["dialogs"], what="the alert")
    for verb in (("snapshot", "-i"), ("get", "title"), ("click", "#alert"), ("eval", "1")):
        started = time.monotonic()
        r = bay(*verb, session=s)
        assert time.monotonic() - started < 10  # refused before it ran, not at its deadline
        refusal = assert_refused(r, "dialog_open")
        assert 'alert "Later."' in refusal["message"]
        assert "bay dialog accept" in refusal["way_out"]
        assert refusal["data"]["kind"] == "alert"
    bay.ok("dialog", "accept", session=s)
    assert bay.ok("get", "title", session=s)["value"]  # the page answers again


def test_no_dialog_open_is_a_typed_refusal(bay: Bay, demo: str) -> None:
    s = "dlg-none"
    refusal = assert_refused(bay("dialog", "accept", session=s), "no_dialog")
    assert "bay dialog status" in refusal["way_out"]
    _page(bay, demo, s)
    assert_refused(bay("dialog", "dismiss", session=s), "no_dialog")
    # A dialog on another of the session's tabs: the way out switches to it.
    first = bay.ok("tab", session=s)["tabs"][0]["id"]
    bay.ok("click", "#confirm", session=s)
    second = bay.ok("tab", "new", f"{demo}/", session=s)["tab"]
    assert second != first
    refusal = assert_refused(bay("dialog", "accept", session=s), "no_dialog")
    assert f"bay tab {first}" in refusal["way_out"]
    bay.ok("tab", first, session=s)
    bay.ok("dialog", "accept", session=s)
    assert _out(bay, s) == "confirm true"


def test_a_dialog_in_one_session_does_not_block_another_sessions_tab(bay: Bay, demo: str) -> None:
    a, b = "dlg-one", "dlg-other"
    _page(bay, demo, a)
    _page(bay, demo, b)
    bay.ok("click", "#confirm", session=a)
    other = bay("click", "#alert", session=b).frame  # b's own alert: named to b only
    assert "Delete everything" not in other.get("notice", "")
    bay.ok("dialog", "accept", session=b)
    assert _out(bay, b) == "alerted"
    assert bay.ok("get", "title", session=b)["value"]
    assert "notice" not in bay("get", "url", session=b).frame
    assert bay.ok("dialog", "status", session=b)["dialogs"] == []
    assert_refused(bay("get", "title", session=a), "dialog_open")
    bay.ok("dialog", "dismiss", session=a)


def test_beforeunload_never_blocks_the_sessions_own_close(bay: Bay, demo: str) -> None:
    s = "dlg-leave"
    _page(bay, demo, s)
    assert bay.ok("eval", LEAVE_JS, session=s)["value"] == "guarded"
    bay.ok("click", "#out", session=s)  # a user gesture: the page may now ask on leaving
    started = time.monotonic()
    r = bay("open", f"{demo}/", session=s).frame
    assert time.monotonic() - started < 10
    assert r["ok"], r
    assert r["data"]["dialog"]["type"] == "beforeunload"
    assert "dialog: beforeunload" in r["notice"]
    # `tab close` of the tab asking: closed at once (the beforeunload accepted with it).
    tab = bay.ok("tab", session=s)["tabs"][0]["id"]
    spare = bay.ok("tab", "new", f"{demo}/form.html", session=s)["tab"]
    started = time.monotonic()
    closed = bay("tab", "close", tab, session=s).frame
    assert closed["ok"], closed
    assert time.monotonic() - started < 10
    assert "notice" not in closed
    assert bay.ok("dialog", "status", session=s)["dialogs"] == []
    # And `bay close` of a page that guards its unload: it never asks.
    bay.ok("tab", spare, session=s)
    assert bay.ok("eval", LEAVE_JS, session=s)["value"] == "guarded"
    bay.ok("click", "body", session=s)
    started = time.monotonic()
    assert bay.ok("close", session=s)["closed_tabs"] == 1
    assert time.monotonic() - started < 10


def test_tab_new_of_a_page_that_alerts_as_it_loads_answers_at_once_naming_it(
    bay: Bay, demo: str
) -> None:
    """The old code waited for the page's ``load`` (which waits on the alert) until the 30 s
    deadline, then refused ``deadline`` and closed the tab."""
    s = "dlg-tab-new"
    bay.ok("open", f"{demo}/form.html", session=s)
    with serve_pages({"/greets": GREETS}) as base:
        r = bay("tab", "new", f"{base}/greets", session=s, timeout=60).frame
        assert r["ok"], r
        assert r["data"]["dialog"]["type"] == "alert"
        assert r["data"]["dialog"]["message"] == "Welcome aboard."
        assert r["data"]["finished"] is False
        assert 'dialog: alert "Welcome aboard."' in r["notice"]
        new = r["data"]["tab"]
        tabs = bay.ok("tab", session=s)["tabs"]
        assert [t["id"] for t in tabs if t["current"]] == [new]  # opened, and current
        assert_refused(bay("get", "title", session=s), "dialog_open")
        bay.ok("dialog", "accept", session=s)
        assert bay.ok("get", "title", session=s)["value"] == "Greets"
        assert bay.ok("get", "url", session=s)["value"] == f"{base}/greets"
        bay.ok("close", session=s)


def test_bay_close_with_a_beforeunload_open_completes(bay: Bay, demo: str) -> None:
    s = "dlg-leave-close"
    _page(bay, demo, s)
    bay.ok("eval", LEAVE_JS, session=s)
    bay.ok("click", "#out", session=s)
    assert bay.ok("open", f"{demo}/", session=s)["dialog"]["type"] == "beforeunload"
    started = time.monotonic()
    done = bay("close", session=s).frame
    assert done["ok"], done
    assert time.monotonic() - started < 10
    assert "notice" not in done
    assert bay.ok("dialog", "status", session=s)["dialogs"] == []


@pytest.fixture
def bounded_bay() -> Iterator[Bay]:
    with keeper("dlg", BAY_DIALOG_TIMEOUT="2") as b:
        yield b


def test_an_unanswered_dialog_is_dismissed_by_the_bound_with_a_notice(
    bounded_bay: Bay, demo: str
) -> None:
    s = "dlg-bound"
    _page(bounded_bay, demo, s)
    bounded_bay.ok("click", "#confirm", session=s)

    def gone() -> Any:
        return not bounded_bay.ok("dialog", "status", session=s)["dialogs"]

    # status itself carries notices: look at the next answer once the bound has passed.
    time.sleep(3)
    r = bounded_bay("get", "text", "#out", session=s).frame
    assert r["ok"], r
    assert r["data"]["value"] == "confirm false"  # dismissed
    assert 'confirm "Delete everything?" on' in r["notice"]
    assert "dismissed by the bound" in r["notice"]
    assert "BAY_DIALOG_TIMEOUT" in r["notice"]
    assert gone()
    assert "notice" not in bounded_bay("get", "url", session=s).frame  # said once


def test_the_bound_is_a_keeper_setting() -> None:
    assert BaySettings().dialog_timeout == 120.0
    assert "BAY_DIALOG_TIMEOUT" in BaySettings.variables()


def test_the_python_api_answers_a_prompt_and_reads_the_status(bay: Bay, demo: str) -> None:
    s = "dlg-api"
    _page(bay, demo, s)
    with SyncClient(s, home=bay.home) as api:
        clicked = api.click("#prompt")
        assert clicked.notice is not None
        assert 'prompt "Your name?" (default "Bob")' in clicked.notice
        assert clicked["dialog"]["type"] == "prompt"
        assert [d["type"] for d in api.dialog_status()["dialogs"]] == ["prompt"]
        with pytest.raises(errors.DialogOpen):
            api.get("title")
        assert api.dialog_accept("Grace")["action"] == "accepted"
        assert api.get("text", "#out").value == "prompt Grace"
        api.click("#confirm")
        assert api.dialog_dismiss()["action"] == "dismissed"
        assert api.get("text", "#out").value == "confirm false"
        with pytest.raises(errors.NoDialog):
            api.dialog_dismiss()
