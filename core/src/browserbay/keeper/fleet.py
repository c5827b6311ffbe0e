"""This keeper as a member of a fleet (issue 22, item 2): its stable id, its row and
heartbeat in the registry's ``keepers`` table, and where each persistent profile's browser
runs (:meth:`Fleet.place`, the profile's claim).

A keeper alone on its SQLite file is a fleet of one: it registers and claims the same way,
and every claim is its own. On PostgreSQL several keepers share the registry; a profile's
browser runs on the keeper that holds its claim, and a verb on it elsewhere is forwarded
there (``link``) or refused with where it runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import re
import secrets
import socket
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.abc

from browserbay.keeper.standing import StandingBook
from browserbay.refusals import Refusal
from browserbay.registry import (
    Changes,
    Claim,
    Claims,
    Db,
    KeeperLock,
    KeeperRow,
    Keepers,
    KeeperStart,
    KeptTabs,
)

log = logging.getLogger("browserbay.keeper")

#: ``state/keeper-id``: the keeper's id, made once per home.
KEEPER_ID_FILE = "keeper-id"
KEEPER_ID = re.compile(r"kp-[0-9a-f]{8}")

#: The share of ``BAY_FLEET_TTL`` after its last renewal began at which a keeper that has
#: not renewed its claims since is *fenced* (stops its profiles' browsers and serves no
#: verb): the rest of the TTL is the margin for its browsers to close before any other
#: keeper may take their claims (docs/fleet.md, "Cut off from the registry").
FENCE_AT = 2 / 3
#: How many beats start within one TTL: at six, a keeper fences only when no beat sent in
#: the last two thirds of the TTL got through, which leaves each beat half the TTL.
BEATS_PER_TTL = 6


class KeeperIdBad(ValueError):
    """``state/keeper-id`` holds no keeper id (the message says what to do)."""


def keeper_id(state: Path) -> str:
    """The home's keeper id (``kp-<8 hex>`` in ``state/keeper-id``, mode 0600), made the
    first time: stable across the keeper's restarts, so its rows stay its own. Two keepers
    racing to make it agree (the file is made whole by an exclusive create, then read)."""
    path = state / KEEPER_ID_FILE
    with contextlib.suppress(FileExistsError):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(f"kp-{secrets.token_hex(4)}\n")
    text = path.read_text().strip()
    if not KEEPER_ID.fullmatch(text):
        raise KeeperIdBad(
            f"{path} holds no keeper id (kp- and 8 hex digits): remove it, and the keeper "
            "makes a new one (its old rows in a shared registry then stay the old id's)"
        )
    return text


def data_root(configured: str, home_data: Path) -> Path:
    """Where profiles' data is: ``BAY_FLEET_DATA`` (storage every keeper of the fleet
    mounts), else the home's data directory (this keeper's alone)."""
    return Path(configured) if configured else home_data


def host_name(configured: str) -> str:
    """The host the keeper registers: ``BAY_FLEET_HOST``, else the machine's name."""
    return configured or socket.gethostname()


@dataclass(frozen=True)
class Here:
    """The profile's browser runs (or starts) on this keeper: its claim is ours."""

    profile: str
    since: float


@dataclass(frozen=True)
class OnKeeper:
    """The profile's browser runs on another live keeper of the fleet (its row: its host,
    its ``listen`` address for the link)."""

    profile: str
    keeper: KeeperRow
    since: float
    cached: bool = False
    """Answered from :meth:`Fleet.where`'s cache (not read of the registry just now)."""


@dataclass(frozen=True)
class OnDeadKeeper:
    """The profile's browser ran on a keeper that is gone, and its data is not reachable
    from here (the host is what a refusal names)."""

    profile: str
    keeper_id: str
    host: str
    since: float


@dataclass(frozen=True)
class Member:
    """A keeper of the fleet, as ``bay keeper status`` shows it."""

    keeper: KeeperRow
    alive: bool
    claims: int
    me: bool

    def as_row(self) -> dict[str, object]:
        k = self.keeper
        return {
            "id": k.id,
            "host": k.host,
            "listen": k.listen,
            "pid": k.pid,
            "version": k.version,
            "alive": self.alive,
            "beat_age_s": round(k.beat_age, 1),
            "stopped": k.stopped_at is not None,
            "claims": self.claims,
            "me": self.me,
        }

    def line(self) -> str:
        k = self.keeper
        state = (
            "alive"
            if self.alive
            else ("stopped" if k.stopped_at is not None else f"silent {k.beat_age:.0f}s")
        )
        mark = " (this keeper)" if self.me else ""
        return (
            f"  {k.id} {k.host} {k.listen or '-'} pid {k.pid} · {state} · "
            f"{self.claims} claim(s){mark}"
        )


Placement = Here | OnKeeper | OnDeadKeeper
"""Where a persistent profile's browser runs, as the lease choice acts on it."""


def refuse_elsewhere(placed: Placement, handle: str) -> None:
    """Nothing when the profile's browser is here; else its refusal: on a live keeper,
    ``fleet_link_refused`` (a verb is forwarded there before it gets here,
    browserbay.keeper.forward: this is the race of its browser starting there meanwhile); on
    a gone one whose data is not here, ``profile_host_down`` naming its host."""
    if isinstance(placed, OnKeeper):
        host = placed.keeper.host
        raise Refusal(
            "fleet_link_refused",
            link=f"to keeper {placed.keeper.id} on {host}",
            reason=f"profile {handle}'s browser started there while this verb began here",
            fix="run the command again: it is forwarded there (or run it on "
            f"{host}); bay keeper status lists the fleet",
            profile=handle,
            keeper=placed.keeper.id,
            host=host,
        )
    if isinstance(placed, OnDeadKeeper):
        raise Refusal(
            "profile_host_down",
            profile=handle,
            keeper=placed.keeper_id,
            host=placed.host,
            since=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(placed.since)),
        )


class Fleet:
    """This keeper's membership: registered at start, beating every ``ttl/6`` (renewing
    its claims with it, and checking that its keeper id's lock is still its own), stopped
    at its end; and the claims of the persistent profiles it runs.

    The membership's calls (the registration, every beat, the stop) go through ``beat_db``:
    on PostgreSQL a registry lane of its own (its own thread and pooled connection), so a
    verb's registry call that waits — a row another transaction locked, a slow listing, a
    burst of verbs queued on the verbs' lane — never delays a renewal and cannot fence a
    healthy keeper. On SQLite (no fleet: its one connection) it is the verbs' lane."""

    def __init__(
        self,
        keepers: Keepers,
        claims: Claims,
        kept_tabs: KeptTabs,
        db: Db,
        me: KeeperStart,
        ttl: float,
        lock: KeeperLock,
        on_lost: Callable[[], None],
        shared: bool = False,
        beat_db: Db | None = None,
    ):
        """``lock``: the keeper id's hold on the registry; ``on_lost``: how the keeper
        stops when another process took that id's lock (the keeper's own stop);
        ``shared``: other keepers may take this one's claims (a PostgreSQL registry): it
        fences itself when its renewals stop getting through (:meth:`check_fence`);
        ``beat_db``: the heartbeat's registry lane (None: ``db``, the verbs')."""
        self.keepers = keepers
        self.claims = claims
        self.kept_tabs = kept_tabs
        self.db = db
        self.beat_db = beat_db if beat_db is not None else db
        self.me = me
        self.ttl = ttl
        self.lock = lock
        self.on_lost = on_lost
        self.lost = False
        """Another process runs under this keeper id now: the rows of the id are its."""
        #: :meth:`where`'s answers kept per profile, with when they were read (monotonic):
        #: a verb forwarded again within :attr:`cache_for` reads nothing of the registry.
        self._where: dict[str, tuple[OnKeeper, float]] = {}
        self.shared = shared
        #: When (monotonic) the last renewal that got through began: the server stamped
        #: the claims no earlier, so they expire no earlier than this plus the TTL.
        self.renewed = time.monotonic()
        self.fenced = False
        """Its renewals stopped getting through for :attr:`fence_after`: its profiles'
        browsers were stopped, and no verb is served until a beat gets through."""
        #: What the fence does to the keeper's browsers (set by the keeper: the pool's).
        self.on_fenced: Callable[[], Coroutine[object, object, None]] | None = None
        #: The forwarded verbs' standings served from the registry's change channel, and
        #: the channel's pings (set by the keeper on PostgreSQL; keeper/standing.py): each
        #: beat pings, so the change listener proves it hears in time.
        self.standing: StandingBook | None = None
        self.changes: Changes | None = None

    @property
    def beat_every(self) -> float:
        """Seconds between two beats' starts: a sixth of the TTL (:data:`BEATS_PER_TTL`)."""
        return self.ttl / BEATS_PER_TTL

    @property
    def cache_for(self) -> float:
        """How long a placement read of the registry is reused: a third of the TTL (a
        keeper that died meanwhile refuses the link once, and the next verb reads again)."""
        return self.ttl / 3

    def forget(self, profile_id: str) -> None:
        """The profile's placement is read of the registry again at its next verb (its
        keeper refused the verb, the link failed, or its claim changed here)."""
        self._where.pop(profile_id, None)

    @property
    def keeper_id(self) -> str:
        return self.me.id

    @property
    def fence_after(self) -> float:
        """Seconds without a renewal after which the keeper is fenced (of the TTL)."""
        return self.ttl * FENCE_AT

    def renewal_age(self) -> float:
        return time.monotonic() - self.renewed

    def check_fence(self) -> None:
        """Refuse a verb ``fleet_fenced`` while the keeper's claims may be another's soon
        (its last renewal began more than :attr:`fence_after` ago): checked before the
        verb reads the registry, so a registry that does not answer cannot hold it."""
        if not self.shared:
            return
        age = self.renewal_age()
        if self.fenced or age > self.fence_after:
            raise Refusal(
                "fleet_fenced",
                age=f"{age:.1f}",
                ttl=f"{self.ttl:g}",
                host=self.me.host,
            )

    async def start(self) -> None:
        begun = time.monotonic()
        await self.beat_db(self.keepers.register, self.me)
        self.renewed = begun

    async def beat(self) -> None:
        """One heartbeat: the keeper id's lock (taken again when the server dropped it
        with its connection), then the keeper's row and every claim it holds, all on the
        beat's own lane (:attr:`beat_db`: no verb's registry call is queued before it). When another
        process took the lock meanwhile (a home with a copied ``state/keeper-id`` started in
        the gap), that one runs under the id: this keeper stops, touching none of the id's
        rows (docs/fleet.md, "A copied keeper id")."""
        state = await self.beat_db(self.lock.recheck_keeper)
        if state == "lost":
            self.lost = True
            log.error(
                "keeper id %s: its registry lock was dropped and another keeper took it "
                "(a home with a copy of this home's state/keeper-id); this keeper stops — "
                "remove state/keeper-id in one of the homes to give it an id of its own",
                self.me.id,
            )
            self.on_lost()
            return
        if state == "retaken":
            log.warning("keeper id %s: the registry dropped its lock; taken again", self.me.id)
        await self.beat_db(self.keepers.beat, self.me.id)
        begun = time.monotonic()
        if self.fenced:
            # Its browsers were stopped by the fence: claims still held would have
            # nothing behind them. Free them all; the next verb claims again.
            await self.beat_db(self.claims.release_all, self.me.id)
            self.renewed = begun
            self.fenced = False
            log.warning(
                "fleet: the registry answers again; keeper %s serves verbs again (its "
                "claims were released: a profile's next verb places it anew)",
                self.me.id,
            )
            return
        await self.beat_db(self.claims.renew, self.me.id)
        self.renewed = begun
        await self.ping()

    async def ping(self) -> None:
        """This keeper's ping on the registry's change channel (keeper/standing.py): heard
        by its own listener, it proves the listener heard every change committed before
        it. A ping that fails is logged; the listener is unhealthy once no ping was heard
        for the book's bound, and the standings are read."""
        if self.standing is None or self.changes is None:
            return
        n = self.standing.next_ping()
        try:
            await self.beat_db(self.changes.ping, self.me.id, n)  # the beat's own lane
        except Exception as exc:
            log.warning("fleet: the change channel's ping failed: %s", exc)

    async def run(self) -> None:
        """Beat every sixth of the TTL, counted from when the last beat was sent (so a slow
        beat does not push the next one back), until cancelled; a failed beat is logged and
        tried again after a tenth of the TTL, so a registry that hiccups does not end the
        keeper. On a shared registry, the fence's watch beside it (:meth:`_watch`): with
        the fence at two thirds of the TTL, a beat may take up to half the TTL to get
        through (a loaded machine, a registry call queued before it) before the keeper
        fences itself — a third of the TTL when it beat every third. A beat waits for no
        verb's registry call: it has a lane of its own (:attr:`beat_db`)."""
        async with anyio.create_task_group() as tg:
            if self.shared:
                tg.start_soon(self._watch, tg)
            wait = self.beat_every
            while not self.lost:
                await anyio.sleep(wait)
                sent = time.monotonic()
                try:
                    await self.beat()
                    wait = max(0.0, sent + self.beat_every - time.monotonic())
                except Exception:
                    log.exception("the fleet heartbeat failed")
                    wait = self.ttl / 10
            tg.cancel_scope.cancel()

    async def _watch(self, tg: anyio.abc.TaskGroup) -> None:
        """The fence: when no renewal got through for :attr:`fence_after` (a beat that
        fails, or hangs on a registry that does not answer — this watch never waits for
        one), the keeper is fenced: its profiles' browsers are stopped
        (:attr:`on_fenced`, in a task of its own) and every verb is refused
        ``fleet_fenced`` until a beat gets through again — all before the TTL runs out and
        another keeper may take its claims."""
        while True:
            wait = self.renewed + self.fence_after - time.monotonic()
            if wait > 0 or self.fenced:
                await anyio.sleep(wait if wait > 0 else self.ttl / 10)
                continue
            self.fenced = True
            log.error(
                "fleet: keeper %s has not renewed its claims for %.1f s (BAY_FLEET_TTL %g s): "
                "fenced — its profiles' browsers stop and verbs are refused fleet_fenced "
                "until the registry answers again",
                self.me.id,
                self.renewal_age(),
                self.ttl,
            )
            if self.on_fenced is not None:
                tg.start_soon(self.on_fenced)

    async def stop(self) -> None:
        """The keeper's end: its claims are free for the others now, and its row says it
        stopped (not only that it stopped beating). Not when its id was lost: the rows of
        the id are the keeper's that runs under it now."""
        if self.lost:
            return
        await self.beat_db(self.claims.release_all, self.me.id)
        await self.beat_db(self.keepers.stop, self.me.id)

    async def place(self, profile_id: str, data: Path | None) -> Placement:
        """Where the profile's browser runs, taking its claim when it is free. ``data``:
        the profile's directory on this keeper (None: it has none, a remote browser's). A
        claim another keeper left (released, or expired with its keeper) is kept only when
        that directory is here (a keeper's data on its own disk is its alone): then that
        keeper's live tabs of the profile become ours to restore; else the profile runs
        where its data is — on that keeper while it lives (``OnKeeper``), nowhere when it
        is gone (``OnDeadKeeper``)."""
        self.forget(profile_id)  # the claim may change now: where() reads it again
        before = await self.db(self.claims.holder, profile_id)
        theirs = before is not None and before.keeper_id != self.me.id
        if before is not None and theirs and not before.held(self.ttl):
            # Another keeper's free claim: its data is with that keeper (it ran or made
            # the profile) unless it is here too. Taken only then, so the claim goes on
            # saying where the data is.
            reachable = data is None or await anyio.to_thread.run_sync(data.is_dir)
            if not reachable:
                return await self._elsewhere(before)
        claim = await self.db(self.claims.take, profile_id, self.me.id, self.ttl)
        if claim.keeper_id != self.me.id:
            return await self._elsewhere(claim)
        if before is None or not theirs:
            return Here(profile_id, claim.since)
        taken = await self.db(self.kept_tabs.take_over, profile_id)
        log.info(
            "profile %s taken over from keeper %s (%d live tab(s) to restore)",
            profile_id,
            before.keeper_id,
            taken,
        )
        return Here(profile_id, claim.since)

    async def where(
        self, profile_id: str, data: Path | None, fresh: bool = False
    ) -> OnKeeper | None:
        """The live keeper a verb on the profile goes to (over the fleet link), without
        taking anything: the one that holds its claim, or that held it last when the
        profile's data is not reachable here (``data``, as for :meth:`place`) — its
        browser stopped there, and starts there again. None: it runs here (or :meth:`place`
        decides: a free claim, a dead keeper's).

        Another keeper's answer is kept for :attr:`cache_for` (``cached`` on it; ``fresh``:
        read it again): the forwarder forgets it when that keeper refuses the verb or the
        link fails, and re-places once (browserbay.keeper.forward); :meth:`place` and
        :meth:`release` forget it (the claim changes here)."""
        kept = None if fresh else self._where.get(profile_id)
        if kept is not None and time.monotonic() - kept[1] < self.cache_for:
            return kept[0]
        self.forget(profile_id)
        read = time.monotonic()
        placed = await self._where_now(profile_id, data)
        if placed is not None:
            self._where[profile_id] = (dataclasses.replace(placed, cached=True), read)
        return placed

    async def _where_now(self, profile_id: str, data: Path | None) -> OnKeeper | None:
        claim = await self.db(self.claims.holder, profile_id)
        if claim is None or claim.keeper_id == self.me.id:
            return None
        row = await self.db(self.keepers.get, claim.keeper_id)
        if row is None or not row.alive(self.ttl):
            return None
        if not claim.held(self.ttl):
            reachable = data is None or await anyio.to_thread.run_sync(data.is_dir)
            if reachable:
                return None
        return OnKeeper(profile_id, row, claim.since)

    async def on_live(self, profile_id: str, keeper_id: str) -> OnKeeper | None:
        """The profile placed on ``keeper_id`` when that keeper is alive (a keyed profile's
        key home: its browser starts there); None when it is dead or unknown."""
        row = await self.db(self.keepers.get, keeper_id)
        if row is None or not row.alive(self.ttl):
            return None
        return OnKeeper(profile_id, row, time.time())

    async def _elsewhere(self, claim: Claim) -> Placement:
        """On the claim's keeper while it lives (it holds the claim, or the data), else
        on a dead one."""
        row = await self.db(self.keepers.get, claim.keeper_id)
        if row is not None and row.alive(self.ttl):
            return OnKeeper(claim.profile, row, claim.since)
        host = row.host if row is not None else "an unknown host"
        return OnDeadKeeper(claim.profile, claim.keeper_id, host, claim.since)

    async def members(self) -> list[Member]:
        """The fleet as ``bay keeper status`` lists it: every keeper that registered here,
        alive or not (its beat's age against the TTL), with the claims it holds."""
        rows = await self.db(self.keepers.all)
        counts = await self.db(self.claims.counts, self.ttl)
        return [Member(r, r.alive(self.ttl), counts.get(r.id, 0), r.id == self.me.id) for r in rows]

    async def release(self, profile_id: str) -> None:
        """The profile's browser stopped here: its claim is free."""
        self.forget(profile_id)
        await self.db(self.claims.release, profile_id, self.me.id)
