"""``click``'s semantics, whichever way the keeper presses the element (its CDP fast path when
the element is ready in the main frame, Playwright's click otherwise): covered elements are
refused, a link's navigation is in the answer, a handler's change is in the next read."""

from __future__ import annotations

import json
import re

from browserbay_testing import Bay, assert_refused

#: A button with a handler, a link to the result page, a link that answers 204 (a navigation
#: that never commits), and a pointer-event log.
SETUP_JS = """(() => {
  document.body.insertAdjacentHTML('beforeend', `
    <button id=b onclick="document.getElementById('out').textContent = 'pressed ' + (++window.n)">
      Press</button>
    <p id=out>not yet</p>
    <a id=go href="/result?who=ada">Go</a>
    <a id=nothing href="/status/204">No content</a>`);
  window.n = 0;
  window.events = [];
  for (const t of ['pointerover', 'mouseover', 'pointerdown', 'mousedown', 'pointerup',
                   'mouseup', 'click'])
    document.getElementById('b').addEventListener(t, () => window.events.push(t));
  return 'ok';
})()"""

COVER_JS = """(() => {
  const d = document.createElement('div');
  d.id = 'cover';
  d.style = 'position:fixed;inset:0;background:rgba(0,0,0,.1);z-index:9';
  document.body.appendChild(d);
  return 'covered';
})()"""


def _page(bay: Bay, demo: str, s: str) -> None:
    bay.ok("open", f"{demo}/form.html", session=s)
    assert bay.ok("eval", SETUP_JS, session=s)["value"] == "ok"


def test_a_handlers_change_is_in_the_next_get(bay: Bay, demo: str) -> None:
    s = "click-dom"
    _page(bay, demo, s)
    assert bay.ok("get", "text", "#out", session=s)["value"] == "not yet"  # negative control
    answer = bay.ok("click", "#b", session=s)
    assert answer["url"] == f"{demo}/form.html"
    assert bay.ok("get", "text", "#out", session=s)["value"] == "pressed 1"
    bay.ok("click", "#b", session=s)
    assert bay.ok("get", "text", "#out", session=s)["value"] == "pressed 2"
    # The events a person's click sends, in order: the pointer enters, presses, releases.
    events = bay.ok("eval", "JSON.stringify(window.events)", session=s)["value"]
    first = json.loads(events)[:7]
    assert first == [
        "pointerover",
        "mouseover",
        "pointerdown",
        "mousedown",
        "pointerup",
        "mouseup",
        "click",
    ], first
    bay.ok("close", session=s)


def test_a_click_by_ref_acts_once(bay: Bay, demo: str) -> None:
    s = "click-ref"
    _page(bay, demo, s)
    snap = bay.ok("snapshot", "-i", session=s)["snapshot"]
    line = next(x for x in snap.splitlines() if 'button "Press"' in x)
    ref = "@" + re.findall(r" @(\w+)", line)[0]
    bay.ok("click", ref, session=s)
    assert bay.ok("get", "text", "#out", session=s)["value"] == "pressed 1"
    bay.ok("close", session=s)


def test_a_covered_element_is_refused_and_not_clicked(bay: Bay, demo: str) -> None:
    s = "click-covered"
    _page(bay, demo, s)
    bay.ok("eval", COVER_JS, session=s)
    r = bay("click", "#b", "--timeout", "3", session=s)
    assert_refused(r, "target_covered")  # naming what covers it (tests/test_helpful_refusals.py)
    assert r.frame["data"]["verb"] == "click", r.frame
    assert bay.ok("get", "text", "#out", session=s)["value"] == "not yet"
    # Negative control: the same click once the cover is gone.
    bay.ok("eval", "document.getElementById('cover').remove()", session=s)
    bay.ok("click", "#b", session=s)
    assert bay.ok("get", "text", "#out", session=s)["value"] == "pressed 1"
    bay.ok("close", session=s)


def test_a_link_click_answers_with_the_new_page(bay: Bay, demo: str) -> None:
    s = "click-link"
    _page(bay, demo, s)
    answer = bay.ok("click", "#go", session=s)
    assert answer["url"] == f"{demo}/result?who=ada"
    assert bay.ok("get", "title", session=s)["value"] == "Signed up"
    assert bay.ok("get", "text", "#v-who", session=s)["value"] == "ada"
    bay.ok("close", session=s)


def test_a_navigation_that_never_commits_does_not_hold_the_click(bay: Bay, demo: str) -> None:
    s = "click-204"
    _page(bay, demo, s)
    answer = bay.ok("click", "#nothing", "--timeout", "20", session=s)
    assert answer["url"] == f"{demo}/form.html"
    # The page is still the form, and still answers.
    bay.ok("click", "#b", session=s)
    assert bay.ok("get", "text", "#out", session=s)["value"] == "pressed 1"
    bay.ok("close", session=s)


def test_a_click_inside_a_frame_still_works(bay: Bay, demo: str) -> None:
    s = "click-frame"
    bay.ok("open", f"{demo}/form.html", session=s)
    bay.ok(
        "eval",
        """(() => { const f = document.createElement('iframe');
          f.srcdoc = '<button onclick="this.textContent=\\'done\\'">Inside</button>';
          document.body.prepend(f); return 1; })()""",
        session=s,
    )
    bay.ok("wait", "iframe", session=s)
    snap = ""
    for _ in range(50):
        snap = bay.ok("snapshot", "-i", session=s)["snapshot"]
        if 'button "Inside"' in snap:
            break
    line = next(x for x in snap.splitlines() if 'button "Inside"' in x)
    ref = "@" + re.findall(r" @(\w+)", line)[0]
    assert ref.startswith("@f"), snap  # a ref of the child frame
    bay.ok("click", ref, session=s)
    done = bay.ok(
        "eval", "document.querySelector('iframe').contentDocument.body.innerText", session=s
    )
    assert done["value"] == "done"
    bay.ok("close", session=s)


DBL_JS = """(() => {
  window.dbl = [];
  const b = document.getElementById('b');
  for (const t of ['click', 'dblclick'])
    b.addEventListener(t, (e) => window.dbl.push(t + e.detail));
  return 'ok';
})()"""


def test_a_dblclick_by_ref_sends_two_clicks_and_one_dblclick(bay: Bay, demo: str) -> None:
    s = "dblclick-ref"
    _page(bay, demo, s)
    bay.ok("eval", DBL_JS, session=s)
    snap = bay.ok("snapshot", "-i", session=s)["snapshot"]
    line = next(x for x in snap.splitlines() if 'button "Press"' in x)
    ref = "@" + re.findall(r" @(\w+)", line)[0]
    answer = bay.ok("dblclick", ref, session=s)
    assert answer["url"] == f"{demo}/form.html"
    assert answer["target"] == ref
    # What a person's double-click sends: click (detail 1), click (detail 2), dblclick.
    events = json.loads(bay.ok("eval", "JSON.stringify(window.dbl)", session=s)["value"])
    assert events == ["click1", "click2", "dblclick2"]
    assert bay.ok("get", "text", "#out", session=s)["value"] == "pressed 2"
    bay.ok("close", session=s)


def test_a_covered_element_is_refused_and_not_double_clicked(bay: Bay, demo: str) -> None:
    s = "dblclick-covered"
    _page(bay, demo, s)
    bay.ok("eval", COVER_JS, session=s)
    r = bay("dblclick", "#b", "--timeout", "3", session=s)
    assert_refused(r, "target_covered")  # naming what covers it (tests/test_helpful_refusals.py)
    assert r.frame["data"]["verb"] == "dblclick", r.frame
    assert bay.ok("get", "text", "#out", session=s)["value"] == "not yet"
    bay.ok("eval", "document.getElementById('cover').remove()", session=s)  # negative control
    bay.ok("dblclick", "#b", session=s)
    assert bay.ok("get", "text", "#out", session=s)["value"] == "pressed 2"
    bay.ok("close", session=s)
