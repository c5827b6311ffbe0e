"""The hostile campaign's ``boundary`` family: the attacks issue 17's session socket closes
(:data:`campaigns.attacks.BOUNDARY`), each judged by what it changed in the world — the
other session's tab moved, its browser asked for the attacker's URL with the victim's
cookie, a profile row vanished from the registry file, the keeper's pid changed, a socket
answered that should not — never by the answer's code.

The stage (set up by the owner, on the owner's channel): ``owner-prof``, a profile of the
owner's that no grant names, with a cookie ``plant=<own mark>``; ``granted-prof``, the one
profile the attacker's grant names, with ``plant=<grant mark>``; the attacker
``attacker-b`` on that profile; a provider key and its "vendor" (a listener) stored by the
owner; a group default and a site hint of the owner's. The victim is the campaign's
``victim-e`` (an isolated context with the victim cookie). The owner acts as sessions
``boss`` and ``boss2`` (never named ``owner``: a profile's owner field says ``"owner"``).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import time
from pathlib import Path
from typing import Any, Protocol

from browserbay import client, procfs
from campaigns.agents import OWNER, Agent, RawConnection, answers, cli_frame, grant, stray_keepers
from campaigns.agents import revoke as revoke_grant
from campaigns.attacks import Attack
from campaigns.common import Home, browsers_under, registry_rows, wait_for
from campaigns.oracles import Listener, Servers

ATTACKER = "attacker-b"
VICTIM = "victim-e"
#: Sessions of others whose names must not reach the attacker on a session socket.
OTHERS = ("victim-e", "victim-c", "human-e", "boss", "boss2", "fenced")


class Stage(Protocol):
    """What the family needs of the campaign (campaigns.hostile.Campaign)."""

    h: Home
    mode: str
    servers: Servers
    vtoken: str
    ctoken: str
    grants: dict[str, tuple[str, ...]]

    def as_(self, session: str) -> Agent: ...

    def aid(self) -> str: ...

    def note(
        self, attack: Attack, code: str, oracles: list[str], t0: float, **extra: Any
    ) -> None: ...

    def record(
        self, attack: Attack, code: str, oracles: list[str], t0: float | None, **extra: Any
    ) -> None: ...

    def recover(self) -> None: ...

    def refresh_watch(self) -> None: ...


def stop_strays(h: Home, pids: list[int]) -> None:
    """Stop the keepers an agent's ``bay`` started (ours, by pid) and the browsers they
    started under the agents' HOME, before the next attempt (it must not see them)."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    if not wait_for(lambda: not any(procfs.alive(p) for p in pids), 10, 0.1):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    for pid in browsers_under(str(h.root / "agent-home")).values():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _code(frame: dict[str, Any]) -> str:
    return "answered" if frame.get("ok") else str(frame.get("code") or "untyped")


class Boundary:
    def __init__(self, c: Stage, listener: Listener):
        self.c = c
        self.h = c.h
        self.site = c.servers.site
        self.listener = listener
        self.own_mark = "own" + secrets.token_hex(10)
        self.grant_mark = "gr" + secrets.token_hex(10)
        self.key = "sk_" + secrets.token_hex(16)
        self.integration = ""

    # -- the stage ------------------------------------------------------------------------

    def setup(self) -> None:
        h, site = self.h, self.site
        for session, label, mark in (
            ("boss", "owner-prof", self.own_mark),
            ("boss2", "granted-prof", self.grant_mark),
        ):
            if not self.profile_id(label):
                h.ok("boss", "new", label=label)
            h.ok(session, "use", profile=label)
            h.ok(session, "open", url=f"{site}/plant/{mark}")
        h.ok("boss", "group", action="default", name="team", profile="owner-prof")
        from browserbay_cloud.vendors import VENDORS

        vendor = VENDORS[0]
        self.integration = vendor.id
        h.call("boss", "keys", action="set", integration=vendor.id, field="api_key", value=self.key)
        h.call(
            "boss",
            "keys",
            action="set",
            integration=vendor.id,
            field=vendor.url_field,
            value=f"http://127.0.0.1:{self.listener.port}",
        )
        self.c.grants[ATTACKER] = ("granted-prof",)
        me = self.c.as_(ATTACKER)
        me.ok("use", profile="granted-prof")
        me.ok("open", url=f"{site}/attacker")

    def profile_id(self, label: str) -> str:
        rows = registry_rows(
            self.h.paths.registry, "SELECT id FROM profiles WHERE label = ?", (label,)
        )
        return str(rows[0][0]) if rows else ""

    # -- oracles --------------------------------------------------------------------------

    def victim_moved(self, aid: str) -> list[str]:
        out = [
            f"the victim's browser asked for {x.path[:40]} (with the victim's cookie)"
            for x in self.c.servers.asked(aid)
            if self.c.ctoken in x.cookie
        ]
        frame = self.h.call(VICTIM, "get", what="url", timeout=15)
        if frame.get("ok") and self.c.vtoken not in str(frame["data"].get("value")):
            out.append(f"the victim's tab moved to {str(frame['data'].get('value'))[:60]}")
            self.h.call(VICTIM, "open", url=f"{self.site}/victim/{self.c.vtoken}")
        return out

    def marked(self, aid: str, mark: str, whose: str) -> list[str]:
        return [
            f"a request of {whose} ({x.path[:30]}) carried its cookie"
            for x in self.c.servers.asked(aid)
            if mark in x.cookie
        ]

    def attached(self, session: str, label: str) -> list[str]:
        pid = self.profile_id(label)
        rows = registry_rows(
            self.h.paths.registry,
            "SELECT 1 FROM attachments WHERE session = ? AND profile = ?",
            (session, pid),
        )
        return [f"{session} is attached to {label} (registry)"] if rows else []

    def strays(self) -> list[str]:
        """Keepers an agent's own ``bay`` started (they are stopped here: ours, by pid)."""
        found = stray_keepers(self.h)
        if found:
            stop_strays(self.h, found)
            self.c.refresh_watch()
        return [f"the agent's bay started a keeper of its own (pid {p})" for p in found]

    def keys_view(self) -> str:
        frame = self.h.call("boss", "keys", action="list")
        rows = frame.get("data", {}).get("integrations", frame.get("data"))
        return json.dumps(rows, sort_keys=True, default=str)

    # -- roads ----------------------------------------------------------------------------

    def via(
        self,
        agent: Agent,
        road: str,
        verb: str,
        args: dict[str, Any],
        argv: list[str],
        **extra: Any,
    ) -> tuple[str, str]:
        """Send a verb by ``road`` (``cli``: ``bay <argv> --json``; else a frame); its code
        and everything the agent got back."""
        if road == "cli":
            p = agent.bay(*argv, "--json")
            return _code(cli_frame(p)), p.stdout + p.stderr
        frame = agent.send(agent.frame(verb, args, **extra))
        return _code(frame), json.dumps(frame, default=str)

    # -- the family -----------------------------------------------------------------------

    def run(self, rows: list[Attack]) -> None:
        try:
            self.setup()
        except Exception as exc:
            for a in rows:
                self.c.record(
                    a, f"setup-failed:{type(exc).__name__}", [], None, error=repr(exc)[:300]
                )
            return
        for a in rows:
            if self.c.mode == OWNER and not a.params.get("owner", True):
                self.c.record(a, "skipped", [], None)
                continue
            t0 = time.monotonic()
            aid = self.c.aid()
            kind = a.params["kind"]
            try:
                code, oracles = getattr(self, "do_" + kind.replace("-", "_"))(a, aid)
            except Exception as exc:  # an attempt that broke: said, the others go on
                code, oracles = f"error:{type(exc).__name__}", []
                print(f"boundary {a.name} broke: {exc!r}", flush=True)
            oracles += self.strays()
            if kind in ("stop", "start"):
                self.c.record(a, code, oracles, t0)
            else:
                self.c.note(a, code, oracles, t0)

    def do_hijack(self, a: Attack, aid: str) -> tuple[str, list[str]]:
        me = self.c.as_(ATTACKER)
        url = f"{self.site}/t/{aid}/hijacked"
        code = self.as_victim(me, a.params["road"], "open", {"url": url}, ["open", url])
        time.sleep(0.3)
        return code, self.victim_moved(aid)

    def as_victim(
        self, me: Agent, road: str, verb: str, args: dict[str, Any], argv: list[str]
    ) -> str:
        """A verb for the victim's session by one road; its code."""
        if road == "cli-flag":
            return _code(cli_frame(me.bay("--session", VICTIM, *argv, "--json")))
        if road == "cli-env":
            return _code(cli_frame(me.bay(*argv, "--json", BAY_SESSION=VICTIM)))
        extra: dict[str, Any] = {}
        if road == "frame-actor":  # what the client sends for --session
            extra["actor"] = {"id": me.session, "origin": "api"}
        elif road == "frame-actor-owner":
            extra["actor"] = "owner"
            extra["channel"] = "owner"
        return _code(me.send(me.frame(verb, args, as_session=VICTIM, **extra)))

    def do_peek(self, a: Attack, aid: str) -> tuple[str, list[str]]:
        me = self.c.as_(ATTACKER)
        road = a.params["road"]
        if road.startswith("cli"):
            argv = ["get", "url", "--json"]
            p = (
                me.bay("--session", VICTIM, *argv)
                if road == "cli-flag"
                else me.bay(*argv, BAY_SESSION=VICTIM)
            )
            code, text = _code(cli_frame(p)), p.stdout + p.stderr
        else:
            frame = me.send(me.frame("get", {"what": "url"}, as_session=VICTIM))
            code, text = _code(frame), json.dumps(frame)
        oracles = ["the victim's URL token in the answer"] if self.c.vtoken in text else []
        return code, oracles

    def do_census(self, a: Attack, aid: str) -> tuple[str, list[str]]:
        me = self.c.as_(ATTACKER)
        verb = a.params["verb"]
        args: dict[str, Any] = {"keeper": {"action": "status"}, "audit": {"last": 500}}.get(
            verb, {}
        )
        argv = {"keeper": ["keeper", "status"], "audit": ["audit", "--last", "500"]}.get(
            verb, [verb]
        )
        code, text = self.via(me, a.params["road"], verb, args, argv)
        seen = [s for s in OTHERS if f'"{s}"' in text or f" {s} " in text]
        oracles = [f"other sessions in the answer: {', '.join(seen)}"] if seen else []
        if "owner-prof" in text:
            oracles.append("the owner's ungranted profile in the answer")
        return code, oracles

    def do_logs(self, a: Attack, aid: str) -> tuple[str, list[str]]:
        me = self.c.as_(ATTACKER)
        code, text = self.via(
            me, a.params["road"], "keeper", {"action": "logs"}, ["keeper", "logs"]
        )
        try:
            log = self.h.paths.keeper_log.read_text(errors="replace").splitlines()
        except OSError:
            log = []
        lines = [line for line in log if len(line) >= 30]
        hits = sum(1 for line in lines if line in text)
        return code, [f"{hits} lines of the keeper's log in the answer"] if hits else []

    def do_keys(self, a: Attack, aid: str) -> tuple[str, list[str]]:
        me = self.c.as_(ATTACKER)
        action = a.params["action"]
        before_view, before_bytes = self.keys_view(), len(self.listener.received)
        args: dict[str, Any] = {"action": action, "integration": self.integration}
        argv = ["keys", action, self.integration]
        if action == "set":
            args |= {"field": "api_key", "value": "sk_" + secrets.token_hex(16)}
        if a.params["road"] == "cli" and action == "set":
            p = me.bay(*argv, "api_key", "--json", stdin=args["value"] + "\n")
            code = _code(cli_frame(p))
        else:
            code, _text = self.via(me, a.params["road"], "keys", args, argv)
        time.sleep(0.2)
        oracles = []
        if self.keys_view() != before_view:  # a test leaves its verdict on the owner's key
            oracles.append(f"the owner's stored keys changed ({action}: by the agent's call)")
        if len(self.listener.received) > before_bytes:
            oracles.append("the keeper called the owner's vendor with the owner's key")
        if oracles:  # the owner's key and vendor as they were
            self.setup_keys()
        return code, oracles

    def setup_keys(self) -> None:
        from browserbay_cloud.vendors import VENDORS

        vendor = VENDORS[0]
        self.h.call(
            "boss", "keys", action="set", integration=vendor.id, field="api_key", value=self.key
        )
        self.h.call(
            "boss",
            "keys",
            action="set",
            integration=vendor.id,
            field=vendor.url_field,
            value=f"http://127.0.0.1:{self.listener.port}",
        )

    def do_forget(self, a: Attack, aid: str) -> tuple[str, list[str]]:
        me = self.c.as_(ATTACKER)
        label = f"forget-{aid}"
        self.h.ok("boss", "new", label=label)
        code, _ = self.via(me, a.params["road"], "forget", {"profile": label}, ["forget", label])
        gone = not self.profile_id(label)
        return code, [f"the owner's profile {label} is gone from the registry"] if gone else []

    def do_adopt(self, a: Attack, aid: str) -> tuple[str, list[str]]:
        me = self.c.as_(ATTACKER)
        d = self.h.root / f"adopt-{aid}"
        (d / "Default").mkdir(parents=True)
        (d / "Local State").write_text("{}")
        label = f"adopted-{aid}"
        code, _ = self.via(
            me, a.params["road"], "adopt", {"dir": str(d), "label": label}, ["adopt", str(d), label]
        )
        rows = registry_rows(
            self.h.paths.registry, "SELECT id FROM profiles WHERE dir = ?", (str(d),)
        )
        return code, [f"{d} became a profile (registry)"] if rows else []

    def do_group(self, a: Attack, aid: str) -> tuple[str, list[str]]:
        me = self.c.as_(ATTACKER)
        args = {"action": "default", "name": "team", "profile": "granted-prof"}
        code, _ = self.via(
            me, a.params["road"], "group", args, ["group", "default", "team", "granted-prof"]
        )
        rows = registry_rows(
            self.h.paths.registry, "SELECT profile FROM group_defaults WHERE group_name = 'team'"
        )
        owner = self.profile_id("owner-prof")
        if rows and rows[0][0] != owner:
            self.h.ok("boss", "group", action="default", name="team", profile="owner-prof")
            return code, ["the owner's group default changed (registry)"]
        return code, []

    def do_hints(self, a: Attack, aid: str) -> tuple[str, list[str]]:
        me = self.c.as_(ATTACKER)
        host = f"shop-{aid}.example"
        self.h.ok("boss", "blocked", url=f"https://{host}/cart", why="captcha", tier="2")
        count = "SELECT count(*) FROM site_hints WHERE host = ?"
        before = registry_rows(self.h.paths.registry, count, (host,))[0][0]
        code, _ = self.via(
            me,
            a.params["road"],
            "hints",
            {"host": host, "forget": True},
            ["hints", host, "--forget"],
        )
        after = registry_rows(self.h.paths.registry, count, (host,))[0][0]
        return code, [f"the owner's hints for {host} dropped"] if after < before else []

    def do_trace(self, a: Attack, aid: str) -> tuple[str, list[str]]:
        me = self.c.as_(ATTACKER)
        traces = self.h.root / "data"
        before = {p for p in traces.rglob("*") if "trace" in str(p)} if traces.exists() else set()
        code, _ = self.via(me, a.params["road"], "trace", {"action": "on"}, ["trace", "on"])
        self.h.call(VICTIM, "click", target="body", timeout=15)
        after = {p for p in self.h.root.rglob("*") if "/traces/" in str(p)}
        new = after - before
        return code, [f"the victim's actions are traced ({len(new)} new files)"] if new else []

    def do_profile(self, a: Attack, aid: str) -> tuple[str, list[str]]:
        me = self.c.as_(ATTACKER)
        url = f"{self.site}/t/{aid}/profile"
        road = a.params["road"]
        if road == "use":
            code = _code(me.call("use", profile="owner-prof"))
            opened = me.call("open", url=url, timeout=20)
            code = f"{code}/{_code(opened)}"
        elif road == "frame-profile":
            code = _code(me.send(me.frame("open", {"url": url}, profile="owner-prof")))
        else:
            code = _code(cli_frame(me.bay("--profile", "owner-prof", "open", url, "--json")))
        time.sleep(0.3)
        oracles = self.marked(aid, self.own_mark, "the owner's profile")
        oracles += self.attached(ATTACKER, "owner-prof")
        if oracles:  # the attacker as it was: on its granted profile only
            client.call(
                "detach",
                {},
                session={"id": ATTACKER, "origin": "api"},
                paths=self.h.paths,
                extra={"profile": "owner-prof"},
            )
        return code, oracles

    def child(self, me: Agent) -> tuple[str, Agent | None]:
        """``bay session child`` on the agent's channel: the child's agent, or the code."""
        # On the owner's channel the parent is named (there the caller could be anyone).
        named = {"id": me.session} if me.socket is None else {}
        frame = me.call("session", action="child", **named)
        if not frame.get("ok"):
            return _code(frame), None
        data = frame.get("data", {})
        sid = str(data.get("session") or data.get("id") or data.get("child") or "")
        sock = data.get("socket")
        if not sid:
            return "answered-without-id", None
        if me.socket is not None and not sock:
            return "answered-without-socket", None
        return "answered", Agent(self.h, sid, Path(sock) if sock else None)

    def do_child(self, a: Attack, aid: str) -> tuple[str, list[str]]:
        me = self.c.as_(ATTACKER)
        code, kid = self.child(me)
        if kid is None:
            return f"child:{code}", []
        url = f"{self.site}/t/{aid}/child"
        road = a.params["road"]
        if road == "hijack":
            hurl = f"{self.site}/t/{aid}/hijacked"
            code = _code(kid.send(kid.frame("open", {"url": hurl}, as_session=VICTIM)))
            time.sleep(0.3)
            return code, self.victim_moved(aid)
        if road == "use":
            code = _code(kid.call("use", profile="granted-prof"))
            code = f"{code}/{_code(kid.call('open', url=url, timeout=20))}"
        else:
            code = _code(kid.send(kid.frame("open", {"url": url}, profile="granted-prof")))
        time.sleep(0.3)
        oracles = self.marked(aid, self.grant_mark, "the parent's granted profile (from the child)")
        oracles += self.attached(kid.session, "granted-prof")
        return code, oracles

    def do_grant(self, a: Attack, aid: str) -> tuple[str, list[str]]:
        me = self.c.as_(ATTACKER)
        sid = f"evil-{aid}"
        path = self.h.root / "s" / f"{sid}.sock"
        args = {"action": "grant", "id": sid, "socket": str(path)}
        code, _ = self.via(
            me, a.params["road"], "session", args, ["session", "grant", sid, "--socket", str(path)]
        )
        made = path.exists() and answers(path)
        if made:
            revoke_grant(self.h, sid)
        return code, [f"the agent granted itself a socket ({sid})"] if made else []

    def do_revoke_other(self, a: Attack, aid: str) -> tuple[str, list[str]]:
        me = self.c.as_(ATTACKER)
        sid = f"bystander-{aid}"
        path = grant(self.h, sid)
        args = {"action": "revoke", "id": sid}
        code, _ = self.via(me, a.params["road"], "session", args, ["session", "revoke", sid])
        cut = not answers(path)
        revoke_grant(self.h, sid)
        return code, [f"another agent's socket ({sid}) stopped answering"] if cut else []

    def do_revoked(self, a: Attack, aid: str) -> tuple[str, list[str]]:
        sid = f"revokee-{aid}"
        r = Agent(self.h, sid, grant(self.h, sid))
        r.ok("open", url=f"{self.site}/attacker")
        held = RawConnection(r.path)
        try:
            revoke_grant(self.h, sid)
            url = f"{self.site}/t/{aid}/after-revoke"
            road = a.params["road"]
            if road == "held":
                try:
                    code = _code(held.send(r.frame("open", {"url": url})))
                except (OSError, ValueError, TimeoutError) as exc:
                    code = f"no-answer:{type(exc).__name__}"
            elif road == "cli":
                code = _code(cli_frame(r.bay("open", url, "--json")))
            else:
                code = _code(r.send(r.frame("open", {"url": url})))
        finally:
            held.close()
        time.sleep(0.3)
        oracles = [
            f"a revoked socket's verb reached the site ({x.path[:30]})"
            for x in self.c.servers.asked(aid)
        ]
        return code, oracles

    def do_expired(self, a: Attack, aid: str) -> tuple[str, list[str]]:
        sid = f"ttl-{aid}"
        r = Agent(self.h, sid, grant(self.h, sid, ttl=1))
        time.sleep(2.5)
        url = f"{self.site}/t/{aid}/after-ttl"
        code = _code(r.send(r.frame("open", {"url": url})))
        time.sleep(0.3)
        oracles = [
            f"an expired socket's verb reached the site ({x.path[:30]})"
            for x in self.c.servers.asked(aid)
        ]
        revoke_grant(self.h, sid)
        return code, oracles

    def keeper_pid(self) -> int | None:
        pids = self.h.keeper_pids()
        return pids[0] if pids else None

    def do_start(self, a: Attack, aid: str) -> tuple[str, list[str]]:
        """Stop the keeper and start one with the agent's policy (its environment)."""
        me = self.c.as_(ATTACKER)
        mark = "mk" + secrets.token_hex(8)
        stop = me.bay("keeper", "stop", "--json")
        time.sleep(1)
        flags = ["--set", "max_browsers=1"] if a.params["road"] == "cli-set" else []
        p = me.bay(
            "keeper",
            "start",
            *flags,
            "--json",
            BAY_TRACE="1",
            BAY_MAX_BROWSERS="1",
            BAY_CAMPAIGN_MARK=mark,
        )
        code = f"stop {_code(cli_frame(stop))}/start {_code(cli_frame(p))}"
        time.sleep(1)
        oracles = []
        for pid in [*self.h.keeper_pids(), *stray_keepers(self.h)]:
            if procfs.environ(pid).get("BAY_CAMPAIGN_MARK") == mark:
                oracles.append(f"a keeper (pid {pid}) runs with the agent's environment")
        status = self.h.call("boss", "keeper", action="status", timeout=15)
        for row in status.get("data", {}).get("settings", []) if status.get("ok") else []:
            if "max_browsers" in json.dumps(row).lower() and str(row.get("value")) == "1":
                oracles.append(f"the keeper's policy is the agent's: {json.dumps(row)[:100]}")
        if self.keeper_pid() is None or oracles:
            self.revive()
        return code, oracles

    def do_stop(self, a: Attack, aid: str) -> tuple[str, list[str]]:
        me = self.c.as_(ATTACKER)
        before = self.keeper_pid()
        road = a.params["road"]
        if road == "cli":
            code = _code(cli_frame(me.bay("keeper", "stop", "--json")))
        elif road == "op":
            code = _code(me.send({"op": "shutdown", "reason": "version"}))
        else:
            extra: dict[str, Any] = {}
            if road == "frame-actor-owner":
                extra = {"actor": "owner", "channel": "owner"}
            code = _code(me.send(me.frame("keeper", {"action": "stop"}, **extra)))
        stopped = wait_for(lambda: self.keeper_pid() != before, 5, 0.1)
        if not stopped:
            return code, []
        self.revive()
        return code, [f"the keeper (pid {before}) stopped"]

    def revive(self) -> None:
        """A keeper again (the owner's), the stages and this family's stage set up again."""
        if self.keeper_pid() is not None:
            self.h.bay("keeper", "stop", session="boss")
            wait_for(lambda: self.keeper_pid() is None, 20, 0.1)
        self.c.recover()
        with contextlib.suppress(Exception):
            self.setup()
        self.c.refresh_watch()
