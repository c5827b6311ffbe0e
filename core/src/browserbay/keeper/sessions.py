"""Sessions, their leases and their tabs.

A session holds an attachment set of profiles; each attachment it has used is a
:class:`Lease` — the session's share of that profile's browser: its tabs, its current tab.
A session with no attachments has one lease on its own ephemeral profile. A tab is the unit
of ownership: held by exactly one lease — the tabs it opened plus everything those tabs opened
(popups, ``target=_blank``, ``window.open``) — so a verb on somebody else's tab is refused
before anything runs.

A lease is made of parts, each changed by exactly one service through that part's methods
(everyone else reads): :class:`LeaseBinding` (profile, fence, browser and context) by
``Leases``; :class:`LeaseTabs` (its tabs, its current tab) by the :class:`TabBook`;
``LeaseControl`` (the pause, the verbs in flight) by ``Controls``; ``LeaseTrace`` (the
after-frame being taken, where the agent pointed) by the action's recorder and the pointer
verbs; ``Blocked`` (what its fence refused) by the fence. The last three are defined below
this module (browserbay.keeper.pause, .frames, .guard), so it imports none of the services
that change them.
"""

from __future__ import annotations

import functools
import itertools
import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from browserbay.keeper.emulated import LeaseEmulation
from browserbay.keeper.frames import LeaseTrace
from browserbay.keeper.guard import Blocked
from browserbay.keeper.netlog import LeaseNet, TabLog
from browserbay.keeper.pause import LeaseControl
from browserbay.model import LeaseInfo, LiveWindow, PageDialog, PauseInfo, ProfileRef, SessionRef
from browserbay.refusals import Refusal
from browserbay.registry import Kept
from browserbay.snapshot import Node, signatures

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Frame, Page

    from browserbay.keeper.browsers import Running


@dataclass(frozen=True)
class FrameFocus:
    """The iframe a tab's verbs act inside (``bay frame``): the target the agent named, and
    the Playwright frame of the document it held then. A frame that is later removed, or
    whose page navigates, is detached: the verbs refuse ``frame_gone`` rather than act in
    the main frame by surprise."""

    target: str
    frame: Frame

    @property
    def gone(self) -> bool:
        return self.frame.is_detached()


@dataclass(frozen=True)
class SnapshotMemory:
    """What a tab's last snapshot showed, for ``snapshot --delta``: its judged tree, in the
    document it was taken of (the URL and the main frame's ref prefix). Each ref's line is
    written only when a delta asks for it (on a long page, as long as rendering the list)."""

    url: str
    prefix: str
    roots: list[Node]

    @functools.cached_property
    def lines(self) -> dict[str, str]:
        return signatures(self.roots)

    def same_document(self, other: SnapshotMemory) -> bool:
        return self.url == other.url and self.prefix == other.prefix


@dataclass
class Tab:
    id: str
    page: Page
    owner: str
    """The session that holds it."""
    profile: str
    """The profile (lease) it belongs to."""
    opener: str | None
    ref_prefix: str = ""
    """The snapshotted frame's ref prefix in the tab's last snapshot (see browserbay.snapshot)."""
    frame_paths: dict[str, str] = field(default_factory=dict)
    """Frame ref prefix -> the selector entering that frame, in the tab's last snapshot:
    where its own refs (``f2c3``) resolve (see browserbay.keeper.snapshots)."""
    snapshot_memory: SnapshotMemory | None = None
    snapshot_found: bool = True
    """Whether the tab's last snapshot found elements in the DOM to judge (its tree needed
    boxes): the next snapshot's guess (True before the first)."""
    shot_digest: str = ""
    """The SHA-256 of the tab's last screenshot (``screenshot --if-changed``; keeper/shots.py)."""
    created_at: float = field(default_factory=time.time)
    log: TabLog = field(default_factory=TabLog)
    """Its console, errors and requests (bounded rings, fed by its page's events)."""
    _focus: FrameFocus | None = field(default=None, init=False, repr=False)
    dialog: PageDialog | None = None
    """The dialog open on it now (written only by browserbay.keeper.dialogs): the page's
    script waits for its answer, so nothing reads the page through script meanwhile."""

    @property
    def focus(self) -> FrameFocus | None:
        """The iframe its verbs act inside (None: the main frame). Written only by the
        ``frame`` verb (browserbay.keeper.reading), through :meth:`enter_frame`."""
        return self._focus

    def enter_frame(self, focus: FrameFocus | None) -> None:
        self._focus = focus

    async def title(self) -> str:
        """The page's title; empty while a dialog is open (reading it would wait for the
        answer) or when the page cannot say."""
        if self.dialog is not None:
            return ""
        try:
            return await self.page.title()
        except Exception:
            return ""

    async def row(self) -> dict[str, Any]:
        focus = self._focus
        frame = None if focus is None else {"target": focus.target, "gone": focus.gone}
        row: dict[str, Any] = {
            "id": self.id,
            "url": self.page.url,
            "title": await self.title(),
            "opener": self.opener,
            "frame": frame,
        }
        if self.dialog is not None:
            row["dialog"] = self.dialog.as_row()
        return row


class LeaseTabs(Mapping[str, Tab]):
    """A lease's tabs by id, in the order they opened, and its current one (the tab its
    verbs act on). Read it as a mapping; it is changed only by the :class:`TabBook`, which
    keeps every tab of the keeper — its methods below are the book's."""

    def __init__(self) -> None:
        self._tabs: dict[str, Tab] = {}
        self._current: str | None = None

    def __getitem__(self, tab_id: str) -> Tab:
        return self._tabs[tab_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tabs)

    def __len__(self) -> int:
        return len(self._tabs)

    @property
    def current(self) -> str | None:
        return self._current

    # -- the writer's side (TabBook) ----------------------------------------------------

    def put(self, tab: Tab) -> None:
        self._tabs[tab.id] = tab
        if self._current is None:
            self._current = tab.id

    def pop(self, tab_id: str) -> None:
        """The tab is no longer the lease's; the current one, if it was, is the newest left."""
        self._tabs.pop(tab_id, None)
        if self._current == tab_id:
            self._current = next(reversed(self._tabs), None) if self._tabs else None

    def select(self, tab_id: str | None) -> None:
        self._current = tab_id


class LeaseBinding:
    """What a lease is bound to: the profile as its session chose it (with its alias and its
    allowed domains) and, while its browser runs, that browser and its context — with what
    :class:`~browserbay.keeper.leases.Leases` remembers of its kept tabs. Changed only by
    ``Leases``: its methods below are that service's."""

    def __init__(
        self, profile: ProfileRef, alias: str | None, allowed_domains: tuple[str, ...]
    ) -> None:
        self._profile = profile
        self._alias = alias
        self._allowed_domains = allowed_domains
        self._context: BrowserContext | None = None
        self._browser: Running | None = None
        self._kept_signature: tuple[Any, ...] = ()
        self._kept_at_start: Kept | None = None
        self._restoring = False

    @property
    def profile(self) -> ProfileRef:
        return self._profile

    @property
    def alias(self) -> str | None:
        return self._alias

    @property
    def allowed_domains(self) -> tuple[str, ...]:
        return self._allowed_domains

    @property
    def context(self) -> BrowserContext | None:
        return self._context

    @property
    def browser(self) -> Running | None:
        return self._browser

    @property
    def kept_signature(self) -> tuple[Any, ...]:
        """What was last written to the registry's kept tabs (written again only on change)."""
        return self._kept_signature

    @property
    def kept_at_start(self) -> Kept | None:
        """The kept tabs (and their state) the registry held when this context was started:
        what a verb answered ``deadline`` puts back when it ends the context it started (see
        Keeper._undo)."""
        return self._kept_at_start

    @property
    def restoring(self) -> bool:
        """Kept tabs are being reopened: new pages are adopted in order by the restore
        itself."""
        return self._restoring

    # -- the writer's side (Leases) -----------------------------------------------------

    def rebind(self, profile: ProfileRef, alias: str | None) -> None:
        """The profile as chosen now (how it was chosen, its label, its provider after a
        backend switch), under the alias its session gave it."""
        self._profile, self._alias = profile, alias

    def fence(self, allowed_domains: tuple[str, ...]) -> None:
        self._allowed_domains = allowed_domains

    def bind(self, context: BrowserContext, browser: Running | None) -> None:
        self._context, self._browser = context, browser

    def unbind(self) -> tuple[Running | None, BrowserContext | None]:
        """The lease lets go of its browser (once: cleared before any await). Answers the
        browser and context it held."""
        held = self._browser, self._context
        self._context, self._browser = None, None
        self._kept_signature = ()
        return held

    def kept(self, signature: tuple[Any, ...]) -> None:
        self._kept_signature = signature

    def started_with(self, kept: Kept | None) -> None:
        self._kept_at_start = kept

    def set_restoring(self, restoring: bool) -> None:
        self._restoring = restoring


class Lease:
    """A session's share of one profile's browser (or of a target: a window), made of parts
    that each one service changes: what it is bound to (:class:`LeaseBinding`, by
    ``Leases``), its tabs (:class:`LeaseTabs`, by the :class:`TabBook`), its controls
    (:class:`~browserbay.keeper.pause.LeaseControl`, by ``Controls``), what its last action
    left (:class:`~browserbay.keeper.frames.LeaseTrace`, by the action's recorder and the
    pointer verbs) and what its fence refused (:class:`~browserbay.keeper.guard.Blocked`, by
    the fence). Everything else reads them."""

    def __init__(
        self,
        session: SessionRef,
        profile: ProfileRef,
        alias: str | None = None,
        allowed_domains: tuple[str, ...] = (),
        window: LiveWindow | None = None,
    ) -> None:
        self.session = session
        self.binding = LeaseBinding(profile, alias, allowed_domains)
        self.tabs = LeaseTabs()
        self.control = LeaseControl()
        """Who holds the controls and the verbs running now, which a takeover cuts."""
        self.trace = LeaseTrace()
        """What its last page action left: the after-frame still being taken (its next
        verb waits for it, briefly), where the agent last pointed."""
        self.blocked = Blocked()
        """Sub-resource requests refused by the allowed-domains list."""
        self.net = LeaseNet()
        """Its routes and HAR recording (browserbay.keeper.netlog), for its context's life."""
        self.emulation = LeaseEmulation()
        """What ``bay set`` asked for, on each of its tabs (browserbay.keeper.emulated)."""
        self.window = window
        """A target lease's native window (set by browserbay.keeper.targets, which holds
        target leases); None for a browser."""

    @property
    def profile(self) -> ProfileRef:
        return self.binding.profile

    @property
    def alias(self) -> str | None:
        return self.binding.alias

    @property
    def allowed_domains(self) -> tuple[str, ...]:
        return self.binding.allowed_domains

    @property
    def context(self) -> BrowserContext | None:
        """Its browser context while its browser runs."""
        return self.binding.context

    @property
    def browser(self) -> Running | None:
        return self.binding.browser

    @property
    def current(self) -> str | None:
        """The tab the agent acts on."""
        return self.tabs.current

    @property
    def agent_point(self) -> tuple[str, float, float] | None:
        """(tab, x, y): where the agent's last pointer verb acted, for the live view's
        cursor."""
        return self.trace.agent_point

    @property
    def handle(self) -> str:
        return self.alias or self.profile.label

    @property
    def controls_of(self) -> str:
        """What a human holds the controls of, as refusals name it: ``profile work`` for a
        browser's lease, ``window w1`` for a target's (its label already says what it is)."""
        return self.profile.label if self.profile.chosen == "target" else f"profile {self.handle}"

    def info(self, ended: str | None = None) -> LeaseInfo:
        return LeaseInfo(self.profile, self.session, self.control.holder, tuple(self.tabs), ended)

    def pages(self) -> dict[str, Page]:
        if self.context is None:
            return {}
        return {tab_id: tab.page for tab_id, tab in self.tabs.items()}

    def pause_info(self) -> PauseInfo | None:
        return self.control.pause_info()


@dataclass
class Session:
    ref: SessionRef
    group: str
    leases: dict[str, Lease] = field(default_factory=dict)
    """profile id -> lease, for every profile the session has used in this keeper."""
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    last_used: float = field(default_factory=time.monotonic)
    notices: list[str] = field(default_factory=list)
    """Said once with the next answer (a restore, a browser that went away)."""
    targets: dict[str, Lease] = field(default_factory=dict)
    """Leases on targets that are not profiles (a window it holds), by key (``w1``)."""
    seen: bool = False
    """The registry has its row (written at its first verb in this keeper)."""
    acted_on: str | None = None
    """The profile id its previous answer acted on (None: none yet in this keeper)."""
    asking: int = 0
    """Its verbs waiting for a human's approval, its lock let go meanwhile (never idle)."""
    answered: anyio.Event = field(default_factory=anyio.Event)
    """Set when none of its verbs waits for approval any more: its page verbs that came
    meanwhile go then (browserbay.keeper.approvals.behind_asking)."""

    def said(self, profile: ProfileRef | None) -> ProfileRef | None:
        """``profile`` as this answer names it: ``changed`` when it is another than the one
        the previous answer acted on (the first counts from the session's own ephemeral
        browser), which the footer then names. A window or other target is none of the
        session's profiles: it changes nothing."""
        if profile is None or profile.chosen == "target":
            return profile
        before = self.acted_on or f"ep-{self.ref.id}"
        self.acted_on = profile.id
        return replace(profile, changed=True) if profile.id != before else profile

    @property
    def running_leases(self) -> list[Lease]:
        return [lease for lease in self.leases.values() if lease.context is not None]

    def summary(self) -> dict[str, Any]:
        return {
            "session": self.ref.as_row(),
            "group": self.group,
            "leases": [
                {
                    "profile": lease.profile.as_row(),
                    "handle": lease.handle,
                    "browser": lease.browser.id if lease.browser else None,
                    "tabs": len(lease.tabs),
                    "tab_ids": list(lease.tabs),
                    "current_tab": lease.current,
                    "inflight": [e.command for e in lease.control.inflight],
                }
                for lease in [*self.leases.values(), *self.targets.values()]
            ],
            "idle_s": round(time.monotonic() - self.last_used, 1),
        }


#: Tab numbers a keeper reserves at a time (see :func:`reserve_tab_ids`).
TAB_ID_BLOCK = 100


def reserve_tab_ids(path: Path) -> range:
    """The next block of tab numbers, reserved in ``path`` before any of them is handed out:
    a tab id is never used again by a later keeper of this home — even after a ``kill -9`` —
    so a stale id from before a restart is ``tab_gone``, never another of the session's tabs."""
    try:
        last = int(path.read_text().strip() or 0)
    except (OSError, ValueError):
        last = 0
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(str(last + TAB_ID_BLOCK))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return range(last + 1, last + TAB_ID_BLOCK + 1)


class TabBook:
    """Every tab the keeper knows, by id, with who owns it; and the ids that are gone."""

    def __init__(self, reserve: Callable[[], range] | None = None) -> None:
        self._reserve = reserve
        self._ids: Iterator[int] = iter(reserve()) if reserve else itertools.count(1)
        self._tabs: dict[str, Tab] = {}
        self._by_page: dict[int, Tab] = {}
        self._gone: dict[str, str] = {}

    @property
    def tabs(self) -> Mapping[str, Tab]:
        """Every live tab, by id."""
        return self._tabs

    @property
    def by_page(self) -> Mapping[int, Tab]:
        """Every live tab, by ``id()`` of its page."""
        return self._by_page

    @property
    def gone(self) -> Mapping[str, str]:
        """Tab id -> why it is gone (said in ``tab_gone``)."""
        return self._gone

    def add(self, page: Page, lease: Lease, opener: str | None, tab_id: str | None = None) -> Tab:
        """Register a page as a tab of the lease: a fresh id, or ``tab_id`` — the lease's own
        tab reopened by a backend switch, whose id stays valid (never another's: an id in
        use is refused)."""
        existing = self._by_page.get(id(page))
        if existing is not None:
            return existing
        if tab_id is not None and tab_id in self._tabs:
            raise ValueError(f"tab id {tab_id} is in use")
        if tab_id is not None:
            self._gone.pop(tab_id, None)
        new_id = tab_id if tab_id is not None else f"t{self._next_id()}"
        tab = Tab(new_id, page, lease.session.id, lease.profile.id, opener)
        self._tabs[tab.id] = tab
        self._by_page[id(page)] = tab
        lease.tabs.put(tab)
        return tab

    def _next_id(self) -> int:
        n = next(self._ids, None)
        if n is None:
            assert self._reserve is not None  # itertools.count never ends
            self._ids = iter(self._reserve())
            n = next(self._ids)
        return n

    def drop(self, tab: Tab, lease: Lease | None, reason: str) -> None:
        self._tabs.pop(tab.id, None)
        self._by_page.pop(id(tab.page), None)
        self._gone[tab.id] = reason
        if lease is not None:
            lease.tabs.pop(tab.id)

    @staticmethod
    def select(lease: Lease, tab_id: str | None) -> None:
        """Make ``tab_id`` the lease's current tab (None: it has none)."""
        lease.tabs.select(tab_id)

    def lookup(self, tab_id: str, session: Session) -> Tab:
        """The caller's tab ``tab_id``, or the refusal that says why not — before anything
        runs on it."""
        tab = self._tabs.get(tab_id)
        if tab is None:
            reason = self._gone.get(tab_id, "no tab has this id (it may be from an earlier keeper)")
            raise Refusal("tab_gone", tab=tab_id, reason=reason)
        if tab.owner != session.ref.id:
            raise Refusal("not_your_tab", tab=tab_id)
        return tab
