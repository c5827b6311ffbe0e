"""Fault injection: four sessions — one ephemeral, two on a shared persistent profile, one
holding an exclusive profile — run open/fill/click/get/tab verbs in a loop while a driver
``kill -9``s the keeper at random points (50 times, some of them while the next keeper is
still starting) and, separately, kills a browser process (20 times).

After each kill, every session's next verb must recover (a typed refusal at most once per
kill), its kept tabs must come back exactly (the tabs before the verb in flight, or after
it), the persistent profiles' cookies must be intact, the registry must pass
``PRAGMA integrity_check`` and the invariants of :func:`campaigns.common.registry_problems`,
and once the new keeper has swept, no Chromium of this home may run that the registry and the
keeper do not own.

Run: campaigns/run.sh faults [--keeper-kills 50] [--browser-kills 20] [--seed N]
"""

from __future__ import annotations

import argparse
import collections
import copy
import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from browserbay import procfs
from campaigns.common import (
    CampaignError,
    Home,
    alive,
    demo_site,
    environ_of,
    home,
    kill9,
    machine,
    record,
    registry_problems,
    registry_rows,
    table,
    today,
    wait_for,
)

#: Seconds a session may take to recover after a kill before the round fails.
RECOVER_WAIT = 120.0


@dataclass
class Model:
    """What a session believes its tabs are: ordered (id, url), and the current one."""

    tabs: list[list[str]] = field(default_factory=list)
    current: str | None = None

    def urls(self) -> list[str]:
        return [u for _i, u in self.tabs]

    def current_url(self) -> str | None:
        return next((u for i, u in self.tabs if i == self.current), None)

    def apply(self, verb: str, args: dict[str, Any], data: dict[str, Any] | None) -> None:
        if verb == "open":
            url = data["url"] if data else args["url"]
            tab = data["tab"] if data else self.current or "?new"
            for t in self.tabs:
                if t[0] == tab:
                    t[1] = url
                    break
            else:
                # A tab id we never saw: the verb restored the tabs first (new ids), and
                # navigated the restored current tab.
                for t in self.tabs:
                    if t[0] == self.current:
                        t[0], t[1] = tab, url
                        break
                else:
                    self.tabs.append([tab, url])
            self.current = tab
        elif verb == "tab":
            action, arg = args.get("action"), args.get("arg")
            if action == "new":
                tab = data["tab"] if data else "?new"
                self.tabs.append([tab, arg])
                self.current = tab
            elif action == "close":
                self.tabs = [t for t in self.tabs if t[0] != arg]
                if data and data.get("current"):
                    self.current = data["current"]
                elif self.current == arg:
                    # No current tab in the answer: the browser died as the tab closed (the
                    # crash cleared the lease; its tabs are kept for the restore, the current
                    # one as it was). The model keeps its own unless it was the closed tab.
                    self.current = self.tabs[-1][0] if self.tabs else None
            elif action not in (None, "list"):
                self.current = action


class Driver:
    """The shared clock of kills: ``pending`` goes up just before a kill, ``epoch`` once it
    has landed (the process is gone)."""

    def __init__(self) -> None:
        self.pending = 0
        self.epoch = 0
        self.stop = threading.Event()


class Interrupted(Exception):
    """A kill is under way: the session stops its iteration and recovers."""


class Worker(threading.Thread):
    def __init__(
        self, name: str, kind: str, h: Home, base: str, driver: Driver, cookie: str | None
    ):
        super().__init__(name=name, daemon=True)
        self.sid = name
        self.kind = kind
        self.h = h
        self.base = base
        self.driver = driver
        self.cookie = cookie  # the persistent cookie its profile must keep, if any
        self.model = Model()
        self.log: list[tuple[float, float, str, bool, str | None]] = []
        self.failures: list[str] = []
        self.checked = 0
        self.recovering = False
        self.recovered: dict[int, dict[str, Any]] = {}
        self.inflight: tuple[str, dict[str, Any]] | None = None
        self.wrong_tab = 0
        self.reloaded = 0
        self.verbs_ok = 0
        self.notices = 0
        self.recent_cookies: list[tuple[str, float]] = []
        self.cookie_figures: list[tuple[float, bool]] = []  # (age at the kill, survived)
        self.kill_times: dict[int, float] = {}
        self.trace: list[str] = []  # the last verbs, for a failure's report

    # -- one verb ---------------------------------------------------------------------

    def verb(self, verb: str, **args: Any) -> dict[str, Any] | None:
        """Run one verb; answer its data, or None when it was refused (recorded)."""
        if not self.recovering and self.driver.pending != self.checked:
            raise Interrupted
        self.inflight = (verb, args)
        t0 = time.monotonic()
        frame = self.h.call(self.sid, verb, 60.0, **args)
        t1 = time.monotonic()
        ok = bool(frame.get("ok"))
        self.log.append((t0, t1, verb, ok, None if ok else str(frame.get("code"))))
        data = frame.get("data") or {}
        seen = data.get("tabs") or data.get("tab") or data.get("current") or ""
        self.trace.append(f"{verb} {_short(args)} -> {frame.get('code') or 'ok'} {seen}")
        del self.trace[:-12]
        if not ok:
            killed = self.driver.pending != self.checked or self.recovering
            if not killed or frame.get("code") not in ALLOWED_AFTER_KILL:
                self.failures.append(
                    f"{self.sid}: {verb} {_short(args)} refused {frame.get('code')}: "
                    f"{frame.get('message')}"
                )
            return None
        self.inflight = None
        self.verbs_ok += 1
        if frame.get("notice"):
            self.notices += 1
        data = frame["data"]
        self.model.apply(verb, args, data)
        return dict(data)

    # -- the loop ---------------------------------------------------------------------

    def run(self) -> None:
        i = 0
        while not self.driver.stop.is_set():
            i += 1
            try:
                if self.driver.pending != self.checked:
                    self.recover()
                    continue
                self.iteration(i)
            except Interrupted:
                continue
            except CampaignError as exc:
                self.failures.append(str(exc))
            except Exception as exc:
                self.failures.append(f"{self.sid}: {type(exc).__name__}: {exc}")
                time.sleep(0.5)

    def iteration(self, i: int) -> None:
        marker = f"{self.sid}-{i}"
        announced = self.driver.pending  # a kill during the iteration may reload its page
        form = f"{self.base}/form.html?w={self.sid}&i={i}"
        if self.verb("open", url=form) is None:
            return
        form_tab = self.model.current
        if self.verb("fill", target="input[name=name]", text=marker) is None:
            return
        if self.verb("click", target="input[name=terms]") is None:
            return
        got = self.verb("get", what="value", target="input[name=name]")
        if got is None:
            return
        if got.get("value") != marker:
            if self.driver.pending != announced:
                # A kill landed between the fill and the read (the verb raced its
                # announcement): the page was reopened from the kept tabs, the typed value
                # is gone with the old page. Not a verb on somebody else's tab.
                self.reloaded += 1
            else:
                self.wrong_tab += 1
                self.failures.append(
                    f"{self.sid}: read {got.get('value')!r}, wrote {marker!r}; last verbs: "
                    + " | ".join(self.trace)
                )
        if self.kind == "shared-a":
            # Twenty cookie names in turn (a value per write): Chromium keeps at most 180
            # cookies per domain and evicts the least recently used past that.
            name, value = f"c{i % 20}", str(i)
            js = f"document.cookie = '{name}={value}; max-age=86400; path=/'; 1"
            if self.verb("eval", js=js) is None:
                return
            self.recent_cookies.append((f"{name}={value}", time.monotonic()))
        if i % 3 == 0:
            if self.verb("tab", action="new", arg=f"{self.base}/item/{marker}") is None:
                return
            if form_tab is not None and self.verb("tab", action=form_tab) is None:
                return
            items = [t for t, u in self.model.tabs if "/item/" in u]
            if len(self.model.tabs) > 2 and items:
                self.verb("tab", action="close", arg=items[0])

    def recover(self) -> None:
        """The first verbs after a kill: the tabs must be back, the cookies intact."""
        if not wait_for(lambda: self.driver.epoch == self.driver.pending, 60, 0.01):
            raise CampaignError(f"{self.sid}: the kill did not land")
        epoch = self.driver.epoch
        before = copy.deepcopy(self.model)
        after = copy.deepcopy(self.model)
        if self.inflight is not None:
            after.apply(*self.inflight, None)
        expected = [before.urls(), after.urls()]
        current = [before.current_url(), after.current_url()]
        self.recovering = True
        try:
            self._check(epoch, expected, current)
        finally:
            self.recovering = False
            self.inflight = None

    def _check(self, epoch: int, expected: list[list[str]], current: list[str | None]) -> None:
        listed = None
        end = time.monotonic() + RECOVER_WAIT
        while listed is None and time.monotonic() < end and not self.driver.stop.is_set():
            listed = self.verb("tab", action="list")
            if listed is None:
                time.sleep(0.2)
        if listed is None:
            raise CampaignError(f"{self.sid}: no tab list within {RECOVER_WAIT:.0f}s of a kill")
        epoch = self.driver.epoch  # a second kill while recovering is checked here too
        urls = [t["url"] for t in listed["tabs"]]
        now_current = next((t["url"] for t in listed["tabs"] if t["current"]), None)
        self.model = Model([[t["id"], t["url"]] for t in listed["tabs"]])
        self.model.current = next((t["id"] for t in listed["tabs"] if t["current"]), None)
        result: dict[str, Any] = {"tabs_ok": urls in expected, "tabs": len(urls)}
        if urls not in expected:
            self.failures.append(
                f"{self.sid}: kept tabs not restored after kill {epoch}: got {urls}, "
                f"expected {expected[0]} or {expected[1]}; last verbs: {' | '.join(self.trace)}"
            )
        elif urls and now_current not in current:
            result["tabs_ok"] = False
            self.failures.append(
                f"{self.sid}: the current tab after kill {epoch} is {now_current}, "
                f"expected one of {current}; last verbs: {' | '.join(self.trace)}"
            )
        if self.cookie is not None and urls:
            got = self.verb("eval", js="document.cookie")
            jar = str((got or {}).get("value", ""))
            result["cookie_ok"] = self.cookie in jar.split("; ")
            if got is not None and not result["cookie_ok"]:
                self.failures.append(
                    f"{self.sid}: persistent cookie {self.cookie} lost after kill {epoch}: {jar!r}"
                )
            kill_at = self.kill_times.get(epoch)
            if got is not None and kill_at is not None and self.recent_cookies:
                have = set(jar.split("; "))
                latest: dict[str, tuple[str, float]] = {}
                for pair, at in self.recent_cookies:
                    if at < kill_at:  # the last write of each name before the kill
                        latest[pair.split("=", 1)[0]] = (pair, at)
                for pair, at in latest.values():
                    self.cookie_figures.append((kill_at - at, pair in have))
                self.recent_cookies = [(n, a) for n, a in self.recent_cookies if a >= kill_at]
        self.recovered[epoch] = result
        self.checked = epoch


#: Refusals a verb in flight (or the first verb after) may meet when its keeper or browser
#: is killed. Anything else is a failure.
ALLOWED_AFTER_KILL = ("keeper_unavailable", "action_failed", "tab_gone")


def _short(args: dict[str, Any]) -> str:
    return ", ".join(f"{k}={str(v)[:40]}" for k, v in args.items())


# -- the census of processes -----------------------------------------------------------


def unowned(h: Home) -> list[str]:
    """Chromium processes (main or child) of this home whose browser the registry does not
    list as running or the keeper does not run; and keepers or drivers of dead keepers."""
    browsers_dir = str(h.paths.browsers) + "/"
    running = {
        r[0]
        for r in registry_rows(h.paths.registry, "SELECT id FROM browsers WHERE stopped_at IS NULL")
    }
    status = h.call("census", "keeper", action="status")
    served = {b["id"] for b in (status.get("data") or {}).get("browsers", [])}
    keeper = status.get("data", {}).get("pid") if status.get("ok") else None
    problems = []
    for pid in procfs.pids():
        env = environ_of(pid)
        if not env or not alive(pid):
            continue
        home_dir = env.get("HOME", "")
        if home_dir.startswith(browsers_dir):
            bid = home_dir[len(browsers_dir) :].split("/", 1)[0]
            if bid not in running or bid not in served:
                problems.append(
                    f"pid {pid}, browser {bid} (registry {bid in running}, keeper {bid in served})"
                )
        elif env.get("BAY_HOME") == str(h.root) and pid != keeper and not _descends(pid, keeper):
            problems.append(f"pid {pid} ({_comm(pid)}) with this BAY_HOME outlived its keeper")
    return problems


def _descends(pid: int, ancestor: int | None) -> bool:
    if ancestor is None:
        return False
    for _ in range(64):
        st = procfs.stat(pid)
        if st is None:
            return False
        ppid = st.ppid
        if ppid == ancestor:
            return True
        if ppid <= 1:
            return False
        pid = ppid
    return False


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


# -- the campaign ----------------------------------------------------------------------


def setup(h: Home, base: str) -> dict[str, str | None]:
    h.ok("admin", "new", label="shared")
    h.ok("admin", "new", label="excl")
    for s in ("shared-a", "shared-b"):
        h.ok(s, "use", profile="shared")
    h.ok("excl", "use", profile="excl", exclusive=True)
    h.ok("shared-a", "open", url=f"{base}/cookie?set=base-shared")
    h.ok("excl", "open", url=f"{base}/cookie?set=base-excl")
    h.ok("shared-a", "close")
    h.ok("excl", "close")
    # A graceful stop writes the cookies out; from here on they must survive every kill.
    h.bay("keeper", "stop")
    if not wait_for(lambda: not h.keeper_pids() and not h.browsers(), 30):
        raise CampaignError("the keeper did not stop after setup")
    return {
        "eph": None,
        "shared-a": "demo=base-shared",
        "shared-b": "demo=base-shared",
        "excl": "demo=base-excl",
    }


def round_analysis(
    workers: list[Worker], first_kill: float, last_kill: float, kills: int
) -> list[str]:
    """Refusals each session met between the round's first kill and its first success
    that started after the last kill: at most one per kill."""
    problems = []
    for w in workers:
        refused = 0
        for t0, t1, _verb, ok, _code in list(w.log):
            if t1 < first_kill:
                continue
            if ok and t0 > last_kill:
                break
            if not ok:
                refused += 1
        if refused > kills:
            problems.append(f"{w.sid}: {refused} refusals after {kills} kill(s)")
    return problems


def run(keeper_kills: int, browser_kills: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    started = time.monotonic()
    figures: dict[str, Any] = {"seed": seed}
    failures: list[str] = []
    with home("faults", BAY_BROWSER_GRACE="5") as h, demo_site() as base:
        cookies = setup(h, base)
        driver = Driver()
        kinds = {"eph": "eph", "shared-a": "shared-a", "shared-b": "shared-b", "excl": "excl"}
        workers = [Worker(n, k, h, base, driver, cookies[n]) for n, k in kinds.items()]
        for w in workers:
            w.start()
        recover_s: list[float] = []
        startup_kills = 0

        def strike(kill: Any) -> int:
            """One kill, announced before (``pending``) and after it landed (``epoch``)."""
            driver.pending += 1
            at = time.monotonic()
            n = kill()
            if n == 0:
                driver.pending -= 1
                return 0
            for w in workers:
                w.kill_times[driver.pending] = at
            driver.epoch = driver.pending
            return n

        def land(kind: str, rnd: int, kill: Any) -> int:
            """A kill at a random point; then wait until every session recovered, and check."""
            nonlocal startup_kills
            time.sleep(rng.uniform(0.2, 3.0))
            first = time.monotonic()
            kills = strike(kill)
            if kills == 0:
                return 0
            # Every fifth keeper kill also kills the next keeper while it is still starting.
            if (
                kind == "keeper"
                and rnd % 5 == 4
                and wait_for(lambda: bool(h.keeper_pids()), 30, 0.01)
            ):
                time.sleep(rng.uniform(0.0, 1.0))
                kills += strike(kill_keeper)
                startup_kills += 1
            last = time.monotonic()
            epoch = driver.epoch
            if not wait_for(lambda: all(w.checked >= epoch for w in workers), RECOVER_WAIT, 0.05):
                stuck = [w.sid for w in workers if w.checked < epoch]
                failures.append(
                    f"{kind} kill {rnd}: {stuck} did not recover in {RECOVER_WAIT:.0f}s"
                )
            recover_s.append(time.monotonic() - last)
            for p in round_analysis(workers, first, last, kills):
                failures.append(f"{kind} kill {rnd}: {p}")
            for p in registry_problems(h.paths.registry):
                failures.append(f"{kind} kill {rnd}: registry {p}")
            left = settle(lambda: unowned(h), 15)
            if left:
                failures.append(f"{kind} kill {rnd}: unowned processes {left}")
            return kills

        def kill_keeper() -> int:
            if not wait_for(lambda: bool(h.keeper_pids()), 30, 0.01):
                return 0
            for pid in h.keeper_pids():
                kill9(pid)
                wait_for(lambda p=pid: not alive(p), 5, 0.01)
            return 1

        done = 0
        rnd = 0
        while done < keeper_kills:
            n = land("keeper", rnd, kill_keeper)
            done += n
            rnd += 1
            print(
                f"keeper kills {done}/{keeper_kills} · {time.monotonic() - started:.0f}s",
                flush=True,
            )

        browser_done = 0
        order = ["ephemeral", "shared", "excl"]

        def kill_browser() -> int:
            want = order[browser_done % len(order)]
            status = h.ok("census", "keeper", action="status")
            labels = {p: n for n, p in _profile_ids(h).items()}
            for b in status["browsers"]:
                label = labels.get(b["profile"], "ephemeral") if b["profile"] else "ephemeral"
                if label == want and b["pid"]:
                    kill9(int(b["pid"]))
                    wait_for(lambda p=int(b["pid"]): not alive(p), 5, 0.01)
                    return 1
            return 0

        while browser_done < browser_kills:
            n = land("browser", browser_done, kill_browser)
            browser_done += n
            if n == 0:
                time.sleep(1.0)
            print(
                f"browser kills {browser_done}/{browser_kills} · {time.monotonic() - started:.0f}s",
                flush=True,
            )

        driver.stop.set()
        for w in workers:
            w.join(90)
        # The end: a last kill, and the sweep of a fresh keeper leaves nothing behind.
        for pid in h.keeper_pids():
            kill9(pid)
        h.ok("census", "keeper", action="status")
        left = settle(lambda: unowned(h), 20)
        if left:
            failures.append(f"final sweep: unowned processes {left}")
        failures.extend(f"final: registry {p}" for p in registry_problems(h.paths.registry))
        for w in workers:
            failures.extend(w.failures)
        h.keep = h.keep or bool(failures)
        ages = [a for w in workers for a in w.cookie_figures]
        figures.update(
            keeper_kills=done,
            keeper_kills_during_startup=startup_kills,
            browser_kills=browser_done,
            verbs_ok=sum(w.verbs_ok for w in workers),
            refused=sum(1 for w in workers for e in w.log if not e[3]),
            refused_codes=dict(
                collections.Counter(str(e[4]) for w in workers for e in w.log if not e[3])
            ),
            wrong_tab=sum(w.wrong_tab for w in workers),
            typed_value_lost_to_a_kill=sum(w.reloaded for w in workers),
            recoveries_checked=sum(len(w.recovered) for w in workers),
            tabs_restored_ok=sum(1 for w in workers for r in w.recovered.values() if r["tabs_ok"]),
            cookie_checks=sum(1 for w in workers for r in w.recovered.values() if "cookie_ok" in r),
            cookie_ok=sum(1 for w in workers for r in w.recovered.values() if r.get("cookie_ok")),
            restore_notices=sum(w.notices for w in workers),
            recover_s=_pct(recover_s),
            recent_cookies={
                "older_than_30s": _frac([s for a, s in ages if a >= 30]),
                "10_to_30s": _frac([s for a, s in ages if 10 <= a < 30]),
                "under_10s": _frac([s for a, s in ages if a < 10]),
            },
            keeper_runs=registry_rows(h.paths.registry, "SELECT count(*) FROM keeper_runs")[0][0],
            swept=registry_rows(
                h.paths.registry, "SELECT count(*) FROM browsers WHERE stop_reason='orphan_swept'"
            )[0][0],
            crashed=registry_rows(
                h.paths.registry, "SELECT count(*) FROM browsers WHERE stop_reason='crashed'"
            )[0][0],
            failures=failures,
            seconds=round(time.monotonic() - started),
        )
    return figures


def settle(probe: Any, timeout: float) -> list[str]:
    """Poll ``probe`` until it finds nothing (or the time is up): its last finding."""
    end = time.monotonic() + timeout
    found: list[str] = probe()
    while found and time.monotonic() < end:
        time.sleep(0.5)
        found = probe()
    return found


def _profile_ids(h: Home) -> dict[str, str]:
    return {r[1]: r[0] for r in registry_rows(h.paths.registry, "SELECT id, label FROM profiles")}


def _pct(values: list[float]) -> dict[str, float]:
    from campaigns.common import percentiles

    return percentiles(values)


def _codes(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"


def _frac(flags: list[bool]) -> str:
    return f"{sum(flags)}/{len(flags)}" if flags else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keeper-kills", type=int, default=50)
    ap.add_argument("--browser-kills", type=int, default=20)
    ap.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    a = ap.parse_args()
    f = run(a.keeper_kills, a.browser_kills, a.seed)
    fails = f["failures"]
    rc, pct = f["recent_cookies"], f["recover_s"]
    rows = [
        (
            "keeper `kill -9`s (of which while the next keeper was starting)",
            f"{f['keeper_kills']} ({f['keeper_kills_during_startup']})",
        ),
        ("browser `kill -9`s (ephemeral, shared, exclusive in turn)", f["browser_kills"]),
        ("verbs answered ok / refused", f"{f['verbs_ok']} / {f['refused']}"),
        ("refusals by code", _codes(f["refused_codes"])),
        (
            "recoveries checked (session × kill) / kept tabs restored exactly",
            f"{f['recoveries_checked']} / {f['tabs_restored_ok']}",
        ),
        ("persistent-cookie checks / intact", f"{f['cookie_checks']} / {f['cookie_ok']}"),
        ("verbs that landed on another session's tab (page-side markers)", f["wrong_tab"]),
        (
            "typed values gone because a kill reopened the page between fill and read",
            f["typed_value_lost_to_a_kill"],
        ),
        (
            "keeper runs · browsers swept as orphans · browsers seen crashed",
            f"{f['keeper_runs']} · {f['swept']} · {f['crashed']}",
        ),
        (
            "seconds from the last kill to every session recovered",
            f"p50 {pct.get('p50')} · p95 {pct.get('p95')} · max {pct.get('max')}",
        ),
        (
            "cookies written < 10 s / 10–30 s / > 30 s before a kill that survived it",
            f"{rc['under_10s']} · {rc['10_to_30s']} · {rc['older_than_30s']}",
        ),
        ("failures", len(fails)),
    ]
    md = f"Latest run: {today()} · {machine()} · seed {f['seed']} · {f['seconds']} s\n\n"
    md += table(rows) + "".join(f"\n- {x}" for x in fails[:20])
    record("faults", f, md)
    raise SystemExit(1 if fails else 0)


if __name__ == "__main__":
    main()
