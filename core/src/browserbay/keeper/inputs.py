"""The input verbs below ``click``: ``drag``, ``focus``, ``keyboard type|inserttext``,
``keydown``/``keyup``, ``mouse move|down|up|wheel`` and ``scrollintoview``.

Coordinates are CSS pixels of the tab's viewport (what ``bay screenshot`` shows, what a
``getBoundingClientRect`` says), and every answer says so. A verb that would miss says it
instead of answering done: an element that cannot take focus is refused, a point outside the
viewport is refused, keys typed with nothing focused say where they went. Typed text is a
secret argument (``secret_args``): it is never in an answer, the audit or a log, only its
length.

What a page's mouse and keyboard hold between verbs (the pointer's point, the keys held down)
is the keeper's to remember per page (:class:`~browserbay.keeper.pageinput.PageInput`): ``mouse
down`` presses where the last ``mouse move`` left the pointer, ``keyup`` says whether the key
was held, ``click`` presses with the held modifiers.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any, Literal

import anyio

from browserbay.keeper.act import Act
from browserbay.keeper.actions import before_action, before_keys, before_point
from browserbay.keeper.pageinput import page_input
from browserbay.keeper.pageverbs import (
    Answer,
    act_on,
    at_once,
    clear_of_covers,
    first_line,
    locate,
    mark_point,
    page_verb,
)
from browserbay.refusals import Refusal

if TYPE_CHECKING:
    from playwright.async_api import Locator, Page

MouseButton = Literal["left", "right", "middle"]
BUTTONS: dict[str, MouseButton] = {"left": "left", "right": "right", "middle": "middle"}

#: Pointer moves a drag makes between its press and its release: a pointer-driven sortable
#: list moves its item only on intermediate moves (and past a threshold).
DRAG_STEPS = 12
#: A ``mouse move`` is cut into moves of at most this many pixels (at most
#: :data:`MOVE_STEPS_MAX`), so a slider or a canvas sees the way, not only the end.
MOVE_STEP_PX = 25
MOVE_STEPS_MAX = 20
#: How long a wheel's scrolling may take to settle before the answer reads the position.
WHEEL_SETTLE = 1.0

#: The focused element (through open shadow roots and same-origin frames), as
#: ``tag#id[name=…]``; '' when nothing is (the body has the keys).
_FOCUSED_JS = """() => {
  let e = document.activeElement;
  for (;;) {
    const root = e && e.shadowRoot;
    if (root && root.activeElement) { e = root.activeElement; continue; }
    let inner = null;
    try { inner = e && e.contentDocument && e.contentDocument.activeElement; } catch (_) {}
    if (inner && inner !== e.contentDocument.body) { e = inner; continue; }
    break;
  }
  if (!e || e === document.body || e === document.documentElement) return '';
  const name = e.getAttribute('name');
  return e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (name ? `[name=${name}]` : '');
}"""
#: Focus the element and say whether it took the focus: it holds it now, or a focus event
#: reached it (or a descendant) on the way — a page may blur a field in its own focus
#: handler, and that focus happened all the same.
_FOCUS_JS = """(el) => {
  let got = false;
  const on = () => { got = true; };
  el.addEventListener('focus', on, true);
  try { el.focus(); } finally { el.removeEventListener('focus', on, true); }
  let a = el.ownerDocument.activeElement;
  while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;
  return got || a === el || (!!a && el.contains(a));
}"""
_VIEW_JS = "() => [window.innerWidth, window.innerHeight, window.scrollX, window.scrollY]"
_SCROLL_JS = "() => [window.scrollX, window.scrollY]"


def _pointed(act: Act, x: float, y: float) -> None:
    """Mark where the pointer acted: the live view's agent cursor, and the action's trace."""
    mark_point(act, x, y)
    page_input(act.page).point = (x, y)
    if act.trace is not None:
        act.trace.point = (x, y)


def _at(x: float, y: float) -> str:
    """A point as the answers show it: CSS pixels of the viewport (the manual says so once;
    ``--json`` has the exact numbers and ``unit``), to a tenth of a pixel."""
    return f"{round(x, 1):g},{round(y, 1):g}"


async def _focused(page: Page) -> str:
    try:
        return str(await page.evaluate(_FOCUSED_JS))
    except Exception:
        return ""


def _failed(act: Act, exc: BaseException) -> Refusal:
    return Refusal("action_failed", verb=act.verb, reason=first_line(exc))


# -- elements ---------------------------------------------------------------------------


async def _center(loc: Locator, timeout: float) -> tuple[float, float] | None:
    box = await loc.bounding_box(timeout=timeout)
    if box is None:
        return None
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


@page_verb("drag")
async def verb_drag(act: Act) -> Answer:
    """Playwright's drag: press on the element's centre, :data:`DRAG_STEPS` moves to the drop
    element's centre, release. Chromium runs an HTML5 drag and drop (dragstart, dragover,
    drop with its dataTransfer) from those same mouse events, and a pointer-driven list
    sees its pointermove/mousemove on the way: one verb serves both."""
    to_target = str(act.args["to"])
    to = await locate(act, to_target)

    async def run(loc: Locator) -> tuple[float, float] | None:
        await before_action(act, to_target, to)  # the drop, as the source was
        # Either end covered at its centre (an overlay; an SVG shape with fill="none", whose
        # point is the svg's): refused naming the cover, where Playwright would retry the
        # drag until the deadline and answer its raw timeout.
        await clear_of_covers(act, loc)
        await clear_of_covers(act, to, to_target)
        await loc.drag_to(to, steps=DRAG_STEPS, timeout=act.ms_left())
        return await _center(to, min(act.ms_left(), 2000))

    dropped = await act_on(act, str(act.args["target"]), run)
    if dropped is not None:
        _pointed(act, *dropped)
    data: dict[str, Any] = {"target": act.args["target"], "to": to_target, "url": act.page.url}
    if dropped:
        data["point"] = list(dropped)
    # The agent named both ends; the answer says only where the drop landed.
    return data, f"dropped at {_at(*dropped)}" if dropped else f"dragged onto {to_target}"


@page_verb("focus")
async def verb_focus(act: Act) -> Answer:
    """Focus the element; refused when it did not take the focus (not focusable: a ``div``
    without ``tabindex``), so keys the agent sends next never go elsewhere unnoticed."""

    async def run(loc: Locator) -> bool:
        return bool(await loc.evaluate(_FOCUS_JS, timeout=act.ms_left()))

    # An element there now takes the focus in one round trip (the locator's way: four — the
    # ref's count, the wait, the evaluate on a handle, its dispose); one that is not there
    # yet, or did not take it, goes the locator's way, which waits and refuses.
    target = str(act.args["target"])
    if await at_once(act, target, _FOCUS_JS) is not True and not await act_on(act, target, run):
        raise Refusal(
            "action_failed",
            verb="focus",
            reason="the element did not take the focus (it is not focusable: a field, a "
            "button, a link or an element with tabindex is)",
        )
    return {"target": act.args["target"], "url": act.page.url}, "focused"


@page_verb("scrollintoview")
async def verb_scrollintoview(act: Act) -> Answer:
    async def run(loc: Locator) -> dict[str, float] | None:
        await loc.scroll_into_view_if_needed(timeout=act.ms_left())
        box = await loc.bounding_box(timeout=act.ms_left())
        if box is None:
            return None
        return {"x": box["x"], "y": box["y"], "width": box["width"], "height": box["height"]}

    box = await act_on(act, str(act.args["target"]), run)
    data = {"target": act.args["target"], "url": act.page.url, "box": box}
    if box is None:
        return data, "scrolled into view"
    shown = f"{box['x']:g},{box['y']:g} {box['width']:g}×{box['height']:g}"
    return data, f"in view at {shown}"


# -- keys -------------------------------------------------------------------------------


def _went_to(focused: str) -> str:
    return f"into {focused}" if focused else "to the page (nothing is focused)"


@page_verb("keyboard")
async def verb_keyboard(act: Act) -> Answer:
    """``type``: key by key (keydown, keypress/input, keyup for each character), to whatever
    has the focus; ``inserttext``: the text at once, as a paste or an IME would, no key
    events. The answer says where the text went and how long it was, never the text."""
    action = str(act.args["action"])
    text = str(act.args["text"])
    await before_keys(act, None)
    try:
        if action == "type":
            await act.page.keyboard.type(text)
        else:
            await act.page.keyboard.insert_text(text)
    except Exception as exc:
        raise _failed(act, exc) from None
    focused = await _focused(act.page)
    data = {"action": action, "chars": len(text), "focused": focused, "url": act.page.url}
    verb = "typed" if action == "type" else "inserted"
    return data, f"{verb} {len(text)} characters {_went_to(focused)}"


@page_verb("keydown")
async def verb_keydown(act: Act) -> Answer:
    key = str(act.args["key"])
    await before_keys(act, key)
    try:
        await act.page.keyboard.down(key)
    except Exception as exc:
        raise _failed(act, exc) from None
    held = page_input(act.page).held
    if key not in held:
        held.append(key)
    data = {"key": key, "held": list(held), "url": act.page.url}
    return data, f"holding {' + '.join(held)} (bay keyup {key} releases it)"


@page_verb("keyup")
async def verb_keyup(act: Act) -> Answer:
    key = str(act.args["key"])
    held = page_input(act.page).held
    was_held = key in held
    await before_keys(act, key)
    try:
        await act.page.keyboard.up(key)
    except Exception as exc:
        raise _failed(act, exc) from None
    if was_held:
        held.remove(key)
    data = {"key": key, "was_held": was_held, "held": list(held), "url": act.page.url}
    still = f"; still holding {' + '.join(held)}" if held else ""
    return data, f"released {key}" + ("" if was_held else " (it was not held)") + still


# -- the mouse --------------------------------------------------------------------------


def _number(raw: object, name: str) -> float:
    try:
        value = float(str(raw))
    except ValueError:
        value = math.nan
    if raw is None or not math.isfinite(value):
        raise Refusal(
            "usage",
            detail=f"mouse: {name} must be a number of CSS pixels, not {raw!r}",
            verb="mouse",
        )
    return value


def _button(raw: object) -> MouseButton:
    name = "left" if raw is None else str(raw)
    if name not in BUTTONS:
        raise Refusal(
            "usage",
            detail=f"mouse: the button is left, right or middle, not {name!r}",
            verb="mouse",
        )
    return BUTTONS[name]


async def _settled_scroll(page: Page) -> list[float]:
    """The window's scroll position once a wheel's scrolling stopped moving (or after
    :data:`WHEEL_SETTLE`)."""
    last = await page.evaluate(_SCROLL_JS)
    end = time.monotonic() + WHEEL_SETTLE
    while time.monotonic() < end:
        await anyio.sleep(0.05)
        now = await page.evaluate(_SCROLL_JS)
        if now == last:
            break
        last = now
    return [float(v) for v in last]


@page_verb("mouse")
async def verb_mouse(act: Act) -> Answer:
    action = str(act.args["action"])
    first, second = act.args.get("first"), act.args.get("second")
    page, state = act.page, page_input(act.page)
    mouse = page.mouse
    unit = "CSS px of the viewport"  # in a refusal, said whole
    try:
        if action == "move":
            x, y = _number(first, "x"), _number(second, "y")
            # The viewport, for the move's bounds only (down, up and wheel act where the
            # pointer is: a round trip they do not need).
            width, height, _, _ = await page.evaluate(_VIEW_JS)
            if not (0 <= x <= width and 0 <= y <= height):
                raise Refusal(
                    "usage",
                    detail=f"mouse move {x:g} {y:g} is outside the viewport "
                    f"(0-{width:g} × 0-{height:g} {unit})",
                    verb="mouse",
                )
            await before_point(act, x, y)
            start = state.point or (x, y)
            steps = int(min(MOVE_STEPS_MAX, max(1, math.dist(start, (x, y)) // MOVE_STEP_PX)))
            await mouse.move(x, y, steps=steps)
            _pointed(act, x, y)
            data: dict[str, Any] = {"action": action, "x": x, "y": y, "unit": "css_px"}
            data["url"] = page.url
            return data, f"at {_at(x, y)}"
        if action in ("down", "up"):
            button = _button(first)
            if state.point is None:
                raise Refusal(
                    "usage",
                    detail=f"mouse {action}: the pointer has no position yet; first "
                    "bay mouse move X Y (CSS px of the viewport)",
                    verb="mouse",
                )
            x, y = state.point
            await before_point(act, x, y)
            await mouse.move(x, y)  # where the keeper says it is, whatever clicked since
            await (mouse.down(button=button) if action == "down" else mouse.up(button=button))
            _pointed(act, x, y)
            data = {"action": action, "button": button, "x": x, "y": y, "unit": "css_px"}
            data["url"] = page.url
            # The point is the keeper's (it may differ from the agent's last move: a click
            # since moved the pointer); the button only when it is not the usual left one.
            said = action if button == "left" else f"{button} {action}"
            return data, f"{said} at {_at(x, y)}"
        dy, dx = _number(first, "dy"), _number(second if second is not None else 0, "dx")
        await before_point(act, *(state.point or (0.0, 0.0)))
        await mouse.wheel(dx, dy)
        scroll = await _settled_scroll(page)
        data = {"action": action, "dx": dx, "dy": dy, "scroll": scroll, "unit": "css_px"}
        data["url"] = page.url
        return data, f"wheel {dx:g},{dy:g}: scrolled to {_at(*scroll)}"
    except Refusal:
        raise
    except Exception as exc:
        raise _failed(act, exc) from None
