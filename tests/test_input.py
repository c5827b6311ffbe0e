"""The input verbs on real pages that report what they received, through the real CLI and
keeper: an HTML5 drag-and-drop list and a pointer-driven sortable list (each reports its new
order), focus, ``keyboard type`` (key events) against ``keyboard inserttext`` (none), chords
and held keys, the mouse drawing on a canvas and scrolling by the wheel, ``scrollintoview``,
and ``select`` of several options."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from browserbay import errors
from browserbay.api import SyncClient
from browserbay_testing import Bay, assert_refused
from browserbay_testing.pages import serve_pages

#: Drop an item on another: it goes after it. The order comes from the drop's dataTransfer.
DND = """<!doctype html><title>dnd</title>
<style>li { height: 40px; margin: 4px; background: #ddd; list-style: none; }</style>
<ul id=list>
  <li draggable=true id=a>A</li><li draggable=true id=b>B</li><li draggable=true id=c>C</li>
</ul>
<p id=order></p>
<script>
const report = () => order.textContent =
  [...document.querySelectorAll('#list li')].map(l => l.id).join('');
for (const li of document.querySelectorAll('#list li')) {
  li.addEventListener('dragstart', e => e.dataTransfer.setData('text/plain', li.id));
  li.addEventListener('dragover', e => e.preventDefault());
  li.addEventListener('drop', e => {
    e.preventDefault();
    li.after(document.getElementById(e.dataTransfer.getData('text/plain')));
    report();
  });
}
report();
</script>"""

#: MiniWoB's drag-shapes: the drop zone is an SVG ``rect`` with ``fill="none"``, so the point
#: at its centre belongs to the ``svg`` around it (Playwright: "<svg> intercepts pointer
#: events" until the deadline).
SVG_DROP = """<!doctype html><title>svg drop</title>
<svg id="area" width="300" height="200"><circle id="dot" cx="30" cy="30" r="15" fill="red"/>
<rect id="zone" x="150" y="50" width="100" height="100" fill="none" stroke="black"/></svg>"""

#: A sortable list driven by pointer events, as the libraries do without HTML5 drag: an item
#: moves only once the pointer has gone 8 px, and the drop counts only after 3 moves.
SORTABLE = """<!doctype html><title>sortable</title>
<style>
  body { margin: 0; } ul { margin: 0; padding: 0; }
  li { height: 40px; list-style: none; background: #eee; border-bottom: 1px solid #999; }
</style>
<ul id=list><li id=s1>one</li><li id=s2>two</li><li id=s3>three</li></ul>
<p id=order></p>
<script>
const report = () => order.textContent = [...list.children].map(l => l.id.slice(1)).join('');
let drag = null;
list.addEventListener('pointerdown', e => {
  drag = {li: e.target.closest('li'), y0: e.clientY, moves: 0, active: false};
});
document.addEventListener('pointermove', e => {
  if (!drag) return;
  drag.moves++;
  if (Math.abs(e.clientY - drag.y0) < 8) return;
  drag.active = true;
  for (const it of [...list.children]) {
    const r = it.getBoundingClientRect();
    if (it !== drag.li && e.clientY > r.top && e.clientY < r.bottom) {
      if (e.clientY > drag.li.getBoundingClientRect().top) it.after(drag.li);
      else it.before(drag.li);
    }
  }
});
document.addEventListener('pointerup', () => {
  if (drag && drag.active && drag.moves >= 3) report();
  drag = null;
});
report();
</script>"""

#: Fields that count their key events, one that blurs itself as it gets the focus (MiniWoB's
#: focus-text does), a log of every keydown with its modifiers, a div that cannot take the
#: focus, a multiple select, a canvas that draws while a button is down, and a page tall
#: enough to scroll.
KEYS = """<!doctype html><title>keys</title>
<style>body { margin: 0; } canvas { position: absolute; left: 0; top: 0; }</style>
<canvas id=pad width=300 height=200></canvas>
<div style="height: 220px"></div>
<input id=k> <input id=other> <input id=flee> <div id=plain>not focusable</div>
<select id=colors multiple>
  <option value=r>Red</option><option value=g>Green</option><option value=b>Blue</option>
</select>
<select id=size><option value=s>Small</option><option value=l>Large</option></select>
<div style="height: 3000px"></div>
<p id=far>far down</p>
<script>
window.keydowns = 0;
window.log = [];
k.addEventListener('keydown', () => keydowns++);
window.fled = 0;
flee.addEventListener('focus', () => { fled++; flee.blur(); });
document.addEventListener('keydown', e =>
  log.push((e.ctrlKey ? 'C' : '') + (e.shiftKey ? 'S' : '') + ':' + e.key));
window.mouse = [];
const ctx = pad.getContext('2d');
let down = false;
pad.addEventListener('mousedown', e => {
  down = true; mouse.push('down ' + e.clientX + ',' + e.clientY + (e.shiftKey ? ' shift' : ''));
  ctx.beginPath(); ctx.moveTo(e.offsetX, e.offsetY);
});
pad.addEventListener('mousemove', e => {
  if (!down) return;
  mouse.push('move'); ctx.lineWidth = 4; ctx.lineTo(e.offsetX, e.offsetY); ctx.stroke();
});
pad.addEventListener('mouseup', e => {
  down = false; mouse.push('up ' + e.clientX + ',' + e.clientY);
});
window.painted = () => {
  const d = ctx.getImageData(0, 0, pad.width, pad.height).data;
  let n = 0;
  for (let i = 3; i < d.length; i += 4) if (d[i]) n++;
  return n;
};
</script>"""


#: A field the page adds a moment after it loaded: a verb that names it waits for it.
LATE = """<!doctype html><title>late</title><p>wait</p>
<script>setTimeout(() => {
  const i = document.createElement('input'); i.id = 'late'; document.body.append(i);
}, 300);</script>"""


#: Fields filled by ref: an input and a textarea with text in them already, a contenteditable,
#: a read-only field; the page counts its input events and has spoiled its own world's
#: select() and focus() (the fill's selection is made in Playwright's utility world).
FILL = """<!doctype html><title>fill</title>
<input id=who aria-label=Name value="old name"> <textarea id=note aria-label=Note>old
note</textarea> <div id=ed contenteditable=true role=textbox aria-label=Editor>old text</div>
<input id=ro aria-label=Fixed readonly value=fixed>
<script>
window.inputs = 0;
document.addEventListener('input', () => inputs++);
HTMLInputElement.prototype.select = () => {};
HTMLElement.prototype.focus = () => {};
</script>"""


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    pages = {
        "/fill": FILL,
        "/dnd": DND,
        "/sortable": SORTABLE,
        "/keys": KEYS,
        "/svgdrop": SVG_DROP,
        "/late": LATE,
    }
    with serve_pages(pages) as base:
        yield base


def _value(bay: Bay, js: str, s: str) -> object:
    return bay.ok("eval", js, session=s)["value"]


def test_drag_reorders_an_html5_drag_and_drop_list(bay: Bay, site: str) -> None:
    s = "in-dnd"
    bay.ok("open", f"{site}/dnd", session=s)
    assert bay.ok("get", "text", "#order", session=s)["value"] == "abc"
    answer = bay.ok("drag", "#a", "#c", session=s)
    assert "point" in answer
    assert bay.ok("get", "text", "#order", session=s)["value"] == "bca"
    bay.ok("close", session=s)


def test_a_drag_onto_a_covered_drop_zone_is_refused_naming_the_cover(bay: Bay, site: str) -> None:
    """On the old code this waited out the whole deadline and answered Playwright's raw
    'Locator.drag_to: Timeout …ms exceeded' (MiniWoB drag-shapes)."""
    s = "in-svgdrop"
    bay.ok("open", f"{site}/svgdrop", session=s)
    r = bay("drag", "#dot", "#zone", "--timeout", "20", session=s)
    frame = assert_refused(r, "target_covered")
    assert frame["data"]["target"] == "#zone", frame
    assert "svg#area" in frame["message"], frame
    assert "Timeout" not in frame["message"], frame
    bay.ok("close", session=s)


def test_drag_reorders_a_pointer_driven_sortable_list(bay: Bay, site: str) -> None:
    s = "in-sortable"
    bay.ok("open", f"{site}/sortable", session=s)
    assert bay.ok("get", "text", "#order", session=s)["value"] == "123"
    r = bay("drag", "#s1", "#s3", json_=False, session=s)
    assert r.code == 0, r
    assert re.fullmatch(r"dropped at [\d.]+,[\d.]+", r.stdout.strip()), r.stdout
    assert bay.ok("get", "text", "#order", session=s)["value"] == "231"
    bay.ok("close", session=s)


def test_focus_sends_the_keys_to_the_element_and_refuses_what_cannot_take_it(
    bay: Bay, site: str
) -> None:
    s = "in-focus"
    bay.ok("open", f"{site}/keys", session=s)
    assert _value(bay, "document.activeElement.id", s) == ""
    bay.ok("focus", "#other", session=s)
    assert _value(bay, "document.activeElement.id", s) == "other"
    frame = assert_refused(bay("focus", "#plain", session=s), "action_failed")
    assert "not focusable" in frame["message"], frame
    assert _value(bay, "document.activeElement.id", s) == "other"  # nothing moved
    bay.ok("close", session=s)


def test_focus_by_ref_and_on_a_field_the_page_adds_later(bay: Bay, site: str) -> None:
    """focus takes an element there now in one round trip; a ref goes that way too, and a
    selector that matches nothing yet is waited for as before (the one-trip try misses)."""
    s = "in-focus-ref"
    bay.ok("open", f"{site}/keys", session=s)
    snap = bay.ok("snapshot", "-i", session=s)["snapshot"]
    ref = re.findall(r"textbox.*?@(e\d+)", snap)[1]  # the second field: #other
    bay.ok("focus", "@" + ref, session=s)
    assert _value(bay, "document.activeElement.id", s) == "other"
    # type by ref: the element focused (in one call), then its keys
    first = re.findall(r"textbox.*?@(e\d+)", snap)[0]  # #k, which counts its keydowns
    bay.ok("type", "@" + first, "zq", session=s)
    assert _value(bay, "[document.activeElement.id, k.value, keydowns]", s) == ["k", "zq", 2]
    bay.ok("focus", "@" + ref, session=s)
    stale = assert_refused(bay("focus", "@e999", session=s), "ref_stale")
    assert "e999" in stale["message"], stale
    assert _value(bay, "document.activeElement.id", s) == "other"
    bay.ok("open", f"{site}/late", session=s)
    bay.ok("focus", "#late", session=s)
    assert _value(bay, "document.activeElement.id", s) == "late"
    bay.ok("close", session=s)


def test_fill_by_ref_replaces_the_text_of_inputs_textareas_and_editables(
    bay: Bay, site: str
) -> None:
    s = "in-fill"
    bay.ok("open", f"{site}/fill", session=s)
    snap = bay.ok("snapshot", "-i", session=s)["snapshot"]
    refs = {name: "@" + re.findall(rf'"{name}".*?@(e\d+)', snap)[0] for name in ("Name", "Note")}
    refs["Editor"] = "@" + re.findall(r'"Editor".*?@(e\d+)', snap)[0]
    bay.ok("fill", refs["Name"], "Ada", session=s)
    bay.ok("fill", refs["Note"], "two\nlines", session=s)
    bay.ok("fill", refs["Editor"], "new text", session=s)
    got = _value(bay, "[who.value, note.value, ed.textContent, inputs]", s)
    assert got[:3] == ["Ada", "two\nlines", "new text"], got
    assert got[3] >= 3, got  # the page saw its input events
    bay.ok("fill", refs["Name"], "Grace", session=s)  # again: replaced, not appended
    assert _value(bay, "who.value", s) == "Grace"
    # get text|value of a ref read it in one call; what it cannot read is refused as before.
    assert bay.ok("get", "value", refs["Name"], session=s)["value"] == "Grace"
    assert bay.ok("get", "text", refs["Editor"], session=s)["value"] == "new text"
    assert_refused(bay("get", "value", refs["Editor"], session=s), "action_failed")
    assert_refused(bay("get", "text", "@e999", session=s), "ref_stale")
    # A read-only field is not typed into: Playwright's fill waits for it to be editable.
    fixed = "@" + re.findall(r'"Fixed".*?@(e\d+)', snap)[0]
    refused = bay("fill", fixed, "changed", "--timeout", "2", session=s)
    assert refused.code != 0, refused
    assert _value(bay, "ro.value", s) == "fixed"
    bay.ok("close", session=s)


def test_focus_on_a_field_that_blurs_itself_is_not_refused_as_not_focusable(
    bay: Bay, site: str
) -> None:
    """The page's own focus handler took the focus away again: the focus happened (the page
    saw it), so the verb did its work; refusing 'not focusable' would send the agent looking
    for another element."""
    s = "in-flee"
    bay.ok("open", f"{site}/keys", session=s)
    bay.ok("focus", "#flee", session=s)
    assert _value(bay, "fled", s) == 1
    bay.ok("close", session=s)


def test_keyboard_type_sends_key_events_and_inserttext_none(bay: Bay, site: str) -> None:
    s = "in-keyboard"
    bay.ok("open", f"{site}/keys", session=s)
    bay.ok("focus", "#k", session=s)
    typed = bay.ok("keyboard", "type", "zqx", session=s)
    assert typed["chars"] == 3
    assert typed["focused"] == "input#k"
    assert _value(bay, "[keydowns, k.value]", s) == [3, "zqx"]
    inserted = bay.ok("keyboard", "inserttext", "jvw", session=s)
    assert inserted["focused"] == "input#k"
    assert _value(bay, "[keydowns, k.value]", s) == [3, "zqxjvw"]  # no key event, the text in
    # Typed text is a secret argument: not in the answer, nor in what plugins saw.
    shown = bay("keyboard", "type", "pw0rdzz", json_=False, session=s)
    assert shown.code == 0, shown
    assert "pw0rdzz" not in shown.stdout + shown.stderr
    assert "7 characters into input#k" in shown.stdout, shown.stdout
    assert "pw0rdzz" not in json.dumps(bay.recorded())
    bay.ok("close", session=s)


def test_keyboard_with_nothing_focused_says_where_the_keys_went(bay: Bay, site: str) -> None:
    s = "in-nofocus"
    bay.ok("open", f"{site}/keys", session=s)
    r = bay("keyboard", "type", "ab", json_=False, session=s)
    assert "to the page (nothing is focused)" in r.stdout, r
    assert _value(bay, "log.slice(-2)", s) == [":a", ":b"]
    bay.ok("close", session=s)


def test_press_sends_a_chord_with_its_modifiers(bay: Bay, site: str) -> None:
    s = "in-chord"
    bay.ok("open", f"{site}/keys", session=s)
    bay.ok("focus", "#k", session=s)
    bay.ok("press", "Control+Shift+k", session=s)
    # Each modifier goes down in order and is held for the key (Playwright keeps the key's
    # own character: Shift+k is "k" with shiftKey, Shift+K the capital).
    assert _value(bay, "log", s) == ["C:Control", "CS:Shift", "CS:k"]
    assert_refused(bay("press", "Control+Nokey", session=s), "action_failed")
    bay.ok("close", session=s)


def test_keydown_holds_a_key_until_keyup(bay: Bay, site: str) -> None:
    s = "in-hold"
    bay.ok("open", f"{site}/keys", session=s)
    bay.ok("focus", "#k", session=s)
    held = bay.ok("keydown", "Shift", session=s)
    assert held["held"] == ["Shift"]
    bay.ok("press", "a", session=s)
    # The held key reaches the mouse too: a press on the canvas is a shift-press.
    bay.ok("mouse", "move", "50", "50", session=s)
    bay.ok("mouse", "down", session=s)
    bay.ok("mouse", "up", session=s)
    bay.ok("click", "#pad", session=s)  # the click's own fast path presses with it too
    events = _value(bay, "mouse", s)
    assert isinstance(events, list)
    assert [e for e in events if e.startswith("down")] == ["down 50,50 shift", "down 150,100 shift"]
    released = bay.ok("keyup", "Shift", session=s)
    assert released["was_held"] is True
    assert released["held"] == []
    bay.ok("press", "a", session=s)
    assert _value(bay, "log", s) == ["S:Shift", "S:a", ":a"]  # shiftKey while held
    assert bay.ok("keyup", "Shift", session=s)["was_held"] is False
    bay.ok("close", session=s)


def test_mouse_down_move_up_draws_on_a_canvas(bay: Bay, site: str) -> None:
    s = "in-draw"
    bay.ok("open", f"{site}/keys", session=s)
    moved = bay("mouse", "move", "20", "20", json_=False, session=s)
    assert moved.stdout.strip() == "at 20,20", moved
    bay.ok("mouse", "move", "100", "20", session=s)  # no button down: nothing drawn
    assert _value(bay, "painted()", s) == 0
    assert bay.ok("mouse", "down", session=s)["x"] == 100
    bay.ok("mouse", "move", "200", "150", session=s)
    bay.ok("mouse", "up", "left", session=s)
    events = _value(bay, "mouse", s)
    assert isinstance(events, list)
    assert events[0] == "down 100,20"
    assert events[-1] == "up 200,150"
    assert events.count("move") >= 3, events  # the way, not only the end
    assert isinstance(painted := _value(bay, "painted()", s), int)
    assert painted > 100
    bay.ok("close", session=s)


def test_mouse_refuses_a_point_outside_the_viewport_and_a_press_before_a_move(
    bay: Bay, site: str
) -> None:
    s = "in-mouse-bad"
    bay.ok("open", f"{site}/keys", session=s)
    frame = assert_refused(bay("mouse", "down", session=s), "usage")
    assert "bay mouse move X Y" in frame["message"], frame
    frame = assert_refused(bay("mouse", "move", "-5", "10", session=s), "usage")
    assert "outside the viewport" in frame["message"], frame
    assert_refused(bay("mouse", "move", "10", session=s), "usage")  # no y
    assert_refused(bay("mouse", "down", "thumb", session=s), "usage")
    assert _value(bay, "mouse", s) == []
    bay.ok("close", session=s)


def test_mouse_wheel_scrolls_the_page(bay: Bay, site: str) -> None:
    s = "in-wheel"
    bay.ok("open", f"{site}/keys", session=s)
    assert _value(bay, "window.scrollY", s) == 0
    bay.ok("mouse", "move", "400", "300", session=s)
    answer = bay.ok("mouse", "wheel", "500", session=s)
    assert answer["scroll"][1] > 0
    assert _value(bay, "window.scrollY", s) == answer["scroll"][1]
    bay.ok("close", session=s)


def test_scrollintoview_brings_a_far_element_into_view(bay: Bay, site: str) -> None:
    s = "in-siv"
    bay.ok("open", f"{site}/keys", session=s)
    assert _value(bay, "window.scrollY", s) == 0
    answer = bay.ok("scrollintoview", "#far", session=s)
    assert _value(bay, "window.scrollY", s) > 0
    height = _value(bay, "window.innerHeight", s)
    assert isinstance(height, int)
    assert 0 <= answer["box"]["y"] < height
    bay.ok("close", session=s)


def test_select_chooses_several_options_of_a_multiple_select(bay: Bay, site: str) -> None:
    s = "in-select"
    bay.ok("open", f"{site}/keys", session=s)
    chosen = "[...colors.selectedOptions].map(o => o.value)"
    assert _value(bay, chosen, s) == []
    assert bay.ok("select", "#colors", "r", "b", session=s)["selected"] == ["r", "b"]
    assert _value(bay, chosen, s) == ["r", "b"]
    # By label, and the others are unselected.
    assert bay.ok("select", "#colors", "Green", "Blue", session=s)["selected"] == ["g", "b"]
    assert _value(bay, chosen, s) == ["g", "b"]
    bay.ok("close", session=s)


def test_the_python_api_drives_the_input_verbs(bay: Bay, site: str) -> None:
    bay.ok("keeper", "start", session=None)
    with SyncClient("in-api", home=bay.home) as c:
        c.open(f"{site}/dnd")
        assert c.drag("#a", "#c")["point"]
        assert c.get("text", "#order").value == "bca"
        c.open(f"{site}/keys")
        assert c.focus("#k").verb == "focus"
        assert c.keyboard_type("ab")["chars"] == 2
        assert c.insert_text("cd")["focused"] == "input#k"
        assert c.eval("[keydowns, k.value]").value == [2, "abcd"]
        assert c.keydown("Shift")["held"] == ["Shift"]
        assert c.keyup("Shift")["was_held"] is True
        assert c.mouse_move(10, 10)["x"] == 10
        c.mouse_down()
        c.mouse_move(120, 90)
        assert c.mouse_up("left")["y"] == 90
        assert c.eval("painted()").value > 0
        assert c.scroll_into_view("#far")["box"]["height"] > 0
        assert c.mouse_wheel(-100)["scroll"][1] >= 0
        with pytest.raises(errors.Usage):
            c.mouse_move(-1, 5)
        c.close()
