"""The approval gate (``bay_before_action``) sees every verb that acts on the page, whatever
way the agent reaches the element: by a target, at a point (``mouse``), through the focus
(``press``, ``keydown``/``keyup``, ``keyboard type|inserttext``), or as a drag's drop.

The policy is the example approval gate, told to refuse anything that reaches an element
named "Buy…", "Card number" or "Delete" (``BAY_GATE_WORDS``) by any pressing or typing verb.
Each attack is one an agent refused ``click @buy`` would try next; each checks the page
itself (the status line the button writes), not only the refusal.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from browserbay.keeper.actions import GATED, UNGATED
from browserbay.verbs import VERBS
from browserbay_testing import KEEPER_PLUGINS, Bay, assert_refused
from browserbay_testing.pages import serve_pages

GATE_SRC = Path(__file__).resolve().parents[1] / "examples" / "approval-gate" / "src"

SHOP = """<!doctype html><html><head><title>Gate shop</title>
<style>body{{margin:0;font-family:sans-serif}} button{{width:160px;height:40px}}
#trash{{width:200px;height:60px;border:2px dashed #888}}
#item{{width:200px;height:30px;background:#eee}}</style></head><body>
<p id=status>nothing yet</p>
<button id=wish onclick="say('wished')">Add to wishlist</button>
<button id=buy onclick="say('bought')">Buy now</button>
<label>Card number <input id=card></label>
<label>Note <input id=note></label>
<div id=host style="display:inline-block"></div>
<div id=item draggable=true>Old note</div>
<div id=trash aria-label="Delete">Delete</div>
<iframe id=cross src="{cross}/inner" width=300 height=80></iframe>
<script>
function say(t) {{ document.getElementById('status').textContent = t; }}
const root = document.getElementById('host').attachShadow({{mode: 'open'}});
root.innerHTML = '<button id=sbuy style="width:160px;height:40px">Buy in the shadow</button>';
root.getElementById('sbuy').onclick = () => say('bought in the shadow');
const trash = document.getElementById('trash');
trash.addEventListener('dragover', (e) => e.preventDefault());
trash.addEventListener('drop', (e) => {{ e.preventDefault(); say('deleted'); }});
document.getElementById('item').addEventListener('dragstart',
  (e) => e.dataTransfer.setData('text/plain', 'item'));
</script></body></html>"""

INNER = """<!doctype html><html><head><title>Inner</title></head><body style="margin:0">
<button id=ibuy style="width:160px;height:40px"
  onclick="document.getElementById('said').textContent='bought inside'">Buy inside</button>
<p id=said>not bought</p></body></html>"""

PRESSING = "click,dblclick,check,uncheck,mouse,press,keydown,keyup,keyboard,fill,type,drag"


@dataclass(frozen=True)
class Site:
    base: str
    cross: str


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    with serve_pages({"/inner": INNER}) as other:
        cross = other.replace("127.0.0.1", "localhost")  # another site: out of process
        with serve_pages({"/shop": SHOP.format(cross=cross)}) as base:
            yield Site(base, cross)


@pytest.fixture(scope="module")
def gated() -> Iterator[Bay]:
    """A keeper with the recorder and the example gate, refusing every pressing or typing
    verb that reaches a "Buy", "Card number" or "Delete" element."""
    home = Path(tempfile.mkdtemp(prefix="bay-ag-", dir="/tmp"))
    b = Bay(
        home,
        PYTHONPATH=f"{KEEPER_PLUGINS}:{GATE_SRC}",
        BAY_PLUGIN_MODULES="recorder,browserbay_approval_gate.plugin",
        BAY_GATE_APPROVALS=str(home / "approvals.txt"),
        BAY_GATE_WORDS="Buy,Card number,Delete",
        BAY_GATE_VERBS=PRESSING,
        BAY_GATE_MODE="refuse",  # the ask path: tests/test_approvals.py
    )
    yield b
    b.stop()
    shutil.rmtree(home, ignore_errors=True)


def _status(b: Bay, s: str) -> str:
    return str(b.ok("get", "text", "#status", session=s)["value"])


def _centre(b: Bay, s: str, target: str) -> tuple[str, str]:
    box = b.ok("get", "box", target, session=s)["value"]
    return str(box["x"] + box["width"] / 2), str(box["y"] + box["height"] / 2)


def _seen(b: Bay, s: str) -> list[dict[str, Any]]:
    return [
        r
        for r in b.recorded()
        if r["hook"] == "bay_before_action" and r["call"]["session"]["id"] == s
    ]


def test_a_refused_click_is_not_pressed_at_its_point_with_the_mouse(gated: Bay, site: Site) -> None:
    """``click #buy`` is refused; ``mouse move`` to its centre, ``mouse down``, ``mouse up``
    pressed it on the old code (the gate was never asked: status "bought")."""
    s = "gate-mouse"
    gated.ok("open", f"{site.base}/shop", session=s)
    assert_refused(gated("click", "#buy", session=s), "verb_refused")
    x, y = _centre(gated, s, "#buy")
    gated.ok("mouse", "move", x, y, session=s)  # a move presses nothing: the gate lets it by
    frame = assert_refused(gated("mouse", "down", session=s), "verb_refused")
    assert frame["data"]["name"] == "Buy now"
    assert_refused(gated("mouse", "up", session=s), "verb_refused")
    assert _status(gated, s) == "nothing yet"
    # The same point inside an open shadow root and inside a cross-origin iframe.
    for target in ("#host", "#cross"):
        x, y = _centre(gated, s, target)
        if target == "#cross":
            y = str(float(y) - 20)  # the inner button fills the frame's top 40 px
        gated.ok("mouse", "move", x, y, session=s)
        assert_refused(gated("mouse", "down", session=s), "verb_refused")
        assert_refused(gated("mouse", "up", session=s), "verb_refused")
    assert _status(gated, s) == "nothing yet"
    gated.ok("frame", "#cross", session=s)
    assert gated.ok("get", "text", "#said", session=s)["value"] == "not bought"
    gated.ok("frame", "main", session=s)
    # Elsewhere the mouse works as ever.
    x, y = _centre(gated, s, "#wish")
    gated.ok("mouse", "move", x, y, session=s)
    gated.ok("mouse", "down", session=s)
    gated.ok("mouse", "up", session=s)
    assert _status(gated, s) == "wished"
    gated.ok("close", session=s)


def test_a_refused_click_is_not_pressed_through_the_focus(gated: Bay, site: Site) -> None:
    """``focus #buy`` then ``press Enter`` / ``keydown Enter`` / ``keyboard type " "``: each
    pressed the button on the old code; inside a cross-origin iframe too."""
    s = "gate-keys"
    gated.ok("open", f"{site.base}/shop", session=s)
    gated.ok("focus", "#buy", session=s)  # focusing presses nothing
    frame = assert_refused(gated("press", "Enter", session=s), "verb_refused")
    assert frame["data"]["name"] == "Buy now"
    assert_refused(gated("keydown", "Enter", session=s), "verb_refused")
    assert_refused(gated("keyup", "Enter", session=s), "verb_refused")
    assert_refused(gated("keyboard", "type", " ", session=s), "verb_refused")
    assert_refused(gated("find", "text", "Buy now", "click", session=s), "verb_refused")
    assert _status(gated, s) == "nothing yet"
    gated.ok("frame", "#cross", session=s)
    gated.ok("focus", "#ibuy", session=s)
    gated.ok("frame", "main", session=s)
    assert_refused(gated("press", "Enter", session=s), "verb_refused")
    gated.ok("frame", "#cross", session=s)
    assert gated.ok("get", "text", "#said", session=s)["value"] == "not bought"
    gated.ok("frame", "main", session=s)
    gated.ok("focus", "#wish", session=s)
    gated.ok("press", "Enter", session=s)
    assert _status(gated, s) == "wished"
    gated.ok("close", session=s)


def test_a_refused_field_takes_no_keys_through_the_focus(gated: Bay, site: Site) -> None:
    """``fill #card`` is refused; ``focus #card`` then ``keyboard type`` or ``inserttext``
    typed into it on the old code. The text never reaches a hook, the recorder or the log."""
    s = "gate-type"
    secret = "4111-gate-secret"
    gated.ok("open", f"{site.base}/shop", session=s)
    assert_refused(gated("fill", "#card", secret, session=s), "verb_refused")
    gated.ok("focus", "#card", session=s)
    assert_refused(gated("keyboard", "type", secret, session=s), "verb_refused")
    assert_refused(gated("keyboard", "inserttext", secret, session=s), "verb_refused")
    assert_refused(gated("press", "4", session=s), "verb_refused")
    assert gated.ok("get", "value", "#card", session=s)["value"] == ""
    gated.ok("focus", "#note", session=s)
    gated.ok("keyboard", "type", "fine", session=s)
    assert gated.ok("get", "value", "#note", session=s)["value"] == "fine"
    gated.ok("close", session=s)
    assert secret not in (gated.home / "recorder.jsonl").read_text()
    assert secret not in (gated.home / "logs" / "keeper.log").read_text(errors="replace")


def test_a_drop_onto_a_refused_element_is_refused(gated: Bay, site: Site) -> None:
    """``drag #item #trash``: the gate was asked about the dragged item only, and the drop
    onto "Delete" happened on the old code (status "deleted")."""
    s = "gate-drag"
    gated.ok("open", f"{site.base}/shop", session=s)
    frame = assert_refused(gated("drag", "#item", "#trash", session=s), "verb_refused")
    assert frame["data"]["name"] == "Delete"
    assert _status(gated, s) == "nothing yet"
    gated.ok("close", session=s)


def test_the_gate_sees_what_each_verb_acts_on(gated: Bay, site: Site) -> None:
    """The hook's arguments: a point's element with the coordinates, the focused element with
    the key, the frame it is in, the actor — and a typed text only as its length."""
    s = "gate-seen"
    gated.ok("open", f"{site.base}/shop", session=s)
    x, y = _centre(gated, s, "#wish")
    gated.ok("mouse", "move", x, y, session=s)
    gated.ok("mouse", "down", session=s)
    gated.ok("mouse", "up", session=s)
    gated.ok("focus", "#note", session=s)
    gated.ok("press", "Control+a", session=s)
    gated.ok("keyboard", "type", "abc-typed", session=s)
    gated.ok("frame", "#cross", session=s)
    gated.ok("focus", "#ibuy", session=s)
    gated.ok("frame", "main", session=s)
    assert_refused(gated("keydown", "Shift", session=s), "verb_refused")  # keys to "Buy inside"
    gated.ok("close", session=s)
    seen = _seen(gated, s)
    by = [(r["call"]["verb"], r["call"]["args"].get("action"), r["target"]["via"]) for r in seen]
    assert by == [
        ("mouse", "move", "point"),
        ("mouse", "down", "point"),
        ("mouse", "up", "point"),
        ("focus", None, "target"),
        ("press", None, "focus"),
        ("keyboard", "type", "focus"),
        ("focus", None, "target"),
        ("keydown", None, "focus"),
    ]
    down = seen[1]["target"]
    assert (down["role"], down["name"], down["selector"]) == (
        "button",
        "Add to wishlist",
        "button#wish",
    )
    assert down["point"] == [float(x), float(y)]
    assert down["frame"] == f"{site.base}/shop"
    press = seen[4]
    assert press["target"]["key"] == "Control+a"
    assert (press["target"]["role"], press["target"]["name"]) == ("textbox", "Note")
    typed = seen[5]
    assert typed["call"]["args"]["text"] == {"chars": len("abc-typed")}
    assert typed["target"]["key"] is None
    held = seen[7]["target"]
    assert (held["key"], held["name"], held["frame"]) == (
        "Shift",
        "Buy inside",
        f"{site.cross}/inner",
    )
    assert all(r["call"]["actor"] == "owner" for r in seen)
    assert "abc-typed" not in (gated.home / "recorder.jsonl").read_text()


def test_every_verb_that_changes_something_is_gated_or_says_why_not() -> None:
    """A new acting verb cannot slip past the gate unnoticed: each verb of the table that
    changes something (``mutates``) is in ``GATED`` with how the gate sees it, or in
    ``UNGATED`` with the reason it acts on no element."""
    acting = {v.name for v in VERBS if v.mutates}
    assert acting - set(GATED) - set(UNGATED) == set()
    assert set(GATED) & set(UNGATED) == set()
    assert set(GATED) | set(UNGATED) <= {v.name for v in VERBS}
    assert set(GATED.values()) == {"target", "point", "focus"}
