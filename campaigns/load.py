"""Load: 8 sessions × 200 verbs at once — two on each of two shared persistent profiles,
four ephemeral — through one keeper. Every tab carries a page-side marker of its owner
(``window.name``, which survives navigations in the tab) and every page shows a marker of
the verb that loaded it; every answer is checked against them, so a verb that landed on a tab
the session does not own is counted. Each session also tries, once per round, to switch to
another session's tab (which must be refused ``not_your_tab``). Latency per verb is
recorded (p50/p95/p99, through the thin client: connect, hello, verb, answer).

Run: campaigns/run.sh load [--sessions 8] [--verbs 200]
"""

from __future__ import annotations

import argparse
import collections
import threading
import time
from typing import Any

from campaigns.common import (
    Home,
    demo_site,
    home,
    machine,
    percentiles,
    record,
    table,
    today,
)


class Session(threading.Thread):
    def __init__(self, sid: str, h: Home, base: str, budget: int, board: dict[str, str]):
        super().__init__(name=sid, daemon=True)
        self.sid, self.h, self.base, self.budget, self.board = sid, h, base, budget, board
        self.latency: dict[str, list[float]] = collections.defaultdict(list)
        self.verbs = 0
        self.wrong: list[str] = []
        self.refused: list[str] = []
        self.fenced = 0
        self.crossings = 0

    def call(self, verb: str, **args: Any) -> dict[str, Any] | None:
        t0 = time.perf_counter()
        frame = self.h.call(self.sid, verb, 60.0, **args)
        ms = (time.perf_counter() - t0) * 1000
        self.verbs += 1
        key = f"{verb} {args.get('action', '')}".strip() if verb == "tab" else verb
        if not self.latency:
            key += " (the first: its browser starts)"
        self.latency[key].append(ms)
        if not frame.get("ok"):
            self.refused.append(f"{verb} {args}: {frame.get('code')}: {frame.get('message')}")
            return None
        return dict(frame["data"])

    def expect(self, what: str, got: Any, want: Any) -> None:
        if got != want:
            self.wrong.append(f"{self.sid}: {what}: got {got!r}, want {want!r}")

    def mark(self) -> None:
        """The current tab is mine: say so on the page."""
        self.call("eval", js=f"window.name = 'owner:{self.sid}'")

    def run(self) -> None:
        me = self.sid
        i = 0
        first = self.call("open", url=f"{self.base}/item/{me}-0")
        if first is None:
            return
        self.mark()
        self.board[me] = first["tab"]
        while self.verbs < self.budget:
            i += 1
            item = f"{me}-{i}"
            page = self.call("open", url=f"{self.base}/item/{item}")
            if page is not None:
                self.expect("open title", page["title"], f"Item {item}")
            owner = self.call("eval", js="window.name")
            if owner is not None:
                self.expect("owner marker", owner.get("value"), f"owner:{me}")
            title = self.call("get", what="title")
            if title is not None:
                self.expect("title", title.get("value"), f"Item {item}")
            snap = self.call("snapshot")
            if snap is not None and f"Item {item}" not in snap.get("snapshot", ""):
                self.wrong.append(f"{me}: snapshot shows another page: {snap['snapshot'][:80]!r}")
            if self.call("open", url=f"{self.base}/form.html?o={me}&i={i}") is None:
                continue
            self.call("fill", target="input[name=name]", text=item)
            self.call("click", target="input[name=terms]")
            value = self.call("get", what="value", target="input[name=name]")
            if value is not None:
                self.expect("filled value", value.get("value"), item)
            checked = self.call("eval", js="document.querySelector('input[name=terms]').checked")
            if checked is not None:
                self.expect("clicked checkbox", checked.get("value"), True)
            owner = self.call("eval", js="[window.name, location.search]")
            if owner is not None:
                self.expect(
                    "owner after form", owner.get("value"), [f"owner:{me}", f"?o={me}&i={i}"]
                )
            # Another session's tab: refused before anything runs on it.
            others = [t for s, t in sorted(self.board.items()) if s != me]
            if others:
                other = others[i % len(others)]
                t0 = time.perf_counter()
                frame = self.h.call(me, "tab", 60.0, action=other)
                self.crossings += 1
                self.latency["tab <other's>"].append((time.perf_counter() - t0) * 1000)
                if frame.get("code") == "not_your_tab":
                    self.fenced += 1
                elif frame.get("ok"):
                    self.wrong.append(f"{me}: switched to {other}, another session's tab")
            if i % 4 == 0:
                new = self.call("tab", action="new", arg=f"{self.base}/item/{item}-t")
                if new is not None:
                    self.mark()
                    listed = self.call("tab", action="list")
                    if listed is not None:
                        ids = [t["id"] for t in listed["tabs"]]
                        stray = [t for t in ids if t in others]
                        if stray:
                            self.wrong.append(f"{me}: tab list shows {stray} of other sessions")
                    self.call("tab", action="close", arg=new["tab"])


def run(sessions: int, verbs: int) -> dict[str, Any]:
    started = time.monotonic()
    with home("load") as h, demo_site() as base:
        shared = [h.ok("admin", "new", label=f"shared{n}")["id"] for n in range(2)]
        names = []
        for n in range(sessions):
            sid = f"s{n}"
            if n < sessions // 2:
                h.ok(sid, "use", profile=shared[n % 2])
                sid_kind = "shared"
            else:
                sid_kind = "ephemeral"
            names.append((sid, sid_kind))
        board: dict[str, str] = {}
        workers = [Session(sid, h, base, verbs, board) for sid, _ in names]
        t0 = time.monotonic()
        for w in workers:
            w.start()
        for w in workers:
            w.join(900)
        wall = time.monotonic() - t0
        status = h.ok("admin", "keeper", action="status")
        all_ms = [ms for w in workers for v in w.latency.values() for ms in v]
        per_verb: dict[str, list[float]] = collections.defaultdict(list)
        for w in workers:
            for k, v in w.latency.items():
                per_verb[k].extend(v)
        figures = {
            "sessions": dict(collections.Counter(kind for _, kind in names)),
            "verbs": sum(w.verbs for w in workers),
            "wall_s": round(wall, 1),
            "verbs_per_s": round(sum(w.verbs for w in workers) / wall, 1),
            "wrong_tab": sum(len(w.wrong) for w in workers),
            "wrong": [x for w in workers for x in w.wrong][:20],
            "refused": [x for w in workers for x in w.refused][:20],
            "refused_count": sum(len(w.refused) for w in workers),
            "crossings": sum(w.crossings for w in workers),
            "fenced": sum(w.fenced for w in workers),
            "latency_ms": percentiles(all_ms),
            "per_verb_ms": {k: percentiles(v) for k, v in sorted(per_verb.items())},
            "browsers": len(status["browsers"]),
            "seconds": round(time.monotonic() - started),
        }
        h.keep = h.keep or bool(figures["wrong_tab"] or figures["refused_count"])
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=8)
    ap.add_argument("--verbs", type=int, default=200)
    a = ap.parse_args()
    f = run(a.sessions, a.verbs)
    lat = f["latency_ms"]
    rows = [
        (
            "sessions (shared profiles: 2 sessions on each of 2; ephemeral)",
            f"{sum(f['sessions'].values())} ({f['sessions'].get('shared', 0)} shared, "
            f"{f['sessions'].get('ephemeral', 0)} ephemeral) in {f['browsers']} browsers",
        ),
        ("verbs answered (all sessions at once)", f"{f['verbs']} in {f['wall_s']} s"),
        ("verbs that landed on a tab the session does not own", f["wrong_tab"]),
        (
            "switches to another session's tab tried / refused not_your_tab",
            f"{f['crossings']} / {f['fenced']}",
        ),
        ("verbs refused", f["refused_count"]),
        (
            "latency of every verb, ms (thin client round trip)",
            f"p50 {lat['p50']} · p95 {lat['p95']} · p99 {lat['p99']} · max {lat['max']}",
        ),
    ]
    for verb, p in f["per_verb_ms"].items():
        rows.append(
            (f"`{verb}` ms (n={p['n']})", f"p50 {p['p50']} · p95 {p['p95']} · p99 {p['p99']}")
        )
    fails = f["wrong"] + f["refused"]
    md = (
        f"Latest run: {today()} · {machine()} · {f['seconds']} s\n\n"
        + table(rows)
        + "".join(f"\n- {x}" for x in fails[:20])
    )
    record("load", f, md)
    raise SystemExit(1 if f["wrong_tab"] or f["refused_count"] else 0)


if __name__ == "__main__":
    main()
