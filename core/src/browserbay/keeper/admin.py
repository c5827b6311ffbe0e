"""The keeper's own verbs: keeper status/stop, plugins, verbs, the profile registry (new,
profiles, forget, adopt, group), triggers and audit."""

from __future__ import annotations

import logging
import os
import time
from typing import TYPE_CHECKING, Any

import anyio

from browserbay import procfs
from browserbay._version import __version__
from browserbay.keeper.backends import provider_row
from browserbay.keeper.hints import listing as hints_listing

if TYPE_CHECKING:
    pass


from browserbay.keeper.base import (
    Answer,
    KeeperBase,
)

log = logging.getLogger("browserbay.keeper")


class AdminMixin(KeeperBase):
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
            "audit_failures": self.audit_failures,
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
            return await self._plugins()
        if name == "hints":
            return await hints_listing(args, self.registry.hints, self.db, self.plugins.providers)
        if name == "new":
            made = await self.profiles.new(args)
            await self.pool.spread_devtools_ports()  # a cdp profile's port, kept off every tab
            return made
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
                    pss = await anyio.to_thread.run_sync(procfs.tree_pss_kib, browser["pid"])
                    browser["pss_kib"] = pss
            return await self.profiles.listing(bool(args.get("orphans")), live.get)
        if name == "triggers":
            from browserbay.keeper.triggers import triggers_dir
            from browserbay.paths import ensure_private

            path = triggers_dir(self.paths)
            # The intake makes them as it starts; a caller asking first must find them too.
            for directory in (path, path / "processed"):
                await anyio.to_thread.run_sync(ensure_private, directory)
            return {"path": str(path), "processed": str(path / "processed")}, str(path)
        if name == "group":
            target = self.profiles.find(str(args["profile"]))
            await self.db(self.registry.groups.set, str(args["name"]), target.id)
            return {"group": args["name"], "profile": target.id}, (
                f"sessions with BAY_GROUP={args['name']} default to {target.label} ({target.id})"
            )
        if name == "audit":
            pid = self.profiles.find(handle).id if handle else None
            rows = await self.db(self.registry.audit.rows, pid, int(args.get("last") or 50))
            text = "\n".join(
                f"{time.strftime('%H:%M:%S', time.localtime(r.at))} {r.session:<16} "
                f"{r.profile or '-':<14} {r.road or '-':<7} {r.verb:<10} "
                f"{'ok' if r.ok else r.code}"
                for r in rows
            )
            return {"audit": [r.as_row() for r in rows]}, text or "(no audit rows yet)"
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
        if self.audit_failures:
            text += (
                f"\naudit rows not written: {self.audit_failures} (see the log; a full disk "
                "under " + str(self.paths.home or self.paths.state) + "?)"
            )
        return status, text

    async def _plugins(self) -> Answer:
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
