"""``bay snapshot`` on pages that reproduce each case an agent met: names YAML had to quote,
elements a page made clickable or editable without a role (a div with ``onclick``, a list of
``cursor: pointer`` items, ``contenteditable``, a span in a paragraph, a span in an open
shadow root, a span in an iframe) — each with a ref that acts — links inside prose, and the
options: ``--delta``, ``-s``, ``-d``, ``--limit``/``--page``. Then a real page nobody here
wrote: the Python tutorial from Debian's python3-doc."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from browserbay.api import SyncClient
from browserbay_testing import Bay, assert_refused
from browserbay_testing.pages import serve_pages

ACT = """<!doctype html><html><head><title>Actionable</title>
<style>.s li { cursor: pointer } .ptr { cursor: pointer }</style></head><body>
<h1>Actionable things</h1>
<div role=tablist><button role=tab onclick="said('tab 1')">Tab #1</button>
<button role=tab>Step: two</button></div>
<button onclick="said('saved')">Save: now</button>
<div onclick="said('row opened')">Open the inbox row</div>
<ul class=s id=sugg><li>apple pie</li><li>apple tart</li><li>apricot</li></ul>
<p>Read the <a href="#while"><code>while</code></a> docs, or <span class=ptr
 onclick="said('span in prose')">click this span</span> in the prose.</p>
<div contenteditable=true id=ed>Edit me</div>
<div id=host></div>
<iframe id=frame src="/inner" width=300 height=80></iframe>
<p id=said>nothing</p>
<script>
function said(t) { document.getElementById('said').textContent = t }
document.getElementById('sugg')
  .addEventListener('click', e => said('picked ' + e.target.textContent));
const root = document.getElementById('host').attachShadow({mode: 'open'});
root.innerHTML = '<p>In the shadow: <span>shadow span</span></p>';
root.querySelector('span').onclick = () => said('shadow clicked');
</script></body></html>"""

INNER = """<!doctype html><html><head><title>Inner</title></head><body>
<p>Inside: <span onclick="document.getElementById('in').textContent='frame span'">frame
 span</span></p><p id=in>untouched</p></body></html>"""

CHANGE = """<!doctype html><html><head><title>Change</title></head><body>
<button onclick="grow()">Grow</button>
<input id=name aria-label="Name">
<ul id=items><li><a href="#1">one</a></li><li><a href="#2">two</a></li></ul>
<script>
function grow() {
  const b = document.createElement('button'); b.textContent = 'Added'; document.body.append(b);
  document.querySelector('a[href="#2"]').remove();
}
</script></body></html>"""

MANY = (
    "<!doctype html><html><head><title>Many</title></head><body><h1>Many</h1>"
    + "".join(f'<p><a href="#{i}">link {i}</a></p>' for i in range(30))
    + "</body></html>"
)

PASS_INNER = """<!doctype html><html><head><title>Sign in</title></head><body>
<input type=password id=pw aria-label="Secret" value="pw-in-frame-5e1d"></body></html>"""

PASS_OUTER = """<!doctype html><html><head><title>Frames</title></head><body>
<input type=password aria-label="Top" value="pw-on-top-9b2c">
<iframe id=same src="/pass-inner" width=300 height=60></iframe>
<iframe id=cross src="OTHER/pass-inner" width=300 height=60></iframe></body></html>"""

LATE = """<!doctype html><html><head><title>Late</title></head><body>
<button onclick="add()">Add a row</button><p id=said>nothing</p>
<script>function add() {
  const d = document.createElement('div'); d.textContent = 'late row';
  d.onclick = () => { document.getElementById('said').textContent = 'late clicked' };
  document.body.append(d);
}</script></body></html>"""

PY_DOC = Path("/usr/share/doc/python3/html/tutorial/controlflow.html")


#: A page whose script broke what JSON needs (old Prototype.js gives arrays a toJSON; this
#: one replaces JSON.stringify too): the snapshot's walk of the page still reads it.
SPOILED = """<!doctype html><html><head><title>Spoiled</title></head><body>
<div onclick="document.getElementById('said').textContent = 'row opened'">Open the row</div>
<input type=password id=pw aria-label=Secret>
<p id=said>nothing</p>
<script>
document.getElementById('pw').value = 'pw-spoiled-4c7e';
Array.prototype.toJSON = function () { return 'spoiled'; };
JSON.stringify = () => '{"found": "spoiled", "passwords": 7}';
</script></body></html>"""


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    pages = {
        "/act": ACT,
        "/spoiled": SPOILED,
        "/inner": INNER,
        "/change": CHANGE,
        "/many": MANY,
        "/pass-inner": PASS_INNER,
        "/late": LATE,
    }
    with serve_pages(pages) as base:
        # another site (localhost, not 127.0.0.1): its iframe is out of process
        other = base.replace("127.0.0.1", "localhost")
        pages["/cross"] = f'<!doctype html><iframe id=x src="{other}/inner"></iframe>'
        pages["/pass"] = PASS_OUTER.replace("OTHER", other)
        yield base


def _line(snap: str, needle: str) -> str:
    hits = [x for x in snap.splitlines() if needle in x]
    assert hits, f"no line with {needle!r} in:\n{snap}"
    return hits[0]


def _ref(line: str) -> str:
    m = re.search(r" @([a-z0-9]+)\b", line)
    assert m, line
    return "@" + m.group(1)


def _said(bay: Bay, s: str, where: str = "#said") -> str:
    return str(bay.ok("get", "text", where, session=s)["value"])


def test_names_yaml_had_to_quote_stay_in_the_interactive_list(bay: Bay, site: str) -> None:
    s = "snap-quoted"
    bay.ok("open", f"{site}/act", session=s)
    snap = bay.ok("snapshot", "-i", session=s)["snapshot"]
    assert _line(snap, 'tab "Tab #1"').startswith("tab ")  # a node, not a quoted string
    assert _line(snap, 'tab "Step: two"').startswith("tab ")
    save = _line(snap, 'button "Save: now"')
    bay.ok("click", _ref(save), session=s)
    assert _said(bay, s) == "saved"
    bay.ok("click", _ref(_line(snap, 'tab "Tab #1"')), session=s)
    assert _said(bay, s) == "tab 1"


def test_elements_clickable_without_a_role_get_a_ref_that_clicks(bay: Bay, site: str) -> None:
    s = "snap-clickable"
    bay.ok("open", f"{site}/act", session=s)
    snap = bay.ok("snapshot", "-i", session=s)["snapshot"]
    row = _line(snap, '"Open the inbox row"')
    assert row.endswith(" clickable"), row
    bay.ok("click", _ref(row), session=s)
    assert _said(bay, s) == "row opened"
    # a list of cursor:pointer items, its clicks taken by the list's own listener
    items = [x for x in snap.splitlines() if x.startswith("listitem")]
    assert len(items) == 3, snap
    assert all(x.endswith(" clickable") for x in items), snap
    bay.ok("click", _ref(_line(snap, '"apple tart"')), session=s)
    assert _said(bay, s) == "picked apple tart"
    # a span inside a paragraph: merged into its text by the ARIA tree, a node of its own here
    span = _line(snap, '"click this span"')
    assert re.search(r" @c\d+ clickable$", span), span
    bay.ok("click", _ref(span), session=s)
    assert _said(bay, s) == "span in prose"
    full = bay.ok("snapshot", session=s)["snapshot"]
    assert _ref(_line(full, '"click this span"')) == _ref(span)  # the same ref in the tree
    # a span in an open shadow root, and one inside an iframe (its ref carries the frame's)
    shadow = _line(snap, '"shadow span"')
    bay.ok("click", _ref(shadow), session=s)
    assert _said(bay, s) == "shadow clicked"
    inner = _line(snap, '"frame span"')
    assert re.search(r" @f\d+c\d+\b", inner), inner
    bay.ok("click", _ref(inner), session=s)
    bay.ok("frame", "#frame", session=s)
    assert _said(bay, s, "#in") == "frame span"
    bay.ok("frame", "main", session=s)
    bay.ok("close", session=s)


def test_password_values_in_the_page_and_its_iframes_never_show(bay: Bay, site: str) -> None:
    """The snapshot reads each frame's password values in the same evaluation as its
    clickable elements: the top page's, a same-site iframe's and a cross-site (out of
    process) iframe's are all masked, in the tree and in the interactive list."""
    s = "snap-pass"
    bay.ok("open", f"{site}/pass", session=s)
    for flags in ((), ("-i",)):
        snap = bay.ok("snapshot", *flags, session=s)["snapshot"]
        assert "pw-on-top-9b2c" not in snap, snap
        assert "pw-in-frame-5e1d" not in snap, snap
        assert snap.count("••••") == 3, snap


def test_a_page_that_broke_json_still_has_its_clickables_and_masked_passwords(
    bay: Bay, site: str
) -> None:
    """The walk answers as JSON text (one CDP message); where the page's script spoiled
    JSON.stringify the same answer is read through Playwright's serializer instead."""
    s = "snap-spoiled"
    bay.ok("open", f"{site}/spoiled", session=s)
    for flags in ((), ("-i",)):
        snap = bay.ok("snapshot", *flags, session=s)["snapshot"]
        assert "pw-spoiled-4c7e" not in snap, snap
        assert "••••" in snap, snap
        row = _line(snap, "Open the row")
        assert re.search(r" @\w+ clickable\b", row), row
    bay.ok("click", _ref(row), session=s)
    assert _said(bay, s) == "row opened"
    bay.ok("close", session=s)


def test_an_element_made_clickable_after_the_last_snapshot_gets_its_ref(
    bay: Bay, site: str
) -> None:
    """A snapshot guesses from the tab's last one whether the DOM walk finds anything (its
    tree's boxes are asked for with the walk, at once): a page that found nothing, then
    grows a clickable row, still has that row judged and clickable."""
    s = "snap-late"
    bay.ok("open", f"{site}/late", session=s)
    first = bay.ok("snapshot", "-i", session=s)["snapshot"]
    assert "late row" not in first
    bay.ok("click", _ref(_line(first, 'button "Add a row"')), session=s)
    snap = bay.ok("snapshot", "-i", session=s)["snapshot"]
    row = _line(snap, '"late row"')
    assert "clickable" in row, snap
    bay.ok("click", _ref(row), session=s)
    assert _said(bay, s) == "late clicked"


def test_an_own_ref_inside_a_cross_site_iframe_clicks(bay: Bay, site: str) -> None:
    s = "snap-cross"
    bay.ok("open", f"{site}/cross", session=s)
    snap = bay.ok("snapshot", "-i", session=s)["snapshot"]
    inner = _line(snap, '"frame span"')
    assert re.search(r" @f\d+c\d+\b", inner), inner
    bay.ok("click", _ref(inner), session=s)
    bay.ok("frame", "#x", session=s)
    assert _said(bay, s, "#in") == "frame span"
    bay.ok("close", session=s)


def test_contenteditable_is_editable_and_fills(bay: Bay, site: str) -> None:
    s = "snap-editable"
    bay.ok("open", f"{site}/act", session=s)
    snap = bay.ok("snapshot", "-i", session=s)["snapshot"]
    ed = _line(snap, '"Edit me"')
    assert ed.endswith(" editable"), ed
    bay.ok("fill", _ref(ed), "typed here", session=s)
    assert _said(bay, s, "#ed") == "typed here"
    bay.ok("close", session=s)


def test_links_inside_prose_are_named_by_their_content(bay: Bay, site: str) -> None:
    s = "snap-prose"
    bay.ok("open", f"{site}/act", session=s)
    snap = bay.ok("snapshot", "-i", session=s)["snapshot"]
    link = _line(snap, 'link "while"')
    bay.ok("click", _ref(link), session=s)
    assert bay.ok("get", "url", session=s)["value"].endswith("#while")
    bay.ok("close", session=s)


def test_delta_shows_what_changed_by_ref(bay: Bay, site: str) -> None:
    s = "snap-delta"
    bay.ok("open", f"{site}/change", session=s)
    first = bay.ok("snapshot", "--delta", session=s)
    assert first["delta"] is None
    assert 'button "Grow"' in first["snapshot"]
    two = _ref(_line(first["snapshot"], 'link "two"'))
    bay.ok("click", "text=Grow", session=s)
    bay.ok("fill", "#name", "Ada", session=s)
    d = bay.ok("snapshot", "--delta", session=s)
    assert any('button "Added"' in x for x in d["delta"]["added"]), d
    assert any(two.lstrip("@") in x for x in d["delta"]["removed"]), d
    assert any('textbox "Name"' in x and "Ada" in x for x in d["delta"]["changed"]), d
    assert 'button "Grow"' not in d["snapshot"]  # unchanged: not shown
    assert "+ - " not in d["snapshot"]
    assert re.search(r"^\+ button \"Added\"", d["snapshot"], re.M)
    again = bay.ok("snapshot", "--delta", session=s)
    assert again["delta"] == {"added": [], "removed": [], "changed": []}
    assert again["snapshot"].startswith("no change")
    bay.ok("close", session=s)


def test_scope_and_depth(bay: Bay, site: str) -> None:
    s = "snap-scope"
    bay.ok("open", f"{site}/act", session=s)
    whole = bay.ok("snapshot", session=s)["snapshot"]
    scoped = bay.ok("snapshot", "-s", "#sugg", session=s)["snapshot"]
    assert "apple pie" in scoped, scoped
    assert "Save: now" not in scoped, scoped
    tart = _ref(_line(whole, "apple tart"))
    assert tart in "".join(f"@{r}" for r in re.findall(r" @([a-z0-9]+)", scoped))
    bay.ok("click", tart, session=s)  # the refs stay the page's
    assert _said(bay, s) == "picked apple tart"
    by_ref = bay.ok("snapshot", "-s", _ref(_line(whole, "tablist")), session=s)["snapshot"]
    assert "Tab #1" in by_ref, by_ref
    assert "apple" not in by_ref, by_ref
    shallow = bay.ok("snapshot", "-d", "1", session=s)["snapshot"]
    assert "apple pie" not in shallow, shallow
    assert "- list" in shallow, shallow
    missing = bay("snapshot", "-s", "#nothing-here", session=s)
    assert_refused(missing, "target_not_found")
    bay.ok("close", session=s)


def test_a_long_snapshot_pages_instead_of_cutting(bay: Bay, site: str) -> None:
    s = "snap-pages"
    bay.ok("open", f"{site}/many", session=s)
    one = bay.ok("snapshot", "-i", "--limit", "10", session=s)
    # the page's heading (context, with its ref) and its 30 links
    assert (one["refs"], one["left"], one["refs_left"]) == (10, 21, 21), one
    assert one["next"] == "bay snapshot -i --limit 10 --page 2"
    assert one["snapshot"].splitlines()[-1].endswith(one["next"])
    seen = re.findall(r" @(e\d+)", one["snapshot"])
    page = 2
    while True:
        more = bay.ok("snapshot", "-i", "--limit", "10", "--page", str(page), session=s)
        seen += re.findall(r" @(e\d+)", more["snapshot"])
        if more["next"] is None:
            break
        page += 1
    assert len(seen) == len(set(seen)) == 31  # the heading and the 30 links, each once
    past = bay.ok("snapshot", "-i", "--limit", "10", "--page", "9", session=s)
    assert past["snapshot"] == "page 9 is past the end: 31 lines make 4 pages", past
    bay.ok("close", session=s)


@pytest.mark.skipif(not PY_DOC.exists(), reason="python3-doc is not installed (scripts/setup.sh)")
def test_the_python_tutorial_offers_its_links_inside_prose(bay: Bay) -> None:
    s = "snap-pydoc"
    with serve_pages({"/controlflow.html": PY_DOC.read_text(encoding="utf-8")}) as base:
        bay.ok("open", f"{base}/controlflow.html", session=s)
        snap = bay.ok("snapshot", "-i", "--limit", "0", session=s)
        text = snap["snapshot"]
        for name in ("while", "range()", "PEP 636"):
            assert f'link "{name}"' in text, name
        assert snap["refs"] >= 100, snap["refs"]
        # a link reads by its content (only the logo's image link has none to read)
        assert len(re.findall(r"^\s*- link @", text, re.M)) <= 1, text
        bay.ok("click", _ref(_line(text, 'link "while"')), session=s)
    bay.ok("close", session=s)


def test_the_python_api_takes_the_snapshot_options(bay: Bay, site: str) -> None:
    with SyncClient("snap-api", home=bay.home) as c:
        c.open(f"{site}/many")
        first = c.snapshot(interactive=True, limit=5)
        assert first.refs == 5
        assert first.data["next"] == "bay snapshot -i --limit 5 --page 2"
        second = c.snapshot(interactive=True, limit=5, page=2)
        assert '"link 5"' in second.tree
        assert '"link 5"' not in first.tree
        assert c.snapshot(selector="h1").tree.startswith('- heading "Many"')
        assert c.snapshot(delta=True).tree.startswith("no change")
        c.close()
