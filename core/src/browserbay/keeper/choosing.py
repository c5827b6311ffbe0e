"""Choosing the lease a verb acts on: --profile, the pin, the only attachment, the ladder
(last-used, group, instance), or the session's own ephemeral browser — among the profiles the
request's channel may use (every one on the owner's; on a session socket its grant's, its own
group's and its own ephemeral browser: :meth:`ProfileBook.usable`)."""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Sequence

from browserbay.keeper.channels import OWNER, Channel
from browserbay.keeper.leases import Leases
from browserbay.keeper.profiles import ProfileBook
from browserbay.keeper.sessions import Lease, Session
from browserbay.keeper.standing import StandingBook
from browserbay.model import ProfileRef
from browserbay.plugins import Plugins
from browserbay.refusals import Refusal
from browserbay.registry import (
    Attachment,
    Attachments,
    Db,
    GroupDefaults,
    Hold,
    Sessions,
    SessionState,
)
from browserbay.settings import BaySettings

log = logging.getLogger("browserbay.keeper")

#: The change clock :meth:`LeaseChooser.choose` read with the session's attachments (the
#: first statement of its one registry call; migration 13): a verb forwarded after it
#: carries it (``clock`` in the frame), so the browser's keeper is never behind what this
#: keeper saw. None: no choice read the registry in this request (set by ``Keeper``).
READ_CLOCK: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "browserbay_read_clock", default=None
)


class LeaseChooser:
    def __init__(
        self,
        plugins: Plugins,
        attachments: Attachments,
        sessions: Sessions,
        groups: GroupDefaults,
        db: Db,
        profiles: ProfileBook,
        leases: Leases,
        settings: BaySettings,
        standing: StandingBook | None = None,
    ) -> None:
        """``standing``: the forwarded verbs' standings this keeper serves from what its
        change listener heard (None: each is read, as on SQLite)."""
        self.standing = standing
        self.plugins = plugins
        self.attachments = attachments
        self.sessions = sessions
        self.groups = groups
        self.db = db
        self.profiles = profiles
        self.leases = leases
        self.settings = settings

    def ephemeral(
        self, session: Session, chosen: str, domains: Sequence[str], among: int = 0
    ) -> Lease:
        """The session's own ephemeral browser's lease (made at its first use); ``among``:
        how many profiles the session has attached (:attr:`ProfileRef.among`)."""
        pid = f"ep-{session.ref.id}"
        lease = session.leases.get(pid)
        row = self.plugins.providers.get(self.settings.default_provider)
        ref = ProfileRef(
            id=pid,
            label="ephemeral",
            provider=self.settings.default_provider,
            tier=row.tier if row is not None else 1,
            ephemeral=True,
            chosen=chosen,
            among=among,
        )
        if lease is None:
            lease = Lease(session.ref, ref, allowed_domains=tuple(domains))
            session.leases[pid] = lease
        else:
            self.leases.rebind(lease, ref, lease.alias)
        return lease

    def persistent(
        self, session: Session, pid: str, alias: str | None, chosen: str, among: int = 0
    ) -> Lease:
        row = self.profiles.rows[pid]
        ref = self.profiles.ref(row, chosen, among)
        lease = session.leases.get(pid)
        if lease is None:
            lease = Lease(session.ref, ref, alias=alias, allowed_domains=row.allowed_domains)
            session.leases[pid] = lease
        else:
            self.leases.rebind(lease, ref, alias)
        return lease

    def handles(self, atts: list[Attachment]) -> list[str]:
        """Attachments as the answers name them: ``alias-or-label (profile id)``."""
        out = []
        for pid, alias in atts:
            row = self.profiles.rows.get(pid)
            name = alias or (row.label if row else pid)
            out.append(f"{name} ({pid})")
        return out

    async def choose(self, session: Session, handle: str | None, channel: Channel) -> Lease:
        """The lease a verb acts on: --profile, else the pin, else the only attachment,
        else (with none) the last-used profile, the group's, the instance's, or the
        session's own ephemeral browser. Two or more attachments and no pin: refused.

        On a session socket a profile it may not use is out of reach whatever the road:
        naming it (``--profile``) is refused ``profile_not_granted``; a default that points
        at it (an attachment or a pin made on the owner's channel, a rung of the ladder) is
        passed over, so a bare verb acts on what the session may use — at worst its own
        ephemeral browser, as the refusal's way out says — and an attachment or pin passed
        over is named in the answer's notice."""
        if channel.link is not None and handle:
            # Another keeper's session, forwarded (browserbay.keeper.link): its keeper chose
            # the profile from its attachments (and judged its holds, in the shared
            # registry); here it may use that profile only (profile_not_granted else). A
            # verb that acts on it is judged again here (forwarded_may, from Keeper._run).
            row = self.profiles.find(handle, channel)
            return self.persistent(session, row.id, None, "explicit")
        sid = session.ref.id
        instance = self._instance_default(quiet=True)  # its hold is read with the rest
        atts, state, group_profile, holds, clock = await self.db(
            self._read, sid, session.group, instance
        )
        READ_CLOCK.set(clock)
        atts = [a for a in atts if a.profile in self.profiles.rows]
        handles = self.handles(atts)
        if state.changed:
            await self.db(self.sessions.ack_set, sid, handles)
            pinned = [h for (pid, _a), h in zip(atts, handles, strict=True) if pid == state.pin]
            if pinned:
                now_default = pinned[0] + ", the pin"
            elif len(handles) == 1:
                now_default = handles[0]
            elif handles:
                now_default = "the profile you name with --profile (two or more are attached)"
            else:
                now_default = "your own ephemeral browser"
            raise Refusal(
                "profile_changed",
                was=", ".join(state.seen_handles) or "(none: ephemeral)",
                now=", ".join(handles) or "(none: ephemeral)",
                now_default=now_default,
                handles=handles,
            )
        if handle:
            if handle == "ephemeral":
                return self.ephemeral(session, "explicit", state.ephemeral_domains, len(atts))
            for pid, alias in atts:
                row = self.profiles.rows[pid]
                if handle in (alias, pid, row.label):
                    self.profiles.check(row, handle, channel)
                    return await self._held(
                        session,
                        self.persistent(session, pid, alias, "explicit", len(atts)),
                        holds,
                    )
            row = await self.profiles.find_fresh(handle, channel)  # an unknown name says so
            raise Refusal(
                "profile_unknown",
                handle=handle,
                why="attached to this session",
                fix=f"bay use {row.id}   (then --profile {handle} works)",
            )
        mine = [a for a in atts if self.profiles.usable(self.profiles.rows[a.profile], channel)]
        if len(mine) < len(atts):
            passed = ", ".join(h for a, h in zip(atts, handles, strict=True) if a not in mine)
            notice = f"not granted to this session socket, so not used: {passed}"
            if notice not in session.notices:
                session.notices.append(notice)
        pin = state.pin
        if pin == "ephemeral":
            return self.ephemeral(session, "pinned", state.ephemeral_domains, len(mine))
        for pid, alias in mine:
            if pid == pin:
                return await self._held(
                    session, self.persistent(session, pid, alias, "pinned", len(mine)), holds
                )
        if len(mine) == 1:
            pid, alias = mine[0]
            lease = self.persistent(session, pid, alias, "default", 1)
            return await self._held(session, lease, holds)
        if len(mine) >= 2:
            choices = self.handles(mine)
            raise Refusal(
                "profile_required",
                count=len(mine),
                default=choices[0],
                handles=", ".join(choices),
                choices=choices,
            )
        ladder: list[tuple[str | None, str]] = [
            (state.last_profile, "last-used"),
            (group_profile, "group"),
            (self._instance_default(), "instance"),
        ]
        for candidate, rung in ladder:
            found = self.profiles.rows.get(candidate) if candidate else None
            if found is not None and self.profiles.usable(found, channel):
                lease = self.persistent(session, found.id, None, rung)
                return await self._held(session, lease, holds)
        return self.ephemeral(session, "ephemeral", state.ephemeral_domains)

    async def forwarded_may(self, session: Session, lease: Lease, channel: Channel) -> None:
        """A verb another keeper forwarded for its session (``channel.link``), re-judged
        here from the shared registry before it runs: that keeper judged it too, but a
        keeper runs only what its own reading allows. The origin session must have the
        profile attached (or as its last-used or its group's default: the rungs the
        registry holds; or its keeper says it reached it through its own instance
        default, ``standing``), else ``profile_unknown``; a hold of another group is refused
        ``profile_busy`` naming the holder, as the origin keeper refuses it."""
        link = channel.link
        assert link is not None
        assert link.session is not None
        pid = lease.profile.id
        book = self.standing
        key = (link.session, session.group, pid)
        kept = book.get(key, link.clock) if book is not None else None
        if kept is not None:
            may, holding = kept  # heard of no change since it was read (keeper/standing.py)
        else:
            # One statement, one hop when all is well.
            token = book.token() if book is not None else None
            may, holding, at = await self.db(
                self.attachments.standing_at, link.session, pid, session.group
            )
            if book is not None:
                book.put(key, token, may, holding, at)
        # Reached through the origin keeper's BAY_DEFAULT_PROFILE: that keeper's own setting,
        # which the registry does not hold — taken on its word, as its session's group is;
        # the holds below are judged here all the same.
        if not may and link.standing != "instance":
            raise Refusal(
                "profile_unknown",
                handle=pid,
                why=f"attached to session {link.session} (of keeper {link.keeper})",
                fix=f"bay use {pid}   (as that session, on its keeper)",
            )
        if holding is not None and holding != session.group:
            await self.leases.check_hold(session, pid)  # refused (or a dead holder's reclaimed)

    def _read(
        self, sid: str, group: str, instance: str | None
    ) -> tuple[list[Attachment], SessionState, str | None, dict[str, Hold | None], int]:
        """What :meth:`choose` reads of the registry, in one call on the registry's thread:
        every verb makes it, and each call is a thread hand-off (~0.1 ms on a quiet machine,
        milliseconds on a busy one, 0.2-0.3 ms both ways at load 4 in bench/RESULTS-fleet.md).
        With it the holds of every profile the choice may land on (the attachments, the
        last-used, the group's and the instance's default), so the hold check of the chosen
        one needs no call of its own. And the change clock, read first (in the
        attachments' statement, so no round trip of its own): what the rest saw is at least
        as new as it (:data:`READ_CLOCK`)."""
        atts, clock = self.attachments.of_session_at(sid)
        state = self.sessions.state(sid)
        group_profile = self.groups.get(group)
        candidates = [a.profile for a in atts]
        candidates += [p for p in (state.last_profile, group_profile, instance) if p]
        return atts, state, group_profile, self.leases.holds.of_profiles(candidates), clock

    def _instance_default(self, quiet: bool = False) -> str | None:
        """``quiet``: a setting that names no profile is not logged (it is, when the
        ladder comes to it)."""
        wanted = self.settings.default_profile
        if not wanted:
            return None
        try:
            return self.profiles.find(wanted, OWNER).id  # the owner's setting
        except Refusal:
            if not quiet:
                log.warning("BAY_DEFAULT_PROFILE=%s names no profile", wanted)
            return None

    async def _held(self, session: Session, lease: Lease, holds: dict[str, Hold | None]) -> Lease:
        await self.leases.check_hold(session, lease.profile.id, holds)
        return lease
