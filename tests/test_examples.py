"""The examples, seen from the outside: the integrator's approval gate refuses a click on the
demo shop's "Buy now" button through the real CLI (bay_before_action), its JSONL audit sink
records every verb without a typed value, and examples/api_demo.py drives the demo site."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from browserbay_testing import KEEPER_PLUGINS, Bay, assert_refused

REPO = Path(__file__).resolve().parents[1]

GATE_SRC = REPO / "examples" / "approval-gate" / "src"


def _ref(snapshot: str, role: str, name: str) -> str:
    m = re.search(rf'{role} "{re.escape(name)}"[^\n]*? @(e\d+)\b', snapshot)
    assert m, f"no {role} {name!r} in:\n{snapshot}"
    return "@" + m.group(1)


@pytest.fixture(scope="module")
def gated() -> Iterator[Bay]:
    """A keeper with the recorder and the approval gate loaded as plugin modules."""
    home = Path(tempfile.mkdtemp(prefix="bay-g-", dir="/tmp"))
    b = Bay(
        home,
        PYTHONPATH=f"{KEEPER_PLUGINS}:{GATE_SRC}",
        BAY_PLUGIN_MODULES="recorder,browserbay_approval_gate.plugin",
        BAY_AUDIT_FILE=str(home / "audit.jsonl"),
        BAY_GATE_APPROVALS=str(home / "approvals.txt"),
        BAY_GATE_MODE="refuse",  # the ask path (a card in the live view): tests/test_approvals.py
    )
    yield b
    b.stop()
    shutil.rmtree(home, ignore_errors=True)


def _audit(b: Bay) -> list[dict[str, object]]:
    path = b.home / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_click_on_buy_is_refused_with_a_typed_refusal_the_agent_sees(
    gated: Bay, demo: str
) -> None:
    s = "shopper"
    gated.ok("open", f"{demo}/shop.html", session=s)
    snap = gated.ok("snapshot", "-i", session=s)["snapshot"]
    wish = _ref(snap, "button", "Add to wishlist")
    buy = _ref(snap, "button", "Buy now")

    gated.ok("click", wish, session=s)  # not gated
    assert gated.ok("get", "text", "#status", session=s)["value"] == "Added to your wishlist"

    frame = assert_refused(gated("click", buy, session=s), "verb_refused")
    assert frame["message"] == (
        "'click' was refused by the approval-gate plugin: click on the button \"Buy now\" "
        'needs a human\'s approval ("Buy" is gated)'
    )
    assert frame["way_out"].startswith("stop and ask the user")
    assert frame["data"] == {
        "plugin": "approval-gate",
        "verb": "click",
        "reason": frame["data"]["reason"],
        "fix": frame["way_out"],
        "target": buy,
        "role": "button",
        "name": "Buy now",
    }
    # What an agent reads in text mode, with exit status 1.
    plain = gated("click", buy, session=s, json_=False)
    assert plain.code == 1
    assert plain.stderr.startswith(
        "refused [verb_refused]: 'click' was refused by the approval-gate plugin: "
    )
    assert "  way out: stop and ask the user" in plain.stderr
    # The gate looks at the element the keeper found, not at how the agent named it.
    assert_refused(gated("click", "#buy", session=s), "verb_refused")
    assert_refused(gated("click", "text=Buy now", session=s), "verb_refused")
    # Nothing was bought.
    assert gated.ok("get", "text", "#status", session=s)["value"] == "Added to your wishlist"

    # A human approves this session: the same click goes through.
    (gated.home / "approvals.txt").write_text(f"{s}\n")
    gated.ok("click", buy, session=s)
    assert gated.ok("get", "text", "#status", session=s)["value"] == "Order placed: 1 kettle"
    gated.ok("close", session=s)

    rows = _audit(gated)
    decisions = [r["decision"] for r in rows if r["event"] == "gate"]
    assert decisions == ["refused", "refused", "refused", "refused", "approved"]
    verbs = [r for r in rows if r["event"] == "verb"]
    clicks = [(r["args"], r["ok"], r["code"]) for r in verbs if r["verb"] == "click"]
    assert clicks[0] == ({"target": wish}, True, None)
    assert clicks[1] == ({"target": buy}, False, "verb_refused")
    assert clicks[-1] == ({"target": buy}, True, None)


def test_bay_before_action_sees_the_element_and_the_profile(gated: Bay, demo: str) -> None:
    """The hook's arguments as a plugin gets them (the recorder test plugin records them)."""
    s = "described"
    gated.ok("open", f"{demo}/form.html", session=s)
    snap = gated.ok("snapshot", session=s)["snapshot"]
    gated.ok("fill", _ref(snap, "textbox", "Name"), "hunter2-secret", session=s)
    gated.ok("check", _ref(snap, "checkbox", "I accept the terms"), session=s)
    gated.ok("hover", _ref(snap, "button", "Create account"), session=s)  # not an action
    gated.ok("get", "text", "h1", session=s)  # reading is not an action either
    gated.ok("close", session=s)
    seen = [
        r
        for r in gated.recorded()
        if r["hook"] == "bay_before_action" and r["call"]["session"]["id"] == s
    ]
    assert [r["call"]["verb"] for r in seen] == ["fill", "check"]
    fill, check = seen
    assert fill["target"]["role"] == "textbox"
    assert fill["target"]["name"] == "Name"
    assert fill["call"]["args"]["text"] == {"chars": len("hunter2-secret")}
    assert fill["call"]["profile"]["id"] == f"ep-{s}"
    assert check["target"] == {
        "target": _ref(snap, "checkbox", "I accept the terms"),
        "tab": check["target"]["tab"],
        "role": "checkbox",
        "name": "I accept the terms",
        "text": "",
        "via": "target",
        "selector": "input[name=terms]",
        "frame": check["target"]["frame"],
        "point": None,
        "key": None,
    }
    assert check["target"]["frame"].endswith("/form.html")
    # The audit sink and the recorder never saw the typed text.
    assert "hunter2" not in (gated.home / "audit.jsonl").read_text()
    assert "hunter2" not in (gated.home / "recorder.jsonl").read_text()


def test_the_api_demo_script_drives_the_demo_site(tmp_path: Path, demo: str) -> None:
    env = dict(Bay(tmp_path).env, BAY_SESSION="api-demo-test")
    try:
        out = subprocess.run(
            [sys.executable, str(REPO / "examples" / "api_demo.py"), demo],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
    finally:
        Bay(tmp_path).stop()
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == f"opened: Sign up ({demo}/form.html), HTTP 200"
    assert lines[1] == "profile: ephemeral (ep-api-demo-test) · session api-demo-test"
    assert "after submit: Signed up" in lines
    assert "Ada Lovelace" in out.stdout
    assert "refused [ref_stale]: Reference @e" in out.stdout
    assert lines[-1] == "closed 1 tab(s)"
