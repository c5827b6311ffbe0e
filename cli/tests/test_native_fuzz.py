"""Fuzzing the native ``bay`` client (cli/native/bay.c, issue 19) built with AddressSanitizer
and UndefinedBehaviorSanitizer: memory safety is a boundary even towards a trusted keeper.

A scripted keeper socket says a valid hello, then answers the argv frame with seeded
random and mutated lines (truncated, huge strings, deep nesting, escapes and surrogates,
invalid UTF-8, NUL bytes, numbers past every range, lines at and over the 1 MiB read and
``MAX_ANSWER``). For each case: no sanitizer report, an exit code from the documented set
(the printed code mod 256, or a hand-over), the argv frame sent exactly once, a hand-over
that says what happened (never a bare one once the keeper had the request, so nothing is
sent twice), no descriptor but the memfd (and for ``rest:``, the keeper socket) inherited
by the Python client, and where the native client printed itself, the same stdout, stderr
and exit code as the Python
client's own warm road (``hot.run``, in this process, on the same socket and frame).
Then argv (odd bytes, a long word, many words) and environment (BAY_HOME long and odd).

Seeded and bounded: ``FRAME_CASES`` frame cases, ``ARGV_CASES`` argv and ``ENV_CASES``
environment cases (seed ``SEED``), about 30-60 s of wall time on two loaded cores. Set
``BAY_FUZZ_SEED`` to try another seed (the failing case's seed and index are in the
assertion message)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browserbay import protocol
from browserbay_cli import hot, launcher
from browserbay_testing.unixserver import unix_server

SEED = int(os.environ.get("BAY_FUZZ_SEED", "19"))
FRAME_CASES = 1500
ARGV_CASES = 80
ENV_CASES = 80
HANDED_EXIT = 99  # the stub Python client's exit: the native client handed the command over
SANITIZERS = "-fsanitize=address,undefined"


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The native client built with the sanitizers (as launcher builds it, plus them), a stub
    ``bay-py`` beside it that reports what it was handed and which descriptors it has, and
    the environment that sends sanitizer reports to files."""
    cc = launcher.compiler()
    if cc is None or sys.platform != "linux":
        pytest.skip("no C compiler here: the native client is not built, nothing to fuzz")
    where = tmp_path_factory.mktemp("asan")
    exe = where / "bay"
    made = subprocess.run(
        [
            cc,
            *[f for f in launcher.NATIVE_FLAGS if f != "-O2"],
            "-O1",
            SANITIZERS,
            "-fno-sanitize-recover=all",
            "-fno-omit-frame-pointer",
            "-g",
            *launcher.native_defines(),
            "-o",
            str(exe),
            launcher.NATIVE_SOURCE,
        ],
        capture_output=True,
        text=True,
    )
    if made.returncode != 0:
        pytest.skip(f"the compiler has no sanitizers here ({cc}): {made.stderr[-300:]}")
    stub = where / "bay-py"
    stub.write_text(
        "#!/bin/sh\n"
        'echo "handed: $BAY_HANDED"\n'
        'printf "fds:"; for f in /proc/$$/fd/*; do\n'
        '  printf "|%s=%s" "${f##*/}" "$(readlink "$f")"\n'
        "done\n"
        "echo\n"
        'case "$BAY_HANDED" in said:*) cat "/proc/$$/fd/${BAY_HANDED#said:}";;\n'
        '  rest:*) f="${BAY_HANDED#rest:}"; cat "/proc/$$/fd/${f%%:*}";; esac\n'
        f"exit {HANDED_EXIT}\n"
    )
    stub.chmod(0o755)
    reports = where / "reports"
    reports.mkdir()
    san = {
        "ASAN_OPTIONS": f"log_path={reports}/asan:detect_leaks=0:abort_on_error=0",
        "UBSAN_OPTIONS": f"log_path={reports}/ubsan:halt_on_error=1:print_stacktrace=1",
    }
    base = subprocess.run([str(stub)], capture_output=True, text=True, env=dict(os.environ, **san))
    return {"exe": str(exe), "reports": reports, "san": san, "stub_fds": _fds(base.stdout.encode())}


def _fds(stdout: bytes) -> dict[str, str]:
    """The stub's descriptors: number -> what it is."""
    line = stdout.split(b"\n")[1].decode(errors="replace").removeprefix("fds:")
    return dict(w.split("=", 1) for w in line.split("|") if w)


def _listing_own(fds: dict[str, str]) -> set[str]:
    """The stub's listing's own descriptor: the glob's directory, then (at the same number,
    the lowest free one) the pipe of its ``$(readlink)``. A pipe inherited below it would be
    taken for it, and the listing's own then counted: a leak is still seen."""
    pipes = sorted(int(n) for n, t in fds.items() if int(n) > 2 and t.startswith("pipe:"))
    return {str(pipes[0])} if pipes else set()


class Keeper:
    """A keeper socket at ``home``/run (served by :func:`keeper`): a valid hello to a hello,
    then ``self.answer`` (bytes, as they are) to the argv frame, then it closes. Counts the
    argv frames of each connection."""

    def __init__(self, home: Path) -> None:
        run = home / "run"
        run.mkdir(mode=0o700, parents=True)
        self.path = run / "keeper.sock"
        self.answer = b""
        self.argv: list[list[Any]] = []  # per connection, the argv frames it received

    def serve(self, conn: socket.socket) -> None:
        got: list[Any] = []
        self.argv.append(got)
        with conn, conn.makefile("rb") as lines, contextlib.suppress(OSError):
            for line in lines:
                frame = json.loads(line)
                if "hello" in frame:
                    conn.sendall(protocol.encode(protocol.hello("keeper")))
                elif "argv" in frame:
                    got.append(frame["argv"])
                    conn.sendall(self.answer)
                    conn.shutdown(socket.SHUT_WR)
                else:
                    got.append(("verb", frame))


@pytest.fixture
def keeper(tmp_path: Path) -> Iterator[Keeper]:
    k = Keeper(tmp_path / "h")
    with unix_server(k.path, k.serve, in_turn=True):  # one client at a time: cases in turn
        yield k


def _env(build: dict[str, Any], home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BAY_", "XDG_", "PYTHON"))}
    return dict(env, **build["san"], BAY_HOME=str(home), BAY_SESSION="fz", BAY_NO_AUTOSTART="1")


def _native(
    build: dict[str, Any], argv: list[bytes], env: dict[str, str], why: str
) -> subprocess.CompletedProcess[bytes]:
    r = subprocess.run(
        [build["exe"].encode(), *argv],
        capture_output=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    reports = sorted(build["reports"].iterdir())
    said = "".join(p.read_text(errors="replace") for p in reports)
    assert not reports, f"{why}: {said}"
    assert b"Sanitizer" not in r.stderr, f"{why}: {r.stderr[-2000:]!r}"
    return r


def _handed(build: dict[str, Any], r: subprocess.CompletedProcess[bytes]) -> tuple[str, bytes]:
    """What the stub Python client was handed: BAY_HANDED and the memfd's text (said:, rest:);
    and it inherited no descriptor but that one, and for rest: the keeper socket."""
    head, _, said = [*r.stdout.split(b"\n", 2), b"", b""][:3]
    how = head.decode().removeprefix("handed: ")
    fds = _fds(r.stdout)
    extra = set(fds) - _listing_own(fds) - set(build["stub_fds"])
    allowed = {how.removeprefix("said:")} if how.startswith("said:") else set()
    if how.startswith("rest:"):
        memfd, sock, _ = how.removeprefix("rest:").split(":")
        allowed = {memfd, sock}
        assert fds.get(sock, "").startswith("socket:"), f"rest: {sock} is {fds.get(sock)}"
    assert extra <= allowed, f"the Python client inherited {fds} (handed {how!r})"
    return how, said


def _python_says(argv: list[str], env: dict[str, str]) -> tuple[Any, bytes, bytes, int | None]:
    """The Python client's warm road in this process (hot.run, as bay-py runs it) on the same
    socket: what _warm answered, stdout, stderr, exit code (None: the whole client)."""
    out, err = io.BytesIO(), io.BytesIO()
    wout = io.TextIOWrapper(out, encoding="utf-8", newline="\n", write_through=True)
    werr = io.TextIOWrapper(err, encoding="utf-8", newline="\n", write_through=True)
    seen: list[Any] = []
    real_warm = hot._warm

    def warm(a: list[str]) -> Any:
        seen.append(real_warm(a))
        return seen[-1]

    saved = dict(os.environ)
    old = sys.stdout, sys.stderr, hot._warm
    try:
        os.environ.clear()
        os.environ.update(env)
        sys.stdout, sys.stderr, hot._warm = wout, werr, warm  # type: ignore[assignment]
        code = hot.run(argv)
    finally:
        sys.stdout, sys.stderr, hot._warm = old  # type: ignore[assignment]
        os.environ.clear()
        os.environ.update(saved)
    return (seen or [None])[0], out.getvalue(), err.getvalue(), code


# -- the keeper's frames ----------------------------------------------------------------------

ODD = [b"\x00", b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\\"]
ESCAPES = [
    b"\\u0000",
    b"\\ud800",
    b"\\udc00",
    b"\\ud83d\\ude00",
    b"\\ud83d",
    b"\\u12",
    b"\\x41",
    b"\\/",
    b'\\"',
    b"\\uD83D\\uDE00",
    b"\\u00e9",
    b"\\",
]
NUMBERS = [
    b"0",
    b"-0",
    b"1",
    b"255",
    b"256",
    b"-1",
    b"2147483647",
    b"2147483648",
    b"-2147483648",
    b"-2147483649",
    b"99999999999",
    b"999999999999",
    b"9999999999999",
    b"1" * 41,
    b"1" * 400,
    b"1.5",
    b"1e3",
    b"1E400",
    b"-1e-400",
    b"01",
    b"-",
    b"1.",
    b".5",
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"true",
    b"false",
    b"null",
    b'"3"',
    b"[]",
    b"{}",
]


def _text(rng: random.Random) -> str:
    pool = 'abc é✓日😀\n\t"\\\x00\x01\x1f\x7f\u2028\ud7ff\ue000\U0010ffff'
    n = rng.choice([0, 1, 5, 40, 300, 5000])
    return "".join(rng.choice(pool) for _ in range(n))


def _printed(rng: random.Random) -> dict[str, Any]:
    printed: dict[str, Any] = {}
    for key in ("out", "err", "code"):
        if rng.random() < 0.85:
            printed[key] = (
                rng.choice([0, 1, 3, 255, 257, -1, True]) if key == "code" else _text(rng)
            )
    return printed


def _valid(rng: random.Random) -> bytes:
    kind = rng.random()
    if kind < 0.6:
        frame: dict[str, Any] = {"id": "1", "printed": _printed(rng)}
    elif kind < 0.75:
        frame = {"id": rng.choice(["1", "2", 1]), "progress": rng.choice([_text(rng), 7, -0])}
    elif kind < 0.85:
        frame = {"id": "1", "answer": {"ok": True, "text": _text(rng)}, "verb": "get"}
    else:
        frame = {"id": "1", rng.choice(["whole", "ok", "printed"]): rng.choice([None, 1, "x"])}
    return json.dumps(frame, ensure_ascii=rng.random() < 0.5).encode()


def _mutate(rng: random.Random, line: bytes) -> bytes:
    how = rng.randrange(9)
    at = rng.randrange(len(line) + 1)
    if how == 0:  # truncated
        return line[:at]
    if how == 1:  # an odd byte in
        return line[:at] + rng.choice(ODD) + line[at:]
    if how == 2:  # an escape in (inside a string often: after a quote)
        q = line.find(b'"', at)
        at = q + 1 if q >= 0 else at
        return line[:at] + rng.choice(ESCAPES) + line[at:]
    if how == 3:  # a number for a value
        return line.replace(b":0", b":" + rng.choice(NUMBERS), 1).replace(
            b'"code": ', b'"code": ' + rng.choice(NUMBERS) + b"  ", 1
        )
    if how == 4:  # deep nesting
        depth = rng.choice([14, 15, 16, 17, 18, 100, 5000])
        o = rng.choice([b"[", b'{"a":'])
        c = b"]" if o == b"[" else b"}"
        return line[:-1] + b',"deep":' + o * depth + b"0" + c * depth + b"}"
    if how == 5:  # a byte flipped
        if not line:
            return line
        i = rng.randrange(len(line))
        return line[:i] + bytes([line[i] ^ (1 << rng.randrange(8))]) + line[i + 1 :]
    if how == 6:  # a duplicate key
        return line[:-1] + b',"printed":{"out":"again"},"id":"1"}'
    if how == 7:  # bytes cut out
        return line[:at] + line[at + rng.randrange(1, 20) :]
    return line + rng.choice([b" ", b"\t\r", b"x", b"{}", b"\x00"])  # something after it


def _frames(rng: random.Random, case: int) -> bytes:
    """The bytes the keeper answers case ``case`` with: lines after the hello."""
    if case % 300 == 7:  # a line of about 1 MiB, the native client's read size, each side
        n = (1 << 20) + rng.randrange(-64, 64)
        pad = "é" * (n // 2 - 40)
        return (
            json.dumps({"id": "1", "printed": {"out": pad, "code": 0}}, ensure_ascii=False).encode()
            + b"\n"
        )
    lines = [
        _valid(rng) if rng.random() < 0.4 else _mutate(rng, _valid(rng))
        for _ in range(rng.choice([1, 1, 1, 2, 3]))
    ]
    tail = b"\n" if rng.random() < 0.9 else b""  # no newline at the end: a keeper gone
    return b"\n".join(lines) + tail


def _one_frame_case(
    build: dict[str, Any], keeper: Keeper, env: dict[str, str], answer: bytes, why: str
) -> str:
    """One case; answers who printed it: ``itself`` or how it was handed over."""
    argv = ["get", "title"]
    keeper.answer = answer
    before = len(keeper.argv)
    r = _native(build, [a.encode() for a in argv], env, why)
    assert keeper.argv[before:] == [[argv]], f"{why}: sent {keeper.argv[before:]}"
    if r.returncode == HANDED_EXIT and r.stdout.startswith(b"handed: "):
        how, said = _handed(build, r)
        # the keeper had the request: a bare hand-over would have Python send it again
        assert how in ("whole", "cut_off", "deadline") or how.startswith(("said:", "rest:")), (
            f"{why}: {how!r}"
        )
        if how.startswith("said:"):
            assert said in answer.split(b"\n"), f"{why}: said {said[:200]!r}"  # one line of it
        if how.startswith("rest:"):  # from a line's start on, what it had read of the rest
            starts = [0] + [i + 1 for i, b in enumerate(answer) if b == ord("\n")]
            assert said, f"{why}: rest of nothing"
            assert any(answer[k:].startswith(said) for k in starts), f"{why}: {said[:200]!r}"
        return how.partition(":")[0]
    warm, out, err, code = _python_says(argv, env)
    assert isinstance(warm, dict), f"{why}: {warm!r}"
    assert isinstance(warm.get("printed"), dict), f"{why}: {warm!r}"
    assert code is not None
    assert (r.returncode, r.stdout, r.stderr) == (code & 0xFF, out, err), why
    return "itself"


def test_frames_of_every_shape_from_a_keeper(
    build: dict[str, Any], keeper: Keeper, tmp_path: Path
) -> None:
    rng = random.Random(SEED)
    env = _env(build, tmp_path / "h")
    who: dict[str, int] = {}
    for case in range(FRAME_CASES):
        how = _one_frame_case(build, keeper, env, _frames(rng, case), f"seed {SEED} case {case}")
        who[how] = who.get(how, 0) + 1
    # the cases reach every road: printed here (so parity was compared), handed the frame,
    # handed the rest with the socket, cut off, whole
    roads = ("itself", "said", "rest", "cut_off", "whole")
    assert all(who.get(k, 0) >= FRAME_CASES // 50 for k in roads), who


def test_an_answer_over_max_answer(build: dict[str, Any], keeper: Keeper, tmp_path: Path) -> None:
    """One byte past ``MAX_ANSWER`` is cut off (hot.py's ``len(buf) > MAX_ANSWER``); at it, it
    is read (test_native's parity covers answers of megabytes; 64 MiB here costs ~20 s)."""
    env = _env(build, tmp_path / "h")
    over = 1
    head = b'{"id":"1","printed":{"code":0,"out":"'
    body = b"x" * (protocol.MAX_ANSWER - len(head) - 4 + over)
    answer = head + body + b'"}}\n'
    assert len(answer) == protocol.MAX_ANSWER + over
    keeper.answer = answer
    r = _native(build, [b"get", b"title"], env, f"MAX_ANSWER+{over}")
    assert r.stdout.startswith(b"handed: cut_off"), r.stdout[:100]


# -- argv and environment ---------------------------------------------------------------------


def _word(rng: random.Random, long: bool) -> bytes:
    n = rng.choice([0, 1, 3, 20, 200])
    pool = [b"a", b"-", b"=", b"\xff", b"\xc3\xa9", b"\xed\xa0\x80", b"\x01", b'"', b"\\", b"\n"]
    if long:  # a word of 40-120 KB (a word past 128 KiB is the kernel's E2BIG)
        return rng.choice(pool[:5]) * 40_000 + rng.choice(pool)
    return b"".join(rng.choice(pool) for _ in range(n)) or rng.choice(
        [b"--timeout", b"--timeout=", b"--", b"--timeout=1e400", b"get"]
    )


def test_argv_of_odd_bytes_long_words_and_many(
    build: dict[str, Any], keeper: Keeper, tmp_path: Path
) -> None:
    rng = random.Random(SEED)
    env = _env(build, tmp_path / "h")
    keeper.answer = b'{"id":"1","printed":{"out":"warm\\n","code":0}}\n'
    for case in range(ARGV_CASES):
        many = rng.choice([1, 2, 5, 3000]) if case % 10 == 0 else rng.choice([1, 2, 5])
        argv = [_word(rng, long=case % 10 == 5 and n == 0) for n in range(many)]
        why = f"seed {SEED} argv case {case}"
        before = len(keeper.argv)
        r = _native(build, argv, env, why)
        sent = [a for conn in keeper.argv[before:] for a in conn]
        if sent:  # what it sent is the argv, once, as the Python client would send it
            assert sent == [[a.decode() for a in argv]], why
            assert (r.returncode, r.stdout) == (0, b"warm\n"), why
        else:
            assert r.returncode == HANDED_EXIT, (why, r)
            _handed(build, r)


def test_bay_home_long_and_odd(build: dict[str, Any], tmp_path: Path) -> None:
    """BAY_HOME of every length and shape: the native client either finds no keeper and
    hands over plainly or refuses to guess and hands over plainly; never a sanitizer's word."""
    rng = random.Random(SEED)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    pool = [b"a", b"/", b".", b"..", b"~", b"\xff", b"\xc3\xa9", b" ", b"//", b"/../"]
    for case in range(ENV_CASES):
        n = rng.choice([1, 2, 10, 60, 200, 5000, 70_000])
        home = b"".join(rng.choice(pool) for _ in range(n))
        env = {k.encode(): v.encode() for k, v in _env(build, tmp_path / "nowhere").items()}
        env[b"BAY_HOME"] = home
        if rng.random() < 0.3:
            env[b"HOME"] = b"/" * rng.choice([1, 2, 3000]) + home
        if rng.random() < 0.3:
            env[b"XDG_RUNTIME_DIR"] = home
        r = subprocess.run(
            [build["exe"].encode(), b"status"],
            capture_output=True,
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            timeout=60,
        )
        reports = sorted(build["reports"].iterdir())
        assert not reports, (case, home[:80])
        assert b"Sanitizer" not in r.stderr, (case, home[:80], r.stderr[-2000:])
        assert r.returncode == HANDED_EXIT, (case, home[:80], r)
        assert _handed(build, r)[0] == "", (case, home[:80])  # nothing sent, nothing said


def test_the_fuzz_harness_sees_a_sanitizer_report(build: dict[str, Any], tmp_path: Path) -> None:
    """The harness can fail: a program with an overflow, built the same way, leaves a report
    where _native looks."""
    cc = launcher.compiler()
    assert cc is not None
    src = tmp_path / "bad.c"
    src.write_text(
        "#include <string.h>\nint main(int c,char**v){char b[4];strcpy(b,v[0]);return b[0];}\n"
    )
    exe = tmp_path / "bad"
    subprocess.run([cc, SANITIZERS, "-g", "-o", str(exe), str(src)], check=True)
    subprocess.run([str(exe)], env=dict(os.environ, **build["san"]), capture_output=True)
    reports = sorted(build["reports"].iterdir())
    try:
        assert reports
        assert "AddressSanitizer" in reports[0].read_text()
    finally:
        shutil.rmtree(build["reports"])
        build["reports"].mkdir()
