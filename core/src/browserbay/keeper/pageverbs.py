"""The page verbs: each a small async function of the session's current tab.

A handler gets a :class:`Act` (the page, the arguments, the time left) and returns
``(data, text)``: ``data`` for ``--json``, ``text`` for stdout.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import re
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

from browserbay.keeper import fastclick, nearest
from browserbay.keeper.act import Act
from browserbay.keeper.actions import before_action, before_keys, gated
from browserbay.keeper.pageinput import page_input
from browserbay.model import Failure
from browserbay.refusals import Refusal
from browserbay.urls import normalize_url

if TYPE_CHECKING:
    from playwright.async_api import Locator, Page

Answer = tuple[dict[str, Any], str]
_REF = re.compile(r"^@?(?P<ref>(?P<frame>f\d+)?(?P<kind>[ec])\d+)$")
#: The selector engine of the refs a snapshot gives elements the ARIA tree has no node for
#: (``cN``: see browserbay.keeper.snapshots, which registers it with the driver).
OWN_REF_ENGINE = "bay-ref"


PageHandler = Callable[[Act], Awaitable[Answer]]

PAGE_VERBS: dict[str, PageHandler] = {}
"""Verb name -> its handler, filled by :func:`page_verb`. The keeper's route
(:mod:`browserbay.keeper.route`) takes every page verb's handler from here and refuses to
start when a page verb of the table has none, or a handler names no verb."""


def page_verb(name: str) -> Callable[[PageHandler], PageHandler]:
    """Mark a function as the handler of the page verb ``name`` (its row in
    :mod:`browserbay.verbs`). A new page verb is that row plus one such function."""

    def register(handler: PageHandler) -> PageHandler:
        if name in PAGE_VERBS:
            raise ValueError(f"two handlers for the page verb {name!r}")
        PAGE_VERBS[name] = handler
        return handler

    return register


# -- targets ----------------------------------------------------------------------------


def selector_of(act: Act, target: str) -> str | None:
    """The Playwright selector of a ref (``aria-ref=…``), or None if ``target`` is no ref."""
    m = _REF.match(target)
    if target.startswith("@") or (m and target == m.group("ref")):
        if m is None:
            raise Refusal("ref_stale", ref=target)
        ref = m.group("ref")
        if m.group("kind") == "c":
            return _own_ref_selector(
                act, m.group("frame") or "", ref.removeprefix(m.group("frame") or "")
            )
        return f"aria-ref={act.tab.ref_prefix + ref if ref.startswith('e') else ref}"
    return None


def _own_ref_selector(act: Act, frame: str, ref: str) -> str:
    """An own ref (``cN``), inside the frame it was found in (its prefix: the path into that
    frame the tab's last snapshot recorded)."""
    if not frame:
        return f"{OWN_REF_ENGINE}={ref}"
    path = act.tab.frame_paths.get(frame)
    if path is None:
        raise Refusal("ref_stale", ref="@" + frame + ref)
    return f"{path} >> {OWN_REF_ENGINE}={ref}"


async def locate(act: Act, target: str) -> Locator:
    """``@eN`` resolves through the last snapshot; anything else is a selector. Both resolve
    in the frame the tab acts inside (``bay frame``), else in the page."""
    scope = act.scope
    selector = selector_of(act, target)
    if selector is not None:
        loc = scope.locator(selector)
        try:
            count = await loc.count()
        except Exception as exc:
            if not fastclick.gone_frame(exc):
                raise
            count = 0  # the frame it was taken in is gone (a navigation since): stale
        if count == 0:  # a ref never appears later: known absent at once
            raise await stale_ref(act, target)
        return loc
    return scope.locator(target).first


async def stale_ref(act: Act, target: str) -> Refusal:
    """``ref_stale`` for the ref ``target`` (``@eN`` or ``eN``): it matches nothing now, and a
    ref never appears later."""
    return await nearest.stale(act, "@" + target.removeprefix("@"))


async def present(act: Act, target: str, loc: Locator) -> None:
    """An action's selector that matches nothing is waited for a short window
    (:data:`nearest.ABSENT_WAIT`: an element the page is about to add), then refused
    ``target_not_found`` naming the closest names there are — not at the deadline."""
    if selector_of(act, target) is not None:
        return  # locate checked it
    try:
        await loc.wait_for(state="attached", timeout=min(act.ms_left(), nearest.ABSENT_WAIT * 1000))
    except Exception as exc:
        if type(exc).__name__ != "TimeoutError":
            raise Refusal("action_failed", verb=act.verb, reason=first_line(exc)) from None
        raise await nearest.not_found(act, target) from None


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


async def act_on(act: Act, target: str, run: Callable[[Locator], Awaitable[Any]]) -> Any:
    loc = await locate(act, target)
    await present(act, target, loc)
    return await act_on_located(act, target, loc, run)


async def act_on_located(
    act: Act, target: str, loc: Locator, run: Callable[[Locator], Awaitable[Any]]
) -> Any:
    """Run ``run`` on the element ``loc`` (``target`` as the agent named it): the policy's
    last word first, then its refusals in the table's words."""
    await before_action(act, target, loc)
    if act.trace is not None:
        await act.trace.take_before(loc)
    try:
        return await run(loc)
    except Refusal:
        raise
    except Exception as exc:
        if type(exc).__name__ == "TimeoutError":
            try:
                present = await loc.count()
            except Exception:
                present = 0
            if not present:  # gone meanwhile
                raise await nearest.not_found(act, target) from None
        raise Refusal("action_failed", verb=act.verb, reason=first_line(exc)) from None


#: What :func:`at_once` answers when it did not act: the caller takes the careful path.
NOT_NOW: Any = object()


async def at_once(act: Act, target: str, js: str, arg: Any = None) -> Any:
    """``js`` on the element ``target`` names, NOW, in one Playwright call
    (``eval_on_selector``: the lookup and the evaluate together; for an ``aria-ref`` still ~8
    CDP messages, the node adopted from Playwright's utility world into the page's) — where
    :func:`act_on` spends a call on the ref's presence (``count``), one on the wait, one on
    the evaluate of a handle and one on its dispose. Worth it only where the locator's way is
    several calls: a ``get text`` of a ref (count + inner_text: 2 calls, 2 CDP messages) is
    cheaper as it is.
    :data:`NOT_NOW` when that is not the verb's whole work: a gate or a trace must see the
    element first, or the element is not there (yet), or the evaluate failed; the caller then
    takes :func:`act_on`, which waits, refuses and names as before. ``js`` answers ``false``
    for an element it must not act on now (not ready, not its kind): NOT_NOW too."""
    if act.trace is not None or gated(act):
        return NOT_NOW
    selector = selector_of(act, target) or target
    try:
        got = await act.scope.eval_on_selector(selector, js, arg)
    except Exception:
        return NOT_NOW
    return NOT_NOW if got is False else got


def _acted(act: Act, what: str) -> Answer:
    return {"target": act.args.get("target"), "url": act.page.url}, what


# -- navigation -------------------------------------------------------------------------


async def _page_answer(act: Act, status: int | None = None) -> Answer:
    title = await act.page.title()
    data: dict[str, Any] = {"url": act.page.url, "title": title, "tab": act.tab.id}
    if status is not None:
        data["status"] = status
        hint = act.plugins.hooks.bay_tier_hint(
            failure=Failure(
                act.page.url,
                status,
                title,
                act.lease.profile.provider,
                act.lease.profile.tier,
            )
        )
        if hint is not None:
            data["hint"] = hint.message
            data["hint_tier"] = hint.suggest_tier
    return data, f"{title}\n{act.page.url}" if title else act.page.url


@page_verb("open")
async def verb_open(act: Act) -> Answer:
    url = normalize_url(str(act.args["url"]))
    from browserbay.keeper.leases import goto_guarded

    response = await goto_guarded(
        act.lease, act.page, url, timeout=act.ms_left(), wait_until="load"
    )
    return await _page_answer(act, response.status if response is not None else None)


@page_verb("back")
async def verb_back(act: Act) -> Answer:
    await act.page.go_back(timeout=act.ms_left())
    return await _page_answer(act)


@page_verb("forward")
async def verb_forward(act: Act) -> Answer:
    await act.page.go_forward(timeout=act.ms_left())
    return await _page_answer(act)


@page_verb("reload")
async def verb_reload(act: Act) -> Answer:
    response = await act.page.reload(timeout=act.ms_left())
    return await _page_answer(act, response.status if response is not None else None)


# -- reading ----------------------------------------------------------------------------


#: Values of the page's password fields (every frame): never shown in a snapshot.
_PASSWORDS_JS = (
    "() => Array.from(document.querySelectorAll('input[type=password]'), e => e.value)"
    ".filter(v => v)"
)


async def password_values(page: Page) -> list[str]:
    values: list[str] = []
    for frame in page.frames:
        with contextlib.suppress(Exception):  # a frame going away shows nothing of it either
            values += await frame.evaluate(_PASSWORDS_JS)
    return values


def mask_passwords(raw: str, values: list[str]) -> str:
    """A password field's value (typed by the agent, or filled in by the browser) is shown as
    ``••••``: the page's accessibility snapshot would read it out in clear."""
    if not values:
        return raw
    lines = raw.split("\n")
    for i, line in enumerate(lines):
        if "textbox" in line:
            for v in values:
                if line.endswith(": " + v):
                    lines[i] = line[: -len(v)] + "••••"
                    break
    return "\n".join(lines)


@page_verb("eval")
async def verb_eval(act: Act) -> Answer:
    try:
        value = await act.scope.evaluate(str(act.args["js"]))
    except Exception as exc:
        raise Refusal("action_failed", verb="eval", reason=first_line(exc)) from None
    try:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        # A DOM node or window comes back as a circular structure: say so, keep going.
        value = None
        text = "(the value cannot be shown as JSON; return a plain value, e.g. el.textContent)"
    return {"value": value}, text


# -- acting -----------------------------------------------------------------------------


READY_JS = fastclick.READY_JS
#: READY_JS's point, and whether the element is inside a frame (its point is then in the
#: frame's pixels, not the page's).
POINT_JS = (
    "(el) => { const p = (" + READY_JS + ")(el); return p && [p[0], p[1], window.top !== window]; }"
)


def mark_point(act: Act, x: float, y: float) -> None:
    """Where a pointer verb acted (CSS pixels of the tab's viewport): the live view's agent
    cursor. The page verbs are the one writer of it (:mod:`browserbay.keeper.inputs` too
    writes through here)."""
    act.lease.trace.pointed(act.tab.id, x, y)


async def pointer(act: Act, run: Callable[[Locator, bool], Awaitable[Any]]) -> None:
    """Act with the pointer. When one round trip shows the element ready, skip Playwright's
    actionability waits (its rAF-based stability check costs ~35 ms a click); otherwise
    let Playwright wait for the element and say precisely what is wrong."""

    await act_on(act, act.args["target"], lambda loc: pointer_on(act, loc, run))


async def pointer_on(act: Act, loc: Locator, run: Callable[[Locator, bool], Awaitable[Any]]) -> Any:
    try:
        point = await loc.evaluate(POINT_JS, timeout=min(act.ms_left(), 2000))
    except Exception:
        point = False
    if not point:
        point = await clear_of_covers(act, loc)
    ready = bool(point)
    if isinstance(point, list) and len(point) == 3:  # the live view's agent cursor
        await _mark(act, loc, float(point[0]), float(point[1]), inside_frame=bool(point[2]))
    return await run(loc, ready)


async def _mark(act: Act, loc: Locator, x: float, y: float, *, inside_frame: bool) -> None:
    """Mark the pointer's point in the page's CSS pixels: an element inside a frame (``bay
    frame``, an ``@f2eN`` ref) measured its point in the frame's, off by the frame's offset;
    Playwright's box of it is in the page's (cross-origin frames too)."""
    if inside_frame:
        try:
            box = await loc.bounding_box(timeout=1000)
        except Exception:
            box = None
        if box is None:
            return  # no point we could show truthfully
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    mark_point(act, x, y)


async def clear_of_covers(act: Act, loc: Locator, target: str | None = None) -> Any:
    """An element (``target``, default the verb's own) another covers at its centre (an
    overlay, a banner) is given :data:`nearest.COVER_WAIT` to come clear, then refused
    ``target_covered`` naming what covers it: Playwright would retry the press until the
    deadline. Answers POINT_JS's point once it is clear, or False when it is not ready for
    another reason (Playwright's own wait says which)."""
    cover = await nearest.cover_of(loc)
    if cover is None:
        return False
    end = min(time.monotonic() + nearest.COVER_WAIT, act.deadline - 0.5)
    while time.monotonic() < end:
        await anyio.sleep(0.1)
        with contextlib.suppress(Exception):
            point = await loc.evaluate(POINT_JS, timeout=1000)
            if point:
                return point
        cover = await nearest.cover_of(loc) or cover
    named = target or str(act.args.get("target") or "the element")
    raise nearest.covered(act.verb, named, cover)


@page_verb("click")
async def verb_click(act: Act) -> Answer:
    """One round trip finds the element ready and its point, then the press and release go
    straight to the page (:mod:`fastclick`); otherwise Playwright's click, as before. With no
    gate and no trace to see the element first, that round trip is the only look up."""
    target = str(act.args["target"])
    ref = selector_of(act, target)
    selector = ref or target

    async def fast() -> bool:
        point = await fastclick.ready_point(act.page, selector, ref is not None)
        if point == fastclick.STALE:
            raise await stale_ref(act, target)
        if point is None:
            return False
        act.lease.trace.pointed(act.tab.id, point[0], point[1])
        try:
            held = page_input(act.page).modifiers()  # bay keydown Shift: a shift-click
            return await fastclick.click_fast(act.page, point, act.ms_left() / 1000, held)
        except Exception as exc:
            raise Refusal("action_failed", verb=act.verb, reason=first_line(exc)) from None

    # Inside a frame (bay frame) the fast path's point would be the frame's, not the
    # page's: Playwright's click, which resolves the element there, does it.
    fastable = act.tab.focus is None
    watched = act.trace is not None or act.plugins.hooks.gates_actions()
    if fastable and not watched and await fast():
        return _acted(act, "clicked")

    async def go(loc: Locator) -> None:
        if fastable and watched and await fast():
            return
        await pointer_on(act, loc, lambda loc, ready: loc.click(force=ready, timeout=act.ms_left()))

    await act_on(act, target, go)
    return _acted(act, "clicked")


@page_verb("dblclick")
async def verb_dblclick(act: Act) -> Answer:
    """Playwright's double-click at the element's point: the page gets click, click,
    dblclick. Forced only when one round trip showed the element ready and topmost at that
    point; otherwise Playwright waits for it, and a covered element is refused, never pressed."""
    await pointer(act, lambda loc, ready: loc.dblclick(force=ready, timeout=act.ms_left()))
    return _acted(act, "double-clicked")


async def _keys_now(act: Act, target: str, step: str, send: Callable[[], Awaitable[None]]) -> bool:
    """A ref's field made ready for the keyboard in one CDP message (``step`` of
    :func:`fastclick.fill_ready`), then ``send`` (the keys): True. False where Playwright's
    way must do it (no ref, a frame, a gate or a trace, a field not ready); ``ref_stale`` at
    once for a ref that matches nothing."""
    selector = selector_of(act, target)
    if selector is None or act.tab.focus is not None or act.trace is not None or gated(act):
        return False
    ready = await fastclick.fill_ready(act.page, selector, step)
    if ready == fastclick.STALE:
        raise await stale_ref(act, target)
    if not ready:
        return False
    try:
        await send()
    except Exception as exc:
        raise Refusal("action_failed", verb=act.verb, reason=first_line(exc)) from None
    return True


@page_verb("fill")
async def verb_fill(act: Act) -> Answer:
    """Playwright's fill. A ref's text field ready now is selected and focused in one CDP
    message (:func:`fastclick.fill_ready`) and the keyboard inserts the text, as Playwright's
    fill does: 2 calls and 2 CDP messages where the ref's count and the fill took 2 and 9.
    Empty text (Playwright presses Delete), a gate or a trace, a frame: Playwright's way."""
    text = str(act.args["text"])
    target = str(act.args["target"])
    if text and await _keys_now(act, target, ":fill", lambda: act.page.keyboard.insert_text(text)):
        return _acted(act, "filled")
    await act_on(act, target, lambda loc: loc.fill(text, timeout=act.ms_left()))
    return _acted(act, "filled")


@page_verb("type")
async def verb_type(act: Act) -> Answer:
    """Playwright's press_sequentially: the element focused, then the keys. A ref's element
    is focused in one CDP message (:func:`fastclick.fill_ready`, ``:focus``: Playwright's own
    focus step) and the keyboard types: the ref's count and the locator's resolution saved.
    A gate or a trace, a frame: Playwright's way."""
    text = str(act.args["text"])
    target = str(act.args["target"])
    if await _keys_now(act, target, ":focus", lambda: act.page.keyboard.type(text)):
        return _acted(act, "typed")
    await act_on(act, target, lambda loc: loc.press_sequentially(text, timeout=act.ms_left()))
    return _acted(act, "typed")


@page_verb("press")
async def verb_press(act: Act) -> Answer:
    """The key, then — as after a click — a main-frame navigation it requested (Enter in a
    form, a key handler's ``location =``) is waited for until it commits: the answer's URL
    and the next verb (``wait --load`` too) are the new page's, not the one it left."""
    await before_keys(act, str(act.args["key"]))
    key = str(act.args["key"])
    try:
        watch = await fastclick.pointer_of(act.page)  # None: no CDP here, the key alone
        if watch is None:
            await act.page.keyboard.press(key)
        else:
            async with watch.settling(act.page, act.ms_left() / 1000, "the key"):
                await act.page.keyboard.press(key)
    except Exception as exc:
        raise Refusal("action_failed", verb="press", reason=first_line(exc)) from None
    return {"key": act.args["key"], "url": act.page.url}, "pressed"


@page_verb("select")
async def verb_select(act: Act) -> Answer:
    values = [str(v) for v in act.args["values"]]

    async def run(loc: Locator) -> list[str]:
        options = await nearest.options_of(loc, min(act.ms_left(), 2000))
        if options is not None:  # a <select>: one without the option is refused at once
            refusal = nearest.missing_option(str(act.args["target"]), values, options)
            if refusal is not None:
                raise refusal
        try:
            return await loc.select_option(values, timeout=act.ms_left())
        except Exception:
            return await loc.select_option(label=values, timeout=act.ms_left())

    chosen = await act_on(act, act.args["target"], run)
    return {"target": act.args["target"], "selected": chosen}, "selected " + ", ".join(chosen)


@page_verb("check")
async def verb_check(act: Act) -> Answer:
    await pointer(act, lambda loc, ready: loc.check(force=ready, timeout=act.ms_left()))
    return _acted(act, "checked")


@page_verb("uncheck")
async def verb_uncheck(act: Act) -> Answer:
    await pointer(act, lambda loc, ready: loc.uncheck(force=ready, timeout=act.ms_left()))
    return _acted(act, "unchecked")


@page_verb("hover")
async def verb_hover(act: Act) -> Answer:
    await act_on(act, act.args["target"], lambda loc: loc.hover(timeout=act.ms_left()))
    return _acted(act, "hovered")


_DIRECTIONS = {"down": (0, 1), "up": (0, -1), "right": (1, 0), "left": (-1, 0)}


@page_verb("scroll")
async def verb_scroll(act: Act) -> Answer:
    direction = str(act.args.get("direction") or "down")
    if direction not in _DIRECTIONS:
        await act_on(
            act, direction, lambda loc: loc.scroll_into_view_if_needed(timeout=act.ms_left())
        )
        return {"target": direction, "url": act.page.url}, "scrolled into view"
    pixels = int(act.args.get("pixels") or 600)
    dx, dy = _DIRECTIONS[direction]
    pos = await act.page.evaluate(
        "([x, y]) => { window.scrollBy({left: x, top: y, behavior: 'instant'});"
        " return [window.scrollX, window.scrollY]; }",
        [dx * pixels, dy * pixels],
    )
    return {"direction": direction, "pixels": pixels, "scroll": pos}, f"scrolled to {pos}"


def page_error(verb: str, timeout: float, exc: BaseException) -> Refusal | None:
    """A Playwright error that escaped a handler, as the refusal it means: its own timeout
    is our deadline; any other error of the page is ``action_failed``."""
    if not type(exc).__module__.startswith("playwright"):
        return None
    if type(exc).__name__ == "TimeoutError":
        return Refusal("deadline", verb=verb, timeout=timeout, longer=timeout * 2)
    return Refusal("action_failed", verb=verb, reason=first_line(exc))


#: How long the URL must stay the same before login-check reads it, and the most it waits.
SETTLE_QUIET = 0.5
SETTLE_MAX = 10.0


@page_verb("login-check")
async def verb_login_check(act: Act) -> Answer:
    """Open the URL, wait until the address settles (redirects, script navigations), then
    decide from the globs — the keeper decides, never the model."""
    url, logged_in, logged_out = (act.args.get(k) for k in ("url", "logged_in", "logged_out"))
    if not url or not (logged_in or logged_out):
        raise Refusal(
            "usage",
            detail="login-check needs --url and at least one of --logged-in / --logged-out",
            verb="login-check",
        )
    target = normalize_url(str(url))
    from browserbay.keeper.leases import goto_guarded

    await goto_guarded(act.lease, act.page, target, timeout=act.ms_left(), wait_until="load")
    end = min(act.deadline - 0.5, time.monotonic() + SETTLE_MAX)
    seen, since = act.page.url, time.monotonic()
    while time.monotonic() < end and time.monotonic() - since < SETTLE_QUIET:
        await act.page.wait_for_timeout(100)
        if act.page.url != seen:
            seen, since = act.page.url, time.monotonic()
    settled = time.monotonic() - since >= SETTLE_QUIET
    final = act.page.url
    inside = bool(logged_in) and fnmatch.fnmatchcase(final, str(logged_in))
    outside = bool(logged_out) and fnmatch.fnmatchcase(final, str(logged_out))
    state = "logged_in" if inside and not outside else "logged_out" if outside else "unknown"
    if inside and outside:
        state = "unknown"  # both globs match: the patterns cannot tell
    data = {"state": state, "url": final, "settled": settled, "tab": act.tab.id}
    return data, f"{state}\n{final}"
