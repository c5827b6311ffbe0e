"""Actions that wait for a human's approval.

An approval gate (``bay_before_action``) may answer :class:`~browserbay.model.Ask` instead of
a refusal: the verb then waits here, its element untouched, until a human with a control link
of the live view approves or denies it (:meth:`Approvals.answer`), or the wait runs out —
``Ask.timeout``, or the verb's own deadline less a moment to answer, whichever comes first.

The wait is the verb's own task awaiting an event: the keeper's loop goes on, and the
session's lock is let go (:func:`lock_let_go`) so that its verbs that do not act on its pages
(``bay live``: the human's link to the card; ``bay status``) answer meanwhile, while its page
verbs wait behind the asking one (:func:`behind_asking`): never overtaking it. A human
answers, takes over (which cuts the waiting verb: ``browser_interrupted``, and the card goes),
or answers a dialog without any lock; other sessions, even on the same browser, act meanwhile.
A card goes away however the wait ends.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import anyio

from browserbay.keeper.sessions import Session
from browserbay.model import Ask, PendingApproval
from browserbay.refusals import Refusal, clip

log = logging.getLogger("browserbay.keeper")

#: Time kept, out of a verb's deadline, to answer after the wait (and to act if approved).
ANSWER_MARGIN = 1.0
#: The shortest wait worth showing a card for; less is answered ``approval_timeout`` at once.
SHORTEST = 0.5


@dataclass
class _Open:
    shown: PendingApproval
    answered: anyio.Event = field(default_factory=anyio.Event)
    approved: bool = False
    by: str = ""


class Approvals:
    """Every approval a verb waits for, by id. One instance per keeper."""

    def __init__(self) -> None:
        self._open: dict[str, _Open] = {}
        self._ids = itertools.count(1)

    async def ask(
        self,
        ask: Ask,
        *,
        session: str,
        profile: str,
        tab: str,
        verb: str,
        what: str,
        url: str,
        deadline: float,
    ) -> None:
        """Wait for a human's answer; return when approved. Raise ``approval_denied`` or
        ``approval_timeout`` (``deadline``: the verb's, a ``time.monotonic()`` value)."""
        plugin = ask.plugin or "a policy"
        left = deadline - time.monotonic() - ANSWER_MARGIN
        wait = max(0.0, min(float(ask.timeout), left))
        now = time.time()
        shown = PendingApproval(
            id=f"a{next(self._ids)}",
            session=session,
            profile=profile,
            tab=tab,
            verb=verb,
            what=clip(what, 200),
            url=clip(url, 300),
            reason=clip(ask.reason, 300),
            plugin=clip(plugin, 80),
            asked=now,
            expires=now + wait,
        )
        # The refusal says what the card says: the plugin's words, clipped alike.
        fields = {"verb": verb, "what": shown.what, "plugin": shown.plugin, "reason": shown.reason}
        entry = _Open(shown)
        if wait >= SHORTEST:
            self._open[shown.id] = entry
            log.info("approval %s: %s %s waits for a human", shown.id, session, verb)
            try:
                with anyio.move_on_after(wait):
                    await entry.answered.wait()
            finally:
                self._open.pop(shown.id, None)
        if not entry.answered.is_set():
            longer = max(2 * float(ask.timeout), 60.0)
            raise Refusal("approval_timeout", waited=round(wait, 1), longer=longer, **fields)
        log.info("approval %s: %s", shown.id, "approved" if entry.approved else "denied")
        if not entry.approved:
            raise Refusal("approval_denied", by=entry.by, **fields)

    def answer(self, session: str, profile: str, approval_id: str, approve: bool, by: str) -> bool:
        """A human's answer to one approval of that lease; False when it is not pending."""
        entry = self._open.get(approval_id)
        if entry is None or (entry.shown.session, entry.shown.profile) != (session, profile):
            return False
        if entry.answered.is_set():
            return False
        entry.approved, entry.by = approve, by
        entry.answered.set()
        return True

    def of(self, session: str, profile: str) -> list[PendingApproval]:
        """The lease's pending approvals, oldest first."""
        return [
            e.shown
            for e in self._open.values()
            if (e.shown.session, e.shown.profile) == (session, profile) and not e.answered.is_set()
        ]

    def all(self) -> list[PendingApproval]:
        """Every pending approval, oldest first."""
        return [e.shown for e in self._open.values() if not e.answered.is_set()]


@contextlib.asynccontextmanager
async def lock_let_go(session: Session) -> AsyncIterator[None]:
    """The session's lock, let go while one of its verbs waits for a human (taken again
    before the verb acts: the wait may be cut, the taking never is), so the verbs that do
    not act on its pages — ``bay live`` (the human's link to the card), ``bay status``,
    ``bay handoff`` — are not held up. Its page verbs wait their turn behind it
    (:func:`behind_asking`). The session is not idle meanwhile (the housekeeping skips a
    session with ``asking``)."""
    if session.asking == 0:
        session.answered = anyio.Event()
    session.asking += 1
    session.lock.release()
    try:
        yield
    finally:
        with anyio.CancelScope(shield=True):
            await session.lock.acquire()
        session.asking -= 1
        if session.asking == 0:
            session.answered.set()  # the verbs behind it go, once it has acted and answered
        session.last_used = time.monotonic()


async def behind_asking(session: Session) -> None:
    """Called holding the session's lock by a verb that acts on the session's pages: while
    another of its verbs waits for a human's approval, wait (the lock let go) until that one
    has been answered and has acted. The card's verb is never overtaken by the session's
    next verb: what the human approves is the page as it was when asked."""
    while session.asking:
        answered = session.answered
        session.lock.release()
        try:
            await answered.wait()
        finally:
            with anyio.CancelScope(shield=True):
                await session.lock.acquire()
