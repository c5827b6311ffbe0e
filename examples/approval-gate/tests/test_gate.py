"""The approval gate and audit sink as plain functions (the end-to-end test through the real
CLI is tests/test_examples.py at the repository root)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from browserbay_approval_gate import plugin

from browserbay.model import ActionTarget, Ask, ProfileRef, SessionRef, VerbCall, VerbOutcome
from browserbay.refusals import Refusal

SESSION = SessionRef("agent-1", "env")
PROFILE = ProfileRef("ep-agent-1", "ephemeral", "chromium", 1, True)


def _call(verb: str = "click") -> VerbCall:
    return VerbCall(verb, {"target": "@e7"}, SESSION, PROFILE)


def _target(name: str, text: str = "", role: str = "button") -> ActionTarget:
    return ActionTarget(target="@e7", tab="t1", role=role, name=name, text=text)


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in (
        "BAY_GATE_WORDS",
        "BAY_GATE_VERBS",
        "BAY_GATE_APPROVALS",
        "BAY_GATE_MODE",
        "BAY_GATE_ASK_TIMEOUT",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("BAY_AUDIT_FILE", str(tmp_path / "audit.jsonl"))


def _audit(tmp_path: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in (tmp_path / "audit.jsonl").read_text().splitlines()]


@pytest.mark.parametrize(
    ("name", "text", "word"),
    [
        ("Buy now", "", "Buy"),
        ("", "BUY IT", "Buy"),
        ("Complete purchase", "", "Purchase"),
        ("Place order", "", "Place order"),
        ("Buyer's guide", "", None),  # a whole word, not a prefix
        ("Add to wishlist", "", None),
    ],
)
def test_gated_words_are_whole_words_in_any_case(name: str, text: str, word: str | None) -> None:
    assert plugin.gated_word(name, text) == word


def test_a_click_on_buy_asks_a_human_and_is_audited(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ask = plugin.bay_before_action(call=_call(), target=_target("Buy now"))
    assert isinstance(ask, Ask)
    assert ask.plugin == "approval-gate"
    assert ask.reason == 'click on the button "Buy now" needs a human\'s approval ("Buy" is gated)'
    assert ask.timeout == 120.0
    monkeypatch.setenv("BAY_GATE_ASK_TIMEOUT", "30")
    later = plugin.bay_before_action(call=_call(), target=_target("Buy now"))
    assert isinstance(later, Ask)
    assert later.timeout == 30.0
    rows = _audit(tmp_path)
    assert [(r["event"], r["decision"]) for r in rows] == [("gate", "asked")] * 2


def test_a_click_on_buy_is_refused_and_audited(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("BAY_GATE_MODE", "refuse")
    refusal = plugin.bay_before_action(call=_call(), target=_target("Buy now"))
    assert isinstance(refusal, Refusal)
    assert refusal.code == "verb_refused"
    assert refusal.fields["plugin"] == "approval-gate"
    assert refusal.fields["name"] == "Buy now"
    assert "needs a human's approval" in refusal.message
    (row,) = _audit(tmp_path)
    assert (row["event"], row["decision"], row["word"]) == ("gate", "refused", "Buy")


def test_other_verbs_and_other_buttons_pass(tmp_path: Path) -> None:
    assert plugin.bay_before_action(call=_call("fill"), target=_target("Buy now")) is None
    assert plugin.bay_before_action(call=_call(), target=_target("Add to wishlist")) is None
    assert not (tmp_path / "audit.jsonl").exists()


def test_an_approved_session_passes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    approvals = tmp_path / "approvals.txt"
    approvals.write_text("someone-else\nagent-1\n")
    monkeypatch.setenv("BAY_GATE_APPROVALS", str(approvals))
    assert plugin.bay_before_action(call=_call(), target=_target("Buy now")) is None
    assert _audit(tmp_path)[0]["decision"] == "approved"


def test_words_and_verbs_are_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BAY_GATE_WORDS", "Delete account")
    monkeypatch.setenv("BAY_GATE_VERBS", "click,check")
    assert plugin.bay_before_action(call=_call(), target=_target("Buy now")) is None
    assert plugin.bay_before_action(call=_call("check"), target=_target("Delete account"))


def test_the_audit_sink_writes_one_line_per_verb_and_never_raises(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    call = VerbCall("fill", {"target": "@e5", "text": {"chars": 7}}, SESSION, PROFILE)
    plugin.bay_after_verb(call=call, outcome=VerbOutcome(True, None, 12.34))
    (row,) = _audit(tmp_path)
    assert row["args"] == {"target": "@e5", "text": {"chars": 7}}
    assert (row["verb"], row["ok"], row["ms"], row["profile"]) == ("fill", True, 12.3, "ep-agent-1")
    monkeypatch.setenv("BAY_AUDIT_FILE", str(tmp_path / "no" / "such" / "dir" / "a.jsonl"))
    plugin.bay_after_verb(call=call, outcome=VerbOutcome(False, "deadline", 1.0))  # logged only


def test_click_stands_for_every_way_to_press_but_a_move_presses_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BAY_GATE_MODE", "refuse")

    def call(verb: str, **args: object) -> VerbCall:
        return VerbCall(verb, args, SESSION, PROFILE)

    buy = ActionTarget(target="", tab="t1", role="button", name="Buy now", text="", via="focus")
    for pressing in (
        call("press", key="Enter"),
        call("keyboard", action="type"),
        call("mouse", action="down"),
        call("keydown", key="Enter"),
    ):
        assert isinstance(plugin.bay_before_action(call=pressing, target=buy), Refusal)
    for moving in (call("mouse", action="move"), call("mouse", action="wheel")):
        assert plugin.bay_before_action(call=moving, target=buy) is None
    refusal = plugin.bay_before_action(call=call("press", key="Enter"), target=buy)
    assert refusal is not None
    assert "(it has the focus)" in refusal.message
