"""The real ``bay`` CLI, and so a real keeper, run as an unprivileged user (``nobody``):
for the tests that read what a non-root keeper's browser really runs with."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from browserbay import procfs
from browserbay_testing.bay import BAY, KEEPER_PLUGINS, Result

#: Another user cannot run the venv's interpreter (it lives under root's 0700 home), so the
#: CLI, and the keeper it spawns, run on Debian's Python (the same 3.11 ABI) with the venv's
#: packages and the workspace sources on PYTHONPATH.
SYSTEM_PYTHON = "/usr/bin/python3"
CLI = "import sys; sys.argv[0] = 'bay'; from browserbay_cli.main import main; main()"
PY = "python{}.{}".format(*sys.version_info[:2])
SITE = Path(BAY).parent.parent / "lib" / PY / "site-packages"


def _pythonpath() -> str:
    paths = [str(SITE)]
    for pth in sorted(SITE.glob("_editable_impl_*.pth")):
        paths += [line for line in pth.read_text().splitlines() if line.startswith("/")]
    return ":".join([*paths, KEEPER_PLUGINS])


def _nobody() -> tuple[int, int]:
    row = pwd.getpwnam("nobody")
    return row.pw_uid, row.pw_gid


class AsUser:
    """The real ``bay`` CLI (and so a real keeper it starts) run as an unprivileged user with
    a private BAY_HOME and HOME."""

    def __init__(self, home: Path, uid: int, gid: int, **env: str):
        self.home, self.uid, self.gid = home, uid, gid
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "BAY_HOME": str(home / "bay"),
            "HOME": str(home / "user"),
            "BAY_SESSION": "sandbox",
            "BAY_BROWSER_GRACE": "0",
            "PYTHONPATH": _pythonpath(),
            "DBUS_SESSION_BUS_ADDRESS": f"unix:path={home}/no-bus",
            **env,
        }
        (home / "user").mkdir(mode=0o700)
        for path in (home, home / "user"):
            os.chown(path, uid, gid)

    def run(self, argv: list[str], prefix: tuple[str, ...] = (), timeout: float = 120) -> Result:
        """``argv`` as the user (after ``prefix``, which runs as root)."""
        who = ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups"]
        p = subprocess.run(
            [*prefix, *who, *argv],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=timeout,
            cwd="/",
            stdin=subprocess.DEVNULL,
        )
        return Result(p.returncode, p.stdout, p.stderr)

    def __call__(self, *args: str, prefix: tuple[str, ...] = (), timeout: float = 120) -> Result:
        return self.run([SYSTEM_PYTHON, "-c", CLI, *args, "--json"], prefix, timeout)

    def ok(self, *args: str) -> dict[str, object]:
        r = self(*args)
        assert r.code == 0, (args, r)
        data = r.data
        assert isinstance(data, dict)
        return data

    def stop(self) -> None:
        self("keeper", "stop", timeout=60)


@contextlib.contextmanager
def as_nobody() -> Iterator[AsUser]:
    """The user ``nobody`` with a home of its own, its keeper and browsers ended after."""
    home = Path(tempfile.mkdtemp(prefix="bay-sb-", dir="/tmp"))
    user = AsUser(home, *_nobody())
    yield user
    user.stop()
    for pid in browser_processes(user.uid, str(home)):  # bay chrome's outlives the keeper
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    wait_gone(user.uid, str(home))
    shutil.rmtree(home, ignore_errors=True)


def argv_of(pid: int) -> list[str]:
    """The process's switches; Chromium's children rewrite theirs into one space-joined
    string, so every element is split on spaces too."""
    return [word for arg in procfs.argv(pid) for word in arg.split(" ") if word]


def browser_processes(uid: int, needle: str) -> list[int]:
    """Every live process of ``uid`` whose argv holds ``needle`` (a browser of this test)."""
    found = []
    for pid in procfs.pids():
        try:
            if os.stat(f"/proc/{pid}").st_uid != uid:
                continue
        except OSError:
            continue
        if any(needle in a for a in argv_of(pid)):
            found.append(pid)
    return found


def wait_gone(uid: int, needle: str) -> None:
    end = time.monotonic() + 30
    while browser_processes(uid, needle) and time.monotonic() < end:
        time.sleep(0.1)
