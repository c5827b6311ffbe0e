"""The verbs on the demo site: snapshot, refs, form actions, reading, navigation, tabs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from browserbay_testing import Bay, assert_refused


def _ref(snapshot: str, role: str, name: str) -> str:
    m = re.search(rf'{role} "{re.escape(name)}"[^\n]*? @(e\d+)\b', snapshot)
    assert m, f"no {role} {name!r} in:\n{snapshot}"
    return "@" + m.group(1)


def test_snapshot_fill_select_check_click_by_ref(bay: Bay, demo: str) -> None:
    s = "form"
    opened = bay.ok("open", f"{demo}/form.html", session=s)
    assert opened == {
        "url": f"{demo}/form.html",
        "title": "Sign up",
        "tab": opened["tab"],
        "status": 200,
    }
    snap = bay.ok("snapshot", session=s)["snapshot"]
    name = _ref(snap, "textbox", "Name")
    plan = _ref(snap, "combobox", "Plan")
    terms = _ref(snap, "checkbox", "I accept the terms")
    submit = _ref(snap, "button", "Create account")

    # Refs survive a second snapshot of the same document.
    again = bay.ok("snapshot", session=s)["snapshot"]
    assert _ref(again, "textbox", "Name") == name
    assert _ref(again, "button", "Create account") == submit

    bay.ok("fill", name, "Ada Lovelace", session=s)
    assert bay.ok("select", plan, "team", session=s)["selected"] == ["team"]
    bay.ok("check", terms, session=s)
    assert bay.ok("get", "value", name, session=s)["value"] == "Ada Lovelace"
    assert bay.ok("eval", "document.querySelector('[name=terms]').checked", session=s)["value"]
    bay.ok("uncheck", terms, session=s)
    assert not bay.ok("eval", "document.querySelector('[name=terms]').checked", session=s)["value"]
    bay.ok("check", terms, session=s)
    # A third snapshot after changes: same refs, new state shown.
    third = bay.ok("snapshot", session=s)["snapshot"]
    assert f'textbox "Name" {name}: Ada Lovelace' in third
    assert _ref(third, "checkbox", "I accept the terms") == terms

    bay.ok("click", submit, session=s)
    assert bay.ok("get", "title", session=s)["value"] == "Signed up"
    text = bay.ok("get", "text", session=s)["value"]
    assert "Ada Lovelace" in text
    assert "team" in text

    # The old refs belonged to the form document: after the navigation they are stale.
    assert_refused(bay("click", submit, session=s), "ref_stale")
    assert_refused(bay("fill", "@e999", "x", session=s), "ref_stale")
    bay.ok("close", session=s)


def test_interactive_snapshot_is_flat_and_references_every_control(bay: Bay, demo: str) -> None:
    s = "snap-i"
    bay.ok("open", f"{demo}/form.html", session=s)
    flat = bay.ok("snapshot", "-i", session=s)["snapshot"].splitlines()
    # one node a line, no YAML dash before it
    assert all(not line.startswith("-") and " @e" in line for line in flat), flat
    roles = [line.split()[0] for line in flat]
    # the heading says where the fields are; then every control
    assert roles == ["heading", "textbox", "textbox", "combobox", "checkbox", "button"]
    full = bay.ok("snapshot", session=s)
    assert full["refs"] >= 5
    shallow = bay.ok("snapshot", "--depth", "1", session=s)["snapshot"]
    assert "option" not in shallow
    assert "button" in shallow
    bay.ok("close", session=s)


def test_type_press_hover_scroll_wait_and_history(bay: Bay, demo: str) -> None:
    s = "verbs"
    bay.ok("open", f"{demo}/form.html", session=s)
    bay.ok("type", "input[name=name]", "Grace", session=s)
    bay.ok("type", "input[name=name]", " Hopper", session=s)
    assert bay.ok("get", "value", "input[name=name]", session=s)["value"] == "Grace Hopper"
    bay.ok("hover", "button", session=s)
    bay.ok("click", "input[name=email]", session=s)
    bay.ok("press", "Enter", session=s)  # submits the form
    # the result page's URL first: a --load alone may be met by the form's own (loaded) page
    # when the submission has not yet committed (seen once at CI on a fresh clone)
    bay.ok("wait", "--url", "*/result*", session=s)
    bay.ok("wait", "--load", session=s)
    assert bay.ok("get", "title", session=s)["value"] == "Signed up"
    assert bay.ok("back", session=s)["title"] == "Sign up"
    assert bay.ok("forward", session=s)["title"] == "Signed up"
    assert bay.ok("reload", session=s)["status"] == 200

    bay.ok("open", f"{demo}/list.html?n=300", session=s)
    scrolled = bay.ok("scroll", "down", "900", session=s)
    assert scrolled["scroll"][1] > 0
    bay.ok("scroll", "text=Item 299", session=s)
    assert bay.ok("eval", "window.scrollY", session=s)["value"] > 1000
    bay.ok("wait", "text=Item 5", session=s)
    assert bay.ok("wait", "50", session=s)["waited"] == 50
    html = bay.ok("get", "html", "h1", session=s)["value"]
    assert html == "<h1>300 items</h1>"
    bay.ok("close", session=s)


def test_screenshot_writes_a_png(bay: Bay, demo: str, tmp_path: Path) -> None:
    s = "shot"
    bay.ok("open", f"{demo}/", session=s)
    target = tmp_path / "page.png"
    shot = bay.ok("screenshot", str(target), session=s)
    assert shot["path"] == str(target)
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    default = bay.ok("screenshot", "--full", session=s)
    assert Path(default["path"]).is_file()
    assert default["bytes"] > 1000
    bay.ok("close", session=s)


def test_tab_new_switch_close(bay: Bay, demo: str) -> None:
    s = "tabs"
    bay.ok("open", f"{demo}/", session=s)
    new = bay.ok("tab", "new", f"{demo}/form.html", session=s)
    assert new["title"] == "Sign up"
    tabs = bay.ok("tab", session=s)["tabs"]
    assert [t["current"] for t in tabs] == [False, True]
    first = tabs[0]["id"]
    switched = bay.ok("tab", first, session=s)
    assert switched["id"] == first
    assert switched["title"] == "browserbay demo"
    assert bay.ok("get", "title", session=s)["value"] == "browserbay demo"
    bay.ok("tab", "close", new["tab"], session=s)
    assert_refused(bay("tab", new["tab"], session=s), "tab_gone")
    assert_refused(bay("tab", "close", "t99999", session=s), "tab_gone")
    assert [t["id"] for t in bay.ok("tab", session=s)["tabs"]] == [first]
    bay.ok("close", session=s)


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "javascript:alert(1)",
        "chrome://settings",
        "data:text/html,<h1>x</h1>",
        "view-source:http://127.0.0.1/",
    ],
)
def test_only_http_https_and_about_blank_are_opened(bay: Bay, url: str) -> None:
    frame = assert_refused(bay("open", url, session="schemes"), "local_scheme_refused")
    assert frame["data"]["url"] == url


def test_about_blank_and_bare_hosts(bay: Bay, demo: str) -> None:
    assert bay.ok("open", "about:blank", session="blank")["url"] == "about:blank"
    port = demo.rsplit(":", 1)[1]
    assert bay.ok("open", f"127.0.0.1:{port}/", session="blank")["title"] == "browserbay demo"
    bay.ok("close", session="blank")


def test_missing_selector_and_failing_script(bay: Bay, demo: str) -> None:
    s = "missing"
    bay.ok("open", f"{demo}/", session=s)
    assert_refused(bay("click", "#does-not-exist", "--timeout", "2", session=s), "target_not_found")
    assert_refused(bay("wait", "#never", "--timeout", "2", session=s), "target_not_found")
    frame = assert_refused(bay("eval", "throw new Error('boom')", session=s), "action_failed")
    assert "boom" in frame["message"]
    # A DOM node or the window cannot be JSON: said plainly, never a crash.
    assert "Node" in bay.ok("eval", "document.body", session=s)["value"]
    circular = "(() => { const o = {}; o.o = o; return o })()"
    assert bay.ok("eval", circular, session=s)["value"] is None
    bay.ok("close", session=s)


def test_a_403_answer_carries_a_tier_hint_worded_as_a_hint(bay: Bay, demo: str) -> None:
    opened = bay.ok("open", f"{demo}/status/403", session="hint")
    assert opened["status"] == 403
    assert "might fare better" in opened["hint"]
    assert "Nothing was changed" in opened["hint"]
    assert "hint" not in bay.ok("open", f"{demo}/", session="hint")
    bay.ok("close", session="hint")
