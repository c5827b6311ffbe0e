"""Hostile-agent campaign: the attacks of issue 15 and the variations
:mod:`campaigns.attacks` generates, against a real keeper and real Chromium, judged by the
oracles of :mod:`campaigns.oracles` (what the attacker saw, what a listener or an outside
server received, whether the keeper or a shared browser died) — never by the refusal code.

Stages (one campaign home unless said):
- **ephemeral**: an attacker and a victim session in the one shared Chromium (isolated
  contexts), and a fenced session (``--allowed-domains 127.0.0.1``);
- **cdp**: a Chromium bay did not start (``--remote-debugging-port``), one ``cdp`` profile
  shared by an attacker and a victim session; the attacker holds its own ``bay cdp-url``;
- **keys**: provider keys stored as the user would, a listener as the attacker's "vendor";
- homes of their own for the keeper's environment, the planted socket (another uid), and
  the context ceiling.

An attempt is **leaked** when any oracle fired, else **refused** (counted by the code it got:
a refusal code, ``cdp-error`` for an error Chromium gave, or ``answered`` when it went
through and nothing leaked). Loopback only; every flood is bounded in count and time.

Run: campaigns/run.sh hostile [--seed N] [--scale 1.0] [--only family,family]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import re
import resource
import secrets
import shutil
import signal
import socket
import tempfile
import threading
import time
import urllib.parse
import urllib.request
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from browserbay import client, procfs
from browserbay_testing import planted
from campaigns import attacks as cat
from campaigns.agents import MODES, OWNER, SESSION, Agent, grant, revoke
from campaigns.attacks import Attack, fill
from campaigns.boundary import Boundary
from campaigns.common import (
    ROOT,
    Home,
    descendants,
    home,
    machine,
    record,
    tcp_listeners_of,
    today,
    wait_for,
)
from campaigns.oracles import (
    Listener,
    Servers,
    Watch,
    page_leaks,
    raw_escapes,
    secrets_in,
)

#: An answer bigger than this, to an input bigger than it, echoed the input.
ECHO_BOUND = 8192
PAGE_JS = (
    "JSON.stringify([location.href, ((document.documentElement||{}).outerHTML||'')"
    ".slice(0, 300000)])"
)


def _git_head() -> str:
    with contextlib.suppress(Exception):
        import subprocess

        return subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    return "?"


def _code(frame: dict[str, Any]) -> str:
    if frame.get("ok"):
        return "answered"
    return str(frame.get("code") or "untyped")


class Raw:
    """A bare CDP client that keeps a transcript of every message it received."""

    def __init__(self, url: str, timeout: float = 10):
        import warnings

        from websockets.sync.client import connect

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            self.ws = connect(url, max_size=None, open_timeout=timeout)
        self.n = 0
        self.transcript: list[str] = []
        self.answers: dict[int, dict[str, Any]] = {}

    def send(self, method: str, params: dict[str, Any] | None = None, sid: str = "") -> int:
        self.n += 1
        msg: dict[str, Any] = {"id": self.n, "method": method, "params": params or {}}
        if sid:
            msg["sessionId"] = sid
        self.ws.send(json.dumps(msg))
        return self.n

    def pump(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        with contextlib.suppress(TimeoutError):
            while time.monotonic() < end:
                self._one(max(0.01, end - time.monotonic()))

    def _one(self, timeout: float) -> None:
        raw = self.ws.recv(timeout=timeout)
        text = raw if isinstance(raw, str) else raw.decode("utf-8", "replace")
        self.transcript.append(text)
        msg = json.loads(text)
        if "id" in msg:
            self.answers[msg["id"]] = msg

    def call(
        self, method: str, params: dict[str, Any] | None = None, sid: str = "", timeout: float = 10
    ) -> dict[str, Any]:
        n = self.send(method, params, sid)
        end = time.monotonic() + timeout
        while n not in self.answers:
            left = end - time.monotonic()
            if left <= 0:
                return {"error": {"message": "no answer (campaign timeout)"}}
            try:
                self._one(left)
            except TimeoutError:
                return {"error": {"message": "no answer (campaign timeout)"}}
        return self.answers.pop(n)

    def text(self) -> str:
        return "\n".join(self.transcript)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.ws.close()


def cdp_code(answer: dict[str, Any]) -> str:
    err = answer.get("error")
    if not err:
        return "answered"
    with contextlib.suppress(Exception):
        return str(json.loads(err["data"])["code"])
    return "cdp-error"


class Campaign:
    def __init__(self, h: Home, seed: int, scale: float, mode: str = OWNER):
        self.h = h
        self.mode = mode
        #: The attackers' agents by session (granted on first use on a session socket).
        self.agents: dict[str, Agent] = {}
        #: The profiles (labels) a session's grant names.
        self.grants: dict[str, tuple[str, ...]] = {}
        self.seed = seed
        self.scale = scale
        self.results: list[dict[str, Any]] = []
        self.keeper_deaths = 0
        self.browser_deaths = 0
        self.vtoken = "vt" + secrets.token_hex(10)
        self.ctoken = "ck" + secrets.token_hex(12)
        self.marker_text = "MARKER-" + secrets.token_hex(12)
        self.servers = Servers(self.ctoken)
        self.marker = h.root / "secret-marker.txt"
        self.marker.write_text(self.marker_text)
        self.planted = {
            "victim URL token": self.vtoken,
            "victim cookie": self.ctoken,
            "marker file": self.marker_text,
        }
        self.watch = Watch()
        self.debug: Any = None
        self.cdp_profile = ""
        self.cdp_round = 0
        self.devtools = ""
        self.victim_target = ""
        self.victim_context = ""
        self.attacker_cdp = ""
        self.values: dict[str, Any] = {}
        self.n = 0

    # -- the attacker's channel ----------------------------------------------------------

    def as_(self, session: str) -> Agent:
        """The agent of an attacker session on this run's channel: on a session socket, the
        owner grants it one first (with the profiles :attr:`grants` names for it)."""
        agent = self.agents.get(session)
        if agent is None:
            sock = None
            if self.mode == SESSION:
                sock = grant(self.h, session, profiles=self.grants.get(session, ()))
            agent = self.agents[session] = Agent(self.h, session, sock)
        return agent

    def regrant(self) -> None:
        """After a new keeper (or a new profile for a granted session): every session socket
        granted again on first use."""
        if self.mode == SESSION:
            for session in list(self.agents):
                revoke(self.h, session)
        self.agents.clear()

    # -- stages ---------------------------------------------------------------------------

    def setup_ephemeral(self) -> None:
        h, site = self.h, self.servers.site
        h.ok("victim-e", "open", url=f"{site}/victim/{self.vtoken}")
        h.ok("attacker-e", "open", url=f"{site}/attacker")
        h.ok("fenced", "use", ephemeral=True, allowed_domains="127.0.0.1")
        h.ok("fenced", "open", url=f"{site}/attacker")

    def setup_cdp(self) -> None:
        from browserbay_testing.cdp import start_debug_browser

        self.cdp_round += 1
        if self.debug is not None:
            with contextlib.suppress(Exception):
                self.debug.close()
        place = self.h.root / f"cdp{self.cdp_round}"
        self.debug = start_debug_browser(place / "config" / "chromium")
        self.devtools = self.debug.http
        label = f"shared-cdp-{self.cdp_round}"
        self.h.ok("victim-c", "new", label=label, provider="cdp", cdp_url=self.debug.http)
        self.cdp_profile = label
        for s in ("victim-c", "attacker-c"):
            self.h.call(s, "detach")
            self.h.ok(s, "use", profile=label)
        self.grants["attacker-c"] = (label,)
        if "attacker-c" in self.agents:  # its grant names the previous round's profile
            revoke(self.h, "attacker-c")
            del self.agents["attacker-c"]
        self.watch.debug_browser = self.debug
        self.open_cdp_tabs()

    def open_cdp_tabs(self) -> None:
        """The two sessions' tabs on the cdp profile and their endpoints (again after a new
        keeper: the endpoints are the keeper's)."""
        self.h.ok("victim-c", "open", url=f"{self.servers.site}/victim/{self.vtoken}")
        self.as_("attacker-c").ok("open", url=f"{self.servers.site}/attacker")
        v = self.h.ok("victim-c", "cdp-url")
        a = self.as_("attacker-c").ok("cdp-url")
        self.victim_target = v.get("target", "")
        self.attacker_cdp = a["url"]
        self.victim_cdp = v["url"]
        with contextlib.suppress(Exception):
            raw = Raw(self.victim_cdp)
            infos = raw.call("Target.getTargets")["result"]["targetInfos"]
            for t in infos:
                if t["targetId"] == self.victim_target:
                    self.victim_context = t.get("browserContextId", "")
            raw.close()

    def refresh_watch(self) -> None:
        pids = self.h.keeper_pids()
        self.watch.keeper = pids[0] if pids else None
        self.watch.browsers = self.h.browsers()

    def check_deaths(self) -> list[str]:
        pids = self.h.keeper_pids()
        deaths = self.watch.deaths(pids[0] if pids else None, self.h.browsers())
        if not deaths:
            return []
        if any(d.startswith("keeper") for d in deaths):
            self.keeper_deaths += 1
        if any("browser" in d for d in deaths):
            self.browser_deaths += 1
        self.recover()
        return deaths

    def recover(self) -> None:
        """After a death: the keeper starts with the next verb; the stages are set up again
        (and the session sockets granted again)."""
        with contextlib.suppress(Exception):
            self.h.call("victim-e", "status", timeout=30)
        with contextlib.suppress(Exception):
            self.regrant()
        with contextlib.suppress(Exception):
            self.setup_ephemeral()
        if self.debug is not None and not self.debug.answers():
            with contextlib.suppress(Exception):
                self.setup_cdp()
        elif self.debug is not None:
            with contextlib.suppress(Exception):
                self.open_cdp_tabs()
        self.refresh_watch()

    def fill_values(self, aid: str) -> dict[str, Any]:
        return {
            "site": self.servers.site,
            "port": self.servers.port,
            "out_port": self.servers.out_port,
            "marker": str(self.marker),
            "devtools": self.devtools,
            "aid": aid,
            "victim_target": self.victim_target,
            "victim_context": self.victim_context,
            "dl_dir": str(self.h.root / "dl" / aid),
        }

    def note(self, attack: Attack, code: str, oracles: list[str], t0: float, **extra: Any) -> None:
        """One attempt's row, the keeper's and the shared browser's deaths among its oracles."""
        self.record(attack, code, oracles + self.check_deaths(), t0, **extra)

    def record(
        self, attack: Attack, code: str, oracles: list[str], t0: float | None, **extra: Any
    ) -> None:
        """One attempt's row as its oracles say (``t0`` None: it did not run); a leak is
        printed as it is found."""
        oracles = list(dict.fromkeys(oracles))
        # On the owner's channel the agent is the owner: what only the owner may do worked.
        cooperative = bool(oracles) and self.mode == OWNER and cat.cooperative_on_owner(attack)
        row = {
            "family": attack.family,
            "name": attack.name,
            "channel": self.mode,
            "code": code,
            "leaked": bool(oracles) and not cooperative,
            "cooperative": cooperative,
            "oracles": oracles,
            "ms": 0 if t0 is None else round((time.monotonic() - t0) * 1000),
            **extra,
        }
        self.results.append(row)
        if oracles:
            what = "COOPERATIVE" if cooperative else "LEAK"
            print(
                f"{what} [{self.mode}] {attack.key()} [{code}]: {'; '.join(oracles)[:300]}",
                flush=True,
            )

    def aid(self) -> str:
        self.n += 1
        return f"a{self.n:05d}"

    # -- page helpers ---------------------------------------------------------------------

    def page_of(self, session: str) -> tuple[str, str]:
        frame = self.as_(session).call("eval", js=PAGE_JS, timeout=15)
        if not frame.get("ok"):
            return "", ""
        with contextlib.suppress(Exception):
            href, content = json.loads(frame["data"]["value"])
            return str(href), str(content)
        return "", ""

    def reset_attacker(self, session: str) -> None:
        site = self.servers.site
        tabs = self.as_(session).call("tab", action="list")
        if tabs.get("ok"):
            ids = [t["id"] for t in tabs["data"]["tabs"]]
            for tid in ids[1:]:
                self.as_(session).call("tab", action="close", arg=tid)
            if ids:
                self.as_(session).call("tab", action=ids[0])
        self.as_(session).call("open", url=f"{site}/attacker", timeout=15)

    def trigger(self, session: str, body: dict[str, Any], wait: float = 20) -> dict[str, Any]:
        asked = self.as_(session).call("triggers", action="path")
        if not asked.get("ok"):
            return {"ok": False, "reason": f"triggers path {_code(asked)}"}
        path = Path(asked["data"]["path"])
        rid = str(uuid.uuid4())
        tmp = path / f".{rid}.tmp"
        tmp.write_text(json.dumps({"version": 1, "session": session, **body}))
        os.rename(tmp, path / f"{rid}.json")
        result = path / "processed" / f"{rid}.result.json"
        if wait_for(result.exists, wait, 0.1):
            with contextlib.suppress(Exception):
                return dict(json.loads(result.read_text()))
        return {"ok": False, "outcome": "no result"}

    # -- families -------------------------------------------------------------------------

    def run_schemes(self, rows: list[Attack]) -> None:
        for a in rows:
            t0 = time.monotonic()
            aid = self.aid()
            vals = self.fill_values(aid)
            url = fill(a.params["url"], vals)
            road = a.params["road"]
            oracles: list[str] = []
            if road.startswith("cdp-"):
                code, oracles = self._scheme_cdp(road, url)
            else:
                s = "attacker-e"
                if road == "open":
                    code = _code(self.as_(s).call("open", url=url, timeout=15))
                elif road == "tab-new":
                    code = _code(self.as_(s).call("tab", action="new", arg=url, timeout=15))
                else:
                    r = self.trigger(s, {"action": "open", "url": url})
                    code = (
                        "answered"
                        if r.get("ok")
                        else "trigger:" + str(r.get("reason", r.get("outcome")))[:40].split(":")[0]
                    )
                time.sleep(0.3 if "chrome" in a.params["target"] else 0.05)
                href, content = self.page_of(s)
                oracles = page_leaks(href, content, self.planted)
                if href and not href.startswith(f"{self.servers.site}/attacker"):
                    self.reset_attacker(s)
            oracles += [f"outside hit {x.host}{x.path[:40]}" for x in self.servers.hits(aid)]
            self.note(a, code, oracles, t0)

    def run_devtools(self, rows: list[Attack]) -> None:
        """The shared browser's DevTools HTTP endpoint lists every tab of every session (and
        hands out their WebSocket URLs): can a session's tab be made to show it?"""
        site = self.servers.site
        for a in rows:
            t0 = time.monotonic()
            aid = self.aid()
            url = fill(a.params["url"], {"devtools_port": _port(self.devtools + "/")})
            road = a.params["road"]
            s = "attacker-e" if road == "open-ephemeral" else "attacker-c"
            if road == "cdp-navigate":
                code, oracles = self._scheme_cdp(road, url)
            else:
                if road in ("open-cdp", "open-ephemeral"):
                    frame = self.as_(s).call("open", url=url, timeout=15)
                elif road == "tab-new-cdp":
                    frame = self.as_(s).call("tab", action="new", arg=url, timeout=15)
                else:
                    mode = "script-location" if road == "page-script-cdp" else "meta-refresh"
                    page = f"{site}/p/{aid}?" + urllib.parse.urlencode({"mode": mode, "to": url})
                    frame = self.as_(s).call("open", url=page, timeout=15)
                    time.sleep(0.5)
                code = _code(frame)
                href, content = self.page_of(s)
                planted = self._cdp_planted() if s == "attacker-c" else self.planted
                oracles = page_leaks(href, content, planted)
                self.reset_attacker(s)
            self.note(a, code, oracles, t0)

    def _own_sid(self, raw: Raw) -> str:
        infos = raw.call("Target.getTargets")["result"]["targetInfos"]
        pages = [t for t in infos if t["type"] == "page"]
        answer = raw.call(
            "Target.attachToTarget", {"targetId": pages[0]["targetId"], "flatten": True}
        )
        return str(answer["result"]["sessionId"])

    def _page_via(self, raw: Raw, sid: str) -> tuple[str, str]:
        ans = raw.call(
            "Runtime.evaluate", {"expression": PAGE_JS, "returnByValue": True}, sid, timeout=8
        )
        with contextlib.suppress(Exception):
            href, content = json.loads(ans["result"]["result"]["value"])
            return str(href), str(content)
        return "", ""

    def _cdp_targets_check(self, raw: Raw, before: set[str]) -> list[str]:
        """Tabs the attacker opened meanwhile: what they show; then closed."""
        out: list[str] = []
        with contextlib.suppress(Exception):
            infos = raw.call("Target.getTargets")["result"]["targetInfos"]
            for t in infos:
                if t["type"] != "page" or t["targetId"] in before:
                    continue
                out += page_leaks(t.get("url", ""), "", {})
                with contextlib.suppress(Exception):
                    sid = str(
                        raw.call(
                            "Target.attachToTarget", {"targetId": t["targetId"], "flatten": True}
                        )["result"]["sessionId"]
                    )
                    out += page_leaks(*self._page_via(raw, sid), self.planted)
                raw.call("Target.closeTarget", {"targetId": t["targetId"]})
        return out

    def _scheme_cdp(self, road: str, url: str) -> tuple[str, list[str]]:
        raw = Raw(self.attacker_cdp)
        try:
            sid = self._own_sid(raw)
            before = {t["targetId"] for t in raw.call("Target.getTargets")["result"]["targetInfos"]}
            if road == "cdp-navigate":
                ans = raw.call("Page.navigate", {"url": url}, sid)
            elif road == "cdp-create-target":
                ans = raw.call("Target.createTarget", {"url": url})
            else:
                tree = raw.call("Page.getFrameTree", {}, sid)
                frame_id = tree.get("result", {}).get("frameTree", {}).get("frame", {}).get("id")
                html = f"<meta http-equiv=refresh content='0;url={url}'>"
                ans = raw.call("Page.setDocumentContent", {"frameId": frame_id, "html": html}, sid)
            raw.pump(0.4)
            href, content = self._page_via(raw, sid)
            oracles = page_leaks(href, content, self.planted)
            oracles += self._cdp_targets_check(raw, before)
            oracles += [
                f"{n} in the CDP transcript" for n in secrets_in(raw.text(), self._cdp_planted())
            ]
            if href and not href.startswith(f"{self.servers.site}/attacker"):
                raw.call("Page.navigate", {"url": f"{self.servers.site}/attacker"}, sid)
                raw.pump(0.2)
            return cdp_code(ans), oracles
        except Exception as exc:  # the connection died under the attack
            return f"connection-lost:{type(exc).__name__}", []
        finally:
            raw.close()

    def _cdp_planted(self) -> dict[str, str]:
        """What the cdp attacker must never see: the victim's tab URL, the marker. (Cookies are
        the profile's, shared by its sessions by design: not planted here.)"""
        return {"victim URL token": self.vtoken, "marker file": self.marker_text}

    def victim_touched(self) -> list[str]:
        frame = self.h.call("victim-c", "get", what="url", timeout=15)
        if frame.get("ok") and self.vtoken in str(frame["data"].get("value")):
            return []
        if not frame.get("ok") and frame.get("code") == "browser_paused":
            return []
        self.h.call("victim-c", "open", url=f"{self.servers.site}/victim/{self.vtoken}")
        return [f"the victim's tab was touched (get url: {str(frame)[:120]})"]

    def run_cdp_methods(self, rows: list[Attack]) -> None:
        for a in rows:
            t0 = time.monotonic()
            aid = self.aid()
            vals = self.fill_values(aid)
            params = fill(a.params["params"], vals)
            method, where = a.params["method"], a.params["where"]
            name = a.name.split("/")[0]
            dl = Path(vals["dl_dir"])
            dl.mkdir(parents=True, exist_ok=True)
            oracles: list[str] = []
            try:
                raw = Raw(self.attacker_cdp)
            except Exception as exc:
                self.note(a, f"connect-failed:{type(exc).__name__}", [], t0)
                continue
            try:
                sid = self._own_sid(raw)
                before = {
                    t["targetId"] for t in raw.call("Target.getTargets")["result"]["targetInfos"]
                }
                use_sid = sid if where == "page" else ""
                if where == "victim":
                    use_sid = self._victim_sid()
                if name == "file-input":
                    doc = raw.call("DOM.getDocument", {}, sid)
                    root = doc.get("result", {}).get("root", {}).get("nodeId")
                    q = raw.call("DOM.querySelector", {"nodeId": root, "selector": "#f"}, sid)
                    params = {**params, "nodeId": q.get("result", {}).get("nodeId")}
                ans = raw.call(method, params, use_sid, timeout=10)
                code = cdp_code(ans)
                if name.startswith("tracing"):
                    self.h.call("victim-c", "reload", timeout=15)
                    raw.pump(0.5)
                    raw.call("Tracing.end", {}, use_sid)
                    raw.pump(2.0)
                elif name.startswith("download"):
                    raw.call("Page.navigate", {"url": f"{self.servers.site}/download/{aid}"}, sid)
                    raw.pump(1.5)
                    if any(dl.iterdir()):
                        oracles.append(f"a download landed in the attacker's {dl}")
                elif name == "file-input":
                    got = raw.call(
                        "Runtime.evaluate",
                        {
                            "expression": "(async()=>{const f=document.getElementById('f').files;"
                            "return f.length?await f[0].text():''})()",
                            "awaitPromise": True,
                            "returnByValue": True,
                        },
                        sid,
                    )
                    del got
                else:
                    raw.pump(0.3)
                href, content = self._page_via(raw, sid)
                oracles += page_leaks(href, content, self._cdp_planted())
                oracles += self._cdp_targets_check(raw, before)
                oracles += [
                    f"{n} in the CDP transcript"
                    for n in secrets_in(raw.text(), self._cdp_planted())
                ]
                if href and not href.startswith(f"{self.servers.site}/attacker"):
                    raw.call("Page.navigate", {"url": f"{self.servers.site}/attacker"}, sid)
                    raw.pump(0.2)
            except Exception as exc:
                code = f"connection-lost:{type(exc).__name__}"
            finally:
                raw.close()
            if self.debug.answers():
                oracles += self.victim_touched()
            oracles += [
                f"outside hit {x.host}{x.path[:40]}"
                for x in self.servers.hits(aid, ("127.0.0.1",))
                if "hijacked" in x.path
            ]
            shutil.rmtree(dl, ignore_errors=True)
            self.note(a, code, oracles, t0, method=method[:60])

    def _victim_sid(self) -> str:
        with contextlib.suppress(Exception):
            raw = Raw(self.victim_cdp)
            sid = self._own_sid(raw)
            raw.close()
            return sid
        return "0" * 32

    def run_fence(self, rows: list[Attack]) -> None:
        s, site = "fenced", self.servers.site
        for a in rows:
            t0 = time.monotonic()
            aid = self.aid()
            vals = self.fill_values(aid)
            host = fill(a.params["host"], vals)
            to = f"http://{host}:{self.servers.out_port}/t/{aid}/x"
            mode = a.params["mode"]
            page = f"{site}/p/{aid}?" + urllib.parse.urlencode({"mode": mode, "to": to})
            if mode == "open-direct":
                code = _code(self.as_(s).call("open", url=to, timeout=15))
            elif mode == "tab-new-redirect":
                r = f"{site}/r/{aid}/0?" + urllib.parse.urlencode({"to": to})
                code = _code(self.as_(s).call("tab", action="new", arg=r, timeout=15))
            elif mode == "trigger-open-redirect":
                r = f"{site}/r/{aid}/0?" + urllib.parse.urlencode({"to": to})
                res = self.trigger(s, {"action": "open", "url": r})
                code = (
                    "answered"
                    if res.get("ok")
                    else "trigger:" + str(res.get("reason", ""))[:40].split(":")[0]
                )
            else:
                code = _code(self.as_(s).call("open", url=page, timeout=15))
                if mode == "link-click":
                    code = _code(self.as_(s).call("click", target="#go", timeout=15))
            if mode not in ("open-direct",) and not mode.startswith("redirect"):
                time.sleep(0.5)
            hits = self.servers.hits(aid)
            oracles = [
                f"outside server hit: Host {x.host} {x.method} {x.path[:30]}" for x in hits[:3]
            ]
            self.note(a, code, oracles, t0)
            if mode in ("window-open", "tab-new-redirect") or a is rows[-1] or self.n % 15 == 0:
                self.reset_attacker(s)

    def run_keys(self, rows: list[Attack]) -> None:
        from browserbay_cloud.vendors import VENDORS

        by_name = {v.name: v for v in VENDORS}
        listener = Listener()
        try:
            for a in rows:
                t0 = time.monotonic()
                vendor = by_name[a.params["vendor"]]
                integration = vendor.id
                key = _key_for(vendor.key_pattern)
                url = fill(a.params["url"], {"listen_port": listener.port})
                before = len(listener.received)
                texts: list[str] = []
                s = "keys-attacker"
                if a.params["road"] == "keys-test-cli":
                    texts.append(
                        str(
                            self.h.bay(
                                "keys",
                                "set",
                                integration,
                                "api_key",
                                stdin=key + "\n",
                                session="user",
                            )
                        )
                    )
                    p = self.as_(s).bay(
                        "keys", "set", integration, vendor.url_field, stdin=url + "\n"
                    )
                    texts.append(p.stdout + p.stderr)
                    p = self.as_(s).bay("keys", "test", integration, "--json")
                    texts.append(p.stdout + p.stderr)
                    code = "answered" if p.returncode == 0 else _cli_code(p.stdout)
                else:
                    texts.append(
                        repr(
                            self.h.call(
                                "user",
                                "keys",
                                action="set",
                                integration=integration,
                                field="api_key",
                                value=key,
                            )
                        )
                    )
                    set_url = self.as_(s).call(
                        "keys",
                        action="set",
                        integration=integration,
                        field=vendor.url_field,
                        value=url,
                    )
                    texts.append(repr(set_url))
                    test = self.as_(s).call(
                        "keys", action="test", integration=integration, timeout=30
                    )
                    texts.append(repr(test))
                    code = _code(test) if set_url.get("ok") else _code(set_url)
                time.sleep(0.2)
                got = listener.bytes_since(before)
                oracles = []
                if got:
                    found = secrets_in(got, {"key": key})
                    oracles.append(
                        f"the listener got {len(got)} bytes" + (" with the key" if found else "")
                    )
                oracles += [
                    f"the key in an answer ({n})" for n in secrets_in("".join(texts), {"key": key})
                ]
                self.h.call("user", "keys", action="clear", integration=integration)
                self.note(a, code, oracles, t0)
        finally:
            listener.close()

    def run_escapes(self, rows: list[Attack]) -> None:
        s, site = "attacker-e", self.servers.site
        readers = {
            "get-text": ("get", "text"),
            "get-html": ("get", "html"),
            "get-title": ("get", "title"),
            "eval": ("eval", "document.title"),
            "snapshot": ("snapshot",),
        }
        for a in rows:
            t0 = time.monotonic()
            esc = cat.ESCAPES[a.params["esc"]]
            self.as_(s).call("open", url=f"{site}/esc?" + urllib.parse.urlencode({"t": esc}))
            p = self.as_(s).bay(*readers[a.params["reader"]])
            found = raw_escapes((p.stdout + p.stderr).encode("utf-8", "surrogateescape"))
            oracles = [f"raw {x} reached the terminal" for x in found]
            self.note(a, "answered" if p.returncode == 0 else f"exit {p.returncode}", oracles, t0)
        self.reset_attacker(s)

    def run_clipping(self, rows: list[Attack]) -> None:
        s = "attacker-e"
        for a in rows:
            t0 = time.monotonic()
            n, road = a.params["size"], a.params["road"]
            big = "a" * n
            if road == "cli-open-bad-scheme":
                if n > 120_000:  # argv words are capped by the kernel (128 KiB)
                    continue
                p = self.as_(s).bay("open", "chrome://" + big, "--json")
                answer, code = p.stdout + p.stderr, _cli_code(p.stdout)
            else:
                if road == "open-bad-scheme":
                    frame = self.as_(s).call("open", url="chrome://" + big)
                elif road == "open-domain":
                    frame = self.as_("fenced").call("open", url="http://localhost/" + big)
                elif road == "eval-throw":
                    frame = self.as_(s).call("eval", js=f"throw new Error('x'.repeat({n}))")
                elif road == "fill-missing":
                    frame = self.as_(s).call("fill", target="#" + big, text="x", timeout=8)
                else:
                    frame = self.as_(s).call("tab", action="t" + "9" * n)
                answer, code = json.dumps(frame), _code(frame)
            oracles = []
            if len(answer) > ECHO_BOUND and n > ECHO_BOUND:
                oracles.append(f"echoed: a {len(answer)}-character answer to a {n}-character input")
            self.note(a, code, oracles, t0)

    def run_environ(self, rows: list[Attack]) -> None:
        """In a home of its own: a keeper started with the secrets in its environment."""
        values = {name: "sx" + secrets.token_hex(14) for name in cat.ENVIRON_SECRETS}
        values["BAY_INTEGRATION_CLOUD_BROWSER_USE_API_KEY"] = "bu_" + secrets.token_hex(14)
        values["BAY_INTEGRATION_CLOAK_LICENSE_KEY"] = "cb_" + secrets.token_hex(14)
        with home("hostile-env", **values) as h:
            status = h.ok("env", "keeper", action="status")
            keeper = int(status["pid"])
            pids = [keeper, *descendants(keeper)]
            env_agent = Agent(h, "env", grant(h, "env") if self.mode == SESSION else None)
            for a in rows:
                t0 = time.monotonic()
                where = a.params["where"]
                oracles: list[str] = []
                code = "answered"
                if where == "keeper":
                    var = a.params["var"]
                    for pid in pids:
                        for part in ("environ", "cmdline"):
                            with contextlib.suppress(OSError):
                                data = Path(f"/proc/{pid}/{part}").read_bytes()
                                if values[var].encode() in data:
                                    oracles.append(f"{var}'s value in /proc/{pid}/{part}")
                elif where == "chrome":
                    extra = {"allow_open_port": True} if a.params.get("allow") else {}
                    frame = env_agent.call(
                        "chrome",
                        headless=True,
                        profile="hostile-chrome-" + a.name[-4:],
                        timeout=60,
                        **extra,
                    )
                    code = _code(frame)
                    chrome_pid = frame.get("data", {}).get("pid") if frame.get("ok") else None
                    if chrome_pid:
                        pid = int(chrome_pid)
                        tree = [int(pid), *descendants(int(pid))]
                        for item in tcp_listeners_of(tree):
                            addr = item.split(" on ", 1)[1]
                            if _devtools_answers(addr):
                                oracles.append(f"an unauthenticated DevTools port on {addr}")
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(int(pid), signal.SIGTERM)
                else:
                    oracles, code = self._run_argv()
                self.record(a, code, oracles, t0)

    def _run_argv(self) -> tuple[list[str], str]:
        """``bay run`` on the cdp stage: the script writes its own argv and its parent's (the
        runner's) to a file; a CDP URL with a credential in either is readable by every
        process of the machine (``/proc/<pid>/cmdline``)."""
        script, out = self.h.root / "argv.py", self.h.root / "argv.out"
        script.write_text(
            "import os\n"
            f"with open({str(out)!r}, 'wb') as f:\n"
            "    f.write(open('/proc/self/cmdline','rb').read() + b'\\n')\n"
            "    f.write(open('/proc/%d/cmdline' % os.getppid(),'rb').read())\n"
        )
        frame = self.as_("attacker-c").call("run", script=str(script), timeout=60)
        argv = out.read_bytes() if out.exists() else b""
        oracles = []
        if re.search(rb"wss?://[^\s\0]+/[A-Za-z0-9_-]{16,}", argv):
            oracles.append("a CDP URL with its credential on the bay run script's argv")
        if not argv:
            oracles = []
        return oracles, _code(frame) if argv else "script did not run: " + _code(frame)

    def run_planted(self, rows: list[Attack]) -> None:
        if os.getuid() != 0:
            for a in rows:
                self.record(a, "skipped", [], None)
            return
        saved = dict(os.environ)
        try:
            for a in rows:
                t0 = time.monotonic()
                base = tempfile.mkdtemp(prefix="bc-ps-", dir="/tmp")
                victim = planted.ids(planted.VICTIM)
                try:
                    if self.mode == SESSION:
                        # The agent's BAY_SOCKET names a path in a directory another user
                        # made first (the place does not matter on this channel).
                        env = {**planted.victim_env(None, victim), "BAY_SOCKET": ""}
                        directory = os.path.join("/tmp", f"bc-pss-{secrets.token_hex(6)}")
                        env["BAY_SOCKET"] = os.path.join(directory, "keeper.sock")
                    elif a.params["place"] == "deep-home":
                        os.chown(base, *victim)
                        env = planted.victim_env(os.path.join(base, "d" * 100), victim)
                        directory = planted.socket_dir(env, victim[0])
                    else:
                        env = planted.victim_env(None, victim)
                        directory = f"/tmp/browserbay-{victim[0]}"
                        shutil.rmtree(directory, ignore_errors=True)
                    with planted.fake_keeper(
                        directory, mode=a.params["mode"], link=a.params["link"]
                    ) as rec:
                        result = planted.fill(env, victim)
                        got = rec.read_bytes()
                    oracles = []
                    if got:
                        oracles.append(
                            f"the fake keeper received {len(got)} bytes"
                            + (" with the password" if planted.SECRET.encode() in got else "")
                        )
                    code = _cli_code(result.stdout)
                finally:
                    shutil.rmtree(base, ignore_errors=True)
                self.record(a, code, oracles, t0)
        finally:
            os.environ.clear()
            os.environ.update(saved)

    def run_ceiling(self, rows: list[Attack]) -> None:
        site = self.servers.site
        for a in rows:
            t0 = time.monotonic()
            n, limit = a.params["n"], a.params["limit"]
            with home(
                "hostile-ceil", BAY_CONTEXTS_PER_BROWSER=str(limit), BAY_MAX_BROWSERS="16"
            ) as h:
                h.ok("c-warm", "status")
                frames: dict[int, dict[str, Any]] = {}
                agents = self._ceiling_agents(h, n)
                if isinstance(agents, str):  # no children to be had: what the agent got
                    self.record(a, agents, [], t0)
                    continue

                def first(
                    i: int, frames: dict[int, Any] = frames, agents: list[Agent] = agents
                ) -> None:
                    frames[i] = agents[i].call("open", url=f"{site}/attacker", timeout=90)

                threads = [threading.Thread(target=first, args=(i,)) for i in range(n)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join(120)
                ok = sum(1 for f in frames.values() if f.get("ok"))
                browsers = len(h.browsers())
                codes = Counter(_code(f) for f in frames.values())
                oracles = []
                if ok > browsers * limit:
                    oracles.append(f"{ok} contexts in {browsers} browsers (limit {limit} each)")
                status = h.call("c-warm", "keeper", action="status")
                for b in status.get("data", {}).get("browsers", []) if status.get("ok") else []:
                    if len(b.get("sessions", [])) > limit:
                        oracles.append(
                            f"keeper status: {len(b['sessions'])} sessions in one browser"
                        )
            code = ",".join(f"{k} {v}" for k, v in sorted(codes.items()))
            self.record(a, code, oracles, t0)

    def _ceiling_agents(self, h: Home, n: int) -> list[Agent] | str:
        """``n`` new sessions for the ceiling: on the owner's channel, sessions it names; on a
        session socket, children the agent mints itself (``bay session child``: the only
        road to more sessions it has), or the code it got instead."""
        if self.mode == OWNER:
            return [Agent(h, f"c{i}") for i in range(n)]
        parents = [Agent(h, "c-parent", grant(h, "c-parent"))]
        out: list[Agent] = []
        last = ""
        while parents and len(out) < n:  # a tree: children mint theirs when a parent is full
            frame = parents[0].call("session", action="child")
            data = frame.get("data", {}) if frame.get("ok") else {}
            sid, sock = data.get("session"), data.get("socket")
            if not sid or not sock:
                last = _code(frame) if not frame.get("ok") else "no socket"
                parents.pop(0)
                continue
            kid = Agent(h, str(sid), Path(sock))
            out.append(kid)
            parents.append(kid)
        return out if len(out) == n else f"child:{last} after {len(out)} of {n}"

    def run_takeover(self, rows: list[Attack]) -> None:
        from playwright.sync_api import sync_playwright

        h, site, s = self.h, self.servers.site, "human-e"
        with sync_playwright() as pw:
            viewer_browser = pw.chromium.launch(
                executable_path="/usr/lib/chromium/chromium", args=["--no-sandbox"]
            )
            try:
                for a in rows:
                    t0 = time.monotonic()
                    aid = self.aid()
                    h.ok(s, "open", url=f"{site}/t/{aid}/human")
                    live = h.ok(s, "live")
                    viewer = viewer_browser.new_page()
                    viewer.goto(live["url"])
                    viewer.click("#toggle")
                    wait_for(functools.partial(_holds, viewer), 10)
                    body: dict[str, Any] = {"action": a.params["action"]}
                    if a.params["action"] == "open":
                        body["url"] = f"{site}/t/{aid}/trigger"
                    res = self.trigger(s, body)
                    code = (
                        "answered"
                        if res.get("ok")
                        else "trigger:"
                        + str(res.get("reason", res.get("outcome")))[:40].split(":")[0]
                    )
                    time.sleep(0.5)
                    oracles = [
                        f"the trigger navigated the human's tab ({x.path[:30]})"
                        for x in self.servers.log
                        if x.path.startswith(f"/t/{aid}/trigger")
                    ]
                    state = _state(viewer)
                    if state.get("holder") != "you":
                        oracles.append(f"the human lost the controls (state {state})"[:160])
                    st = h.call("victim-e", "keeper", action="status")
                    sessions = (
                        [
                            x
                            for b in st.get("data", {}).get("browsers", [])
                            for x in b.get("sessions", [])
                        ]
                        if st.get("ok")
                        else []
                    )
                    if s not in sessions:
                        oracles.append("the human's session lost its browser")
                    if _holds(viewer):  # hand back, so the next attempt starts unpaused
                        viewer.click("#toggle")
                        wait_for(functools.partial(_released, viewer), 10)
                    viewer.close()
                    self.note(a, code, oracles, t0)
                    with contextlib.suppress(Exception):
                        h.call(s, "close")
            finally:
                viewer_browser.close()

    def run_boundary(self, rows: list[Attack]) -> None:
        listener = Listener()
        try:
            Boundary(self, listener).run(rows)
        finally:
            listener.close()

    def run_floods(self, rows: list[Attack]) -> None:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))
        for a in rows:
            t0 = time.monotonic()
            live = self.h.call("human-e", "live")  # the ports again: a new keeper has others
            live_port = _port(live["data"]["url"]) if live.get("ok") else 0
            cdp_port = _port(self.attacker_cdp)
            unix_path = self.as_("attacker-e").path  # the attacker's own channel
            listener, count, partial = a.params["listener"], a.params["count"], a.params["partial"]
            keeper = self.watch.keeper
            rss0 = _rss(keeper)
            socks: list[socket.socket] = []
            opened = 0
            try:
                for _ in range(count):
                    c = None
                    for _retry in range(40):  # a full accept backlog: let the keeper catch up
                        try:
                            c = _connect_flood(listener, unix_path, live_port, cdp_port)
                            break
                        except OSError:
                            time.sleep(0.05)
                    if c is None:
                        break
                    socks.append(c)
                    opened += 1
                    if partial:
                        head = (
                            b'{"hello": {}}\n{"verb": "status", "x": "'
                            if listener == "unix"
                            else b"GET /" + b"a" * 64 + b" HTTP/1.1\r\nX: "
                        )
                        with contextlib.suppress(OSError):
                            c.settimeout(5)
                            c.sendall(head + b"a" * partial)
                    if time.monotonic() - t0 > 60:
                        break
                t1 = time.perf_counter()
                canary = client.call(
                    "status",
                    {},
                    session={"id": "canary", "origin": "api"},
                    timeout=15,
                    paths=self.h.paths,
                )
                canary_ms = (time.perf_counter() - t1) * 1000
                rss1 = _rss(keeper)
                time.sleep(1.0)
            finally:
                for c in socks:
                    with contextlib.suppress(OSError):
                        c.close()
            oracles = []
            if not canary.get("ok"):
                oracles.append(
                    f"another session's status failed during the flood: {canary.get('code')}"
                )
            elif canary_ms > 10_000:
                oracles.append(f"another session's status took {canary_ms:.0f} ms")
            sent = opened * partial
            if partial and rss0 and rss1 and (rss1 - rss0) * 1024 > max(64 << 20, sent // 2):
                oracles.append(
                    f"the keeper grew by {(rss1 - rss0) // 1024} MiB holding "
                    f"{sent >> 20} MiB of half-sent frames"
                )
            self.note(a, f"opened {opened}/{count}", oracles, t0)


def _state(viewer: Any) -> dict[str, Any]:
    """The live view's own state, as its page keeps it (``window.__live.state``)."""
    live = viewer.evaluate("window.__live || null") or {}
    return dict(live.get("state") or {})


def _released(viewer: Any) -> bool:
    return not _holds(viewer)


def _holds(viewer: Any) -> bool:
    """The viewer holds the controls."""
    return _state(viewer).get("holder") == "you"


def _connect_flood(listener: str, sock: Path, live_port: int, cdp_port: int) -> socket.socket:
    if listener == "unix":
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.settimeout(2)
        try:
            c.connect(str(sock))
        except OSError:
            c.close()
            raise
        return c
    port = live_port if listener == "liveview" else cdp_port
    return socket.create_connection(("127.0.0.1", port), timeout=2)


def _devtools_answers(addr: str) -> bool:
    with (
        contextlib.suppress(Exception),
        urllib.request.urlopen(f"http://{addr}/json/version", timeout=3) as r,
    ):
        return b"webSocketDebuggerUrl" in r.read()
    return False


def _port(url: str) -> int:
    m = re.search(r":(\d+)/", url)
    return int(m.group(1)) if m else 0


def _rss(pid: int | None) -> int:
    return (procfs.rss_kib(pid) or 0) if pid else 0


def _key_for(pattern: str) -> str:
    for prefix in ("sk_", "bu_", "cb_", "bb_live_", ""):
        candidate = prefix + secrets.token_hex(16)
        if re.fullmatch(pattern, candidate):
            return candidate
    return "sk_" + secrets.token_hex(16)


def _cli_code(stdout: str) -> str:
    with contextlib.suppress(Exception):
        frame = json.loads(stdout.strip().splitlines()[-1])
        return _code(frame)
    return "no-json"


# -- the campaign ---------------------------------------------------------------------------

#: A family's runner, where its name is not the family's.
RUNNERS = {
    "cdp-methods": "cdp_methods",
    "key-exfil": "keys",
    "planted-socket": "planted",
    "devtools-endpoint": "devtools",
}
ORDER = (
    "schemes",
    "devtools-endpoint",
    "cdp-methods",
    "fence",
    "key-exfil",
    "escapes",
    "clipping",
    "takeover",
    "environ",
    "floods",
    "planted-socket",
    "ceiling",
    "boundary",  # last: on the owner's channel it stops the keeper
)


def run(seed: int, scale: float, only: set[str] | None, modes: tuple[str, ...]) -> dict[str, Any]:
    started = time.monotonic()
    sample = {k: max(1, int(v * scale)) for k, v in cat.DEFAULT_SAMPLE.items()}
    rows = cat.catalogue(seed, sample)
    by_family: dict[str, list[Attack]] = {}
    for a in rows:
        by_family.setdefault(a.family, []).append(a)
    print(
        f"hostile campaign: seed {seed}, {len(rows)} attacks generated "
        f"({', '.join(f'{f} {len(v)}' for f, v in by_family.items())}), channels {modes}",
        flush=True,
    )
    results: list[dict[str, Any]] = []
    deaths: dict[str, dict[str, int]] = {}
    for mode in modes:
        c = run_mode(mode, seed, scale, only, by_family)
        results += c.results
        deaths[mode] = {"keeper": c.keeper_deaths, "browser": c.browser_deaths}
    return {
        "seed": seed,
        "commit": _git_head(),
        "scale": scale,
        "channels": list(modes),
        "results": results,
        "keeper_deaths": sum(d["keeper"] for d in deaths.values()),
        "browser_deaths": sum(d["browser"] for d in deaths.values()),
        "deaths": deaths,
        "seconds": round(time.monotonic() - started),
    }


def run_mode(
    mode: str, seed: int, scale: float, only: set[str] | None, by_family: dict[str, list[Attack]]
) -> Campaign:
    """Every family once with the attacker on ``mode``'s channel, in a home of its own."""
    print(f"-- channel {mode}", flush=True)
    env = {"BAY_TRIGGER_POLL": "0.1", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent"}
    with home(f"hostile-{mode[0]}", **env) as h:
        c = Campaign(h, seed, scale, mode)
        try:
            # The keeper (and the browsers it starts) under the common default soft limit
            # of 1,024 descriptors, the hard limit as it is: what a flood meets on most
            # machines unless the keeper raises its own.
            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))
            try:
                h.ok("victim-e", "status")
            finally:
                resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
            c.setup_ephemeral()
            c.setup_cdp()
            c.refresh_watch()
            for family in ORDER:
                if only and family not in only:
                    continue
                t0 = time.monotonic()
                fn = getattr(c, "run_" + RUNNERS.get(family, family))
                try:
                    fn(by_family.get(family, []))
                except Exception as exc:  # a family that broke: said, the others go on
                    c.results.append(
                        {
                            "family": family,
                            "name": "(campaign error)",
                            "channel": mode,
                            "code": f"error:{type(exc).__name__}",
                            "leaked": False,
                            "cooperative": False,
                            "oracles": [],
                            "error": repr(exc)[:300],
                            "ms": 0,
                        }
                    )
                    print(f"family {family} broke: {exc!r}", flush=True)
                print(f"{mode} {family}: {time.monotonic() - t0:.0f} s", flush=True)
                c.refresh_watch()
        finally:
            if c.debug is not None:
                with contextlib.suppress(Exception):
                    c.debug.close()
            c.servers.close()
        h.keep = h.keep or any(r["leaked"] for r in c.results)
    return c


def summarize(f: dict[str, Any]) -> dict[str, Any]:
    """Per channel: attempts, leaked, cooperative (the owner's own power, on the owner's
    channel), refused by code, per family."""
    out: dict[str, Any] = {}
    for mode in f.get("channels", [OWNER]):
        results = [r for r in f["results"] if r.get("channel", OWNER) == mode]
        fam: dict[str, dict[str, Any]] = {}
        for r in results:
            if r["code"] == "skipped":
                continue
            d = fam.setdefault(
                r["family"], {"attempts": 0, "leaked": 0, "cooperative": 0, "codes": Counter()}
            )
            d["attempts"] += 1
            if r["leaked"]:
                d["leaked"] += 1
            elif r.get("cooperative"):
                d["cooperative"] += 1
            else:
                d["codes"][r["code"]] += 1
        codes: Counter[str] = Counter()
        for d in fam.values():
            codes.update(d["codes"])
        total = sum(d["attempts"] for d in fam.values())
        leaked = sum(d["leaked"] for d in fam.values())
        cooperative = sum(d["cooperative"] for d in fam.values())
        out[mode] = {
            "families": fam,
            "attempts": total,
            "leaked": leaked,
            "cooperative": cooperative,
            "refused": total - leaked - cooperative,
            "codes": codes,
        }
    return out


def markdown(f: dict[str, Any], s: dict[str, Any], before: str = "") -> str:
    def codes(c: Counter[str]) -> str:
        return ", ".join(f"{k} {v}" for k, v in c.most_common(8)) + (
            f", … ({len(c) - 8} more)" if len(c) > 8 else ""
        )

    modes = list(s)
    deaths = f.get("deaths", {})
    head = " | ".join(modes)
    lines = [
        f"Latest run: {today()} · {machine()} · commit {f['commit']} · seed {f['seed']} · "
        f"{f['seconds']} s · the attacker on: {', '.join(modes)} channel",
        "",
        f"| figure | {head} |",
        "|---|" + "---|" * len(modes),
        "| attempts | " + " | ".join(str(s[m]["attempts"]) for m in modes) + " |",
        "| refused (no oracle fired), by code | "
        + " | ".join(f"{s[m]['refused']}: {codes(s[m]['codes'])}" for m in modes)
        + " |",
        "| cooperative (the owner's own power on the owner's channel, documented) | "
        + " | ".join(str(s[m]["cooperative"]) for m in modes)
        + " |",
        "| **leaked** (goal 0) | " + " | ".join(f"**{s[m]['leaked']}**" for m in modes) + " |",
        "| **keeper deaths** (goal 0) | "
        + " | ".join(f"**{deaths.get(m, {}).get('keeper', 0)}**" for m in modes)
        + " |",
        "| shared-browser crashes | "
        + " | ".join(str(deaths.get(m, {}).get("browser", 0)) for m in modes)
        + " |",
        "",
        "| family | " + " | ".join(f"{m}: attempts / leaked / cooperative" for m in modes) + " |",
        "|---|" + "---|" * len(modes),
    ]
    families = list(dict.fromkeys(fam for m in modes for fam in s[m]["families"]))
    for name in families:
        cells = []
        for m in modes:
            d = s[m]["families"].get(name)
            cells.append(f"{d['attempts']} / {d['leaked']} / {d['cooperative']}" if d else "–")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    for m in modes:
        lines += ["", f"Refused on the {m} channel, by family and code:", ""]
        for name, d in s[m]["families"].items():
            lines.append(f"- {name}: {codes(d['codes']) or '—'}")
    coop = [r for r in f["results"] if r.get("cooperative")]
    if coop:
        lines += ["", "Cooperative on the owner's channel (the agent there is the owner):", ""]
        for r in coop:
            lines.append(
                f"- `{r['family']}:{r['name']}` [{r['code']}]: {'; '.join(r['oracles'])[:160]}"
            )
    leaks = [r for r in f["results"] if r["leaked"]]
    if leaks:
        lines += ["", "Leaks (first 40):", ""]
        for r in leaks[:40]:
            lines.append(
                f"- [{r.get('channel', OWNER)}] `{r['family']}:{r['name']}` [{r['code']}]: "
                f"{'; '.join(r['oracles'])[:200]}"
            )
    if before:
        lines += ["", before.strip()]
    return "\n".join(lines) + "\n"


def main() -> None:
    import warnings

    warnings.filterwarnings("ignore", "connect\\(\\) must be used", DeprecationWarning)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--scale", type=float, default=1.0, help="of each generated family's sample")
    ap.add_argument("--only", default="", help="families, comma-separated")
    ap.add_argument(
        "--record-as",
        default="hostile",
        help="the figures' name: results/<name>.json and its RELIABILITY.md section "
        "(hostile-before for a run on the code before the fixes)",
    )
    ap.add_argument(
        "--channel",
        default=",".join(MODES),
        help="the attacker's channel(s): owner (the home's socket), session (a session socket "
        "the owner granted; the agent gets only BAY_SOCKET), comma-separated",
    )
    a = ap.parse_args()
    modes = tuple(m for m in MODES if m in a.channel.split(","))
    if not modes:
        ap.error(f"--channel: one of {', '.join(MODES)}")
    seed = a.seed if a.seed is not None else int(time.time()) % 100_000
    f = run(seed, a.scale, set(filter(None, a.only.split(","))) or None, modes)
    s = summarize(f)
    summary = {
        m: {
            **v,
            "codes": dict(v["codes"]),
            "families": {k: {**d, "codes": dict(d["codes"])} for k, d in v["families"].items()},
        }
        for m, v in s.items()
    }
    record(a.record_as, {**f, "summary": summary}, markdown(f, s))
    leaked = sum(v["leaked"] for v in s.values())
    raise SystemExit(1 if leaked or f["keeper_deaths"] else 0)


if __name__ == "__main__":
    main()
