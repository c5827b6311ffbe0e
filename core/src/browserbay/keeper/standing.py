"""A forwarded verb's standing served from what this keeper heard (issue 22; docs/security.md
§14): the answers of :meth:`Attachments.standing` kept per (session, group, profile), kept
correct by the registry's change channel (migration 13, :mod:`browserbay.registry.changes`).

A listener thread (:class:`~browserbay.registry.pg.ChangeListener`, on a connection of its
own, never the verb pool's) blocks on the channel and tells this book what it hears: the
highest clock heard (:attr:`StandingBook.heard`, in commit order), each profile's last
change, this keeper's own pings. The event loop reads the book under a plain lock: no thread
hop on a verb's path. A kept answer is served (:meth:`StandingBook.get`) only when

- the listener is healthy: its connection is up and it heard this keeper's own ping sent at
  most :attr:`StandingBook.bound` seconds ago (a ping is a NOTIFY sent on each heartbeat,
  delivered in commit order: hearing it proves every change committed before it was heard);
- the frame's clock (the clock the origin keeper read in the snapshot of its own choice) is
  at or below :attr:`StandingBook.heard`: this keeper is never behind what that keeper saw;
- no change of the profile was heard after the answer was read (the answer is stamped with
  the clock read in the same statement), on the same connection of the listener;
- the answer lets the verb through (it may act, and no other group holds the profile): a
  refusal is read again every time.

Otherwise the standing is read (as before the book) and kept. A lost connection empties the
book; it is filled again only by reads begun after the listener listens again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

#: A kept answer's key: the origin session, its group, the profile.
Key = tuple[str, str, str]

#: Kept answers at most (the book is emptied when full: the next verbs read again).
MAX_KEPT = 4096
#: Pings whose send time is remembered until heard (older ones are forgotten).
MAX_PINGS = 64


class StandingBook:
    """What this keeper heard of the registry's changes, and the standings it read."""

    def __init__(
        self, keeper_id: str, bound: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.keeper_id = keeper_id
        self.bound = bound
        """Seconds: the listener is healthy while the last of this keeper's own pings it
        heard was sent at most this long ago (three heartbeats: half the fleet's TTL)."""
        self._clock = clock
        self._lock = threading.Lock()
        self._gen = 0  # the listener's connection (each LISTEN is a new one)
        self._listening = False
        self.heard = 0
        """The highest clock heard (or read right after LISTEN) on the listener's connection."""
        self._changed: dict[str, int] = {}
        self._kept: dict[Key, tuple[bool, str | None, int, int]] = {}
        self._sent: dict[int, float] = {}
        self._pings = 0
        self._ping_heard: float | None = None  # when the last ping heard was sent
        self.served = 0
        """Standings served from the book (``bay keeper status``)."""
        self.read = 0
        """Standings read of the registry for a forwarded verb."""
        self.losses = 0
        """Times the listener's connection was lost."""
        self.woke = 0
        """Times hold waiters here were woken by a change heard (``Leases.heard_change``)."""
        self.on_change: Callable[[str], None] | None = None
        """Called from the listener's thread with each changed profile (outside the lock):
        the keeper's hold waiters wake on it (:meth:`App.hear_changes`)."""

    # -- the listener's thread ---------------------------------------------------------

    def listening(self, clock: int) -> None:
        """The listener LISTENs on a new connection, and read ``clock`` after it."""
        with self._lock:
            self._gen += 1
            self._listening = True
            # What this connection heard starts at the clock read after its LISTEN: a
            # value heard on an earlier one (a forged NOTIFY's huge clock, say) ends here.
            self.heard = clock
            self._changed.clear()
            self._kept.clear()
            self._ping_heard = None

    def lost(self) -> None:
        """The listener's connection ended: nothing kept is served until it listens again."""
        with self._lock:
            if self._listening:
                self.losses += 1
            self._listening = False
            self._changed.clear()
            self._kept.clear()
            self._ping_heard = None

    def change(self, clock: int, profile: str) -> None:
        with self._lock:
            self.heard = max(self.heard, clock)
            if self._changed.get(profile, -1) < clock:
                self._changed[profile] = clock
        told = self.on_change
        if told is not None:
            told(profile)

    def ping(self, keeper_id: str, n: int) -> None:
        if keeper_id != self.keeper_id:
            return
        with self._lock:
            sent = self._sent.get(n)
            if sent is not None:
                self._ping_heard = sent if self._ping_heard is None else max(self._ping_heard, sent)
                for old in [k for k in self._sent if k <= n]:
                    del self._sent[old]

    # -- the event loop ----------------------------------------------------------------

    def next_ping(self) -> int:
        """The number of the ping about to be sent (its send time is remembered)."""
        with self._lock:
            self._pings += 1
            self._sent[self._pings] = self._clock()
            while len(self._sent) > MAX_PINGS:
                del self._sent[min(self._sent)]
            return self._pings

    def _healthy(self) -> bool:
        return (
            self._listening
            and self._ping_heard is not None
            and self._clock() - self._ping_heard <= self.bound
        )

    def healthy(self) -> bool:
        with self._lock:
            return self._healthy()

    def get(self, key: Key, clock: int | None) -> tuple[bool, str | None] | None:
        """The kept standing of ``key`` for a frame stamped ``clock`` (None: read it)."""
        with self._lock:
            if clock is None or not self._healthy() or clock > self.heard:
                return None
            kept = self._kept.get(key)
            if kept is None:
                return None
            may, holding, at, gen = kept
            if gen != self._gen or self._changed.get(key[2], -1) > at:
                return None
            self.served += 1
            return may, holding

    def token(self) -> int | None:
        """Taken before a read: the listener's connection it may be kept for (None: keep
        nothing, the listener is not healthy)."""
        with self._lock:
            self.read += 1
            return self._gen if self._healthy() else None

    def put(self, key: Key, token: int | None, may: bool, holding: str | None, at: int) -> None:
        """Keep a standing read at clock ``at`` (the read began under ``token``). Only one
        that lets a verb through (may, and no hold) is kept; a refusal is read again."""
        if token is None or not may or (holding is not None and holding != key[1]):
            return
        with self._lock:
            if token != self._gen or not self._listening:
                return
            if len(self._kept) >= MAX_KEPT:
                self._kept.clear()
            self._kept[key] = (may, holding, at, token)

    def count_woken(self) -> None:
        with self._lock:
            self.woke += 1

    def status(self) -> dict[str, object]:
        with self._lock:
            return {
                "woke": self.woke,
                "listening": self._listening,
                "healthy": self._healthy(),
                "heard": self.heard,
                "kept": len(self._kept),
                "served": self.served,
                "read": self.read,
                "losses": self.losses,
            }
