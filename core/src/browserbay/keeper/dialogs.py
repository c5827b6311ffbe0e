"""Dialogs a page opens (``alert``, ``confirm``, ``prompt``, ``beforeunload``): never
answered silently.

With no listener, Playwright dismisses every dialog at once and the agent never learns a
page asked it something. The keeper listens on every tab (:meth:`Dialogs.watch`, called
where a tab is adopted): a dialog stays open until it is answered — by its session (``bay
dialog accept [text]`` / ``dismiss``), by a human in the live view, or by the bound
(``BAY_DIALOG_TIMEOUT``: then it is dismissed). While one is open the page's script waits, so:

- the verb that opened it is answered at once (:meth:`Dialogs.during` cuts its wait for the
  page), never at its deadline;
- a later page verb on that tab is refused ``dialog_open`` before it runs (it could only
  wait for its deadline);
- every answer of the session carries a notice naming each dialog open on its tabs
  (:meth:`Dialogs.notices`); one answered by someone else (the human, the bound) is said
  once, with the session's next answer;
- readers of a tab that would run the page's script (its title) skip it (``Tab.dialog``).

``bay close`` and ``bay tab close`` close a tab without running its ``beforeunload``
handlers; a dialog already open on it is dismissed as its tab goes (:meth:`Dialogs.leave`),
a ``beforeunload`` too: the close is what leaves the page, not the navigation it guarded.
Accepting it would let that navigation go on, and Chromium loses a ``Target.closeTarget``
that lands while the navigation commits (it answers success and the tab stays open, so
``page.close()`` waited for its deadline: about one close in two). Dismissed, no navigation
is in flight when the tab closes.

A prompt's answer is typed text: it is never logged, echoed or put in a notice.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from browserbay.keeper.base import Answer
from browserbay.keeper.sessions import Session, Tab
from browserbay.model import DialogKind, PageDialog
from browserbay.refusals import Refusal, clip

if TYPE_CHECKING:
    from playwright.async_api import Dialog, Page

log = logging.getLogger("browserbay.keeper")

#: The most characters of a dialog's message (and of a prompt's default) a notice shows.
SHOWN = 120
#: How long answering a dialog may take in the browser (it is one CDP call).
ANSWER_TIMEOUT = 5.0
_KINDS: tuple[DialogKind, ...] = ("alert", "confirm", "prompt", "beforeunload")


def describe(dialog: PageDialog) -> str:
    """``confirm "Delete everything?"`` (clipped); a prompt with its default value."""
    words = f'{dialog.kind} "{clip(dialog.message, SHOWN)}"'
    if dialog.kind == "prompt" and dialog.default:
        words += f' (default "{clip(dialog.default, SHOWN)}")'
    return words


def notice(dialog: PageDialog) -> str:
    """The notice every answer carries while the dialog is open."""
    answer = "accept [text]" if dialog.kind == "prompt" else "accept"
    return f"dialog: {describe(dialog)} on {dialog.tab} — bay dialog {answer} | dismiss"


@dataclass
class _Open:
    """A dialog waiting for its answer, on one tab."""

    dialog: Dialog
    info: PageDialog
    tab: Tab
    answered: anyio.Event


class Dialogs:
    """The dialogs open on every tab of the keeper, and the verbs running on a tab that a
    dialog cuts. ``sessions``: the roster's sessions (a notice goes to the tab's owner)."""

    def __init__(self, sessions: Mapping[str, Session], timeout: float = 120.0) -> None:
        self.sessions = sessions
        #: Seconds a dialog waits for an answer before it is dismissed (BAY_DIALOG_TIMEOUT).
        self.timeout = timeout
        self._open: dict[str, _Open] = {}
        self._cuts: dict[str, anyio.CancelScope] = {}

    # -- the browser's side ---------------------------------------------------------------

    def watch(self, page: Page, tab: Tab) -> None:
        """Hold every dialog of ``page`` (the tab ``tab``) open until it is answered."""

        async def on_dialog(dialog: Dialog) -> None:
            try:
                await self._opened(tab, dialog)
            except Exception:
                log.exception("a dialog could not be held; dismissing it")
                with contextlib.suppress(Exception):
                    await dialog.dismiss()

        def on_close(_page: Page) -> None:
            entry = self._open.get(tab.id)
            if entry is not None and entry.tab is tab:
                self._forget(entry)

        page.on("dialog", on_dialog)
        page.on("close", on_close)

    async def _opened(self, tab: Tab, dialog: Dialog) -> None:
        kind = dialog.type
        held = self._open.get(tab.id)
        if kind not in _KINDS or (held is not None and held.tab is tab):
            await dialog.dismiss()  # a kind we do not know, or a second one (cannot happen)
            return
        info = PageDialog(tab.id, kind, dialog.message, dialog.default_value, time.time())
        entry = _Open(dialog, info, tab, anyio.Event())
        self._open[tab.id] = entry
        tab.dialog = info
        log.info("a %s dialog opened on %s (session %s)", kind, tab.id, tab.owner)
        cut = self._cuts.get(tab.id)
        if cut is not None:  # the verb that opened it is answered now, not at its deadline
            cut.cancel()
        with anyio.move_on_after(self.timeout):
            await entry.answered.wait()
            return
        if self._open.get(tab.id) is entry:
            self._say(  # before the await, as in answer_by
                tab.owner,
                f"dialog: {describe(info)} on {tab.id} was dismissed by the bound: nobody "
                f"answered it within {self.timeout:g}s (BAY_DIALOG_TIMEOUT)",
            )
            await self._answer(entry, accept=False, text=None)

    def _forget(self, entry: _Open) -> None:
        """The dialog is no longer open (answered, or its tab closed): said before any
        await, so nothing answers it twice."""
        if self._open.get(entry.tab.id) is entry:
            del self._open[entry.tab.id]
        if entry.tab.dialog is entry.info:
            entry.tab.dialog = None
        entry.answered.set()

    async def _answer(self, entry: _Open, *, accept: bool, text: str | None) -> None:
        self._forget(entry)
        try:
            with anyio.fail_after(ANSWER_TIMEOUT):
                if accept:  # a prompt accepted without text answers its default value
                    prompt = entry.info.default if entry.info.kind == "prompt" else None
                    await entry.dialog.accept(text if text is not None else prompt)
                else:
                    await entry.dialog.dismiss()
        except Exception:  # its page closed meanwhile: nothing is waiting for the answer
            log.debug("answering a dialog failed", exc_info=True)

    def _say(self, session_id: str, words: str) -> None:
        session = self.sessions.get(session_id)
        if session is not None:
            session.notices.append(words)

    # -- the keeper's side ----------------------------------------------------------------

    def check(self, tab: Tab, verb: str) -> None:
        """A page verb on a tab whose dialog is open is refused before it runs: the page's
        script waits for the answer, so the verb could only wait for its deadline."""
        info = tab.dialog
        if info is None:
            return
        raise Refusal(
            "dialog_open",
            tab=tab.id,
            kind=info.kind,
            what=describe(info),
            verb=verb,
            message=clip(info.message, SHOWN),
            default=clip(info.default, SHOWN),
        )

    async def during(self, tab: Tab, verb: str, run: Callable[[], Awaitable[Answer]]) -> Answer:
        """Run a page verb on ``tab``; a dialog that opens on it meanwhile ends the verb's
        wait at once, and it is answered as done so far (the notice names the dialog)."""
        self.check(tab, verb)
        scope = anyio.CancelScope()
        self._cuts[tab.id] = scope
        try:
            with scope:
                return await run()
        finally:
            if self._cuts.get(tab.id) is scope:
                del self._cuts[tab.id]
        info = tab.dialog
        data: dict[str, Any] = {"url": tab.page.url, "tab": tab.id, "finished": False}
        if info is None:  # answered already (a human, a bound of 0)
            return data, f"{verb}: a dialog opened before it finished (answered since)"
        data["dialog"] = info.as_row()
        what = (
            "the navigation waits for your answer"
            if info.kind == "beforeunload"
            else ("the page waits for your answer")
        )
        return data, f"{verb}: the page opened a {info.kind} dialog; {what}"

    def notices(self, session_id: str) -> list[str]:
        """One notice per dialog open on the session's tabs (every answer says them)."""
        return [notice(e.info) for e in self._open.values() if e.tab.owner == session_id]

    async def leave(self, tabs: list[Tab]) -> None:
        """The tabs are being closed by their session: the dialog open on each is dismissed,
        no notice. A ``beforeunload`` too: its navigation is cancelled, so none commits while
        the tab closes (Chromium drops a close that races a commit; see the module's words),
        and the close itself leaves the page without asking."""
        for tab in tabs:
            entry = self._open.get(tab.id)
            if entry is not None and entry.tab is tab:
                await self._answer(entry, accept=False, text=None)

    # -- what bay dialog reads and answers (browserbay.keeper.dialogverbs) ------------

    def open_of(self, session_id: str) -> list[tuple[Tab, PageDialog]]:
        """The session's tabs with a dialog open, and their dialogs, as they opened."""
        return [(e.tab, e.info) for e in self._open.values() if e.tab.owner == session_id]

    async def answer(self, tab: Tab, accept: bool, text: str | None) -> PageDialog | None:
        """Answer the dialog open on ``tab`` (``text``: a prompt's answer). None: none is."""
        entry = self._open.get(tab.id)
        if entry is None or entry.tab is not tab:
            return None
        await self._answer(entry, accept=accept, text=text)
        return entry.info

    # -- the live view's side (browserbay.model.LiveHost, through Controls) ---------------

    def open_on(self, tabs: Mapping[str, Tab]) -> dict[str, PageDialog]:
        """The dialogs open on these tabs, by tab id."""
        return {
            tab_id: entry.info
            for tab_id, entry in self._open.items()
            if tab_id in tabs and tabs[tab_id] is entry.tab
        }

    async def answer_by(
        self, tabs: Mapping[str, Tab], tab_id: str, accept: bool, text: str | None, who: str
    ) -> bool:
        """A human answers the dialog open on ``tab_id`` (one of ``tabs``, the lease's they
        see); the tab's session is told with its next answer. False: none is open there."""
        entry = self._open.get(tab_id)
        tab = tabs.get(tab_id)
        if entry is None or tab is None or entry.tab is not tab:
            return False
        info = entry.info
        typed = text is not None and info.kind == "prompt"
        how = "accepted" if accept else "dismissed"
        if accept and typed:
            how += " with text they typed"
        # Said before the answer is awaited: _answer forgets the dialog at once, so a verb of
        # the session served meanwhile would otherwise see it neither open nor answered.
        self._say(tab.owner, f"dialog: {who} {how} the {describe(info)} on {tab_id}")
        await self._answer(entry, accept=accept, text=text if typed else None)
        return True
