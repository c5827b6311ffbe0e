"""A scripted server on a unix socket: the fake keepers the client tests talk to
(cli/tests/test_cli.py, test_native.py, test_native_fuzz.py), each with its own way of
answering, all with one way of starting and of ending — so that no client is left waiting
on a connection nobody serves, and no accepting thread outlives its test."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path


@contextlib.contextmanager
def unix_server(
    path: str | Path,
    serve: Callable[[socket.socket], None],
    *,
    backlog: int = 16,
    in_turn: bool = False,
) -> Iterator[socket.socket]:
    """A listener bound at ``path`` until the block ends; every connection it accepts is
    given to ``serve`` — in a thread of its own, or (``in_turn``) one after the other in the
    accepting thread. Yields the listener (``serve`` may close it: a keeper that stops).
    At the end the listener and every connection are shut down (a client blocked in a read
    sees the end) and the accepting thread is joined."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(backlog)
    conns: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conns.append(conn)
            if in_turn:
                serve(conn)
            else:
                threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener
    finally:
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        for c in conns:
            with contextlib.suppress(OSError):
                c.shutdown(socket.SHUT_RDWR)
        thread.join(5)
