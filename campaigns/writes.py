"""Crash consistency of registry writes: ``kill -9`` in the middle of them, then check that
the store is never corrupt and never half-applied.

1. **Transactions.** Every write method of the registry is run once against a scratch store
   with SQLite's statement trace on: a method that writes more than one statement must do it
   inside one ``BEGIN IMMEDIATE … COMMIT``.
2. **The store alone.** A child process runs a random mix of registry writes (profile
   create/delete, attach/detach/pin, kept-tab lists, parking, holds, trigger claims, audit)
   as fast as it can and is ``kill -9``ed at a random moment, hundreds of times on one
   registry. After each kill: ``PRAGMA integrity_check``, ``foreign_key_check``, and the
   invariants a half-applied write would break — every kept-tab list is one whole
   generation, a deleted profile leaves no rows behind, every profile row has its directory.
3. **The keeper.** Sessions create profiles, attach/pin/detach them (some exclusively) and
   change their kept tabs through the keeper while it is ``kill -9``ed at random. After
   each kill: the same checks, every write the keeper acknowledged is there, a verb cut by the
   kill is all-or-nothing, and no exclusive hold is left without its attachment.

Run: campaigns/run.sh writes [--store-kills 300] [--keeper-kills 30] [--seed N]
"""

from __future__ import annotations

import argparse
import random
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from browserbay import client
from campaigns.common import (
    CampaignError,
    Home,
    alive,
    demo_site,
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

# -- 1. every multi-statement write is one transaction ---------------------------------------

_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")


def transaction_audit(scratch: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Each write method of the registry, traced: how many write statements it issued and
    whether they were all inside one transaction."""
    from browserbay.registry import Database, KeeperStart, KeptTab, ProfileRow, sql_registry

    db = Database(scratch / "audit.sqlite3")
    reg = sql_registry(db)
    statements: list[str] = []
    db.conn.set_trace_callback(statements.append)
    now = time.time()
    row = ProfileRow(
        "bp-00000001", "p", "chromium", str(scratch), None, (), False, False, now, None
    )
    tabs = [KeptTab("http://x/1", "one", True), KeptTab("http://x/2", "two", False)]
    me = KeeperStart(reg.keeper_id, "h", None, 1, "v")
    calls: list[tuple[str, Callable[..., object], tuple[Any, ...]]] = [
        ("keepers.register", reg.keepers.register, (me,)),
        ("runs.started", reg.runs.started, (1, "v")),
        ("sessions.seen", reg.sessions.seen, ("s", "api")),
        ("profiles.create", reg.profiles.create, (row,)),
        ("attachments.attach", reg.attachments.attach, ("s", row.id, "a", False)),
        ("sessions.set_pin", reg.sessions.set_pin, ("s", row.id, True)),
        ("sessions.set_last_profile", reg.sessions.set_last_profile, ("s", row.id)),
        ("sessions.ack_set", reg.sessions.ack_set, ("s", ["a"])),
        ("sessions.set_ephemeral_domains", reg.sessions.set_ephemeral_domains, ("s", ["x.org"])),
        ("kept_tabs.keep", reg.kept_tabs.keep, ("s", row.id, tabs, "live")),
        ("kept_tabs.mark", reg.kept_tabs.mark, ("s", row.id, "auto")),
        ("kept_tabs.park", reg.kept_tabs.park, ("s", row.id)),
        ("kept_tabs.keep", reg.kept_tabs.keep, ("s", row.id, tabs, "live")),
        ("kept_tabs.mark_live_auto", reg.kept_tabs.mark_live_auto, ()),
        ("kept_tabs.drop", reg.kept_tabs.drop, ("s", row.id + "@closed")),
        ("holds.set", reg.holds.set, (row.id, "s", "g")),
        ("holds.release", reg.holds.release, (row.id, "s")),
        ("groups.set", reg.groups.set, ("g", row.id)),
        ("triggers.admit", reg.triggers.admit, ("u-1", "s", "{}", 0.0)),
        ("triggers.claim", reg.triggers.claim, ("u-1",)),
        ("triggers.finish", reg.triggers.finish, ("u-1", "s", "{}")),
        ("audit.record", reg.audit.record, ("s", row.id, "open", True, None)),
        ("claims.take", reg.claims.take, (row.id, reg.keeper_id, 15.0)),
        ("keepers.beat", reg.keepers.beat, (reg.keeper_id,)),
        ("claims.renew", reg.claims.renew, (reg.keeper_id,)),
        ("claims.release", reg.claims.release, (row.id, reg.keeper_id)),
        ("claims.expire", reg.claims.expire, (15.0,)),
        ("claims.release_all", reg.claims.release_all, (reg.keeper_id,)),
        ("kept_tabs.take_over", reg.kept_tabs.take_over, (row.id,)),
        ("profiles.used", reg.profiles.used, (row.id,)),
        ("attachments.detach", reg.attachments.detach, ("s", row.id, False)),
        ("sessions.closed", reg.sessions.closed, ("s",)),
        ("profiles.delete", reg.profiles.delete, (row.id,)),
        ("runs.stopped", reg.runs.stopped, (1,)),
        ("keepers.stop", reg.keepers.stop, (reg.keeper_id,)),
    ]
    rows, problems = [], []
    for name, method, args in calls:
        statements.clear()
        method(*args)
        writes = [s for s in statements if s.lstrip().upper().startswith(_WRITES)]
        in_tx = _wrapped(statements)
        rows.append({"method": name, "writes": len(writes), "one_transaction": in_tx})
        if len(writes) > 1 and not in_tx:
            problems.append(f"{name} writes {len(writes)} statements outside one transaction")
    reg.close()
    return rows, problems


def _wrapped(statements: list[str]) -> bool:
    """All write statements lie between one BEGIN and its COMMIT."""
    depth, ok = 0, True
    for s in statements:
        word = s.lstrip().split(None, 1)[0].upper() if s.strip() else ""
        if word == "BEGIN":
            depth += 1
        elif word in ("COMMIT", "END", "ROLLBACK"):
            depth -= 1
        elif word in _WRITES and depth == 0:
            ok = False
    return ok


# -- 2. the store alone, killed mid-write ----------------------------------------------------


def child(path: str, seed: int) -> None:
    """The writer: random registry writes, forever (until killed)."""
    from browserbay.registry import PARKED, KeptTab, ProfileRow, open_sqlite

    rng = random.Random(seed)
    root = Path(path).parent / "profiles"
    root.mkdir(exist_ok=True)
    reg = open_sqlite(Path(path))
    print("ready", flush=True)
    sessions = [f"s{i}" for i in range(6)]
    while True:
        ids = [p.id for p in reg.profiles.all()]
        op = rng.randrange(11)
        s = rng.choice(sessions)
        pid = rng.choice(ids) if ids else None
        if op == 0 or pid is None:
            new = f"bp-{rng.getrandbits(32):08x}"
            (root / new).mkdir(mode=0o700)  # the keeper's order: the directory, then the row
            reg.profiles.create(
                ProfileRow(new, "l", "chromium", str(root / new), None, (), False, False, 0, None)
            )
        elif op == 1 and len(ids) > 3:
            reg.profiles.delete(pid)
            shutil.rmtree(root / pid, ignore_errors=True)
        elif op == 2:
            reg.attachments.attach(s, pid, rng.choice([None, "a", "b"]), rng.random() < 0.3)
        elif op == 3:
            reg.attachments.detach(s, pid, rng.random() < 0.3)
        elif op == 4:
            reg.sessions.set_pin(s, rng.choice([None, pid]), rng.random() < 0.3)
        elif op in (5, 6):
            gen = rng.getrandbits(20)
            n = gen % 6 + 1
            tabs = [KeptTab(f"http://g/{gen}/{i}", f"gen {gen}", i == gen % n) for i in range(n)]
            reg.kept_tabs.keep(s, pid, tabs, "live")
        elif op == 7:
            reg.kept_tabs.park(s, pid)
            if rng.random() < 0.3:
                reg.kept_tabs.drop(s, pid + PARKED)
        elif op == 8:
            if rng.random() < 0.5:
                reg.holds.set(pid, s, s)
            else:
                reg.holds.release(pid, s)
        elif op == 9:
            uuid = f"u-{rng.getrandbits(32):08x}"
            reg.triggers.admit(uuid, s, "{}", time.time())
            if reg.triggers.claim(uuid).phase == "queued":
                reg.triggers.finish(uuid, s, '{"ok": true}')
        else:
            reg.audit.record(s, pid, "open", True, None)


def store_problems(path: Path) -> list[str]:
    """registry_problems, plus: kept-tab lists are whole generations, and a deleted profile
    left nothing behind."""
    problems = registry_problems(path)
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=15)
    try:
        for session, profile, urls in db.execute(
            "SELECT session, profile, group_concat(url, ' ') FROM kept_tabs "
            "GROUP BY session, profile"
        ):
            gens = {u.split("/")[3] for u in urls.split(" ") if u.startswith("http://g/")}
            count = len(urls.split(" "))
            if len(gens) > 1:
                problems.append(f"kept tabs of {session}/{profile} mix generations {gens}")
            elif gens and count != int(next(iter(gens))) % 6 + 1:
                problems.append(f"kept tabs of {session}/{profile}: {count} of a generation")
        known = {r[0] for r in db.execute("SELECT id FROM profiles")}
        for table_name in ("holds", "attachments"):
            for (pid,) in db.execute(f"SELECT DISTINCT profile FROM {table_name}"):
                if pid not in known:
                    problems.append(f"{table_name} keeps deleted profile {pid}")
    finally:
        db.close()
    return problems


def store_campaign(kills: int, seed: int, root: Path) -> dict[str, Any]:
    rng = random.Random(seed)
    path = root / "registry.sqlite3"
    problems: list[str] = []
    started = time.monotonic()
    landed = 0
    for n in range(kills):
        proc = subprocess.Popen(
            [sys.executable, "-m", "campaigns.writes", "--child", str(path), str(seed * 1000 + n)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != b"ready":
                err = proc.stderr.read().decode() if proc.stderr else ""
                raise CampaignError(f"the writer did not start: {err[-500:]}")
            time.sleep(rng.uniform(0.005, 0.25))
            if proc.poll() is None:
                landed += 1
            kill9(proc.pid)
            proc.wait(10)
        finally:
            if proc.poll() is None:
                kill9(proc.pid)
                proc.wait(10)
        for p in store_problems(path):
            problems.append(f"kill {n}: {p}")
        if len(problems) > 20:
            break
    counts = dict(
        registry_rows(
            path,
            "SELECT 'profiles', count(*) FROM profiles UNION ALL "
            "SELECT 'kept_tabs', count(*) FROM kept_tabs UNION ALL "
            "SELECT 'attachments', count(*) FROM attachments UNION ALL "
            "SELECT 'audit', count(*) FROM audit UNION ALL "
            "SELECT 'trigger_requests', count(*) FROM trigger_requests",
        )
    )
    unfinished = registry_rows(path, "SELECT count(*) FROM trigger_requests WHERE result IS NULL")[
        0
    ][0]
    profiles = {r[0] for r in registry_rows(path, "SELECT id FROM profiles")}
    orphan_dirs = [d.name for d in (root / "profiles").iterdir() if d.name not in profiles]
    return {
        "kills": landed,
        "rows": counts,
        "claims_cut_before_their_result": unfinished,
        "orphan_directories": len(orphan_dirs),
        "problems": problems,
        "seconds": round(time.monotonic() - started),
    }


# -- 3. the keeper, killed mid-write ---------------------------------------------------------


class Writer(threading.Thread):
    """One session looping over one kind of registry write through the keeper, keeping a
    model of what was acknowledged."""

    def __init__(self, name: str, h: Home, base: str, stop: threading.Event):
        super().__init__(name=name, daemon=True)
        self.sid, self.h, self.base, self.stop = name, h, base, stop
        self.rng = random.Random(name)
        self.failures: list[str] = []
        self.acked = 0
        self.cut = 0
        self.created: set[str] = set()
        self.attached: dict[str, str] = {}  # profile id -> "plain" | "exclusive"
        self.maybe: dict[str, str | None] = {}  # a cut verb: what it may have done
        self.lock = threading.Lock()
        self.busy: str | None = None  # the verb in flight

    def call(
        self, verb: str, extra: dict[str, Any] | None = None, **args: Any
    ) -> dict[str, Any] | None:
        self.busy = verb
        try:
            frame = client.call(
                verb,
                args,
                session={"id": self.sid, "origin": "api"},
                timeout=60.0,
                paths=self.h.paths,
                extra=extra,
            )
        finally:
            self.busy = None
        if frame.get("ok"):
            self.acked += 1
            return dict(frame["data"])
        if frame.get("code") == "keeper_unavailable":
            self.cut += 1
        elif frame.get("code") not in ("profile_busy", "tab_gone"):
            # (busy: the other leaser holds it; tab_gone: a tab id of the killed keeper)
            self.failures.append(f"{self.sid}: {verb} {args} refused {frame.get('code')}")
        return None

    def run(self) -> None:
        while not self.stop.is_set():
            with self.lock:
                try:
                    self.step()
                except Exception as exc:
                    self.failures.append(f"{self.sid}: {type(exc).__name__}: {exc}")

    def step(self) -> None:
        raise NotImplementedError


class Creator(Writer):
    """`new` (a directory, then its row) and `forget` (an archive, the rows, the
    directory)."""

    def step(self) -> None:
        if self.created and self.rng.random() < 0.5:
            pid = self.rng.choice(sorted(self.created))
            self.call("forget", profile=pid)
            self.created.discard(pid)  # forgotten, or cut by a kill: either may be true
            return
        data = self.call("new", label=f"c-{self.rng.getrandbits(24):06x}")
        if data is not None:
            self.created.add(data["id"])


class Leaser(Writer):
    """use / use --exclusive / pin / detach on a few shared profiles."""

    def __init__(self, name: str, h: Home, base: str, stop: threading.Event, pool: list[str]):
        super().__init__(name, h, base, stop)
        self.pool = pool

    def step(self) -> None:
        pid = self.rng.choice(self.pool)
        self.maybe = {pid: None}
        if pid in self.attached and self.rng.random() < 0.5:
            if self.call("detach", extra={"profile": pid}) is not None:
                self.attached.pop(pid, None)
            return
        exclusive = self.rng.random() < 0.4
        args: dict[str, Any] = {"profile": pid}
        if exclusive:
            args.update(exclusive=True, wait=2.0)
        if self.call("use", **args) is not None:
            self.attached[pid] = "exclusive" if exclusive else self.attached.get(pid, "plain")
        if self.rng.random() < 0.3 and self.attached:
            self.call("pin", profile=self.rng.choice(sorted(self.attached)))


class Tabber(Writer):
    """open / tab new / tab close: kept-tab updates (its ephemeral browser)."""

    def step(self) -> None:
        n = self.rng.getrandbits(16)
        tabs = self.call("tab", action="list")
        if tabs is None:
            return
        if len(tabs["tabs"]) > 2:
            self.call("tab", action="close", arg=tabs["tabs"][0]["id"])
        elif tabs["tabs"] and self.rng.random() < 0.5:
            self.call("open", url=f"{self.base}/item/{self.sid}-{n}")
        else:
            self.call("tab", action="new", arg=f"{self.base}/item/{self.sid}-{n}")


def keeper_problems(h: Home, writers: list[Writer]) -> list[str]:
    problems = list(registry_problems(h.paths.registry))
    rows = registry_rows(h.paths.registry, "SELECT id, dir FROM profiles")
    known = {r[0] for r in rows}
    for w in writers:
        missing = w.created - known
        if missing:
            problems.append(f"{w.sid}: acknowledged profiles missing: {sorted(missing)}")
    holds = registry_rows(h.paths.registry, "SELECT profile, holder FROM holds")
    attached = set(registry_rows(h.paths.registry, "SELECT profile, session FROM attachments"))
    for profile, holder in holds:
        if (profile, holder) not in attached:
            problems.append(f"hold on {profile} by {holder} without its attachment")
    for w in writers:
        if isinstance(w, Leaser):
            have = {
                r[0]
                for r in registry_rows(
                    h.paths.registry, "SELECT profile FROM attachments WHERE session=?", (w.sid,)
                )
            }
            want = set(w.attached)
            diff = have ^ want
            if diff - set(w.maybe):
                problems.append(
                    f"{w.sid}: attachments {sorted(have)} but acknowledged {sorted(want)}"
                )
            # what the registry says is the truth from here on (a cut verb may or may not have
            # taken effect)
            w.attached = {p: w.attached.get(p, "plain") for p in have}
    return problems


def keeper_campaign(kills: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    started = time.monotonic()
    problems: list[str] = []
    with home("writes", BAY_BROWSER_GRACE="5") as h, demo_site() as base:
        pool = [h.ok("admin", "new", label=f"pool{i}")["id"] for i in range(3)]
        stop = threading.Event()
        writers: list[Writer] = [
            Creator("creator", h, base, stop),
            Leaser("leaser-a", h, base, stop, pool),
            Leaser("leaser-b", h, base, stop, pool),
            Tabber("tabber", h, base, stop),
        ]
        for w in writers:
            w.start()
        done = 0
        cut: dict[str, int] = {}
        while done < kills:
            # A kill in the middle of a write: wait until a chosen writer has a verb in
            # flight, then a few milliseconds more.
            time.sleep(rng.uniform(0.2, 1.0))
            target = rng.choice(writers)
            wait_for(lambda t=target: t.busy is not None, 10, 0.001)
            time.sleep(rng.uniform(0.0, 0.03))
            cut[target.busy or "none"] = cut.get(target.busy or "none", 0) + 1
            pids = h.keeper_pids()
            if not pids:
                wait_for(lambda: bool(h.keeper_pids()), 30, 0.01)
                continue
            for pid in pids:
                kill9(pid)
                wait_for(lambda p=pid: not alive(p), 5, 0.01)
            done += 1
            # Every writer finishes its cut step (the next keeper starts), then the checks run
            # while they are held.
            for w in writers:
                w.lock.acquire()
            try:
                h.ok("census", "keeper", action="status")
                for p in keeper_problems(h, writers):
                    problems.append(f"keeper kill {done}: {p}")
            finally:
                for w in writers:
                    w.lock.release()
            print(f"keeper kills {done}/{kills} · {time.monotonic() - started:.0f}s", flush=True)
        stop.set()
        for w in writers:
            w.join(90)
            problems.extend(w.failures)
        orphans = h.ok("admin", "profiles", orphans=True).get("orphans", {})
        log = h.paths.keeper_log.read_text(errors="replace")
        repaired = {
            "holds_released": sum(
                int(x.split(" exclusive hold", 1)[0].rsplit(" ", 1)[-1])
                for x in log.splitlines()
                if "hold(s) of a cut `use --exclusive` released" in x
            ),
            "dirs_removed": sum(
                int(x.split("removed ", 1)[1].split(" ", 1)[0])
                for x in log.splitlines()
                if "profile dir(s) a killed keeper left" in x
            ),
        }
        figures = {
            "kills": done,
            "acknowledged": sum(w.acked for w in writers),
            "cut_by_a_kill": sum(w.cut for w in writers),
            "killed_during": cut,
            "profiles": len(registry_rows(h.paths.registry, "SELECT id FROM profiles")),
            "orphan_directories": len(orphans.get("directories", [])),
            "repaired_at_start": repaired,
            "rows_without_directory": len(orphans.get("rows_without_directory", [])),
            "problems": problems,
            "seconds": round(time.monotonic() - started),
        }
        h.keep = h.keep or bool(problems)
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store-kills", type=int, default=300)
    ap.add_argument("--keeper-kills", type=int, default=30)
    ap.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.child[0], int(a.child[1]))
        return
    scratch = Path(__import__("tempfile").mkdtemp(prefix="bc-wr-", dir="/tmp"))
    try:
        audit, tx_problems = transaction_audit(scratch)
        store = store_campaign(a.store_kills, a.seed, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    keeper = keeper_campaign(a.keeper_kills, a.seed)
    f = {
        "seed": a.seed,
        "transactions": audit,
        "transaction_problems": tx_problems,
        "store": store,
        "keeper": keeper,
    }
    fails = tx_problems + store["problems"] + keeper["problems"]
    multi = sorted({r["method"] for r in audit if r["writes"] > 1})
    rows = [
        (
            "registry write methods traced / writing several statements, each in one transaction",
            f"{len(audit)} / {len(multi)} ({', '.join(multi)})",
        ),
        ("writer processes `kill -9`ed mid-write (one registry)", store["kills"]),
        (
            "rows at the end (profiles, kept tabs, attachments, audit, claims)",
            ", ".join(f"{k} {v}" for k, v in store["rows"].items()),
        ),
        ("problems found by integrity, foreign-key and half-write checks", len(store["problems"])),
        (
            "keeper `kill -9`s with a write verb in flight (by verb)",
            f"{keeper['kills']} ("
            + ", ".join(f"{k} {v}" for k, v in sorted(keeper["killed_during"].items()))
            + ")",
        ),
        (
            "verbs acknowledged / cut by a kill",
            f"{keeper['acknowledged']} / {keeper['cut_by_a_kill']}",
        ),
        (
            "put right by the next keeper: holds without their attachment · profile dirs "
            "of a cut new/forget",
            f"{keeper['repaired_at_start']['holds_released']} · "
            f"{keeper['repaired_at_start']['dirs_removed']}",
        ),
        ("profile directories without a row at the end", keeper["orphan_directories"]),
        ("profile rows without a directory", keeper["rows_without_directory"]),
        ("failures", len(fails)),
    ]
    md = (
        f"Latest run: {today()} · {machine()} · seed {a.seed} · "
        f"{store['seconds'] + keeper['seconds']} s\n\n"
        + table(rows)
        + "".join(f"\n- {x}" for x in fails[:20])
    )
    record("writes", f, md)
    raise SystemExit(1 if fails else 0)


if __name__ == "__main__":
    main()
