"""A socket planted by another local user: the attacker's fake keeper and the victim's
``bay fill``, for the tests of the client's socket trust (``tests/test_socket_trust.py``)
and the hostile campaign's planted-socket family (``campaigns/hostile.py``).

Another uid (``nobody``) pre-creates the directory a socket lives in and listens there as a
fake keeper that records every byte it receives (:func:`fake_keeper`); the victim (root, or
a second unprivileged user) types a password with ``bay fill @e1 -`` (:func:`fill`). Root
only: acting as two users needs it.
"""

from __future__ import annotations

import json
import os
import pwd
import select
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from browserbay import protocol
from browserbay.sockpath import runtime_dir, socket_for
from browserbay_testing.bay import BAY, Result

REPO = Path(__file__).resolve().parents[3]

SECRET = "hunter2-correct-horse"
VICTIM = "bay-victim"
#: The thin client is standard library only, so a user who cannot read root's venv runs it
#: with the system Python straight from the source tree.
SYSTEM_PYTHON = "/usr/bin/python3"
SOURCE_PATH = f"{REPO}/core/src:{REPO}/cli/src"


def ids(name: str) -> tuple[int, int]:
    try:
        row = pwd.getpwnam(name)
    except KeyError:
        if shutil.which("useradd") is None:
            pytest.skip("no useradd to create a second user")
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
            check=True,
            capture_output=True,
        )
        row = pwd.getpwnam(name)
    return row.pw_uid, row.pw_gid


ATTACKER = ids("nobody") if os.getuid() == 0 else (65534, 65534)


def become(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)


def fake_answer(frame: dict[str, Any], *, text: str, **hello: Any) -> dict[str, Any]:
    """What a fake keeper answers ``frame``: a compatible hello (updated with ``hello``) to a
    hello, ``whole`` to the CLI's warm road (an argv frame: the client then sends the verb's
    frame itself, browserbay_cli.hot) and ``ok`` with ``text`` to any verb. Shared by every
    fake keeper of the tests."""
    if "hello" in frame:
        reply = protocol.hello("keeper")
        reply["hello"].update(hello)
        return reply
    if "argv" in frame:
        return {"id": frame.get("id"), "whole": "a fake keeper"}
    return {
        "id": frame.get("id"),
        "ok": True,
        "verb": frame.get("verb"),
        "session": frame.get("session"),
        "profile": None,
        "data": {},
        "text": text,
    }


def serve_fake(sock_path: str, record: str) -> None:
    """The fake keeper: answers a compatible hello and ``ok`` to every verb, and writes down
    every byte it receives."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sock_path)
    os.chmod(sock_path, 0o777)
    listener.listen(8)
    with open(record, "ab") as out:
        while True:
            conn, _ = listener.accept()
            conn.settimeout(5)
            buf = b""
            try:
                while True:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    out.write(chunk)
                    out.flush()
                    buf += chunk
                    while b"\n" in buf:
                        line, buf = buf.split(b"\n", 1)
                        reply = fake_answer(json.loads(line), text="filled")
                        conn.sendall(protocol.encode(reply))
            except OSError:
                pass
            conn.close()


@contextmanager
def fake_keeper(directory: str, *, mode: int = 0o777, link: bool = False) -> Iterator[Path]:
    """As the attacker: create ``directory`` (or a symlink there to a directory of the
    attacker's) and serve a fake keeper in it. Yields the file the fake keeper records to."""
    real = directory + ".real" if link else directory
    record = Path(real + ".record")
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the attacker's process
        try:
            become(*ATTACKER)
            os.mkdir(real)
            os.chmod(real, mode)
            if link:
                os.symlink(real, directory)
            open(record, "wb").close()
            os.chmod(record, 0o644)
            os.write(ready_w, b"1")
            serve_fake(os.path.join(real, "keeper.sock"), str(record))
        finally:
            os._exit(0)
    os.close(ready_w)
    try:
        ready, _, _ = select.select([ready_r], [], [], 10)
        assert ready, "the fake keeper did not start"
        assert os.read(ready_r, 1) == b"1", "the fake keeper did not start"
        end = time.monotonic() + 10
        while not os.path.exists(os.path.join(real, "keeper.sock")):
            assert time.monotonic() < end
            time.sleep(0.01)
        assert os.lstat(real).st_uid == ATTACKER[0]
        yield record
    finally:
        os.close(ready_r)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        for p in (directory, real):
            if os.path.islink(p):
                os.unlink(p)
            else:
                shutil.rmtree(p, ignore_errors=True)
        record.unlink(missing_ok=True)


def victim_env(home: str | None, victim: tuple[int, int] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BAY_", "XDG_"))}
    env["BAY_SESSION"] = "victim"
    if home is not None:
        env["BAY_HOME"] = home
    if victim is not None:
        env["PYTHONPATH"] = SOURCE_PATH
        env["HOME"] = "/nonexistent"
    return env


def fill(env: dict[str, str], victim: tuple[int, int] | None) -> Result:
    """``bay fill @e1 - --json`` with the password on stdin, as the victim."""
    argv = [BAY]
    if victim is not None:  # as that user, with the system Python from the source tree
        argv = [SYSTEM_PYTHON, "-c", "from browserbay_cli.main import main; main()"]
    p = subprocess.run(
        [*argv, "fill", "@e1", "-", "--json"],
        input=SECRET + "\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd="/",
        user=None if victim is None else victim[0],
        group=None if victim is None else victim[1],
        extra_groups=None if victim is None else [],
    )
    return Result(p.returncode, p.stdout, p.stderr)


def socket_dir(env: dict[str, str], uid: int) -> str:
    """The directory of the socket the victim's client would use (a deep home's, under
    /tmp), named for the victim's uid."""
    path = socket_for(runtime_dir(env))
    if not path.startswith("/tmp/"):
        raise RuntimeError(f"the socket of {env.get('BAY_HOME')} is not under /tmp: {path}")
    # The path names the victim's uid, not ours.
    return os.path.dirname(path).replace(f"-{os.getuid()}", f"-{uid}", 1)
