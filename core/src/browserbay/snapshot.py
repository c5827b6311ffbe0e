"""Make Playwright's AI-mode ARIA snapshot compact without losing a single reference.

Playwright (``aria_snapshot(mode="ai")``) gives a YAML tree whose nodes carry ``[ref=eN]``
references that stay stable for the same element across snapshots of one document. Most of
its size is unnamed ``generic`` wrappers; those are dropped (their children move up a level)
unless they hold text of their own. Interactive elements always keep their references.
"""

from __future__ import annotations

import re

INTERACTIVE_ROLES = frozenset(
    {
        "button",
        "link",
        "textbox",
        "searchbox",
        "checkbox",
        "radio",
        "combobox",
        "listbox",
        "option",
        "menuitem",
        "menuitemcheckbox",
        "menuitemradio",
        "tab",
        "switch",
        "slider",
        "spinbutton",
        "treeitem",
    }
)

#: Structure an agent reads but never acts on: no reference is shown for these (Playwright
#: still resolves one if an agent has it from elsewhere).
NO_REF_ROLES = frozenset({"list", "listitem", "paragraph", "blockquote", "strong", "emphasis"})

_LINE = re.compile(r"^(?P<indent>\s*)- (?P<body>.*)$")
_ROLE = re.compile(r"^(?P<role>[a-z]+)\b")
_REF = re.compile(r"\[ref=(?P<ref>[a-z0-9]+)\]")
_NOISE = re.compile(r" \[cursor=pointer\]| \[active\]")


def _parse(text: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for raw in text.splitlines():
        m = _LINE.match(raw)
        if m is None:
            # A continuation line (multi-line text): attach to the previous node.
            if out:
                depth, body = out[-1]
                out[-1] = (depth, body + " " + raw.strip())
            continue
        out.append((len(m.group("indent")) // 2, _unquote(m.group("body"))))
    return out


def _unquote(body: str) -> str:
    """A node line YAML had to single-quote (its name holds control characters or other
    characters YAML cannot leave bare): ``'button "B \\u001b…" [ref=e4]'`` (``:`` after it
    when it has children) reads as the node it is, not as text."""
    colon = body.endswith("':")
    inner = body[:-1] if colon else body
    if len(inner) < 2 or inner[0] != "'" or inner[-1] != "'":
        return body
    return inner[1:-1].replace("''", "'") + (":" if colon else "")


def _is_wrapper(body: str) -> bool:
    """An unnamed generic container: ``generic [ref=e5]:`` with nothing else."""
    m = _ROLE.match(body)
    if m is None or m.group("role") not in ("generic", "group", "none", "presentation"):
        return False
    rest = _NOISE.sub("", _REF.sub("", body[m.end() :])).strip()
    return rest in ("", ":")


_NAME = re.compile(r'^[a-z]+ "(?P<name>(?:[^"\\]|\\.)*)"')
_TEXT = re.compile(r"^text: (?P<text>.*)$")


def refs_in(text: str) -> list[str]:
    return _REF.findall(text)


def main_frame_prefix(raw: str) -> str:
    """The frame prefix Playwright gives the main frame's refs (``f1`` in ``[ref=f1e5]``
    after a navigation; empty before). The first ref of a snapshot is the main frame's root."""
    m = re.search(r"\[ref=(f\d+)?e\d+\]", raw)
    return (m.group(1) or "") if m else ""


def strip_prefix(raw: str, prefix: str) -> str:
    """Show the main frame's refs as plain ``eN``: shorter, and what agents expect.
    Refs of other frames keep their prefix."""
    if not prefix:
        return raw
    return raw.replace(f"[ref={prefix}e", "[ref=e")


def _drop_echoes(nodes: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Drop a ``text:`` node that only repeats a neighbour's accessible name (a label)."""
    out = []
    for i, (d, body) in enumerate(nodes):
        t = _TEXT.match(body)
        if t:
            names = []
            for j in (i - 1, i + 1):
                if 0 <= j < len(nodes) and nodes[j][0] == d:
                    n = _NAME.match(nodes[j][1])
                    if n:
                        names.append(n.group("name"))
            if t.group("text").strip() in names:
                continue
        out.append((d, body))
    return out


def compact(text: str, *, interactive: bool = False, depth: int | None = None) -> str:
    """The snapshot an agent reads. ``interactive``: a flat list of what can be acted on."""
    nodes = _drop_echoes(_parse(text))
    lines: list[str] = []
    if interactive:
        for _, body in nodes:
            m = _ROLE.match(body)
            if m and m.group("role") in INTERACTIVE_ROLES and _REF.search(body):
                lines.append("- " + _NOISE.sub("", body).rstrip(":"))
        return "\n".join(lines)
    # Drop wrappers: every descendant of a dropped node moves up one level.
    stack: list[tuple[int, int]] = []  # (original depth, levels removed at/above it)
    for d, body in nodes:
        while stack and stack[-1][0] >= d:
            stack.pop()
        removed = stack[-1][1] if stack else 0
        if _is_wrapper(body):
            stack.append((d, removed + 1))
            continue
        stack.append((d, removed))
        level = d - removed
        if depth is not None and level >= depth:
            continue
        body = _NOISE.sub("", body)
        if body.startswith("/url: ") and lines and _LINK_PARENT.match(lines[-1]):
            # A link's target goes on the link's own line: `- link "Docs" [ref=e8] → /docs`.
            url = body[len("/url: ") :].strip()
            if len(url) > 1 and url[0] == url[-1] == '"':
                url = url[1:-1]
            lines[-1] = lines[-1].rstrip(":") + " → " + url + ":"
            continue
        role = _ROLE.match(body)
        if role and role.group("role") in NO_REF_ROLES:
            body = _REF.sub("", body).replace("  ", " ").replace(" :", ":")
        lines.append("  " * level + "- " + body)
    # A line that kept its ':' but lost its children (merged or cut by depth) drops it.
    for i, line in enumerate(lines):
        if line.endswith(":"):
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            if _indent(nxt) <= _indent(line):
                lines[i] = line[:-1]
    return "\n".join(lines)


_LINK_PARENT = re.compile(r"^\s*- link\b.*:$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" ")) if line else -1
