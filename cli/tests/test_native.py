"""The native ``bay`` client (cli/native/bay.c, issue 19): the warm road without an
interpreter's start, handing everything else to the Python client (``bay-py``, the lean
launcher) through ``BAY_HANDED`` (browserbay_cli.hot).

Parity is the test: the same argv through the native client and through ``bay-py`` gives
the same stdout, stderr, merged (2>&1) output, output on a terminal and exit code — on a
real keeper with real Chromium, and on a scripted keeper socket that says what a real one
rarely does (a frame of odd JSON, a lone surrogate, a keeper that goes away). The trust
checks are attacks: a socket another user planted, a symlink, a directory others may enter,
a listener of another uid — the native client sends nothing to any. And a command the
keeper had is never sent twice (cut off, deadline)."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browserbay import protocol
from browserbay.sockpath import runtime_dir, socket_for
from browserbay_cli import launcher
from browserbay_testing.planted import ATTACKER, fake_answer, fake_keeper, victim_env
from browserbay_testing.unixserver import unix_server

BIN = Path(sys.executable).parent
#: The native client under test: the installed one, or (test-only) another build of it, such
#: as test_native_fuzz's sanitizer build, with ``bay-py`` beside it.
NATIVE = os.environ.get("BAY_NATIVE_BIN") or str(BIN / "bay")
PY = str(BIN / launcher.PYTHON_CLIENT)


def _is_native(path: str) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


needs_native = pytest.mark.skipif(
    not _is_native(NATIVE), reason="no native bay here (no C compiler: it stays Python)"
)


def test_setup_builds_the_native_client_where_a_compiler_is() -> None:
    """scripts/setup.sh (``launcher --native``): with a compiler, ``bay`` is the native
    client and ``bay-py`` the lean launcher it hands over to."""
    if launcher.compiler() is None or sys.platform != "linux":
        pytest.skip("no C compiler here")
    assert _is_native(NATIVE), f"{NATIVE} is not the native client: run scripts/setup.sh"
    assert Path(PY).read_text().splitlines()[0].endswith(" -S")


def test_without_a_compiler_bay_stays_the_python_launcher(tmp_path: Path) -> None:
    bay = tmp_path / "bay"
    assert launcher.install(str(bay), native=True, cc=None) == "python"
    assert bay.read_text().startswith(f"#!{sys.executable} -S\n")
    assert (tmp_path / "bay-py").read_text() == bay.read_text()
    r = subprocess.run([str(bay), "--version"], capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stdout.split()[:1]) == (0, ["bay"]), r.stderr
    # a compiler that fails (here: one that is no compiler) leaves it Python too
    false = shutil.which("false")
    assert false is not None
    assert launcher.install(str(bay), native=True, cc=false) == "python"
    assert bay.read_text().startswith("#!")


@needs_native
def test_the_build_is_stamped_and_redone_only_when_it_changed(tmp_path: Path) -> None:
    cc = launcher.compiler()
    assert cc is not None
    bay = tmp_path / "bay"
    assert launcher.install(str(bay), native=True, cc=cc) == "native"
    first = bay.stat().st_ino
    assert launcher.install(str(bay), native=True, cc=cc) == "native"
    assert bay.stat().st_ino == first  # not rebuilt: the stamp matched
    (tmp_path / ".bay-native.stamp").write_text("another build\n")
    assert launcher.install(str(bay), native=True, cc=cc) == "native"
    assert bay.stat().st_ino != first
    launcher.write(str(bay))  # an installer's script put back over it: built again
    assert launcher.install(str(bay), native=True, cc=cc) == "native"
    assert _is_native(str(bay))


# -- running both clients ---------------------------------------------------------------------


def _on_pty(argv: list[str], env: dict[str, str]) -> tuple[int, bytes]:
    """``argv`` with stdout and stderr on one terminal: its exit code and what it showed."""
    master, slave = pty.openpty()
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the last writer closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    return p.wait(60), shown


#: A text cut into a file of the client's: named for its time and pid, which differ.
_SAVED = re.compile(rb"/\d{8}-\d{6}-\d+-")


def _runs(exe: str, argv: list[str], env: dict[str, str]) -> dict[str, Any]:
    apart = subprocess.run(
        [exe, *argv], capture_output=True, env=env, stdin=subprocess.DEVNULL, timeout=90
    )
    merged = subprocess.run(
        [exe, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=90,
    )
    code, shown = _on_pty([exe, *argv], env)
    said = {
        "code": apart.returncode,
        "stdout": apart.stdout,
        "stderr": apart.stderr,
        "merged": (merged.returncode, merged.stdout),
        "tty": (code, shown),
    }
    return {k: _unsaved(v) for k, v in said.items()}


def _unsaved(value: Any) -> Any:
    if isinstance(value, bytes):
        return _SAVED.sub(b"/<saved>-", value)
    if isinstance(value, tuple):
        return tuple(_unsaved(v) for v in value)
    return value


def _parity(argv: list[str], env: dict[str, str]) -> dict[str, Any]:
    ours, theirs = _runs(NATIVE, argv, env), _runs(PY, argv, env)
    assert ours == theirs, argv
    return ours


# -- a real keeper, real Chromium -------------------------------------------------------------

TITLE = "Café ☕ — naïve 日本語 😀"
PAGES = {
    "/": f"<title>{TITLE}</title><h1>Ünïcode</h1><button>Go ✓</button><a href='/big'>big</a>",
    "/big": "<title>big</title>" + "".join(f"<p>paragraph {n} — é</p>" for n in range(6000)),
}


@pytest.fixture(scope="module")
def real() -> Iterator[dict[str, str]]:
    from browserbay_testing.pages import serve_pages
    from browserbay_testing.plugin import keeper

    with serve_pages(PAGES) as base, keeper("nat", BAY_PLUGIN_MODULES="recorder,greeter") as b:
        b.ok("open", base + "/", session="nat")
        b.ok("open", base + "/big", session="natbig")
        yield dict(b.env, BAY_SESSION="nat")


@needs_native
@pytest.mark.browser
@pytest.mark.parametrize(
    "argv",
    [
        ["get", "title"],
        ["get", "title", "--json"],
        ["snapshot", "-i"],
        ["click", "@e999"],  # a refusal
        ["click", "@e999", "--json"],
        ["chatter"],  # progress lines on stderr, then the answer
        ["--help"],  # whole
        ["get", "--help"],
        ["wat"],  # a usage error
        ["status", "--timeout", "1e400"],
        ["get", "title", "--timeout", "nan"],
    ],
    ids=lambda a: " ".join(a),
)
def test_parity_on_a_real_keeper(real: dict[str, str], argv: list[str]) -> None:
    said = _parity(argv, real)
    if argv == ["get", "title"]:
        assert said["stdout"] == f"{TITLE}\n".encode()
    if argv == ["chatter"]:
        assert said["stderr"].count("ça avance".encode()) == 3
        assert b"\nnan\n" in said["stderr"]  # a plugin's non-text progress, sent as text
        assert said["merged"][1].index(b"step 3/3") < said["merged"][1].index(b"done: 3")


@needs_native
@pytest.mark.browser
def test_parity_of_an_answer_too_long_to_print_whole(real: dict[str, str]) -> None:
    """``get html`` of a big page: the keeper answers the frame (``answer``), the native
    client hands it over (``said:FD``) and the Python client cuts it into a file."""
    env = dict(real, BAY_SESSION="natbig")
    said = _parity(["get", "html"], env)
    assert b"full text: " in said["stdout"], said["stdout"][-300:]


# -- a scripted keeper socket -----------------------------------------------------------------

HELLO = protocol.encode(protocol.hello("keeper"))


@contextlib.contextmanager
def scripted(
    home: Path, answer: list[bytes] | str, *, hello: bytes = HELLO
) -> Iterator[list[dict[str, Any]]]:
    """A keeper socket at ``home`` that says ``hello`` to a hello and ``answer`` to an argv
    frame: its lines, or ``"close"`` (it goes away once it has the request) or ``"hang"``
    (it never answers); any verb frame (the whole client's) gets ``ok``. Yields the frames
    it received, in order."""
    run = home / "run"
    run.mkdir(mode=0o700, parents=True)
    with scripted_at(run, answer, hello=hello) as got:
        yield got


@contextlib.contextmanager
def scripted_at(
    run: Path, answer: list[bytes] | str, *, hello: bytes = HELLO
) -> Iterator[list[dict[str, Any]]]:
    """:func:`scripted`'s keeper socket in the directory ``run``."""
    got: list[dict[str, Any]] = []

    def serve(conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as lines, contextlib.suppress(OSError):
            for line in lines:
                frame = json.loads(line)
                got.append(frame)
                if "hello" in frame:
                    conn.sendall(hello)
                elif "argv" in frame and answer == "close":
                    return
                elif "argv" in frame and answer == "hang":
                    continue
                elif "argv" in frame:
                    conn.sendall(b"".join(a + b"\n" for a in answer))
                else:
                    conn.sendall(protocol.encode(fake_answer(frame, text="the title")))

    with unix_server(run / "keeper.sock", serve):
        yield got


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BAY_", "XDG_"))}
    return dict(env, BAY_HOME=str(home), BAY_SESSION="scripted", BAY_NO_AUTOSTART="1")


def _printed(out: str, err: str, code: object) -> bytes:
    return json.dumps({"id": "1", "printed": {"out": out, "err": err, "code": code}}).encode()


BIG = "".join(f'line {n:05d} — é ✓ "q" \\ \t end\n' for n in range(600))  # > 8 KiB
SCRIPTS: dict[str, list[bytes]] = {
    "big out, err without a newline": [_printed(BIG, "warning: ünïcode, no newline", 3)],
    "err with lines, out without": [_printed("no newline", "one\ntwo\n", 0)],
    "progress then printed": [
        json.dumps({"id": "1", "progress": "working — 1/2"}).encode(),
        json.dumps({"id": "1", "progress": 2}).encode(),
        _printed("ok ✓\n", "footer\n", 0),
    ],
    "progress of another id": [json.dumps({"id": "2", "progress": "not ours"}).encode()],
    "surrogate pair escapes": [_printed("\U0001f600 \u00e9 \u2603\n", "", 0)],  # ensure_ascii
    "raw utf-8 and control escapes": [
        json.dumps(
            {"id": "1", "printed": {"out": "é\x01\x1f\u2028\n", "err": "", "code": 0}},
            ensure_ascii=False,
        ).encode()
    ],
    "a duplicate key": [b'{"id":"1","printed":{"out":"first\\n","out":"last\\n","code":0}}'],
    "NaN beside": [b'{"id":"1","printed":{"out":"x\\n","err":"","code":0},"n":NaN}'],
    "a float code": [_printed("x\n", "", 2.5)],
    "a text code": [_printed("x\n", "", "7")],
    "a true code": [_printed("x\n", "", True)],
    "a code past 255": [_printed("x\n", "", 257)],
    "a negative code": [_printed("x\n", "", -1)],
    "no code": [b'{"id":"1","printed":{"out":"x\\n"}}'],
    "a number as out": [b'{"id":"1","printed":{"out":5,"err":"","code":0}}'],
    "printed null": [b'{"id":"1","printed":null}'],
    "a lone surrogate": [b'{"id":"1","printed":{"out":"\\ud800\\n","err":"","code":0}}'],
    "no JSON": [b"not json at all"],
    "invalid utf-8": [b'{"id":"1","printed":{"out":"\xff\\n","err":"","code":0}}'],
    "deep nesting": [
        b'{"id":"1","printed":{"out":"x\\n","code":0},"d":' + b"[" * 20 + b"]" * 20 + b"}"
    ],
    "whole": [b'{"id":"1","whole":"usage"}'],
    # Progress lines the native reader cannot print as Python's str() would, then the
    # answer: handed over with the socket (rest:), the answer is still read and printed.
    "a NaN progress, then printed": [
        b'{"id":"1","progress":NaN}',
        _printed("after the NaN\n", "footer\n", 0),
    ],
    "odd progress lines, then printed": [
        json.dumps({"id": "1", "progress": "plain first"}).encode(),
        json.dumps({"id": "1", "progress": 1.5}).encode(),
        json.dumps({"id": "1", "progress": [1, "two"]}).encode(),
        b'{"id":"1","progress":-Infinity}',
        json.dumps({"id": "1", "progress": "plain again"}).encode(),
        _printed("the answer\n", "", 4),
    ],
    "a NaN progress, then whole": [b'{"id":"1","progress":NaN}', b'{"id":"1","whole":"usage"}'],
    "an answer frame": [
        json.dumps(
            {
                "id": "1",
                "answer": fake_answer({"id": "1", "verb": "get"}, text="long answer ✓"),
                "verb": "get",
                "json": False,
                "footed": False,
            }
        ).encode()
    ],
}


@needs_native
@pytest.mark.parametrize("name", list(SCRIPTS))
def test_parity_on_a_scripted_keeper(tmp_path: Path, name: str) -> None:
    with scripted(tmp_path / "h", SCRIPTS[name]) as got:
        said = _parity(["get", "title"], _env(tmp_path / "h"))
        argv_frames = [f for f in got if "argv" in f]
        verb_frames = [f for f in got if "verb" in f]
    # each client sent the argv once per run (6: two clients, apart, merged, on a tty); only
    # a "whole" answer has the whole client send the verb itself
    assert len(argv_frames) == 6
    whole = name in ("whole", "progress of another id", "a NaN progress, then whole")
    assert len(verb_frames) == (6 if whole else 0)
    if name == "big out, err without a newline":
        assert said["stdout"] == BIG.encode()
        assert said["code"] == 3
        assert said["merged"][1] == BIG.encode() + "warning: ünïcode, no newline".encode()
    if name == "a NaN progress, then printed":  # the answer after it is not lost
        assert (said["code"], said["stdout"], said["stderr"]) == (
            0,
            b"after the NaN\n",
            b"nan\nfooter\n",
        )
    if name == "odd progress lines, then printed":
        assert said["code"] == 4
        assert said["stdout"] == b"the answer\n"
        assert said["stderr"] == b"plain first\n1.5\n[1, 'two']\n-inf\nplain again\n"


#: Who prints each scripted answer: the native client itself, or the Python client it hands
#: over to (how, as BAY_HANDED says it).
BY = {
    "big out, err without a newline": "itself",
    "err with lines, out without": "itself",
    "progress then printed": "itself",
    "progress of another id": "whole",
    "surrogate pair escapes": "itself",
    "raw utf-8 and control escapes": "itself",
    "a duplicate key": "said:",
    "NaN beside": "rest:",
    "a float code": "said:",
    "a text code": "said:",
    "a true code": "itself",
    "a code past 255": "itself",
    "a negative code": "itself",
    "no code": "itself",
    "a number as out": "said:",
    "printed null": "said:",
    "a lone surrogate": "cut_off",
    "no JSON": "cut_off",
    "invalid utf-8": "cut_off",
    "deep nesting": "rest:",
    "whole": "whole",
    "a NaN progress, then printed": "rest:",
    "odd progress lines, then printed": "rest:",
    "a NaN progress, then whole": "rest:",
    "an answer frame": "said:",
}


@needs_native
@pytest.mark.parametrize("name", list(SCRIPTS))
def test_the_native_client_prints_what_is_plain_and_hands_over_the_rest(
    tmp_path: Path, name: str
) -> None:
    """The parity above holds whoever prints; here the Python client is one that only says
    it was handed the command: the plain answers are the native client's own."""
    with alone(tmp_path) as bay, scripted(tmp_path / "h", SCRIPTS[name]):
        r = subprocess.run([bay, "get", "title"], capture_output=True, env=_env(tmp_path / "h"))
    handed = r.stdout.decode().removeprefix("handed: ") if r.returncode == 99 else None
    if BY[name] == "itself":
        assert handed is None, r
    else:
        assert handed is not None, r
        assert handed.startswith(BY[name]), handed


@needs_native
@pytest.mark.parametrize(
    "hello",
    [
        b'{"hello":{"role":"keeper","version":"0.1.0","protocol":1.0}}',
        b'{"hello":{"role":"keeper","protocol":true,"version":"0.1\\u002e0","pid":1}}',
    ],
)
def test_parity_of_a_compatible_hello_in_another_spelling(tmp_path: Path, hello: bytes) -> None:
    assert protocol.__version__ == "0.1.0" or pytest.skip("the spellings name 0.1.0")
    with scripted(tmp_path / "h", [_printed("x\n", "", 0)], hello=hello + b"\n") as got:
        said = _parity(["get", "title"], _env(tmp_path / "h"))
    assert said["stdout"] == b"x\n"
    assert [f for f in got if "verb" in f] == []


# -- the socket path rule --------------------------------------------------------------------


@contextlib.contextmanager
def alone(tmp_path: Path) -> Iterator[str]:
    """A copy of the native client whose ``bay-py`` only says it was handed the command
    (exit 99): what the native client does itself, and nothing Python does for it."""
    where = tmp_path / "alone"
    where.mkdir()
    shutil.copy(NATIVE, where / "bay")
    (where / "bay-py").write_text('#!/bin/sh\necho "handed: $BAY_HANDED"\nexit 99\n')
    (where / "bay-py").chmod(0o755)
    yield str(where / "bay")


@needs_native
@pytest.mark.parametrize(
    "case", ["relative", "dot-dot", "tilde", "tilde alone", "double slash", "deep", "xdg/"]
)
def test_the_native_client_finds_the_socket_where_sockpath_puts_it(
    tmp_path: Path, case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BAY_", "XDG_"))}
    env.update(BAY_SESSION="path", HOME=str(tmp_path / "homedir"))
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    home = {
        "relative": "rel/h",
        "dot-dot": "./rel/../rel/./h/",
        "tilde": "~/h",
        "tilde alone": "~",
        "double slash": "/" + str(tmp_path / "h"),
        "deep": str(tmp_path / ("d" * 100)),
    }.get(case)
    if home is None:
        env["XDG_RUNTIME_DIR"] = str(tmp_path / "xdg") + "/"
    else:
        env["BAY_HOME"] = home
    monkeypatch.chdir(cwd)  # sockpath's abspath reads the cwd, its expanduser HOME
    monkeypatch.setenv("HOME", env["HOME"])
    sock = socket_for(runtime_dir(env))
    assert (case == "deep") == sock.startswith("/tmp/bay-")
    directory = Path(os.path.dirname(sock))
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        with alone(tmp_path) as bay, scripted_at(directory, [_printed("warm\n", "", 0)]) as got:
            r = subprocess.run(
                [bay, "get", "title"], capture_output=True, text=True, env=env, cwd=cwd
            )
        assert (r.returncode, r.stdout) == (0, "warm\n"), (sock, r)
        assert len([f for f in got if "argv" in f]) == 1
    finally:
        if case == "deep":
            shutil.rmtree(directory, ignore_errors=True)


@needs_native
def test_what_the_native_client_hands_over_it_does_not_send(tmp_path: Path) -> None:
    """The harness above, the other way: no socket there, the copy hands it over plainly."""
    env = _env(tmp_path / "h")
    with alone(tmp_path) as bay:
        r = subprocess.run([bay, "get", "title"], capture_output=True, text=True, env=env)
        assert (r.returncode, r.stdout) == (99, "handed: \n")
        with scripted(tmp_path / "h", [b'{"id":"1","whole":"usage"}']) as got:
            r = subprocess.run([bay, "get", "title"], capture_output=True, text=True, env=env)
        assert (r.returncode, r.stdout) == (99, "handed: whole\n")
        assert len(got) == 2  # its hello and its argv, once


# -- run once ---------------------------------------------------------------------------------


@needs_native
def test_a_keeper_gone_after_it_had_the_request_is_not_sent_it_again(tmp_path: Path) -> None:
    """The keeper reads the argv frame and goes away: it may have run it, so the native
    client hands over ``cut_off`` and the Python client refuses, sending nothing."""
    home = tmp_path / "h"
    with scripted(home, "close") as got:
        r = subprocess.run(
            [NATIVE, "click", "@e1", "--json"], capture_output=True, env=_env(home), timeout=60
        )
        py = subprocess.run(
            [PY, "click", "@e1", "--json"], capture_output=True, env=_env(home), timeout=60
        )
    assert (r.returncode, r.stdout, r.stderr) == (py.returncode, py.stdout, py.stderr)
    assert json.loads(r.stdout)["code"] == "keeper_unavailable", r
    assert [f.get("argv") for f in got if "argv" in f] == [["click", "@e1", "--json"]] * 2
    assert [f for f in got if "verb" in f] == []


@needs_native
def test_a_deadline_passed_is_not_sent_again(tmp_path: Path) -> None:
    home = tmp_path / "h"
    with scripted(home, "hang") as got:
        r = subprocess.run(
            [NATIVE, "get", "title", "--timeout", "1", "--json"],
            capture_output=True,
            env=_env(home),
            timeout=60,
        )
    frame = json.loads(r.stdout)
    assert frame["code"] == "deadline", r
    assert len([f for f in got if "argv" in f]) == 1
    assert [f for f in got if "verb" in f] == []


@needs_native
def test_no_keeper_is_the_python_clients_to_handle(tmp_path: Path) -> None:
    """No socket: the native client execs bay-py plainly, which says what it always says."""
    env = _env(tmp_path / "h")
    said = _parity(["get", "title", "--json"], env)
    assert json.loads(said["stdout"])["code"] == "keeper_unavailable"


@needs_native
@pytest.mark.parametrize(
    "argv",
    [
        [b"get", b"text", b"\xff\xfe"],  # no UTF-8
        [b"get", b"text", b"\xed\xa0\x80"],  # a surrogate, UTF-8 encoded
        [b"status", b"--timeout", b"1_0"],  # Python's float() reads it; C's does not
        [b"status", b"--timeout", b" 2 "],
        [b"status", b"--timeout=0x10"],
        [b"status", b"--timeout", b"-0"],
        [b"status", b"--", b"--timeout", b"nan"],
    ],
    ids=repr,
)
def test_argv_the_warm_road_does_not_take_is_handed_over_as_hot_py_does(
    tmp_path: Path, argv: list[bytes]
) -> None:
    home = tmp_path / "h"
    with scripted(home, [_printed("warm\n", "", 0)]) as got:
        ours = subprocess.run([NATIVE.encode(), *argv], capture_output=True, env=_env(home))
        n = len([f for f in got if "argv" in f])
        theirs = subprocess.run([PY.encode(), *argv], capture_output=True, env=_env(home))
    assert (ours.returncode, ours.stdout, ours.stderr) == (
        theirs.returncode,
        theirs.stdout,
        theirs.stderr,
    )
    assert len([f for f in got if "argv" in f]) == 2 * n  # the warm road taken by both or neither


# -- trust: attacks ---------------------------------------------------------------------------

root_only = pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as two users")


@pytest.fixture
def deep_home() -> Iterator[str]:
    """A BAY_HOME deep enough that its socket moves under /tmp (the crc32 rule)."""
    base = tempfile.mkdtemp(prefix="bay-n-", dir="/tmp")
    yield os.path.join(base, "d" * 100)
    shutil.rmtree(base, ignore_errors=True)


def _native_warm(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [NATIVE, "get", "title", "--json"], capture_output=True, text=True, env=env, timeout=60
    )


def _untrusted(r: subprocess.CompletedProcess[str], record: Path) -> dict[str, Any]:
    assert record.read_bytes() == b"", "the native client sent to an untrusted socket"
    frame = json.loads(r.stdout)
    assert frame["code"] == "socket_untrusted", frame
    return dict(frame)


@needs_native
@root_only
def test_a_socket_directory_another_user_planted_gets_nothing(deep_home: str) -> None:
    env = victim_env(deep_home, None)
    directory = os.path.dirname(socket_for(runtime_dir(env)))
    assert directory.startswith("/tmp/bay-")  # the crc32 rule: the native client finds it
    with fake_keeper(directory) as record:
        frame = _untrusted(_native_warm(env), record)
    assert f"uid {ATTACKER[0]}" in frame["message"]


@needs_native
@root_only
def test_a_planted_symlink_gets_nothing(deep_home: str) -> None:
    env = victim_env(deep_home, None)
    directory = os.path.dirname(socket_for(runtime_dir(env)))
    with fake_keeper(directory, link=True) as record:
        frame = _untrusted(_native_warm(env), record)
    assert "symlink" in frame["message"]


@needs_native
@root_only
def test_a_socket_of_ours_served_by_another_uid_gets_nothing(deep_home: str) -> None:
    """Directory 0700 and socket file ours; only the listener is the attacker's: the peer
    credentials catch it."""
    env = victim_env(deep_home, None)
    directory = os.path.dirname(socket_for(runtime_dir(env)))
    staging = directory + ".attacker"
    with fake_keeper(staging, mode=0o755) as record:
        os.mkdir(directory, 0o700)
        try:
            os.rename(os.path.join(staging, "keeper.sock"), os.path.join(directory, "keeper.sock"))
            os.chown(os.path.join(directory, "keeper.sock"), 0, 0)
            frame = _untrusted(_native_warm(env), record)
            assert "peer" in frame["message"], frame
        finally:
            shutil.rmtree(directory, ignore_errors=True)


@needs_native
@pytest.mark.parametrize("how", ["mode 0755", "symlinked socket", "trusted"])
def test_a_socket_of_ours_the_checks_refuse_gets_no_argv(tmp_path: Path, how: str) -> None:
    """Our own listener in a directory others may enter, or behind a symlinked socket file:
    no argv frame reaches it (``trusted``: the same harness sees the argv when it is
    sent, so the check can fail)."""
    home = tmp_path / "h"
    elsewhere = tmp_path / "elsewhere"
    real_home = elsewhere if how == "symlinked socket" else home
    with scripted(real_home, [_printed("warm\n", "", 0)]) as got:
        if how == "mode 0755":
            os.chmod(home / "run", 0o755)
        if how == "symlinked socket":
            (home / "run").mkdir(parents=True, mode=0o700)
            (home / "run" / "keeper.sock").symlink_to(elsewhere / "run" / "keeper.sock")
        r = subprocess.run(
            [NATIVE, "get", "title", "--json"], capture_output=True, text=True, env=_env(home)
        )
    argv_frames = [f for f in got if "argv" in f]
    if how == "trusted":
        assert (r.returncode, r.stdout, len(argv_frames)) == (0, "warm\n", 1), r
        return
    assert argv_frames == [], f"the native client sent its argv ({how})"
    assert got == []  # the Python client it handed over to sent nothing either
    assert json.loads(r.stdout)["code"] == "socket_untrusted", r


@needs_native
def test_a_closed_stdout_is_exit_1_and_nothing_else_as_python_says(tmp_path: Path) -> None:
    """SIGPIPE ignored as Python ignores it: the write fails EPIPE, exit 1 (BrokenPipeError),
    and stderr's text is not written after it."""
    said = []
    with scripted(tmp_path / "h", [_printed(BIG, "err text\n", 3)]):
        for exe in (NATIVE, PY):
            r, w = os.pipe()
            os.close(r)
            p = subprocess.run(
                [exe, "get", "title"], stdout=w, stderr=subprocess.PIPE, env=_env(tmp_path / "h")
            )
            os.close(w)
            said.append((p.returncode, p.stderr))
    assert said[0] == said[1] == (1, b"")


@needs_native
@pytest.mark.parametrize("closed", ["stdout", "stderr", "stdin"])
def test_a_closed_stdout_or_stderr_never_writes_into_the_keeper_socket(
    tmp_path: Path, closed: str
) -> None:
    """Started with fd 1 (or 2, or 0) closed, the first descriptor the native client opens
    takes its number: the keeper socket. What it then wrote to "stdout" (the keeper's
    printed text, a page's text: anyone's) or "stderr" (progress lines) went back to the
    keeper as frames — here a second argv frame the keeper runs. It hands such a start to
    the Python client (whose sys.stdout is None), and the keeper sees one argv frame."""
    injected = json.dumps({"id": "2", "argv": ["click", "@e1"]}) + "\n"
    answer = [
        json.dumps({"id": "1", "progress": injected.rstrip("\n")}).encode(),
        _printed(injected, injected, 0),
    ]
    redirect = {"stdout": ">&-", "stderr": "2>&-", "stdin": "<&-"}[closed]
    with scripted(tmp_path / "h", answer) as got:
        subprocess.run(
            ["/bin/sh", "-c", f'exec "$0" get title {redirect}', NATIVE],
            capture_output=closed == "stdin",
            env=_env(tmp_path / "h"),
            timeout=60,
        )
    argv_frames = [f.get("argv") for f in got if "argv" in f]
    assert argv_frames == [["get", "title"]], f"the keeper was sent {argv_frames}"
