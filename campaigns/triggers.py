"""Trigger intake, exactly once: the keeper is SIGKILLed at every step of a request's life
while concurrent requests for the same session wait behind it, and every request must get
exactly one result, no action may be done twice, and ``uncertain`` must be true exactly
where an action may have happened.

Each round publishes four ``open`` requests for one session and two for another, all at
once, each navigating to a URL of its own on a site that counts the hits
(:class:`browserbay_testing.hits.HitSite`: an action is counted where it lands, not by the
keeper's word; the hit redirects, so a tab restored later is not counted again). The second
request of the first session is the victim: the keeper is killed at one step of its life —

- ``claimed``: after its claim, before its action began (the BAY_FAULTS hook);
- ``acting``: its action is about to start (recorded as begun; nothing sent yet);
- ``mid-action``: the site kills the keeper the moment the navigation reaches it;
- ``acted``: its action finished, its result not yet recorded;
- ``recorded``: its result recorded, not yet written;
- ``writing``: half its result file written;
- ``written``: its result file written, its request file not yet removed —

then a keeper without faults is started and every result awaited. A watcher reads the results
directory every few milliseconds and keeps every distinct content each result file ever had.

Run: campaigns/run.sh triggers [--rounds 3] [--points claimed,acting,...]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from browserbay_testing.hits import HitSite
from campaigns.common import (
    CampaignError,
    Home,
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

POINTS = ("claimed", "acting", "mid-action", "acted", "recorded", "writing", "written")
#: The victim's result each kill point must give: (ok, reason, uncertain, hits).
EXPECTED = {
    "claimed": (False, "interrupted by restart", False, 0),
    "acting": (False, "interrupted by restart", True, 0),
    "mid-action": (False, "interrupted by restart", True, 1),
    "acted": (False, "interrupted by restart", True, 1),
    "recorded": (True, None, False, 1),
    "writing": (True, None, False, 1),
    "written": (True, None, False, 1),
}
SESSIONS = (("t1", 4), ("t2", 2))
RESULT_WAIT = 120.0


class Watcher(threading.Thread):
    """Every distinct content each result file had, read every few milliseconds."""

    def __init__(self, processed: Path):
        super().__init__(daemon=True)
        self.processed = processed
        self.seen: dict[str, set[bytes]] = collections.defaultdict(set)
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.look()
            time.sleep(0.003)

    def look(self) -> None:
        with contextlib.suppress(OSError):
            for entry in os.scandir(self.processed):
                if entry.name.endswith(".result.json") and not entry.name.startswith("."):
                    with contextlib.suppress(OSError):
                        data = Path(entry.path).read_bytes()
                        self.seen[entry.name[: -len(".result.json")]].add(data)


@dataclass
class Figures:
    requests: int = 0
    exactly_once: int = 0
    missing: list[str] = field(default_factory=list)
    rewritten: list[str] = field(default_factory=list)
    twice: list[str] = field(default_factory=list)
    ok_without_action: list[str] = field(default_factory=list)
    uncertain_acted: int = 0
    acted_not_ok: int = 0
    uncertain_no_action: int = 0
    certain_but_acted: list[str] = field(default_factory=list)
    victims: dict[str, collections.Counter[str]] = field(
        default_factory=lambda: collections.defaultdict(collections.Counter)
    )
    wrong_victim: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    kills: int = 0
    interrupted_bystanders: int = 0


def _publish(d: Path, name: str, body: dict[str, Any]) -> None:
    tmp = d / f".{name}.tmp"
    tmp.write_text(json.dumps(body))
    os.replace(tmp, d / f"{name}.json")


def _start(h: Home, faults: str | None) -> int:
    if faults:
        os.environ["BAY_FAULTS"] = faults
    try:
        r = h.bay("keeper", "start", "--json")
    finally:
        os.environ.pop("BAY_FAULTS", None)
    if r.returncode != 0:
        raise CampaignError(f"keeper start: {r.stdout} {r.stderr}")
    return int(json.loads(r.stdout)["data"]["pid"])


def one_round(
    h: Home, site: HitSite, d: Path, point: str, figures: Figures, watcher: Watcher
) -> None:
    names = {sid: [str(uuid.uuid4()) for _ in range(n)] for sid, n in SESSIONS}
    victim = names["t1"][1]
    faults = None if point == "mid-action" else f"trigger.{point}@{victim}=kill"
    pid = _start(h, faults)
    if point == "mid-action":
        site.on_hit[victim] = lambda: kill9(pid)
    for i in range(max(n for _sid, n in SESSIONS)):  # interleaved: both sessions at once
        for sid, _n in SESSIONS:
            if i < len(names[sid]):
                name = names[sid][i]
                _publish(
                    d, name, {"version": 1, "action": "open", "session": sid, "url": site.url(name)}
                )
    if not wait_for(lambda: not h.keeper_pids(), 90, 0.02):
        raise CampaignError(f"{point}: the keeper was not killed")
    figures.kills += 1
    site.on_hit.pop(victim, None)
    _start(h, None)
    every = [n for sid, _n in SESSIONS for n in names[sid]]
    end = time.monotonic() + RESULT_WAIT

    def answered(name: str) -> bool:
        return (d / "processed" / f"{name}.result.json").exists() and not (
            d / f"{name}.json"
        ).exists()

    wait_for(lambda: all(answered(n) for n in every), max(0.0, end - time.monotonic()), 0.05)
    time.sleep(0.3)  # a late second write would show now
    h.bay("keeper", "stop")
    wait_for(lambda: not h.keeper_pids(), 30, 0.05)
    judge(h, site, d, every, victim, point, figures, watcher, set(names["t1"]))


def judge(
    h: Home,
    site: HitSite,
    d: Path,
    every: list[str],
    victim: str,
    point: str,
    figures: Figures,
    watcher: Watcher,
    same_session: set[str],
) -> None:
    watcher.look()
    records = dict(
        registry_rows(
            h.paths.registry,
            "SELECT uuid, result FROM trigger_requests",
        )
    )
    for name in every:
        figures.requests += 1
        path = d / "processed" / f"{name}.result.json"
        if not path.exists():
            figures.missing.append(f"{point}: {name}")
            continue
        final = path.read_bytes()
        seen = watcher.seen.get(name, set()) | {final}
        if len(seen) != 1 or records.get(name) != final.decode():
            figures.rewritten.append(f"{point}: {name}: {len(seen)} contents")
        else:
            figures.exactly_once += 1
        answer = json.loads(final)
        hits = site.hits[name]
        if hits > 1:
            figures.twice.append(f"{point}: {name}: {hits} hits")
        if answer["ok"] and hits != 1:
            figures.ok_without_action.append(f"{point}: {name}")
        if hits >= 1 and not answer["ok"]:
            figures.acted_not_ok += 1
            if answer["uncertain"]:
                figures.uncertain_acted += 1
            else:
                figures.certain_but_acted.append(f"{point}: {name}: {answer['reason']}")
        if hits == 0 and answer["uncertain"]:
            figures.uncertain_no_action += 1
        if name == victim:
            got = (answer["ok"], answer["reason"], answer["uncertain"], hits)
            figures.victims[point][f"{got[1] or 'ok'}, uncertain {str(got[2]).lower()}"] += 1
            if got != EXPECTED[point]:
                figures.wrong_victim.append(f"{point}: {got}")
        elif not answer["ok"]:
            # The other session's request under way at the kill is interrupted too; one of
            # the victim's session waited behind it (FIFO) and must succeed.
            if name in same_session or answer["reason"] != "interrupted by restart":
                figures.wrong_victim.append(f"{point}: bystander {name}: {answer['reason']}")
            else:
                figures.interrupted_bystanders += 1


def campaign(rounds: int, points: tuple[str, ...]) -> Figures:
    """The rounds, and the registry's state after them."""
    figures = Figures()
    with HitSite().serve() as site, home("trig", BAY_TRIGGER_POLL="0.05") as h:
        d = h.paths.data / "triggers"
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
        (d / "processed").mkdir(exist_ok=True, mode=0o700)
        watcher = Watcher(d / "processed")
        watcher.start()
        try:
            for _ in range(rounds):
                for point in points:
                    one_round(h, site, d, point, figures, watcher)
        finally:
            watcher.stop.set()
            watcher.join(5)
        figures.problems = registry_problems(h.paths.registry)
        unsettled = registry_rows(
            h.paths.registry,
            "SELECT count(*) FROM trigger_requests WHERE phase != 'done' OR result_published = 0",
        )[0][0]
        if unsettled:
            figures.problems.append(f"{unsettled} trigger records not done and published")
        if figures.problems or figures.missing or figures.twice or figures.rewritten:
            h.keep = True
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3, help="rounds per kill point")
    ap.add_argument("--points", default=",".join(POINTS))
    a = ap.parse_args()
    points = tuple(p for p in a.points.split(",") if p)
    unknown = set(points) - set(POINTS)
    if unknown:
        ap.error(f"unknown kill points: {sorted(unknown)}")
    t0 = time.monotonic()
    f = campaign(a.rounds, points)
    elapsed = time.monotonic() - t0
    load = os.getloadavg()
    per_request = sum(n for _s, n in SESSIONS)
    rows = [
        ("date, machine", f"{today()}, {machine()}, load {load[0]:.1f}"),
        (
            "rounds",
            f"{a.rounds} × {len(points)} kill points, {per_request} requests each "
            f"(4 for one session, 2 for another, published at once); {f.kills} SIGKILLs, "
            f"{elapsed:.0f} s",
        ),
        ("requests", f.requests),
        ("results written exactly once (goal: all)", f"{f.exactly_once} of {f.requests}"),
        ("results missing (goal 0)", len(f.missing)),
        ("results rewritten with another content (goal 0)", len(f.rewritten)),
        ("actions done twice — the site counted 2+ hits (goal 0)", len(f.twice)),
        ("ok without its action at the site (goal 0)", len(f.ok_without_action)),
        (
            "actions that happened but did not succeed: uncertain (goal: all)",
            f"{f.uncertain_acted} of {f.acted_not_ok}",
        ),
        (
            "uncertain with no action at the site (the kill between 'acting' and the first "
            "effect: the keeper cannot tell)",
            f.uncertain_no_action,
        ),
        (
            "the victim's result, by kill point",
            "; ".join(
                f"{p}: {', '.join(f'{k} ×{n}' for k, n in c.items())}" for p, c in f.victims.items()
            ),
        ),
        (
            "the other session's requests under way at the kill (interrupted by restart)",
            f.interrupted_bystanders,
        ),
        ("results unlike the expected one (goal 0)", len(f.wrong_victim)),
        ("registry problems (goal 0)", len(f.problems)),
    ]
    md = f"Last run: `campaigns/run.sh triggers --rounds {a.rounds}`.\n\n" + table(rows)
    for label, items in (
        ("missing", f.missing),
        ("rewritten", f.rewritten),
        ("twice", f.twice),
        ("ok without action", f.ok_without_action),
        ("certain but acted", f.certain_but_acted),
        ("unexpected", f.wrong_victim),
        ("registry", f.problems),
    ):
        if items:
            md += f"\n{label}: " + "; ".join(items[:10]) + "\n"
    figures = {
        "rounds": a.rounds,
        "points": list(points),
        "requests": f.requests,
        "exactly_once": f.exactly_once,
        "missing": f.missing,
        "rewritten": f.rewritten,
        "twice": f.twice,
        "ok_without_action": f.ok_without_action,
        "uncertain_acted": f.uncertain_acted,
        "acted_not_ok": f.acted_not_ok,
        "uncertain_no_action": f.uncertain_no_action,
        "certain_but_acted": f.certain_but_acted,
        "victims": {p: dict(c) for p, c in f.victims.items()},
        "unexpected": f.wrong_victim,
        "problems": f.problems,
        "kills": f.kills,
        "interrupted_bystanders": f.interrupted_bystanders,
        "seconds": round(elapsed),
        "load": round(load[0], 1),
    }
    record("triggers", figures, md)
    bad = f.missing or f.rewritten or f.twice or f.ok_without_action or f.certain_but_acted
    raise SystemExit(1 if bad or f.wrong_victim or f.problems else 0)


if __name__ == "__main__":
    main()
