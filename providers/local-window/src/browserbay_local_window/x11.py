"""X11 through python-xlib: top-level windows and their pids, pixels (``get_image``), focus,
a polite close (``WM_DELETE_WINDOW``) and XTEST input. Every function here blocks: the keeper
calls them through :meth:`XConn.run`, in a worker thread under a deadline, one at a time per
display (an Xlib connection is not thread-safe)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
from Xlib import XK, X, Xatom
from Xlib import display as xdisplay
from Xlib import error as xerror
from Xlib.ext import xtest
from Xlib.protocol import event as xevent

T = TypeVar("T")

MODIFIERS = {
    "ctrl": "Control_L",
    "control": "Control_L",
    "shift": "Shift_L",
    "alt": "Alt_L",
    "meta": "Super_L",
    "super": "Super_L",
    "win": "Super_L",
    "cmd": "Super_L",
}
KEY_NAMES = {
    "enter": "Return",
    "return": "Return",
    "esc": "Escape",
    "escape": "Escape",
    "tab": "Tab",
    "space": "space",
    "backspace": "BackSpace",
    "delete": "Delete",
    "del": "Delete",
    "insert": "Insert",
    "home": "Home",
    "end": "End",
    "pageup": "Prior",
    "pagedown": "Next",
    "up": "Up",
    "down": "Down",
    "left": "Left",
    "right": "Right",
    "plus": "plus",
    "minus": "minus",
}


class XError(Exception):
    """The X server refused or is gone; ``reason`` says which, for a refusal."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class KeyNameError(ValueError):
    pass


@dataclass(frozen=True)
class TopLevel:
    xid: int
    pid: int | None
    title: str
    x: int
    y: int
    width: int
    height: int
    viewable: bool

    @property
    def area(self) -> int:
        return self.width * self.height if self.viewable else 0

    def row(self) -> dict[str, Any]:
        return {
            "xid": hex(self.xid),
            "pid": self.pid,
            "title": self.title,
            "geometry": [self.x, self.y, self.width, self.height],
            "viewable": self.viewable,
        }


def keysym_of(name: str) -> int:
    """A key's keysym from the names an agent writes (``Return``, ``enter``, ``s``, ``F5``)."""
    word = KEY_NAMES.get(name.lower(), name)
    if len(word) == 1:
        return char_keysym(word)
    sym = XK.string_to_keysym(word)
    if not sym:
        sym = XK.string_to_keysym(word.capitalize())
    if not sym and word[:1] in "fF" and word[1:].isdigit():
        sym = XK.string_to_keysym(f"F{word[1:]}")
    if not sym:
        raise KeyNameError(f"unknown key name {name!r} (X keysym names work: Return, Tab, F5…)")
    return int(sym)


def char_keysym(ch: str) -> int:
    if ch == "\n":
        return int(XK.string_to_keysym("Return"))
    if ch == "\t":
        return int(XK.string_to_keysym("Tab"))
    code = ord(ch)
    if 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xFF:
        return code
    return 0x01000000 | code


def parse_chord(chord: str) -> list[int]:
    """``ctrl+s`` -> [Control_L, s]; ``shift+Tab``; ``Return``; ``ctrl+plus``. The last part
    is the key, the others modifiers. A letter in a chord is taken lower-case (add shift+ for
    the capital)."""
    parts = [p for p in chord.strip().split("+")]
    if chord.endswith("++"):  # ctrl++ : the plus key
        parts = [*[p for p in parts if p], "plus"]
    parts = [p for p in parts if p]
    if not parts:
        raise KeyNameError("no key given (e.g. ctrl+s, Return, alt+F4)")
    *mods, key = parts
    syms = []
    for mod in mods:
        name = MODIFIERS.get(mod.lower())
        if name is None:
            raise KeyNameError(f"unknown modifier {mod!r} (ctrl, shift, alt, super)")
        syms.append(int(XK.string_to_keysym(name)))
    if len(key) == 1 and key.isalpha() and mods:
        key = key.lower()
    syms.append(keysym_of(key))
    return syms


class XConn:
    """One Xlib connection to one display, used from one worker thread at a time."""

    def __init__(self, name: str):
        self.name = name
        self._d: xdisplay.Display | None = None
        self._lock = threading.Lock()
        self._limiter = anyio.CapacityLimiter(1)
        self._spare: int | None = None

    async def run(self, timeout: float, fn: Callable[..., T], *args: Any) -> T:
        """``fn(self, *args)`` in a worker thread, one at a time, under ``timeout``."""

        def call() -> T:
            with self._lock:
                try:
                    return fn(self, *args)
                except (xerror.DisplayError, xerror.ConnectionClosedError, OSError) as exc:
                    self._drop()
                    raise XError(f"the X display {self.name} is not reachable: {exc}") from None
                except xerror.XError as exc:
                    raise XError(f"the X server refused: {exc}") from None

        try:
            with anyio.fail_after(timeout):
                return await anyio.to_thread.run_sync(
                    call, abandon_on_cancel=True, limiter=self._limiter
                )
        except TimeoutError:
            raise XError(f"the X display {self.name} did not answer within {timeout:g}s") from None

    @property
    def d(self) -> xdisplay.Display:
        if self._d is None:
            self._d = xdisplay.Display(self.name)
        return self._d

    def _drop(self) -> None:
        d, self._d = self._d, None
        if d is not None:
            with contextlib.suppress(Exception):  # already broken
                d.close()

    def close(self) -> None:
        with self._lock:
            self._drop()

    # -- probes ---------------------------------------------------------------------------

    def xtest(self) -> bool:
        return self.d.query_extension("XTEST") is not None

    def screen_size(self) -> tuple[int, int]:
        s = self.d.screen()
        return int(s.width_in_pixels), int(s.height_in_pixels)

    # -- windows --------------------------------------------------------------------------

    def _atom(self, name: str) -> int:
        return int(self.d.intern_atom(name))

    def _prop(self, win: Any, name: str) -> Any:
        try:
            return win.get_full_property(self._atom(name), X.AnyPropertyType)
        except xerror.XError:
            return None

    def _title(self, win: Any) -> str:
        prop = self._prop(win, "_NET_WM_NAME")
        if prop is None or not prop.value:
            prop = win.get_full_property(Xatom.WM_NAME, X.AnyPropertyType)
        if prop is None or not prop.value:
            return ""
        value = prop.value
        if isinstance(value, bytes):
            return value.decode("utf-8", "replace")
        return str(value)

    def _clients(self) -> list[Any]:
        """Top-level client windows: root's children, or (under a window manager) the
        children of its frames that carry WM_STATE."""
        root = self.d.screen().root
        wm_state = self._atom("WM_STATE")
        out = []
        for win in root.query_tree().children:
            try:
                if win.get_full_property(wm_state, X.AnyPropertyType) is not None:
                    out.append(win)
                    continue
                inner = [
                    c
                    for c in win.query_tree().children
                    if c.get_full_property(wm_state, X.AnyPropertyType) is not None
                ]
                out.extend(inner or [win])
            except xerror.XError:
                continue
        return out

    def toplevels(self) -> list[TopLevel]:
        root = self.d.screen().root
        found = []
        for win in self._clients():
            try:
                attrs = win.get_attributes()
                if attrs.win_class == X.InputOnly:
                    continue
                geo = win.get_geometry()
                pos = root.translate_coords(win, 0, 0)
                pid_prop = self._prop(win, "_NET_WM_PID")
                pid = int(pid_prop.value[0]) if pid_prop is not None and pid_prop.value else None
                found.append(
                    TopLevel(
                        xid=int(win.id),
                        pid=pid,
                        title=self._title(win),
                        x=int(pos.x),
                        y=int(pos.y),
                        width=int(geo.width),
                        height=int(geo.height),
                        viewable=attrs.map_state == X.IsViewable,
                    )
                )
            except xerror.XError:
                continue
        return found

    def windows_of(self, pids: set[int]) -> list[TopLevel]:
        """The pids' top-level windows, the largest viewable one first."""
        wins = [w for w in self.toplevels() if w.pid in pids]
        return sorted(wins, key=lambda w: (-w.area, w.xid))

    def window(self, xid: int) -> TopLevel | None:
        return next((w for w in self.toplevels() if w.xid == xid), None)

    def focus(self, xid: int) -> None:
        win = self.d.create_resource_object("window", xid)
        win.configure(stack_mode=X.Above)
        win.set_input_focus(X.RevertToParent, X.CurrentTime)
        self.d.sync()

    def delete(self, xid: int) -> bool:
        """Ask the window to close itself (what a window manager's close button does).
        False when it does not take part in WM_DELETE_WINDOW."""
        win = self.d.create_resource_object("window", xid)
        protocols = self._atom("WM_PROTOCOLS")
        delete = self._atom("WM_DELETE_WINDOW")
        prop = win.get_full_property(protocols, X.AnyPropertyType)
        if prop is None or delete not in list(prop.value):
            return False
        msg = xevent.ClientMessage(
            window=win, client_type=protocols, data=(32, [delete, X.CurrentTime, 0, 0, 0])
        )
        win.send_event(msg, event_mask=X.NoEventMask)
        self.d.sync()
        return True

    def grab(self, x: int, y: int, width: int, height: int) -> tuple[int, int, bytes]:
        """The screen's pixels in a rectangle, clipped to the screen: (w, h, BGRX bytes)."""
        sw, sh = self.screen_size()
        x0, y0 = max(0, x), max(0, y)
        x1, y1 = min(sw, x + width), min(sh, y + height)
        if x1 <= x0 or y1 <= y0:
            raise XError("the window is outside the screen")
        root = self.d.screen().root
        image = root.get_image(x0, y0, x1 - x0, y1 - y0, X.ZPixmap, 0xFFFFFFFF)
        return x1 - x0, y1 - y0, bytes(image.data)

    def frame_of(self, xid: int) -> tuple[int, int, int, int, bytes]:
        """The window's place on the screen and what the screen shows there, clipped:
        (x, y, w, h, BGRX bytes) — menus and popups over it included, as a human sees it."""
        win = self.d.create_resource_object("window", xid)
        geo = win.get_geometry()
        pos = self.d.screen().root.translate_coords(win, 0, 0)
        x, y = int(pos.x), int(pos.y)
        w, h, pixels = self.grab(x, y, int(geo.width), int(geo.height))
        return max(0, x), max(0, y), w, h, pixels

    # -- XTEST ----------------------------------------------------------------------------

    def pointer(self, x: int, y: int, press: int | None, button: int) -> None:
        """Move the pointer to (x, y) on the screen, then press (1), release (0) or neither
        (None) ``button``."""
        root = self.d.screen().root
        xtest.fake_input(self.d, X.MotionNotify, x=x, y=y, root=root)
        if press is not None:
            xtest.fake_input(self.d, X.ButtonPress if press else X.ButtonRelease, button)
        self.d.sync()

    def button_up(self, button: int) -> None:
        xtest.fake_input(self.d, X.ButtonRelease, button)
        self.d.sync()

    def key_code(self, sym: int) -> tuple[int, bool]:
        """The keycode that types ``sym`` (a spare one remapped when the map lacks it), and
        whether it needs Shift."""
        return self._keycode(sym)

    def shift_code(self) -> int:
        return int(self.d.keysym_to_keycode(XK.string_to_keysym("Shift_L")))

    def key(self, code: int, down: bool) -> None:
        xtest.fake_input(self.d, X.KeyPress if down else X.KeyRelease, code)
        self.d.sync()

    def click(self, x: int, y: int, button: int = 1) -> None:
        root = self.d.screen().root
        xtest.fake_input(self.d, X.MotionNotify, x=x, y=y, root=root)
        self.d.sync()
        xtest.fake_input(self.d, X.ButtonPress, button)
        xtest.fake_input(self.d, X.ButtonRelease, button)
        self.d.sync()

    def _keycode(self, sym: int) -> tuple[int, bool]:
        """(keycode, needs shift), remapping a spare keycode for a keysym the keyboard map
        does not have (é, ß, emoji…)."""
        code = int(self.d.keysym_to_keycode(sym))
        if code:
            for index, shift in ((0, False), (1, True)):
                if int(self.d.keycode_to_keysym(code, index)) == sym:
                    return code, shift
        spare = self._spare_keycode()
        self.d.change_keyboard_mapping(spare, [(sym, sym)])
        self.d.sync()
        time.sleep(0.02)  # let clients see the MappingNotify before the key comes
        return spare, False

    def _spare_keycode(self) -> int:
        if self._spare is None:
            first = int(self.d.display.info.min_keycode)
            last = int(self.d.display.info.max_keycode)
            mapping = self.d.get_keyboard_mapping(first, last - first + 1)
            empty = [first + i for i, syms in enumerate(mapping) if not any(syms)]
            if not empty:
                raise XError("no spare keycode to type a character the keymap lacks")
            self._spare = empty[-1]
        return self._spare

    def _tap(self, codes: list[int]) -> None:
        for code in codes:
            xtest.fake_input(self.d, X.KeyPress, code)
        for code in reversed(codes):
            xtest.fake_input(self.d, X.KeyRelease, code)
        self.d.sync()

    def chord(self, syms: list[int], focus: int | None) -> None:
        if focus is not None:
            self.focus(focus)
        shift = int(self.d.keysym_to_keycode(XK.string_to_keysym("Shift_L")))
        codes: list[int] = []
        for sym in syms:
            code, needs_shift = self._keycode(sym)
            if needs_shift and shift not in codes:
                codes.append(shift)
            codes.append(code)
        self._tap(codes)

    def type_text(self, text: str, focus: int | None) -> None:
        if focus is not None:
            self.focus(focus)
        shift = int(self.d.keysym_to_keycode(XK.string_to_keysym("Shift_L")))
        for ch in text:
            code, needs_shift = self._keycode(char_keysym(ch))
            self._tap([shift, code] if needs_shift else [code])
