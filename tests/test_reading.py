"""The reading verbs on real pages served here: ``get count|box|attr|styles``, ``is
visible|enabled|checked``, ``find <by> <value> <action>`` (one element or a typed refusal) and
``bay frame`` — a same-origin and a cross-origin (out-of-process) iframe, served from two
origins (127.0.0.1 and localhost, on different ports), a removed frame and a navigated page."""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from browserbay.api import SyncClient
from browserbay.errors import BayRefusal
from browserbay_testing import KEEPER_PLUGINS, Bay, assert_refused
from browserbay_testing.pages import serve_pages

GATE_SRC = Path(__file__).resolve().parents[1] / "examples" / "approval-gate" / "src"

FORM = """<!doctype html><html><head><title>Reading</title>
<style>#big { position: absolute; left: 20px; top: 30px; width: 200px; height: 50px;
  margin: 0; color: rgb(255, 0, 0); display: block }</style></head><body>
<div id=big data-kind="box">Big</div>
<ul><li>one</li><li>two</li><li>three</li></ul>
<a id=home href="/home" title="Go home">Home</a>
<label>Email <input id=email></label>
<input id=search placeholder="Search here">
<img alt="A red square" src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" width=10 height=10>
<input id=agree type=checkbox checked><label for=agree>Agree</label>
<input id=news type=checkbox><label for=news>News</label>
<button id=off disabled>Off</button>
<button id=save onclick="document.getElementById('out').textContent='saved'">Save</button>
<button onclick="document.getElementById('out').textContent='save all'">Save all</button>
<span data-testid=total>42 EUR</span>
<p id=hidden style="display:none">hidden</p>
<p id=out>nothing yet</p>
<div style="margin-top:300px"></div>
</body></html>"""

BOXES = """<!doctype html><html><head><title>Boxes</title><style>body { margin: 0 }</style>
</head><body>
<svg style="position: absolute; left: 0; top: 0" width=100 height=100>
<rect id=shape x=10 y=10 width=20 height=20 fill=red stroke=black stroke-width=4></rect></svg>
<iframe id=framed src="/framed" style="position: absolute; left: 50px; top: 160px; border: 0"
  width=200 height=100></iframe>
<div id=low style="position: absolute; left: 20px; top: 1500px; width: 30px; height: 10px">low
</div>
<span id=empty style="position: absolute; left: 300px; top: 40px"></span>
<input id=field value="typed before" style="position: absolute; left: 300px; top: 60px">
<div style="height: 3000px"></div>
</body></html>"""

FRAMED = """<!doctype html><html><body style="margin: 0">
<div id=inner style="position: absolute; left: 5px; top: 7px; width: 11px; height: 13px">in</div>
</body></html>"""

INNER = """<!doctype html><html><head><title>Inner</title></head><body>
<h1>Inside</h1>
<button onclick="document.getElementById('said').textContent='pressed inside'">Press</button>
<input id=name placeholder="Your name">
<p id=said>not pressed</p>
</body></html>"""

OUTER = """<!doctype html><html><head><title>Outer</title></head><body>
<h1>Outside</h1>
<button onclick="document.getElementById('said').textContent='pressed outside'">Press</button>
<p id=said>not pressed</p>
<iframe id=same src="/inner" width=400 height=200></iframe>
<iframe id=cross src="{cross}/inner" width=400 height=200></iframe>
</body></html>"""


@dataclass(frozen=True)
class Site:
    base: str
    """http://127.0.0.1:PORT: the pages."""
    cross: str
    """http://localhost:OTHER: another origin (and site), so its iframe is out of process."""


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    with serve_pages({"/inner": INNER}) as other:
        cross = other.replace("127.0.0.1", "localhost")  # another site: out of process
        with serve_pages(_pages(cross)) as base:
            yield Site(base, cross)


def _pages(cross: str) -> dict[str, str]:
    return {
        "/form": FORM,
        "/boxes": BOXES,
        "/framed": FRAMED,
        "/inner": INNER,
        "/outer": OUTER.format(cross=cross),
        "/nested": '<!doctype html><title>Nested</title><iframe id=n src="/outer"></iframe>',
    }


def _ref(snapshot: str, needle: str) -> str:
    line = next(x for x in snapshot.splitlines() if needle in x)
    return "@" + re.findall(r" @(\w+)", line)[0]


# -- get --------------------------------------------------------------------------------


def test_get_count_box_attr_and_styles(bay: Bay, site: Site) -> None:
    s = "read-get"
    bay.ok("open", f"{site.base}/form", session=s)
    assert bay.ok("get", "count", "li", session=s)["value"] == 3
    assert bay.ok("get", "count", "table", session=s)["value"] == 0  # no match is an answer
    box = bay.ok("get", "box", "#big", session=s)["value"]
    assert box == {"x": 20, "y": 30, "width": 200, "height": 50}
    shown = bay("get", "box", "#big", session=s, json_=False).stdout
    assert shown.strip() == "x=20 y=30 w=200 h=50"
    hidden = bay.ok("get", "box", "#hidden", session=s)
    assert hidden["value"] is None
    assert bay.ok("get", "attr", "#big", "data-kind", session=s)["value"] == "box"
    assert bay.ok("get", "attr", "#home", "href", session=s)["value"] == "/home"
    assert bay.ok("get", "attr", "#big", "nope", session=s)["value"] is None
    styles = bay.ok("get", "styles", "#big", "color,display", session=s)["value"]
    assert styles == {"color": "rgb(255, 0, 0)", "display": "block"}
    every = bay.ok("get", "styles", "#big", session=s)["value"]
    assert every["position"] == "absolute"
    assert every["width"] == "200px"
    assert len(every) < 20  # bounded: a short default list, never all ~350 properties
    # a ref from a snapshot works as a target too
    snap = bay.ok("snapshot", "-i", session=s)["snapshot"]
    assert bay.ok("get", "attr", _ref(snap, 'link "Home"'), "title", session=s)["value"] == (
        "Go home"
    )
    bay.ok("close", session=s)


def test_get_box_text_value_where_the_one_trip_read_does_not_apply(bay: Bay, site: Site) -> None:
    """``get box|text|value`` read an element that is there in one evaluate; where that read
    would differ from Playwright's (an SVG shape, whose box takes in its stroke; an element
    in a frame, whose box is offset by the frame's; an empty box; a scrolled page; no field;
    nothing there), the answer is still Playwright's."""
    s = "read-boxes"
    bay.ok("open", f"{site.base}/boxes", session=s)
    # The stroke (4 px, half outside the 20 px square) is in the box, as Playwright says.
    assert bay.ok("get", "box", "#shape", session=s)["value"] == {
        "x": 8,
        "y": 8,
        "width": 24,
        "height": 24,
    }
    assert bay.ok("get", "box", "#empty", session=s)["value"]["width"] == 0
    assert bay.ok("get", "value", "#field", session=s)["value"] == "typed before"
    assert bay.ok("get", "text", "#low", session=s)["value"] == "low"
    assert_refused(bay("get", "value", "#low", session=s), "action_failed")  # no field
    assert_refused(bay("get", "text", "#nowhere", session=s), "target_not_found")
    bay.ok("eval", "window.scrollTo(0, 1000)", session=s)
    low = bay.ok("get", "box", "#low", session=s)["value"]
    assert low == {"x": 20, "y": 500, "width": 30, "height": 10}  # from the viewport's top
    bay.ok("eval", "window.scrollTo(0, 0)", session=s)
    bay.ok("frame", "#framed", session=s)
    inner = bay.ok("get", "box", "#inner", session=s)["value"]  # the main frame's pixels
    assert inner == {"x": 55, "y": 167, "width": 11, "height": 13}
    assert bay.ok("get", "text", "#inner", session=s)["value"] == "in"
    bay.ok("close", session=s)


def test_get_refuses_what_it_cannot_read(bay: Bay, site: Site) -> None:
    s = "read-get-bad"
    bay.ok("open", f"{site.base}/form", session=s)
    assert_refused(bay("get", "attr", "#big", session=s), "usage")  # no attribute named
    assert_refused(bay("get", "count", session=s), "usage")  # no selector
    assert_refused(bay("get", "title", "x", "y", session=s), "usage")  # a name it takes not
    too_many = ",".join(f"p{i}" for i in range(41))
    assert_refused(bay("get", "styles", "#big", too_many, session=s), "usage")
    assert_refused(bay("get", "box", "#nothing", "--timeout", "2", session=s), "target_not_found")
    bay.ok("close", session=s)


# -- is ---------------------------------------------------------------------------------


def test_is_visible_enabled_checked_true_and_false(bay: Bay, site: Site) -> None:
    s = "read-is"
    bay.ok("open", f"{site.base}/form", session=s)
    cases = [
        ("visible", "#big", True),
        ("visible", "#hidden", False),
        ("visible", "#no-such-element", False),
        ("enabled", "#save", True),
        ("enabled", "#off", False),
        ("checked", "#agree", True),
        ("checked", "#news", False),
    ]
    for what, target, expected in cases:
        r = bay("is", what, target, session=s)
        assert r.code == 0, (what, target, r)  # exit status 0 either way
        assert r.data["value"] is expected, (what, target, r.data)
        text = bay("is", what, target, session=s, json_=False).stdout.strip().splitlines()[0]
        assert text == ("true" if expected else "false")
    assert_refused(bay("is", "checked", "#save", session=s), "action_failed")  # no checkbox
    assert_refused(bay("is", "enabled", "#gone", "--timeout", "2", session=s), "target_not_found")
    bay.ok("close", session=s)


# -- find -------------------------------------------------------------------------------


def test_find_by_each_locator_kind_acts_on_the_one_element(bay: Bay, site: Site) -> None:
    s = "read-find"
    bay.ok("open", f"{site.base}/form", session=s)
    answer = bay.ok("find", "role", "button", "click", "--name", "Save", "--exact", session=s)
    assert answer["action"] == "click"
    assert bay.ok("get", "text", "#out", session=s)["value"] == "saved"
    bay.ok("find", "text", "Save all", "click", session=s)
    assert bay.ok("get", "text", "#out", session=s)["value"] == "save all"
    bay.ok("find", "label", "Email", "fill", "ada@example.org", session=s)
    assert bay.ok("get", "value", "#email", session=s)["value"] == "ada@example.org"
    bay.ok("find", "placeholder", "Search", "type", "kittens", session=s)
    assert bay.ok("get", "value", "#search", session=s)["value"] == "kittens"
    bay.ok("find", "label", "News", "check", session=s)
    assert bay.ok("is", "checked", "#news", session=s)["value"] is True
    bay.ok("find", "label", "Agree", "uncheck", session=s)
    assert bay.ok("is", "checked", "#agree", session=s)["value"] is False
    assert bay.ok("find", "testid", "total", "text", session=s)["value"] == "42 EUR"
    bay.ok("find", "alt", "A red square", "hover", session=s)
    bay.ok("find", "title", "Go home", "focus", session=s)
    assert bay.ok("eval", "document.activeElement.id", session=s)["value"] == "home"
    bay.ok("close", session=s)


def test_find_typed_text_is_never_in_the_audit(bay: Bay, site: Site) -> None:
    s = "read-find-secret"
    secret = "hunter2-typed-by-find"
    bay.ok("open", f"{site.base}/form", session=s)
    bay.ok("find", "label", "Email", "fill", secret, session=s)
    assert bay.ok("get", "value", "#email", session=s)["value"] == secret
    audit = bay("audit", "--session", s, session=s)
    assert audit.code == 0, audit
    assert "find" in audit.stdout
    assert secret not in audit.stdout
    bay.ok("close", session=s)


def test_find_refuses_several_matches_naming_them_and_acts_on_none(bay: Bay, site: Site) -> None:
    s = "read-find-ambiguous"
    bay.ok("open", f"{site.base}/form", session=s)
    r = bay("find", "role", "button", "click", "--name", "Save", session=s)  # Save, Save all
    frame = assert_refused(r, "target_ambiguous")
    assert frame["data"]["count"] == 2
    assert 'button "Save"' in frame["message"]
    assert 'button "Save all"' in frame["message"]
    assert bay.ok("get", "text", "#out", session=s)["value"] == "nothing yet"  # nothing pressed
    # --exact narrows it to the one
    bay.ok("find", "role", "button", "click", "--name", "Save", "--exact", session=s)
    assert bay.ok("get", "text", "#out", session=s)["value"] == "saved"
    bay.ok("close", session=s)


def test_find_refuses_no_match_and_bad_usage(bay: Bay, site: Site) -> None:
    s = "read-find-none"
    bay.ok("open", f"{site.base}/form", session=s)
    r = bay("find", "text", "Nowhere on this page", "click", "--timeout", "2", session=s)
    frame = assert_refused(r, "target_not_found")
    assert "Nowhere on this page" in frame["message"]
    assert_refused(bay("find", "text", "Save all", "fill", session=s), "usage")  # no text
    assert_refused(bay("find", "text", "Save all", "click", "x", session=s), "usage")
    assert_refused(bay("find", "text", "Home", "click", "--name", "x", session=s), "usage")
    assert_refused(bay("find", "role", "buton", "click", session=s), "usage")  # no such role
    assert bay.ok("get", "text", "#out", session=s)["value"] == "nothing yet"
    bay.ok("close", session=s)


@pytest.fixture(scope="module")
def gated() -> Iterator[Bay]:
    """A keeper with the recorder and the example approval gate: it refuses a click or
    double-click on an element named "Buy…"."""
    home = Path(tempfile.mkdtemp(prefix="bay-rg-", dir="/tmp"))
    b = Bay(
        home,
        PYTHONPATH=f"{KEEPER_PLUGINS}:{GATE_SRC}",
        BAY_PLUGIN_MODULES="recorder,browserbay_approval_gate.plugin",
        BAY_GATE_APPROVALS=str(home / "approvals.txt"),
        BAY_GATE_VERBS="click,dblclick",
        BAY_GATE_MODE="refuse",  # the ask path: tests/test_approvals.py
    )
    yield b
    b.stop()
    shutil.rmtree(home, ignore_errors=True)


def test_find_cannot_click_past_the_approval_gate(gated: Bay, demo: str) -> None:
    """The attack: the gate (bay_before_action) refuses a click on "Buy now"; find names the
    button another way and clicks it. Its action runs through the same gate, as ``click``."""
    s = "read-find-gated"
    gated.ok("open", f"{demo}/shop.html", session=s)
    r = gated("find", "role", "button", "click", "--name", "Buy now", session=s)
    frame = assert_refused(r, "verb_refused")
    assert frame["data"]["name"] == "Buy now"
    assert_refused(gated("find", "text", "Buy now", "dblclick", session=s), "verb_refused")
    assert gated.ok("get", "text", "#status", session=s)["value"] != "Order placed: 1 kettle"
    gated.ok("find", "role", "button", "click", "--name", "Add to wishlist", session=s)
    assert gated.ok("get", "text", "#status", session=s)["value"] == "Added to your wishlist"
    gated.ok("close", session=s)


def test_a_policy_sees_finds_action_and_never_its_text(gated: Bay, demo: str) -> None:
    s = "read-find-seen"
    gated.ok("open", f"{demo}/form.html", session=s)
    gated.ok("find", "label", "Name", "fill", "hunter2-by-find", session=s)
    gated.ok("find", "label", "Name", "text", session=s)  # reading: no action to gate
    seen = [
        r
        for r in gated.recorded()
        if r["hook"] == "bay_before_action" and r["call"]["session"]["id"] == s
    ]
    assert [r["call"]["verb"] for r in seen] == ["fill"]
    assert seen[0]["target"]["target"] == 'find label "Name"'
    assert seen[0]["target"]["role"] == "textbox"
    assert seen[0]["call"]["args"]["text"] == {"chars": len("hunter2-by-find")}
    assert "hunter2" not in (gated.home / "recorder.jsonl").read_text()
    gated.ok("close", session=s)


# -- frame ------------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["same", "cross"])
def test_frame_snapshot_and_click_inside_then_main(bay: Bay, site: Site, which: str) -> None:
    s = f"read-frame-{which}"
    bay.ok("open", f"{site.base}/outer", session=s)
    entered = bay.ok("frame", f"#{which}", session=s)
    expected = site.base if which == "same" else site.cross
    assert entered["frame"]["url"] == f"{expected}/inner"
    snap = bay.ok("snapshot", "-i", session=s)["snapshot"]
    assert 'textbox "Your name"' in snap
    press = _ref(snap, 'button "Press"')
    assert press.startswith("@e")  # the frame's own refs, shown plain
    bay.ok("click", press, session=s)
    assert bay.ok("get", "text", "#said", session=s)["value"] == "pressed inside"
    bay.ok("fill", "#name", "Ada", session=s)
    assert bay.ok("get", "value", "#name", session=s)["value"] == "Ada"
    assert bay.ok("is", "visible", "h1", session=s)["value"] is True
    assert bay.ok("get", "text", "h1", session=s)["value"] == "Inside"
    assert bay.ok("eval", "document.title", session=s)["value"] == "Inner"
    bay.ok("find", "role", "button", "click", "--name", "Press", session=s)
    status = bay.ok("status", session=s)
    tab = status["leases"][0]["tabs"][0]
    assert tab["frame"] == {"target": f"#{which}", "gone": False}
    shown = bay("status", session=s, json_=False).stdout
    assert f"acts inside frame #{which}" in shown
    # back in the main frame: the outside button, the outside text
    left = bay.ok("frame", "main", session=s)
    assert left["frame"] is None
    assert bay.ok("get", "text", "#said", session=s)["value"] == "not pressed"
    bay.ok("click", "button", session=s)
    assert bay.ok("get", "text", "#said", session=s)["value"] == "pressed outside"
    assert bay.ok("status", session=s)["leases"][0]["tabs"][0]["frame"] is None
    bay.ok("close", session=s)


def test_frame_by_ref_from_a_page_snapshot(bay: Bay, site: Site) -> None:
    s = "read-frame-ref"
    bay.ok("open", f"{site.base}/outer", session=s)
    snap = bay.ok("snapshot", session=s)["snapshot"]
    iframe = _ref(snap, "iframe")
    inner_press = [x for x in snap.splitlines() if 'button "Press"' in x][1]
    press = "@" + re.findall(r" @(\w+)", inner_press)[0]
    assert press.startswith("@f")  # the page's snapshot shows the frame's refs prefixed
    bay.ok("frame", iframe, session=s)
    assert bay.ok("get", "text", "h1", session=s)["value"] == "Inside"
    bay.ok("click", press, session=s)  # that ref still names the same element
    assert bay.ok("get", "text", "#said", session=s)["value"] == "pressed inside"
    bay.ok("close", session=s)


def test_frame_steps_into_a_frame_of_the_frame(bay: Bay, site: Site) -> None:
    s = "read-frame-nested"
    bay.ok("open", f"{site.base}/nested", session=s)
    bay.ok("frame", "#n", session=s)
    assert bay.ok("get", "text", "h1", session=s)["value"] == "Outside"
    bay.ok("frame", "#cross", session=s)  # looked for inside #n
    assert bay.ok("get", "text", "h1", session=s)["value"] == "Inside"
    bay.ok("frame", "main", session=s)
    assert bay.ok("get", "count", "h1", session=s)["value"] == 0  # the page has none of its own
    bay.ok("close", session=s)


def test_a_removed_frame_is_refused_until_frame_main(bay: Bay, site: Site) -> None:
    s = "read-frame-removed"
    bay.ok("open", f"{site.base}/outer", session=s)
    bay.ok("frame", "#cross", session=s)
    bay.ok("frame", "main", session=s)
    bay.ok("frame", "#same", session=s)
    later = "setTimeout(() => window.parent.document.getElementById('same').remove(), 50); 'ok'"
    assert bay.ok("eval", later, session=s)["value"] == "ok"
    time.sleep(0.5)  # the frame's own script removes it, after eval answered
    for argv in (
        ("snapshot",),
        ("click", "button"),
        ("get", "text", "h1"),
        ("is", "visible", "h1"),
    ):
        frame = assert_refused(bay(*argv, session=s), "frame_gone")
        assert "bay frame main" in frame["way_out"]
    status = bay.ok("status", session=s)
    assert status["leases"][0]["tabs"][0]["frame"] == {"target": "#same", "gone": True}
    # nothing landed in the main frame meanwhile
    bay.ok("frame", "main", session=s)
    assert bay.ok("get", "text", "#said", session=s)["value"] == "not pressed"
    bay.ok("close", session=s)


def test_a_navigated_page_leaves_the_frame_gone(bay: Bay, site: Site) -> None:
    s = "read-frame-navigated"
    bay.ok("open", f"{site.base}/outer", session=s)
    bay.ok("frame", "#cross", session=s)
    bay.ok("open", f"{site.base}/form", session=s)
    assert_refused(bay("get", "count", "li", session=s), "frame_gone")
    bay.ok("frame", "main", session=s)
    assert bay.ok("get", "count", "li", session=s)["value"] == 3
    bay.ok("close", session=s)


def test_frame_of_an_element_that_is_no_iframe_is_refused(bay: Bay, site: Site) -> None:
    s = "read-frame-not"
    bay.ok("open", f"{site.base}/outer", session=s)
    frame = assert_refused(bay("frame", "h1", session=s), "not_a_frame")
    assert "<h1>" in frame["message"]
    assert bay.ok("status", session=s)["leases"][0]["tabs"][0]["frame"] is None
    assert_refused(bay("frame", "#nope", "--timeout", "2", session=s), "target_not_found")
    bay.ok("close", session=s)


# -- the Python API ---------------------------------------------------------------------


def test_the_python_api_reads_finds_and_enters_frames(bay: Bay, site: Site) -> None:
    with SyncClient("read-api", home=bay.home) as c:
        c.open(f"{site.base}/form")
        assert c.get("count", "li").value == 3
        assert c.get("attr", "#big", "data-kind").value == "box"
        assert c.get("styles", "#big", "display").value == {"display": "block"}
        assert c.get("box", "#big").value == {"x": 20, "y": 30, "width": 200, "height": 50}
        assert c.is_("checked", "#agree").value is True
        assert c.is_("enabled", "#off").value is False
        assert c.find("testid", "total", "text").value == "42 EUR"
        c.find("role", "button", "click", name="Save", exact=True)
        assert c.get("text", "#out").value == "saved"
        with pytest.raises(BayRefusal) as ambiguous:
            c.find("role", "button", "click", name="Save")
        assert ambiguous.value.code == "target_ambiguous"
        c.open(f"{site.base}/outer")
        entered = c.frame("#cross")
        assert entered.data["frame"]["url"] == f"{site.cross}/inner"
        c.find("role", "button", "click", name="Press")
        assert c.get("text", "#said").value == "pressed inside"
        c.frame("main")
        assert c.get("text", "#said").value == "not pressed"
        c.close()
