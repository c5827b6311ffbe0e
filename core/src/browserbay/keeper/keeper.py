"""The keeper: validates a request, finds the session and the lease it acts on, runs the verb
under its deadline, calls the lifecycle hooks and answers. One instance per daemon."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import logging
import os
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from browserbay import protocol, verbs
from browserbay._version import __version__
from browserbay.keeper.browsers import BrowserPool, pss_kib
from browserbay.keeper.leases import Leases, check_url_allowed
from browserbay.keeper.pageverbs import HANDLERS, Act, normalize_url, page_error
from browserbay.keeper.profiles import ProfileBook, parse_domains
from browserbay.keeper.sessions import Lease, Session, TabBook
from browserbay.model import ProfileRef, SessionRef, VerbCall, VerbContext, VerbOutcome
from browserbay.paths import BayPaths
from browserbay.plugins import Plugins
from browserbay.refusals import Refusal
from browserbay.store import Registry

if TYPE_CHECKING:
    from playwright.async_api import Playwright

log = logging.getLogger("browserbay.keeper")
T = TypeVar("T")
Answer = tuple[dict[str, Any], str]

_SESSION_ID = re.compile(r"^[A-Za-z0-9._:@-]{1,128}$")
IDLE_TIMEOUT = float(os.environ.get("BAY_IDLE_TIMEOUT", "900"))
BROWSER_GRACE = float(os.environ.get("BAY_BROWSER_GRACE", "30"))
DEFAULT_PROVIDER = os.environ.get("BAY_DEFAULT_PROVIDER", "chromium")
DEFAULT_PROFILE = os.environ.get("BAY_DEFAULT_PROFILE", "")
#: Verbs that work on the session as a whole, not on one chosen lease.
_WHOLE_SESSION = ("status", "close", "use", "pin")


class Keeper:
    def __init__(self, plugins: Plugins, registry: Registry, paths: BayPaths):
        self.plugins = plugins
        self.registry = registry
        self.paths = paths
        self.started = time.time()
        self.sessions: dict[str, Session] = {}
        self.tabs = TabBook()
        self._db_limiter = anyio.CapacityLimiter(1)
        self._pw: Playwright | None = None
        self._pw_cm: Any = None
        self._pw_lock = anyio.Lock()
        self.pool = BrowserPool(plugins, registry, paths, self.db, self.playwright)
        self.profiles = ProfileBook(registry, paths, plugins, self.db)
        self.leases = Leases(
            self.pool, self.tabs, registry, self.profiles, plugins, self.db, self.sessions
        )
        self.pool.on_crash = self.leases.crashed
        self.stop_event = anyio.Event()
        self.swept: list[str] = []
        self.verb_table = plugins.verb_table()
        self.inflight = 0
        self.last_request = time.monotonic()

    async def start(self) -> None:
        """Load what the registry knows. Tabs that were live when the last keeper died are
        now kept tabs that come back by themselves."""
        await self.profiles.load()
        revived = await self.db(self.registry.mark_live_tabs_auto)
        if revived:
            log.info("%d tab(s) of the last keeper's browsers are kept for restore", revived)

    def begin_stop(self) -> None:
        """Stop taking new connections at once (a client arriving now starts the next
        keeper, which waits for our lock), then let the daemon shut down gracefully."""
        if not self.stop_event.is_set():
            with contextlib.suppress(OSError):
                self.paths.socket.unlink()
        self.stop_event.set()

    # -- plumbing ---------------------------------------------------------------------

    async def db(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a registry call in the one writer thread, off the event loop."""
        return await anyio.to_thread.run_sync(
            functools.partial(fn, *args), limiter=self._db_limiter
        )

    async def playwright(self) -> Playwright:
        """The Playwright driver, started once. Its import (~200 ms) runs in a worker thread
        so the loop keeps serving; the daemon calls this at start to overlap the driver's
        ~300 ms start with the rest of its own start."""
        async with self._pw_lock:
            if self._pw is None:
                api = await anyio.to_thread.run_sync(
                    importlib.import_module, "playwright.async_api"
                )
                self._pw_cm = api.async_playwright()
                self._pw = await self._pw_cm.start()
            return self._pw

    async def close(self) -> None:
        for session in list(self.sessions.values()):
            for lease in session.running_leases:
                with contextlib.suppress(Exception):
                    await self.leases.end(session, lease, "keeper_stop")
        await self.pool.stop_all("keeper_stop")
        if self._pw_cm is not None:
            try:
                with anyio.move_on_after(5):
                    await self._pw_cm.__aexit__(None, None, None)
            except Exception:  # the driver may already be gone
                log.debug("playwright driver stop failed", exc_info=True)

    # -- requests ---------------------------------------------------------------------

    async def handle(self, frame: dict[str, Any]) -> dict[str, Any]:
        rid = frame.get("id")
        started = time.monotonic()
        call: VerbCall | None = None
        try:
            verb, args, ref, timeout = _validate(frame, self.verb_table)
            handle, group, actor = _context(frame, ref)
            # The keeper's own verbs need no session and work whatever state the sessions
            # and providers are in (`bay keeper stop` always works).
            session = None if verb.scope == verbs.KEEPER else self._session(ref, group)
            profile: ProfileRef | None = None
            call = VerbCall(verb.name, _redact(verb, args), ref, None)
            refusal = next(
                (r for r in self.plugins.hook.bay_before_verb(call=call) if r is not None), None
            )
            if refusal is not None:
                raise refusal.with_defaults(verb=verb.name, plugin="a policy")
            try:
                with anyio.fail_after(timeout):
                    if session is None:
                        data, text = await self._keeper_verb(verb.name, args, handle)
                    else:
                        async with session.lock:
                            await self._first_sight(session)
                            session.last_used = time.monotonic()
                            data, text, profile = await self._run(
                                verb, args, session, handle, actor, started, timeout
                            )
                            session.last_used = time.monotonic()
            except TimeoutError:
                raise Refusal(
                    "deadline", verb=verb.name, timeout=timeout, longer=timeout * 2
                ) from None
            call = dataclasses.replace(call, profile=profile)
            answer = {
                "ok": True,
                "verb": verb.name,
                "session": ref.as_row(),
                "profile": profile.as_row() if profile is not None else None,
                "data": data,
                "text": text,
            }
            if session is not None and session.notices:
                answer["notice"] = " · ".join(session.notices)
                session.notices.clear()
        except Refusal as r:
            answer = r.frame()
        except Exception as exc:
            log.exception("verb failed")
            answer = Refusal(
                "internal_error", verb=str(frame.get("verb")), reason=type(exc).__name__
            ).frame()
        if rid is not None:
            answer["id"] = rid
        if call is not None:
            ok = bool(answer["ok"])
            code = None if ok else str(answer["code"])
            elapsed = (time.monotonic() - started) * 1000
            self.plugins.notify("bay_after_verb", call=call, outcome=VerbOutcome(ok, code, elapsed))
            await self.db(
                self.registry.audit,
                call.session.id,
                call.profile.id if call.profile else None,
                call.verb,
                ok,
                code,
            )
        return answer

    def _session(self, ref: SessionRef, group: str | None) -> Session:
        session = self.sessions.get(ref.id)
        if session is None:
            session = Session(ref, group or ref.id)
            self.sessions[ref.id] = session
        elif group:
            session.group = group
        return session

    async def _first_sight(self, session: Session) -> None:
        if not session.leases and not getattr(session, "_seen", False):
            await self.db(self.registry.session_seen, session.ref.id, session.ref.origin)
            session._seen = True  # type: ignore[attr-defined]

    # -- choosing the lease -------------------------------------------------------------

    def _ephemeral(self, session: Session, chosen: str, domains: list[str]) -> Lease:
        pid = f"ep-{session.ref.id}"
        lease = session.leases.get(pid)
        row = self.plugins.providers.get(DEFAULT_PROVIDER)
        ref = ProfileRef(
            id=pid,
            label="ephemeral",
            provider=DEFAULT_PROVIDER,
            tier=row.tier if row is not None else 1,
            ephemeral=True,
            chosen=chosen,
        )
        if lease is None:
            lease = Lease(session.ref, ref, allowed_domains=tuple(domains))
            session.leases[pid] = lease
        else:
            lease.profile = ref
        return lease

    def _persistent(self, session: Session, pid: str, alias: str | None, chosen: str) -> Lease:
        row = self.profiles.rows[pid]
        ref = self.profiles.ref(row, chosen)
        lease = session.leases.get(pid)
        if lease is None:
            lease = Lease(session.ref, ref, alias=alias, allowed_domains=row.allowed_domains)
            session.leases[pid] = lease
        else:
            lease.profile, lease.alias = ref, alias
        return lease

    def _handles(self, atts: list[tuple[str, str | None]]) -> list[str]:
        out = []
        for pid, alias in atts:
            row = self.profiles.rows.get(pid)
            name = alias or (row.label if row else pid)
            out.append(f"{name} ({pid})")
        return out

    async def _choose(self, session: Session, handle: str | None) -> Lease:
        """The lease a verb acts on: --profile, else the pin, else the only attachment,
        else (with none) the last-used profile, the group's, the instance's, or the
        session's own ephemeral browser. Two or more attachments and no pin: refused."""
        sid = session.ref.id
        atts: list[tuple[str, str | None]] = await self.db(self.registry.attachments, sid)
        atts = [(pid, alias) for pid, alias in atts if pid in self.profiles.rows]
        state = await self.db(self.registry.session_state, sid)
        handles = self._handles(atts)
        if state["changed"]:
            await self.db(self.registry.ack_set, sid, handles)
            pinned = [h for (pid, _a), h in zip(atts, handles, strict=True) if pid == state["pin"]]
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
                was=", ".join(state["seen_handles"]) or "(none: ephemeral)",
                now=", ".join(handles) or "(none: ephemeral)",
                now_default=now_default,
                handles=handles,
            )
        if handle:
            if handle == "ephemeral":
                return self._ephemeral(session, "explicit", state["ephemeral_domains"])
            for pid, alias in atts:
                row = self.profiles.rows[pid]
                if handle in (alias, pid, row.label):
                    return await self._held(
                        session, self._persistent(session, pid, alias, "explicit")
                    )
            row = self.profiles.find(handle)  # a path or an unknown name says so
            raise Refusal(
                "profile_unknown",
                handle=handle,
                why="attached to this session",
                fix=f"bay use {row.id}   (then --profile {handle} works)",
            )
        pin = state["pin"]
        if pin == "ephemeral":
            return self._ephemeral(session, "pinned", state["ephemeral_domains"])
        for pid, alias in atts:
            if pid == pin:
                return await self._held(session, self._persistent(session, pid, alias, "pinned"))
        if len(atts) == 1:
            pid, alias = atts[0]
            return await self._held(session, self._persistent(session, pid, alias, "default"))
        if len(atts) >= 2:
            raise Refusal(
                "profile_required",
                count=len(atts),
                default=handles[0],
                handles=", ".join(handles),
                choices=handles,
            )
        ladder: list[tuple[str | None, str]] = [
            (state["last_profile"], "last-used"),
            (await self.db(self.registry.group_default, session.group), "group"),
            (self._instance_default(), "instance"),
        ]
        for candidate, rung in ladder:
            if candidate and candidate in self.profiles.rows:
                lease = self._persistent(session, candidate, None, rung)
                return await self._held(session, lease)
        return self._ephemeral(session, "ephemeral", state["ephemeral_domains"])

    def _instance_default(self) -> str | None:
        if not DEFAULT_PROFILE:
            return None
        try:
            return self.profiles.find(DEFAULT_PROFILE).id
        except Refusal:
            log.warning("BAY_DEFAULT_PROFILE=%s names no profile", DEFAULT_PROFILE)
            return None

    async def _held(self, session: Session, lease: Lease) -> Lease:
        await self.leases.check_hold(session, lease.profile.id)
        return lease

    # -- running a verb -----------------------------------------------------------------

    async def _run(
        self,
        verb: verbs.Verb,
        args: dict[str, Any],
        session: Session,
        handle: str | None,
        actor: SessionRef | None,
        started: float,
        timeout: float,
    ) -> tuple[dict[str, Any], str, ProfileRef | None]:
        deadline = started + timeout
        by_other = actor is not None and actor.id != session.ref.id
        if verb.name == "status":
            return await self._status(session, handle)
        if verb.name == "close":
            return await self._close(session, handle)
        if verb.name == "use":
            return await self._use(session, args, by_other, deadline)
        if verb.name == "pin":
            return await self._pin(session, args, by_other)
        if verb.name == "detach":
            return await self._detach(session, handle, by_other)
        lease = await self._choose(session, handle)
        row = self.plugins.providers.get(lease.profile.provider)
        for cell in verb.needs:
            if row is not None and not row.capabilities.cell(cell):
                raise Refusal(
                    "capability_missing", provider=row.id, verb=verb.name, capability=cell
                )
        if verb.scope == verbs.PLUGIN:
            ctx = VerbContext(
                verb=verb.name,
                args=args,
                session=session.ref,
                profile=lease.profile,
                deadline=deadline,
                state_dir=self.paths.state,
                page=lambda: self._page_of(session, lease),
                keys=self.plugins.key_admin,
            )
            data, text = await self.plugins.verbs[verb.name].handler(ctx)
            return data, text, lease.profile
        if lease.context is None and verb.scope != verbs.PLUGIN:
            # Tabs kept by an automatic stop come back with the session's next verb, even
            # one that would not start a browser by itself (`tab list`).
            state, kept = await self.db(self.registry.kept_tabs, session.ref.id, lease.profile.id)
            if kept and state in ("auto", "live"):
                await self.leases.ensure(session, lease)
        if verb.name == "resume":
            data, text = await self._resume(session, lease)
        elif verb.name == "tab":
            data, text = await self._tab_verb(session, lease, args)
        else:
            tab = await self.leases.current_tab(session, lease)
            act = Act(
                verb.name, args, lease, tab, deadline, self.plugins, self.paths.state / "shots"
            )
            try:
                data, text = await HANDLERS[verb.name](act)
            except Refusal:
                raise
            except Exception as exc:
                refusal = page_error(verb.name, timeout, exc)
                if refusal is None:
                    raise
                raise refusal from None
            finally:
                with contextlib.suppress(Exception):
                    await self.leases.persist(session, lease)
        await self.leases.persist(session, lease)
        return data, text, lease.profile

    async def _page_of(self, session: Session, lease: Lease) -> Any:
        return (await self.leases.current_tab(session, lease)).page

    # -- tabs ---------------------------------------------------------------------------

    async def _tab_verb(self, session: Session, lease: Lease, args: dict[str, Any]) -> Answer:
        action = str(args.get("action") or "list")
        arg = args.get("arg")
        if action == "list":
            rows = [dict(await t.row(), current=t.id == lease.current) for t in lease.tabs.values()]
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
            url = normalize_url(str(arg)) if arg else None
            if url:
                check_url_allowed(url, lease.allowed_domains)
            await self.leases.ensure(session, lease)
            tab = await self.leases.new_tab(lease)
            data: dict[str, Any] = {"tab": tab.id}
            if url:
                await tab.page.goto(url, wait_until="load")
                data.update(url=tab.page.url, title=await tab.page.title())
            return data, tab.id
        if action == "close":
            tab_id = str(arg) if arg else lease.current
            if tab_id is None:
                raise Refusal("tab_gone", tab="(current)", reason="the session has no tabs")
            tab = self.tabs.lookup(tab_id, session)
            owner = self.leases.lease_of(tab) or lease
            self.tabs.drop(tab, owner, "closed by bay tab close")
            await tab.page.close()
            self.plugins.notify("bay_lease_changed", lease=owner.info(), change="tabs")
            return {"closed": tab.id, "current": owner.current}, f"closed {tab.id}"
        tab = self.tabs.lookup(action, session)
        owner = self.leases.lease_of(tab) or lease
        owner.current = tab.id
        await tab.page.bring_to_front()
        row = await tab.row()
        return dict(row, current=True), f"{tab.id}  {row['title']}  {row['url']}"

    async def _resume(self, session: Session, lease: Lease) -> Answer:
        await self.leases.ensure(session, lease)  # an automatic stop restores by itself
        restored = await self.leases.resume_parked(session, lease)
        session.notices = [n for n in session.notices if "bay resume" not in n]
        tabs = [dict(await t.row(), current=t.id == lease.current) for t in lease.tabs.values()]
        return {"restored": restored, "tabs": tabs}, f"restored {restored} tab(s)"

    # -- the attachment set ---------------------------------------------------------------

    async def _use(
        self, session: Session, args: dict[str, Any], by_other: bool, deadline: float
    ) -> tuple[dict[str, Any], str, ProfileRef | None]:
        sid = session.ref.id
        if args.get("ephemeral"):
            domains = list(parse_domains(args.get("allowed_domains")))
            await self.db(self.registry.set_ephemeral_domains, sid, domains)
            lease = self._ephemeral(session, "explicit", domains)
            if lease.context is not None and tuple(domains) != lease.allowed_domains:
                await self.leases.end(session, lease, "restart")
            lease.allowed_domains = tuple(domains)
            text = "your own ephemeral browser" + (
                f", allowed domains: {', '.join(domains)}" if domains else ""
            )
            return {"allowed_domains": domains}, text, lease.profile
        if not args.get("profile"):
            raise Refusal("usage", detail="use needs a profile (or --ephemeral)", verb="use")
        row = self.profiles.find(str(args["profile"]))
        waited = 0.0
        if args.get("exclusive"):
            wait = float(args.get("wait") or 0)
            wait = max(0.0, min(wait, deadline - time.monotonic() - 0.5))
            waited = await self.leases.take_hold(session, row.id, wait)
        else:
            await self.leases.check_hold(session, row.id)
        alias = args.get("alias")
        await self.db(self.registry.attach, sid, row.id, alias, by_other)
        self.profiles.attached[row.id] = len(
            await self.db(self.registry.attachments_of_profile, row.id)
        )
        atts = await self.db(self.registry.attachments, sid)
        handles = self._handles(atts)
        if not by_other:
            await self.db(self.registry.ack_set, sid, handles)
        ref = self.profiles.ref(row, "explicit")
        data = {
            "attachments": handles,
            "default": handles[0],
            "exclusive": bool(args.get("exclusive")),
            "waited_s": round(waited, 2),
        }
        more = " (exclusive)" if args.get("exclusive") else ""
        return data, f"attached {row.label} ({row.id}){more}; set: {', '.join(handles)}", ref

    async def _detach(
        self, session: Session, handle: str | None, by_other: bool
    ) -> tuple[dict[str, Any], str, ProfileRef | None]:
        sid = session.ref.id
        atts = await self.db(self.registry.attachments, sid)
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
                    default=self._handles(atts)[0] if atts else "none",
                    handles=", ".join(self._handles(atts)) or "(none)",
                    choices=self._handles(atts),
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
        if lease is not None:
            await self.leases.end(session, lease, "closed")
            session.leases.pop(pid, None)
        await self.leases.release_hold(session, pid)
        await self.db(self.registry.detach, sid, pid, by_other)
        self.profiles.attached[pid] = len(await self.db(self.registry.attachments_of_profile, pid))
        handles = self._handles(await self.db(self.registry.attachments, sid))
        if not by_other:
            await self.db(self.registry.ack_set, sid, handles)
        row = self.profiles.rows.get(pid)
        ref = self.profiles.ref(row, "explicit") if row else None
        return {"detached": pid, "attachments": handles}, f"detached {pid}", ref

    async def _pin(
        self, session: Session, args: dict[str, Any], by_other: bool
    ) -> tuple[dict[str, Any], str, ProfileRef | None]:
        sid = session.ref.id
        if args.get("none"):
            await self.db(self.registry.set_pin, sid, None, by_other)
            return {"pin": None}, "unpinned", None
        handle = args.get("profile")
        if not handle:
            raise Refusal("usage", detail="pin needs a handle (or --none)", verb="pin")
        atts = await self.db(self.registry.attachments, sid)
        pid = None
        if handle == "ephemeral":
            pid = "ephemeral"
        for p, alias in atts:
            row = self.profiles.rows.get(p)
            if handle in (p, alias) or (row is not None and row.label == handle):
                pid = p
        if pid is None:
            raise Refusal(
                "profile_unknown",
                handle=handle,
                why="attached to this session",
                fix=f"bay use {handle}   (then bay pin {handle})",
            )
        await self.db(self.registry.set_pin, sid, pid, by_other)
        if not by_other:
            await self.db(self.registry.ack_set, sid, self._handles(atts))
        return {"pin": pid}, f"pinned {handle}", None

    async def _close(
        self, session: Session, handle: str | None
    ) -> tuple[dict[str, Any], str, ProfileRef | None]:
        leases = session.running_leases
        if handle:
            lease = await self._choose(session, handle)
            leases = [lease] if lease.context is not None else []
        closed = 0
        for lease in leases:
            closed += await self.leases.end(session, lease, "closed")
        held = (
            [lease.profile.id for lease in leases]
            if handle
            else [pid for pid, _alias in await self.db(self.registry.attachments, session.ref.id)]
        )
        for pid in held:
            await self.leases.release_hold(session, pid)
        if not handle:
            await self.db(self.registry.session_closed, session.ref.id)
        text = f"closed {closed} tab(s); they are kept: bay resume reopens them"
        profile = leases[0].profile if len(leases) == 1 else None
        return {"closed_tabs": closed, "leases": len(leases)}, text, profile

    # -- housekeeping -------------------------------------------------------------------

    async def tick(self) -> None:
        """Idle sessions lose their browsers (tabs kept for restore); idle browsers stop. A
        session with a verb in flight is never idle."""
        for session in list(self.sessions.values()):
            if session.lock.locked() or not self._idle(session):
                continue
            async with session.lock:
                if not self._idle(session):  # a verb came in while we waited
                    continue
                running = session.running_leases
                if not running:
                    self.sessions.pop(session.ref.id, None)  # it comes back at its next verb
                    continue
                log.info(
                    "session %s idle for %.0fs: closing its browser", session.ref.id, IDLE_TIMEOUT
                )
                for lease in running:
                    await self.leases.end(session, lease, "idle")
        await self.pool.stop_idle(BROWSER_GRACE)

    @staticmethod
    def _idle(session: Session) -> bool:
        return time.monotonic() - session.last_used > IDLE_TIMEOUT

    # -- status -------------------------------------------------------------------------

    async def _status(
        self, session: Session, handle: str | None
    ) -> tuple[dict[str, Any], str, ProfileRef | None]:
        chosen: Lease | None = None
        try:
            chosen = await self._choose(session, handle)
        except Refusal as r:
            if r.code not in ("profile_required",):
                raise
        atts = await self.db(self.registry.attachments, session.ref.id)
        state = await self.db(self.registry.session_state, session.ref.id)
        leases: list[dict[str, Any]] = []
        for lease in session.leases.values():
            pss = (
                await anyio.to_thread.run_sync(pss_kib, lease.browser.handle.pid)
                if lease.browser
                else None
            )
            leases.append(
                {
                    "profile": lease.profile.as_row(),
                    "handle": lease.handle,
                    "browser": lease.browser.id if lease.browser else None,
                    "browser_pss_kib": pss,
                    "tabs": [
                        dict(await t.row(), current=t.id == lease.current)
                        for t in lease.tabs.values()
                    ],
                    "blocked_requests": lease.blocked
                    + (
                        lease.browser.blocked
                        if lease.browser and not lease.profile.ephemeral
                        else 0
                    ),
                }
            )
        data = {
            "session": session.ref.as_row(),
            "group": session.group,
            "attachments": self._handles(atts),
            "pin": state["pin"],
            "acts_on": chosen.profile.as_row() if chosen else None,
            "browser": chosen.browser.id if chosen and chosen.browser else None,
            "leases": leases,
            "idle_timeout_s": IDLE_TIMEOUT,
        }
        target = (
            f"{chosen.handle} ({chosen.profile.id}) · {chosen.profile.chosen}"
            if chosen
            else "a profile you name with --profile (two or more are attached)"
        )
        text = (
            f"session {session.ref.id} ({session.ref.origin}) · group {session.group}\n"
            f"acts on {target}\n"
            f"attachments: {', '.join(self._handles(atts)) or '(none)'}"
        )
        for item in leases:
            text += (
                f"\n  {item['handle']}: browser {item['browser'] or 'not running'}"
                f" · {len(item['tabs'])} tab(s)"
            )
        return data, text, chosen.profile if chosen else None

    def keeper_status(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "version": __version__,
            "socket": str(self.paths.socket),
            "home": str(self.paths.home) if self.paths.home else None,
            "log": str(self.paths.keeper_log),
            "registry": str(self.paths.registry),
            "uptime_s": round(time.time() - self.started, 1),
            "browsers": [r.as_row() for r in self.pool.running.values()],
            "sessions": [s.summary() for s in self.sessions.values()],
            "swept_at_start": self.swept,
        }

    def plugin_verb_rows(self) -> list[dict[str, Any]]:
        return [pv.verb.to_row() for pv in self.plugins.verbs.values()]

    def _running_profile(self, profile_id: str) -> dict[str, Any] | None:
        for r in self.pool.running.values():
            if r.profile_id == profile_id and not r.closing:
                return r.as_row()
        return None

    async def _keeper_verb(self, name: str, args: dict[str, Any], handle: str | None) -> Answer:
        if name == "verbs":
            table = [v.to_row() for v in self.verb_table.values()]
            listing = "\n".join(
                f"{r['name']:<11} {r['plugin'] or 'core':<12} {r['summary']}" for r in table
            )
            return {"verbs": table}, listing
        if name == "plugins":
            return self._plugins()
        if name == "new":
            return await self.profiles.new(args)
        if name == "adopt":
            return await self.profiles.adopt(args)
        if name == "forget":
            return await self.profiles.forget(
                str(args["profile"]), lambda pid: self._running_profile(pid) is not None
            )
        if name == "profiles":
            live = {pid: self._running_profile(pid) for pid in self.profiles.rows}
            for browser in live.values():
                if browser is not None:
                    browser["pss_kib"] = await anyio.to_thread.run_sync(pss_kib, browser["pid"])
            return await self.profiles.listing(bool(args.get("orphans")), live.get)
        if name == "triggers":
            from browserbay.keeper.triggers import triggers_dir

            path = triggers_dir(self)
            return {"path": str(path), "processed": str(path / "processed")}, str(path)
        if name == "group":
            target = self.profiles.find(str(args["profile"]))
            await self.db(self.registry.set_group_default, str(args["name"]), target.id)
            return {"group": args["name"], "profile": target.id}, (
                f"sessions with BAY_GROUP={args['name']} default to {target.label} ({target.id})"
            )
        if name == "audit":
            pid = self.profiles.find(handle).id if handle else None
            rows: list[dict[str, Any]] = await self.db(
                self.registry.audit_rows, pid, int(args.get("last") or 50)
            )
            text = "\n".join(
                f"{time.strftime('%H:%M:%S', time.localtime(float(r['at'])))} {r['session']:<16} "
                f"{r['profile'] or '-':<14} {r['verb']:<10} {'ok' if r['ok'] else r['code']}"
                for r in rows
            )
            return {"audit": rows}, text or "(no audit rows yet)"
        action = args["action"]
        if action == "stop":
            self.begin_stop()
            return {"stopping": True, "pid": os.getpid()}, f"keeper {os.getpid()} is stopping"
        status = self.keeper_status()
        text = (
            f"keeper pid {status['pid']} · version {status['version']} · up {status['uptime_s']}s\n"
            f"socket {status['socket']}\nbrowsers {len(status['browsers'])} · "
            f"sessions {len(status['sessions'])}\nlog {status['log']}"
        )
        return status, text

    def _plugins(self) -> Answer:
        providers = [
            {
                "id": p.id,
                "tier": p.tier,
                "summary": p.summary,
                "runnable": p.not_runnable is None and p.driver_factory is not None,
                "problem": p.not_runnable or (p.probe() if p.probe else None),
                "capabilities": p.capabilities.as_row(),
            }
            for p in self.plugins.providers.values()
        ]
        plugins = self.plugins.listing()
        lines = [
            f"{p['name']:<12} {p['distribution'] or '-':<22} {p['version'] or '-':<8} "
            + (f"BROKEN: {p['error']}" if p["error"] else ", ".join(p["hooks"]))
            for p in plugins
        ]
        lines.append("")
        lines += [
            f"provider {p['id']:<10} tier {p['tier']}  "
            + (
                "runnable"
                if p["runnable"] and not p["problem"]
                else f"NOT runnable: {p['problem']}"
            )
            for p in providers
        ]
        return {"plugins": plugins, "providers": providers}, "\n".join(lines)


def _context(
    frame: dict[str, Any], ref: SessionRef
) -> tuple[str | None, str | None, SessionRef | None]:
    """The frame's ``profile`` handle, ``group`` and ``actor`` (who asks, when it acts on
    another session), checked."""
    handle = frame.get("profile")
    if handle is not None and (not isinstance(handle, str) or not 0 < len(handle) <= 256):
        raise Refusal("bad_frame", reason="profile must be a handle of 1-256 characters")
    group = frame.get("group")
    if group is not None and (not isinstance(group, str) or not _SESSION_ID.match(group)):
        raise Refusal("bad_frame", reason="group is 1-128 of A-Z a-z 0-9 . _ : @ -")
    actor = frame.get("actor")
    actor_ref = None
    if (
        isinstance(actor, dict)
        and isinstance(actor.get("id"), str)
        and _SESSION_ID.match(actor["id"])
    ):
        actor_ref = SessionRef(actor["id"], "flag")
    return handle, group, actor_ref


# -- request validation -------------------------------------------------------------------


def _validate(
    frame: dict[str, Any], table: dict[str, verbs.Verb] | None = None
) -> tuple[verbs.Verb, dict[str, Any], SessionRef, float]:
    table = verbs.BY_NAME if table is None else table
    name = frame.get("verb")
    if not isinstance(name, str) or name not in table:
        raise Refusal("bad_frame", reason=f"unknown verb {name!r}")
    verb = table[name]
    if verb.scope == verbs.LOCAL:
        raise Refusal("bad_frame", reason=f"'{name}' runs in the client, not the keeper")
    args = frame.get("args", {})
    if not isinstance(args, dict):
        raise Refusal("bad_frame", reason="args must be an object")
    known = {a.name: a for a in verb.args}
    clean: dict[str, Any] = {}
    for key, value in args.items():
        spec = known.get(key)
        if spec is None:
            raise Refusal("bad_frame", reason=f"'{name}' takes no argument {key!r}")
        clean[key] = _check_arg(name, spec, value)
    for spec in verb.args:
        if spec.kind in ("pos", "rest") and spec.name not in clean:
            raise Refusal("usage", detail=f"'{name}' needs <{spec.name}>", verb=name)
    session = frame.get("session")
    if not isinstance(session, dict) or not isinstance(session.get("id"), str):
        raise Refusal("bad_frame", reason="session must be an object with an id")
    sid = session["id"]
    if not _SESSION_ID.match(sid):
        raise Refusal("bad_frame", reason="a session id is 1-128 of A-Z a-z 0-9 . _ : @ -")
    origin = session.get("origin", "api")
    if origin not in ("env", "flag", "shell", "api"):
        origin = "api"
    timeout = frame.get("timeout", verbs.DEFAULT_TIMEOUT)
    if (
        not isinstance(timeout, (int, float))
        or isinstance(timeout, bool)
        or not 0 < timeout <= 3600
    ):
        raise Refusal("bad_frame", reason="timeout must be a number of seconds in (0, 3600]")
    return verb, clean, SessionRef(sid, origin), float(timeout)


def _check_arg(verb: str, spec: verbs.Arg, value: Any) -> Any:
    if spec.kind == "flag":
        if not isinstance(value, bool):
            raise Refusal("bad_frame", reason=f"{spec.name} must be true or false")
        return value
    values = value if spec.kind in ("rest", "tail") else [value]
    if spec.kind in ("rest", "tail") and (not isinstance(value, list) or not value):
        raise Refusal("bad_frame", reason=f"{spec.name} must be a non-empty list")
    for v in values:
        if spec.type == "int":
            if not isinstance(v, int) or isinstance(v, bool):
                raise Refusal("usage", detail=f"{spec.name} must be a whole number", verb=verb)
        elif spec.type == "float":
            if not isinstance(v, (int, float)) or isinstance(v, bool):
                raise Refusal("usage", detail=f"{spec.name} must be a number", verb=verb)
        elif not isinstance(v, str):
            raise Refusal("bad_frame", reason=f"{spec.name} must be a string")
        elif len(v.encode("utf-8", "surrogatepass")) > protocol.MAX_ARG:
            raise Refusal(
                "too_large",
                what=f"argument {spec.name}",
                size=len(v.encode("utf-8", "surrogatepass")),
                limit=protocol.MAX_ARG,
                fix="pass a shorter value (put large data in a file the page fetches)",
            )
        if spec.choices and v not in spec.choices:
            raise Refusal(
                "usage", detail=f"{spec.name} must be one of {', '.join(spec.choices)}", verb=verb
            )
    return value


def _redact(verb: verbs.Verb, args: dict[str, Any]) -> dict[str, Any]:
    """What hooks and the audit may see: typed text becomes its length."""
    return {k: ({"chars": len(str(v))} if k in verb.secret_args else v) for k, v in args.items()}
