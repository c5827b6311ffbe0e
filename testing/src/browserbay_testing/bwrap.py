"""An agent run under bubblewrap (``bwrap``) with one directory of the host: the session
socket's. The recipe of docs/sandboxing.md, as the sandbox test runs it.

Inside a :class:`Jail` the agent sees a read-only ``/usr`` (and the ``/bin``, ``/lib``…
links or directories beside it), the Python that runs ``bay`` (the venv, its base
interpreter and the workspace sources its editable installs point at, all read-only), a
fresh ``/proc`` and ``/dev``, and ``share`` read-write — nothing else of the host's files:
no ``/tmp``, no ``/etc``, no home, no keeper home. It runs in new user, PID, IPC, UTS, cgroup
and (unless ``network``) network namespaces, with no capabilities (bwrap keeps them for
root unless told), in a session of its own (no TIOCSTI into the caller's terminal), with an
environment of only what it is given; the root is read-only, so nothing it starts can make
a home outside ``share``.

The inside half is this module run as ``python -m browserbay_testing.bwrap``: ``look PATH…``
says what each path gives (``ok`` readable, or the errno's name: ``ENOENT`` means not even
visible), ``signal PID`` whether it could signal that process, ``reach HOST PORT`` whether
it could connect there, ``keepers CMD…`` runs a command and then lists the keeper processes
the agent can see (its PID namespace's).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from browserbay import procfs
from browserbay_testing.bay import BAY, Result

BWRAP = shutil.which("bwrap")
#: The host's top-level system entries an agent may see, read-only: merged-/usr systems have
#: the others as symlinks into /usr, which the jail recreates as symlinks.
SYSTEM = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")


def python_paths() -> tuple[Path, ...]:
    """What the running ``bay`` needs to start: the venv, the interpreter it was made from,
    and the source directories its editable installs (``_editable_impl_*.pth``) add."""
    paths = [Path(sys.prefix), Path(sys.base_prefix)]
    site = Path(BAY).parent.parent / "lib" / "python{}.{}".format(*sys.version_info[:2])
    for pth in sorted((site / "site-packages").glob("_editable_impl_*.pth")):
        paths += [Path(line) for line in pth.read_text().splitlines() if line.startswith("/")]
    usr = Path("/usr")
    return tuple(p for p in dict.fromkeys(paths) if p.exists() and usr not in (p, *p.parents))


def _system() -> list[str]:
    args: list[str] = []
    for name in SYSTEM:
        host = Path("/") / name
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), str(host)]
        elif host.is_dir():
            args += ["--ro-bind", str(host), str(host)]
    return args


@dataclass(frozen=True)
class Jail:
    """The sandbox of one agent: ``share`` is the only host directory it sees, read-write."""

    share: Path
    readonly: tuple[Path, ...] = field(default_factory=python_paths)
    network: bool = False
    """Share the host's network namespace (its loopback ports): the jail of a CDP script."""
    pids: bool = False
    """Share the host's PID namespace: only the tests' control (the keeper is then in sight)."""

    def argv(self, command: Sequence[str], env: Mapping[str, str]) -> list[str]:
        """The bwrap command line that runs ``command`` with exactly the environment ``env``
        (plus ``PATH`` and ``HOME``, the share, unless given)."""
        assert BWRAP is not None, "bwrap is not installed (scripts/setup.sh installs it)"
        share = str(self.share)
        args = [BWRAP, "--unshare-user", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
        args += [*([] if self.pids else ["--unshare-pid"])]
        args += [*([] if self.network else ["--unshare-net"])]
        args += ["--cap-drop", "ALL", "--die-with-parent", "--new-session", "--clearenv"]
        args += [*_system(), "--proc", "/proc", "--dev", "/dev"]
        for path in self.readonly:
            args += ["--ro-bind", str(path), str(path)]
        args += ["--bind", share, share, "--remount-ro", "/", "--chdir", share]
        full = {"PATH": "/usr/bin:/bin", "HOME": share, **env}
        for key, value in full.items():
            args += ["--setenv", key, value]
        return [*args, "--", *command]

    def run(self, command: Sequence[str], env: Mapping[str, str], timeout: float = 90) -> Result:
        p = subprocess.run(
            self.argv(command, env),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        return Result(p.returncode, p.stdout, p.stderr)

    def bay(self, *args: str, env: Mapping[str, str], timeout: float = 90) -> Result:
        """The real ``bay`` CLI (``--json``) inside the jail."""
        return self.run([BAY, *args, "--json"], env, timeout)

    def look(self, *paths: Path | str) -> dict[str, str]:
        """What each path gives inside the jail: ``ok`` (read, or connected to for a
        socket), or the errno's name (``ENOENT``: not even visible)."""
        r = self.run([sys.executable, "-m", __name__, "look", *map(str, paths)], {})
        assert r.code == 0, r
        seen: dict[str, str] = json.loads(r.stdout)
        return seen

    def signal(self, pid: int) -> str:
        """Whether the jail can signal ``pid`` (signal 0: nothing is sent): ``ok``, or the
        errno's name (``ESRCH``: no such process in its sight)."""
        r = self.run([sys.executable, "-m", __name__, "signal", str(pid)], {})
        assert r.code == 0, r
        return r.stdout.strip()

    def reach(self, host: str, port: int) -> str:
        """Whether the jail can open a TCP connection to ``host:port``: ``ok``, or the
        errno's name (``ECONNREFUSED`` in a jail of its own network: its loopback is not the
        host's)."""
        r = self.run([sys.executable, "-m", __name__, "reach", host, str(port)], {})
        assert r.code == 0, r
        return r.stdout.strip()

    def keepers(self, before: Sequence[str], env: Mapping[str, str]) -> tuple[Result, list[int]]:
        """``bay <before>`` inside the jail, then the keeper processes visible in it at once
        after (a keeper it spawned lives on in the jail's PID namespace until the jail ends)."""
        r = self.run([sys.executable, "-m", __name__, "keepers", BAY, *before, "--json"], env)
        lines = r.stdout.strip().splitlines()
        assert lines, r
        pids: list[int] = json.loads(lines[-1])
        return Result(r.code, "\n".join(lines[:-1]), r.stderr), pids


def missing() -> str | None:
    """Why no jail can run here (no bwrap, or no namespaces for it), or None."""
    if BWRAP is None:
        return "bwrap is not installed (scripts/setup.sh installs Debian's bubblewrap)"
    p = subprocess.run(
        [BWRAP, "--unshare-user", "--unshare-pid", "--ro-bind", "/", "/", "--", "/bin/true"],
        capture_output=True,
        text=True,
    )
    if p.returncode != 0:
        return f"bwrap cannot make its namespaces here: {p.stderr.strip()}"
    return None


# -- the inside half ---------------------------------------------------------------------------


def _look(path: str) -> str:
    try:
        st = os.stat(path)
        if stat.S_ISSOCK(st.st_mode):
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(path)
        elif stat.S_ISDIR(st.st_mode):
            os.listdir(path)
        else:
            with open(path, "rb") as f:
                f.read(1)
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, str(exc))
    return "ok"


def _keepers() -> list[int]:
    found = []
    for pid in procfs.pids():
        try:
            argv = procfs.argv(pid)
        except OSError:
            continue
        if "browserbay.keeper" in argv:
            found.append(pid)
    return found


def main(argv: Sequence[str]) -> int:
    what, *rest = argv
    if what == "look":
        print(json.dumps({path: _look(path) for path in rest}))
        return 0
    if what == "signal":
        try:
            os.kill(int(rest[0]), 0)
        except OSError as exc:
            print(errno.errorcode.get(exc.errno or 0, str(exc)))
        else:
            print("ok")
        return 0
    if what == "reach":
        try:
            socket.create_connection((rest[0], int(rest[1])), timeout=5).close()
        except OSError as exc:
            print(errno.errorcode.get(exc.errno or 0, type(exc).__name__))
        else:
            print("ok")
        return 0
    if what == "keepers":
        p = subprocess.run(rest, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        sys.stderr.write(p.stderr)
        print(p.stdout.strip())
        print(json.dumps(_keepers()))
        return p.returncode
    raise SystemExit(f"unknown: {what}")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
