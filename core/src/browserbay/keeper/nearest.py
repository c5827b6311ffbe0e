"""Refusals that say what would have worked (issue 19, item 4): a verb that cannot succeed
fails fast, naming what is there instead.

- A target that matches nothing: the closest accessible names of the page now
  (:func:`closest`, by :class:`difflib.SequenceMatcher` ratio over the names of a fresh
  accessibility snapshot of the scope the verb acts in), each with the ``@ref`` to act on.
- How long "nothing" is waited for (:data:`ABSENT_WAIT`): a reference that resolves to
  nothing is known absent at once (refs name elements of a snapshot; they never appear
  later); a selector or a ``find`` that matches nothing is given a short window for an
  element the page is about to add, then refused — ``bay wait <selector>`` waits longer.
- A ``<select>`` without the option asked for: the options there are (:func:`options_of`),
  at once, rather than Playwright's wait for an option that may never come.
- An element covered by another (an overlay, a cookie banner): what covers it
  (:data:`COVER_JS`, the element at the point a click would press) and the way out.

Lists are bounded (:data:`NEAREST_MAX`, :data:`OPTIONS_MAX`) and their texts clipped: a page
chooses them. Only the refusal path pays for the snapshot.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from browserbay.keeper.act import Act
from browserbay.refusals import Refusal, clip
from browserbay.snapshot import INTERACTIVE_ROLES, main_frame_prefix

if TYPE_CHECKING:
    from playwright.async_api import Locator

#: Seconds a selector (or ``find``) that matches nothing is waited for before the refusal:
#: enough for an element a page adds as it settles, never the whole deadline.
ABSENT_WAIT = 1.0
#: Seconds an element covered by another is given to come clear (an overlay fading out).
COVER_WAIT = 0.5
#: The most names a refusal lists, and the most characters of each.
NEAREST_MAX = 5
NAME_SHOWN = 40
#: The most options a ``select`` refusal lists, and the most characters of each.
OPTIONS_MAX = 12
OPTION_SHOWN = 30
#: Below this ratio a name is not "close"; the page's first interactive names are listed.
CUTOFF = 0.4

_NODE = re.compile(
    r'^\s*- (?P<role>[a-z]+) "(?P<name>(?:[^"\\]|\\.)*)"[^\n]*?\[ref=(?P<ref>[a-z0-9]+)\]'
)


@dataclass(frozen=True)
class Named:
    """An element of the page by its role, accessible name and reference."""

    role: str
    name: str
    ref: str

    def words(self) -> str:
        return f'{self.role} "{clip(self.name, NAME_SHOWN)}" @{self.ref}'

    def row(self) -> dict[str, str]:
        return {"role": self.role, "name": clip(self.name, NAME_SHOWN), "ref": "@" + self.ref}


def named_in(snapshot: str, prefix: str) -> list[Named]:
    """The named nodes of an AI-mode snapshot, their refs as the tab resolves them (the
    main frame's ``prefix`` dropped when it is the one the tab's refs use)."""
    out = []
    for line in snapshot.splitlines():
        m = _NODE.match(line)
        if m is None:
            continue
        ref = m.group("ref")
        if prefix and ref.startswith(prefix + "e"):
            ref = ref[len(prefix) :]
        out.append(Named(m.group("role"), m.group("name").replace('\\"', '"'), ref))
    return out


def query_of(target: str) -> str:
    """The words a target names (``#save-btn`` → ``save btn``; ``text=Save`` → ``Save``;
    a reference names none)."""
    if re.fullmatch(r"@?(?:f\d+)?[ec]\d+", target):
        return ""
    target = re.sub(r"^(text|css|xpath|id|data-testid)=", "", target)
    return " ".join(re.findall(r"[^\W_]+", target))


def closest(query: str, names: list[Named], n: int = NEAREST_MAX) -> list[Named]:
    """The ``n`` names closest to ``query``; with no query, or none close, the page's first
    interactive ones (what there is to act on)."""
    q = query.lower().strip()
    scored: list[tuple[float, int, Named]] = []
    for i, named in enumerate(names):
        name = named.name.lower()
        if not q or not name:
            continue
        ratio = difflib.SequenceMatcher(None, q, name).ratio()
        if q in name or name in q:
            ratio = max(ratio, 0.9)
        words = name.split()
        for word in q.split():
            best = max((difflib.SequenceMatcher(None, word, w).ratio() for w in words), default=0)
            ratio = max(ratio, best * 0.95)
        if ratio >= CUTOFF:
            scored.append((ratio, i, named))
    if scored:
        scored.sort(key=lambda s: (-s[0], s[1]))
        return [named for _, _, named in scored[:n]]
    return [named for named in names if named.role in INTERACTIVE_ROLES][:n]


async def names_of(act: Act) -> list[Named]:
    """The named elements of a fresh snapshot of the scope ``act`` acts in (the page, or
    the frame of ``bay frame``); none when it cannot be read. Read only: the tab's refs and
    their prefix stay the snapshot verb's."""
    try:
        scope = act.scope
        if scope is act.page:
            raw = await act.page.aria_snapshot(mode="ai", timeout=2000)
        else:
            raw = await scope.locator("body").aria_snapshot(mode="ai", timeout=2000)
    except Exception:
        return []
    prefix = main_frame_prefix(raw)
    return named_in(raw, prefix if prefix == act.tab.ref_prefix else "")


def _listed(found: list[Named]) -> str:
    return ", ".join(n.words() for n in found)


async def not_found(act: Act, target: str, query: str | None = None) -> Refusal:
    """``target_not_found`` for ``target``, naming the closest names there are now
    (``query``: the words to compare; by default the ones ``target`` names)."""
    found = closest(query_of(target) if query is None else query, await names_of(act))
    way = "bay snapshot -i  (and use an @eN reference)"
    if found:
        way = f"closest now: {_listed(found)} — act on one (bay click @eN), or {way}"
    return Refusal("target_not_found", target=target, nearest=[n.row() for n in found], way_out=way)


async def stale(act: Act, ref: str) -> Refusal:
    """``ref_stale`` for ``ref``, naming the page's elements to act on now."""
    found = closest("", await names_of(act))
    way = "bay snapshot -i  (then act on a fresh @eN)"
    if found:
        way = f"on the page now: {_listed(found)} — or {way}"
    return Refusal("ref_stale", ref=ref, nearest=[n.row() for n in found], way_out=way)


# -- select -----------------------------------------------------------------------------

#: A ``<select>``'s options as [value, label] pairs; null for any other element.
OPTIONS_JS = """(el) => el instanceof HTMLSelectElement
  ? Array.from(el.options, (o) => [o.value, (o.label || o.textContent || '').trim()])
  : null"""


async def options_of(loc: Locator, timeout: float) -> list[tuple[str, str]] | None:
    """The options of the ``<select>`` ``loc`` (None: it is no ``<select>``, or unreadable)."""
    try:
        got: Any = await loc.evaluate(OPTIONS_JS, timeout=timeout)
    except Exception:
        return None
    if not isinstance(got, list):
        return None
    return [(str(v), str(label)) for v, label in got]


def missing_option(
    target: str, values: list[str], options: list[tuple[str, str]]
) -> Refusal | None:
    """``option_missing`` when a value asked for is neither a value nor a label of
    ``options``; None when every one is there."""
    there = {v for v, _ in options} | {label for _, label in options}
    missing = [v for v in values if v not in there]
    if not missing:
        return None
    shown = [
        {"value": clip(v, OPTION_SHOWN), "label": clip(label, OPTION_SHOWN)}
        for v, label in options[:OPTIONS_MAX]
    ]
    words = ", ".join(
        f'"{o["value"]}"' + (f" ({o['label']})" if o["label"] != o["value"] else "") for o in shown
    )
    more = len(options) - len(shown)
    if more > 0:
        words += f", … {more} more"
    first = options[0][0] if options else "VALUE"
    return Refusal(
        "option_missing",
        target=target,
        value=clip(missing[0], OPTION_SHOWN),
        options=words or "none",
        choices=shown,
        count=len(options),
        example=clip(first, OPTION_SHOWN),
    )


# -- covered ----------------------------------------------------------------------------

#: What covers the element at its centre (where a click presses): the outermost element on
#: top that does not contain it, as role, name and a selector hint; null when nothing does
#: (it is disabled, hidden, or the topmost itself).
COVER_JS = """(el) => {
  el.scrollIntoView({block: 'nearest', inline: 'nearest'});
  const r = el.getBoundingClientRect();
  if (r.width < 1 || r.height < 1 || el.disabled) return null;
  if (getComputedStyle(el).visibility !== 'visible') return null;
  // Inside an open shadow root the document's hit is the host: ask the element's own root.
  const root = el.getRootNode().elementFromPoint ? el.getRootNode() : el.ownerDocument;
  const hit = root.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  // An ancestor on top is not a cover (an inline link wrapped over two lines: its box's
  // centre is the paragraph's) — except around an SVG shape, which takes no point it does
  // not paint (fill="none"): there the press lands on the svg.
  const shape = typeof SVGGraphicsElement !== 'undefined' && el instanceof SVGGraphicsElement
    && !(el instanceof SVGSVGElement);
  if (!hit || hit === el || el.contains(hit) || (hit.contains(el) && !shape)) return null;
  let c = hit;
  for (let n = hit; n && n !== el.ownerDocument.body && (n === hit || !n.contains(el));
       n = n.parentElement) {
    const role = n.getAttribute('role');
    if (role || n.getAttribute('aria-label') || n.id) c = n;
    if (role === 'dialog' || role === 'alertdialog' || n.tagName === 'DIALOG') break;
  }
  const text = (c.getAttribute('aria-label') || c.getAttribute('title') || c.innerText || '');
  const cls = Array.from(c.classList).slice(0, 2).map((k) => '.' + k).join('');
  return {
    role: c.getAttribute('role') || (c.tagName === 'DIALOG' ? 'dialog' : c.tagName.toLowerCase()),
    name: text.trim().replace(/\\s+/g, ' ').slice(0, 80),
    selector: c.tagName.toLowerCase() + (c.id ? '#' + c.id : '') + cls,
  };
}"""


async def cover_of(loc: Locator) -> dict[str, str] | None:
    """What covers ``loc`` at its centre now (None: nothing does, or it cannot be read)."""
    try:
        got: Any = await loc.evaluate(COVER_JS, timeout=1000)
    except Exception:
        return None
    if not isinstance(got, dict):
        return None
    return {k: clip(str(got.get(k) or ""), NAME_SHOWN) for k in ("role", "name", "selector")}


def covered(verb: str, target: str, cover: dict[str, str]) -> Refusal:
    """``target_covered``: ``verb`` on ``target`` would press ``cover`` instead."""
    name = f' "{cover["name"]}"' if cover["name"] else ""
    return Refusal(
        "target_covered",
        verb=verb,
        target=target,
        cover=f"{cover['role']}{name} ({cover['selector']})",
        covered_by=cover,
    )
