"""``bay wait``: until an element is in a state, some milliseconds pass, text appears, the
URL matches a glob, the page reaches a load state, or a JavaScript condition holds. Elements,
text and conditions are looked for where the tab acts (``bay frame``: inside that frame); the
URL and the load state are the tab's.

Each condition is waited for with the browser's own primitive, bounded by the verb's deadline
less a moment kept back (:func:`_spare`) to look at the page once more when the condition never
held: the refusal (``wait_timeout``) then says what the wait was still waiting for and what the
page showed last — "the tab is at /login", "#spinner is visible" — not only that time ran out.
Nothing is changed on the page by any of them.
"""

from __future__ import annotations

import fnmatch
import json
import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import anyio

from browserbay.keeper.act import Act
from browserbay.keeper.frames import bare_url
from browserbay.keeper.pageverbs import Answer, first_line, locate, page_verb, selector_of
from browserbay.refusals import Refusal

if TYPE_CHECKING:
    from playwright.async_api import Locator, Request

#: How often a condition the page cannot signal is looked at (milliseconds).
POLL_MS = 100
#: The most of the page's text, or of a condition's value, a refusal quotes (characters).
QUOTE = 120

#: Is the text in the page's visible text?
_TEXT_JS = "(t) => !!document.body && document.body.innerText.includes(t)"
_BODY_JS = "() => document.body ? document.body.innerText : ''"
_READY_JS = "() => document.readyState"

ElementState = Literal["visible", "hidden", "attached", "detached"]
LoadState = Literal["load", "domcontentloaded", "networkidle"]
#: The verb table's choices, as Playwright's types name them.
STATES: dict[str, ElementState] = {
    "visible": "visible",
    "hidden": "hidden",
    "attached": "attached",
    "detached": "detached",
}
LOADS: dict[str, LoadState] = {
    "load": "load",
    "domcontentloaded": "domcontentloaded",
    "networkidle": "networkidle",
}


@dataclass(frozen=True)
class Unmet:
    """A condition that never held: what the wait was for, what the page showed last, and
    fields for machines (``url``, ``state``...)."""

    waiting: str
    seen: str
    fields: dict[str, Any]


def _spare(act: Act) -> float:
    """Seconds kept back from the deadline to look at the page once the wait ran out."""
    left = act.deadline - time.monotonic()
    return max(0.1, min(1.0, left / 5))


def _wait_ms(act: Act) -> float:
    """Playwright's timeout for the wait itself (the spare kept back)."""
    return max(50.0, (act.deadline - time.monotonic() - _spare(act)) * 1000)


def _timed_out(exc: BaseException) -> bool:
    return type(exc).__name__ == "TimeoutError"


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    return json.dumps(flat if len(flat) <= QUOTE else flat[:QUOTE] + "…", ensure_ascii=False)


async def _look(act: Act, js: str, arg: Any = None) -> Any:
    """One evaluation in the page (the frame the tab acts in) within the spare time; None
    when it did not answer."""
    with anyio.move_on_after(max(0.05, act.deadline - time.monotonic() - 0.1)):
        try:
            return await act.scope.evaluate(js, arg)
        except Exception:
            return None
    return None


def _refuse(act: Act, started: float, unmet: Unmet) -> Refusal:
    waited = round(time.monotonic() - started, 1)
    longer = max(10, math.ceil(waited) * 2)
    return Refusal(
        "wait_timeout",
        timeout=waited,
        longer=longer,
        waiting=unmet.waiting,
        seen=unmet.seen,
        **unmet.fields,
    )


# -- the conditions ---------------------------------------------------------------------


async def _element(act: Act, target: str, state: ElementState, started: float) -> Answer:
    gone = state in ("hidden", "detached")
    if gone:  # an element already gone is what was asked: no lookup that refuses it
        selector = selector_of(act, target)
        loc: Locator = act.scope.locator(selector or target).first
    else:
        loc = await locate(act, target)
    try:
        await loc.wait_for(state=state, timeout=_wait_ms(act))
    except Exception as exc:
        if not _timed_out(exc):
            raise Refusal("action_failed", verb="wait", reason=first_line(exc)) from None
        now = await _element_state(act, loc)
        if now == "absent" and not gone:
            raise Refusal("target_not_found", target=target) from None
        raise _refuse(
            act,
            started,
            Unmet(f"{target} to be {state}", f"it is {now}", {"target": target, "state": now}),
        ) from None
    return {"waited": target, "state": state, "url": act.page.url}, state


async def _element_state(act: Act, loc: Locator) -> str:
    unknown = "unknown (the page did not answer)"
    with anyio.move_on_after(max(0.05, act.deadline - time.monotonic() - 0.1)):
        try:
            if not await loc.count():
                return "absent"
            return "visible" if await loc.is_visible() else "hidden (attached, not visible)"
        except Exception:
            return unknown
    return unknown


async def _text(act: Act, text: str, started: float) -> Answer:
    try:
        await act.scope.wait_for_function(
            _TEXT_JS, arg=text, polling=POLL_MS, timeout=_wait_ms(act)
        )
    except Exception as exc:
        if not _timed_out(exc):
            raise Refusal("action_failed", verb="wait", reason=first_line(exc)) from None
        body = await _look(act, _BODY_JS)
        shown = f"the page's text begins {_quote(str(body))}" if body else "the page shows no text"
        raise _refuse(
            act,
            started,
            Unmet(
                f"the text {_quote(text)}",
                f"{shown} ({act.page.url})",
                {"text": text, "url": act.page.url},
            ),
        ) from None
    return {"waited": "text", "text": text, "url": act.page.url}, f"text {_quote(text)} is there"


async def _url(act: Act, glob: str, started: float) -> Answer:
    """Polled: a script's ``history.pushState`` changes the URL without an event Playwright
    waits on in every case, and the glob is the keeper's own (``*`` is any characters, as
    in ``login-check``), not a page's."""
    end = act.deadline - _spare(act)
    while not fnmatch.fnmatchcase(act.page.url, glob):
        if time.monotonic() >= end:
            seen = act.page.url
            raise _refuse(
                act,
                started,
                Unmet(f"the URL to match {glob}", f"the tab is at {seen}", {"url": seen}),
            )
        await anyio.sleep(POLL_MS / 1000)
    return {"waited": "url", "glob": glob, "url": act.page.url}, act.page.url


async def _load(act: Act, state: LoadState, started: float) -> Answer:
    inflight: dict[Request, str] = {}

    def began(request: Request) -> None:
        inflight[request] = bare_url(request.url)

    def ended(request: Request) -> None:
        inflight.pop(request, None)

    page = act.page
    page.on("request", began)
    page.on("requestfinished", ended)
    page.on("requestfailed", ended)
    try:
        await page.wait_for_load_state(state, timeout=_wait_ms(act))
    except Exception as exc:
        if not _timed_out(exc):
            raise Refusal("action_failed", verb="wait", reason=first_line(exc)) from None
        ready = await _look(act, _READY_JS)
        seen = f"document.readyState is {ready!r} at {page.url}"
        if state == "networkidle" and inflight:
            urls = sorted(set(inflight.values()))
            seen += f"; {len(inflight)} requests in flight: {', '.join(urls[:3])}"
        raise _refuse(
            act,
            started,
            Unmet(f"the {state} state", seen, {"url": page.url, "ready_state": str(ready)}),
        ) from None
    finally:
        page.remove_listener("request", began)
        page.remove_listener("requestfinished", ended)
        page.remove_listener("requestfailed", ended)
    return {"waited": state, "url": page.url}, "loaded" if state == "load" else state


async def _fn(act: Act, js: str, started: float) -> Answer:
    """The expression is never echoed (it is a secret argument, like ``eval``'s): the
    refusal names it by its length and quotes its last value."""
    try:
        await act.scope.wait_for_function(js, polling=POLL_MS, timeout=_wait_ms(act))
    except Exception as exc:
        if not _timed_out(exc):
            raise Refusal("action_failed", verb="wait", reason=first_line(exc)) from None
        try:
            last = json.dumps(await _look(act, js), ensure_ascii=False)
        except (TypeError, ValueError):
            last = "(not JSON)"
        raise _refuse(
            act,
            started,
            Unmet(
                f"a JavaScript condition ({len(js)} characters) to become truthy",
                f"its last value was {_quote(last)} ({act.page.url})",
                {"url": act.page.url},
            ),
        ) from None
    return {"waited": "fn", "url": act.page.url}, "the condition holds"


@page_verb("wait")
async def verb_wait(act: Act) -> Answer:
    started = time.monotonic()
    what = act.args.get("what")
    state = act.args.get("state")
    given = [k for k in ("what", "text", "url", "load", "fn") if act.args.get(k) is not None]
    if len(given) != 1:
        raise Refusal(
            "usage",
            detail="wait needs exactly one of: @eN or a selector, milliseconds, --text, --url, "
            "--load, --fn" + (f" (got {', '.join(given)})" if given else ""),
            verb="wait",
        )
    if state is not None and (what is None or str(what).isdigit()):
        raise Refusal(
            "usage", detail="wait --state needs a target (@eN or a selector)", verb="wait"
        )
    if act.args.get("text") is not None:
        return await _text(act, str(act.args["text"]), started)
    if act.args.get("url") is not None:
        return await _url(act, str(act.args["url"]), started)
    if act.args.get("load") is not None:
        return await _load(act, LOADS[str(act.args["load"])], started)
    if act.args.get("fn") is not None:
        return await _fn(act, str(act.args["fn"]), started)
    text = str(what)
    if text.isdigit():
        await act.page.wait_for_timeout(int(text))
        return {"waited": int(text)}, f"waited {text} ms"
    return await _element(act, text, STATES[str(state or "visible")], started)
