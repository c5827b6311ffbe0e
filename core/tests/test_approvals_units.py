"""Approvals without a browser (browserbay.keeper.approvals): an Ask waits for a human's
answer, bounded; a card is readable through the LiveHost (``approvals_of``, ``pending``)
while it waits and gone however the wait ends; a gate's refusal wins over another's Ask."""

from __future__ import annotations

import time

import anyio
import pytest

from browserbay.hookspecs import hookimpl
from browserbay.keeper.approvals import Approvals
from browserbay.keeper.controls import Controls
from browserbay.keeper.roads import Guards
from browserbay.keeper.sessions import Lease, Session
from browserbay.model import ActionTarget, Ask, ProfileRef, SessionRef, VerbCall
from browserbay.plugins import load_plugins
from browserbay.refusals import Refusal
from browserbay_testing import assert_refused

REF = SessionRef("s1", "env")
PROFILE = ProfileRef("ep-s1", "ephemeral", "chromium", 1, True)


def _controls() -> Controls:
    session = Session(REF, "s1")
    session.leases[PROFILE.id] = Lease(REF, PROFILE)
    return Controls(load_plugins({}, entry_points=[]), {"s1": session}, 300.0, None, Approvals())


async def _ask(controls: Controls, ask: Ask, seconds: float = 10.0) -> None:
    await controls.approvals.ask(
        ask,
        session="s1",
        profile=PROFILE.id,
        tab="t1",
        verb="click",
        what='click button "Buy now"',
        url="http://shop.test/cart",
        deadline=time.monotonic() + seconds,
    )


@pytest.mark.anyio
async def test_an_ask_waits_for_the_human_and_approved_returns() -> None:
    controls = _controls()
    async with anyio.create_task_group() as tg:
        tg.start_soon(_ask, controls, Ask("it buys", plugin="gate"))
        await anyio.sleep(0.05)
        (card,) = controls.approvals_of("s1", PROFILE.id)
        assert (card.verb, card.what, card.plugin, card.tab) == (
            "click",
            'click button "Buy now"',
            "gate",
            "t1",
        )
        (pending,) = controls.pending()
        assert (pending.session, pending.profile, pending.approvals) == ("s1", PROFILE.id, (card,))
        assert not controls.answer_approval("s2", PROFILE.id, card.id, True, "viewer 1")  # not its
        assert controls.answer_approval("s1", PROFILE.id, card.id, True, "viewer 1")
        assert not controls.answer_approval("s1", PROFILE.id, card.id, False, "viewer 1")  # once
    assert controls.approvals_of("s1", PROFILE.id) == []
    assert controls.pending() == []


@pytest.mark.anyio
async def test_a_denied_ask_is_refused_approval_denied() -> None:
    controls = _controls()
    refused: list[Refusal] = []

    async def asking() -> None:
        try:
            await _ask(controls, Ask("it buys"))
        except Refusal as r:
            refused.append(r)

    async with anyio.create_task_group() as tg:
        tg.start_soon(asking)
        await anyio.sleep(0.05)
        (card,) = controls.approvals_of("s1", PROFILE.id)
        controls.answer_approval("s1", PROFILE.id, card.id, False, "viewer 2")
    frame = assert_refused(refused[0], "approval_denied")
    assert frame["message"].startswith('A human denied click button "Buy now" (a human in')
    assert frame["data"]["by"] == "a human in the live view (viewer 2)"
    assert frame["data"]["plugin"] == "a policy"  # the plugin left it out


@pytest.mark.anyio
async def test_an_unanswered_ask_times_out_within_the_verbs_deadline() -> None:
    controls = _controls()
    began = time.monotonic()
    with pytest.raises(Refusal) as refused:
        await _ask(controls, Ask("it buys", timeout=60.0), seconds=1.8)  # 1 s kept to answer
    assert time.monotonic() - began < 1.5
    frame = assert_refused(refused.value, "approval_timeout")
    assert frame["data"]["waited"] <= 0.8
    assert controls.pending() == []
    # Less than half a second left: answered at once, no card shown.
    with pytest.raises(Refusal):
        await _ask(controls, Ask("it buys"), seconds=1.2)


class Asks:
    @hookimpl
    def bay_before_action(self, call: VerbCall, target: ActionTarget) -> Ask:
        return Ask("a human decides")


class Refuses:
    @hookimpl
    def bay_before_action(self, call: VerbCall, target: ActionTarget) -> Refusal:
        return Refusal("verb_refused", plugin="no", reason="never", fix="do not")


class Nonsense:
    @hookimpl
    def bay_before_action(self, call: VerbCall, target: ActionTarget) -> str:
        return "yes"


def test_a_refusal_wins_over_an_ask_and_nonsense_is_never_a_yes() -> None:
    call = VerbCall("click", {}, REF, PROFILE)
    target = ActionTarget(target="#b", tab="t1", role="button", name="Buy", text="Buy")
    for order in ((Asks(), Refuses()), (Refuses(), Asks())):
        plugins = load_plugins(
            {}, extra=[(f"p{i}", p) for i, p in enumerate(order)], entry_points=[]
        )
        assert isinstance(plugins.hooks.bay_before_action(call, target), Refusal)
    asks = load_plugins({}, extra=[("a", Asks())], entry_points=[])
    assert isinstance(asks.hooks.bay_before_action(call, target), Ask)
    nonsense = load_plugins({}, extra=[("n", Nonsense()), ("a", Asks())], entry_points=[])
    with pytest.raises(TypeError):
        nonsense.hooks.bay_before_action(call, target)


@pytest.mark.anyio
async def test_a_plugins_long_reason_is_clipped_on_the_card_and_in_the_refusal() -> None:
    """A gate's ``Ask.reason`` (and its plugin name) is shown clipped: on the card the live
    view and ``bay status`` read, and in the agent's ``approval_timeout``, which says what the
    card said (the plugin's name was 300 characters there, 80 on the card)."""
    controls = _controls()
    got: list[Refusal] = []

    async def asking() -> None:
        try:
            await _ask(controls, Ask("why " * 2000, plugin="gate-" * 100, timeout=0.6))
        except Refusal as r:
            got.append(r)

    async with anyio.create_task_group() as tg:
        tg.start_soon(asking)
        await anyio.sleep(0.1)
        (card,) = controls.approvals_of("s1", PROFILE.id)
        assert len(card.reason) < 320
        assert len(card.plugin) < 100
    frame = assert_refused(got[0], "approval_timeout")
    assert len(frame["message"]) < 800
    assert len(frame["data"]["reason"]) < 320
    assert frame["data"]["plugin"] == card.plugin  # the card's words, clipped alike
    assert frame["data"]["reason"] == card.reason


def test_a_before_verb_ask_where_nothing_can_wait_is_refused_never_a_yes() -> None:
    """``bay_before_verb`` may answer an Ask; a caller of the guards that cannot wait for a
    human (a session verb, a CDP call, a trigger: no ``asks`` list) refuses it
    ``verb_refused``; one that can gets it back to wait on. A refusal of another gate wins
    over the Ask either way."""

    class Asking:
        @hookimpl
        def bay_before_verb(self, call: VerbCall) -> Ask | None:
            return Ask("scrolling needs a human", plugin="gate") if call.verb == "scroll" else None

    class Vetoing:
        @hookimpl
        def bay_before_verb(self, call: VerbCall) -> Refusal | None:
            return (
                Refusal("verb_refused", plugin="veto", reason="no", fix="ask")
                if call.verb == "scroll" and call.args.get("veto")
                else None
            )

    plugins = load_plugins({}, extra=[("a", Asking()), ("v", Vetoing())], entry_points=[])
    controls = _controls()

    async def audit(_call: VerbCall, _ok: bool, _code: str | None) -> None:
        return None

    guards = Guards(plugins, controls, lambda _pid, _handle: None, audit)
    lease = Lease(REF, PROFILE)
    call = VerbCall("scroll", {}, REF, None, "cdp", None)
    with pytest.raises(Refusal) as refused:
        guards.check(call, lease)
    frame = assert_refused(refused.value, "verb_refused")
    assert frame["data"]["plugin"] == "gate"
    asks: list[Ask] = []
    guards.check(call, lease, asks=asks)
    assert [a.reason for a in asks] == ["scrolling needs a human"]
    vetoed = VerbCall("scroll", {"veto": True}, REF, None, "cli", "owner")
    with pytest.raises(Refusal) as refused:
        guards.check(vetoed, lease, asks=[])
    assert assert_refused(refused.value, "verb_refused")["data"]["plugin"] == "veto"
