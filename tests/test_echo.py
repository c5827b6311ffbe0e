"""Issue 15 item 8: unbounded echo and terminal injection.

A refusal used to echo its input and page-made text whole (a 120 KB URL came back as 170 KB;
an ``eval`` throwing a 5 MB error printed 5 MB, twice). Every field of a refusal is clipped
where refusals are built (300 characters + ``…(+N)``), in text and ``--json`` alike. And
``get text``, ``get html``, ``eval`` and snapshots passed a page's raw ESC/BEL/C1 bytes to the
terminal: text output escapes them visibly (``\\x1b``), ``--json`` keeps them as JSON escapes.
Real pages, real keeper, through the CLI (text and ``--json``) and the Python API; the MCP
server's side is in plugins/mcp/tests/test_mcp.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from browserbay.api import SyncClient
from browserbay.errors import ActionFailed, BayRefusal
from browserbay.refusals import CODES, Refusal
from browserbay.snapshot import compact
from browserbay_testing import Bay, assert_refused

#: What escapes.html puts in its title, paragraph and button (see the page).
ESC = "\x1b]0;pwned\x07 \x1b[2J \x9b31m red \x08\x0d\x7f end"
#: Bytes no text output may carry to a terminal: C0 but \n and \t, DEL, C1.
CONTROLS = [chr(c) for c in (*range(0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0))]
#: The documented bound of one field (docs/refusals.md).
CLIP = 300
BIG_URL = "http://127.0.0.1:1/" + "a" * 120_000
BIG_THROW = "throw new Error('x'.repeat(5e6))"
#: A clipped refusal, its message, way out and data together: generous, and far from 120 KB.
SMALL = 4_000


def _raw_controls(text: str) -> list[str]:
    return sorted({repr(c) for c in text if c in CONTROLS})


@pytest.fixture(scope="module")
def page(bay: Bay, demo: str) -> str:
    bay.ok("open", f"{demo}/escapes.html", session="esc")
    return f"{demo}/escapes.html"


# -- clipping -----------------------------------------------------------------------------


def test_a_120kb_url_comes_back_clipped_in_json_and_text(bay: Bay) -> None:
    r = bay("open", BIG_URL, session="clip")
    frame = assert_refused(r, "action_failed")
    assert len(r.stdout) < SMALL, f"--json refusal is {len(r.stdout)} characters"
    assert "…(+" in frame["message"], frame["message"][:400]
    assert "cut" not in frame["data"], frame["data"]  # nothing left to spill to a file
    t = bay("open", BIG_URL, session="clip", json_=False)
    assert t.code == 1
    assert len(t.stdout) + len(t.stderr) < SMALL, f"text refusal is {len(t.stderr)} characters"
    assert "refused [action_failed]" in t.stderr


def test_an_eval_throwing_5mb_is_clipped_in_json_and_text(bay: Bay, page: str) -> None:
    r = bay("eval", BIG_THROW, session="esc")
    frame = assert_refused(r, "action_failed")
    assert len(r.stdout) < SMALL, f"--json refusal is {len(r.stdout)} characters"
    assert "…(+" in frame["message"]
    assert all(len(v) <= CLIP + 20 for v in frame["data"].values() if isinstance(v, str))
    t = bay("eval", BIG_THROW, session="esc", json_=False)
    assert t.code == 1
    assert len(t.stdout) + len(t.stderr) < SMALL, f"text refusal is {len(t.stderr)} characters"


def test_every_code_clips_every_field() -> None:
    """Clipping is where refusals are built, so no code can forget it: a 100,000-character
    value in every placeholder (and in the way out) gives a bounded refusal for each code."""
    huge = "z" * 100_000
    for code, row in CODES.items():
        fields: dict[str, Any] = {}
        uses = 0  # each placeholder expands to at most one clipped field
        for text in (row.message, row.way_out):
            for part in text.split("{")[1:]:
                name = part.split("}")[0].split(":")[0]
                fields[name] = 5 if ":" in part.split("}")[0] else huge
                uses += 1
        fields["extra"] = [huge, {"deep": huge}]
        frame = Refusal(code, **fields).frame()
        size = len(json.dumps(frame))
        # the message and way out, plus each field once more in data (extra holds two)
        bound = (uses + len(fields) + 1) * (CLIP + 20) + 2_000
        assert size < bound, (code, size, bound)
        assert frame["data"]["extra"][1]["deep"].endswith(f"…(+{100_000 - CLIP})"), code
        explicit = Refusal(code, way_out=huge, **fields).frame()["way_out"]
        assert len(explicit) <= CLIP + 20, code


def test_clipping_a_clipped_refusal_changes_nothing() -> None:
    r = Refusal("action_failed", verb="open", reason="q" * 1000)
    again = r.with_defaults(extra="x")
    assert again.fields["reason"] == r.fields["reason"]
    assert r.fields["reason"] == "q" * CLIP + f"…(+{1000 - CLIP})"


# -- terminal escapes ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ("get", "title"),
        ("get", "text"),
        ("get", "text", "#p"),
        ("get", "html"),
        ("eval", "window.ESC"),
        ("eval", "({title: document.title, esc: window.ESC})"),
        ("snapshot",),
        ("snapshot", "-i"),
        ("tab", "list"),
        ("click", "#b"),
    ],
    ids=lambda a: " ".join(a),
)
def test_text_output_never_carries_raw_controls(bay: Bay, page: str, argv: tuple[str, ...]) -> None:
    r = bay(*argv, session="esc", json_=False)
    assert r.code == 0, r
    assert _raw_controls(r.stdout) == [], r.stdout[:500]
    assert _raw_controls(r.stderr) == [], r.stderr[:500]
    if argv[0] != "click":
        assert "\\x1b" in r.stdout or "\\x9b" in r.stdout, r.stdout[:500]


def test_open_prints_the_page_title_escaped(bay: Bay, demo: str) -> None:
    r = bay("open", f"{demo}/escapes.html", session="esc-open", json_=False)
    assert r.code == 0, r
    assert _raw_controls(r.stdout + r.stderr) == [], r.stdout
    assert "\\x9b31m" in r.stdout


@pytest.mark.parametrize(
    "argv",
    [("get", "text", "#p"), ("eval", "window.ESC"), ("get", "html", "#p"), ("snapshot",)],
    ids=lambda a: " ".join(a),
)
def test_json_keeps_controls_as_json_escapes(bay: Bay, page: str, argv: tuple[str, ...]) -> None:
    r = bay(*argv, session="esc")
    assert r.code == 0, r
    assert _raw_controls(r.stdout) == [], r.stdout[:500]  # C1 too: \u009b, not the raw char
    data = r.data
    blob = json.dumps(data, ensure_ascii=False)
    assert "\x1b" in blob or "\x9b" in blob, blob[:500]  # the payload itself is unchanged
    if argv[0] == "eval":
        assert data["value"] == ESC


def test_a_refusal_carrying_page_text_is_escaped_in_text_and_json(bay: Bay, page: str) -> None:
    js = "throw new Error(window.ESC)"
    t = bay("eval", js, session="esc", json_=False)
    assert t.code == 1
    assert _raw_controls(t.stderr) == [], t.stderr
    assert "\\x1b]0;pwned\\x07" in t.stderr
    r = bay("eval", js, session="esc")
    assert_refused(r, "action_failed")
    assert _raw_controls(r.stdout) == [], r.stdout
    assert "\x1b]0;pwned\x07" in r.frame["message"]


def test_a_node_yaml_had_to_quote_stays_in_the_interactive_snapshot() -> None:
    """Control characters in a button's name make the aria snapshot single-quote its line;
    ``snapshot -i`` used to drop such a button (a page could hide it that way)."""
    raw = (
        '- heading "H" [ref=e2]\n'
        "- 'button \"B \\u001b]0;x\" [ref=e4]'\n"
        "- 'link \"it''s\" [ref=e5]':\n"
        "  - img [ref=e6]"
    )
    shown = compact(raw, interactive=True)
    assert 'button "B \\u001b]0;x" @e4' in shown, shown
    assert 'link "it\'s" @e5' in shown, shown


# -- the Python API -----------------------------------------------------------------------


def test_the_python_api_clips_refusals_and_keeps_data_whole(bay: Bay, page: str) -> None:
    with SyncClient("esc", home=bay.home) as c:
        with pytest.raises(ActionFailed) as big:
            c.eval(BIG_THROW)
        assert len(big.value.message) < SMALL
        assert len(str(big.value)) < SMALL
        with pytest.raises(BayRefusal) as esc:
            c.eval("throw new Error(window.ESC)")
        assert "\x1b]0;pwned" in esc.value.message  # the message is the data
        assert _raw_controls(str(esc.value)) == []  # str() is what a traceback prints
        assert c.eval("window.ESC").value == ESC
        long = c.eval("'y'.repeat(200000)").value
        assert long == "y" * 200_000  # a payload is not a refusal: never clipped
        with pytest.raises(ActionFailed) as url:
            c.open(BIG_URL)  # last: the tab is left on the error page
        assert len(str(url.value)) < SMALL
