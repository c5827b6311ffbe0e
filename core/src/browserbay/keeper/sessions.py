"""Sessions and their tabs. A tab is the unit of ownership: held by exactly one session —
the tabs it opened plus everything those tabs opened (popups, ``target=_blank``), so a verb
on somebody else's tab is refused before anything runs."""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from browserbay.model import ProfileRef, SessionRef
from browserbay.refusals import Refusal

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Page

    from browserbay.keeper.browsers import Running


@dataclass
class Tab:
    id: str
    page: Page
    owner: str
    opener: str | None
    ref_prefix: str = ""
    """The main frame's ref prefix in the tab's last snapshot (see browserbay.snapshot)."""
    created_at: float = field(default_factory=time.time)

    async def row(self) -> dict[str, Any]:
        try:
            title = await self.page.title()
        except Exception:
            title = ""
        return {"id": self.id, "url": self.page.url, "title": title, "opener": self.opener}


@dataclass
class Session:
    ref: SessionRef
    profile: ProfileRef
    context: BrowserContext | None = None
    browser: Running | None = None
    tabs: dict[str, Tab] = field(default_factory=dict)
    current: str | None = None
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    last_used: float = field(default_factory=time.monotonic)
    notice: str | None = None
    """Said once with the next answer (e.g. the browser went away and a new one started)."""

    def summary(self) -> dict[str, Any]:
        return {
            "session": self.ref.as_row(),
            "profile": self.profile.as_row(),
            "browser": self.browser.id if self.browser else None,
            "tabs": len(self.tabs),
            "current_tab": self.current,
            "idle_s": round(time.monotonic() - self.last_used, 1),
        }


class TabBook:
    """Every tab the keeper knows, by id, with who owns it; and the ids that are gone."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self.tabs: dict[str, Tab] = {}
        self.by_page: dict[int, Tab] = {}
        self.gone: dict[str, str] = {}

    def add(self, page: Page, session: Session, opener: str | None) -> Tab:
        existing = self.by_page.get(id(page))
        if existing is not None:
            return existing
        tab = Tab(f"t{next(self._ids)}", page, session.ref.id, opener)
        self.tabs[tab.id] = tab
        self.by_page[id(page)] = tab
        session.tabs[tab.id] = tab
        if session.current is None:
            session.current = tab.id
        return tab

    def drop(self, tab: Tab, session: Session | None, reason: str) -> None:
        self.tabs.pop(tab.id, None)
        self.by_page.pop(id(tab.page), None)
        self.gone[tab.id] = reason
        if session is not None:
            session.tabs.pop(tab.id, None)
            if session.current == tab.id:
                session.current = next(reversed(session.tabs), None) if session.tabs else None

    def lookup(self, tab_id: str, session: Session) -> Tab:
        """The caller's tab ``tab_id``, or the refusal that says why not — before anything
        runs on it."""
        tab = self.tabs.get(tab_id)
        if tab is None:
            reason = self.gone.get(tab_id, "no tab has this id (it may be from an earlier keeper)")
            raise Refusal("tab_gone", tab=tab_id, reason=reason)
        if tab.owner != session.ref.id:
            raise Refusal("not_your_tab", tab=tab_id)
        return tab
