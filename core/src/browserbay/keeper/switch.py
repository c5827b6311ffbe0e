"""``bay backend``: the providers by tier, and switching a live profile's backend.

A backend is a property of the profile (its registry row's ``provider``), so a switch
changes that field and restarts the profile's one browser on the same directory:

1. the checks, before anything moves: the two rows can switch (``can_switch_to``), the
   target runs here and has its key, the version ladder (:mod:`browserbay.ladder`) allows
   the target's Chromium to open the directory;
2. when another session holds the profile or a human drives it, nothing stops: the switch
   is recorded as a *proposal* for its owner (``bay backend --accept``);
3. otherwise the gap: new verbs on the profile are refused ``browser_restarting``, the ones
   in flight finish (or are cut after a bound), every running lease's tabs are written as
   kept (state ``auto``, ids remembered), the browser is closed gracefully, the row takes the
   new provider (its options — the fingerprint seed — carried, never re-minted), and each
   lease reopens its tabs on the new browser under the same ids (the crash-restore path,
   :meth:`browserbay.keeper.leases.Leases.ensure`). Leases are never ended: sessions keep
   their handles, aliases and tab ids. A launch that fails rolls the profile back.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path
from typing import Any

import anyio

from browserbay.keeper.backends import (
    backend_listing,
    key_source,
    listing_text,
    switch_partners,
)
from browserbay.keeper.base import RestartGate
from browserbay.keeper.browsers import BrowserPool
from browserbay.keeper.channels import Channel, owner_only
from browserbay.keeper.choosing import LeaseChooser
from browserbay.keeper.controls import Controls
from browserbay.keeper.leases import Leases
from browserbay.keeper.profiles import ProfileBook, owner_of
from browserbay.keeper.route import SessionAnswer, SessionCall
from browserbay.keeper.sessions import Lease, Session, TabBook
from browserbay.ladder import Verdict, decide, read_dir_version
from browserbay.model import ProviderRow
from browserbay.plugins import Plugins
from browserbay.refusals import Refusal
from browserbay.registry import (
    Attachments,
    Db,
    KeptTab,
    KeptTabs,
    ProfileRow,
    Proposal,
    Proposals,
    Versions,
)

log = logging.getLogger("browserbay.keeper")

#: Seconds a switch waits for the verbs in flight on the profile before it cuts them.
DRAIN_TIMEOUT = 10.0

SwitchAnswer = SessionAnswer


@dataclasses.dataclass(frozen=True)
class Plan:
    """A switch that passed every check: what it will do."""

    row: ProfileRow
    target: ProviderRow
    options: dict[str, str]
    verdict: Verdict


class BackendSwitch:
    """``bay backend``: the listing, proposals, and the switch itself (the only opener of a
    restart gap)."""

    def __init__(
        self,
        plugins: Plugins,
        attachments: Attachments,
        proposals: Proposals,
        versions: Versions,
        kept_tabs: KeptTabs,
        db: Db,
        pool: BrowserPool,
        profiles: ProfileBook,
        leases: Leases,
        tabs: TabBook,
        sessions: dict[str, Session],
        controls: Controls,
        chooser: LeaseChooser,
        gate: RestartGate,
    ) -> None:
        self.plugins = plugins
        self.attachments = attachments
        self.proposals = proposals
        self.versions = versions
        self.kept_tabs = kept_tabs
        self.db = db
        self.pool = pool
        self.profiles = profiles
        self.leases = leases
        self.tabs = tabs
        self.sessions = sessions
        self.controls = controls
        self.chooser = chooser
        self.gate = gate

    async def backend(self, call: SessionCall) -> SwitchAnswer:
        session, args, handle, channel = call.session, call.args, call.handle, call.channel
        provider = args.get("provider")
        accept, decline = bool(args.get("accept")), bool(args.get("decline"))
        if sum((bool(provider), accept, decline)) > 1:
            raise Refusal(
                "usage",
                detail="give a provider, --accept or --decline (one of them)",
                verb="backend",
            )
        if not (provider or accept or decline):
            return await self._backend_list(session, handle, channel)
        lease = await self.chooser.choose(session, handle, channel)
        if lease.profile.ephemeral:
            raise Refusal(
                "usage",
                detail="an ephemeral browser has no backend to switch; register a profile "
                "on the provider you want: bay new <label> --provider <provider>",
                verb="backend",
            )
        self.gate.check(lease.profile.id, lease.handle)
        row = self.profiles.rows[lease.profile.id]
        if not channel.is_owner:
            await self._refuse_shared(call, row)
        if decline:
            return await self._decline(session, lease, row)
        if accept:
            return await self._accept(session, lease, row, bool(args.get("confirm_version")))
        plan = await self._plan(row, str(provider), bool(args.get("confirm_version")))
        others, driven = await self._holders(session, row.id)
        if others or driven:
            return await self._propose(session, lease, plan, others, driven)
        return await self._switch(session, lease, plan, accepted_from=None)

    # -- a session socket's limit ----------------------------------------------------------

    async def _refuse_shared(self, call: SessionCall, row: ProfileRow) -> None:
        """On a session socket a switch restarts only a browser of the session's own: the
        switch (or ``--accept``, or declining another's proposal) of a profile that is shared
        — not of its own group (the owner's, granted to it), held by another session, or
        driven by a human — is the owner's (``owner_only``, with the exact command). Nothing
        is recorded: not even a proposal. Withdrawing its own proposal stays open."""
        session, args = call.session, call.args
        if args.get("decline"):
            proposal = await self.db(self.proposals.get, row.id)
            if proposal is None or proposal.by == session.ref.id:
                return  # no_proposal, or withdrawing its own
        others, driven = await self._holders(session, row.id)
        why = []
        mine = owner_of(call.channel)
        if row.owner != mine:
            why.append(f"it belongs to {row.owner}, not to {mine}")
        if others:
            why.append(f"{len(others)} other session(s) hold it")
        if driven:
            why.append("a human drives it")
        if why:
            asked = call.verb.command_line(args)
            raise owner_only(
                f"{asked.removeprefix('bay ')} of profile {row.label} ({'; '.join(why)})",
                f"{asked} --profile {row.id}",
                condition="shared profile",
                profile=row.id,
            )

    # -- the listing ----------------------------------------------------------------------

    async def _backend_list(
        self, session: Session, handle: str | None, channel: Channel
    ) -> SwitchAnswer:
        chosen: Lease | None = None
        try:
            chosen = await self.chooser.choose(session, handle, channel)
        except Refusal as r:
            if r.code != "profile_required":
                raise
        data = await anyio.to_thread.run_sync(backend_listing, self.plugins)
        data["current"] = chosen.profile.as_row() if chosen else None
        proposal = None
        if chosen is not None and not chosen.profile.ephemeral:
            proposal = await self.db(self.proposals.get, chosen.profile.id)
        data["proposal"] = proposal.as_row(channel.session) if proposal else None
        text = listing_text(data, chosen.profile.provider if chosen else None)
        if chosen is not None:
            text = (
                f"profile {chosen.handle} ({chosen.profile.id}) is on "
                f"{chosen.profile.provider} (tier {chosen.profile.tier}); switch: bay backend "
                f"<provider>\n{text}"
            )
        if proposal is not None:
            text += "\n" + proposal_line(data["proposal"])
        return data, text, chosen.profile if chosen else None

    # -- the checks -----------------------------------------------------------------------

    async def _plan(self, row: ProfileRow, target_id: str, confirmed: bool) -> Plan:
        """Every check a switch passes before anything moves; refused by name otherwise."""
        if target_id == row.provider:
            raise Refusal(
                "usage",
                detail=f"profile {row.label} ({row.id}) is already on {target_id}",
                verb="backend",
            )
        target = self.pool.provider(target_id)  # backend_unavailable: not installed/runnable
        pair = row.provider in self.plugins.providers and target_id in switch_partners(
            self.plugins, row.provider
        )
        if not pair or not target.capabilities.owns_dir or not row.dir:
            raise Refusal(
                "capability_missing",
                provider=row.provider,
                verb=f"backend {target_id}",
                capability="can_switch_to",
                way_out="bay backend   (the listing's 'switch to/from' names the pairs that "
                "open the same directory)",
            )
        key = await anyio.to_thread.run_sync(key_source, target, self.plugins.keys)
        if key is not None and key["missing"]:
            raise Refusal(
                "backend_no_key",
                provider=target.id,
                integration=key["integration"],
                field=key["missing"][0],
                missing=key["missing"],
                source=key["source"],
                reason="; ".join(key["problems"]) or "no key of yours and no cluster default",
            )
        found = await anyio.to_thread.run_sync(read_dir_version, Path(row.dir))
        recorded = await self.db(self.versions.recorded, row.id)
        major = (
            await anyio.to_thread.run_sync(target.browser_major)
            if target.browser_major is not None
            else None
        )
        verdict = decide(found, recorded.major if recorded else None, major, confirmed)
        if verdict.code == "backend_downgrade":
            raise Refusal(
                "backend_downgrade",
                profile=row.label,
                provider=target.id,
                why=verdict.why,
                written=verdict.written,
                target=verdict.target,
                evidence=verdict.evidence,
                fix=f"stay on {row.provider}; or upgrade the {target.id} backend to Chromium "
                f"{verdict.written} or newer, then bay backend {target.id}",
            )
        if verdict.code == "backend_version_unknown":
            raise Refusal(
                "backend_version_unknown",
                profile=row.label,
                provider=target.id,
                why=verdict.why,
                evidence=verdict.evidence,
                written=verdict.written,
                target=verdict.target,
            )
        options = dict(row.options)
        if target.check_options is not None:
            offered = await anyio.to_thread.run_sync(target.check_options, dict(row.options))
            options = {**offered, **row.options}  # what the profile holds is never re-minted
        return Plan(row, target, options, verdict)

    async def _holders(
        self, session: Session, profile_id: str
    ) -> tuple[list[str], list[tuple[Session, Lease]]]:
        """The other sessions holding the profile (attached, or with a running lease), and
        the leases on it a human drives (a takeover or a handoff)."""
        others = set(await self.db(self.attachments.of_profile, profile_id))
        driven = []
        for s in self.sessions.values():
            lease = s.leases.get(profile_id)
            if lease is None:
                continue
            if lease.context is not None:
                others.add(s.ref.id)
            if lease.control.pause is not None:
                driven.append((s, lease))
        others.discard(session.ref.id)
        return sorted(others), driven

    # -- proposals ------------------------------------------------------------------------

    async def _propose(
        self,
        session: Session,
        lease: Lease,
        plan: Plan,
        others: list[str],
        driven: list[tuple[Session, Lease]],
    ) -> SwitchAnswer:
        row = plan.row
        reasons = []
        if others:
            reasons.append(f"other sessions hold it ({', '.join(others)})")
        if driven:
            reasons.append("a human holds the controls of a lease on it (live view or handoff)")
        tab = lease.tabs.get(lease.current) if lease.current else None
        proposal = Proposal(
            row.id,
            plan.target.id,
            session.ref.id,
            time.time(),
            " and ".join(reasons),
            tuple(sorted({*others, session.ref.id})),
            tab.page.url if tab is not None else None,
        )
        await self.db(self.proposals.propose, proposal)
        data = {"switched": False, "proposal": proposal.as_row(), "accept": _accept_cmd(row)}
        text = (
            f"NOT switched: {proposal.why}, so switching profile {row.label} ({row.id}) to "
            f"{plan.target.id} is recorded as a proposal for its owner (bay status and bay "
            f"profiles show it). The owner accepts it with: {_accept_cmd(row)}"
        )
        return data, text, lease.profile

    async def _accept(
        self, session: Session, lease: Lease, row: ProfileRow, confirmed: bool
    ) -> SwitchAnswer:
        proposal = await self._proposal_of(row)
        if proposal.by == session.ref.id:
            raise Refusal("own_proposal", profile=row.id, provider=proposal.provider)
        plan = await self._plan(row, proposal.provider, confirmed)
        _others, driven = await self._holders(session, row.id)
        for _s, held in driven:  # a profile a human drives is never interrupted
            self.controls.check(held, exempt=False)
        return await self._switch(session, lease, plan, accepted_from=proposal.by)

    async def _decline(self, session: Session, lease: Lease, row: ProfileRow) -> SwitchAnswer:
        proposal = await self._proposal_of(row)
        await self.db(self.proposals.drop, row.id)
        who = "withdrawn" if proposal.by == session.ref.id else "declined"
        data = {"switched": False, "declined": proposal.as_row()}
        return data, f"{who}: switching {row.label} to {proposal.provider}", lease.profile

    async def _proposal_of(self, row: ProfileRow) -> Proposal:
        proposal = await self.db(self.proposals.get, row.id)
        if proposal is None:
            raise Refusal("no_proposal", profile=row.id)
        return proposal

    # -- the switch -----------------------------------------------------------------------

    async def _switch(
        self, session: Session, lease: Lease, plan: Plan, accepted_from: str | None
    ) -> SwitchAnswer:
        target, pid = plan.target, plan.row.id
        # The checks awaited: another switch may have begun or ended on the profile since.
        # From here to the flag nothing awaits, so two switches never run at once.
        self.gate.check(pid, lease.handle)
        row = self.profiles.rows.get(pid)
        if row is None or row.provider != plan.row.provider:
            raise Refusal(
                "usage",
                detail=f"profile {plan.row.label} ({pid}) changed while this switch was checked "
                f"(now on {row.provider if row else 'nothing: forgotten'}); see bay backend",
                verb="backend",
            )
        was = row.provider
        self.gate.begin(pid, target.id)
        try:
            with anyio.CancelScope(shield=True):  # a deadline never cuts a switch half-way
                affected = await self._drain(pid, target.id)
                snapshots = [await self._keep(s, held) for s, held in affected]
                running = next(
                    (r for r in self.pool.running.values() if r.profile_id == pid),
                    None,
                )  # also a browser in its grace period, with no lease left on it
                for s, held in affected:
                    self.leases.set_aside(s, held, target.id)
                if running is not None:
                    await self.pool.stop(running, "switch")
                await self._set_backend(row, target, plan.options)
                try:
                    reopened = await self._reopen(affected, snapshots)
                except BaseException as exc:
                    await self._roll_back(row, affected, snapshots, target.id, exc)
                    raise
        finally:
            self.gate.end(pid)
        who = (
            f"{session.ref.id} accepting {accepted_from}'s proposal"
            if accepted_from
            else f"asked by {session.ref.id}"
        )
        tiers = f"tier {self.profiles.ref(row, 'explicit').tier} → tier {target.tier}"
        seed_words = (
            "; a fingerprint change is a new machine to a site: it may ask you to log in again"
            if self.plugins.providers.get(was) is None
            or self.plugins.providers[was].tier != target.tier
            else ""
        )
        for s, held in affected:
            if s is session:
                continue
            s.notices.append(
                f"profile {held.handle} was switched from {was} to {target.id} by "
                f"{session.ref.id}: your {reopened[s.ref.id]} tab(s) reopened at their URLs "
                "under the same ids; references from before are stale: bay snapshot -i" + seed_words
            )
        data = {
            "switched": True,
            "profile": pid,
            "from": was,
            "to": target.id,
            "by": session.ref.id,
            "accepted": accepted_from,
            "ladder": dataclasses.asdict(plan.verdict),
            "options_kept": sorted(plan.options),
            "reopened": reopened,
        }
        mine = reopened.get(session.ref.id)
        text = (
            f"switched {row.label} ({pid}) from {was} to {target.id} ({tiers}; {who}); "
            f"version ladder: {plan.verdict.why}"
        )
        text += (
            f"; {sum(reopened.values())} tab(s) of {len(reopened)} lease(s) reopened on it"
            if reopened
            else f"; its browser starts on {target.id} with the next verb"
        )
        if mine:
            text += " (yours under the same ids: bay tab list)"
        text += seed_words
        ref = dataclasses.replace(lease.profile, provider=target.id, tier=target.tier)
        return data, text, ref

    async def _drain(self, profile_id: str, target: str) -> list[tuple[Session, Lease]]:
        """New verbs on the profile are refused now (the restart gate); wait for the ones in
        flight, cut what is left after ``DRAIN_TIMEOUT``. Answers the running leases."""

        def leases() -> list[tuple[Session, Lease]]:
            return [
                (s, s.leases[profile_id])
                for s in list(self.sessions.values())
                if profile_id in s.leases
            ]

        end = time.monotonic() + DRAIN_TIMEOUT
        while any(held.control.inflight for _s, held in leases()) and time.monotonic() < end:  # noqa: ASYNC110 - bounded; a verb's end sets no event
            await anyio.sleep(0.05)
        for _s, held in leases():
            if Controls.cut_for_restart(held, target):
                log.info("cut the verbs in flight on %s for a backend switch", profile_id)
        end = time.monotonic() + DRAIN_TIMEOUT
        while any(held.control.inflight for _s, held in leases()) and time.monotonic() < end:  # noqa: ASYNC110 - bounded; a verb's end sets no event
            await anyio.sleep(0.05)
        return [(s, held) for s, held in leases() if held.context is not None]

    async def _keep(self, session: Session, lease: Lease) -> list[str]:
        """Write the lease's tabs as kept (``auto``: a keeper killed mid-switch restores
        them by itself) and answer their ids, in order — blank tabs included, so every id
        the session holds stays valid."""
        tabs = [(t.id, t.page.url, t.id == lease.current, t) for t in lease.tabs.values()]
        kept = []
        for _tab_id, url, current, tab in tabs:
            title = ""
            try:
                with anyio.move_on_after(2):
                    title = await tab.page.title()
            except Exception:
                title = ""
            kept.append(KeptTab(url or "about:blank", title, current))
        await self.db(self.kept_tabs.keep, session.ref.id, lease.profile.id, kept, "auto")
        return [tab_id for tab_id, *_rest in tabs]

    async def _set_backend(
        self, row: ProfileRow, target: ProviderRow, options: dict[str, str]
    ) -> None:
        await self.profiles.set_backend(row, target.id, options)
        for s in self.sessions.values():
            held = s.leases.get(row.id)
            if held is not None:
                ref = dataclasses.replace(held.profile, provider=target.id, tier=target.tier)
                self.leases.rebind(held, ref, held.alias)

    async def _reopen(
        self, affected: list[tuple[Session, Lease]], snapshots: list[list[str]]
    ) -> dict[str, int]:
        """Each lease joins the new browser and reopens its kept tabs under their ids."""
        reopened: dict[str, int] = {}
        for (s, held), ids in zip(affected, snapshots, strict=True):
            before = len(s.notices)
            await self.leases.ensure(s, held, ids)
            s.notices[before:] = [n for n in s.notices[before:] if not n.startswith("restored")]
            reopened[s.ref.id] = len(held.tabs)
        return reopened

    async def _roll_back(
        self,
        row: ProfileRow,
        affected: list[tuple[Session, Lease]],
        snapshots: list[list[str]],
        target: str,
        exc: BaseException,
    ) -> None:
        """The new backend did not start: the profile goes back to its provider and the
        leases reopen there (if even that fails, their tabs stay kept for the next verb)."""
        log.warning("switch of %s to %s failed (%r): rolling back", row.id, target, exc)
        for r in list(self.pool.running.values()):
            if r.profile_id == row.id:
                for s, held in affected:
                    if held.browser is r:
                        self.leases.set_aside(s, held, row.provider)
                await self.pool.stop(r, "switch_failed")
        source = self.plugins.providers.get(row.provider)
        if source is None:
            return
        await self._set_backend(row, source, dict(row.options))
        try:
            await self._reopen(affected, snapshots)
        except Exception:
            log.exception("reopening %s on %s after a failed switch failed", row.id, row.provider)
        for s, held in affected:
            s.notices.append(
                f"switching profile {held.handle} to {target} failed; it is back on "
                f"{row.provider} with your tabs"
            )


def _accept_cmd(row: ProfileRow) -> str:
    return f"bay backend --accept --profile {row.id}"


def proposal_line(p: dict[str, Any]) -> str:
    """A proposal (its registry row) in words, with the command that accepts it."""
    return (
        f"proposed: switch to {p['provider']} by session {p['by']} "
        f"({time.strftime('%H:%M:%S', time.localtime(p['at']))}; {p['why']}); the owner "
        f"accepts with bay backend --accept --profile {p['profile']}, or declines with --decline"
    )
