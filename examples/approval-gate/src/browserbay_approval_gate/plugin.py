"""An integrator's plugin: an approval gate for purchases, and a JSONL audit sink.

The gate (``bay_before_action``) asks a human before pressing an element whose accessible
name or visible text contains a gated word — "Buy", "Purchase", "Place order", "Pay now" by
default — unless a human approved the session beforehand: it answers
:class:`~browserbay.model.Ask`, the verb waits while the live view shows a card with Approve
and Deny, and the agent gets the click's answer or ``approval_denied`` (``approval_timeout``
when nobody answers). With ``BAY_GATE_MODE=refuse`` it refuses instead (``verb_refused``).
It sees the element the keeper actually found, so an ``@eN`` reference, ``#buy`` and ``text=Buy
now`` are all gated alike, and ``click`` means every way to press it: a click or a double
click, ``mouse down``/``up`` at its point, ``press``, ``keydown``, ``keyup`` or ``keyboard
type`` while it has the focus (Enter and Space press a button), ``check``/``uncheck``.
Nothing is done to the page until a human said yes.

The audit sink (``bay_after_verb``) appends one JSON line per verb: when, which session and
profile, the verb, its arguments as hooks see them (typed text is only ever a length), the
outcome and the time it took; the gate adds a line per decision.

Configuration (read at each call, so a test or an operator can change it without a restart):

- ``BAY_GATE_WORDS``: comma-separated words or phrases to gate (case-insensitive, whole
  words); default ``Buy,Purchase,Place order,Pay now``.
- ``BAY_GATE_VERBS``: comma-separated verbs the gate applies to; default ``click`` (which
  stands for every pressing verb, :data:`PRESSING`).
- ``BAY_GATE_APPROVALS``: a file of approved session ids, one a line: those sessions pass
  the gate (a human adds a line to approve).
- ``BAY_GATE_MODE``: ``ask`` (default: a human approves or denies each gated press in the
  live view) or ``refuse`` (refused ``verb_refused``; a human approves through the file).
- ``BAY_GATE_ASK_TIMEOUT``: seconds an asked press waits for the human (default 120; the
  verb's own ``--timeout`` bounds it too).
- ``BAY_AUDIT_FILE``: the JSONL file the audit sink appends to; unset: no audit.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from typing import Any

from browserbay.hookspecs import hookimpl
from browserbay.model import ASK_TIMEOUT, ActionTarget, Ask, VerbCall, VerbOutcome
from browserbay.refusals import Refusal

PLUGIN = "approval-gate"
DEFAULT_WORDS = "Buy,Purchase,Place order,Pay now"
#: The verbs that can press an element (``click`` in ``BAY_GATE_VERBS`` stands for them all).
PRESSING = (
    "click",
    "dblclick",
    "check",
    "uncheck",
    "mouse",
    "press",
    "keydown",
    "keyup",
    "keyboard",
)
log = logging.getLogger("browserbay.approval_gate")


def _list(var: str, default: str) -> list[str]:
    return [w.strip() for w in os.environ.get(var, default).split(",") if w.strip()]


def gated_word(*texts: str) -> str | None:
    """The first gated word found in any of ``texts`` (whole words, any case), or None."""
    for word in _list("BAY_GATE_WORDS", DEFAULT_WORDS):
        pattern = re.compile(rf"(?<!\w){re.escape(word)}(?!\w)", re.IGNORECASE)
        if any(pattern.search(t) for t in texts):
            return word
    return None


def approved(session: str) -> bool:
    path = os.environ.get("BAY_GATE_APPROVALS")
    if not path:
        return False
    try:
        with open(path, encoding="utf-8") as f:
            return session in {line.strip() for line in f}
    except OSError:
        return False


def audit(row: dict[str, Any]) -> None:
    """Append one line to ``BAY_AUDIT_FILE``. Never raises: an audit sink must not take a
    verb (or the keeper) down; a failure is logged to the keeper log."""
    path = os.environ.get("BAY_AUDIT_FILE")
    if not path:
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            f.write(json.dumps({"at": round(time.time(), 3), **row}, default=str) + "\n")
    except OSError:
        log.exception("the audit sink could not write %s", path)


def gated_verb(call: VerbCall) -> bool:
    """Whether the gate applies to ``call``: its verb is configured (``click`` stands for
    :data:`PRESSING`); a ``mouse move`` or ``wheel`` presses nothing."""
    verbs = set(_list("BAY_GATE_VERBS", "click"))
    if "click" in verbs:
        verbs.update(PRESSING)
    if call.verb == "mouse" and call.args.get("action") in ("move", "wheel"):
        return False
    return call.verb in verbs


def ask_timeout() -> float:
    try:
        return max(1.0, float(os.environ.get("BAY_GATE_ASK_TIMEOUT", ASK_TIMEOUT)))
    except ValueError:
        return ASK_TIMEOUT


@hookimpl
def bay_before_action(call: VerbCall, target: ActionTarget) -> Refusal | Ask | None:
    if not gated_verb(call):
        return None
    word = gated_word(target.name, target.text)
    if word is None:
        return None
    what = f'the {target.role} "{target.name or target.text}"'
    if target.via == "focus":
        what += " (it has the focus)"
    elif target.via == "point" and target.point is not None:
        what += f" (at {target.point[0]:g}, {target.point[1]:g})"

    asking = os.environ.get("BAY_GATE_MODE", "ask") != "refuse"
    decision = "approved" if approved(call.session.id) else "asked" if asking else "refused"
    audit(
        {
            "event": "gate",
            "decision": decision,
            "session": call.session.id,
            "profile": call.profile.id if call.profile else None,
            "verb": call.verb,
            "target": {
                "ref": target.target,
                "via": target.via,
                "role": target.role,
                "name": target.name,
                "frame": target.frame,
            },
            "word": word,
        }
    )
    if decision == "approved":
        return None
    reason = f'{call.verb} on {what} needs a human\'s approval ("{word}" is gated)'
    if asking:
        return Ask(reason, plugin=PLUGIN, timeout=ask_timeout())
    return Refusal(
        "verb_refused",
        plugin=PLUGIN,
        reason=reason,
        fix="stop and ask the user: they approve by adding your session id to the approvals "
        "file, or do it themselves; do not look for another way to press it",
        target=target.target,
        role=target.role,
        name=target.name,
    )


@hookimpl
def bay_after_verb(call: VerbCall, outcome: VerbOutcome) -> None:
    audit(
        {
            "event": "verb",
            "session": call.session.id,
            "profile": call.profile.id if call.profile else None,
            "verb": call.verb,
            "args": dict(call.args),  # typed text arrives as {"chars": N}, never the text
            "ok": outcome.ok,
            "code": outcome.code,
            "ms": round(outcome.elapsed_ms, 1),
        }
    )
