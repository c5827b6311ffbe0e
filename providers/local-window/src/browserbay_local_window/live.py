"""A window as the live view sees it (:class:`browserbay.model.LiveWindow`): its pixels as
JPEG frames, and the input of the human who took it over, injected through XTEST.

A frame is one X call in the display's worker thread (the window's place, then the screen's
pixels there: what a human would see, menus over it included) that also digests the pixels;
unchanged pixels answer None at once, changed ones are encoded to JPEG in another worker
thread, one encoding at a time per keeper. Nothing here runs on the keeper's event loop
beyond bookkeeping, and every X call has a deadline.

Input comes as the live page's events (pointer positions as fractions of the picture, which
is the window at its own size): a point is mapped to the window's pixels, then to the screen
through the window's origin as last grabbed. Keys go down and up as the page sends them
(``KeyboardEvent.key`` -> an X keysym -> a keycode, a spare one remapped for a character the
keymap lacks); paste and IME text is typed. Input is never logged.
"""

from __future__ import annotations

import hashlib
import io
import time
from collections.abc import Mapping
from typing import Any

import anyio
from Xlib import XK

from browserbay_local_window.book import Window, Windows
from browserbay_local_window.x11 import XError, char_keysym

JPEG_QUALITY = 70
X_DEADLINE = 5.0
#: How long a found top-level window is trusted before it is looked up again (an app may
#: replace its main window).
RELOOK = 2.0
#: Wheel delta (CSS pixels) per X scroll click, and at most this many clicks an event.
WHEEL_STEP = 100.0
WHEEL_MAX = 10

KEYSYMS = {
    "Enter": "Return",
    "Backspace": "BackSpace",
    "Tab": "Tab",
    "Escape": "Escape",
    " ": "space",
    "ArrowLeft": "Left",
    "ArrowRight": "Right",
    "ArrowUp": "Up",
    "ArrowDown": "Down",
    "PageUp": "Prior",
    "PageDown": "Next",
    "Home": "Home",
    "End": "End",
    "Insert": "Insert",
    "Delete": "Delete",
    "Shift": "Shift_L",
    "Control": "Control_L",
    "Alt": "Alt_L",
    "AltGraph": "ISO_Level3_Shift",
    "Meta": "Super_L",
    "CapsLock": "Caps_Lock",
    "ContextMenu": "Menu",
    **{f"F{n}": f"F{n}" for n in range(1, 13)},
}
#: The page's modifier bit for Shift (alt 1, ctrl 2, meta 4, shift 8).
SHIFT = 8
BUTTONS = {"left": 1, "middle": 2, "right": 3, "back": 8, "forward": 9}


def keysym_for(key: str) -> int | None:
    """The X keysym of a ``KeyboardEvent.key`` (None for a key X has no name for)."""
    if key in KEYSYMS:
        return int(XK.string_to_keysym(KEYSYMS[key]))
    if len(key) == 1:
        return char_keysym(key)
    sym = int(XK.string_to_keysym(key))
    return sym or None


def encode_jpeg(width: int, height: int, pixels: bytes) -> bytes:
    from PIL import Image

    image = Image.frombytes("RGB", (width, height), pixels, "raw", "BGRX")
    out = io.BytesIO()
    image.save(out, "JPEG", quality=JPEG_QUALITY)
    return out.getvalue()


def _grab(x: Any, xid: int) -> tuple[int, int, int, int, bytes, bytes]:
    gx, gy, w, h, pixels = x.frame_of(xid)
    return gx, gy, w, h, pixels, hashlib.blake2b(pixels, digest_size=16).digest()


def _pointer(x: Any, sx: int, sy: int, press: int | None, button: int, focus: int | None) -> None:
    if focus is not None:
        x.focus(focus)
    x.pointer(sx, sy, press, button)


def _key(x: Any, sym: int, down: bool, code: int | None, focus: int | None, shift: bool) -> int:
    """One key down or up. A character that needs Shift while the human holds none (a
    capital typed by a program, not a keyboard) is pressed inside a Shift of its own."""
    if focus is not None:
        x.focus(focus)
    if code is not None:
        x.key(code, down)
        return code
    keycode, needs_shift = x.key_code(sym)
    wrap = down and needs_shift and not shift
    if wrap:
        x.key(x.shift_code(), True)
    x.key(keycode, down)
    if wrap:
        x.key(x.shift_code(), False)
    return int(keycode)


def _release_button(x: Any, button: int) -> None:
    x.button_up(button)


def _text(x: Any, text: str, focus: int | None) -> None:
    x.type_text(text, focus)


class WindowLive:
    """One window of the book, for the live view of its lease."""

    def __init__(self, book: Windows, window: Window):
        self._book = book
        self._window = window
        self._xid: int | None = None
        self._looked = 0.0
        self._title = ""
        self._digest: bytes | None = None
        self._origin = (0, 0)
        self._size = (0, 0)
        self._pressed: dict[str, int] = {}
        """The keycode each physical key (``KeyboardEvent.code``) went down with."""
        self._buttons: set[int] = set()
        """The pointer buttons our input pressed and has not released."""
        self._focused: int | None = None
        """The window our input last focused (keys go to the X focus)."""

    @property
    def handle(self) -> str:
        return self._window.handle

    @property
    def title(self) -> str:
        return self._title

    @property
    def where(self) -> str:
        return f"{self._window.program} on {self._window.display.label}"

    @property
    def size(self) -> tuple[int, int]:
        return self._size

    async def _main(self) -> int:
        if self._book.windows.get(self.handle) is not self._window:
            raise LookupError(f"window {self.handle} is gone")
        if self._xid is None or time.monotonic() - self._looked > RELOOK:
            try:
                main = await self._book.main_window(self._window)
            except XError as exc:
                raise LookupError(exc.reason) from None
            if main is None or not main.viewable:
                raise LookupError(f"window {self.handle} shows no window")
            self._xid, self._title, self._looked = main.xid, main.title, time.monotonic()
        return self._xid

    async def frame(self, force: bool = False) -> bytes | None:
        xid = await self._main()
        try:
            gx, gy, w, h, pixels, digest = await self._window.display.x.run(X_DEADLINE, _grab, xid)
        except XError:
            self._xid = None  # looked up again next time; gone then is LookupError
            return None
        self._origin, self._size = (gx, gy), (w, h)
        if digest == self._digest and not force:
            return None
        self._digest = digest
        jpeg: bytes = await anyio.to_thread.run_sync(
            encode_jpeg, w, h, pixels, limiter=self._book.encoder
        )
        return jpeg

    def _screen_point(self, event: Mapping[str, Any]) -> tuple[int, int]:
        """A point given as fractions of the picture, on the screen (inside the window)."""
        w, h = self._size
        fx = min(max(_num(event.get("x")), 0.0), 1.0)
        fy = min(max(_num(event.get("y")), 0.0), 1.0)
        px = min(int(fx * w), max(0, w - 1))
        py = min(int(fy * h), max(0, h - 1))
        return self._origin[0] + px, self._origin[1] + py

    async def send_input(self, event: Mapping[str, Any]) -> bool:
        try:
            xid = await self._main()
        except LookupError:
            return False
        if self._size == (0, 0):
            await self.frame(force=True)
        x = self._window.display.x
        kind = event.get("t")
        try:
            if kind == "mouse":
                sx, sy = self._screen_point(event)
                phase = event.get("type")
                button = BUTTONS.get(str(event.get("button")), 1)
                press = 1 if phase == "down" else 0 if phase == "up" else None
                focus = xid if phase == "down" else None  # a click focuses, as a WM would
                await x.run(X_DEADLINE, _pointer, sx, sy, press, button, focus)
                if press == 1:
                    self._buttons.add(button)
                elif press == 0:
                    self._buttons.discard(button)
                if focus is not None:
                    self._focused = xid
            elif kind == "wheel":
                sx, sy = self._screen_point(event)
                axes = ((_num(event.get("dy")), 4, 5), (_num(event.get("dx")), 6, 7))
                for delta, back, forth in axes:
                    clicks = min(WHEEL_MAX, max(1, round(abs(delta) / WHEEL_STEP)))
                    for _ in range(clicks if delta else 0):
                        button = back if delta < 0 else forth
                        await x.run(X_DEADLINE, _pointer, sx, sy, 1, button, None)
                        await x.run(X_DEADLINE, _pointer, sx, sy, 0, button, None)
            elif kind == "key":
                return await self._key(event, xid)
            elif kind == "text":
                text = str(event.get("text") or "")
                if not text:
                    return False
                await x.run(X_DEADLINE + len(text) * 0.05, _text, text, self._focus_once(xid))
            else:
                return False
        except XError:
            return False
        return True

    async def release(self) -> None:
        keys, self._pressed = list(self._pressed.values()), {}
        buttons, self._buttons = sorted(self._buttons), set()
        if not keys and not buttons:
            return
        x = self._window.display.x
        try:
            for code in reversed(keys):
                await x.run(X_DEADLINE, _key, 0, False, code, None, False)
            for button in buttons:
                await x.run(X_DEADLINE, _release_button, button)
        except XError:
            return  # the display is gone: nothing is held any more

    def _focus_once(self, xid: int) -> int | None:
        """``xid`` when our input has not focused it yet (then it has)."""
        if self._focused == xid:
            return None
        self._focused = xid
        return xid

    async def _key(self, event: Mapping[str, Any], xid: int) -> bool:
        key = str(event.get("key") or "")
        physical = str(event.get("code") or key)
        down = event.get("type") != "up"
        x = self._window.display.x
        if down:
            sym = keysym_for(key)
            if sym is None:
                return False
            focus = self._focus_once(xid)
            shift = bool(int(_num(event.get("mods"))) & SHIFT) or any(
                k.startswith("Shift") for k in self._pressed
            )
            self._pressed[physical] = await x.run(X_DEADLINE, _key, sym, True, None, focus, shift)
            return True
        code = self._pressed.pop(physical, None)
        if code is None:
            sym = keysym_for(key)
            if sym is None:
                return False
        else:
            sym = 0
        await x.run(X_DEADLINE, _key, sym, False, code, None, False)
        return True


def _num(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if number == number and abs(number) < 1e7 else 0.0
