"""browserbay.procfs: the one reading of process facts. Each test pins a case where the
copies it replaced disagreed (a zombie, an exiting task, another user's process, a reused
pid, the session field, a cycle-free tree)."""

from __future__ import annotations

import os
import pwd
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest

from browserbay import procfs


def _wait(check: Callable[[], bool], timeout: float = 5.0) -> bool:
    end = time.monotonic() + timeout
    while not check():
        if time.monotonic() > end:
            return False
        time.sleep(0.01)
    return True


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "30"])
    yield proc
    proc.kill()
    proc.wait()


def test_a_running_process_is_alive_and_a_missing_pid_is_not(
    sleeper: subprocess.Popen[bytes],
) -> None:
    assert procfs.alive(sleeper.pid)
    assert procfs.alive(os.getpid())
    assert not procfs.alive(2**22 + 1)  # above pid_max: never a process
    assert not procfs.alive(0)


def test_a_zombie_is_not_alive(sleeper: subprocess.Popen[bytes]) -> None:
    """Killed, not yet reaped: ``/proc/<pid>`` still exists (the CLI's wait for a keeper
    to exit took it for alive)."""
    sleeper.kill()
    assert _wait(lambda: (st := procfs.stat(sleeper.pid)) is not None and st.state == "Z")
    assert os.path.exists(f"/proc/{sleeper.pid}")
    assert not procfs.alive(sleeper.pid)
    sleeper.wait()
    assert not procfs.alive(sleeper.pid)


def test_an_exiting_task_is_not_alive() -> None:
    """``PF_EXITING`` set, state still running: what a killed browser shows before it is a
    zombie. A task that is not a zombie yet but exiting is taken for ended."""
    fields = ("R 1 1 1 0 -1 4 " + "0 " * 12 + "12345").split()  # flags 4, start 12345
    assert not procfs.Stat(1, fields).runs
    assert procfs.Stat(1, fields).start == 12345
    fields[6] = "0"
    assert procfs.Stat(1, fields).runs
    fields[0] = "Z"
    assert not procfs.Stat(1, fields).runs


def test_another_users_process_is_alive(sleeper: subprocess.Popen[bytes]) -> None:
    """Asked by a user who may not signal it (``kill(pid, 0)`` is EPERM), the process
    still runs."""
    if os.getuid() != 0:
        pytest.skip("needs root, to ask as another user")
    nobody = pwd.getpwnam("nobody")
    code = (
        f"import os; from browserbay import procfs; os.setgid({nobody.pw_gid});"
        f"os.setuid({nobody.pw_uid}); print(procfs.alive({sleeper.pid}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "True"


def test_a_reused_pid_is_caught_by_its_start_time(sleeper: subprocess.Popen[bytes]) -> None:
    started = procfs.start_time(sleeper.pid)
    assert started is not None
    assert procfs.alive(sleeper.pid, started)
    assert not procfs.alive(sleeper.pid, started + 1)  # the pid, another process's


def test_the_stat_fields_are_read_after_the_last_parenthesis_of_comm() -> None:
    """``comm`` may hold spaces and ``)``: fields are read after its last parenthesis."""
    st = procfs.stat(os.getpid())
    assert st is not None
    assert st.ppid == os.getppid()
    assert st.sid == os.getsid(0)
    # A name like "a) Z 1 1": a split on its first ")" reads a zombie of init's.
    code = "import time; open('/proc/self/comm', 'w').write('a) Z 1 1 1'); print(); time.sleep(30)"
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True
    )
    try:
        assert proc.stdout is not None
        proc.stdout.readline()
        with open(f"/proc/{proc.pid}/stat") as f:
            assert "a) Z 1 1 1" in f.read()
        got = procfs.stat(proc.pid)
        assert got is not None
        assert (got.ppid, got.sid) == (os.getpid(), proc.pid)
        assert procfs.alive(proc.pid)
    finally:
        proc.kill()
        proc.wait()


def test_a_shell_session_is_found_by_its_session_id() -> None:
    """The session field (``getsid``), not the one beside it (the copy in the keeper's
    holds read the tty number)."""
    assert procfs.in_session(os.getsid(0))
    proc = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        assert procfs.in_session(proc.pid)
        proc.kill()
        assert _wait(lambda: not procfs.in_session(proc.pid))  # a zombie's session is over
    finally:
        proc.kill()
        proc.wait()
    assert not procfs.in_session(proc.pid)


def test_the_tree_is_the_process_first_then_all_its_descendants() -> None:
    code = (
        "import subprocess, sys, time;"
        "c = subprocess.Popen(['sleep', '30']); print(c.pid, flush=True); time.sleep(30)"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert parent.stdout is not None
    grandchild = int(parent.stdout.readline())
    try:
        found = procfs.tree(os.getpid())
        assert found[0] == os.getpid()
        assert {parent.pid, grandchild} <= set(found)
        assert len(found) == len(set(found))
        assert procfs.tree(parent.pid) == [parent.pid, grandchild]
        assert procfs.tree(2**22 + 1) == [2**22 + 1]  # a gone process: itself, no children
    finally:
        os.kill(grandchild, signal.SIGKILL)  # reaped by init once its parent is gone
        parent.kill()
        parent.wait()


def test_argv_environ_and_memory(sleeper: subprocess.Popen[bytes]) -> None:
    assert _wait(lambda: procfs.argv(sleeper.pid) == ["sleep", "30"])  # once it has exec()ed
    assert procfs.argv(2**22 + 1) == []
    assert procfs.environ(os.getpid()).get("PATH") == os.environ.get("PATH")
    rss = procfs.rss_kib(os.getpid())
    assert rss is not None
    assert rss > 1000
    assert procfs.rss_kib(2**22 + 1) is None
    assert procfs.pss_kib([os.getpid()]) > 1000
    assert procfs.pss_kib([2**22 + 1]) == 0  # a gone process counts 0
    assert procfs.tree_pss_kib(None) is None
    assert procfs.cpu_seconds(os.getpid()) > 0
    assert procfs.cpu_seconds(2**22 + 1) == 0
    total = procfs.tree_pss_kib(os.getpid())
    assert total is not None
    assert total >= procfs.pss_kib([sleeper.pid])
