"""The snapshot verb, and the interactive elements of a tab with their refs and boxes.

A snapshot is a pipeline (:mod:`browserbay.snapshot` holds its pure parts):

1. **collect**: Playwright's AI-mode ARIA tree of the tab's scope (every frame in it), with
   boxes, and — per frame — the elements the DOM says can be acted on (``cursor: pointer``,
   ``onclick``, ``contenteditable``, ``tabindex``; open shadow roots included), found by the
   ``bay-ref`` selector engine (:data:`REF_ENGINE_JS`), which also gives each of them a ref
   of its own (``cN``) that stays the element's for the life of its document;
2. **judge** (:func:`browserbay.snapshot.judge`): those elements marked on their nodes, or
   made nodes of their own where the ARIA tree merged them into their parent's text;
3. **render**: the tree or the flat interactive list, one page of lines at a time, or only
   what changed since the tab's last snapshot (``--delta``).

A ``cN`` ref resolves through the same engine (``bay-ref=cN``), inside the frame it was
found in (:func:`browserbay.keeper.pageverbs.selector_of`); an ``eN`` ref through
Playwright's ``aria-ref``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
from dataclasses import dataclass, replace
from typing import Any

from browserbay.keeper.act import Act
from browserbay.keeper.pageverbs import (
    OWN_REF_ENGINE,
    Answer,
    locate,
    mask_passwords,
    page_verb,
    password_values,
    selector_of,
)
from browserbay.keeper.sessions import SnapshotMemory
from browserbay.refusals import Refusal
from browserbay.snapshot import (
    Box,
    Found,
    Line,
    Node,
    delta,
    flat_lines,
    frame_of,
    interactive_nodes,
    judge,
    main_frame_prefix,
    paginate,
    parse,
    strip_prefix,
    tree_lines,
)

REF_ENGINE = OWN_REF_ENGINE

#: The ``bay-ref`` selector engine (main world). ``bay-ref=:collect`` finds the elements of
#: a document that can be acted on without an interactive role, and the values of its
#: password fields, and answers ONE element made for the purpose (in no document) whose text
#: is all of it as JSON: ``{"found": [{ref, kind, text, box}…], "passwords": […]}`` — read
#: with one ``text_content`` (one CDP message; returning the elements and describing them
#: took an ``evaluate_all``'s three: the query, the evaluate on its array, the release). The
#: same object is on the element under ``Symbol.for("browserbay.found")``, read by an
#: ``evaluate_all`` (Playwright's own serializer) in a frame, and where a page's script broke
#: ``JSON.stringify`` (an ``Array.prototype.toJSON``, as old Prototype.js has, or worse).
#: ``bay-ref=cN`` is the element that ref was given to, while it is in the document. Its map
#: lives in the engine's closure: the page cannot rename a ref.
REF_ENGINE_JS = r"""(() => {
  const FOUND = Symbol.for("browserbay.found");
  const byRef = new Map();
  const refOf = new WeakMap();
  let last = 0;
  const NATIVE = "a[href],button,input,select,textarea,option,summary,label,iframe,frame,"
    + "[role=button],[role=link],[role=checkbox],[role=radio],[role=tab],[role=menuitem],"
    + "[role=option],[role=switch],[role=textbox],[role=combobox],[role=treeitem],"
    + "[role=menuitemcheckbox],[role=menuitemradio],[role=slider],[role=spinbutton],"
    + "[role=searchbox],[role=listbox]";
  const parentOf = (el) => el.parentElement
    || (el.parentNode && el.parentNode.host) || null;
  const cursor = (el) => { const s = el && getComputedStyle(el); return s ? s.cursor : ""; };
  function kindOf(el) {
    // Cheapest first: most elements are none of these, and the style is fresh (the ARIA
    // snapshot just computed it).
    if (el.isContentEditable) {
      const p = parentOf(el);
      return p && p.isContentEditable ? null : "editable";
    }
    if (el.hasAttribute("onclick") || typeof el.onclick === "function") return "clickable";
    if (cursor(el) === "pointer") return cursor(parentOf(el)) === "pointer" ? null : "clickable";
    const t = el.getAttribute("tabindex");
    if (t !== null && Number(t) >= 0) return "focusable";
    return null;
  }
  function judge(el) {
    const kind = kindOf(el);
    if (!kind || kind === "editable") return kind;
    // A native control (or an element inside one) has its role: nothing to add.
    const native = el.matches(NATIVE) || (el.parentElement && el.parentElement.closest(NATIVE));
    return native ? null : kind;
  }
  function visible(el, r) {
    if (r.width <= 0 || r.height <= 0) return false;
    if (el.closest("[aria-hidden=true]")) return false;
    return !el.checkVisibility || el.checkVisibility({ visibilityProperty: true });
  }
  function collect(root, out) {
    for (const el of root.querySelectorAll("*")) {
      if (el.shadowRoot) collect(el.shadowRoot, out);
      if (el.tagName === "HTML" || el.tagName === "BODY") continue;
      if (el.localName === "input" && el.type === "password") {
        // Its value is masked in the snapshot: returned with the rest, in this one call.
        if (el.value) out.passwords.push(el.value);
        continue;
      }
      const kind = judge(el);
      if (!kind) continue;
      const r = el.getBoundingClientRect();
      if (!visible(el, r)) continue;
      let ref = refOf.get(el);
      if (!ref) {
        ref = "c" + (++last);
        refOf.set(el, ref);
        byRef.set(ref, new WeakRef(el));
      }
      const label = el.getAttribute("aria-label") || el.getAttribute("title") || "";
      const text = (label || el.innerText || el.textContent || "").replace(/\s+/g, " ").trim();
      out.found.push({
        ref, kind, text: text.slice(0, 100),
        box: [Math.round(r.x), Math.round(r.y), Math.round(r.width), Math.round(r.height)],
      });
    }
    return out;
  }
  return {
    queryAll(root, selector) {
      if (selector === ":collect") {
        const doc = root.ownerDocument || root;
        const got = collect(root.ownerDocument ? root : document, { found: [], passwords: [] });
        const answer = doc.createElement("output");
        answer[FOUND] = got;  // read this way where the text is not the JSON it should be
        try { answer.textContent = JSON.stringify(got); } catch (_) { /* the same */ }
        return [answer];
      }
      const held = byRef.get(selector);
      const el = held && held.deref();
      return el && el.isConnected ? [el] : [];
    },
  };
})()"""

_ENTER = " >> internal:control=enter-frame"


@dataclass(frozen=True)
class Interactive:
    """One element of the tab that can be acted on: its ref, how it reads, and where it is
    (its box in the page's viewport, CSS pixels; None when Playwright gave none)."""

    ref: str
    role: str
    name: str
    kind: str | None
    """``clickable``/``editable``/``focusable`` when judged from the DOM, else None."""
    box: Box | None


@dataclass
class Taken:
    roots: list[Node]
    frames: dict[str, str]
    """Frame prefix -> the selector that enters that frame from the scope."""
    offsets: dict[str, tuple[int, int]]
    """Frame prefix -> where that frame's viewport starts in the scope's."""


@dataclass(frozen=True)
class Collected:
    """One frame's elements found by the ``bay-ref`` engine, and its password values;
    ``read`` False: the frame could not be asked (its passwords are unknown)."""

    found: list[Found]
    passwords: list[str]
    read: bool = True


#: The engine's answer, read from its element by Playwright's serializer.
_FOUND_JS = "els => els.length ? els[0][Symbol.for('browserbay.found')] : null"


async def _found_in(act: Act, path: str, prefix: str) -> Collected:
    """What the engine finds in the scope's document (``path`` empty: one ``text_content``,
    one CDP message; the document is always there) or in the frame ``path`` enters (an
    ``evaluate_all``, which answers at once — nothing — when that frame has gone, where a
    ``text_content`` would wait for it)."""
    loc = act.scope.locator(
        f"{path} >> {REF_ENGINE}=:collect" if path else f"{REF_ENGINE}=:collect"
    )
    got: Any = None
    try:
        if not path:
            with contextlib.suppress(ValueError):
                got = _collected(json.loads(await loc.text_content(timeout=act.ms_left()) or ""))
        if got is None:
            got = _collected(await loc.evaluate_all(_FOUND_JS))
    except Exception:  # a frame going away, or a context without the engine
        got = None
    if got is None:  # its tree alone (and its passwords asked for another way)
        return Collected([], [], read=False)
    found, passwords = got
    return Collected([replace(f, ref=prefix + f.ref, frame=prefix) for f in found], passwords)


def _collected(got: Any) -> tuple[list[Found], list[str]] | None:
    """The engine's answer as found elements and password values; None if it is not one."""
    try:
        found = [
            Found(str(r["ref"]), str(r["kind"]), Box(*(int(v) for v in r["box"])), str(r["text"]))
            for r in got["found"]
        ]
        passwords = [str(v) for v in got["passwords"]]
    except (TypeError, KeyError, ValueError):
        return None
    return found, passwords


def _frames(act: Act, roots: list[Node]) -> tuple[dict[str, str], dict[str, tuple[int, int]]]:
    """Each iframe of the tree: its content's ref prefix, the selector entering it and its
    viewport's offset (the iframe's box, plus its parent frame's offset)."""
    frames: dict[str, str] = {}
    offsets: dict[str, tuple[int, int]] = {"": (0, 0)}

    def visit(nodes: list[Node]) -> None:
        for n in nodes:
            if n.role == "iframe" and n.ref is not None:
                inner = next((c.ref for c in n.walk() if c is not n and c.ref), None)
                prefix = frame_of(inner or "")
                if prefix and prefix not in frames:
                    frames[prefix] = f"aria-ref={_raw_ref(act, n.ref)}{_ENTER}"
                    ox, oy = offsets.get(frame_of(n.ref), (0, 0))
                    box = n.box or Box(0, 0, 0, 0)
                    offsets[prefix] = (ox + box.x, oy + box.y)
            visit(n.children)

    visit(roots)
    return frames, offsets


def _raw_ref(act: Act, ref: str) -> str:
    return act.tab.ref_prefix + ref if ref.startswith("e") else ref


async def _aria(act: Act, boxes: bool) -> str:
    if act.scope is act.page:
        return await act.page.aria_snapshot(mode="ai", boxes=boxes, timeout=act.ms_left())
    return await act.scope.locator("body").aria_snapshot(
        mode="ai", boxes=boxes, timeout=act.ms_left()
    )


def _parse(act: Act, raw: str, passwords: list[str]) -> list[Node]:
    raw = mask_passwords(raw, passwords)
    act.tab.ref_prefix = main_frame_prefix(raw)
    return parse(strip_prefix(raw, act.tab.ref_prefix))


async def take(act: Act, *, boxes: bool = False) -> Taken:
    """Collect and judge the scope's snapshot; the tab remembers its frames (for ``cN``
    refs). The ``bay-ref`` walk (with the password values) and Playwright's tree are asked
    for at once: one round trip's wait, not two. Playwright's boxes (a fifth more time on a
    long page) are taken when ``boxes`` asks or judging needs them — something found in the
    DOM to match, or frames; whether the walk finds something is guessed from the tab's last
    snapshot, and a wrong guess asks for the tree again, with boxes."""
    focus = act.tab.focus  # scope is its frame (or the page when None)
    inner = (act.page.main_frame if focus is None else focus.frame).child_frames
    guess = boxes or bool(inner) or act.tab.snapshot_found
    main, raw = await asyncio.gather(_found_in(act, "", ""), _aria(act, guess))
    act.tab.snapshot_found = bool(main.found)
    if main.found and not guess:
        raw = await _aria(act, True)
    collected = [main]
    roots = _parse(act, raw, main.passwords)
    frames, offsets = _frames(act, roots)
    if frames:
        collected += await asyncio.gather(*(_found_in(act, p, x) for x, p in frames.items()))
    shown = {frame_of(n.ref) for r in roots for n in r.walk() if n.ref}
    if not all(c.read for c in collected) or not shown <= {"", *frames}:
        # A frame the walk did not read: its passwords are asked for as before, every frame.
        roots = _parse(act, raw, await password_values(act.page))
        frames, offsets = _frames(act, roots)
    elif len(collected) > 1 and any(c.passwords for c in collected[1:]):
        roots = _parse(act, raw, [v for c in collected for v in c.passwords])
    judge(roots, [f for c in collected for f in c.found])
    act.tab.frame_paths = frames
    return Taken(roots, frames, offsets)


async def interactive_elements(act: Act) -> list[Interactive]:
    """The tab's interactive elements (what ``snapshot -i`` lists), each
    with its ref and its box in the page's viewport: takes a snapshot, so the refs are the
    tab's current ones."""
    taken = await take(act, boxes=True)
    out = []
    for n in interactive_nodes(taken.roots):
        if n.ref is None:
            continue
        box = n.box
        if box is not None:
            dx, dy = taken.offsets.get(frame_of(n.ref), (0, 0))
            box = box.shifted(dx, dy)
        out.append(Interactive(n.ref, n.role, n.own_text(), n.kind, box))
    return out


DEFAULT_LIMIT = 400
"""Lines of one snapshot page (``--limit 0``: no bound)."""


def _scoped(taken: Taken, target: str, wanted: list[str] | None) -> list[Node]:
    """The nodes ``-s`` names: the subtree of a ref, or the subtrees of the element a
    selector matched (``wanted``: their refs, from a snapshot of that element alone)."""
    by_ref = {n.ref: n for r in taken.roots for n in r.walk() if n.ref}
    if wanted is not None:
        return [by_ref[r] for r in wanted if r in by_ref]
    ref = target.removeprefix("@")
    if ref in by_ref:
        return [by_ref[ref]]
    raise Refusal("ref_stale", ref="@" + ref)


async def _scope_refs(act: Act, target: str) -> list[str] | None:
    """Before the whole snapshot: the top refs of the element ``target`` names, when it is
    a selector (None: a ref, looked up in the whole tree)."""
    if selector_of(act, target) is not None:
        return None
    loc = await locate(act, target)
    if await loc.count() == 0:
        raise Refusal("target_not_found", target=target)
    raw = await loc.aria_snapshot(mode="ai", timeout=act.ms_left())
    roots = parse(strip_prefix(raw, main_frame_prefix(raw)))
    refs = []
    for r in roots:
        top = next((n.ref for n in r.walk() if n.ref), None)
        if top:
            refs.append(top)
    return refs


def _command(act: Act, page: int, limit: int) -> str:
    words = ["bay", "snapshot"]
    a = act.args
    if a.get("interactive"):
        words.append("-i")
    if a.get("selector"):
        words += ["-s", shlex.quote(str(a["selector"]))]
    if a.get("depth") is not None:
        words += ["-d", str(a["depth"])]
    if limit != DEFAULT_LIMIT:
        words += ["--limit", str(limit)]
    words += ["--page", str(page)]
    return " ".join(words)


@page_verb("snapshot")
async def verb_snapshot(act: Act) -> Answer:
    """The page's tree; inside a frame (``bay frame``), that frame's, whose refs resolve
    there (its prefix is the one shown as plain ``eN``)."""
    a = act.args
    target = a.get("selector")
    wanted = await _scope_refs(act, str(target)) if target else None
    before = act.tab.snapshot_memory
    taken = await take(act)
    roots = taken.roots
    if target:
        roots = _scoped(taken, str(target), wanted)
    memory = SnapshotMemory(act.page.url, act.tab.ref_prefix, taken.roots)
    act.tab.snapshot_memory = memory
    depth = a.get("depth")
    data: dict[str, Any] = {"url": act.page.url, "tab": act.tab.id}
    note = ""
    lines: list[Line]
    if a.get("delta") and before is not None and before.same_document(memory):
        scoped = {n.ref for r in roots for n in r.walk() if n.ref} if target else None
        d = delta(
            before.lines,
            {k: v for k, v in memory.lines.items() if scoped is None or k in scoped},
        )
        data["delta"] = {
            "added": list(d.added.values()),
            "removed": list(d.removed.values()),
            "changed": list(d.changed.values()),
        }
        lines = d.lines()
        note = (
            "no change since the last snapshot"
            if d.empty
            else f"since the last snapshot: {len(d.added)} added, "
            f"{len(d.changed)} changed, {len(d.removed)} removed"
        )
    else:
        if a.get("delta"):
            note = "no earlier snapshot of this document in this tab: the whole snapshot"
            data["delta"] = None
        lines = flat_lines(roots, depth) if a.get("interactive") else tree_lines(roots, depth)
    limit = DEFAULT_LIMIT if a.get("limit") is None else max(int(a["limit"]), 0)
    page = paginate(lines, limit=limit, page=int(a.get("page") or 1))
    text = page.text
    nxt = None
    if not text and page.number > 1 and page.lines:
        many = "page" if page.pages == 1 else "pages"
        text = f"page {page.number} is past the end: {page.lines} lines make {page.pages} {many}"
    if page.left:
        nxt = _command(act, page.number + 1, limit)
        text += (
            f"\n… {page.left} more lines ({page.refs_left} refs) after page {page.number}: {nxt}"
        )
    if note:
        text = note + ("\n" + text if text else "")
    data.update(
        refs=page.refs,
        snapshot=text,
        page=page.number,
        lines=page.lines,
        left=page.left,
        refs_left=page.refs_left,
        next=nxt,
    )
    return data, text
