"""The CDP census: every method of the censused Chromium's own ``/json/protocol`` in ONE table
(``census.tsv`` beside this module), each with ONE class. The session-scoped endpoint judges
every call by its row; a method with no row (a newer Chromium's) is forwarded while the agent
drives and refused by name while a human does — the gap is visible, never a hole.

Classes (what happens while a human holds the controls of the lease):

============== ================================================================================
input          refused ``browser_interrupted``: keys, pointer, touch, drag, text, files, focus
view           refused ``browser_interrupted``: which tab, navigation, history, dialogs, the
               viewport and emulation, a frozen page (pauses, breakpoints), overlays, casting
page-mutation  refused ``browser_interrupted``: script evaluation, DOM/CSS/storage/cookie
               writes, request interception, init scripts, bindings
read           answered: screenshots, the DOM and AX trees, layout, cookies read, tracing
session        answered, under the ``Target.*`` scoping rules (a lease sees only its targets)
harmless       answered: enable/disable, acks, releases
refused        refused ``method_refused`` on every lease: the whole browser (close, crash),
               escapes out of the scoping (browser targets, raw messages, DevTools), the
               deaf-page switch, desktop mirroring, extensions, browser-wide settings
============== ================================================================================

Each row also has ONE rule (its parameters; the same whatever session the call arrives on):

======= =======================================================================================
-       nothing more (on the browser session itself only ``Target.*`` scoping calls answer)
url     its ``url`` passes the scheme rule of ``bay open`` and is not the browser's own
        DevTools port (:mod:`browserbay_cdp.policy`)
files   every path is a file inside the lease's upload directory (links resolved, no ``..``)
context a ``browserContextId`` must be the lease's (one is filled in on the browser session);
        answered on the browser session
browser answered on the browser session too: it reaches nothing but the lease's own
local    answered ``{}`` here on every session, never forwarded (downloads are the keeper's)
======= =======================================================================================

A ``refused`` row's rule is ``-``.

A new Chromium: start it with ``--remote-debugging-port=9222`` and run ``python -m
browserbay_cdp.census http://127.0.0.1:9222`` (it prints every method with no row), class each
in ``census.tsv``, bump the ``# censused:`` line.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

CLASSES: tuple[str, ...] = (
    "input",
    "view",
    "page-mutation",
    "read",
    "session",
    "harmless",
    "refused",
)
#: Refused ``browser_interrupted`` while a human holds the controls.
FENCED = frozenset({"input", "view", "page-mutation"})
RULES: tuple[str, ...] = ("-", "url", "files", "context", "browser", "local")
#: Rules under which a call is answered on the browser session itself.
ON_BROWSER = frozenset({"context", "browser", "local"})
TABLE = "census.tsv"


@dataclass(frozen=True)
class Census:
    rows: Mapping[str, str]
    chrome: str
    """The Chromium whose protocol was censused (``Chrome/156.0.8078.114``)."""
    rules: Mapping[str, str]

    def klass(self, method: str) -> str | None:
        return self.rows.get(method)

    def rule(self, method: str) -> str:
        """The method's parameter rule (``-`` for a method with no row)."""
        return self.rules.get(method, "-")

    def compare(self, methods: Iterable[str]) -> tuple[list[str], list[str]]:
        """``(missing, stale)``: methods of a protocol with no row, rows it does not list."""
        listed = set(methods)
        return sorted(listed - set(self.rows)), sorted(set(self.rows) - listed)


def parse(text: str) -> Census:
    rows: dict[str, str] = {}
    rules: dict[str, str] = {}
    chrome = "unknown"
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line.startswith("# censused:"):
            chrome = line.split(":", 1)[1].strip()
        if not line or line.startswith("#"):
            continue
        method, klass, rule = [*line.split("\t"), "", ""][:3]
        if klass not in CLASSES or rule not in RULES or "." not in method:
            raise ValueError(
                f"{TABLE} line {n}: {raw!r} is not '<Domain.method>\\t<class>\\t<rule>'"
            )
        if klass == "refused" and rule != "-":
            raise ValueError(f"{TABLE} line {n}: a refused method has no rule")
        if method in rows:
            raise ValueError(f"{TABLE} line {n}: {method} has two rows")
        rows[method] = klass
        rules[method] = rule
    return Census(rows, chrome, rules)


@cache
def load() -> Census:
    """The shipped table."""
    return parse(resources.files(__package__).joinpath(TABLE).read_text(encoding="utf-8"))


def protocol_methods(protocol: Mapping[str, Any]) -> list[str]:
    """``Domain.method`` for every command of a ``/json/protocol`` document."""
    return [
        f"{d['domain']}.{c['name']}"
        for d in protocol.get("domains", [])
        for c in d.get("commands", [])
    ]


def main(argv: list[str]) -> int:
    """``python -m browserbay_cdp.census http://127.0.0.1:9222``: compare a running browser's
    protocol with the table; prints each method that has no row (exit 1 if any)."""
    import urllib.request

    base = argv[0] if argv else "http://127.0.0.1:9222"
    with urllib.request.urlopen(base.rstrip("/") + "/json/protocol", timeout=10) as r:  # noqa: S310
        methods = protocol_methods(json.loads(r.read()))
    missing, stale = load().compare(methods)
    for m in missing:
        print(f"{m}\t(no row)")
    for m in stale:
        print(f"{m}\t(row, but this browser does not list it)", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
