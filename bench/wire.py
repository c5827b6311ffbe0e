"""One raw connection to a keeper socket, for benchmarks that time the wire itself.

It speaks the wire protocol (docs/protocol.md) with nothing of the client's on top, so that it
also talks to a keeper of another checkout (bench/keeper_compare.py) and so that what is timed
is the keeper's answer, not the client library.
"""

from __future__ import annotations

import contextlib
import json
import socket
from typing import Any


class Line:
    """One connection to a keeper socket, the hello exchanged; requests go as ``session``."""

    def __init__(self, path: str, session: str, *, name: str = "keeper"):
        self.name, self.session = name, session
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.reader = self.sock.makefile("rb")
        self.sock.sendall(b'{"hello": {"role": "client", "protocol": 1}}\n')
        json.loads(self.reader.readline())
        self.n = 0

    def request(self, verb: str, args: dict[str, Any]) -> dict[str, Any]:
        """Send one verb and read up to its answer (progress lines carry no id of ours)."""
        self.n += 1
        frame = {
            "id": self.n,
            "verb": verb,
            "args": args,
            "session": {"id": self.session, "origin": "env"},
            "timeout": 30,
        }
        self.sock.sendall(json.dumps(frame).encode() + b"\n")
        while True:
            answer: dict[str, Any] = json.loads(self.reader.readline())
            if answer.get("id") == self.n:
                break
        if not answer.get("ok"):
            raise RuntimeError(f"{self.name}: {verb}: {answer.get('code')} {answer.get('message')}")
        return answer

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.reader.close()
            self.sock.close()
