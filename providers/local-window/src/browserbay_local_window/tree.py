"""An application's accessibility tree as text with ``@eN`` references (as the browser's
snapshot prints them), and the census of what it offers (nodes with actions, with editable
text, unreadable).

Boxes are in the window's own pixels — the same coordinates as its screenshot and as
``bay window click <h> --at X,Y``."""

from __future__ import annotations

import json
from typing import Any

#: States worth printing (the rest are in --json): what an agent acts on.
SHOWN_STATES = (
    "focused",
    "checked",
    "pressed",
    "selected",
    "expanded",
    "collapsed",
    "editable",
    "indeterminate",
    "modal",
    "required",
    "invalid-entry",
    "read-only",
)
#: Actions (nearly) every Chromium node offers; printed only in --json, and not what makes a
#: node interactive for ``-i``.
QUIET_ACTIONS = ("showcontextmenu", "dodefault", "clickancestor")
MAX_NAME = 120


def _quote(text: str) -> str:
    if len(text) > MAX_NAME:
        text = text[:MAX_NAME] + "…"
    return json.dumps(text, ensure_ascii=False)


def interactive(node: dict[str, Any]) -> bool:
    states = node.get("states") or []
    if states and "showing" not in states:
        return False  # hidden (a collapsed menu, Chromium's title-bar buttons)
    acts = [a.lower() for a in node.get("actions") or []]
    useful = [a for a in acts if a not in QUIET_ACTIONS]
    return bool(useful) or "EditableText" in (node.get("ifaces") or []) or "editable" in states


def render_tree(
    nodes: list[dict[str, Any]], origin: tuple[int, int], *, interactive: bool = False
) -> tuple[dict[str, dict[str, Any]], str, dict[str, Any]]:
    """(refs, text, census). ``refs`` maps ``eN`` to what finds the node again (bus, path)
    and what checks it is still the same node (role, name)."""
    ox, oy = origin
    refs: dict[str, dict[str, Any]] = {}
    lines: list[str] = []
    census = {
        "nodes": 0,
        "action": 0,
        "editable_text": 0,
        "text": 0,
        "unreadable": 0,
        "truncated": False,
    }
    for i, node in enumerate(nodes, start=1):
        ref = f"e{i}"
        refs[ref] = {
            "bus": node["bus"],
            "path": node["path"],
            "role": node["role"],
            "name": node["name"],
        }
        census["nodes"] += 1
        ifaces = node.get("ifaces") or []
        if node.get("actions"):
            census["action"] += 1
        if "EditableText" in ifaces:
            census["editable_text"] += 1
        if "Text" in ifaces:
            census["text"] += 1
        if node.get("unreadable"):
            census["unreadable"] += 1
        if node.get("more"):
            census["truncated"] = True
        if node.get("bounds"):
            x, y, w, h = node["bounds"]
            node["box"] = [x - ox, y - oy, w, h]
        else:
            node["box"] = None
        if interactive and not _interactive(node) and not node.get("unreadable"):
            continue
        lines.append(_line(node, ref, flat=interactive))
    return refs, "\n".join(lines), census


_interactive = interactive


def _line(node: dict[str, Any], ref: str, *, flat: bool) -> str:
    indent = "" if flat else "  " * int(node["d"])
    if node.get("unreadable") and node["role"] == "unreadable subtree":
        return f"{indent}- unreadable subtree @{ref}: {node['unreadable']}"
    parts = [f"{indent}- {node['role']}"]
    if node.get("name"):
        parts.append(_quote(node["name"]))
    parts.append(f"@{ref}")
    states = [s for s in node.get("states") or [] if s in SHOWN_STATES]
    if node.get("states") and "enabled" not in node["states"] and "sensitive" not in node["states"]:
        states.append("disabled")
    if states:
        parts.append("[" + ", ".join(states) + "]")
    acts = [a for a in node.get("actions") or [] if a.lower() not in QUIET_ACTIONS]
    if acts:
        parts.append("actions=" + ",".join(acts))
    if node.get("value") is not None:
        parts.append("value=" + _quote(node["value"]))
    if node.get("box"):
        parts.append("box=" + ",".join(str(v) for v in node["box"]))
    if node.get("more"):
        parts.append(f"(+{node['more']} children not walked: node budget)")
    if node.get("unreadable"):
        parts.append(f"(unreadable: {node['unreadable']})")
    return " ".join(parts)
