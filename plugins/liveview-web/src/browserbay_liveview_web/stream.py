"""The live view's tab stream: the core's screencast of a tab (:mod:`browserbay.screencast`:
frames fanned out to viewers, latest wins, guarded acks) plus the human's input, sent as CDP
``Input.*`` on the tab. Frames and input are never logged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from browserbay.screencast import DEFAULT_FPS, FrameSink, Screencast
from browserbay_liveview_web import keys

if TYPE_CHECKING:
    from playwright.async_api import Page

__all__ = ["DEFAULT_FPS", "FrameSink", "TabStream"]


class TabStream(Screencast):
    """A tab's screencast that a human may also drive."""

    def __init__(self, tab_id: str, page: Page, on_gone: Callable[[TabStream], None]):
        super().__init__(tab_id, page, lambda _cast: on_gone(self))

    async def deliver(self, event: Mapping[str, Any]) -> bool:
        """One input event of the page's protocol, as CDP ``Input.*`` on the tab (pointer
        fractions mapped onto the page's real CSS viewport); False when it could not go."""
        if self.viewport is None:
            return False
        kind = event.get("t")
        mods = _int(event.get("mods"))
        if kind == "mouse":
            x, y = keys.to_css(_num(event.get("x")), _num(event.get("y")), self.viewport)
            params = keys.mouse_event(
                str(event.get("type")),
                x,
                y,
                str(event.get("button") or "left"),
                _int(event.get("buttons")),
                max(1, _int(event.get("clicks"))),
                mods,
            )
            return await self.send("Input.dispatchMouseEvent", params)
        if kind == "wheel":
            x, y = keys.to_css(_num(event.get("x")), _num(event.get("y")), self.viewport)
            params = keys.wheel_event(x, y, _num(event.get("dx")), _num(event.get("dy")), mods)
            return await self.send("Input.dispatchMouseEvent", params)
        if kind == "key":
            phase = "up" if event.get("type") == "up" else "down"
            params = keys.key_event(phase, str(event.get("key")), str(event.get("code")), mods)
            return await self.send("Input.dispatchKeyEvent", params)
        if kind == "text":
            text = str(event.get("text") or "")
            return bool(text) and await self.send("Input.insertText", {"text": text})
        return False

    async def send(self, method: str, params: dict[str, Any]) -> bool:
        """One CDP call (input); False when the page is gone."""
        cdp = self._cdp
        if cdp is None or self.closed:
            return False
        try:
            await cdp.send(method, params)
        except Exception:
            return False
        return True


def _num(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if number == number and abs(number) < 1e7 else 0.0  # no NaN, no huge


def _int(value: Any) -> int:
    return int(_num(value))
