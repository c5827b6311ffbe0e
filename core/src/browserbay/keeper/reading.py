"""The reading verbs: ``get`` (title, url, text, value, html, count, box, attr, styles),
``is`` (visible, enabled, checked), ``find`` (locate by role, text, label… and act on the one
element found) and ``frame`` (act inside an iframe until ``bay frame main``).

Every target resolves where the tab acts (:attr:`Act.scope`: the frame ``bay frame`` chose,
else the page), through the page verbs' own :func:`locate`. ``frame`` is the only writer of a
tab's current frame (:meth:`Tab.enter_frame`).
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal

from browserbay.keeper import fastclick, nearest
from browserbay.keeper.act import Act
from browserbay.keeper.actions import DESCRIBE_JS
from browserbay.keeper.pageverbs import (
    Answer,
    act_on,
    act_on_located,
    first_line,
    locate,
    page_verb,
    pointer_on,
    selector_of,
    stale_ref,
)
from browserbay.keeper.sessions import FrameFocus
from browserbay.refusals import Refusal

if TYPE_CHECKING:
    from playwright.async_api import Frame, Locator, Page

# -- get --------------------------------------------------------------------------------

#: ``get styles`` with no properties named: the ones that say whether and how an element shows.
DEFAULT_STYLES = (
    "display",
    "visibility",
    "opacity",
    "position",
    "width",
    "height",
    "color",
    "background-color",
    "font-family",
    "font-size",
    "font-weight",
    "cursor",
    "pointer-events",
    "z-index",
    "overflow",
)

#: The most properties one ``get styles`` reads, and the longest value it shows of each.
MAX_STYLES = 40
MAX_STYLE_CHARS = 200

_STYLES_JS = (
    "(el, props) => { const cs = getComputedStyle(el);"
    " return props.map(p => [p, cs.getPropertyValue(p)]); }"
)

_NEEDS_TARGET = {"value", "count", "box", "attr", "styles"}

#: ``get box`` of an element that is there now, in one evaluate (Playwright's locator waits
#: for the element, then takes a handle, measures it and lets it go: three round trips after
#: :func:`present`'s wait). It answers null where Playwright's box would differ — not rendered,
#: empty, not an HTML element (an SVG shape's box takes in its stroke there), inside a frame
#: (that needs the frame's offset) — and the box is then read Playwright's way.
_BOX_NOW_JS = """el => {
  if (window.top !== window || el.namespaceURI !== 'http://www.w3.org/1999/xhtml') return null;
  if (el.getClientRects().length === 0) return null;
  const r = el.getBoundingClientRect();
  return r.width > 0 && r.height > 0 ? [r.x, r.y, r.width, r.height] : null;
}"""


async def _read_now(act: Act, target: str, js: str) -> Any:
    """``js`` on the first element ``target`` names, now, without waiting for it; None when
    there is none yet (or the evaluate failed): the caller then reads the careful way."""
    selector = selector_of(act, target) or target
    try:
        return await act.scope.eval_on_selector(selector, js)
    except Exception:
        return None


async def _read_css(act: Act, target: str, what: str) -> str:
    """``get text|value`` of a selector (not a ref) in ONE round trip: Playwright's own read
    waits for the element itself, so it is given :func:`present`'s short window and the
    refusals are present's and :func:`act_on_located`'s (``target_not_found`` naming the
    closest names when nothing matched in the window, ``action_failed`` otherwise) — where
    :func:`act_on` spent a round trip on the wait and another on the read."""
    scope, selector = act.scope, f"{target} >> nth=0"  # the locator's .first
    timeout = min(act.ms_left(), nearest.ABSENT_WAIT * 1000)
    try:
        if what == "text":
            return await scope.inner_text(selector, strict=True, timeout=timeout)
        return await scope.input_value(selector, strict=True, timeout=timeout)
    except Exception as exc:
        if type(exc).__name__ == "TimeoutError":
            raise await nearest.not_found(act, target) from None
        raise Refusal("action_failed", verb=act.verb, reason=first_line(exc)) from None


async def _read_ref(act: Act, target: str, what: str) -> str | None:
    """``get text|value`` of a ref in ONE call and one CDP message (:func:`read_ref`):
    :func:`act_on` asked for the ref's count first. A ref that matches nothing is refused
    ``ref_stale`` at once; any other failure, or a trace to take: None, and :func:`act_on`
    reads or refuses as before."""
    if act.trace is not None:
        return None
    got = await read_ref(act.scope, str(selector_of(act, target)), what)
    if got == fastclick.STALE:
        raise await stale_ref(act, target)
    return got


async def read_ref(
    scope: Page | Frame, selector: str, what: str
) -> str | Literal[fastclick.Gone.STALE] | None:
    """Playwright's own read (``inner_text``, ``input_value``; in its utility world, where
    the ref is) of the ref ``selector``, or-ed to :data:`fastclick.GONE`: STALE at once when
    the ref matches nothing (its element detached, its document or frame gone) where the
    read alone polled for it; None when the read failed (not an input, a page too busy to
    answer)."""
    loc = fastclick.or_gone(scope, selector)
    try:
        if what == "text":
            got = await loc.inner_text(timeout=fastclick.READY_LOOK_MS)
        else:
            got = await loc.input_value(timeout=fastclick.READY_LOOK_MS)
    except Exception as exc:
        return fastclick.STALE if fastclick.gone_frame(exc) else None
    return fastclick.STALE if got == fastclick.GONE_TEXT else got


def _usage(detail: str, verb: str) -> Refusal:
    return Refusal("usage", detail=detail, verb=verb)


def _style_names(given: object) -> list[str]:
    if given is None:
        return list(DEFAULT_STYLES)
    names = [n.strip() for n in str(given).split(",") if n.strip()]
    if not names:
        raise _usage("get styles: name CSS properties, comma-separated (color,display)", "get")
    if len(names) > MAX_STYLES:
        raise _usage(f"get styles reads at most {MAX_STYLES} properties at once", "get")
    return names


@page_verb("get")
async def verb_get(act: Act) -> Answer:
    """Read what the agent names. Inside a frame (``bay frame``) text and html are the
    frame's; title and url stay the tab's (what ``bay tab list`` shows)."""
    what = str(act.args["what"])
    target = act.args.get("target")
    name = act.args.get("name")
    if name is not None and what not in ("attr", "styles"):
        raise _usage(f"get {what} takes no name (only get attr and get styles do)", "get")
    if target is None and what in _NEEDS_TARGET:
        raise _usage(f"get {what} needs a target (an @eN or a selector)", "get")
    data: dict[str, Any] = {"what": what, "url": act.page.url}
    if target is not None:
        data["target"] = target
    value: Any
    text: str | None = None
    ms = act.ms_left
    if what == "title":
        value = await act.page.title()
    elif what == "url":
        value = act.page.url
    elif target is None:
        scope = act.scope
        if what == "text":
            value = await scope.locator("body").inner_text(timeout=ms())
        else:
            value = await scope.content()
    else:
        t = str(target)
        if what == "count":
            value = await act.scope.locator(selector_of(act, t) or t).count()
        elif what in ("text", "value") and selector_of(act, t) is None:
            value = await _read_css(act, t, what)
        elif what in ("text", "value") and (got := await _read_ref(act, t, what)) is not None:
            value = got
        elif what == "text":
            value = await act_on(act, t, lambda loc: loc.inner_text(timeout=ms()))
        elif what == "html":
            value = await act_on(act, t, lambda loc: loc.evaluate("e => e.outerHTML"))
        elif what == "value":
            value = await act_on(act, t, lambda loc: loc.input_value(timeout=ms()))
        elif what == "box":
            value, text = await _box(act, t)
        elif what == "attr":
            if name is None:
                raise _usage("get attr needs the attribute's name: bay get attr @e4 href", "get")
            attr = str(name)
            data["name"] = attr
            value = await act_on(act, t, lambda loc: loc.get_attribute(attr, timeout=ms()))
            if value is None:
                text = f"(no attribute {attr})"
        else:
            props = _style_names(name)
            pairs = await act_on(act, t, lambda loc: loc.evaluate(_STYLES_JS, props))
            value = {str(p): str(v)[:MAX_STYLE_CHARS] for p, v in pairs}
            text = "\n".join(f"{p}: {v}" for p, v in value.items())
    data["value"] = value
    return data, str(value) if text is None else text


async def _box(act: Act, target: str) -> tuple[dict[str, float] | None, str]:
    """The element's border box in CSS pixels, from the top-left of the main frame's
    viewport (also inside an iframe): where a pointer would be put. None when it is not
    rendered (``display: none``, detached)."""
    now = await _read_now(act, target, _BOX_NOW_JS)
    box: Any
    if isinstance(now, list) and len(now) == 4:
        box = dict(zip(("x", "y", "width", "height"), now, strict=True))
    else:
        box = await act_on(act, target, lambda loc: loc.bounding_box(timeout=act.ms_left()))
    if box is None:
        return None, "(no box: the element is not rendered)"
    value = {"x": box["x"], "y": box["y"], "width": box["width"], "height": box["height"]}
    # CSS px (the manual says so once; --json has the names in full and the exact numbers).
    text = " ".join(f"{k[0]}={round(v, 1):g}" for k, v in value.items())
    return value, text


# -- is ---------------------------------------------------------------------------------


@page_verb("is")
async def verb_is(act: Act) -> Answer:
    """``true`` or ``false``, exit status 0 either way (as agent-browser's ``is``): the answer
    is the state, not whether it is the one hoped for. ``visible`` of a selector that matches
    nothing is false; ``enabled``/``checked`` of one wait for it, then ``target_not_found``."""
    what = str(act.args["what"])
    target = str(act.args["target"])
    ms = act.ms_left
    state: bool
    if what == "visible":
        state = await (await locate(act, target)).is_visible()
    elif what == "enabled":
        state = await act_on(act, target, lambda loc: loc.is_enabled(timeout=ms()))
    else:
        state = await act_on(act, target, lambda loc: loc.is_checked(timeout=ms()))
    data = {"what": what, "target": target, "value": state, "url": act.page.url}
    return data, "true" if state else "false"


# -- find -------------------------------------------------------------------------------

#: ``find``'s actions with the pointer: the element's point is taken first (the live view's
#: cursor), as for the verbs of the same name.
_POINTER: dict[str, Callable[[Locator, bool, float], Awaitable[Any]]] = {
    "click": lambda loc, ready, ms: loc.click(force=ready, timeout=ms),
    "dblclick": lambda loc, ready, ms: loc.dblclick(force=ready, timeout=ms),
    "check": lambda loc, ready, ms: loc.check(force=ready, timeout=ms),
    "uncheck": lambda loc, ready, ms: loc.uncheck(force=ready, timeout=ms),
}

_DONE = {
    "click": "clicked",
    "dblclick": "double-clicked",
    "check": "checked",
    "uncheck": "unchecked",
    "hover": "hovered",
    "focus": "focused",
    "fill": "filled",
    "type": "typed",
}


def aria_roles(scope: Page | Frame) -> frozenset[str]:
    """The ARIA roles ``find role`` takes: Playwright's own list, the annotation of its
    ``get_by_role`` (read from the page's class, so nothing of Playwright is imported here)."""
    hints = typing.get_type_hints(type(scope).get_by_role)
    return frozenset(typing.get_args(hints["role"]))


#: Up to five matches, each as ``role "name"``: what an ambiguity refusal names.
_MATCHES_JS = (
    "(els) => els.slice(0, 5).map((el) => { const d = (" + DESCRIBE_JS + ")(el);"
    ' return d.name ? `${d.role} "${d.name}"` : d.role; })'
)


def _locator(act: Act) -> tuple[Locator, str]:
    """The Playwright locator ``find`` names, and the words that say it (``role button
    --name "Sign in"``) in answers, refusals and what a policy sees."""
    by, value = str(act.args["by"]), str(act.args["value"])
    name, exact = act.args.get("name"), bool(act.args.get("exact"))
    if name is not None and by != "role":
        raise _usage("--name goes with find role (the accessible name it must have)", "find")
    if exact and by == "testid":
        raise _usage("a test id always matches whole: find testid takes no --exact", "find")
    scope = act.scope
    words = f'{by} "{value}"' + (f' --name "{name}"' if name is not None else "")
    words += " --exact" if exact else ""
    x = exact or None
    if by == "role":
        if value not in aria_roles(scope):
            raise _usage(f"find role: {value!r} is no ARIA role (button, link, textbox, …)", "find")
        role: Any = value  # one of Playwright's own roles, checked just above
        n = None if name is None else str(name)
        return scope.get_by_role(role, name=n, exact=x), words
    loc = {
        "text": lambda: scope.get_by_text(value, exact=x),
        "label": lambda: scope.get_by_label(value, exact=x),
        "placeholder": lambda: scope.get_by_placeholder(value, exact=x),
        "alt": lambda: scope.get_by_alt_text(value, exact=x),
        "title": lambda: scope.get_by_title(value, exact=x),
        "testid": lambda: scope.get_by_test_id(value),
    }[by]()
    return loc, words


async def _the_one(act: Act, loc: Locator, words: str) -> Locator:
    """The one element ``loc`` matches, once one is there (waited for the short window an
    action's selector gets, :data:`nearest.ABSENT_WAIT`); none by then is
    ``target_not_found`` naming the closest names there are, several ``target_ambiguous``."""
    try:
        window = min(act.ms_left(), nearest.ABSENT_WAIT * 1000)
        await loc.first.wait_for(state="attached", timeout=window)
    except Exception as exc:
        if type(exc).__name__ == "TimeoutError":
            asked = str(act.args.get("name") or act.args["value"])
            raise await nearest.not_found(act, f"find {words}", asked) from None
        raise
    count = await loc.count()
    if count > 1:
        try:
            shown = await loc.evaluate_all(_MATCHES_JS)
        except Exception:
            shown = []
        more = ", …" if count > len(shown) else ""
        raise Refusal(
            "target_ambiguous",
            target=f"find {words}",
            count=count,
            matches=", ".join(str(m) for m in shown) + more,
        )
    return loc


@page_verb("find")
async def verb_find(act: Act) -> Answer:
    """Locate with Playwright's ``get_by_*`` and do the action on the one element found.
    The action runs as the verb of its name would (the policy's ``bay_before_action`` sees
    ``click``/``fill``… on ``find role button --name "Sign in"``), and typed text is a secret
    argument: never logged, audited or shown to plugins."""
    action = str(act.args["action"])
    text = act.args.get("text")
    if action in ("fill", "type") and text is None:
        raise _usage(f"find … {action} needs the text: bay find label Email {action} TEXT", "find")
    if action not in ("fill", "type") and text is not None:
        raise _usage(f"find … {action} takes no text (only fill and type do)", "find")
    loc, words = _locator(act)
    one = await _the_one(act, loc, words)
    target = f"find {words}"
    args: dict[str, Any] = {"target": target}
    if text is not None:
        args["text"] = str(text)
    step = dataclasses.replace(act, verb=action, args=args)
    ms = act.ms_left
    data: dict[str, Any] = {"target": target, "action": action, "url": act.page.url}
    if action == "text":
        value = await act_on_located(step, target, one, lambda el: el.inner_text(timeout=ms()))
        data["value"] = value
        return data, str(value)
    if action in _POINTER:
        press = _POINTER[action]
        await act_on_located(
            step,
            target,
            one,
            lambda el: pointer_on(step, el, lambda e, ready: press(e, ready, ms())),
        )
    elif action == "hover":
        await act_on_located(step, target, one, lambda el: el.hover(timeout=ms()))
    elif action == "focus":
        await act_on_located(step, target, one, lambda el: el.focus(timeout=ms()))
    elif action == "fill":
        await act_on_located(step, target, one, lambda el: el.fill(str(text), timeout=ms()))
    else:
        typed = str(text)
        await act_on_located(
            step, target, one, lambda el: el.press_sequentially(typed, timeout=ms())
        )
    data["url"] = act.page.url
    return data, _DONE[action]


# -- frame ------------------------------------------------------------------------------


@page_verb("frame")
async def verb_frame(act: Act) -> Answer:
    """Make an iframe (same-origin or cross-origin: Playwright reaches both) the frame the
    tab's later verbs act inside, or ``main`` the page again. The frame is resolved in the
    one acted inside now, so ``bay frame`` steps into nested frames one at a time."""
    target = str(act.args["target"])
    if target == "main":
        act.tab.enter_frame(None)
        left = {"tab": act.tab.id, "frame": None, "url": act.page.url}
        return left, f"acting on the main frame of {act.tab.id}"
    loc = await locate(act, target)
    try:
        handle = await loc.element_handle(timeout=act.ms_left())
    except Exception as exc:
        if type(exc).__name__ == "TimeoutError":
            raise Refusal("target_not_found", target=target) from None
        raise
    try:
        frame = await handle.content_frame()
        if frame is None:
            tag = await handle.evaluate("e => e.tagName.toLowerCase()")
            raise Refusal("not_a_frame", target=target, tag=str(tag))
    finally:
        await handle.dispose()
    act.tab.enter_frame(FrameFocus(target, frame))
    data: dict[str, Any] = {
        "tab": act.tab.id,
        "frame": {"target": target, "url": frame.url},
        "url": act.page.url,
    }
    return data, f"acting inside frame {target} ({frame.url}); bay frame main leaves it"
