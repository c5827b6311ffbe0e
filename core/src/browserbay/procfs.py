"""Process facts, read from ``/proc``: the one place the keeper, its providers, the CLI and
the tests ask whether a process runs, which processes descend from it, and what it costs.

Every reader blocks (it reads files): the keeper calls them in a worker thread. Standard
library only and cheap to import (no pathlib, dataclasses or typing), as the thin client's
``bay plugins`` path waits here for a keeper to exit.

*Alive* has one meaning everywhere: the process is there **and runs** — not a zombie
(exited, not yet reaped), not dead, not exiting (the kernel's ``PF_EXITING``, set as a killed
process starts to exit, before its pipes close and so before its driver can tell anyone).
A process of another user is alive like any other (``/proc/<pid>/stat`` is readable by all,
where ``kill(pid, 0)`` would say ``EPERM``). A caller that keeps a pid for long passes the
start time it read (:func:`start_time`), so a pid the kernel has since given to another
process is not taken for the one it knew.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

#: The kernel's "this task is exiting" flag (``/proc/<pid>/stat`` field 9).
PF_EXITING = 0x4

#: Task states of a process that has ended: zombie, dead (``x`` on older kernels).
_ENDED = ("Z", "X", "x")


class Stat:
    """The fields of ``/proc/<pid>/stat`` the callers read."""

    __slots__ = ("cpu_ticks", "flags", "pid", "ppid", "sid", "start", "state")

    def __init__(self, pid: int, fields: list[str]):
        # Fields after the ``(comm)`` (which may hold spaces and parentheses): state is 3.
        self.pid = pid
        self.state = fields[0]
        self.ppid = int(fields[1])
        self.sid = int(fields[3])
        self.flags = int(fields[6])
        self.cpu_ticks = int(fields[11]) + int(fields[12])
        """User and system CPU time (its threads included), in clock ticks."""
        self.start = int(fields[19])
        """Clock ticks after boot the process started at: with the pid, it names one process."""

    @property
    def runs(self) -> bool:
        """Neither ended (a zombie, dead) nor exiting."""
        return self.state not in _ENDED and not self.flags & PF_EXITING


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def stat(pid: int) -> Stat | None:
    """The process's stat line, or None when there is no such process (or it cannot be read)."""
    raw = _read(f"/proc/{pid}/stat")
    if not raw:
        return None
    try:
        return Stat(pid, raw.rsplit(b")", 1)[1].decode("ascii", "replace").split())
    except (IndexError, ValueError):
        return None


def pids() -> list[int]:
    """Every process's pid (a snapshot: any of them may be gone by the time it is read)."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    return [int(n) for n in names if n.isdigit()]


def alive(pid: int, started: int | None = None) -> bool:
    """The process runs (see the module's docstring); with ``started`` (its
    :func:`start_time`), it is also still the same process."""
    st = stat(pid)
    return st is not None and st.runs and (started is None or st.start == started)


def start_time(pid: int) -> int | None:
    """When the process started (clock ticks after boot), for :func:`alive`'s ``started``."""
    st = stat(pid)
    return None if st is None else st.start


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of the process (its threads included), in seconds; 0 when
    it is gone."""
    st = stat(pid)
    return 0.0 if st is None else st.cpu_ticks / os.sysconf("SC_CLK_TCK")


def in_session(sid: int) -> bool:
    """Some process of the session ``sid`` (a shell's: ``getsid``) still runs."""
    for pid in pids():
        st = stat(pid)
        if st is not None and st.sid == sid and st.runs:
            return True
    return False


def tree(pid: int) -> list[int]:
    """``pid`` (first) and every process descended from it (a browser's renderers, an
    app's helpers), as one snapshot of the process table."""
    children: dict[int, list[int]] = {}
    for p in pids():
        st = stat(p)
        if st is not None:
            children.setdefault(st.ppid, []).append(p)
    out, seen, todo = [], {pid}, [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for child in children.get(p, ()):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return out


def argv(pid: int) -> list[str]:
    """The process's command line, word by word (empty when it is gone, or a zombie).
    A program may rewrite it: Chromium's children show one space-separated string."""
    raw = _read(f"/proc/{pid}/cmdline")
    return [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a] if raw else []


def environ(pid: int) -> dict[str, str]:
    """The environment the process was *executed* with (a later ``unsetenv`` does not
    change it); empty when it cannot be read."""
    out = {}
    for item in (_read(f"/proc/{pid}/environ") or b"").split(b"\0"):
        key, eq, value = item.partition(b"=")
        if eq:
            out[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return out


def _kib(path: str, field: bytes) -> int | None:
    for line in (_read(path) or b"").splitlines():
        if line.startswith(field):
            return int(line.split()[1])
    return None


def rss_kib(pid: int) -> int | None:
    """The process's resident set (``VmRSS``), in KiB; None when it cannot be read."""
    return _kib(f"/proc/{pid}/status", b"VmRSS:")


def pss_kib(pids: Iterable[int]) -> int:
    """The proportional set size of these processes, summed, in KiB (shared pages counted
    once over all who share them); a process that cannot be read counts 0."""
    return sum(_kib(f"/proc/{p}/smaps_rollup", b"Pss:") or 0 for p in pids)


def tree_pss_kib(pid: int | None) -> int | None:
    """:func:`pss_kib` of a process and all its descendants (None without a pid)."""
    return None if pid is None else pss_kib(tree(pid))
