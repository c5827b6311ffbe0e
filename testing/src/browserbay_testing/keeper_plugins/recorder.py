"""A test plugin, loaded into the keeper with BAY_PLUGIN_MODULES=recorder: it records every
lifecycle hook to $BAY_RECORDER_FILE, and acts as a policy when told to:

- BAY_TEST_REFUSE_VERB=<verb>  its bay_before_verb refuses that verb (code verb_refused);
- BAY_TEST_REFUSE_FILE=<path>  ... and the verbs named in that file, one a line, while it
                               exists (a test turns the veto on and off on a running keeper);
- BAY_TEST_ASK_VERB=<verb>     its bay_before_verb asks a human to approve that verb (an Ask
                               of BAY_TEST_ASK_TIMEOUT seconds, default 30);
- BAY_TEST_CRASH_VERB=<verb>   its bay_before_verb raises (the keeper answers internal_error);
- BAY_TEST_CRASH_AFTER=<verb>  its bay_after_verb raises (logged and skipped).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, is_dataclass
from typing import Any

from browserbay.hookspecs import hookimpl
from browserbay.model import (
    ActionTarget,
    Ask,
    BrowserInfo,
    KeeperInfo,
    LeaseInfo,
    VerbCall,
    VerbOutcome,
)
from browserbay.refusals import Refusal


def _record(hook: str, **fields: Any) -> None:
    path = os.environ.get("BAY_RECORDER_FILE")
    if not path:
        return
    row: dict[str, Any] = {"hook": hook}
    for k, v in fields.items():
        row[k] = asdict(v) if is_dataclass(v) and not isinstance(v, type) else v
    with open(path, "a") as f:
        f.write(json.dumps(row, default=str) + "\n")


def _vetoed() -> set[str]:
    path = os.environ.get("BAY_TEST_REFUSE_FILE")
    try:
        return set(open(path).read().split()) if path else set()
    except FileNotFoundError:
        return set()


@hookimpl
def bay_before_verb(call: VerbCall) -> Refusal | Ask | None:
    _record("bay_before_verb", call=call)
    if os.environ.get("BAY_TEST_CRASH_VERB") == call.verb:
        raise RuntimeError("the recorder plugin crashes on purpose")
    if os.environ.get("BAY_TEST_ASK_VERB") == call.verb:
        timeout = float(os.environ.get("BAY_TEST_ASK_TIMEOUT") or 30)
        return Ask(f"{call.verb} needs a human's approval", plugin="recorder", timeout=timeout)
    if os.environ.get("BAY_TEST_REFUSE_VERB") == call.verb or call.verb in _vetoed():
        return Refusal(
            "verb_refused",
            plugin="recorder",
            reason=f"{call.verb} needs a human's approval",
            fix="ask the user to approve it, then retry",
        )
    return None


@hookimpl
def bay_before_action(call: VerbCall, target: ActionTarget) -> Refusal | None:
    _record("bay_before_action", call=call, target=target)
    return None


@hookimpl
def bay_after_verb(call: VerbCall, outcome: VerbOutcome) -> None:
    _record("bay_after_verb", call=call, outcome=outcome)
    if os.environ.get("BAY_TEST_CRASH_AFTER") == call.verb:
        raise RuntimeError("the recorder's after-verb hook crashes on purpose")


@hookimpl
def bay_keeper_started(keeper: KeeperInfo) -> None:
    _record("bay_keeper_started", keeper=keeper)


@hookimpl
def bay_keeper_stopping() -> None:
    _record("bay_keeper_stopping")


@hookimpl
def bay_browser_started(browser: BrowserInfo) -> None:
    _record("bay_browser_started", browser=browser)


@hookimpl
def bay_browser_stopped(browser: BrowserInfo, reason: str) -> None:
    _record("bay_browser_stopped", browser=browser, reason=reason)


@hookimpl
def bay_lease_changed(lease: LeaseInfo, change: str) -> None:
    _record("bay_lease_changed", lease=lease, change=change)


@hookimpl
def bay_takeover(lease: LeaseInfo, viewer: str) -> None:
    _record("bay_takeover", lease=lease, viewer=viewer)


@hookimpl
def bay_handback(lease: LeaseInfo, viewer: str) -> None:
    _record("bay_handback", lease=lease, viewer=viewer)
