"""The live view's pure parts, without a browser: key and pointer mapping, tickets and
credentials, a viewer's latest-wins slot under backpressure, guarded acks."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest

from browserbay_liveview_web import keys
from browserbay_liveview_web.stream import TabStream
from browserbay_liveview_web.tickets import CREDENTIAL_TTL, TICKET_TTL, Vault
from browserbay_liveview_web.viewer import MAX_INPUT, Viewer

# -- keys and pointer ---------------------------------------------------------------------


def test_enter_carries_a_carriage_return() -> None:
    down = keys.key_event("down", "Enter", "Enter", 0)
    assert down["type"] == "keyDown"
    assert down["text"] == "\r"
    assert down["windowsVirtualKeyCode"] == 13


@pytest.mark.parametrize(
    ("key", "code", "vk"),
    [
        ("Backspace", "Backspace", 8),
        ("Tab", "Tab", 9),
        ("Escape", "Escape", 27),
        ("ArrowLeft", "ArrowLeft", 37),
        ("Delete", "Delete", 46),
        ("Home", "Home", 36),
        ("F5", "F5", 116),
    ],
)
def test_keys_that_type_nothing_carry_their_virtual_key_code(key: str, code: str, vk: int) -> None:
    down = keys.key_event("down", key, code, 0)
    assert down["type"] == "rawKeyDown"
    assert "text" not in down
    assert down["windowsVirtualKeyCode"] == vk
    up = keys.key_event("up", key, code, 0)
    assert up["type"] == "keyUp"
    assert up["windowsVirtualKeyCode"] == vk


def test_printable_keys_go_as_text_and_chords_as_shortcuts() -> None:
    a = keys.key_event("down", "a", "KeyA", 0)
    assert (a["type"], a["text"], a["windowsVirtualKeyCode"]) == ("keyDown", "a", 65)
    capital = keys.key_event("down", "A", "KeyA", keys.SHIFT)
    assert capital["text"] == "A"
    assert keys.key_event("down", "é", "", 0)["text"] == "é"
    assert keys.key_event("down", "7", "Digit7", 0)["windowsVirtualKeyCode"] == ord("7")
    chord = keys.key_event("down", "a", "KeyA", keys.CTRL)
    assert chord["type"] == "rawKeyDown"
    assert "text" not in chord
    assert chord["modifiers"] == keys.CTRL


def test_pointer_fractions_map_onto_the_css_viewport() -> None:
    # The same fractions land on the same CSS point whatever the picture's pixel size
    # (DPR 1 or 2, letterboxed or not): the viewer sends fractions of the drawn picture.
    assert keys.to_css(0.4, 0.3166667, (900, 600)) == (360.0, 190.0)
    assert keys.to_css(-0.2, 1.7, (900, 600)) == (0.0, 600.0)  # clamped onto the page
    press = keys.mouse_event("down", 10, 20, "left", 1, 1, 0)
    assert (press["type"], press["button"], press["clickCount"]) == ("mousePressed", "left", 1)
    move = keys.mouse_event("move", 10, 20, "left", 0, 1, 0)
    assert (move["type"], move["button"], move["clickCount"]) == ("mouseMoved", "none", 0)
    assert keys.wheel_event(1, 2, 0, 120, 0)["type"] == "mouseWheel"


# -- tickets and credentials ----------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_ticket_works_once_within_its_minute() -> None:
    clock = Clock()
    vault = Vault(clock)
    ticket, grant = vault.ticket("s1", "ep-s1", "control")
    assert vault.redeem(ticket, "another-view") is None  # bound to its view...
    ticket, grant = vault.ticket("s1", "ep-s1", "control")
    credential = vault.redeem(ticket, grant.view)
    assert credential is not None
    assert credential.grant.mode == "control"
    assert vault.redeem(ticket, grant.view) is None  # ...and used once
    late, grant = vault.ticket("s1", "ep-s1", "watch")
    clock.now += TICKET_TTL + 1
    assert vault.redeem(late, grant.view) is None


def test_a_credential_lasts_a_day_is_bound_to_its_view_and_is_revoked() -> None:
    clock = Clock()
    vault = Vault(clock)
    ticket, grant = vault.ticket("s1", "ep-s1", "watch")
    credential = vault.redeem(ticket, grant.view)
    assert credential is not None
    assert vault.check(credential.token, grant.view) is credential
    assert vault.check(credential.token, vault.view("s2", "ep-s2")) is None
    assert vault.check(None, grant.view) is None
    clock.now += CREDENTIAL_TTL - 1
    assert vault.check(credential.token, grant.view) is credential
    clock.now += 2
    assert vault.check(credential.token, grant.view) is None
    ticket, grant = vault.ticket("s1", "ep-s1", "watch")
    again = vault.redeem(ticket, grant.view)
    assert again is not None
    pending, _grant = vault.ticket("s1", "ep-s1", "control")
    assert vault.revoke("s1", "ep-s1") == 1
    assert vault.check(again.token, grant.view) is None
    assert vault.redeem(pending, grant.view) is None


# -- a viewer under backpressure ------------------------------------------------------------


class StuckSocket:
    """A socket whose peer never reads: every send after the first waits for ever."""

    def __init__(self) -> None:
        self.sent: list[Any] = []
        self.release = asyncio.Event()

    async def send(self, message: Any) -> None:
        self.sent.append(message)
        if len(self.sent) > 1:
            await self.release.wait()


def _viewer(ws: Any) -> Viewer:
    async def dispatch(_viewer: Viewer, _event: dict[str, Any]) -> None:
        return None

    return Viewer("viewer 1", ws, None, dispatch)  # type: ignore[arg-type]


def test_a_slow_viewer_holds_one_frame_and_drops_the_rest() -> None:
    async def run() -> tuple[Viewer, StuckSocket]:
        ws = StuckSocket()
        viewer = _viewer(ws)
        viewer.fps = 60
        viewer.start()
        viewer.offer_state({"t": "state", "session": "s1"})
        viewer.offer_frame(b"first")
        await asyncio.sleep(0.05)
        for i in range(1000):
            viewer.offer_frame(b"frame %d" % i + b"x" * 10_000)
            await asyncio.sleep(0)
        await asyncio.sleep(0.05)
        await viewer.stop()
        return viewer, ws

    viewer, ws = asyncio.run(run())
    assert len(ws.sent) == 2  # the state, then the first frame the socket is stuck on
    assert viewer.dropped >= 997
    assert viewer._frame is not None  # the newest is the only one waiting
    assert viewer._frame.startswith(b"frame 999")


def test_no_frame_goes_out_before_the_viewer_has_its_first_state() -> None:
    """The page learns whose browser it shows (session, mode, holder) before any picture:
    a frame offered first waits for the state and goes out right behind it."""

    async def run() -> list[Any]:
        sent: list[Any] = []

        class Socket:
            async def send(self, message: Any) -> None:
                sent.append(message)

        viewer = _viewer(Socket())
        viewer.start()
        viewer.offer_frame(b"early")
        await asyncio.sleep(0.05)
        held = list(sent)
        viewer.offer_state({"t": "state", "session": "s1"})
        await asyncio.sleep(0.05)
        await viewer.stop()
        return [held, sent]

    held, sent = asyncio.run(run())
    assert held == []
    assert json.loads(sent[0])["session"] == "s1"
    assert sent[1:] == [b"early"]


def test_input_keeps_its_order_coalesces_moves_and_is_bounded() -> None:
    async def run() -> list[dict[str, Any]]:
        ws = StuckSocket()
        seen: list[dict[str, Any]] = []
        gate = asyncio.Event()

        async def dispatch(_viewer: Viewer, event: dict[str, Any]) -> None:
            await gate.wait()
            seen.append(event)

        viewer = Viewer("viewer 1", ws, None, dispatch)  # type: ignore[arg-type]
        viewer.start()
        viewer.queue_input({"t": "key", "type": "down", "key": "a"})
        await asyncio.sleep(0.01)  # the worker holds the first event at the gate
        for i in range(5):
            viewer.queue_input({"t": "mouse", "type": "move", "x": i})
        viewer.queue_input({"t": "key", "type": "up", "key": "a"})
        for _ in range(MAX_INPUT + 10):
            viewer.queue_input({"t": "key", "type": "down", "key": "b"})
        viewer.queue_input({"t": "handback"})  # never dropped, still in order
        gate.set()
        await asyncio.sleep(0.05)
        await viewer.stop()
        return seen

    seen = asyncio.run(run())
    assert seen[0]["key"] == "a"
    assert seen[1] == {"t": "mouse", "type": "move", "x": 4}
    assert seen[2]["type"] == "up"
    assert len(seen) == 3 + (MAX_INPUT - 2) + 1
    assert seen[-1] == {"t": "handback"}


# -- acks ---------------------------------------------------------------------------------


class ClosedCDP:
    def __init__(self) -> None:
        self.calls: list[str] = []

    async def send(self, method: str, params: Any = None) -> Any:
        self.calls.append(method)
        raise RuntimeError("Target page, context or browser has been closed")


class FakePage:
    def on(self, _event: str, _fn: Any) -> None:
        return None


class Sink:
    fps = 30.0

    def __init__(self) -> None:
        self.frames: list[bytes] = []

    def offer_frame(self, frame: bytes) -> None:
        self.frames.append(frame)


def test_an_ack_after_the_page_closed_is_swallowed() -> None:
    async def run() -> tuple[ClosedCDP, Sink]:
        stream = TabStream("t1", FakePage(), lambda _s: None)  # type: ignore[arg-type]
        cdp = ClosedCDP()
        stream._cdp = cdp  # type: ignore[assignment]
        sink = Sink()
        stream.viewers.add(sink)
        jpeg = base64.b64encode(b"\xff\xd8jpeg").decode()
        meta = {"deviceWidth": 800, "deviceHeight": 600}
        stream._on_frame({"data": jpeg, "sessionId": 7, "metadata": meta})
        await asyncio.sleep(0.05)
        stream._on_frame({"data": jpeg, "sessionId": 8, "metadata": meta})
        stream.flush_ack()
        await asyncio.sleep(0.05)
        assert await stream.send("Input.dispatchMouseEvent", {}) is False
        await stream.stop()
        return cdp, sink

    cdp, sink = asyncio.run(run())
    assert "Page.screencastFrameAck" in cdp.calls
    assert sink.frames == [b"\xff\xd8jpeg", b"\xff\xd8jpeg"]
