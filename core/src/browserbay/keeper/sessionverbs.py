"""The session's own verbs: tabs and resume (on the lease chosen for them), the attachment
set (use, detach, pin), close and status."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from typing import Any

import anyio

from browserbay import procfs
from browserbay.keeper.base import Answer
from browserbay.keeper.channels import Channel, owner_only
from browserbay.keeper.children import Children
from browserbay.keeper.choosing import LeaseChooser
from browserbay.keeper.controls import Controls
from browserbay.keeper.guard import host_allowed
from browserbay.keeper.hints import blocked
from browserbay.keeper.leases import Leases, blocked_requests, goto_guarded
from browserbay.keeper.pageverbs import page_error
from browserbay.keeper.profiles import ProfileBook, parse_domains
from browserbay.keeper.route import LeaseCall, SessionAnswer, SessionCall
from browserbay.keeper.sessions import Lease, Session, Tab, TabBook
from browserbay.keeper.switch import proposal_line
from browserbay.model import ProfileRef
from browserbay.plugins import Plugins
from browserbay.refusals import Refusal
from browserbay.registry import Attachments, Db, Proposals, Sessions, SiteHints
from browserbay.settings import BaySettings
from browserbay.urls import normalize_url

log = logging.getLogger("browserbay.keeper")


class TabVerbs:
    """``bay tab`` and ``bay resume``, on the lease the keeper chose (and guarded)."""

    def __init__(
        self, plugins: Plugins, tabs: TabBook, leases: Leases, profiles: ProfileBook
    ) -> None:
        self.plugins = plugins
        self.tabs = tabs
        self.leases = leases
        self.profiles = profiles

    async def tab(self, call: LeaseCall) -> Answer:
        try:
            return await self._tab(call.session, call.lease, call.args, call.channel)
        except Exception as exc:  # a page error (its browser died mid-verb) is typed
            refusal = page_error(call.verb.name, call.timeout, exc)
            if refusal is None:
                raise
            raise refusal from None

    async def _tab(
        self, session: Session, lease: Lease, args: dict[str, Any], channel: Channel
    ) -> Answer:
        action = str(args.get("action") or "list")
        arg = args.get("arg")
        if action == "list":
            # A snapshot of the tabs: a crash or a page closing may change them meanwhile.
            tabs = list(lease.tabs.values())
            rows = [dict(await t.row(), current=t.id == lease.current) for t in tabs]
            others = sum(
                1
                for t in self.tabs.tabs.values()
                if t.owner != session.ref.id
                and lease.browser is not None
                and (other := self.leases.lease_of(t)) is not None
                and other.browser is lease.browser
            )
            lines = [
                f"{'*' if r['current'] else ' '} {r['id']}  "
                f"{r['title'] or '(untitled)'}  {r['url']}"
                for r in rows
            ]
            if others:
                lines.append(f"({others} tab(s) of other sessions in this browser: not yours)")
            text = "\n".join(lines) if lines else "(no tabs yet: bay open <url>)"
            return {"tabs": rows, "other_sessions_tabs": others}, text
        if action == "new":
            url = normalize_url(str(arg)) if arg else None  # the fence ran in the guards
            await self.leases.ensure(session, lease)
            was = lease.current
            tab = await self.leases.new_tab(lease)
            data: dict[str, Any] = {"tab": tab.id}
            if url:
                # It becomes the current tab once loaded: until then (a crash, a keeper
                # killed meanwhile) the current tab is, and is kept as, the one it was.
                if was in lease.tabs:
                    self.tabs.select(lease, was)
                try:
                    opened = await self._load(lease, tab, url)
                    data.update(opened)
                    if "dialog" not in opened:  # its title would wait on the dialog's answer
                        data.update(title=await tab.page.title())
                    if tab.id not in lease.tabs:
                        # Its browser died as it loaded: the crash kept the tabs as they were
                        # (this one not current), so the answer may not say it opened.
                        raise Refusal(
                            "action_failed",
                            verb="tab",
                            reason="its browser stopped as the new tab loaded (your tabs come "
                            "back with your next verb)",
                        )
                    self.tabs.select(lease, tab.id)
                except BaseException:
                    # A refused `tab new` leaves no blank tab behind, and the current tab
                    # is the one it was.
                    self.tabs.drop(tab, lease, "its `tab new` failed")
                    if was in lease.tabs:
                        self.tabs.select(lease, was)
                    with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                        with anyio.move_on_after(5):
                            await tab.page.close()
                    raise
            return data, tab.id
        if action == "close":
            tab_id = str(arg) if arg else lease.current
            if tab_id is None:
                raise Refusal("tab_gone", tab="(current)", reason="the session has no tabs")
            tab = self.tabs.lookup(tab_id, session)
            owner = self.leases.lease_of(tab) or lease
            self.profiles.check_ref(owner.profile, channel)  # a tab of an ungranted profile
            self.tabs.drop(tab, owner, "closed by bay tab close")
            if self.leases.dialogs is not None:  # its dialog dismissed, no navigation in flight
                await self.leases.dialogs.leave([tab])
            await tab.page.close()
            self.plugins.hooks.bay_lease_changed(lease=owner.info(), change="tabs")
            return {"closed": tab.id, "current": owner.current}, f"closed {tab.id}"
        tab = self.tabs.lookup(action, session)
        owner = self.leases.lease_of(tab) or lease
        self.profiles.check_ref(owner.profile, channel)
        # Current only once it is in front: a switch refused because its browser died under
        # it changes nothing (the crash path keeps the current tab as it was).
        await tab.page.bring_to_front()
        self.tabs.select(owner, tab.id)
        row = await tab.row()
        return dict(row, current=True), f"{tab.id}  {row['title']}  {row['url']}"

    async def _load(self, lease: Lease, tab: Tab, url: str) -> dict[str, Any]:
        """Load ``url`` in the new tab. A dialog its page opens as it loads ends the wait at
        once (the page waits for the answer, so ``load`` would only come at the deadline):
        the tab is opened and current, the answer names the dialog (``Dialogs.during``)."""

        async def load() -> Answer:
            await goto_guarded(lease, tab.page, url, wait_until="load")
            return {"url": tab.page.url}, ""

        dialogs = self.leases.dialogs
        data, _ = await (dialogs.during(tab, "tab", load) if dialogs is not None else load())
        return {k: v for k, v in data.items() if k in ("url", "dialog", "finished")}

    async def resume(self, call: LeaseCall) -> Answer:
        session, lease = call.session, call.lease
        await self.leases.ensure(session, lease)  # an automatic stop restores by itself
        restored = await self.leases.resume_parked(session, lease)
        session.notices = [n for n in session.notices if "bay resume" not in n]
        tabs = [
            dict(await t.row(), current=t.id == lease.current) for t in list(lease.tabs.values())
        ]
        return {"restored": restored, "tabs": tabs}, f"restored {restored} tab(s)"


class SessionVerbs:
    """The attachment set (use, detach, pin), close and status: verbs on the session's
    state, not on one chosen lease."""

    def __init__(
        self,
        attachments: Attachments,
        sessions: Sessions,
        proposals: Proposals,
        site_hints: SiteHints,
        db: Db,
        profiles: ProfileBook,
        leases: Leases,
        chooser: LeaseChooser,
        plugins: Plugins,
        settings: BaySettings,
        children: Children,
        controls: Controls,
    ) -> None:
        self.attachments = attachments
        self.sessions = sessions
        self.proposals = proposals
        self.site_hints = site_hints
        self.db = db
        self.profiles = profiles
        self.leases = leases
        self.chooser = chooser
        self.plugins = plugins
        self.settings = settings
        self.children = children
        #: Who holds the input of each lease, its viewers, its browser's memory line.
        self.controls = controls

    async def blocked(self, call: SessionCall) -> SessionAnswer:
        """A claim recorded for the user; no profile is touched."""
        data, text = await blocked(
            call.args,
            call.session.ref,
            self.site_hints,
            self.db,
            self.plugins.providers,
            call.channel.session,
        )
        return data, text, None

    async def use(self, call: SessionCall) -> SessionAnswer:
        session, args, by_other, deadline = call.session, call.args, call.by_other, call.deadline
        sid = session.ref.id
        if args.get("ephemeral"):
            domains = list(parse_domains(args.get("allowed_domains")))
            if call.channel.grant is not None:
                state = await self.db(self.sessions.state, sid)
                _only_narrows(state.ephemeral_domains, domains, call.channel)
            await self.db(self.sessions.set_ephemeral_domains, sid, domains)
            lease = self.chooser.ephemeral(session, "explicit", domains)
            if lease.context is not None and tuple(domains) != lease.allowed_domains:
                await self.leases.end(session, lease, "restart")
            self.leases.fence(lease, tuple(domains))
            text = "your own ephemeral browser" + (
                f", allowed domains: {', '.join(domains)}" if domains else ""
            )
            return {"allowed_domains": domains}, text, lease.profile
        if not args.get("profile"):
            raise Refusal("usage", detail="use needs a profile (or --ephemeral)", verb="use")
        row = await self.profiles.find_fresh(str(args["profile"]), call.channel)
        waited = 0.0
        if args.get("exclusive"):
            wait = float(args.get("wait") or 0)
            wait = max(0.0, min(wait, deadline - time.monotonic() - 0.5))
            waited = await self.leases.take_hold(session, row.id, wait)
        else:
            await self.leases.check_hold(session, row.id)
        alias = args.get("alias")
        await self.db(self.attachments.attach, sid, row.id, alias, by_other)
        self.profiles.attached[row.id] = len(await self.db(self.attachments.of_profile, row.id))
        atts = await self.db(self.attachments.of_session, sid)
        handles = self.chooser.handles(atts)
        if not by_other:
            await self.db(self.sessions.ack_set, sid, handles)
        ref = self.profiles.ref(row, "explicit")
        if call.there is not None:  # its browser runs on another keeper: the answer says so
            lease = self.chooser.persistent(session, row.id, alias, "explicit")
            host = await call.there.host(lease)
            if host is not None:
                ref = dataclasses.replace(ref, host=host)
        data = {
            "attachments": handles,
            "default": handles[0],
            "exclusive": bool(args.get("exclusive")),
            "waited_s": round(waited, 2),
        }
        more = " (exclusive)" if args.get("exclusive") else ""
        return data, f"attached {row.label} ({row.id}){more}; set: {', '.join(handles)}", ref

    async def detach(self, call: SessionCall) -> SessionAnswer:
        session, handle, by_other, check = call.session, call.handle, call.by_other, call.check
        if call.channel.link is not None and handle:
            return await self.detached_there(call)
        sid = session.ref.id
        atts = await self.db(self.attachments.of_session, sid)
        if handle is None and not atts:
            raise Refusal(
                "profile_unknown",
                handle="(none)",
                why="there: this session has no profile attached",
                fix="bay status   (nothing to detach)",
            )
        if handle is None:
            if len(atts) != 1:
                raise Refusal(
                    "profile_required",
                    count=len(atts),
                    default=self.chooser.handles(atts)[0] if atts else "none",
                    handles=", ".join(self.chooser.handles(atts)) or "(none)",
                    choices=self.chooser.handles(atts),
                )
            pid = atts[0][0]
        else:
            match = [
                p
                for p, a in atts
                if handle in (p, a)
                or (p in self.profiles.rows and self.profiles.rows[p].label == handle)
            ]
            if not match:
                raise Refusal(
                    "profile_unknown",
                    handle=handle,
                    why="attached to this session",
                    fix="bay status   (lists your attachments)",
                )
            pid = match[0]
        lease = session.leases.get(pid)
        # A human holding its controls, or a backend switch's gap on it: refused.
        check(None, ending=[lease] if lease is not None else [])
        there = None
        if call.there is not None and pid in self.profiles.rows:
            # Its browser runs on another keeper: the session's lease there (its tabs, a
            # pause) ends there first — refused there, nothing is detached here.
            away = lease or self.chooser.persistent(session, pid, None, "explicit")
            there = await _there_or_gone(call, away)
        if lease is not None:
            await self.leases.end(session, lease, "closed")
        session.leases.pop(pid, None)
        await self.leases.release_hold(session, pid)
        await self.db(self.attachments.detach, sid, pid, by_other)
        self.profiles.attached[pid] = len(await self.db(self.attachments.of_profile, pid))
        handles = self.chooser.handles(await self.db(self.attachments.of_session, sid))
        if not by_other:
            await self.db(self.sessions.ack_set, sid, handles)
        row = self.profiles.rows.get(pid)
        ref = self.profiles.ref(row, "explicit") if row else None
        data = {"detached": pid, "attachments": handles}
        if there is not None:
            data["closed_tabs"] = there[0].get("closed_tabs", 0)
            ref = there[2] or ref
        return data, f"detached {pid}", ref

    async def detached_there(self, call: SessionCall) -> SessionAnswer:
        """``detach`` that another keeper forwarded for its session (``call.channel.link``):
        the session's lease of the profile here ends (its tabs closed, kept as a detach
        keeps them), refused while a human holds its controls; the attachment and the hold
        are the registry's, changed by that keeper."""
        session = call.session
        lease = await self.chooser.choose(session, call.handle, call.channel)
        call.check(None, ending=[lease])
        closed = await self.leases.end(session, lease, "closed")
        session.leases.pop(lease.profile.id, None)
        data = {"detached": lease.profile.id, "attachments": [], "closed_tabs": closed}
        return data, f"detached {lease.profile.id} here ({closed} tab(s) closed)", lease.profile

    async def pin(self, call: SessionCall) -> SessionAnswer:
        session, args, by_other = call.session, call.args, call.by_other
        sid = session.ref.id
        if args.get("none"):
            await self.db(self.sessions.set_pin, sid, None, by_other)
            return {"pin": None}, "unpinned", None
        handle = args.get("profile")
        if not handle:
            raise Refusal("usage", detail="pin needs a handle (or --none)", verb="pin")
        atts = await self.db(self.attachments.of_session, sid)
        pid = None
        if handle == "ephemeral":
            pid = "ephemeral"
        for p, alias in atts:
            row = self.profiles.rows.get(p)
            if handle in (p, alias) or (row is not None and row.label == handle):
                if row is not None:
                    self.profiles.check(row, handle, call.channel)
                pid = p
        if pid is None:
            raise Refusal(
                "profile_unknown",
                handle=handle,
                why="attached to this session",
                fix=f"bay use {handle}   (then bay pin {handle})",
            )
        await self.db(self.sessions.set_pin, sid, pid, by_other)
        if not by_other:
            await self.db(self.sessions.ack_set, sid, self.chooser.handles(atts))
        return {"pin": pid}, f"pinned {handle}", None

    async def close(self, call: SessionCall) -> SessionAnswer:
        session, handle, check = call.session, call.handle, call.check
        leases = session.running_leases
        if handle:
            lease = await self.chooser.choose(session, handle, call.channel)
            if call.there is not None:
                # Its browser runs on another keeper: its tabs (and a pause) are there.
                there = await call.there.run(lease)
                if there is not None:
                    await self.leases.release_hold(session, lease.profile.id)  # the registry's
                    return there
            leases = [lease] if lease.context is not None else []
        # A lease a human holds the controls of is not cut off; one in a backend switch's
        # gap holds no browser but is not closed: both refused.
        check(None, ending=leases if handle else list(session.leases.values()))
        children: list[str] = []
        closed = elsewhere = 0
        if not handle and call.there is not None:
            # The session's leases whose browsers run on other keepers end there, each by
            # a close of its profile — parts of this close, whose one row is this keeper's
            # (no row of theirs there: ForwardCall.part).
            away_leases = [x for x in session.leases.values() if x.context is None]
            for pid, alias in await self.db(self.attachments.of_session, session.ref.id):
                if pid not in session.leases and pid in self.profiles.rows:  # not used here yet
                    away_leases.append(self.chooser.persistent(session, pid, alias, "explicit"))
            for away in away_leases:
                there = await _there_or_gone(call, away, part=True)
                if there is not None:
                    elsewhere += 1
                    closed += int(there[0].get("closed_tabs") or 0)
        if handle:  # one lease: the session and its children go on
            for lease in leases:
                closed += await self.leases.close(session, lease)
        else:  # the whole session, and its child sessions with it
            here, children = await self.children.close(session)
            closed += here
        text = f"closed {closed} tab(s); they are kept: bay resume reopens them"
        if children:
            text += f"; its child session(s) closed too: {', '.join(children)}"
        profile = leases[0].profile if len(leases) == 1 else None
        data = {
            "closed_tabs": closed,
            "leases": len(leases) + elsewhere,
            "children_closed": children,
        }
        return data, text, profile

    async def status(self, call: SessionCall) -> SessionAnswer:
        session, handle = call.session, call.handle
        chosen: Lease | None = None
        try:
            chosen = await self.chooser.choose(session, handle, call.channel)
        except Refusal as r:
            if r.code not in ("profile_required",):
                raise
        atts = await self.db(self.attachments.of_session, session.ref.id)
        state = await self.db(self.sessions.state, session.ref.id)
        leases: list[dict[str, Any]] = []
        chosen_there: SessionAnswer | None = None
        # On a session socket, a lease the owner's channel opened for the session on a
        # profile it may not use is not shown (its tabs' URLs and titles are that profile's).
        shown = [
            x for x in session.leases.values() if self.profiles.reaches(x.profile, call.channel)
        ]
        for lease in shown:
            there = None
            if call.there is not None:  # status never fails for another keeper's answer
                there = await _there_or_gone(call, lease, any_refusal=True)
            if there is not None:
                # Its browser runs on another keeper: the lease there, as that keeper says
                # it (its browser, tabs, pause, viewers), with where.
                rows = there[0].get("leases")
                for item in rows if isinstance(rows, list) else []:
                    if isinstance(item, dict):
                        leases.append(dict(item, profile=_where(item, there[2])))
                if chosen is lease:
                    chosen_there = there
                continue
            pss = (
                await anyio.to_thread.run_sync(procfs.tree_pss_kib, lease.browser.handle.pid)
                if lease.browser
                else None
            )
            held = self.controls.status_of(lease)
            leases.append(
                {
                    "profile": lease.profile.as_row(),
                    "handle": lease.handle,
                    "browser": lease.browser.id if lease.browser else None,
                    "browser_pss_kib": pss,
                    "memory_over": held.memory_over,
                    "input_holder": held.input_holder,
                    "driver": held.driver,
                    "viewers": held.as_row()["viewers"],
                    "paused": held.as_row()["paused"],
                    "tabs": [
                        dict(await t.row(), current=t.id == lease.current)
                        for t in list(lease.tabs.values())
                    ],
                    "proposal": (
                        proposal.as_row(call.channel.session)
                        if not lease.profile.ephemeral
                        and (proposal := await self.db(self.proposals.get, lease.profile.id))
                        else None
                    ),
                    "blocked_requests": blocked_requests(lease),
                }
            )
        acts_on = chosen.profile if chosen else None
        browser = chosen.browser.id if chosen and chosen.browser else None
        if chosen_there is not None:
            acts_on = chosen_there[2] or acts_on
            browser = chosen_there[0].get("browser")
        data = {
            "session": session.ref.as_row(),
            "group": session.group,
            "attachments": self.chooser.handles(atts),
            "pin": state.pin,
            "acts_on": acts_on.as_row() if acts_on else None,
            "browser": browser,
            "leases": leases,
            "idle_timeout_s": self.settings.idle_timeout,
            "channel": call.channel.as_row(),
        }
        target = (
            f"{chosen.handle} ({chosen.profile.id}) · {chosen.profile.chosen}"
            + (f" · on {acts_on.host}" if acts_on and acts_on.host else "")
            if chosen
            else "a profile you name with --profile (two or more are attached)"
        )
        text = (
            f"session {session.ref.id} ({session.ref.origin}) · group {session.group}\n"
            f"channel: {call.channel.label}\n"
            f"acts on {target}\n"
            f"attachments: {', '.join(self.chooser.handles(atts)) or '(none)'}"
        )
        for item in leases:
            host = item["profile"].get("host") if isinstance(item["profile"], dict) else None
            text += (
                f"\n  {item['handle']}: browser {item['browser'] or 'not running'}"
                + (f" on {host}" if host else "")
                + f" · {len(item['tabs'])} tab(s) · {_holds(item)}"
            )
            for t in item["tabs"]:
                if t["frame"]:
                    gone = " (gone: bay frame main)" if t["frame"]["gone"] else ""
                    text += f"\n    tab {t['id']} acts inside frame {t['frame']['target']}{gone}"
            if item["proposal"]:
                text += f"\n    {proposal_line(item['proposal'])}"
        return data, text, acts_on


async def _there_or_gone(
    call: SessionCall, lease: Lease, any_refusal: bool = False, part: bool = False
) -> SessionAnswer | None:
    """``call``'s part for ``lease`` on the keeper its browser runs on (None: here). That
    keeper's refusal is raised (a human holds the controls there: ``browser_paused``); one
    that says it cannot be reached (``fleet_link_refused``, ``profile_host_down``) — or any,
    with ``any_refusal`` — is said in a notice instead: what is there ends with that
    keeper's idle timeout."""
    assert call.there is not None
    try:
        return await call.there.run(lease, part)
    except Refusal as r:
        if r.code not in UNREACHED and not any_refusal:
            raise
        note = (
            f"{call.verb.name}: profile {lease.profile.label}'s side on the keeper that runs "
            f"it was not reached ({r.code}): its tabs there end with that keeper's idle timeout"
        )
        if note not in call.session.notices:
            call.session.notices.append(note)
        return None


#: Refusals that say the keeper a lease's browser runs on was not reached.
UNREACHED = frozenset({"fleet_link_refused", "profile_host_down"})


def _where(item: dict[str, Any], ref: ProfileRef | None) -> Any:
    """A status row's profile from another keeper, with where it runs."""
    profile = item.get("profile")
    if ref is not None and ref.host and isinstance(profile, dict):
        return dict(profile, host=ref.host)
    return profile


def _holds(item: dict[str, Any]) -> str:
    """Who holds the input of a status row's lease, and who watches it, in words."""
    paused = item["paused"]
    if paused is None:
        words = "input: agent"
    else:
        driver = item["driver"] or "nobody driving yet"
        words = f"input: user ({driver}; a {paused['origin']} in session {paused['session']})"
    viewers = [f"{v['id']} ({v['mode']})" for v in item["viewers"]]
    if viewers:
        words += f" · viewers: {', '.join(viewers)}"
    if item["memory_over"]:
        words += " · over the memory line"
    return words


def _only_narrows(fence: tuple[str, ...], asked: list[str], channel: Channel) -> None:
    """On a session socket a session may fence its own browser, or narrow its fence, never
    lift or widen it: the fence may be the owner's (``bay use --ephemeral --allowed-domains
    … --session <id>`` on the owner's channel), and the registry does not say who set it.
    ``owner_only`` with the owner's command otherwise."""
    if not fence or (asked and all(host_allowed(d, fence) for d in asked)):
        return
    wanted = f" --allowed-domains {','.join(asked)}" if asked else ""
    raise owner_only(
        "lifting or widening your browser's domain fence" + f" (now {', '.join(fence)})",
        f"bay use --ephemeral{wanted} --session {channel.session}",
    )
