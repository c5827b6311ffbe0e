"""MiniWoB++ side by side: browserbay against agent-browser, one scripted agent, seeded episodes.

Run ``bench/setup.sh`` once (it installs the ``miniwob`` package's files into bench/.work, never
into the project), then ``.venv/bin/python bench/miniwob.py [--set hand|core|all]``. It rewrites
that set's section of ``bench/RESULTS-miniwob.md``. Not part of the test suite.

How an episode runs (the official gym environment's way, ``miniwob/selenium_instance.py``):
the harness opens the task page, seeds the page's own generator (``Math.seedrandom(seed)``) and
starts the episode (``core.startEpisodeReal()``), waits for ``WOB_TASK_READY``; the agent then
works through the tool's CLI; at the end the harness reads ``WOB_DONE_GLOBAL`` and
``WOB_RAW_REWARD_GLOBAL`` / ``WOB_REWARD_REASON`` that the page's own ``core.js`` set. Those
harness commands (open, two evals) go through the same tool but are not counted: the agent never
reads them. Success is a raw reward > 0 (MiniWoB's rewards are +1 / -1; the time-discounted
reward is not used). The episode's time limit is raised from the tasks' 10-20 s to
``BENCH_MINIWOB_EPISODE_MS`` (default 60 s) for both tools alike, so a slow command on a busy
machine is measured, not turned into a timeout.

What is measured per task and tool: success over the seeds, commands per episode, characters
read (stdout + stderr of every counted command), time per command and per episode (medians).
Ratios are taken on the episodes both tools solved.

Knobs (a run with a subset of tasks prints its tables and leaves RESULTS-miniwob.md alone):
``BENCH_MINIWOB_SEEDS`` (episodes per task, default 3: both sets then take ~15 min on two
busy cores), ``BENCH_MINIWOB_TASKS`` (a
comma-separated subset), ``BENCH_MINIWOB_EPISODE_MS``, ``BENCH_KEEP=1`` keeps the /tmp work dir,
``BENCH_MINIWOB_TRANSCRIPT=<file>`` writes every counted command and what it printed (JSON
lines: task, seed, tool, argv, out, err) to read what an agent reads, verb by verb.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from miniwob_agent import (
    TASKS,
    Agent,
    AgentBrowserTool,
    BayTool,
    Call,
    StepFailed,
    TaskGaveUp,
    Tool,
    Unsupported,
)
from run import (
    AB,
    BAY,
    BENCH,
    Bench,
    become_subreaper,
    foreign_load,
    machine,
    reap,
    stop_on_signals,
    tools_missing,
)

MINIWOB_DIR = BENCH / ".work" / "miniwob"  # bench/setup.sh: pip install --target here
HTML = MINIWOB_DIR / "miniwob" / "html"
RESULTS = BENCH / "RESULTS-miniwob.md"
SEEDS = int(os.environ.get("BENCH_MINIWOB_SEEDS", "3"))
EPISODE_MS = int(os.environ.get("BENCH_MINIWOB_EPISODE_MS", "60000"))
COMMAND_TIMEOUT = 45.0  # seconds: a safety net; both tools' own deadlines are shorter
SESSION = "mw"
SETS = ("hand", "core")
TRANSCRIPT = os.environ.get("BENCH_MINIWOB_TRANSCRIPT", "")

# The causes of failures this harness cannot tell from a reward alone, each reproduced by hand
# (the command lines are in the final report of the session that wrote them).
CAUSES: dict[tuple[str, str], str] = {
    ("click-collapsible-2", "bay"): "its `click @cN` on the link answered `clicked` and the page"
    " saw a click on another link (reward -1); five runs of the same seed by hand solved it. The"
    " section was still sliding open (a jQuery UI accordion: script timers, not CSS): bay's fast"
    " click (keeper/fastclick.py) skips only CSS and Web Animations, takes the point, and"
    " presses a round trip later, when a script may have moved the link",
    ("click-collapsible-2", "agent-browser"): "its click on the link answered `✓ Done` and the page"
    " saw no click (the episode never ended); the same seed solved when run again by hand: the"
    " section was still sliding open (jQuery UI accordion), and agent-browser clicks without"
    " waiting for the element to be stable",
    ("enter-date", "agent-browser"): "`keyboard type`, `type` and `fill` on the focused"
    " `<input type=date>` all answer `✓ Done` and leave its value empty (bay's key events reach"
    " the date field's segments)",
    ("terminal", "agent-browser"): "its `keyboard type ls` answers `✓ Done` and the terminal"
    " (a page that reads `keydown`'s `e.key`) shows an empty command; so does `type"
    " #terminal-target ls`, while `press l` then `press s` types `ls`: its typing sends no key"
    " events such a page reads; bay's `keyboard type` sends one keydown a character",
    ("choose-date-easy", "agent-browser"): "the day's click set the field (`12/06/2016` in the"
    " next snapshot) and the date picker fades out; agent-browser's click on Submit refuses at"
    " once 'covered by <span inside div#ui-datepicker-div>', bay's waits until nothing covers it",
    ("enter-time", "agent-browser"): "as enter-date: typing into `<input type=time>` answers"
    " `✓ Done` and leaves the value empty",
}


# -- the page server ---------------------------------------------------------------------------


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def serve_html() -> tuple[ThreadingHTTPServer, str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(HTML)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}/miniwob"


# -- one episode ----------------------------------------------------------------------------------


@dataclass
class Episode:
    task: str
    tool: str
    seed: int
    solved: bool
    reward: float | None
    why: str  # empty when solved
    calls: list[Call] = field(default_factory=list)

    @property
    def commands(self) -> int:
        return len(self.calls)

    @property
    def chars(self) -> int:
        return sum(c.chars for c in self.calls)

    @property
    def secs(self) -> float:
        return sum(c.secs for c in self.calls)


class HarnessError(Exception):
    """The harness could not set the episode up (not the agent's failure)."""


def oob(tool: Tool, *args: str) -> str:
    """A harness command through the tool: not counted, never shown to the agent."""
    call = tool.execute(tool.spell(*args), COMMAND_TIMEOUT)
    if call.rc != 0:
        raise HarnessError(f"{' '.join(args)[:60]}: rc {call.rc}: {call.err.strip()[-200:]}")
    return call.out


def page_state(tool: Tool) -> dict[str, object]:
    js = (
        "JSON.stringify({ready: WOB_TASK_READY, done: WOB_DONE_GLOBAL,"
        " raw: WOB_RAW_REWARD_GLOBAL, reason: WOB_REWARD_REASON})"
    )
    value = tool.parse_eval(oob(tool, "eval", js))
    if not isinstance(value, dict):
        raise HarnessError(f"the page's state did not read back: {value!r}")
    return value


def episode(tool: Tool, base: str, task: str, seed: int) -> Episode:
    _, fn = TASKS[task]
    oob(tool, "open", f"{base}/{task}.html")
    start = (
        f"core.EPISODE_MAX_TIME = {EPISODE_MS}; Math.seedrandom({seed}); core.startEpisodeReal(); 1"
    )
    oob(tool, "eval", start)
    end = time.monotonic() + 5
    while not page_state(tool).get("ready"):
        if time.monotonic() > end:
            raise HarnessError("WOB_TASK_READY stayed false")
        time.sleep(0.05)
    agent = Agent(tool, COMMAND_TIMEOUT)
    why = ""
    try:
        fn(agent)
    except StepFailed as exc:
        why = f"command failed: {exc}"
    except Unsupported as exc:
        why = f"no such verb: {exc}"
    except TaskGaveUp as exc:
        why = f"agent gave up: {exc}"
    except (ValueError, KeyError, IndexError) as exc:
        why = f"agent could not read the page: {type(exc).__name__}: {exc}"
    state = page_state(tool)
    deadline = time.monotonic() + 1.0
    while not why and not state.get("done") and time.monotonic() < deadline:
        time.sleep(0.05)
        state = page_state(tool)
    raw = state.get("raw")
    reward = float(raw) if isinstance(raw, int | float) and state.get("done") else None
    solved = reward is not None and reward > 0
    if not solved and not why:
        why = (
            f"page reward {reward:g}" + (f" ({state.get('reason')})" if state.get("reason") else "")
            if reward is not None
            else "the episode did not end (no reward set)"
        )
        if agent.calls:  # what the tool said to the step that should have done it
            last = agent.calls[-1]
            said = " / ".join(x.strip() for x in (last.out + last.err).splitlines() if x.strip())
            said = said[:120]
            why += f"; the last command `{' '.join(last.argv[1:])[:80]}` answered {said!r}"
    return Episode(task, tool.name, seed, solved, reward, why, agent.calls)


# -- the run --------------------------------------------------------------------------------------


def tasks_of(set_name: str) -> list[str]:
    only = [t for t in os.environ.get("BENCH_MINIWOB_TASKS", "").split(",") if t]
    names = [n for n, (s, _) in TASKS.items() if s == set_name]
    return [n for n in names if not only or n in only]


def write_transcript(ep: Episode) -> None:
    with open(TRANSCRIPT, "a", encoding="utf-8") as f:
        for c in ep.calls:
            row = {"task": ep.task, "seed": ep.seed, "tool": ep.tool, "solved": ep.solved}
            row.update(argv=c.argv[1:], out=c.out, err=c.err)
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def run_set(tools: list[Tool], base: str, set_name: str, b: Bench) -> list[Episode]:
    out: list[Episode] = []
    for task in tasks_of(set_name):
        if not (HTML / "miniwob" / f"{task}.html").exists():
            print(f"miniwob: {task}: no such page in this miniwob version", file=sys.stderr)
            continue
        t0 = time.monotonic()
        for seed in range(1, SEEDS + 1):
            order = tools if seed % 2 else list(reversed(tools))  # neither tool always goes first
            for tool in order:
                try:
                    ep = episode(tool, base, task, seed)
                except HarnessError as exc:
                    ep = Episode(task, tool.name, seed, False, None, f"harness: {exc}")
                    b.notes.append(f"{task} seed {seed} ({tool.name}): harness: {exc}")
                out.append(ep)
                if TRANSCRIPT:
                    write_transcript(ep)
        mine = [e for e in out if e.task == task]
        tally = ", ".join(
            f"{t.name} {sum(e.solved for e in mine if e.tool == t.name)}/{SEEDS}" for t in tools
        )
        print(
            f"miniwob: {set_name} {task}: {tally} ({time.monotonic() - t0:.0f}s)", file=sys.stderr
        )
    return out


# -- the report -----------------------------------------------------------------------------------


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}×" if b else "—"


def cell(eps: list[Episode]) -> list[str]:
    if not eps:
        return ["—"] * 5
    per_cmd = [c.secs for e in eps for c in e.calls]
    return [
        f"{sum(e.solved for e in eps)}/{len(eps)}",
        f"{med([e.commands for e in eps]):g}",
        f"{med([e.chars for e in eps]):.0f}",
        f"{med(per_cmd) * 1000:.0f}" if per_cmd else "—",
        f"{med([e.secs for e in eps]) * 1000:.0f}",
    ]


def both_solved(eps: list[Episode], names: tuple[str, str]) -> tuple[list[Episode], list[Episode]]:
    won = {(e.task, e.seed, e.tool) for e in eps if e.solved}
    keys = {(e.task, e.seed) for e in eps if all((e.task, e.seed, n) in won for n in names)}
    pick = [e for e in eps if (e.task, e.seed) in keys]
    return [e for e in pick if e.tool == names[0]], [e for e in pick if e.tool == names[1]]


def by_verb(bay_eps: list[Episode], ab_eps: list[Episode]) -> list[tuple[str, int, float, float]]:
    """Mean characters a command of each verb cost (``get text`` and ``snapshot -i`` apart)."""

    def verb(c: Call) -> str:
        args = c.argv[1:]
        return (
            " ".join(args[:2])
            if args[:1] in (["get"], ["mouse"]) or args[1:2] == ["-i"]
            else (args[0] if args else "?")
        )

    def tally(eps: list[Episode]) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for e in eps:
            for c in e.calls:
                out.setdefault(verb(c), []).append(c.chars)
        return out

    tb, ta = tally(bay_eps), tally(ab_eps)
    rows = [(v, len(tb[v]), statistics.mean(tb[v]), statistics.mean(ta[v])) for v in tb if v in ta]
    return sorted(rows, key=lambda r: -r[1] * r[2])


def section(set_name: str, eps: list[Episode], names: tuple[str, str], started: str) -> list[str]:
    bay_n, ab_n = names
    tasks = list(dict.fromkeys(e.task for e in eps))
    lines = [
        f"<!-- set:{set_name} -->",
        f"## `--set {set_name}` ({len(tasks)} tasks × {SEEDS} seeds, run {started})",
        "",
        "Per task: success, then medians per episode of commands, characters read"
        " (stdout + stderr), ms per command, ms per episode (sum of its commands).",
        "",
        "| task | bay ok | cmds | chars | ms/cmd | ms/ep | ab ok | cmds | chars | ms/cmd | ms/ep |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for t in tasks:
        bay_eps = [e for e in eps if e.task == t and e.tool == bay_n]
        ab_eps = [e for e in eps if e.task == t and e.tool == ab_n]
        lines.append("| " + " | ".join([t, *cell(bay_eps), *cell(ab_eps)]) + " |")
    bay_all = [e for e in eps if e.tool == bay_n]
    ab_all = [e for e in eps if e.tool == ab_n]
    lines.append("| **all** | " + " | ".join([*cell(bay_all), *cell(ab_all)]) + " |")
    b_ok, a_ok = both_solved(eps, names)
    lines += ["", f"On the {len(b_ok)} episodes both solved (bay ÷ agent-browser; goal):", ""]
    if b_ok:
        bc, ac = sum(e.chars for e in b_ok), sum(e.chars for e in a_ok)
        bout = sum(len(c.out) for e in b_ok for c in e.calls)
        aout = sum(len(c.out) for e in a_ok for c in e.calls)
        bn, an = sum(e.commands for e in b_ok), sum(e.commands for e in a_ok)
        bt = med([c.secs for e in b_ok for c in e.calls])
        at = med([c.secs for e in a_ok for c in e.calls])
        bep, aep = med([e.secs for e in b_ok]), med([e.secs for e in a_ok])
        bcpu = med([c.cpu for e in b_ok for c in e.calls])
        acpu = med([c.cpu for e in a_ok for c in e.calls])
        s_b, s_a = sum(e.solved for e in bay_all), sum(e.solved for e in ab_all)
        lines += [
            "| metric | bay | agent-browser | ratio | goal | met |",
            "|---|---|---|---|---|---|",
            f"| characters read | {bc} | {ac} | {ratio(bc, ac)} | ≤ 0.8× |"
            f" {'yes' if bc <= 0.8 * ac else 'no'} |",
            f"| of which stdout | {bout} | {aout} | {ratio(bout, aout)} | — | — |",
            f"| commands | {bn} | {an} | {ratio(bn, an)} | — | — |",
            f"| time per command (median) | {bt * 1000:.0f} ms | {at * 1000:.0f} ms |"
            f" {ratio(bt, at)} | ≤ 1.5× | {'yes' if bt <= 1.5 * at else 'no'} |",
            f"| CPU of the command's own process (median) | {bcpu * 1000:.0f} ms |"
            f" {acpu * 1000:.0f} ms | {ratio(bcpu, acpu)} | — | — |",
            f"| time per episode (median) | {bep * 1000:.0f} ms | {aep * 1000:.0f} ms |"
            f" {ratio(bep, aep)} | — | — |",
            f"| success (all episodes) | {s_b}/{len(bay_all)} | {s_a}/{len(ab_all)} | — |"
            f" ≥ agent-browser's | {'yes' if s_b >= s_a else 'no'} |",
        ]
    if b_ok:
        lines += [
            "",
            "Characters read per command, by verb, on those episodes (mean; bay ÷ agent-browser):",
            "",
            "| verb | commands | bay chars | agent-browser chars | ratio |",
            "|---|---|---|---|---|",
        ]
        for verb, n, bc_, ac_ in by_verb(b_ok, a_ok):
            lines.append(f"| {verb} | {n} | {bc_:.0f} | {ac_:.0f} | {ratio(bc_, ac_)} |")
    refused = [e for e in eps if e.solved and e.why]
    if refused:
        lines += ["", "Solved by the page's reward, though a command answered as failed:", ""]
        lines += [f"- {e.task} seed {e.seed}, {e.tool}: {e.why}" for e in refused]
    fails = [e for e in eps if not e.solved]
    lines += ["", "Every failed episode and its cause:", ""]
    if not fails:
        lines.append("- none")
    for e in fails:
        lines.append(f"- {e.task} seed {e.seed}, {e.tool}: {e.why}")
    seen = {(e.task, e.tool) for e in fails + refused}
    causes = [f"- {t}, {tool}: {why}" for (t, tool), why in CAUSES.items() if (t, tool) in seen]
    if causes:
        lines += ["", "Why (each checked by hand on the same page, the same seed):", "", *causes]
    lines += ["", f"<!-- /set:{set_name} -->"]
    return lines


HEADER = """# MiniWoB++: browserbay and agent-browser side by side

Written by `bench/miniwob.py` (each run rewrites the header and the sections of the sets it ran).
One scripted agent per task (`bench/miniwob_agent.py`), written once against one adapter, drives
both tools through their CLIs the same way: `get text #query` for the utterance, `snapshot -i` /
`snapshot` for refs and page text, then verbs (click, fill, type, press with chords, drag, mouse
down/move/up, keyboard type, focus, get box/value/text). The harness seeds each episode with the
page's own `Math.seedrandom` and reads the reward the page's own core.js set
(`WOB_RAW_REWARD_GLOBAL`), out of band: its open/eval commands are not counted.
Episode time limit raised to {episode_ms} ms for both tools. No agent step uses `eval`; the
agent's own reads besides snapshots are `get text` (`#query`, `#val`, `#math-problem`,
`.ql-editor`), `get value`, `get box` and `get count`, counted like every other command.
MiniWoB++ has no page that opens a JavaScript `alert`/`confirm`/`prompt` (its dialogs are jQuery
UI dialogs, clicked like buttons), so `dialog accept|dismiss` is not exercised here. Both tools
spell every verb the agent uses alike (the adapter maps no name), and neither lacks one.

- `--set hand`: tasks that need issue 18's verbs (drag, mouse, chords, keyboard, focus).
- `--set core`: ordinary tasks (issue 19's measurement).

"""


def write_results(done: dict[str, list[str]], facts: dict[str, str], notes: list[str]) -> None:
    kept: dict[str, list[str]] = {}
    if RESULTS.exists():
        text = RESULTS.read_text().splitlines()
        for s in SETS:
            with contextlib.suppress(ValueError):
                i, j = text.index(f"<!-- set:{s} -->"), text.index(f"<!-- /set:{s} -->")
                kept[s] = text[i : j + 1]
    kept.update(done)
    lines = [HEADER.format(episode_ms=EPISODE_MS).rstrip(), "", "## Machine (this run)", ""]
    lines += [f"- {k}: {v}" for k, v in facts.items()]
    lines += [f"- {n}" for n in notes]
    for s in SETS:
        if s in kept:
            lines += ["", *kept[s]]
    RESULTS.write_text("\n".join(lines) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=(*SETS, "all"), default="all")
    opts = parser.parse_args()
    if tools_missing("miniwob"):
        return 2
    if not (HTML / "core" / "core.js").exists():
        print(f"miniwob: no MiniWoB++ pages at {HTML}: run bench/setup.sh", file=sys.stderr)
        return 2

    stop_on_signals()
    subreaper = become_subreaper()
    work = Path(tempfile.mkdtemp(prefix="bm", dir="/tmp"))  # short: Chromium's socket path
    b = Bench(work)
    if not subreaper:
        b.notes.append("could not become a child subreaper: leftover checks are weaker")
    facts = machine()
    facts["miniwob"] = next(
        (p.name.split("-")[1].removesuffix(".dist-info") for p in MINIWOB_DIR.glob("miniwob-*")),
        "?",
    )
    facts["load at start"] = foreign_load()
    server, base = serve_html()
    bay = BayTool(BAY, b.bay_env(b.bay_home("mw"), SESSION))
    ab = AgentBrowserTool(AB, b.ab_env(b.ab_home("mw"), SESSION))
    tools: list[Tool] = [bay, ab]
    names = (bay.name, ab.name)
    done: dict[str, list[str]] = {}
    code = 0
    try:
        for tool in tools:  # warm: the keeper / daemon and its browser start here, not counted
            oob(tool, "open", f"{base}/click-button.html")
        for set_name in SETS if opts.set == "all" else (opts.set,):
            started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
            try:
                eps = run_set(tools, base, set_name, b)
            except Exception as exc:
                traceback.print_exc()
                b.notes.append(f"set {set_name} failed: {type(exc).__name__}: {exc}")
                code = 1
                continue
            done[set_name] = section(set_name, eps, names, started)
            print("\n".join(done[set_name]))
            reap()
    finally:
        b.stop_all()
        server.shutdown()
        server.server_close()
        if os.environ.get("BENCH_KEEP", "") in ("", "0"):
            shutil.rmtree(work, ignore_errors=True)
    facts["load at end"] = foreign_load()
    if os.environ.get("BENCH_MINIWOB_TASKS"):
        print(f"\na subset of tasks: {RESULTS.name} left as it was", file=sys.stderr)
    else:
        write_results(done, facts, b.notes)
        print(f"\nwrote {RESULTS}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
