"""A non-loopback address of this machine, made for a test: what a live view bound beyond
loopback (``BAY_LIVE_BIND``) is reached on, without a second machine."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator

import pytest


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=False)


@contextlib.contextmanager
def veth_address() -> Iterator[str]:
    """A veth pair (iproute2) with 198.51.100.N/32 (TEST-NET-2) on one end, removed
    afterwards. Skips the test only when ``ip`` is missing or the kernel refuses the link."""
    if shutil.which("ip") is None:
        pytest.skip("iproute2 is not installed (scripts/setup.sh installs it)")
    name = f"bblv{os.getpid() % 10000}"
    address = f"198.51.100.{10 + os.getpid() % 200}"
    made = _ip("link", "add", name, "type", "veth", "peer", "name", f"{name}p")
    if made.returncode != 0:
        pytest.skip(f"the kernel refused a veth link: {made.stderr.strip()}")
    try:
        for step in (("addr", "add", f"{address}/32", "dev", name), ("link", "set", name, "up")):
            done = _ip(*step)
            assert done.returncode == 0, done.stderr
        yield address
    finally:
        _ip("link", "del", name)
