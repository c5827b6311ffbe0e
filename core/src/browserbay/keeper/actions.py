"""``bay_before_action``: the last word before a verb acts on the page.

Every verb that presses, types into, drops onto or sets an element asks the hook first, with
what it will act on, whatever way the agent reached it (:data:`GATED`):

- ``target`` — the element the agent named (``click @e3``, ``fill``, ``select``, ``upload``,
  ``download``, ``check``, ``focus``, ``find … <action>``; ``drag`` asks for its source and then
  for its drop): :func:`before_action`, once the element is found;
- ``point`` — the element under the pointer (``mouse move|down|up|wheel``), found with
  ``elementFromPoint`` through open shadow roots and into iframes, same- or cross-origin:
  :func:`before_point`;
- ``focus`` — the element that has the keys (``press``, ``keydown``, ``keyup``, ``keyboard
  type|inserttext``): ``document.activeElement`` through open shadow roots and iframes:
  :func:`before_keys`, with the key or chord (never typed text: that is a length in
  ``call.args``).

The rest of the verbs that change something act on no element (:data:`UNGATED` says why);
``bay_before_verb`` sees them all. Nothing is asked of the page unless a plugin implements the
hook, and an element that cannot be described is never acted on unasked: the verb is refused.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from browserbay.keeper.act import Act
from browserbay.model import ActionTarget, VerbCall
from browserbay.refusals import Refusal
from browserbay.verbs import BY_NAME

if TYPE_CHECKING:
    from playwright.async_api import ElementHandle, Frame, Locator

#: How the gate sees each verb that acts on the page: ``target``, ``point`` or ``focus``
#: (``find`` asks as the verb of its action). ``tests/test_action_gate.py`` checks that every
#: verb that changes something is here or in :data:`UNGATED`.
GATED: Mapping[str, str] = {
    "click": "target",
    "dblclick": "target",
    "drag": "target",
    "focus": "target",
    "fill": "target",
    "type": "target",
    "select": "target",
    "upload": "target",
    "download": "target",
    "check": "target",
    "uncheck": "target",
    "find": "target",
    "mouse": "point",
    "press": "focus",
    "keydown": "focus",
    "keyup": "focus",
    "keyboard": "focus",
}

#: The verbs that change something but act on no element of the page, and why the element
#: gate does not see them (``bay_before_verb`` does, with their arguments as hooks see them).
UNGATED: Mapping[str, str] = {
    "open": "a navigation: bay_before_verb sees its url, the domain fence judges it",
    "back": "a navigation of the tab's history",
    "forward": "a navigation of the tab's history",
    "reload": "a navigation of the tab's own address",
    "login-check": "a navigation to a url, then a reading of where it settled",
    "eval": "the agent's own script, which may click anything: a policy that gates clicks "
    "refuses eval (and wait --fn, a script too) in bay_before_verb (it sees the source's "
    "length, never the source)",
    "set": "the session's emulation (viewport, geolocation, headers…), no element",
    "cookies": "the session's cookie jar, no element",
    "storage": "the origin's storage, no element",
    "state": "the session's cookies and storage from or to a file, no element",
    "recording": "the owner's opt-in of a profile's continuous recording: a setting, no "
    "element (owner-only on a session socket)",
    "dialog": "answers the tab's open dialog (accept, dismiss), no element",
    "hints": "the keeper's notes on a host, no page",
}

#: The verbs whose element the agent names (the ``target`` rows).
ACTION_VERBS = frozenset(v for v, how in GATED.items() if how == "target")

#: Role, accessible name (the common cases of the accname algorithm), text and a selector hint
#: of an element.
DESCRIBE_JS = """(el) => {
  const clean = (s) => (s || '').replace(/\\s+/g, ' ').trim().slice(0, 200);
  const doc = el.ownerDocument;
  const tag = el.tagName.toLowerCase();
  const type = (el.getAttribute('type') || '').toLowerCase();
  const field = tag === 'input' || tag === 'select' || tag === 'textarea';
  const labelled = (el.getAttribute('aria-labelledby') || '').split(/\\s+/)
    .map((id) => id && doc.getElementById(id)).filter(Boolean)
    .map((e) => e.innerText || e.textContent).join(' ');
  const labels = el.labels ? Array.from(el.labels).map((l) => l.innerText).join(' ') : '';
  const buttonValue = tag === 'input' && ['submit', 'button', 'reset'].includes(type)
    ? (el.value || '') : '';
  const page = el === doc.body || el === doc.documentElement;
  const name = page ? '' : (el.getAttribute('aria-label') || labelled || labels || buttonValue
    || el.getAttribute('alt') || el.getAttribute('title')
    || (field ? el.getAttribute('placeholder') : el.innerText));
  const inputs = {checkbox: 'checkbox', radio: 'radio', submit: 'button', button: 'button',
    reset: 'button', image: 'button', range: 'slider', number: 'spinbutton',
    search: 'searchbox'};
  const tags = {button: 'button', select: 'combobox', textarea: 'textbox', img: 'img',
    option: 'option', a: el.hasAttribute('href') ? 'link' : 'generic'};
  const implied = page ? 'document'
    : tag === 'input' ? (inputs[type] || 'textbox') : (tags[tag] || 'generic');
  const attr = el.getAttribute('name');
  const selector = page ? 'body' : tag + (el.id ? '#' + el.id : '')
    + (attr ? `[name=${attr.slice(0, 60)}]` : '');
  return {role: el.getAttribute('role') || implied, name: clean(name),
          text: page ? '' : clean(el.innerText), selector: selector.slice(0, 200),
          frame: doc.location.href};
}"""

#: The element at a point of the frame, through open shadow roots (an iframe it lands on is
#: entered by the keeper: its document is another frame's).
_AT_POINT_JS = """([x, y]) => {
  let e = document.elementFromPoint(x, y);
  while (e && e.shadowRoot) {
    const inner = e.shadowRoot.elementFromPoint(x, y);
    if (!inner || inner === e) break;
    e = inner;
  }
  return e || document.body || document.documentElement;
}"""
#: The element of the frame that has the keys, through open shadow roots.
_FOCUSED_JS = """() => {
  let e = document.activeElement;
  while (e && e.shadowRoot && e.shadowRoot.activeElement) e = e.shadowRoot.activeElement;
  return e || document.body || document.documentElement;
}"""
#: Where an iframe's document starts in its parent's viewport (its box, inside its border).
_CONTENT_AT_JS = """(f) => { const r = f.getBoundingClientRect();
  return [r.left + f.clientLeft, r.top + f.clientTop]; }"""
#: Iframes inside iframes the keeper enters before it describes what it found there.
_MAX_DEPTH = 8


def _redacted(verb: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """What hooks may see: typed text becomes its length (as for bay_before_verb)."""
    secret = BY_NAME[verb].secret_args if verb in BY_NAME else ()
    return {k: ({"chars": len(str(v))} if k in secret else v) for k, v in args.items()}


def _address(url: str) -> str:
    return url.split("#")[0].split("?")[0]


def gated(act: Act) -> bool:
    """Whether ``act`` asks the gate: a plugin implements it and the verb acts on the page."""
    return act.verb in GATED and act.plugins.hooks.gates_actions()


async def before_action(act: Act, target: str, loc: Locator) -> None:
    """Ask ``bay_before_action`` about the element ``loc`` that ``act`` is about to change;
    raise the first refusal. If the element cannot even be described, nothing is done to
    it (a gate is never skipped because the page was slow to answer)."""
    if act.verb not in ACTION_VERBS or not act.plugins.hooks.gates_actions():
        return
    try:
        # Waits for the element as the action itself would (a selector may match later).
        desc = await loc.evaluate(DESCRIBE_JS, timeout=act.ms_left())
    except Exception as exc:
        try:
            present = await loc.count()
        except Exception:
            present = 0
        if not present:
            raise Refusal("target_not_found", target=target) from None
        raise _unread(act, exc) from None
    await _ask(act, _described(act, target, desc, "target"))


async def before_point(act: Act, x: float, y: float) -> None:
    """Ask the gate about the element at ``(x, y)`` (CSS pixels of the tab's viewport) before
    the pointer acts there: the deepest element, in whichever frame it is."""
    if not gated(act):
        return
    try:
        el = await _at_point(act.page.main_frame, x, y)
        try:
            desc = await el.evaluate(DESCRIBE_JS)
        finally:
            await el.dispose()
    except Exception as exc:
        raise _unread(act, exc) from None
    await _ask(act, _described(act, "", desc, "point", point=(x, y)))


async def before_keys(act: Act, key: str | None) -> None:
    """Ask the gate about the element that has the focus before keys go to it (``key``: the
    key or chord; None for ``keyboard type|inserttext``, whose text the hook never sees)."""
    if not gated(act):
        return
    try:
        el = await _focused(act.page.main_frame)
        try:
            desc = await el.evaluate(DESCRIBE_JS)
        finally:
            await el.dispose()
    except Exception as exc:
        raise _unread(act, exc) from None
    await _ask(act, _described(act, "", desc, "focus", key=key))


async def _at_point(frame: Frame, x: float, y: float) -> ElementHandle:
    for _ in range(_MAX_DEPTH):
        el = await _element(frame, _AT_POINT_JS, [x, y])
        inner = await el.content_frame()
        if inner is None:
            return el
        left, top = await el.evaluate(_CONTENT_AT_JS)
        await el.dispose()
        frame, x, y = inner, x - float(left), y - float(top)
    return await _element(frame, _AT_POINT_JS, [x, y])


async def _focused(frame: Frame) -> ElementHandle:
    for _ in range(_MAX_DEPTH):
        el = await _element(frame, _FOCUSED_JS, None)
        inner = await el.content_frame()
        if inner is None:
            return el
        await el.dispose()
        frame = inner
    return await _element(frame, _FOCUSED_JS, None)


async def _element(frame: Frame, js: str, arg: object) -> ElementHandle:
    handle = await frame.evaluate_handle(js, arg)
    el = handle.as_element()
    if el is None:
        await handle.dispose()
        raise RuntimeError("the frame has no document yet")
    return el


def _unread(act: Act, exc: BaseException) -> Refusal:
    text = str(exc).strip()
    reason = text.splitlines()[0] if text else type(exc).__name__
    return Refusal(
        "action_failed",
        verb=act.verb,
        reason=f"the element could not be read before acting on it: {reason}",
    )


def _described(
    act: Act,
    target: str,
    desc: Mapping[str, Any],
    via: str,
    *,
    point: tuple[float, float] | None = None,
    key: str | None = None,
) -> ActionTarget:
    return ActionTarget(
        target=target,
        tab=act.tab.id,
        role=str(desc.get("role") or ""),
        name=str(desc.get("name") or ""),
        text=str(desc.get("text") or ""),
        via=via,
        selector=str(desc.get("selector") or ""),
        frame=_address(str(desc.get("frame") or "")),
        point=point,
        key=key,
    )


def _what(verb: str, described: ActionTarget) -> str:
    """The action in words for an approval card: ``click button "Buy now"``."""
    name = f' "{described.name}"' if described.name else ""
    thing = f"{described.role}{name}" if described.role or name else described.selector
    key = f" ({described.key})" if described.key else ""
    return f"{verb} {thing or 'the page'}{key}"


async def _ask(act: Act, described: ActionTarget) -> None:
    call = VerbCall(
        act.verb,
        _redacted(act.verb, act.args),
        act.lease.session,
        act.lease.profile,
        act.road,
        act.actor,
    )
    answer = act.plugins.hooks.bay_before_action(call=call, target=described)
    if isinstance(answer, Refusal):
        raise answer.with_defaults(verb=act.verb, plugin="a policy")
    if answer is None:
        return
    if act.approvals is None:  # nobody could approve it here: never taken for a yes
        raise Refusal(
            "verb_refused",
            verb=act.verb,
            plugin=answer.plugin or "a policy",
            reason=answer.reason,
            fix="ask the user to approve it in the live view of a keeper that shows approvals",
        )
    async with act.let_go() if act.let_go is not None else contextlib.nullcontext():
        await act.approvals.ask(
            answer,
            session=act.lease.session.id,
            profile=act.lease.profile.id,
            tab=act.tab.id,
            verb=act.verb,
            what=_what(act.verb, described),
            url=described.frame or _address(act.page.url),
            deadline=act.deadline,
        )
