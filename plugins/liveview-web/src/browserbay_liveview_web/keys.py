"""A viewer's key and pointer events as CDP ``Input.*`` calls.

Non-printable keys carry their Windows virtual key code (without it Chromium ignores
Backspace, arrows and the like); Enter carries a carriage return as its text (without it a
form does not submit); a printable key carries its text; a chord with Ctrl/Alt/Meta carries
no text (it is a shortcut, not typing). Text that does not come from keys (paste, IME
composition) goes as ``Input.insertText``.
"""

from __future__ import annotations

from typing import Any

#: CDP modifier bits.
ALT, CTRL, META, SHIFT = 1, 2, 4, 8

VIRTUAL_KEYS: dict[str, int] = {
    "Backspace": 8,
    "Tab": 9,
    "Enter": 13,
    "Shift": 16,
    "Control": 17,
    "Alt": 18,
    "Pause": 19,
    "CapsLock": 20,
    "Escape": 27,
    " ": 32,
    "PageUp": 33,
    "PageDown": 34,
    "End": 35,
    "Home": 36,
    "ArrowLeft": 37,
    "ArrowUp": 38,
    "ArrowRight": 39,
    "ArrowDown": 40,
    "PrintScreen": 44,
    "Insert": 45,
    "Delete": 46,
    "Meta": 91,
    "ContextMenu": 93,
    "NumLock": 144,
    "ScrollLock": 145,
    **{f"F{n}": 111 + n for n in range(1, 13)},
}

#: Keys whose code is fixed by ``code`` (the physical key) when ``key`` says little.
_PUNCTUATION: dict[str, int] = {
    "Semicolon": 186,
    "Equal": 187,
    "Comma": 188,
    "Minus": 189,
    "Period": 190,
    "Slash": 191,
    "Backquote": 192,
    "BracketLeft": 219,
    "Backslash": 220,
    "BracketRight": 221,
    "Quote": 222,
}

BUTTONS = ("left", "middle", "right", "back", "forward")


def virtual_key(key: str, code: str) -> int:
    if key in VIRTUAL_KEYS:
        return VIRTUAL_KEYS[key]
    if code.startswith("Key") and len(code) == 4:
        return ord(code[3])
    if code.startswith("Digit") and len(code) == 6:
        return ord(code[5])
    if code.startswith("Numpad") and code[6:].isdigit():
        return 96 + int(code[6:])
    if code in _PUNCTUATION:
        return _PUNCTUATION[code]
    if len(key) == 1 and key.isalnum() and key.isascii():
        return ord(key.upper())
    return 0


def key_event(phase: str, key: str, code: str, modifiers: int) -> dict[str, Any]:
    """The ``Input.dispatchKeyEvent`` parameters of one key going down or up."""
    vk = virtual_key(key, code)
    params: dict[str, Any] = {
        "key": key,
        "code": code,
        "windowsVirtualKeyCode": vk,
        "nativeVirtualKeyCode": vk,
        "modifiers": modifiers,
    }
    if phase == "up":
        params["type"] = "keyUp"
        return params
    shortcut = modifiers & (ALT | CTRL | META)
    if key == "Enter" and not shortcut:
        params.update(type="keyDown", text="\r", unmodifiedText="\r")
    elif len(key) == 1 and not shortcut:
        params.update(type="keyDown", text=key, unmodifiedText=key)
    else:
        params["type"] = "rawKeyDown"
    return params


def mouse_event(
    kind: str, x: float, y: float, button: str, buttons: int, clicks: int, modifiers: int
) -> dict[str, Any]:
    """The ``Input.dispatchMouseEvent`` parameters (x, y in CSS pixels of the viewport)."""
    cdp_type = {"down": "mousePressed", "up": "mouseReleased"}.get(kind, "mouseMoved")
    return {
        "type": cdp_type,
        "x": x,
        "y": y,
        "button": button if button in BUTTONS and kind != "move" else "none",
        "buttons": buttons,
        "clickCount": clicks if kind != "move" else 0,
        "modifiers": modifiers,
    }


def wheel_event(x: float, y: float, dx: float, dy: float, modifiers: int) -> dict[str, Any]:
    return {
        "type": "mouseWheel",
        "x": x,
        "y": y,
        "deltaX": dx,
        "deltaY": dy,
        "modifiers": modifiers,
    }


def to_css(fx: float, fy: float, viewport: tuple[float, float]) -> tuple[float, float]:
    """A point given as fractions of the drawn picture (0..1, measured by the viewer on the
    decoded image's own size, letterbox bars excluded) in CSS pixels of the page's real
    viewport — never the screencast metadata's sizes."""
    width, height = viewport
    fx = min(max(fx, 0.0), 1.0)
    fy = min(max(fy, 0.0), 1.0)
    return round(fx * width, 2), round(fy * height, 2)
