"""Fuzzing with hypothesis: the keeper's socket protocol and the CLI's argv.

- **Frames**: random bytes, random JSON (deep nesting, lone surrogates, huge numbers),
  near-valid requests (every field of the protocol drawn from good and bad values), oversized
  frames, frames written in random pieces, and connections dropped in the middle of a frame.
  Each complete line must get exactly one answer — a hello, an ``ok`` answer or a typed
  refusal from the closed table, never ``internal_error`` — and the keeper must keep its pid
  and answer another session's ``status`` promptly throughout (a canary measures it).
- **argv**: :func:`browserbay_cli.parse.parse` on random argv built from the verb table's
  words, flags and arbitrary text: a parse or a ``UsageError``, nothing else; and a sample
  through the real ``bay`` process: exit 0/1/2/124, one JSON object on stdout, no traceback.

Page verbs never run here (their frames always carry an argument the verb does not take, so
they are refused before anything happens): no browser starts and nothing leaves loopback.
The regular suite runs a bounded version (campaigns/tests/test_fuzz.py).

Run: campaigns/run.sh fuzz [--frames 3000] [--argv 5000] [--processes 150]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import threading
import time
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from browserbay import client, protocol
from browserbay.refusals import CODES
from browserbay.verbs import BY_NAME, GLOBAL_OPTIONS

# -- frames ------------------------------------------------------------------------------


def _json(max_leaves: int = 8) -> st.SearchStrategy[Any]:
    text = st.text(alphabet=st.characters(codec=None), max_size=20)
    scalars = (
        st.none()
        | st.booleans()
        | st.integers(min_value=-(2**70), max_value=2**70)
        | st.floats(allow_nan=True, allow_infinity=True)
        | text
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
        max_leaves=max_leaves,
    )


def _safe_args() -> dict[str, dict[str, st.SearchStrategy[Any]]]:
    """Verbs that run without a browser and act on nothing outside BAY_HOME, with the
    arguments they take drawn from good and bad values. Every other verb's frame carries an
    argument it does not take, so it is refused before it could run."""
    text = st.text(max_size=30)
    anything = _json(4)
    small = st.floats(min_value=0, max_value=0.5) | anything
    flag = st.booleans() | anything
    return {
        "status": {},
        "plugins": {},
        "verbs": {},
        "close": {},
        "audit": {"last": st.integers(-10, 100) | anything},
        "profiles": {"orphans": flag},
        "new": {"label": text | anything, "allowed_domains": text | anything, "headed": flag},
        "use": {
            "profile": text | anything,
            "alias": text | anything,
            "exclusive": flag,
            "wait": small,
            "ephemeral": flag,
            "allowed_domains": text | anything,
        },
        "detach": {},
        "pin": {"profile": text | anything, "none": flag},
        "group": {"action": text | anything, "name": text | anything, "profile": text},
        "triggers": {"action": text | anything},
        "forget": {"profile": text | anything},
        "adopt": {"dir": text | anything, "label": text | anything},
        "keeper": {"action": st.sampled_from(["status", "nope", ""]) | anything},
    }


@st.composite
def request_frame(draw: st.DrawFn) -> dict[str, Any]:
    """A request frame, near-valid: each field good or bad."""
    frame: dict[str, Any] = {}
    if draw(st.booleans()):
        frame["id"] = draw(_json(3))
    safe = _safe_args()
    verbs = sorted(BY_NAME)
    name = draw(st.sampled_from(sorted(safe)) | st.sampled_from(verbs) | st.text(max_size=12))
    frame["verb"] = name
    args: dict[str, Any] = {}
    if name in safe:
        for key, strategy in safe[name].items():
            if draw(st.booleans()):
                args[key] = draw(strategy)
        if draw(st.integers(0, 9)) == 0:
            args[draw(st.text(max_size=8))] = draw(_json(3))
    else:
        args = draw(st.dictionaries(st.text(max_size=8), _json(3), max_size=3))
        args["zz_not_an_argument"] = 1  # refused before the verb can run
    frame["args"] = args if draw(st.integers(0, 9)) else draw(_json(3))
    sessions = st.sampled_from([{"id": f"fz-{n}", "origin": "api"} for n in range(4)])
    frame["session"] = draw(
        sessions
        | st.fixed_dictionaries({"id": st.text(max_size=140), "origin": _json(2)})
        | _json(3)
    )
    for key in ("timeout", "profile", "group", "actor", "progress", "op"):
        if draw(st.integers(0, 4)) == 0:
            frame[key] = draw(_json(3))
    if frame.get("op") == "shutdown":
        frame["op"] = "shutdown-not"
    if isinstance(frame.get("timeout"), (int, float)) and frame["timeout"] > 5:
        frame["timeout"] = 5  # a deadline longer than the campaign's patience proves nothing
    if name == "keeper" and args.get("action") in ("stop", "start"):
        args["action"] = "status"
    return frame


def _deep(draw: st.DrawFn) -> bytes:
    depth = draw(st.integers(10, 5000))
    opener = draw(st.sampled_from(["[", '{"a":']))
    return (opener * depth).encode()


@st.composite
def line(draw: st.DrawFn) -> bytes:
    """One line the keeper must answer exactly once (no newline inside; never the
    shutdown control frame)."""
    return draw(_line()).replace(b'"shutdown"', b'"shutdown-not"')


@st.composite
def _line(draw: st.DrawFn) -> bytes:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        raw = draw(st.binary(min_size=1, max_size=64)).replace(b"\n", b" ")
        return raw if raw.strip() else b"x"
    if kind == 1:
        return json.dumps(draw(_json(12)), ensure_ascii=draw(st.booleans())).encode(
            "utf-8", "surrogatepass"
        )
    if kind == 2:
        return _deep(draw)
    if kind == 3:
        return b'{"hello": ' + json.dumps(draw(_json(4))).encode() + b"}"
    frame = draw(request_frame())
    ascii_ = draw(st.booleans())
    return json.dumps(frame, ensure_ascii=ascii_).encode("utf-8", "surrogatepass")


def _answers(data: bytes) -> list[dict[str, Any]]:
    out = []
    for raw in data.splitlines():
        if not raw.strip():
            continue
        frame = json.loads(raw)
        if "progress" in frame and "ok" not in frame:
            continue
        out.append(frame)
    return out


class Keeper:
    """One keeper under fuzz, with a canary session timing ``status`` all along."""

    def __init__(self, paths: Any):
        self.paths = paths
        self.pid = client.connect(paths).keeper.get("pid")
        self.canary_ms: list[float] = []
        self.canary_failures: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start_canary(self, every: float = 0.2) -> None:
        def loop() -> None:
            while not self._stop.wait(every):
                self.canary()

        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()

    def stop_canary(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def canary(self) -> float:
        t0 = time.perf_counter()
        frame = client.call(
            "status", {}, session={"id": "canary", "origin": "api"}, timeout=10, paths=self.paths
        )
        ms = (time.perf_counter() - t0) * 1000
        self.canary_ms.append(ms)
        if not frame.get("ok"):
            self.canary_failures.append(f"canary status refused: {frame}")
        return ms

    def alive(self) -> bool:
        try:
            conn = client.connect(self.paths, autostart=False)
        except Exception:
            return False
        pid = conn.keeper.get("pid")
        conn.close()
        return bool(pid == self.pid)

    def exchange(
        self, lines: list[bytes], pieces: list[int], cut: int | None
    ) -> list[dict[str, Any]] | None:
        """Send hello + lines (in pieces of the given sizes); with ``cut``, hang up after that
        many bytes instead. The answers, or None for a cut connection."""
        payload = b'{"hello": {}}\n' + b"".join(x + b"\n" for x in lines)
        if cut is not None:
            payload = payload[: max(1, cut % len(payload))]
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(30)
        try:
            s.connect(str(self.paths.socket))
            at = 0
            sizes = pieces or [len(payload)]
            i = 0
            while at < len(payload):
                n = max(1, sizes[i % len(sizes)])
                s.sendall(payload[at : at + n])
                at += n
                i += 1
                if len(sizes) > 1:
                    time.sleep(0.001)
            if cut is not None:
                return None
            s.shutdown(socket.SHUT_WR)
            data = b""
            while chunk := s.recv(1 << 16):
                data += chunk
        except (BrokenPipeError, ConnectionResetError):
            return None
        finally:
            s.close()
        return _answers(data)


def check_answers(lines: list[bytes], answers: list[dict[str, Any]]) -> list[str]:
    """One answer per non-blank line (and the hello), each well formed and typed."""
    problems = []
    want = 1 + sum(1 for x in lines if x.strip())
    if len(answers) != want:
        problems.append(f"{len(answers)} answers to {want} lines: {lines!r:.300}")
    for a in answers[1:]:
        if "hello" in a:
            continue
        if a.get("ok") is True:
            continue
        code = a.get("code")
        if code not in CODES:
            problems.append(f"an untyped answer {a!r:.300}")
        elif code == "internal_error":
            problems.append(f"internal_error for {lines!r:.300}: {a.get('message')}")
        elif not a.get("message") or not a.get("way_out"):
            problems.append(f"a refusal without message or way out: {a!r:.300}")
    return problems


def fuzz_frames(keeper: Keeper, examples: int, seed: int | None = None) -> dict[str, Any]:
    """Run the frame fuzz; problems are collected, not raised, so one run reports all."""
    problems: list[str] = []
    sent = {"examples": 0, "lines": 0, "cut": 0, "pieces": 0, "oversized": 0}

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=seed is None,
        suppress_health_check=list(HealthCheck),
    )
    @given(
        lines=st.lists(line(), min_size=1, max_size=4),
        pieces=st.lists(st.integers(1, 64), max_size=4),
        cut=st.none() | st.none() | st.none() | st.integers(1, 10_000),
        oversized=st.integers(1, 60),
    )
    def one(lines: list[bytes], pieces: list[int], cut: int | None, oversized: int) -> None:
        if oversized == 37:  # about one example in sixty
            lines = [*lines, b'{"id": "big", "x": "' + b"a" * (protocol.MAX_FRAME + 10) + b'"}']
            pieces = []
            sent["oversized"] += 1
        sent["examples"] += 1
        sent["lines"] += len(lines)
        sent["pieces"] += bool(pieces)
        answers = keeper.exchange(lines, pieces, cut)
        if answers is None:
            sent["cut"] += 1
        else:
            problems.extend(check_answers(lines, answers))
        if len(problems) > 50:
            raise AssertionError("too many problems")

    with contextlib.suppress(AssertionError):
        one()
    if not keeper.alive():
        problems.append("the keeper died (or was replaced) during the frame fuzz")
    return {**sent, "problems": problems}


# -- argv --------------------------------------------------------------------------------


def _words() -> list[str]:
    words = sorted(BY_NAME)
    for verb in BY_NAME.values():
        for a in verb.args:
            if a.kind in ("flag", "value"):
                words.append(a.long)
                if a.short:
                    words.append(a.short)
            words.extend(a.choices)
    words += [g.long for g in GLOBAL_OPTIONS]
    return [*sorted(set(words)), "-", "--", "-h", "--help", "--json", "@e1", "3", "-1", "nan"]


def argv_strategy() -> st.SearchStrategy[list[str]]:
    """Mostly a verb first, then its table's words, flags, numbers and arbitrary text."""
    word = st.sampled_from(_words()) | st.text(max_size=12)
    first = st.sampled_from(sorted(BY_NAME)) | word
    return st.builds(lambda f, rest: [f, *rest], first, st.lists(word, max_size=7)) | st.lists(
        word, max_size=3
    )


def fuzz_parse(examples: int, seed: int | None = None) -> dict[str, Any]:
    from browserbay_cli.parse import UsageError, parse

    problems: list[str] = []
    counts = {"examples": 0, "parsed": 0, "usage": 0}

    @settings(max_examples=examples, deadline=None, database=None, derandomize=seed is None)
    @given(argv=argv_strategy())
    def one(argv: list[str]) -> None:
        counts["examples"] += 1
        try:
            parse(argv)
            counts["parsed"] += 1
        except UsageError as exc:
            counts["usage"] += 1
            if not str(exc):
                problems.append(f"an empty usage error for {argv!r}")
        except Exception as exc:
            problems.append(f"parse({argv!r}) raised {type(exc).__name__}: {exc}")

    one()
    return {**counts, "problems": problems}


#: argv the real `bay` may run in a sample: nothing that starts a browser, stops the
#: keeper or reaches the network (a page verb, keeper stop/start, install, mcp, keys, …).
_SAFE_PROCESS_VERBS = {
    "status",
    "audit",
    "profiles",
    "plugins",
    "verbs",
    "help",
    "use",
    "detach",
    "pin",
    "new",
    "group",
    "triggers",
    "forget",
}


def process_sample(argv: list[str]) -> str | None:
    """``usage`` (refused before anything runs), ``safe`` (a verb that acts on nothing
    outside the home), or None (it could: never run)."""
    from browserbay_cli.parse import UsageError, parse

    try:
        verb, _args, options = parse(argv)
    except UsageError:
        return "usage"
    except Exception:
        return "usage"  # the real bay must cope with it too
    if options.get("help"):
        return "safe"
    return "safe" if verb.name in _SAFE_PROCESS_VERBS else None


def fuzz_processes(env: dict[str, str], examples: int) -> dict[str, Any]:
    """The real `bay` on sampled argv (and a few byte-level oddities)."""
    import sys
    from pathlib import Path

    bay = str(Path(sys.executable).with_name("bay"))
    problems: list[str] = []
    counts = {"runs": 0, "exit_0": 0, "exit_1": 0, "exit_2": 0, "exit_124": 0}

    def run(argv: list[str | bytes]) -> None:
        p = subprocess.run(
            [bay, *argv, "--json"],
            capture_output=True,
            env=env,
            timeout=60,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        counts["runs"] += 1
        key = f"exit_{p.returncode}"
        if key not in counts:
            problems.append(f"bay {argv!r} exited {p.returncode}: {p.stderr[-300:]!r}")
            return
        counts[key] += 1
        if b"Traceback" in p.stderr:
            problems.append(f"bay {argv!r} printed a traceback: {p.stderr[-300:]!r}")
        lines = p.stdout.strip().splitlines()
        if len(lines) != 1:
            problems.append(f"bay {argv!r} --json printed {len(lines)} lines")
            return
        frame = json.loads(lines[0])
        if not frame.get("ok") and frame.get("code") not in CODES:
            problems.append(f"bay {argv!r}: untyped {frame!r:.200}")
        if frame.get("code") == "internal_error":
            problems.append(f"bay {argv!r}: internal_error {frame.get('message')}")

    odd: list[list[str | bytes]] = [
        [b"\xff\xfe"],
        ["new", b"label-\xff"],
        ["use", b"\xc3("],
        ["pin", "--profile", b"\xed\xa0\x80"],
        ["audit", "--last", "99999999999999999999999"],
        ["use", "x", "--wait", "nan"],
        ["use", "x", "--wait", "inf"],
        ["status", "--timeout", "nan"],
        ["status", "--timeout", "1e400"],
        ["status", "--session", "a" * 200],
        ["new", "x" * 300],
    ]
    for argv in odd:
        run(argv)
    refused: list[list[str]] = []
    runnable: list[list[str]] = []
    half = max(1, examples // 2)

    @settings(max_examples=examples * 40, deadline=None, database=None, derandomize=True)
    @given(argv=argv_strategy())
    def collect(argv: list[str]) -> None:
        kind = process_sample(argv)
        if kind == "usage" and len(refused) < half:
            refused.append(argv)
        elif kind == "safe" and len(runnable) < examples - half:
            runnable.append(argv)

    collect()
    sampled = refused + runnable
    for argv in sampled:
        run(list(argv))
    return {**counts, "problems": problems}


# -- the campaign --------------------------------------------------------------------------


def main() -> None:
    from campaigns.common import home, machine, percentiles, record, table, today

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=3000)
    ap.add_argument("--argv", type=int, default=5000)
    ap.add_argument("--processes", type=int, default=150)
    a = ap.parse_args()
    started = time.monotonic()
    with home("fuzz", BAY_NO_AUTOSTART="") as h:
        keeper = Keeper(h.paths)
        keeper.start_canary()
        try:
            frames = fuzz_frames(keeper, a.frames, seed=int(time.time()))
        finally:
            keeper.stop_canary()
        argv = fuzz_parse(a.argv, seed=int(time.time()))
        env = dict(os.environ, BAY_SESSION="fuzz-cli", BAY_NO_AUTOSTART="1")
        processes = fuzz_processes(env, a.processes)
        still = keeper.alive()
        canary = percentiles(keeper.canary_ms)
        problems = frames["problems"] + argv["problems"] + processes["problems"]
        problems += keeper.canary_failures[:5]
        if not still:
            problems.append("the keeper did not survive the campaign")
        if canary.get("max", 0) > 2000:
            problems.append(f"another session waited {canary['max']} ms for status")
        h.keep = h.keep or bool(problems)
    f = {
        "frames": frames,
        "argv": argv,
        "processes": processes,
        "canary_ms": canary,
        "keeper_survived": still,
        "problems": problems,
        "seconds": round(time.monotonic() - started),
    }
    rows: list[tuple[str, Any]] = [
        (
            "frame examples (lines) · sent in pieces · hung up mid-frame · oversized",
            f"{frames['examples']} ({frames['lines']}) · {frames['pieces']} · {frames['cut']} · "
            f"{frames['oversized']}",
        ),
        ("keeper survived with the same pid", "yes" if still else "NO"),
        (
            "another session's `status` during the fuzz, ms",
            f"n {canary.get('n')} · p50 {canary.get('p50')} · p99 {canary.get('p99')} · "
            f"max {canary.get('max')}",
        ),
        (
            "argv parsed / usage errors / anything else (parse)",
            f"{argv['parsed']} / {argv['usage']} / {len(argv['problems'])}",
        ),
        (
            "real `bay` processes run · exit 0/1/2/124",
            f"{processes['runs']} · {processes['exit_0']}/{processes['exit_1']}/"
            f"{processes['exit_2']}/{processes['exit_124']}",
        ),
        ("problems (untyped, internal_error, missing answers, tracebacks)", len(problems)),
    ]
    md = (
        f"Latest run: {today()} · {machine()} · {f['seconds']} s\n\n"
        + table(rows)
        + "".join(f"\n- {x}" for x in problems[:20])
    )
    record("fuzz", f, md)
    raise SystemExit(1 if problems else 0)


if __name__ == "__main__":
    main()
