"""Who holds a lease's controls (browserbay.keeper.controls), without a browser: the pause,
the cut of verbs in flight, the handback's notice, the idle handback, the hooks."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from browserbay import verbs
from browserbay.hookspecs import hookimpl
from browserbay.keeper.controls import Controls
from browserbay.keeper.roads import Guards
from browserbay.keeper.sessions import Lease, Session
from browserbay.model import LeaseInfo, ProfileRef, SessionRef, VerbCall
from browserbay.plugins import Plugins, load_plugins
from browserbay.refusals import Refusal
from browserbay_testing import assert_refused


class Hooks:
    """A plugin that records the lifecycle hooks the controls call, as a real plugin manager
    calls them."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    @hookimpl
    def bay_takeover(self, lease: LeaseInfo, viewer: str) -> None:
        self.calls.append(("bay_takeover", {"lease": lease, "viewer": viewer}))

    @hookimpl
    def bay_handback(self, lease: LeaseInfo, viewer: str) -> None:
        self.calls.append(("bay_handback", {"lease": lease, "viewer": viewer}))


def _setup(handback_idle: float = 300.0) -> tuple[Controls, Hooks, Session, Lease]:
    hooks = Hooks()
    plugins = load_plugins({}, extra=[("recorder", hooks)], entry_points=[])
    ref = SessionRef("s1", "env")
    session = Session(ref, "s1")
    profile = ProfileRef("ep-s1", "ephemeral", "chromium", 1, True)
    lease = Lease(ref, profile)
    session.leases[profile.id] = lease
    controls = Controls(plugins, {"s1": session}, handback_idle)
    return controls, hooks, session, lease


def test_command_line_never_shows_typed_text() -> None:
    fill = verbs.BY_NAME["fill"]
    assert fill.command_line({"target": "@e7", "text": "hunter2"}) == "bay fill @e7 <text>"
    wait = verbs.BY_NAME["wait"]
    assert wait.command_line({"what": "200", "load": True}) == "bay wait 200 --load"
    select = verbs.BY_NAME["select"]
    assert select.command_line({"target": "#s", "values": ["a", "b"]}) == "bay select #s a b"


def test_a_takeover_pauses_and_the_handback_leaves_a_notice() -> None:
    controls, hooks, session, lease = _setup()
    controls.check(lease, exempt=False)  # nothing paused yet
    info = controls.take_over("s1", "ep-s1", "viewer 1")
    assert info.origin == "takeover"
    assert lease.control.holder == "user"
    assert lease.info().input_holder == "user"
    with pytest.raises(Refusal) as refused:
        controls.check(lease, exempt=False)
    frame = assert_refused(refused.value, "browser_paused")
    assert "viewer 1" in frame["data"]["by"]
    controls.check(lease, exempt=True)  # bay live, bay handoff
    # Another viewer cannot drive meanwhile, nor hand back for the driver.
    with pytest.raises(Refusal):
        controls.take_over("s1", "ep-s1", "viewer 2")
    with pytest.raises(Refusal):
        anyio.run(controls.hand_back, "s1", "ep-s1", "viewer 2", "explicit")
    assert anyio.run(controls.hand_back, "s1", "ep-s1", "viewer 1", "explicit")
    assert not anyio.run(controls.hand_back, "s1", "ep-s1", "viewer 1", "explicit")
    assert lease.control.pause is None
    assert lease.control.holder == "agent"
    assert len(session.notices) == 1
    assert "handed the controls back" in session.notices[0]
    assert [h for h, _ in hooks.calls] == ["bay_takeover", "bay_handback"]
    with pytest.raises(KeyError):
        controls.take_over("nobody", "ep-x", "viewer 1")


def test_a_verb_in_flight_is_cut_and_named_in_the_notice() -> None:
    controls, _hooks, session, lease = _setup()
    click = verbs.BY_NAME["click"]
    outcome: dict[str, Any] = {}

    async def main() -> None:
        async def forever() -> tuple[dict[str, Any], str, None]:
            await anyio.sleep(60)
            return {}, "", None

        async def agent() -> None:
            try:
                await controls.run(lease, click, {"target": "@e3"}, False, forever)
            except Refusal as r:
                outcome["refusal"] = r

        async with anyio.create_task_group() as tg:
            tg.start_soon(agent)
            await anyio.sleep(0.05)
            assert len(lease.control.inflight) == 1
            controls.take_over("s1", "ep-s1", "viewer 1")
        assert not lease.control.inflight
        # An exempt verb runs while paused and is not cut.
        done = await controls.run(lease, click, {}, True, lambda: _value(7))
        assert done == 7

    anyio.run(main)
    frame = assert_refused(outcome["refusal"], "browser_interrupted")
    assert frame["data"]["command"] == "bay click @e3"
    assert frame["data"]["may_have_reached_page"] is True
    anyio.run(controls.hand_back, "s1", "ep-s1", "viewer 1", "explicit")
    assert "run again what was cut: bay click @e3" in session.notices[-1]


async def _value(v: int) -> int:
    return v


def test_idle_handback_and_handoff() -> None:
    controls, hooks, session, lease = _setup(handback_idle=0.05)
    # A handoff nobody took up is not handed back by the idle clock.
    info = controls.take_over("s1", "ep-s1", None, "log in")
    assert info.origin == "handoff"
    assert info.holder is None
    anyio.run(controls.expire_idle)
    assert lease.control.pause is not None
    assert hooks.calls == []  # nobody took over yet
    # A viewer takes it up; then gives no input.
    controls.take_over("s1", "ep-s1", "viewer 3")
    assert lease.control.pause is not None
    assert lease.control.pause.holder == "viewer 3"

    async def wait() -> tuple[bool, bool]:
        early = await controls.wait_handback("s1", "ep-s1", 0.01)
        await anyio.sleep(0.1)
        await controls.expire_idle()
        late = await controls.wait_handback("s1", "ep-s1", 1)
        return early, late

    early, late = anyio.run(wait)
    assert (early, late) == (False, True)
    assert "gave no input for 0.05s" in session.notices[-1]
    assert [h for h, _ in hooks.calls] == ["bay_takeover", "bay_handback"]


def test_a_lease_that_ends_while_paused_wakes_the_handoff() -> None:
    controls, _hooks, _session, lease = _setup()
    controls.take_over("s1", "ep-s1", None, "log in")

    async def main() -> bool:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_later, lambda: Controls.let_go(lease))
            return await controls.wait_handback("s1", "ep-s1", 5)

    assert anyio.run(main) is True
    assert lease.control.holder == "agent"
    assert lease.info("closed").ended == "closed"


async def _later(fn: Any) -> None:
    await anyio.sleep(0.05)
    fn()


def _two_on_one_profile() -> tuple[
    Controls, Plugins, ProfileRef, dict[str, Session], dict[str, Lease]
]:
    """Sessions ``holder-7f3a9c`` and ``sibling``, each with a lease on one shared profile."""
    plugins = load_plugins({}, extra=[("recorder", Hooks())], entry_points=[])
    profile = ProfileRef("bp-0000abcd", "work", "chromium", 1, False)
    sessions: dict[str, Session] = {}
    leases: dict[str, Lease] = {}
    for sid in ("holder-7f3a9c", "sibling"):
        ref = SessionRef(sid, "env")
        sessions[sid] = Session(ref, sid)
        leases[sid] = sessions[sid].leases[profile.id] = Lease(ref, profile)
    return Controls(plugins, sessions, 300.0), plugins, profile, sessions, leases


def test_a_session_socket_sibling_is_not_told_which_session_a_human_took() -> None:
    """Two sessions on one shared profile; a human takes the first's lease. The second's
    verb is refused ``browser_paused`` either way, but only the owner's channel is told the
    first session's id (and its handoff's reason): on a session socket it is ``another
    session``."""
    controls, plugins, profile, _sessions, leases = _two_on_one_profile()

    async def audit(_call: VerbCall, _ok: bool, _code: str | None) -> None:
        return None

    guards = Guards(plugins, controls, lambda _pid, _handle: None, audit)
    for origin in ("takeover", "handoff"):
        if origin == "takeover":
            controls.take_over("holder-7f3a9c", profile.id, "viewer 1")
        else:
            controls.take_over("holder-7f3a9c", profile.id, None, "sign in for holder-7f3a9c")
        sibling = leases["sibling"]
        for actor, told in (("owner", True), ("session-socket:sibling", False), (None, False)):
            call = VerbCall("click", {}, sibling.session, None, "cli", actor)
            with pytest.raises(Refusal) as refused:
                guards.check(call, sibling)
            frame = assert_refused(refused.value, "browser_paused")
            said = json.dumps(frame)
            assert ("holder-7f3a9c" in said) is told, (origin, actor, said)
            if not told:
                assert "another session" in frame["data"]["by"]
        anyio.run(controls.hand_back, "holder-7f3a9c", profile.id, "viewer 1", "explicit")
        assert leases["sibling"].control.pause is None


def test_taking_the_controls_and_getting_them_back_restart_the_agents_idle_clock() -> None:
    """The idle handback (BAY_HANDBACK_IDLE) must come before the session's own idle timeout
    (BAY_IDLE_TIMEOUT), whatever the load: pressing Take over is a human's input (the clock
    restarts, as for any input), and the handback restarts it too (the agent could not act
    while paused, and its notice must not be lost to an idle-out in that moment). Old code
    left ``last_used`` at the agent's last verb: a slow takeover let the session idle out
    while the human held it (the live-view idle-handback test's flake under load)."""
    controls, _hooks, session, lease = _setup(handback_idle=0.05)
    session.last_used = long_ago = 0.0
    controls.take_over("s1", "ep-s1", "viewer 1")
    taken = session.last_used
    assert taken > long_ago
    session.last_used = long_ago

    async def idle_handback() -> None:
        await anyio.sleep(0.1)
        await controls.expire_idle()

    anyio.run(idle_handback)
    assert lease.control.pause is None
    assert "gave no input" in session.notices[-1]
    assert session.last_used > taken  # restarted at the handback


def test_a_sibling_cut_in_flight_on_a_session_socket_is_not_told_which_session_a_human_took() -> (
    None
):
    """The sibling's verb in flight when a human takes the other session's lease on their
    shared browser is cut ``browser_interrupted``; as with ``browser_paused``, only the
    owner's channel is told the taken session's id — a session socket's verb, and the
    handback notice every paused session gets, say ``another session``."""
    controls, _plugins, profile, sessions, leases = _two_on_one_profile()
    click = verbs.BY_NAME["click"]
    said: dict[bool, str] = {}

    async def forever() -> None:
        await anyio.sleep(60)

    for owner in (True, False):

        async def main(owner: bool = owner) -> None:
            async def agent() -> None:
                try:
                    await controls.run(leases["sibling"], click, {}, False, forever, owner=owner)
                except Refusal as r:
                    said[owner] = json.dumps(assert_refused(r, "browser_interrupted"))

            async with anyio.create_task_group() as tg:
                tg.start_soon(agent)
                await anyio.sleep(0.05)
                controls.take_over("holder-7f3a9c", profile.id, "viewer 1")

        anyio.run(main)
        anyio.run(controls.hand_back, "holder-7f3a9c", profile.id, "viewer 1", "explicit")
    assert "holder-7f3a9c" in said[True]
    assert "holder-7f3a9c" not in said[False]
    assert "another session" in said[False]
    notices = sessions["sibling"].notices
    assert notices
    assert all("holder-7f3a9c" not in n for n in notices), notices
