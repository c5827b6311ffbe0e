"""The keeper: validates a request, finds the session, runs the verb under its deadline,
calls the lifecycle hooks and answers. One instance per daemon."""

from __future__ import annotations

import contextlib
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
from browserbay.keeper.browsers import BrowserPool, Running
from browserbay.keeper.pageverbs import HANDLERS, Act, page_error
from browserbay.keeper.sessions import Session, Tab, TabBook
from browserbay.model import (
    LeaseInfo,
    ProfileRef,
    SessionRef,
    VerbCall,
    VerbContext,
    VerbOutcome,
)
from browserbay.paths import BayPaths
from browserbay.plugins import Plugins
from browserbay.refusals import Refusal
from browserbay.store import Registry

if TYPE_CHECKING:
    from playwright.async_api import Page, Playwright

log = logging.getLogger("browserbay.keeper")
T = TypeVar("T")

_SESSION_ID = re.compile(r"^[A-Za-z0-9._:@-]{1,128}$")
IDLE_TIMEOUT = float(os.environ.get("BAY_IDLE_TIMEOUT", "900"))
BROWSER_GRACE = float(os.environ.get("BAY_BROWSER_GRACE", "30"))
DEFAULT_PROVIDER = os.environ.get("BAY_DEFAULT_PROVIDER", "chromium")


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
        self.pool.on_crash = self._browser_crashed
        self.stop_event = anyio.Event()
        self.swept: list[str] = []
        self.verb_table = plugins.verb_table()
        self.inflight = 0
        self.last_request = time.monotonic()

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
            await self._end_session(session, reason="keeper_stop")
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
            # The keeper's own verbs need no session and work whatever state the sessions
            # and providers are in (`bay keeper stop` always works).
            session = None if verb.scope == verbs.KEEPER else await self._session(ref)
            profile = session.profile if session is not None else None
            call = VerbCall(verb.name, _redact(verb, args), ref, profile)
            refusal = next(
                (r for r in self.plugins.hook.bay_before_verb(call=call) if r is not None), None
            )
            if refusal is not None:
                raise refusal.with_defaults(verb=verb.name, plugin="a policy")
            try:
                with anyio.fail_after(timeout):
                    if session is None:
                        data, text = await self._keeper_verb(verb.name, args)
                    else:
                        async with session.lock:
                            session.last_used = time.monotonic()
                            data, text = await self._run(verb, args, session, started, timeout)
                            session.last_used = time.monotonic()
            except TimeoutError:
                raise Refusal(
                    "deadline", verb=verb.name, timeout=timeout, longer=timeout * 2
                ) from None
            answer = {
                "ok": True,
                "verb": verb.name,
                "session": ref.as_row(),
                "profile": profile.as_row() if profile is not None else None,
                "data": data,
                "text": text,
            }
            if session is not None and session.notice:
                answer["notice"], session.notice = session.notice, None
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

    async def _session(self, ref: SessionRef) -> Session:
        session = self.sessions.get(ref.id)
        if session is None:
            # A missing provider is refused when a browser is needed, not here: `status`
            # and `close` work without one.
            row = self.plugins.providers.get(DEFAULT_PROVIDER)
            profile = ProfileRef(
                id=f"ep-{ref.id}",
                label="ephemeral",
                provider=DEFAULT_PROVIDER,
                tier=row.tier if row is not None else 1,
                ephemeral=True,
            )
            session = Session(ref, profile)
            self.sessions[ref.id] = session
            await self.db(self.registry.session_seen, ref.id, ref.origin)
        return session

    async def _run(
        self,
        verb: verbs.Verb,
        args: dict[str, Any],
        session: Session,
        started: float,
        timeout: float,
    ) -> tuple[dict[str, Any], str]:
        deadline = started + timeout
        if verb.name == "status":
            return await self._status(session)
        if verb.name == "close":
            closed = len(session.tabs)
            await self._end_session(session, reason="closed")
            return {"closed_tabs": closed}, f"closed {closed} tab(s) and the session's browser"
        row = self.plugins.providers.get(session.profile.provider)
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
                profile=session.profile,
                deadline=deadline,
                state_dir=self.paths.state,
                page=lambda: self._page_of(session),
            )
            return await self.plugins.verbs[verb.name].handler(ctx)
        if verb.name == "tab":
            return await self._tab_verb(session, args)
        tab = await self._current_tab(session)
        act = Act(verb.name, args, session, tab, deadline, self.plugins, self.paths.state / "shots")
        try:
            return await HANDLERS[verb.name](act)
        except Refusal:
            raise
        except Exception as exc:
            refusal = page_error(verb.name, timeout, exc)
            if refusal is None:
                raise
            raise refusal from None

    # -- browsers and tabs --------------------------------------------------------------

    async def _ensure_context(self, session: Session) -> None:
        if session.context is not None:
            return
        context, running = await self.pool.isolated_context(session.profile.provider)
        session.context, session.browser = context, running
        self._lease_changed(session, "attached")

        async def on_page(page: Page) -> None:
            # A page opened by one of the session's tabs (popup, target=_blank,
            # window.open) belongs to the same session. Adopt first, then learn the opener.
            tab = self._adopt(page, session)
            with contextlib.suppress(Exception):
                opener = await page.opener()
                if opener is not None and id(opener) in self.tabs.by_page:
                    tab.opener = self.tabs.by_page[id(opener)].id

        context.on("page", on_page)

    def _lease_changed(self, session: Session, change: str) -> None:
        lease = LeaseInfo(session.profile, session.ref, "agent", tuple(session.tabs))
        self.plugins.notify("bay_lease_changed", lease=lease, change=change)

    def _adopt(self, page: Page, session: Session) -> Tab:
        existing = self.tabs.by_page.get(id(page))
        if existing is not None:
            return existing
        tab = self.tabs.add(page, session, None)
        self._lease_changed(session, "tabs")

        def on_close(_page: Page) -> None:
            if tab.id in self.tabs.tabs:
                self.tabs.drop(tab, session, "closed by the page")
                self._lease_changed(session, "tabs")

        page.on("close", on_close)
        return tab

    async def _page_of(self, session: Session) -> Any:
        return (await self._current_tab(session)).page

    async def _current_tab(self, session: Session) -> Any:
        await self._ensure_context(session)
        if session.current is None or session.current not in session.tabs:
            await self._new_tab(session)
        assert session.current is not None
        return session.tabs[session.current]

    async def _new_tab(self, session: Session) -> Any:
        assert session.context is not None
        page = await session.context.new_page()
        tab = self._adopt(page, session)
        session.current = tab.id
        return tab

    async def _tab_verb(self, session: Session, args: dict[str, Any]) -> tuple[dict[str, Any], str]:
        action = str(args.get("action") or "list")
        arg = args.get("arg")
        if action == "list":
            rows = [
                dict(await t.row(), current=t.id == session.current) for t in session.tabs.values()
            ]
            others = sum(1 for t in self.tabs.tabs.values() if t.owner != session.ref.id)
            lines = [
                f"{'*' if r['current'] else ' '} {r['id']}  "
                f"{r['title'] or '(untitled)'}  {r['url']}"
                for r in rows
            ]
            text = "\n".join(lines) if lines else "(no tabs yet: bay open <url>)"
            return {"tabs": rows, "other_sessions_tabs": others}, text
        if action == "new":
            await self._ensure_context(session)
            tab = await self._new_tab(session)
            data: dict[str, Any] = {"tab": tab.id}
            if arg:
                from browserbay.keeper.pageverbs import normalize_url

                url = normalize_url(str(arg))
                await tab.page.goto(url, wait_until="load")
                data.update(url=tab.page.url, title=await tab.page.title())
            return data, tab.id
        if action == "close":
            tab_id = str(arg) if arg else session.current
            if tab_id is None:
                raise Refusal("tab_gone", tab="(current)", reason="the session has no tabs")
            tab = self.tabs.lookup(tab_id, session)
            self.tabs.drop(tab, session, "closed by bay tab close")
            await tab.page.close()
            self._lease_changed(session, "tabs")
            return {"closed": tab.id, "current": session.current}, f"closed {tab.id}"
        tab = self.tabs.lookup(action, session)
        session.current = tab.id
        await tab.page.bring_to_front()
        row = await tab.row()
        return dict(row, current=True), f"{tab.id}  {row['title']}  {row['url']}"

    async def _end_session(self, session: Session, reason: str) -> None:
        attached = session.context is not None
        if attached:
            self._lease_changed(session, "detached")  # with the tabs it had
        for tab in list(session.tabs.values()):
            self.tabs.drop(tab, session, f"its session was closed ({reason})")
        if session.context is not None and session.browser is not None:
            await self.pool.release_context(session.browser, session.context)
        session.context, session.browser, session.current = None, None, None
        self.sessions.pop(session.ref.id, None)
        await self.db(self.registry.session_closed, session.ref.id)

    async def _browser_crashed(self, running: Running) -> None:
        for session in list(self.sessions.values()):
            if session.browser is running:
                self._lease_changed(session, "detached")
                for tab in list(session.tabs.values()):
                    self.tabs.drop(tab, session, "its browser stopped unexpectedly")
                session.context, session.browser, session.current = None, None, None
                session.notice = (
                    "your browser stopped unexpectedly; a new one was started and your "
                    "earlier tabs are gone"
                )

    async def tick(self) -> None:
        """Housekeeping: idle sessions lose their browser; idle shared browsers stop. A
        session with a verb in flight is never idle."""
        for session in list(self.sessions.values()):
            if session.lock.locked() or not self._idle(session):
                continue
            async with session.lock:
                if not self._idle(session):  # a verb came in while we waited
                    continue
                if session.context is None:
                    # Nothing to close: forget it (it comes back at its next verb).
                    self.sessions.pop(session.ref.id, None)
                    continue
                log.info(
                    "session %s idle for %.0fs: closing its browser", session.ref.id, IDLE_TIMEOUT
                )
                await self._end_session(session, reason="idle")
        await self.pool.stop_idle(BROWSER_GRACE)

    @staticmethod
    def _idle(session: Session) -> bool:
        return time.monotonic() - session.last_used > IDLE_TIMEOUT

    # -- status -------------------------------------------------------------------------

    async def _status(self, session: Session) -> tuple[dict[str, Any], str]:
        tabs = [dict(await t.row(), current=t.id == session.current) for t in session.tabs.values()]
        data = dict(session.summary(), tabs=tabs, idle_timeout_s=IDLE_TIMEOUT)
        browser = (
            session.browser.id if session.browser else "not started (starts at the first page verb)"
        )
        text = (
            f"session {session.ref.id} ({session.ref.origin})\n"
            f"profile {session.profile.label} ({session.profile.id}) · {session.profile.provider} "
            f"tier {session.profile.tier}\nbrowser {browser}\ntabs {len(tabs)}"
        )
        return data, text

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

    async def _keeper_verb(self, name: str, args: dict[str, Any]) -> tuple[dict[str, Any], str]:
        if name == "verbs":
            rows = [v.to_row() for v in self.verb_table.values()]
            text = "\n".join(
                f"{r['name']:<11} {r['plugin'] or 'core':<12} {r['summary']}" for r in rows
            )
            return {"verbs": rows}, text
        if name == "plugins":
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
                + ", ".join(p["hooks"])
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
    values = value if spec.kind == "rest" else [value]
    if spec.kind == "rest" and (not isinstance(value, list) or not value):
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
