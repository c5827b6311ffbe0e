"""Issue 15 item 6: the client trusts a socket another user controls.

Another local user (here ``nobody``, a real other uid) pre-creates the directory the
keeper's socket lives in — ``/tmp/bay-<uid>-<crc>/`` for a deep ``BAY_HOME``, or
``/tmp/browserbay-<uid>/`` when ``XDG_RUNTIME_DIR`` is unset — and listens there as a fake
keeper that records every byte it receives. The victim (root, or a second unprivileged user)
then types a password with ``bay fill @e1 -``. The client must check the directory, the
socket and the listening peer before it sends anything: the fake keeper receives zero bytes
and the victim gets ``socket_untrusted`` with a way out. The keeper itself must not bind in
(or through) such a directory either.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browserbay._version import __version__
from browserbay.sockpath import runtime_dir, socket_for
from browserbay_testing import BAY as BAY_CLI
from browserbay_testing import Bay, Result, assert_refused
from browserbay_testing.planted import (
    ATTACKER,
    SYSTEM_PYTHON,
    VICTIM,
    fake_keeper,
)
from browserbay_testing.planted import fill as _fill
from browserbay_testing.planted import ids as _ids
from browserbay_testing.planted import socket_dir as _socket_dir
from browserbay_testing.planted import victim_env as _victim_env

pytestmark = pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as two users")


def _system_python() -> None:
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"no {SYSTEM_PYTHON} for the unprivileged victim")


@pytest.fixture
def victim_home() -> Iterator[tuple[str, tuple[int, int]]]:
    """A deep BAY_HOME of an unprivileged victim (its socket moves under /tmp)."""
    _system_python()
    ids = _ids(VICTIM)
    base = tempfile.mkdtemp(prefix="bay-v-", dir="/tmp")
    os.chown(base, *ids)
    yield os.path.join(base, "d" * 100), ids
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def root_home() -> Iterator[str]:
    base = tempfile.mkdtemp(prefix="bay-r-", dir="/tmp")
    yield os.path.join(base, "d" * 100)
    shutil.rmtree(base, ignore_errors=True)


def _assert_nothing_sent(result: Result, record: Path) -> None:
    received = record.read_bytes()
    assert received == b"", f"the fake keeper received {received[:300]!r}"
    frame = assert_refused(result, "socket_untrusted")
    assert "BAY_HOME" in frame["way_out"], frame


def test_fill_to_a_deep_home_socket_planted_by_another_user_sends_nothing(
    root_home: str,
) -> None:
    env = _victim_env(root_home, None)
    directory = os.path.dirname(socket_for(runtime_dir(env)))
    with fake_keeper(directory) as record:
        result = _fill(env, None)
        _assert_nothing_sent(result, record)
        assert directory in result.frame["message"]
        assert f"uid {ATTACKER[0]}" in result.frame["message"]


def test_unprivileged_victim_deep_home_planted_directory(
    victim_home: tuple[str, tuple[int, int]],
) -> None:
    home, victim = victim_home
    env = _victim_env(home, victim)
    with fake_keeper(_socket_dir(env, victim[0])) as record:
        _assert_nothing_sent(_fill(env, victim), record)


def test_unprivileged_victim_without_xdg_runtime_dir_planted_directory() -> None:
    _system_python()
    victim = _ids(VICTIM)
    env = _victim_env(None, victim)
    directory = f"/tmp/browserbay-{victim[0]}"
    shutil.rmtree(directory, ignore_errors=True)
    with fake_keeper(directory) as record:
        _assert_nothing_sent(_fill(env, victim), record)


def test_a_verb_table_planted_in_the_runtime_dir_is_not_read() -> None:
    """Without XDG_RUNTIME_DIR the runtime dir is the socket's, /tmp/browserbay-<uid>/: the
    thin client reads the plugins' verb table from there. One another user planted (a verb
    "pwn" with a terminal escape in its help) is never read: `bay pwn` is refused
    socket_untrusted, `bay help pwn` does not know it."""
    _system_python()
    victim = _ids(VICTIM)
    env = _victim_env(None, victim)
    directory = f"/tmp/browserbay-{victim[0]}"
    shutil.rmtree(directory, ignore_errors=True)
    row = {"name": "pwn", "summary": "\x1b]0;pwned\x07", "args": [], "scope": "profile"}
    with fake_keeper(directory) as record:
        table = os.path.join(directory, "plugin-verbs.json")
        Path(table).write_text(json.dumps({"version": __version__, "verbs": [row]}))
        os.chown(table, *ATTACKER)
        argv = [SYSTEM_PYTHON, "-c", "from browserbay_cli.main import main; main()"]
        who: dict[str, Any] = {"user": victim[0], "group": victim[1], "extra_groups": []}
        p = subprocess.run(
            [*argv, "pwn", "--json"], capture_output=True, text=True, env=env, cwd="/", **who
        )
        _assert_nothing_sent(Result(p.returncode, p.stdout, p.stderr), record)
        h = subprocess.run(
            [*argv, "help", "pwn"], capture_output=True, text=True, env=env, cwd="/", **who
        )
        assert "pwned" not in h.stdout + h.stderr, h


def test_planted_symlink_to_the_attackers_directory(root_home: str) -> None:
    env = _victim_env(root_home, None)
    directory = os.path.dirname(socket_for(runtime_dir(env)))
    with fake_keeper(directory, link=True) as record:
        result = _fill(env, None)
        _assert_nothing_sent(result, record)
        assert "symlink" in result.frame["message"]


@pytest.mark.parametrize("road", ["fill", "warm"])
def test_a_socket_of_ours_served_by_another_uid_is_refused_by_its_peer_credentials(
    victim_home: tuple[str, tuple[int, int]], road: str
) -> None:
    """The directory (0700) and the socket file are the victim's own; only the process
    listening on it is the attacker's: SO_PEERCRED is what catches it — before the whole
    client sends a typed text (``fill``) and before the CLI's warm road sends its argv."""
    home, victim = victim_home
    env = _victim_env(home, victim)
    directory = _socket_dir(env, victim[0])
    staging = directory + ".attacker"
    with fake_keeper(staging, mode=0o755) as record:
        os.mkdir(directory, 0o700)
        try:
            os.rename(os.path.join(staging, "keeper.sock"), os.path.join(directory, "keeper.sock"))
            os.chown(os.path.join(directory, "keeper.sock"), *victim)
            os.chown(directory, *victim)
            result = (_fill if road == "fill" else _warm)(env, victim)
            _assert_nothing_sent(result, record)
            assert "peer" in result.frame["message"], result.frame
        finally:
            shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.parametrize("link", [False, True], ids=["directory", "symlink"])
@pytest.mark.parametrize("mode", [0o700, 0o777])
def test_the_keeper_never_binds_in_a_directory_another_user_planted(
    root_home: str, link: bool, mode: int
) -> None:
    """The keeper side: a pre-created directory of another owner (or a symlink to one) is
    neither reused nor followed; the keeper says why and exits."""
    env = _victim_env(root_home, None)
    directory = os.path.dirname(socket_for(runtime_dir(env)))
    real = directory + ".real" if link else directory
    with fake_keeper(directory, mode=mode, link=link):
        os.unlink(os.path.join(real, "keeper.sock"))  # the attacker waits for one of ours
        before = os.lstat(real)
        p = subprocess.run(
            [sys.executable, "-m", "browserbay.keeper"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert p.returncode != 0, p
        assert "not a directory of yours" in p.stderr, p.stderr
        assert "Traceback" not in p.stderr, p.stderr
        assert os.listdir(real) == [], "the keeper wrote into the attacker's directory"
        after = os.lstat(real)
        assert (after.st_mode, after.st_uid) == (before.st_mode, before.st_uid)


def test_a_socket_directory_of_ones_own_that_others_can_enter_is_refused(root_home: str) -> None:
    """Ours, but mode 0755: refused too (the way out says chmod 700), nothing started."""
    env = _victim_env(root_home, None)
    directory = os.path.dirname(socket_for(runtime_dir(env)))
    os.mkdir(directory, 0o755)
    os.chmod(directory, 0o755)
    try:
        frame = assert_refused(_fill(env, None), "socket_untrusted")
        assert "0755" in frame["message"], frame
        assert f"chmod 700 {directory}" in frame["way_out"], frame
        assert os.listdir(directory) == []
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def test_a_deep_home_of_ones_own_still_works(root_home: str) -> None:
    """The checks let the real thing through: a deep BAY_HOME's keeper makes its /tmp
    directory 0700 and answers, with the peer check passing."""
    bay = Bay(Path(root_home))
    directory = os.path.dirname(socket_for(runtime_dir({"BAY_HOME": root_home})))
    try:
        status = bay.ok("keeper", "start")
        assert status["socket"] == os.path.join(directory, "keeper.sock")
        assert os.lstat(directory).st_mode & 0o777 == 0o700
    finally:
        bay.stop()
        shutil.rmtree(directory, ignore_errors=True)


def _warm(env: dict[str, str], victim: tuple[int, int] | None) -> Result:
    """``bay get title --json`` on the CLI's warm road (browserbay_cli.hot: the argv itself
    goes to the keeper), as the victim."""
    argv = [BAY_CLI]
    if victim is not None:  # as that user, with the system Python from the source tree
        argv = [SYSTEM_PYTHON, "-c", "from browserbay_cli.hot import main; main()"]
    who: dict[str, Any] = {}
    if victim is not None:
        who = {"user": victim[0], "group": victim[1], "extra_groups": []}
    p = subprocess.run(
        [*argv, "get", "title", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd="/",
        **who,
    )
    return Result(p.returncode, p.stdout, p.stderr)


def test_the_warm_road_sends_no_argv_to_a_socket_planted_by_another_user(root_home: str) -> None:
    env = _victim_env(root_home, None)
    directory = os.path.dirname(socket_for(runtime_dir(env)))
    with fake_keeper(directory) as record:
        _assert_nothing_sent(_warm(env, None), record)


def test_the_warm_road_sends_no_argv_through_a_planted_symlink(root_home: str) -> None:
    env = _victim_env(root_home, None)
    directory = os.path.dirname(socket_for(runtime_dir(env)))
    with fake_keeper(directory, link=True) as record:
        _assert_nothing_sent(_warm(env, None), record)
