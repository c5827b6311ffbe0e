"""What a snapshot shows, as a pipeline: parse Playwright's tree, judge what can be acted on,
render what the agent reads.

Playwright (``aria_snapshot(mode="ai", boxes=True)``) gives a YAML tree whose nodes carry
``[ref=eN]`` references that stay stable for the same element across snapshots of one
document. :func:`parse` reads that YAML properly (a node line YAML had to quote — a name
holding ``" #"`` or ``": "`` — is the node it is, not text) into typed :class:`Node` trees.
:func:`judge` adds what the ARIA tree does not say: elements the page made clickable,
editable or focusable without a role (``cursor: pointer``, ``onclick``, ``contenteditable``,
``tabindex``), found in the DOM by the keeper (:class:`Found`) — a node Playwright has
gets the marker, an element it merged into its parent's text becomes a node of its own with
its own ref (``cN``). :func:`render` writes the tree (unnamed wrappers dropped, link targets
on the link's line) or the interactive list, in pages of lines; :func:`delta` compares
two snapshots of one document by ref. What the agent reads shows a ref as it is typed in a
command, ``@e5`` (agent-browser's and Playwright's ``[ref=e5]`` are six characters more on
every line, and the agent has to rewrite them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

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
#: still resolves one if an agent has it from elsewhere), unless the page made one clickable.
NO_REF_ROLES = frozenset({"list", "listitem", "paragraph", "blockquote", "strong", "emphasis"})

_WRAPPERS = frozenset({"generic", "group", "none", "presentation"})

#: Landmarks the interactive list keeps, by their own name only (what they hold is listed
#: under them). ``main`` is left out: it holds everything else, and indenting a whole page
#: one level deeper tells nothing.
LANDMARKS = frozenset({"navigation", "search", "banner", "contentinfo", "complementary", "region"})

#: A data table's cells: what a row says about the control in it ("Ada", "unpaid", then its
#: "Pay" button). Listed when they read something besides the controls in them.
CELLS = frozenset({"cell", "gridcell", "columnheader", "rowheader"})

#: Nodes the interactive list keeps for what they tell about the nodes under them (which
#: section a link is in, which links are navigation, which row a button is in), each with
#: its ref (an agent can ``scrollintoview``, ``get text`` or ``snapshot -s`` it), what is
#: listed under them one indent deeper: headings, landmarks and cells.
CONTEXT_ROLES = frozenset({"heading"}) | LANDMARKS | CELLS

#: How an element without an interactive role was judged actionable (the DOM said so).
KINDS = ("clickable", "editable", "focusable")

_ATTR = re.compile(r" \[(?P<attr>[^\]]*)\]")
_ROLE = re.compile(r"[a-zA-Z]+")
_FRAME = re.compile(r"f\d+")
_DECODE = json.JSONDecoder().raw_decode
_QUOTE = json.JSONEncoder(ensure_ascii=False).encode
_NAME_CLIP = 80


@dataclass(frozen=True)
class Box:
    """An element's border box in its frame's viewport, CSS pixels (getBoundingClientRect)."""

    x: int
    y: int
    width: int
    height: int

    def contains(self, other: Box) -> bool:
        return (
            self.x <= other.x
            and self.y <= other.y
            and other.x + other.width <= self.x + self.width
            and other.y + other.height <= self.y + self.height
        )

    def shifted(self, dx: int, dy: int) -> Box:
        return Box(self.x + dx, self.y + dy, self.width, self.height)


@dataclass
class Node:
    """One node of the tree: an element (``role``), or a run of text (``role == "text"``)."""

    role: str
    name: str = ""
    ref: str | None = None
    attrs: list[str] = field(default_factory=list)
    """Playwright's state markers other than the ref: ``level=2``, ``checked``, ``active``…"""
    pointer: bool = False
    """Playwright saw ``cursor: pointer`` on it (the outermost such element)."""
    box: Box | None = None
    text: str | None = None
    """Its text, when that is all it holds (``- paragraph: some text``)."""
    props: dict[str, str] = field(default_factory=dict)
    """``url`` of a link, ``placeholder`` of a field."""
    children: list[Node] = field(default_factory=list)
    kind: str | None = None
    """``clickable``, ``editable`` or ``focusable``: judged from the DOM (see :func:`judge`)."""

    def walk(self) -> Iterator[Node]:
        """It and every node under it, in the tree's order (a stack, not nested generators:
        a long page's tree is walked several times a snapshot)."""
        stack = [self]
        while stack:
            n = stack.pop()
            yield n
            stack.extend(reversed(n.children))

    def own_text(self) -> str:
        """Its name, or else what it reads on the page: the text it holds and the names of
        the nodes in it (a link around ``<code>while</code>`` reads "while", a heading
        around a link reads whole). A generic element shows what it reads on the page when
        it holds text (its name is often a long ``title``)."""
        if self.name and not (self.role == "generic" and self.text):
            return self.name
        if self.role in LANDMARKS:
            return ""
        # What an actionable node holds that is listed on its own is not its name.
        return _clip(_content(self, top=True, skip=self.actionable))

    @property
    def actionable(self) -> bool:
        return self.ref is not None and (self.role in INTERACTIVE_ROLES or self.kind is not None)

    def only_wraps_actions(self) -> bool:
        """Judged clickable or focusable from the DOM, and all it holds is nodes that can be
        acted on themselves (a clickable ``li`` around a ``menuitem``, a focusable menu of
        them): the inner nodes are the targets, and listing the wrapper repeats them. A
        wrapper with text or a name of its own besides them (an inbox row around its star
        button) is a target of its own."""
        if self.kind not in ("clickable", "focusable") or self.role in INTERACTIVE_ROLES:
            return False
        if self.text or not any(c.actionable for c in self.walk() if c is not self):
            return False
        inner = " ".join(c.own_text() for c in self._actions_in())
        return (not self.name or self.name == inner) and not _loose(self)

    def _actions_in(self) -> Iterator[Node]:
        for c in self.children:
            if c.actionable:
                yield c
            else:
                yield from c._actions_in()


def _content(n: Node, *, top: bool = False, skip: bool = False) -> str:
    if not top and skip and n.actionable:
        return ""
    if n.text is not None:
        return n.text.strip()
    if n.name and not top:
        return n.name
    return " ".join(p for p in (_content(c, skip=skip) for c in n.children) if p)


def _loose(n: Node) -> bool:
    """Whether ``n`` holds text or named nodes outside the actionable nodes in it."""
    for c in n.children:
        if c.actionable:
            continue
        if (c.text or "").strip() or (c.name and c.role not in _WRAPPERS) or _loose(c):
            return True
    return False


def _clip(text: str) -> str:
    return text if len(text) <= _NAME_CLIP else text[: _NAME_CLIP - 1] + "…"


# -- parse ------------------------------------------------------------------------------


class SnapshotSyntaxError(ValueError):
    """A line of Playwright's snapshot that is not the YAML it writes."""


def _single_quoted(s: str, i: int) -> tuple[str, int]:
    """A YAML single-quoted scalar starting at ``s[i] == "'"``: its value and the index
    after its closing quote (``''`` is one quote)."""
    out: list[str] = []
    j = i + 1
    while j < len(s):
        c = s[j]
        if c == "'":
            if j + 1 < len(s) and s[j + 1] == "'":
                out.append("'")
                j += 2
                continue
            return "".join(out), j + 1
        out.append(c)
        j += 1
    raise SnapshotSyntaxError(f"unterminated quote: {s[:80]!r}")


_ESCAPES = {"\\": "\\", '"': '"', "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "/": "/"}


def _double_quoted(s: str, i: int) -> tuple[str, int]:
    """A YAML double-quoted scalar as Playwright writes values (``\\xNN``, ``\\n``, …)."""
    out: list[str] = []
    j = i + 1
    while j < len(s):
        c = s[j]
        if c == '"':
            return "".join(out), j + 1
        if c == "\\" and j + 1 < len(s):
            e = s[j + 1]
            if e in _ESCAPES:
                out.append(_ESCAPES[e])
                j += 2
                continue
            width = {"x": 2, "u": 4, "U": 8}.get(e)
            if width is not None:
                try:
                    out.append(chr(int(s[j + 2 : j + 2 + width], 16)))
                except ValueError:
                    raise SnapshotSyntaxError(f"bad escape: {s[:80]!r}") from None
                j += 2 + width
                continue
        out.append(c)
        j += 1
    raise SnapshotSyntaxError(f"unterminated quote: {s[:80]!r}")


def _scalar(s: str) -> str:
    s = s.strip()
    if s.startswith('"'):
        return _double_quoted(s, 0)[0]
    if s.startswith("'"):
        return _single_quoted(s, 0)[0]
    return s


def _split_entry(body: str) -> tuple[str, str | None, bool]:
    """``key``, ``key: value`` or ``key:`` (children follow): the key (unquoted), the value
    (unquoted) or None, and whether children follow."""
    if body.startswith("'") or body.startswith('"'):
        key, j = (_single_quoted if body[0] == "'" else _double_quoted)(body, 0)
        rest = body[j:]
        if rest == "":
            return key, None, False
        if rest == ":":
            return key, None, True
        if rest.startswith(": "):
            return key, _scalar(rest[2:]), False
        raise SnapshotSyntaxError(f"unexpected text after a quoted key: {body[:80]!r}")
    # A bare key holds no ': ' and ends in no ':' (Playwright quotes it otherwise).
    k = body.find(": ")
    if k >= 0:
        return body[:k], _scalar(body[k + 2 :]), False
    if body.endswith(":"):
        return body[:-1], None, True
    return body, None, False


def _node_of_key(key: str) -> Node:
    """``role "name" [attr] [ref=e5] [cursor=pointer] [box=x,y,w,h]`` (the name in JSON)."""
    m = _ROLE.match(key)
    if m is None:
        raise SnapshotSyntaxError(f"no role: {key[:80]!r}")
    node = Node(role=m.group(0))
    i = m.end()
    if key.startswith(' "', i):
        try:
            name, end = _DECODE(key, i + 1)
        except ValueError:
            raise SnapshotSyntaxError(f"bad name: {key[:80]!r}") from None
        node.name = str(name)
        i = end
    for a in _ATTR.finditer(key, i):
        attr = a.group("attr")
        if attr.startswith("ref="):
            node.ref = attr[4:]
        elif attr == "cursor=pointer":
            node.pointer = True
        elif attr.startswith("box="):
            x, y, w, h = map(int, attr[4:].split(","))
            node.box = Box(x, y, w, h)
        else:
            node.attrs.append(attr)
    return node


def parse(raw: str) -> list[Node]:
    """Playwright's AI-mode snapshot as a forest of :class:`Node` (no text is lost: a line
    that is no ``- entry`` continues the previous one)."""
    roots: list[Node] = []
    stack: list[tuple[int, Node]] = []
    last: Node | None = None
    for line in raw.splitlines():
        stripped = line.lstrip(" ")
        if not stripped.startswith("- "):
            if last is not None and stripped and last.text is not None:
                last.text += " " + stripped.strip()
            continue
        depth = (len(line) - len(stripped)) // 2
        key, value, _ = _split_entry(stripped[2:])
        while stack and stack[-1][0] >= depth:
            stack.pop()
        parent = stack[-1][1] if stack else None
        if key.startswith("/"):
            if parent is not None:
                parent.props[key[1:]] = value or ""
            continue
        if key == "text":
            node = Node(role="text", text=value or "")
        else:
            node = _node_of_key(key)
            node.text = value
            if node.pointer and node.ref is not None and node.role not in INTERACTIVE_ROLES:
                node.kind = "clickable"  # Playwright saw the pointer: the page means a click
        (parent.children if parent is not None else roots).append(node)
        stack.append((depth, node))
        last = node
    return roots


# -- judge ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Found:
    """An element the DOM says can be acted on although its role may not: from the keeper's
    walk of one frame (open shadow roots included)."""

    ref: str
    """Its own ref (``cN``, with the frame's prefix): used when no node of the tree is it."""
    kind: str
    box: Box
    text: str
    frame: str = ""
    """The ref prefix of the frame it is in (``""``: the snapshotted frame)."""


def frame_of(ref: str) -> str:
    m = _FRAME.match(ref)
    return m.group(0) if m else ""


def judge(roots: list[Node], found: list[Found]) -> None:
    """Mark the nodes the DOM says are actionable, and give an element the tree merged into
    its parent's text a node of its own, under the smallest node of its frame that holds
    it. A node with an interactive role needs no marker; nor does one inside a link."""
    nodes = [n for r in roots for n in r.walk() if n.ref is not None and n.box is not None]
    by_box: dict[tuple[str, Box], list[Node]] = {}
    for n in nodes:
        by_box.setdefault((frame_of(n.ref or ""), n.box or Box(0, 0, 0, 0)), []).append(n)
    for f in found:
        same = by_box.get((f.frame, f.box))
        if same:
            target = same[-1]  # the innermost node with that box
            if target.role not in INTERACTIVE_ROLES:
                target.kind = f.kind
            continue
        holders = [
            n
            for n in nodes
            if frame_of(n.ref or "") == f.frame and n.box is not None and n.box.contains(f.box)
        ]
        node = Node(role="generic", name=_clip(f.text), ref=f.ref, box=f.box, kind=f.kind)
        if holders:
            parent = min(holders, key=lambda n: (n.box.width * n.box.height) if n.box else 0)
            if parent.role == "link":
                continue
            if parent.text is not None:  # its text becomes a child, so the new node fits in
                parent.children.insert(0, Node(role="text", text=parent.text))
                parent.text = None
            parent.children.append(node)
        else:
            roots.append(node)


# -- render -----------------------------------------------------------------------------


def _text(s: str) -> str:
    """Text on one line: a line break shows as ``\\n``. Other control characters stay as
    they are in the data; the answer's text escapes them (browserbay.render)."""
    return s.replace("\r", "\\r").replace("\n", "\\n")


def _is_wrapper(n: Node) -> bool:
    return n.role in _WRAPPERS and not n.name and n.text is None and n.kind is None and not n.props


def _key(n: Node, *, show_ref: bool, name: str | None = None) -> str:
    parts = [n.role]
    name = n.name if name is None else name
    if name:
        parts.append(_QUOTE(name))
    parts += [f"[{a}]" for a in n.attrs if a != "active"]
    if show_ref and n.ref is not None:
        parts.append("@" + n.ref)
    if n.kind is not None and show_ref:
        parts.append(n.kind)
    return _text(" ".join(parts))


@dataclass(frozen=True)
class Line:
    text: str
    ref: str | None = None
    """The ref the line shows (None: none)."""


def _echo(n: Node, siblings: list[Node], i: int) -> bool:
    """A ``text:`` node that only repeats a neighbour's accessible name (a label)."""
    if n.role != "text" or n.text is None:
        return False
    t = n.text.strip()
    for j in (i - 1, i + 1):
        if 0 <= j < len(siblings) and siblings[j].role != "text" and siblings[j].name == t:
            return True
    return False


def tree_lines(roots: list[Node], depth: int | None = None) -> list[Line]:
    """The tree an agent reads: wrappers dropped (their children move up), link targets on
    the link's line, refs only where something can be done with them."""
    out: list[Line] = []

    def visit(siblings: list[Node], level: int) -> None:
        for i, n in enumerate(siblings):
            if _echo(n, siblings, i):
                continue
            if _is_wrapper(n):
                visit(n.children, level)
                continue
            if depth is not None and level >= depth:
                continue
            pad = "  " * level
            if n.role == "text":
                out.append(Line(f"{pad}- text: {_text(n.text or '')}"))
                continue
            show_ref = n.role not in NO_REF_ROLES or n.kind is not None
            line = pad + "- " + _key(n, show_ref=show_ref)
            url = n.props.get("url")
            if n.role == "link" and url:
                line += " → " + _text(url)
            if n.text is not None:
                line += ": " + _text(n.text)
            start = len(out)
            out.append(Line(line, n.ref if show_ref else None))
            visit(n.children, level + 1)
            if len(out) > start + 1:
                out[start] = Line(out[start].text + ":", out[start].ref)

    visit(roots, 0)
    return out


def _listed(roots: list[Node], depth: int | None) -> list[tuple[int, Node]]:
    """The interactive list's nodes with their indent: what can be acted on (less the
    wrappers that only repeat what they hold), and the :data:`CONTEXT_ROLES` nodes with what
    is listed under them one indent deeper; ``depth`` counts levels as the tree shows them
    (wrappers do not count)."""
    out: list[tuple[int, Node]] = []

    def visit(nodes: list[Node], level: int, indent: int) -> None:
        for n in nodes:
            if _is_wrapper(n):
                visit(n.children, level, indent)
                continue
            if depth is not None and level >= depth:
                continue
            if n.ref is not None and n.role in CONTEXT_ROLES and not n.actionable:
                if n.role in CELLS and not (n.text or n.name or _loose(n)):
                    visit(n.children, level + 1, indent)  # empty, or only its controls
                    continue
                out.append((indent, n))
                visit(n.children, level + 1, indent + 1)
                continue
            if n.actionable and not n.only_wraps_actions():
                out.append((indent, n))
            visit(n.children, level + 1, indent)

    visit(roots, 0, 0)
    return out


def interactive_nodes(roots: list[Node], depth: int | None = None) -> list[Node]:
    """What can be acted on, in the tree's order (the interactive list without its
    headings and landmarks)."""
    return [n for _, n in _listed(roots, depth) if n.actionable]


def flat_lines(roots: list[Node], depth: int | None = None) -> list[Line]:
    """The interactive list: one line per node that can be acted on, named by its content
    when it has no name of its own (a link around ``<code>while</code>`` reads "while"),
    under the headings and landmarks it is in (one indent deeper). A line is its node,
    ``button "Save" @e5``: no YAML ``- `` before it (a list, not a tree to parse; the two
    characters were a seventh of a long page's list)."""
    listed = _listed(roots, depth)
    out = []
    for i, (indent, n) in enumerate(listed):
        name = n.own_text()
        line = "  " * indent + _key(n, show_ref=True, name=name)
        if n.text and n.text != name:  # a field's value
            line += ": " + _text(n.text)
        if n.role in CONTEXT_ROLES and i + 1 < len(listed) and listed[i + 1][0] > indent:
            line += ":"
        out.append(Line(line, n.ref))
    return out


@dataclass(frozen=True)
class Page:
    """One page of a bounded snapshot."""

    text: str
    number: int
    lines: int
    """Lines in the whole snapshot."""
    left: int
    """Lines after this page."""
    refs_left: int
    """Refs on the lines after this page."""
    refs: int
    """Refs on this page."""
    pages: int
    """Pages the whole snapshot makes."""


def _indent(line: Line) -> int:
    return len(line.text) - len(line.text.lstrip(" "))


def _page_ends(lines: list[Line], limit: int) -> list[int]:
    """Where each page ends: at most ``limit`` lines, cut in the last tenth of them before
    the least indented line there, so that a page does not end between a list item's link
    and its button (the next page starts at a node, not inside one). The latest such line
    wins; the interactive list (all at one indent) pages at exactly ``limit``."""
    ends: list[int] = []
    start = 0
    slack = limit // 10
    while start < len(lines):
        end = start + limit
        if end < len(lines) and slack:
            window = range(end - slack, end + 1)
            end = min(window, key=lambda i: (_indent(lines[i]), -i))
        ends.append(min(end, len(lines)))
        start = ends[-1]
    return ends


def paginate(lines: list[Line], *, limit: int | None, page: int = 1) -> Page:
    """Page ``page`` (from 1) of at most ``limit`` lines (None or 0: all of it)."""
    if not limit:
        limit = max(len(lines), 1)
    page = max(page, 1)
    ends = _page_ends(lines, limit)
    start = ends[page - 2] if 1 < page <= len(ends) + 1 else (0 if page == 1 else len(lines))
    stop = ends[page - 1] if page <= len(ends) else len(lines)
    shown = lines[start:stop]
    after = lines[stop:]
    return Page(
        text="\n".join(x.text for x in shown),
        number=page,
        lines=len(lines),
        left=len(after),
        refs_left=sum(1 for x in after if x.ref),
        refs=sum(1 for x in shown if x.ref),
        pages=max(len(ends), 1),
    )


def compact(text: str, *, interactive: bool = False, depth: int | None = None) -> str:
    """The snapshot an agent reads, from Playwright's text alone (no DOM judgement)."""
    roots = parse(text)
    lines = flat_lines(roots) if interactive else tree_lines(roots, depth)
    return "\n".join(x.text for x in lines)


# -- delta ------------------------------------------------------------------------------


def signatures(roots: list[Node]) -> dict[str, str]:
    """Each ref's own line (name, state, text): what :func:`delta` compares."""
    out: dict[str, str] = {}
    for r in roots:
        for n in r.walk():
            if n.ref is None:
                continue
            line = _key(n, show_ref=True, name=n.own_text())
            if n.text is not None:
                line += ": " + _text(n.text)
            out[n.ref] = line
    return out


@dataclass(frozen=True)
class Delta:
    """Each part: ref -> its line (the line after the change; a removed ref's line before)."""

    added: dict[str, str]
    removed: dict[str, str]
    changed: dict[str, str]

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed)

    def lines(self) -> list[Line]:
        out = [Line("+ " + s, r) for r, s in self.added.items()]
        out += [Line("~ " + s, r) for r, s in self.changed.items()]
        out += [Line("- " + s) for s in self.removed.values()]
        return out


def delta(before: dict[str, str], after: dict[str, str]) -> Delta:
    return Delta(
        added={r: after[r] for r in after if r not in before},
        removed={r: before[r] for r in before if r not in after},
        changed={r: after[r] for r in after if r in before and before[r] != after[r]},
    )


# -- refs -------------------------------------------------------------------------------


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
