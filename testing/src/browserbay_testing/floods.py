"""Floods a keeper must bound: its open file descriptors, counted from ``/proc``, and 200
silent connections to one of its loopback WebSocket listeners."""

from __future__ import annotations

import os
import socket
import time


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def idle_flood(port: int, count: int) -> list[socket.socket]:
    """``count`` TCP connections to a loopback port that never send a byte."""
    conns = []
    for _ in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        conns.append(s)
    return conns


def assert_preauth_bounded(pid: int, port: int) -> None:
    """200 silent connections to a loopback WebSocket listener of the keeper: it holds at
    most MAX_PREAUTH of them, and closes those after PREAUTH_TIMEOUT."""
    from browserbay import wsguard

    base = open_fds(pid)
    conns = idle_flood(port, 200)
    try:
        time.sleep(1.5)
        held = open_fds(pid) - base
        assert held <= wsguard.MAX_PREAUTH + 8, f"the keeper holds {held} silent connections"
        time.sleep(wsguard.PREAUTH_TIMEOUT + 1.5)
        assert open_fds(pid) - base <= 8, "silent connections outlived the handshake timeout"
    finally:
        for s in conns:
            s.close()
