"""Helpers of the provider-key end-to-end tests: the ``keyed`` test provider's keeper, the
key views, and reading a process tree's ``/proc`` files (where a key must not be)."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from browserbay import procfs
from browserbay_testing.bay import BAY, Bay, wait_for_no_keeper

VENDOR_ENV = "KEYED_VENDOR_API_KEY"


def new_key() -> str:
    return "kd_" + secrets.token_hex(12)


def keyed_bay(home: Path, **env: str) -> Bay:
    """A Bay with the keyed test provider, whose keychain is unreachable unless a test hands
    it a private Secret Service: the user's own store is then the encrypted file."""
    base = {
        "BAY_PLUGIN_MODULES": "recorder,keyed",
        "BAY_DEFAULT_PROVIDER": "keyed",
        "BAY_KEYED_CALLS": str(home / "calls.txt"),
        "DBUS_SESSION_BUS_ADDRESS": f"unix:path={home}/no-bus",
    }
    return Bay(home, **{**base, **env})


@contextlib.contextmanager
def private_home() -> Iterator[Path]:
    """A private BAY_HOME; its keeper is stopped after, and the home removed once it has
    exited."""
    path = Path(tempfile.mkdtemp(prefix="bay-k-", dir="/tmp"))
    yield path
    stop = subprocess.run(
        [BAY, "keeper", "stop", "--json"],
        env={**os.environ, "BAY_HOME": str(path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert stop.returncode == 0, stop
    wait_for_no_keeper(path)  # it writes its last lines as it exits: then remove its home
    shutil.rmtree(path, ignore_errors=True)


def view_keys(b: Bay, integration: str = "keyed") -> dict[str, Any]:
    (row,) = b.ok("keys", "list", integration)["integrations"]
    assert row["id"] == integration
    return dict(row)


def set_key(b: Bay, integration: str, field: str, value: str) -> dict[str, Any]:
    return dict(b.ok("keys", "set", integration, field, stdin=value + "\n"))


def children(pid: int) -> dict[int, int]:
    """Every descendant of ``pid`` -> its parent."""
    stats = (procfs.stat(p) for p in procfs.tree(pid)[1:])
    return {st.pid: st.ppid for st in stats if st is not None}


def proc_file(pid: int, name: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/{name}").read_bytes()
    except OSError:
        return b""


def in_tree(pid: int, root: int, parents: dict[int, int]) -> bool:
    while pid in parents:
        if pid == root:
            return True
        pid = parents[pid]
    return pid == root
