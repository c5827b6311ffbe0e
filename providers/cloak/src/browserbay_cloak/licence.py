"""Licence failures of the CloakBrowser binary, classified into named refusals.

The Pro binary reports a licence denial by its exit code only ("the binary emits only the
number, no diagnostic strings, by design": ``cloakbrowser/license.py``, 0.6.4):

=====  ============================================  ======================
code   the vendor's meaning                          refusal
=====  ============================================  ======================
76     session limit reached for the plan            ``backend_seat_taken``
77     licence key invalid, expired or missing       ``backend_key_invalid``
78     licence server unreachable                    ``backend_unavailable``
79     ``~/.cloakbrowser`` not writable / bad route  ``backend_unavailable``
=====  ============================================  ======================

A denial before the CDP handshake reaches us in Playwright's launch error as ``<process did
exit: exitCode=N, signal=null>``; one after it is written by the binary (as a JSON integer)
to the file named by ``CLOAKBROWSER_LICENSE_STATUS_FILE``. Anything else is not a licence
failure and is never labelled as one.

What the free tier says when its one seat is held *on another machine* has not been
measured: until it is, ``backend_seat_taken`` is given only for exit code 76.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from browserbay.refusals import Refusal

SEAT_LIMIT, KEY_INVALID, SERVER_UNREACHABLE, LOCAL_CONFIG = 76, 77, 78, 79

#: Playwright's record of a child's exit inside a launch error (the wrapper anchors on it too,
#: so an unrelated ``exitCode=`` elsewhere cannot match).
_EXIT = re.compile(r"process did exit:\s*exitCode=(\d+)")

KEY_FIX = "bay keys set cloak license_key   (or bay keys clear cloak for the free tier)"


@dataclass(frozen=True)
class Denial:
    """A licence denial the binary reported."""

    code: int
    where: str
    """``exit`` (the launch error) or ``status-file`` (after the handshake)."""


def exit_code_of(error_text: str) -> int | None:
    match = _EXIT.search(error_text or "")
    return int(match.group(1)) if match else None


_STDERR = re.compile(r"^\s*- \[pid=[^\]]*\]\[err\] (.+)$", re.MULTILINE)


def why_it_failed(error_text: str) -> str:
    """A launch failure in one line: the exit code and the binary's last stderr line, which
    say more than Playwright's first line ("Target page, context or browser has been
    closed")."""
    lines = (error_text or "").strip().splitlines()
    first = lines[0] if lines else "it failed"
    code = exit_code_of(error_text)
    said = _STDERR.findall(error_text or "")
    parts = [f"it exited with code {code}" if code is not None else first]
    if said:
        parts.append(f"its last words: {said[-1].strip()[:200]}")
    return "; ".join(parts)


def read_status_file(path: Path) -> int | None:
    """The code the binary wrote to its status file, or None (absent, unreadable, not an
    integer). The file is removed once read, so a later launch never sees a stale code."""
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    finally:
        path.unlink(missing_ok=True)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def denial(error_text: str, status_file: Path | None = None) -> Denial | None:
    """The licence denial behind a failed launch, or None when it was something else."""
    code = exit_code_of(error_text)
    if code in (SEAT_LIMIT, KEY_INVALID, SERVER_UNREACHABLE, LOCAL_CONFIG):
        return Denial(code, "exit")
    if status_file is not None:
        written = read_status_file(status_file)
        if written in (SEAT_LIMIT, KEY_INVALID, SERVER_UNREACHABLE, LOCAL_CONFIG):
            return Denial(written, "status-file")
    return None


def refusal_for(found: Denial, *, key_source: str, used: int, holders: list[str]) -> Refusal:
    """The named refusal of a denial. ``key_source`` (``user``, ``cluster``, ``none``) decides
    what the seat refusal may claim: a cluster default's seats are shared fleet-wide, so
    this instance cannot name who holds them and "stop one of yours" would be wrong."""
    code = found.code
    if code == SEAT_LIMIT:
        return seat_taken(key_source=key_source, used=used, holders=holders, why="the binary")
    if code == KEY_INVALID:
        return Refusal(
            "backend_key_invalid",
            provider="cloak",
            integration="cloak",
            reason="CloakBrowser refused the licence key: invalid, expired or missing (exit 77)",
            source=key_source,
            exit_code=code,
        )
    reason = (
        "CloakBrowser could not verify its licence: the licence server is unreachable (exit 78)"
        if code == SERVER_UNREACHABLE
        else "CloakBrowser cannot write its local state (~/.cloakbrowser) (exit 79)"
    )
    fix = (
        "check this machine can reach cloakbrowser.dev, then run it again; or bay keys clear "
        "cloak to use the free tier, which does no licence check"
        if code == SERVER_UNREACHABLE
        else "make the browser's HOME writable (bay keeper logs names it), then run it again"
    )
    return Refusal("backend_unavailable", provider="cloak", reason=reason, fix=fix, exit_code=code)


def seat_taken(*, key_source: str, used: int, holders: list[str], why: str) -> Refusal:
    """``backend_seat_taken``, worded by where the key came from: it states only what this
    instance knows."""
    if key_source == "cluster":
        whose = (
            f"the licence is the cluster default: its seats are shared with other users, "
            f"{used} used on this instance"
        )
        fix = "bay keys set cloak license_key   (use your own key), or wait and run it again"
    else:
        listing = ", ".join(holders) if holders else "none on this machine"
        whose = f"your licence's seats are all in use ({used} here: {listing})"
        fix = (
            f"bay keeper status   (then bay close --session <the one holding {holders[0]}>: "
            "that frees its seat), or upgrade the plan"
            if holders
            else "close a CloakBrowser session elsewhere (a crashed one frees its seat within "
            "minutes), or upgrade the plan"
        )
    return Refusal(
        "backend_seat_taken",
        provider="cloak",
        whose=whose,
        said_by=why,
        key_source=key_source,
        used=used,
        holders=holders,
        fix=fix,
    )
