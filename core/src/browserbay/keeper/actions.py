"""``bay_before_action``: the last word before a verb changes the page through an element.

The page verbs call :func:`before_action` once they have found the element and before they
touch it. Nothing is asked of the page unless a plugin implements the hook.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from browserbay.keeper.act import Act
from browserbay.model import ActionTarget, VerbCall
from browserbay.refusals import Refusal
from browserbay.verbs import BY_NAME

if TYPE_CHECKING:
    from playwright.async_api import Locator

#: The verbs that change the page through one element (mutating, with a ``target``).
ACTION_VERBS = frozenset(
    v.name for v in BY_NAME.values() if v.mutates and any(a.name == "target" for a in v.args)
)

#: Role, accessible name (the common cases of the accname algorithm) and text of an element.
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
  const name = el.getAttribute('aria-label') || labelled || labels || buttonValue
    || el.getAttribute('alt') || el.getAttribute('title')
    || (field ? el.getAttribute('placeholder') : el.innerText);
  const inputs = {checkbox: 'checkbox', radio: 'radio', submit: 'button', button: 'button',
    reset: 'button', image: 'button', range: 'slider', number: 'spinbutton',
    search: 'searchbox'};
  const tags = {button: 'button', select: 'combobox', textarea: 'textbox', img: 'img',
    option: 'option', a: el.hasAttribute('href') ? 'link' : 'generic'};
  const implied = tag === 'input' ? (inputs[type] || 'textbox') : (tags[tag] || 'generic');
  return {role: el.getAttribute('role') || implied, name: clean(name),
          text: clean(el.innerText)};
}"""


def _redacted(verb: str, args: dict[str, Any]) -> dict[str, Any]:
    """What hooks may see: typed text becomes its length (as for bay_before_verb)."""
    secret = BY_NAME[verb].secret_args if verb in BY_NAME else ()
    return {k: ({"chars": len(str(v))} if k in secret else v) for k, v in args.items()}


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
        text = str(exc).strip()
        reason = text.splitlines()[0] if text else type(exc).__name__
        raise Refusal(
            "action_failed",
            verb=act.verb,
            reason=f"the element could not be read before acting on it: {reason}",
        ) from None
    described = ActionTarget(
        target=target,
        tab=act.tab.id,
        role=str(desc.get("role") or ""),
        name=str(desc.get("name") or ""),
        text=str(desc.get("text") or ""),
    )
    call = VerbCall(act.verb, _redacted(act.verb, act.args), act.lease.session, act.lease.profile)
    refusal = act.plugins.hooks.bay_before_action(call=call, target=described)
    if refusal is not None:
        raise refusal.with_defaults(verb=act.verb, plugin="a policy")
