"""``click`` through the page's own CDP session, when one round trip shows the element ready.

Playwright's ``click(force=True)`` resolves the element again, scrolls, measures its quads,
and moves the mouse before pressing it (Chromium acks a ``mouseMoved`` only with the next
frame). Here the readiness check (:data:`CLICK_READY_JS`: in view, sized, enabled, visible,
the topmost element at its centre, in the main frame) returns the point, and the keeper sends
``Input.dispatchMouseEvent`` ``mousePressed`` + ``mouseReleased`` there (Blink sends the
pointer's over/enter events with the press).

What Playwright does after a click is kept: a navigation of the main frame that the click
requested (``Page.frameRequestedNavigation``, current tab) is waited for until it commits
(or stops without committing), so the answer shows the new page.

Where this does not apply — not Chromium, an element in a frame, an element not ready or
not there yet — :func:`click_fast` returns False and the caller takes Playwright's path.
One CDP session per page, made on its first click and dropped when the page closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
import secrets
import weakref
from collections.abc import AsyncIterator, Awaitable
from typing import TYPE_CHECKING, Any, Final, Literal

if TYPE_CHECKING:
    from playwright.async_api import CDPSession, ElementHandle, Frame, Locator, Page

#: Is the element ready for a pointer, right now? In view (scrolled if needed), sized,
#: enabled, visible, still (no running CSS animation, transition or Web Animation on it or
#: an ancestor, and no jQuery animation anywhere in its window — jQuery moves elements from
#: script timers, which getAnimations() does not list, and an accordion's sliding panel
#: moves its neighbours: a point taken now could miss it a frame later), and the topmost
#: element at its centre (or inside that element): its centre, else false. One check for
#: both click paths; what it cannot see (another script that moves an element every frame)
#: Playwright's stability wait would, on the path taken when this says false. (A page that
#: fakes ``jQuery.timers`` can only send its clicks down that careful path.)
READY_BODY = """
  if (!el.isConnected) return false;
  for (const a of el.ownerDocument.getAnimations()) {
    const t = a.effect && a.effect.target;
    if (a.playState === 'running' && t && t.contains(el)) return false;
  }
  const jq = el.ownerDocument.defaultView && el.ownerDocument.defaultView.jQuery;
  if (jq && jq.timers && jq.timers.length > 0) return false;
  el.scrollIntoView({block: 'nearest', inline: 'nearest'});
  const r = el.getBoundingClientRect();
  if (r.width < 1 || r.height < 1) return false;
  if (el.disabled || el.getAttribute('aria-disabled') === 'true') return false;
  const s = getComputedStyle(el);
  if (s.visibility !== 'visible' || s.pointerEvents === 'none') return false;
  const hit = el.ownerDocument.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  const ok = !!hit && (hit === el || el.contains(hit));
  return ok ? [r.left + r.width / 2, r.top + r.height / 2] : false;
"""
READY_JS = "(el) => {" + READY_BODY + "}"

#: A selector engine of Playwright's utility world (a content script: the page's scripts and
#: globals are not there, its builtins are its own). ``aria-ref=eN >> bay-ready=:point`` is
#: one element made for the purpose whose text is :data:`READY_BODY`'s answer for the ref's
#: element as JSON (``false``, ``"frame"`` or the point) — read with ONE ``text_content``,
#: one CDP message in the world Playwright found the ref in, where a main-world evaluate of
#: an ``aria-ref`` costs eight (the node is adopted from the utility world first). jQuery is
#: a page global, invisible there: :data:`JQUERY_BUSY_JS` asks the page's world, at once.
READY_ENGINE = "bay-ready"
#: ``bay-ready=:gone``: one element, always, made by the document the query starts from (a
#: ``<textarea>``, detached, whose text, inner text and value are :data:`GONE_TEXT`). Or-ed
#: to a ref (:func:`or_gone`), it is what the query finds when the ref matches nothing (its
#: element detached, its document gone): the look answers at once where Playwright would
#: poll for the missing element until its timeout. When the ref matches, its element comes
#: first (Playwright's or keeps the ref's match before the one or-ed to it; the first is
#: taken). A random word, so that no page's text can pass for it.
GONE_TEXT = "bay-ref-gone-" + secrets.token_hex(8)
GONE = f"{READY_ENGINE}=:gone"


class Gone(enum.Enum):
    """What a look answers for a ref that matches nothing now (never a text a page could
    have): the verb refuses ``ref_stale``."""

    STALE = "stale"


STALE: Final = Gone.STALE


def gone_frame(exc: BaseException) -> bool:
    """Playwright's refusal of a ref whose frame is gone: ``f1e3`` names the frame it was
    taken in by that frame's sequence number, which a navigation renews (the main frame's
    refs after a navigation are ``f1eN``, after the next one ``f2eN``), and a removed iframe
    takes with it. The ref matches nothing, ever: it is stale."""
    return "Invalid frame in aria-ref selector" in str(exc)


#: ``:fill``: Playwright's fill's first step, where it is Playwright's own (its checks of
#: visible, enabled and editable, then its selectText, both in this same world) for a text
#: field — an ``<input>`` typed into, a ``<textarea>``, a contenteditable — ready now: its
#: text selected and the focus on it, ``true``; the keyboard then inserts the text. Anything
#: else is ``false`` and takes Playwright's fill, which waits and says what is wrong: a label
#: (Playwright fills its control), a number, date or colour input, a hidden, disabled or
#: read-only field, a field that did not keep the focus (the text would go elsewhere).
FILL_BODY = """
  if (!el.isConnected || el.namespaceURI !== 'http://www.w3.org/1999/xhtml') return false;
  const tag = el.localName;
  const kinds = ['', 'email', 'password', 'search', 'tel', 'text', 'url'];
  if (tag === 'input' ? !kinds.includes(el.type.toLowerCase())
      : tag !== 'textarea' && !el.isContentEditable) return false;
  const r = el.getBoundingClientRect();
  if (r.width <= 0 || r.height <= 0) return false;
  if (getComputedStyle(el).visibility !== 'visible') return false;
  if (el.checkVisibility && !el.checkVisibility()) return false;
  if (el.matches(':disabled') || el.closest('[aria-disabled=true]')) return false;
  if (el.readOnly || el.closest('[aria-readonly=true]')) return false;
  if (tag === 'input') { el.select(); el.focus(); }
  else if (tag === 'textarea') {
    el.selectionStart = 0; el.selectionEnd = el.value.length; el.focus();
  } else {
    let host = el;
    while (host.isContentEditable && host.parentElement && host.parentElement.isContentEditable)
      host = host.parentElement;
    host.focus();
    const range = el.ownerDocument.createRange();
    range.selectNodeContents(el);
    const sel = el.ownerDocument.defaultView.getSelection();
    if (sel) { sel.removeAllRanges(); sel.addRange(range); }
  }
  const a = el.getRootNode().activeElement;
  return !!a && (a === el || (el.isContentEditable && a.contains(el)));
"""
#: ``:focus``: Playwright's focus before it types (its focusNode, reset selection): the
#: element takes the focus twice (a contenteditable after the last one let go of it), an
#: input not focused before has its caret put at the start; ``true``, or ``false`` when the
#: element is gone.
FOCUS_BODY = """
  if (!el.isConnected) return false;
  const active = el.getRootNode().activeElement;
  const was = active === el && !!el.ownerDocument && el.ownerDocument.hasFocus();
  if (el.isContentEditable && !was && active && active.blur) active.blur();
  el.focus();
  el.focus();
  if (!was && el.nodeName.toLowerCase() === 'input') {
    try { el.setSelectionRange(0, 0); } catch (e) {}
  }
  return true;
"""
READY_ENGINE_JS = (
    "({ queryAll(root, selector) {\n"
    "  if (selector === ':gone') {\n"
    "    if (!root || root.nodeType !== 9) return [];\n"
    "    const gone = root.createElement('textarea');\n"
    "    gone.textContent = " + json.dumps(GONE_TEXT) + ";\n"
    "    return [gone];\n"
    "  }\n"
    "  if (!root || root.nodeType !== 1) return [];\n"
    "  const el = root;\n"
    "  const point = () => {\n"
    "    if (window.top !== window) return 'frame';\n"
    + READY_BODY.replace(
        "  const jq = el.ownerDocument.defaultView && el.ownerDocument.defaultView.jQuery;\n"
        "  if (jq && jq.timers && jq.timers.length > 0) return false;\n",
        "",
    )
    + "  };\n"
    "  const fill = () => {" + FILL_BODY + "  };\n"
    "  const focus = () => {" + FOCUS_BODY + "  };\n"
    "  const runs = { ':point': point, ':fill': fill, ':focus': focus };\n"
    "  const run = Object.prototype.hasOwnProperty.call(runs, selector) ? runs[selector] : null;\n"
    "  if (!run) return [];\n"
    "  const answer = (el.ownerDocument || document).createElement('output');\n"
    "  answer.textContent = JSON.stringify(run());\n"
    "  return [answer];\n} })"
)
#: Whether a jQuery animation runs in the page (its timers), from the page's own world.
JQUERY_BUSY_JS = (
    "() => { const jq = window.jQuery; return !!(jq && jq.timers && jq.timers.length > 0); }"
)
#: The bound of the utility world's look. It finds something at once (the ref's answer, or
#: :data:`GONE`'s for a ref that matches nothing), so it waits only on a page too busy to
#: answer; it steps aside then.
READY_LOOK_MS = 300
#: The same, and 'frame' for an element outside the main frame (the fast path's point
#: would be in the wrong coordinates there).
CLICK_READY_JS = "(el) => {\n  if (window.top !== window) return 'frame';" + READY_BODY + "}"


class PagePointer:
    """A page's CDP session, and the navigations of its main frame that input requested."""

    def __init__(self, cdp: CDPSession, main_frame_id: str) -> None:
        self.cdp = cdp
        self.main_frame_id = main_frame_id
        self.requested = False
        self.stopped = asyncio.Event()
        cdp.on("Page.frameRequestedNavigation", self._on_requested)
        cdp.on("Page.frameStoppedLoading", self._on_stopped)

    def _on_requested(self, params: dict[str, Any]) -> None:
        main = params.get("frameId") == self.main_frame_id
        if main and params.get("disposition", "currentTab") == "currentTab":
            self.requested = True

    def _on_stopped(self, params: dict[str, Any]) -> None:
        if params.get("frameId") == self.main_frame_id:
            self.stopped.set()

    @contextlib.asynccontextmanager
    async def settling(self, page: Page, timeout: float, what: str) -> AsyncIterator[None]:
        """Around input sent to ``page``: after it, wait (at most ``timeout`` seconds) for a
        main-frame navigation that input requested to commit (or stop without committing),
        as Playwright's click does — so the answer, and the verb after it, see the page the
        input led to, not the one it left. ``what``: the input, for the timeout's message."""
        committed = asyncio.Event()

        def on_navigated(frame: Frame) -> None:
            if frame == page.main_frame:
                committed.set()

        def on_close(_: Page) -> None:
            committed.set()

        self.requested = False
        self.stopped.clear()
        page.on("framenavigated", on_navigated)
        page.on("close", on_close)
        try:
            yield
            # A round trip after the input, as Playwright's: the events it caused are in.
            await self.cdp.send("Page.enable")
            if self.requested and not committed.is_set():
                waits = {
                    asyncio.ensure_future(committed.wait()),
                    asyncio.ensure_future(self.stopped.wait()),
                }
                try:
                    done, _ = await asyncio.wait(
                        waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
                    )
                finally:
                    for w in waits:
                        w.cancel()
                if not done:
                    raise TimeoutError(f"the navigation {what} started did not commit in time")
        finally:
            page.remove_listener("framenavigated", on_navigated)
            page.remove_listener("close", on_close)

    async def click(
        self, page: Page, x: float, y: float, timeout: float, modifiers: int = 0
    ) -> None:
        """Press and release the left button at (x, y) with the held ``modifiers`` (CDP's
        bits: a ``bay keydown Shift`` makes it a shift-click), then :meth:`settling`."""
        event = {
            "x": x,
            "y": y,
            "button": "left",
            "clickCount": 1,
            "pointerType": "mouse",
            "modifiers": modifiers,
        }
        async with self.settling(page, timeout, "the click"):
            # Sent together (the session keeps their order): one wait instead of two.
            await asyncio.gather(
                self.cdp.send("Input.dispatchMouseEvent", {**event, "type": "mousePressed"}),
                self.cdp.send("Input.dispatchMouseEvent", {**event, "type": "mouseReleased"}),
            )


_POINTERS: weakref.WeakKeyDictionary[Page, PagePointer | None] = weakref.WeakKeyDictionary()


async def pointer_of(page: Page) -> PagePointer | None:
    """The page's :class:`PagePointer`, made on first use; None where CDP is not available
    (not Chromium), remembered so that the next click does not ask again."""
    if page in _POINTERS:
        return _POINTERS[page]
    pointer: PagePointer | None = None
    try:
        cdp = await page.context.new_cdp_session(page)
        await cdp.send("Page.enable")
        tree = await cdp.send("Page.getFrameTree")
        pointer = PagePointer(cdp, str(tree["frameTree"]["frame"]["id"]))
    except Exception:
        pointer = None
    if page.is_closed():
        return None
    _POINTERS[page] = pointer

    def forget(closed: Page) -> None:
        _POINTERS.pop(closed, None)

    page.once("close", forget)
    return pointer


#: Handles kept per page (the refs clicked more than once there, most recent last), and
#: refs remembered as clicked once.
MAX_HANDLES = 32
MAX_SEEN = 1024


class RefHandles:
    """The elements of the refs clicked again on one page, kept as main-world handles.

    A ref's lookup is most of a fast click: Playwright resolves ``aria-ref=`` in its utility
    world, adopts the node into the page's world and only then evaluates (~5 CDP calls). A
    ref clicked a second time on the page (a "next" button, a toggle, a stepper) is looked
    up once more and its handle kept: from then on the readiness check is one
    ``Runtime.callFunctionOn`` on it. What the check guarantees does not change: it runs on
    the element, now. A ref names one element of one document, so the handle is that
    element: after a navigation its evaluate fails, a detached element is not ready — either
    way the handle is dropped and the click looks the ref up again (and takes Playwright's
    careful path when it is not ready). Only refs are kept: a CSS selector or a text may
    match another element at the next click."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.handles: dict[str, ElementHandle] = {}

    async def ready_point(
        self, page: Page, selector: str, ref: bool
    ) -> tuple[float, float] | Literal[Gone.STALE] | None:
        handle = self.handles.pop(selector, None)
        if handle is not None:
            point = await _check(handle.evaluate(CLICK_READY_JS))
            if point is not None:
                self.handles[selector] = handle  # most recently used last
                return point
            await _dispose(handle)
        if (
            ref
            and selector not in self.seen
            and selector.startswith("aria-ref=")
            and (">>" not in selector)
        ):
            # A ref's first click on the page is looked at where Playwright keeps its refs
            # (one CDP message); a second one takes a handle below, kept for the third on.
            # Without the engine (a context made before it), as below.
            looked = await _look(page, selector)
            if looked == STALE:
                return STALE
            if not isinstance(looked, bool):
                if len(self.seen) >= MAX_SEEN:
                    self.seen.clear()
                self.seen.add(selector)
                return looked
        if not ref or selector not in self.seen:  # the lookup and the check in one trip
            if ref:
                if len(self.seen) >= MAX_SEEN:
                    self.seen.clear()
                self.seen.add(selector)
            return await _check(page.eval_on_selector(selector, CLICK_READY_JS))
        try:
            handle = await page.query_selector(selector)
        except Exception:
            handle = None
        if handle is None:
            return None
        point = await _check(handle.evaluate(CLICK_READY_JS))
        if point is None:
            await _dispose(handle)
            return None
        self.handles[selector] = handle
        while len(self.handles) > MAX_HANDLES:
            await _dispose(self.handles.pop(next(iter(self.handles))))
        return point


def or_gone(scope: Page | Frame, selector: str) -> Locator:
    """The first element of ``selector`` (a ref), else :data:`GONE`'s: found at once."""
    return scope.locator(selector).or_(scope.locator(GONE)).first


async def _look(
    page: Page, selector: str
) -> tuple[float, float] | Literal[False, Gone.STALE] | None:
    """The ref's readiness from the utility world (:data:`READY_ENGINE_JS`) and the page's
    jQuery timers, asked at once: the point, None (not ready, busy, in a frame), STALE (the
    ref matches nothing), or False when the look itself could not be had (no such engine in
    this context, the text not its JSON): the caller asks the main world instead."""
    look = or_gone(page, f"{selector} >> {READY_ENGINE}=:point").text_content(timeout=READY_LOOK_MS)
    texts = await asyncio.gather(look, page.evaluate(JQUERY_BUSY_JS), return_exceptions=True)
    text, busy = texts
    if isinstance(text, BaseException):
        # A page too busy to answer in READY_LOOK_MS, or a context without the engine.
        if gone_frame(text):
            return STALE
        return None if type(text).__name__ == "TimeoutError" else False
    if text == GONE_TEXT:
        return STALE
    try:
        point = json.loads(text or "")
    except ValueError:
        return False
    if busy is not False:  # a jQuery animation runs (or the page could not say): not now
        return None
    if isinstance(point, list) and len(point) == 2:
        return float(point[0]), float(point[1])
    return None


async def fill_ready(page: Page, selector: str, step: str = ":fill") -> bool | Literal[Gone.STALE]:
    """An ``aria-ref`` text field selected and focused for the keyboard's text, in one CDP
    message (:data:`FILL_BODY`, in the utility world, as Playwright's fill; ``step``
    ``:focus``: :data:`FOCUS_BODY`, as Playwright's type); STALE, at once, for a ref that
    matches nothing; False — nothing done, or only the selection — where Playwright's own
    must do it (not such a field, not ready, a context without the engine)."""
    if not selector.startswith("aria-ref=") or ">>" in selector:
        return False
    look = or_gone(page, f"{selector} >> {READY_ENGINE}={step}")
    try:
        text = await look.text_content(timeout=READY_LOOK_MS)
    except Exception as exc:
        return STALE if gone_frame(exc) else False
    return STALE if text == GONE_TEXT else text == "true"


async def _check(evaluation: Awaitable[Any]) -> tuple[float, float] | None:
    try:
        point = await evaluation
    except Exception:
        return None
    if isinstance(point, list) and len(point) == 2:
        return float(point[0]), float(point[1])
    return None


async def _dispose(handle: ElementHandle) -> None:
    with contextlib.suppress(Exception):  # its document may be gone already
        await handle.dispose()


_HANDLES: weakref.WeakKeyDictionary[Page, RefHandles] = weakref.WeakKeyDictionary()


async def ready_point(
    page: Page, selector: str, ref: bool = False
) -> tuple[float, float] | Literal[Gone.STALE] | None:
    """The click point of the first element ``selector`` matches when it is ready for the
    pointer now, in the main frame; None otherwise (not there yet, covered, in a frame…);
    STALE, at once, for a ref's first look on the page when the ref matches nothing.
    ``ref``: the selector is a snapshot's ref (one element of one document, never another):
    clicked again on the page, it is checked on its kept handle (:class:`RefHandles`)."""
    handles = _HANDLES.get(page)
    if handles is None:
        handles = _HANDLES[page] = RefHandles()
    return await handles.ready_point(page, selector, ref)


async def click_fast(
    page: Page, point: tuple[float, float], timeout: float, modifiers: int = 0
) -> bool:
    """Click at ``point`` through the page's CDP session; False when there is none."""
    pointer = await pointer_of(page)
    if pointer is None:
        return False
    await pointer.click(page, point[0], point[1], timeout, modifiers)
    return True
