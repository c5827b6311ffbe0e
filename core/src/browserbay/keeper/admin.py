"""The keeper's own verbs: keeper status/stop, plugins, verbs, the profile registry (new,
profiles, forget, adopt, group), hints, triggers and audit. Each answers ``(args, handle)``
(and the channel the request came in on: see :class:`browserbay.keeper.route.OnKeeper`); none
needs a session."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from typing import Any

import anyio

from browserbay import procfs, verbs
from browserbay._version import __version__
from browserbay.keeper.audit import AuditTrail
from browserbay.keeper.backends import provider_row
from browserbay.keeper.base import Answer, Lifecycle
from browserbay.keeper.browsers import BrowserPool
from browserbay.keeper.channels import OWNER, Channel
from browserbay.keeper.fleet import Fleet
from browserbay.keeper.grants import GrantBook, grant_row
from browserbay.keeper.hints import listing as hints_listing
from browserbay.keeper.profiles import ProfileBook, parse_domains
from browserbay.keeper.sessions import Session
from browserbay.keeper.state import (
    KEEP_SESSION_COOKIES,
    check_host,
    kept,
    seed_profile,
    session_login,
)
from browserbay.keeper.triggers import triggers_dir
from browserbay.model import SessionRef
from browserbay.paths import BayPaths, ensure_private
from browserbay.plugins import Plugins
from browserbay.refusals import Refusal
from browserbay.registry import Db, GroupDefaults, Schema, SiteHints
from browserbay.settings import Configured

log = logging.getLogger("browserbay.keeper")

#: How long ``forget`` waits for its profile's closing browser to exit (seconds).
CLOSING_WAIT = 10.0


class AdminVerbs:
    def __init__(
        self,
        plugins: Plugins,
        groups: GroupDefaults,
        site_hints: SiteHints,
        db: Db,
        paths: BayPaths,
        pool: BrowserPool,
        profiles: ProfileBook,
        sessions: Mapping[str, Session],
        audit: AuditTrail,
        life: Lifecycle,
        table: Mapping[str, verbs.Verb],
        configured: Configured,
        grants: GrantBook,
        store: Schema,
        fleet: Fleet,
    ) -> None:
        self.plugins = plugins
        self.groups = groups
        self.site_hints = site_hints
        self.db = db
        self.paths = paths
        self.pool = pool
        self.profiles = profiles
        self.sessions = sessions
        self.audit_trail = audit
        self.life = life
        self.table = table
        """The verbs the keeper serves (the core's and the plugins'), for ``bay verbs``."""
        self.configured = configured
        """The keeper's settings and where each came from, for ``bay keeper status``."""
        self.grants = grants
        """The session sockets, listed by ``bay keeper status``."""
        self.store = store
        """The registry's store: where it is, for ``bay keeper status``."""
        self.fleet = fleet
        """The keepers sharing the registry, listed by ``bay keeper status``."""

    def keeper_status(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "version": __version__,
            "socket": str(self.paths.socket),
            "home": str(self.paths.home) if self.paths.home else None,
            "log": str(self.paths.keeper_log),
            "registry": self.store.location(),
            "uptime_s": round(time.time() - self.life.started, 1),
            "browsers": [r.as_row() for r in self.pool.running.values()],
            "sessions": [s.summary() for s in self.sessions.values()],
            "swept_at_start": self.life.swept,
            "audit_failures": self.audit_trail.failures,
            "config": str(self.configured.file) if self.configured.file else None,
            "config_found": self.configured.file_found,
            "settings": [s.as_row() for s in self.configured.rows()],
            "grants": [grant_row(g) for g in self.grants.live],
        }

    def plugin_verb_rows(self) -> list[dict[str, Any]]:
        return [pv.verb.to_row() for pv in self.plugins.verbs.values()]

    def _running_profile(self, profile_id: str) -> dict[str, Any] | None:
        for r in self.pool.running.values():
            if r.profile_id == profile_id and not r.closing:
                return r.as_row()
        return None

    # -- the verbs ----------------------------------------------------------------------

    async def verbs(self, args: dict[str, Any], handle: str | None, channel: Channel) -> Answer:
        table = [v.to_row() for v in self.table.values()]
        listing = "\n".join(
            f"{r['name']:<11} {r['plugin'] or 'core':<12} {r['summary']}" for r in table
        )
        return {"verbs": table}, listing

    async def hints(self, args: dict[str, Any], handle: str | None, channel: Channel) -> Answer:
        return await hints_listing(
            args, self.site_hints, self.db, self.plugins.providers, channel.session
        )

    async def new(
        self,
        args: dict[str, Any],
        handle: str | None,
        channel: Channel,
        asking: SessionRef | None,
    ) -> Answer:
        """``--from-session``: the asking session's ephemeral browser's login, read before
        the profile is made (none running: refused, nothing made) and copied into the new
        profile's browser (see :func:`browserbay.keeper.state.seed_profile`)."""
        login = None
        if args.get("from_session"):
            if asking is None:
                raise Refusal("usage", detail="new --from-session needs a session", verb="new")
            if not self.profiles.owns_dirs(args.get("provider")):
                raise Refusal(
                    "usage",
                    detail="new --from-session makes a profile of a provider with its own "
                    "directory (chromium, cloak): no --provider cdp",
                    verb="new",
                )
            login, lasting = kept(
                await session_login(self.sessions.get(asking.id), asking.id), time.time()
            )
            for host in login.hosts():
                check_host(host, parse_domains(args.get("allowed_domains")))
        data, text = await self.profiles.new(args, channel)
        if login is not None:
            row = self.profiles.rows[data["id"]]
            try:
                await seed_profile(self.pool, row, login)
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await self.profiles.discard(row.id)
                raise
            data["seeded"] = {
                "cookies": len(login.cookies),
                "origins": len(login.origins),
                "session_cookies_kept_days": lasting and KEEP_SESSION_COOKIES // 86400,
            }
            text += f"\nkept the login of session {asking.id if asking else ''}: {login.summary()}"
            if lasting:
                text += (
                    f" ({lasting} session cookie(s) kept for {KEEP_SESSION_COOKIES // 86400} "
                    "days: a browser drops them when it stops)"
                )
        await self.pool.spread_devtools_ports()  # a cdp profile's port, kept off every tab
        return data, text

    async def adopt(self, args: dict[str, Any], handle: str | None, channel: Channel) -> Answer:
        return await self.profiles.adopt(args)

    async def forget(self, args: dict[str, Any], handle: str | None, channel: Channel) -> Answer:
        """A browser still closing writes into its profile's directory as it exits (Chromium
        saves its state last): the directory is archived and removed only once it is gone —
        waited for up to :data:`CLOSING_WAIT` seconds, else the profile counts as running."""
        row = self.profiles.find(str(args["profile"]), OWNER)
        end = time.monotonic() + CLOSING_WAIT
        while self._closing_profile(row.id) and time.monotonic() < end:  # noqa: ASYNC110
            await anyio.sleep(0.1)  # the driver's close ends it: no event of ours to wait on
        return await self.profiles.forget(
            str(args["profile"]),
            lambda pid: self._running_profile(pid) is not None or self._closing_profile(pid),
        )

    def _closing_profile(self, profile_id: str) -> bool:
        return any(r.profile_id == profile_id for r in self.pool.stopping.values()) or any(
            r.profile_id == profile_id and r.closing for r in self.pool.running.values()
        )

    async def profiles_listing(
        self, args: dict[str, Any], handle: str | None, channel: Channel
    ) -> Answer:
        live = {pid: self._running_profile(pid) for pid in self.profiles.rows}
        for browser in live.values():
            if browser is not None:
                pss = await anyio.to_thread.run_sync(procfs.tree_pss_kib, browser["pid"])
                browser["pss_kib"] = pss
                if channel.session is not None:  # a session socket: no other session's id
                    browser["sessions"] = [s for s in browser["sessions"] if s == channel.session]
        return await self.profiles.listing(bool(args.get("orphans")), live.get, channel)

    async def triggers(self, args: dict[str, Any], handle: str | None, channel: Channel) -> Answer:
        path = triggers_dir(self.paths)
        # The intake makes them as it starts; a caller asking first must find them too.
        for directory in (path, path / "processed"):
            await anyio.to_thread.run_sync(ensure_private, directory)
        return {"path": str(path), "processed": str(path / "processed")}, str(path)

    async def group(self, args: dict[str, Any], handle: str | None, channel: Channel) -> Answer:
        target = self.profiles.find(str(args["profile"]), channel)
        await self.db(self.groups.set, str(args["name"]), target.id)
        return {"group": args["name"], "profile": target.id}, (
            f"sessions with BAY_GROUP={args['name']} default to {target.label} ({target.id})"
        )

    async def audit(self, args: dict[str, Any], handle: str | None, channel: Channel) -> Answer:
        pid = self.profiles.find(handle, channel).id if handle else None
        rows = await self.audit_trail.rows(pid, int(args.get("last") or 50))
        text = "\n".join(
            f"{time.strftime('%H:%M:%S', time.localtime(r.at))} {r.who:<16} {r.session:<16} "
            f"{r.profile or '-':<14} {r.road or '-':<7} {r.verb:<10} "
            f"{'ok' if r.ok else r.code}"
            for r in rows
        )
        return {"audit": [r.as_row() for r in rows]}, text or "(no audit rows yet)"

    async def keeper(self, args: dict[str, Any], handle: str | None, channel: Channel) -> Answer:
        """``bay keeper stop`` / ``bay keeper status`` / ``bay keeper start --set`` (the CLI
        starts the keeper, then asks it: answered with the status only by a keeper started
        with those settings)."""
        if args.get("set") is not None:
            self._started_with(args)
        if args["action"] == "stop":
            self.life.begin_stop()
            return {"stopping": True, "pid": os.getpid()}, f"keeper {os.getpid()} is stopping"
        await self.audit_trail.flush()  # the failures of rows held until now are counted
        status = self.keeper_status()
        members = await self.fleet.members()
        status["keeper_id"] = self.fleet.keeper_id
        status["fleet"] = [m.as_row() for m in members]
        status["fleet_ttl_s"] = self.fleet.ttl
        book = self.fleet.standing
        if book is not None:
            status["standing"] = book.status()
        text = (
            f"keeper pid {status['pid']} · version {status['version']} · up {status['uptime_s']}s\n"
            f"socket {status['socket']}\nbrowsers {len(status['browsers'])} · "
            f"sessions {len(status['sessions'])} · session sockets {len(status['grants'])}\n"
            f"log {status['log']}\n" + self._settings_text()
        )
        text += f"\nfleet ({len(members)} keeper(s), TTL {self.fleet.ttl:g}s):\n"
        text += "\n".join(m.line() for m in members)
        if book is not None:
            said = status["standing"]
            text += (
                "\nforwarded verbs' standing: "
                + ("served from the change channel" if said["healthy"] else "read each time")
                + f" ({'listening' if said['listening'] else 'not listening'}; "
                f"{said['served']} served, {said['read']} read, "
                f"channel lost {said['losses']} time(s))"
            )
        if self.audit_trail.failures:
            text += (
                f"\naudit rows not written: {self.audit_trail.failures} (see the log; a full "
                "disk under " + str(self.paths.home or self.paths.state) + "?)"
            )
        return status, text

    def _started_with(self, args: dict[str, Any]) -> None:
        """Refuses ``--set`` but on a ``start`` that started this keeper with exactly those
        settings: a keeper that ran already keeps the settings it started with."""
        if args["action"] != "start":
            raise Refusal("usage", detail="--set is for bay keeper start", verb="keeper")
        if not self.configured.started_with([str(w) for w in args["set"]]):
            raise Refusal(
                "usage",
                detail=f"a keeper is running already (pid {os.getpid()}) with the settings it "
                "started with; --set applies to a keeper that starts now: run bay keeper stop, "
                "then this command again",
                verb="keeper",
            )

    def _settings_text(self) -> str:
        """The config file and each setting that is not its default, with its source."""
        file = self.configured.file
        where = (
            "(none: a keeper started with hand-made paths)"
            if file is None
            else f"{file}" + ("" if self.configured.file_found else " (not there)")
        )
        given = self.configured.given()
        lines = [f"config {where}"]
        lines += [f"  {s.name} = {s.value!r}   ({s.source})" for s in given]
        if not given:
            lines.append("  every setting is its default")
        return "\n".join(lines)

    async def plugins_listing(
        self, args: dict[str, Any], handle: str | None, channel: Channel
    ) -> Answer:
        # Providers' probes look at the disk (a binary, a cache): off the loop.
        rows = list(self.plugins.providers.values())
        providers = await anyio.to_thread.run_sync(lambda: [provider_row(p) for p in rows])
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
