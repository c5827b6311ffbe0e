"""Small pieces of the core, without a browser: refusals, protocol, snapshot compaction,
paths and request validation (the registry's contract is in test_registry.py)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from browserbay import protocol
from browserbay.keeper.requests import _redact, _validate
from browserbay.paths import bay_paths
from browserbay.refusals import CODES, EXIT_DEADLINE, EXIT_USAGE, Refusal, exit_code
from browserbay.snapshot import (
    Box,
    Found,
    Line,
    compact,
    flat_lines,
    judge,
    main_frame_prefix,
    paginate,
    parse,
    strip_prefix,
    tree_lines,
)
from browserbay.urls import normalize_url
from browserbay.verbs import BY_NAME
from browserbay_testing import assert_refused


def test_every_code_renders_without_placeholders_given_its_fields() -> None:
    fields = {
        "detail": "d",
        "option": "cdp-url",
        "part": "its query parameter token",
        "on_host": " on host-a",
        "verb": "open",
        "provider": "p",
        "reason": "r",
        "fix": "f",
        "capability": "c",
        "scheme": "file",
        "tab": "t1",
        "ref": "@e1",
        "target": "#x",
        "timeout": 1.0,
        "longer": 2.0,
        "what": "w",
        "size": 1,
        "limit": 2,
        "plugin": "pl",
        "handle": "h",
        "bind": "0.0.0.0:8443",
        "why": "w",
        "count": 2,
        "default": "d",
        "handles": "a, b",
        "was": "a",
        "now": "b",
        "now_default": "b",
        "profile": "p",
        "holder": "s",
        "group": "g",
        "since": "12:00",
        "listing": "bb-1: s",
        "host": "h",
        "allowed": "a",
        "integration": "cloud:x",
        "field": "api_key",
        "arg": "value",
        "command": "keys set cloud:x api_key",
        "expected": "e",
        "example": "https://api.example.com",
        "kind": "shape-only",
        "window": "w1",
        "of": "profile work",
        "held": "held by another session",
        "role": "label",
        "name": "Hello",
        "by": "a human in the live view (viewer 1)",
        "reached": "it only reads, so it changed nothing",
        "method": "Browser.close",
        "script": "/tmp/steps.py",
        "call": "page.click('#go')",
        "error": "ValueError: nope",
        "line": 2,
        "said_by": "the binary",
        "whose": "your licence's seats are all in use",
        "evidence": "its Last Version says 156; the registry recorded 156",
        "socket": "/tmp/bay-1000-1ae9ad88/keeper.sock",
        "where": "/home/u/.local/state/browserbay",
        "free": "0 bytes",
        "endpoint": "127.0.0.1:9222",
        "pinned": "https://api.example.com",
        "secret": "api_key",
        "fixed": "agent-1",
        "asked": "agent-2",
        "via": "the request's session",
        "drop": "--session / BAY_SESSION",
        "session": "agent-1",
        "device": "Pixel 9",
        "close": "Pixel 7, Pixel 5",
        "glob": "**/api/*",
        "routes": "**/ads/**",
        "waiting": 'the text "Saved"',
        "seen": "the tab is at https://example.org/login",
        "path": "/tmp/shot.png",
        "found": "<button>",
        "waited": 3.0,
        "kept": "1.0 MiB",
        "matches": "#a, #b",
        "frame": "#f",
        "cover": 'div "Cookies" (div#veil)',
        "value": "xl",
        "options": '"s" (Small)',
        "tag": "div",
        "keeper": "kp-00000001",
        "link": "to keeper kp-0a1b2c3d at 127.0.0.1:7441",
        "age": "10.2",
        "ttl": "15",
    }
    for code in CODES:
        r = Refusal(code, **fields)
        assert "{" not in r.message, code
        assert "{" not in r.way_out, code
        assert r.frame()["code"] == code
    assert exit_code("usage") == EXIT_USAGE
    assert exit_code("deadline") == EXIT_DEADLINE
    assert exit_code("tab_gone") == 1


def test_an_unknown_code_cannot_be_raised() -> None:
    with pytest.raises(ValueError, match="unknown refusal code"):
        Refusal("something_new")


def test_a_refusal_keeps_its_own_way_out_and_gains_defaults() -> None:
    r = Refusal("verb_refused", way_out="ask", plugin="p", reason="r")
    filled = r.with_defaults(verb="click", plugin="ignored")
    assert filled.way_out == "ask"
    assert filled.message == "'click' was refused by the p plugin: r"


def test_protocol_decode_rejects_what_it_should() -> None:
    assert protocol.decode(b'{"a": 1}') == {"a": 1}
    for bad, reason in [
        (b"\xff", "UTF-8"),
        (b"nope", "not JSON"),
        (b"[1]", "object"),
        (b'{"a": ' + b"[" * 40 + b"]" * 40 + b"}", "nested"),
    ]:
        with pytest.raises(ValueError, match=reason):
            protocol.decode(bad)
    assert protocol.encode({"x": "é"}) == '{"x":"é"}\n'.encode()


def test_validation_of_requests() -> None:
    frame = {"verb": "click", "args": {"target": "@e1"}, "session": {"id": "a", "origin": "env"}}
    verb, args, ref, timeout = _validate(frame)
    assert (verb.name, args, ref.id, timeout) == ("click", {"target": "@e1"}, "a", 30.0)
    for patch, code in [
        ({"verb": "nope"}, "bad_frame"),
        ({"verb": "help"}, "bad_frame"),
        ({"args": []}, "bad_frame"),
        ({"args": {"target": 5}}, "bad_frame"),
        ({"args": {}}, "usage"),
        ({"args": {"target": "x", "extra": 1}}, "bad_frame"),
        ({"session": {"id": "a b"}}, "bad_frame"),
        ({"session": "a"}, "bad_frame"),
        ({"timeout": 0}, "bad_frame"),
        ({"timeout": True}, "bad_frame"),
        ({"args": {"target": "x" * (protocol.MAX_ARG + 1)}}, "too_large"),
    ]:
        with pytest.raises(Refusal) as info:
            _validate({**frame, **patch})
        assert_refused(info.value, code)
    with pytest.raises(Refusal) as info:
        _validate({**frame, "verb": "get", "args": {"what": "colour"}})
    assert "title, url, text, value, html" in info.value.message
    with pytest.raises(Refusal):
        _validate({**frame, "verb": "snapshot", "args": {"depth": "2"}})


def test_redaction_replaces_typed_text_by_its_length() -> None:
    assert _redact(BY_NAME["fill"], {"target": "@e1", "text": "secret"}) == {
        "target": "@e1",
        "text": {"chars": 6},
    }
    assert _redact(BY_NAME["eval"], {"js": "1+1"}) == {"js": {"chars": 3}}


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("example.org", "https://example.org"),
        ("localhost:8000/x", "http://localhost:8000/x"),
        ("127.0.0.1:9/", "http://127.0.0.1:9/"),
        ("https://a.b/c?d", "https://a.b/c?d"),
        ("HTTP://A.B", "HTTP://A.B"),
        ("about:blank", "about:blank"),
    ],
)
def test_urls_are_normalized(url: str, expected: str) -> None:
    assert normalize_url(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        "file:///x",
        "javascript:1",
        "JavaScript:alert(1)",
        "data:,x",
        "chrome://gpu",
        "about:config",
        "ftp://h/",
        "blob:http://x/1",
        "ws://h/",
    ],
)
def test_local_and_other_schemes_are_refused(url: str) -> None:
    with pytest.raises(Refusal) as info:
        normalize_url(url)
    assert_refused(info.value, "local_scheme_refused")


RAW = """- generic [active] [ref=f1e1]:
  - heading "Hello" [level=1] [ref=f1e2]
  - generic [ref=f1e5]:
    - generic [ref=f1e6]:
      - text: Name
      - textbox "Name" [ref=f1e7]
    - link "Docs" [ref=f1e8] [cursor=pointer]:
      - /url: /docs
    - iframe [ref=f1e9]:
      - button "Inner" [ref=f2e1]
  - paragraph [ref=f1e10]: para text"""


def test_snapshot_compaction_keeps_every_reference_to_what_can_be_acted_on() -> None:
    prefix = main_frame_prefix(RAW)
    assert prefix == "f1"
    raw = strip_prefix(RAW, prefix)
    text = compact(raw)
    assert text.splitlines() == [
        '- heading "Hello" [level=1] @e2',
        '- textbox "Name" @e7',
        '- link "Docs" @e8 → /docs',
        "- iframe @e9:",
        '  - button "Inner" @f2e1',
        "- paragraph: para text",
    ]
    flat = compact(raw, interactive=True)
    assert flat.splitlines() == [
        'heading "Hello" [level=1] @e2',  # context: which section the refs below are in
        'textbox "Name" @e7',
        'link "Docs" @e8',
        'button "Inner" @f2e1',
    ]
    shallow = compact(raw, depth=1)
    assert "Inner" not in shallow
    assert "- iframe @e9\n" in shallow  # no dangling ':' once the children are cut
    assert main_frame_prefix('- button "x" [ref=e3]') == ""


QUOTED = """- generic [ref=e1] [box=0,0,800,400]:
  - 'tab "Tab #1" [ref=e2] [box=0,0,60,20]'
  - 'button "Step: two" [disabled] [ref=e3] [box=60,0,80,20]':
    - img [ref=e4] [box=60,0,10,10]
  - paragraph [ref=e5] [box=0,40,800,20]: "Read this: then click here."
  - textbox "Note" [ref=e6] [box=0,70,200,20]: "line one\\nline \\"two\\""
  - listitem [ref=e7] [cursor=pointer] [box=0,100,800,20]: apple"""


def test_snapshot_lines_yaml_quoted_parse_as_the_nodes_they_are() -> None:
    roots = parse(QUOTED)
    tab, button, para, box, item = roots[0].children
    assert (tab.role, tab.name, tab.ref) == ("tab", "Tab #1", "e2")
    assert (button.name, button.attrs, [c.role for c in button.children]) == (
        "Step: two",
        ["disabled"],
        ["img"],
    )
    assert para.text == "Read this: then click here."
    assert box.text == 'line one\nline "two"'
    assert item.kind == "clickable"  # Playwright saw the pointer
    assert tab.box == Box(0, 0, 60, 20)
    flat = [x.text for x in flat_lines(roots)]
    assert flat == [
        'tab "Tab #1" @e2',
        'button "Step: two" [disabled] @e3',
        'textbox "Note" @e6: line one\\nline "two"',  # one line
        'listitem "apple" @e7 clickable',
    ]


def test_judge_marks_nodes_and_gives_merged_elements_their_own_node() -> None:
    roots = parse(QUOTED)
    found = [
        Found("c1", "clickable", Box(0, 40, 800, 20), "Read this"),  # the paragraph itself
        Found("c2", "clickable", Box(100, 40, 40, 20), "click here"),  # a span inside it
        Found("f2c1", "editable", Box(5, 5, 50, 10), "inner", frame="f2"),  # no node holds it
    ]
    judge(roots, found)
    lines = [x.text for x in tree_lines(roots)]
    assert "- paragraph @e5 clickable:" in lines
    assert '  - generic "click here" @c2 clickable' in lines
    assert "  - text: Read this: then click here." in lines  # the text stays, before it
    assert lines[-1] == '- generic "inner" @f2c1 editable'


WRAPS = """- generic [ref=e1] [box=0,0,800,400]:
  - navigation "site" [ref=e2]:
    - list [ref=e3]:
      - listitem [ref=e4] [cursor=pointer]:
        - menuitem "Willa" [ref=e5]
      - listitem [ref=e6] [cursor=pointer]:
        - img "star" [ref=e7]
        - button "Star" [ref=e8]
  - heading [level=2] [ref=e9]:
    - text: "4.3. The"
    - link "range()" [ref=e10]:
      - /url: "#range"
    - text: Function
  - link "range()" [ref=e11]:
    - /url: "#range"
  - generic [ref=e12] [cursor=pointer]:
    - text: "Ada: unread"
    - button "Archive" [ref=e13]
  - search [ref=e14]:
    - textbox "Query" [ref=e15]
  - table [ref=e16]:
    - row [ref=e17]:
      - cell [ref=e18]:
        - paragraph [ref=e19]: invoice 7
      - cell [ref=e20]:
        - button "Pay" [ref=e21]
      - cell [ref=e22]"""


def test_the_interactive_list_drops_wrappers_that_repeat_what_they_hold_and_keeps_context() -> None:
    flat = compact(WRAPS, interactive=True).splitlines()
    assert flat == [
        'navigation "site" @e2:',
        '  menuitem "Willa" @e5',  # its clickable li only repeats it
        '  listitem "star" @e6 clickable',  # an image besides its button: a target itself
        '  button "Star" @e8',
        'heading "4.3. The range() Function" [level=2] @e9:',  # named by all it holds
        '  link "range()" @e10',
        'link "range()" @e11',
        'generic "Ada: unread" @e12 clickable',  # a row with its own text besides Archive
        'button "Archive" @e13',
        "search @e14:",  # a landmark by its own name only
        '  textbox "Query" @e15',
        'cell "invoice 7" @e18',  # what the row says about its button
        'button "Pay" @e21',  # its cell holds only the button; the empty cell is left out
    ]


def test_a_page_of_the_tree_ends_between_nodes_not_inside_one() -> None:
    items = [("  - listitem:", None), ("    - link", "a"), ("    - button", "b")] * 50
    lines = [Line("- heading", "h"), *(Line(t, r) for t, r in items)]
    seen: list[str] = []
    for n in range(1, 20):
        page = paginate(lines, limit=20, page=n)
        if not page.text:
            break
        shown = page.text.splitlines()
        assert len(shown) <= 20
        assert shown[-1] == "    - button", shown
        assert n == 1 or shown[0] == "  - listitem:", shown
        seen += shown
    assert seen == [x.text for x in lines]  # every line, once
    assert page.pages == n - 1
    flat = [Line(f"- link {i}", str(i)) for i in range(31)]  # one indent: exactly the limit
    assert [paginate(flat, limit=10, page=k).refs for k in (1, 2, 3, 4)] == [10, 10, 10, 1]


def test_bay_home_relocates_everything_and_long_homes_get_a_short_socket(tmp_path: Path) -> None:
    p = bay_paths({"BAY_HOME": str(tmp_path)})
    for d in (p.state, p.data, p.runtime, p.logs):
        assert str(d).startswith(str(tmp_path))
    deep = tmp_path / ("x" * 120)
    long = bay_paths({"BAY_HOME": str(deep)})
    assert len(str(long.socket)) < 100
    assert long.socket != bay_paths({"BAY_HOME": str(deep) + "y"}).socket
    long.ensure()
    assert stat.S_IMODE(long.socket.parent.stat().st_mode) == 0o700


def test_a_directory_owned_by_someone_else_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from browserbay import paths

    me = os.getuid()
    monkeypatch.setattr(paths.os, "getuid", lambda: me + 1)
    with pytest.raises(PermissionError, match="not a directory of yours"):
        paths.ensure_private(tmp_path)
