"""``bay wait``: each condition on a real page that meets it a moment later (an element
appears, text appears, the URL changes, the network goes quiet, a JavaScript condition holds,
an element hides and goes), through the real CLI and keeper; and each wait that never holds
is refused ``wait_timeout`` saying what it was still waiting for and what the page showed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from browserbay import errors
from browserbay.api import SyncClient
from browserbay_testing import Bay, assert_refused
from browserbay_testing.pages import serve_pages

#: Everything changes DELAY ms after the page loads.
DELAY = 1500

LATER = f"""<!doctype html><title>later</title>
<div id=spinner>Loading…</div>
<div id=leaving>leaving soon</div>
<div id=stays>here to stay</div>
<script>
setTimeout(() => {{
  document.getElementById('spinner').style.display = 'none';
  document.getElementById('leaving').remove();
  const p = document.createElement('p');
  p.id = 'late';
  p.textContent = 'Saved at last';
  document.body.append(p);
  window.ready = 42;
  history.pushState({{}}, '', '/later/done');
}}, {DELAY});
</script>"""

#: The page loads at once; a request it starts answers 1.5 s later.
FETCHING = """<!doctype html><title>fetching</title><p id=out>pending</p>
<script>
fetch('/slow?ms=1500').then(r => r.text()).then(t => {
  document.getElementById('out').textContent = 'fetched ' + t;
});
</script>"""

#: A page whose network is never quiet: a new slow request before the last one ends.
BUSY = """<!doctype html><title>busy</title>
<script>
function again() { fetch('/slow?ms=400&n=' + Math.random()); setTimeout(again, 200); }
again();
</script>"""


#: A form whose submission is answered 1.5 s later: the navigation is requested at once and
#: commits only when the answer comes.
SLOW_FORM = """<!doctype html><title>slow form</title>
<form action="/slow"><input type=hidden name=ms value=1500><input name=n value=1></form>"""


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    pages = {"/later": LATER, "/fetching": FETCHING, "/busy": BUSY, "/slow-form": SLOW_FORM}
    with serve_pages(pages) as base:
        yield base


def test_wait_for_an_element_that_appears(bay: Bay, site: str) -> None:
    s = "w-element"
    bay.ok("open", f"{site}/later", session=s)
    assert bay.ok("eval", "document.querySelectorAll('#late').length", session=s)["value"] == 0
    answer = bay.ok("wait", "#late", session=s)
    assert answer["state"] == "visible"
    assert bay.ok("get", "text", "#late", session=s)["value"] == "Saved at last"
    bay.ok("close", session=s)


def test_wait_for_text_that_appears(bay: Bay, site: str) -> None:
    s = "w-text"
    bay.ok("open", f"{site}/later", session=s)
    assert "Saved at last" not in bay.ok("get", "text", session=s)["value"]
    answer = bay.ok("wait", "--text", "Saved at", session=s)
    assert answer["waited"] == "text"
    assert "Saved at last" in bay.ok("get", "text", session=s)["value"]
    bay.ok("close", session=s)


def test_wait_for_a_url_that_changes(bay: Bay, site: str) -> None:
    s = "w-url"
    bay.ok("open", f"{site}/later", session=s)
    assert bay.ok("get", "url", session=s)["value"] == f"{site}/later"
    answer = bay.ok("wait", "-u", "**/later/done", session=s)
    assert answer["url"] == f"{site}/later/done"
    bay.ok("close", session=s)


def test_wait_for_a_javascript_condition(bay: Bay, site: str) -> None:
    s = "w-fn"
    bay.ok("open", f"{site}/later", session=s)
    assert bay.ok("eval", "window.ready === 42", session=s)["value"] is False
    bay.ok("wait", "--fn", "window.ready === 42", session=s)
    assert bay.ok("eval", "window.ready", session=s)["value"] == 42
    bay.ok("close", session=s)


def test_wait_for_an_element_to_hide_and_to_go(bay: Bay, site: str) -> None:
    s = "w-state"
    bay.ok("open", f"{site}/later", session=s)
    assert bay.ok("eval", "!!document.getElementById('leaving')", session=s)["value"] is True
    bay.ok("wait", "#spinner", "--state", "hidden", session=s)
    assert bay.ok("eval", "getComputedStyle(spinner).display", session=s)["value"] == "none"
    bay.ok("wait", "#leaving", "--state", "detached", session=s)
    assert bay.ok("eval", "!!document.getElementById('leaving')", session=s)["value"] is False
    # Already so: answered at once; attached holds for a present element.
    assert bay.ok("wait", "#leaving", "--state", "detached", session=s)["state"] == "detached"
    assert bay.ok("wait", "#late", "--state", "attached", session=s)["state"] == "attached"
    bay.ok("close", session=s)


def test_wait_for_networkidle_after_the_load(bay: Bay, site: str) -> None:
    s = "w-idle"
    bay.ok("open", f"{site}/fetching", session=s)  # answered at the load: the fetch is out
    assert bay.ok("get", "text", "#out", session=s)["value"] == "pending"
    assert bay.ok("wait", "--load", "networkidle", session=s)["waited"] == "networkidle"
    assert bay.ok("get", "text", "#out", session=s)["value"] == "fetched slow"
    # The other load states, and --load given bare (as the flag it used to be): the load.
    assert bay.ok("wait", "--load", "domcontentloaded", session=s)["waited"] == "domcontentloaded"
    assert bay.ok("wait", "--load", session=s)["waited"] == "load"
    assert bay.ok("wait", "-l", session=s)["waited"] == "load"
    bay.ok("close", session=s)


def test_wait_load_after_a_submission_waits_for_the_next_document(bay: Bay, site: str) -> None:
    """Enter submits the form; its answer takes 1.5 s. The old document is loaded already, so
    a --load that looked only at the current document returned at once, on the form (and
    the next verb read the form's page): the load it waits for is the requested one's."""
    s = "w-submit"
    bay.ok("open", f"{site}/slow-form", session=s)
    bay.ok("click", "input[name=n]", session=s)
    bay.ok("press", "Enter", session=s)  # the navigation is requested now, commits later
    waited = bay.ok("wait", "--load", session=s)
    assert "/slow?" in waited["url"], waited
    assert "/slow?" in bay.ok("get", "url", session=s)["value"]
    assert bay.ok("get", "text", "body", session=s)["value"] == "slow"
    bay.ok("close", session=s)


def test_each_wait_that_never_holds_says_what_it_waited_for(bay: Bay, site: str) -> None:
    s = "w-refused"
    bay.ok("open", f"{site}/later", session=s)
    bay.ok("wait", "#late", session=s)  # the page has done all it will do
    cases = [
        (["--text", "Never shown"], ['the text "Never shown"', 'text begins "here to stay']),
        (
            ["--url", "*/nowhere"],
            ["the URL to match */nowhere", f"the tab is at {site}/later/done"],
        ),
        (["--fn", "window.ready === 7"], ["a JavaScript condition (18 characters)", 'was "false"']),
        (["#stays", "--state", "hidden"], ["#stays to be hidden", "it is visible"]),
        (["#stays", "--state", "detached"], ["#stays to be detached", "it is visible"]),
        (["#spinner", "--state", "visible"], ["#spinner to be visible", "it is hidden"]),
    ]
    for args, said in cases:
        r = bay("wait", *args, "--timeout", "2", session=s)
        frame = assert_refused(r, "wait_timeout")
        for words in said:
            assert words in frame["message"], (args, frame)
        assert "--timeout" in frame["way_out"], frame
    # The JavaScript condition is a secret argument: never echoed.
    r = bay("wait", "--fn", "window.secretThing === 1", "--timeout", "2", session=s)
    assert "secretThing" not in r.stdout, r.stdout
    # The URL it saw last is in the data, for machines.
    frame = assert_refused(bay("wait", "-u", "*/x", "--timeout", "2", session=s), "wait_timeout")
    assert frame["data"]["url"] == f"{site}/later/done"
    # Negative control: a wait that holds is answered, not refused.
    bay.ok("wait", "--text", "here to stay", "--timeout", "2", session=s)
    bay.ok("close", session=s)


def test_a_network_that_never_goes_quiet_is_refused_with_its_requests(bay: Bay, site: str) -> None:
    s = "w-busy"
    bay.ok("open", f"{site}/busy", session=s)
    r = bay("wait", "--load", "networkidle", "--timeout", "3", session=s)
    frame = assert_refused(r, "wait_timeout")
    assert "the networkidle state" in frame["message"], frame
    assert "in flight" in frame["message"], frame
    assert "/slow" in frame["message"], frame
    assert "n=" not in frame["message"], frame  # request URLs without their query
    bay.ok("close", session=s)


def test_an_element_that_never_appears_is_still_target_not_found(bay: Bay, site: str) -> None:
    s = "w-absent"
    bay.ok("open", f"{site}/later", session=s)
    assert_refused(bay("wait", "#never", "--timeout", "2", session=s), "target_not_found")
    bay.ok("close", session=s)


def test_a_wait_with_no_or_two_conditions_is_a_usage_refusal(bay: Bay, site: str) -> None:
    s = "w-usage"
    bay.ok("open", f"{site}/later", session=s)
    for args in (
        [],
        ["--text", "a", "--url", "*b*"],
        ["#stays", "--fn", "true"],
        ["--state", "hidden"],
        ["500", "--state", "hidden"],
        ["--load", "sometime"],  # not a load state: --load is bare, and sometime a target
    ):
        frame = assert_refused(bay("wait", *args, session=s), "usage")
        assert "wait" in frame["message"], (args, frame)
    bay.ok("close", session=s)


def test_the_python_api_waits_and_raises_wait_timeout(bay: Bay, site: str) -> None:
    bay.ok("keeper", "start", session=None)
    with SyncClient("w-api", home=bay.home) as c:
        c.open(f"{site}/later")
        assert c.wait(text="Saved at last")["waited"] == "text"
        assert c.wait(url="*/later/done")["url"].endswith("/later/done")
        assert c.wait(fn="window.ready === 42")["waited"] == "fn"
        assert c.wait("#spinner", state="hidden")["state"] == "hidden"
        assert c.wait(load=True)["waited"] == "load"  # as the flag it was
        assert c.wait(load="networkidle")["waited"] == "networkidle"
        with pytest.raises(errors.WaitTimeout) as refused:
            c.wait(text="never there", timeout=2)
        assert isinstance(refused.value, TimeoutError)
        assert 'the text "never there"' in refused.value.message
        # An older client sent --load as a flag (true): the keeper takes it as the load.
        assert c.call("wait", load=True)["waited"] == "load"
        c.close()
