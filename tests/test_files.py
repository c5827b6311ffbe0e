"""Files in and out through the connection (browserbay.transfer, keeper/files.py): the
caller's client reads and writes the caller's files; the keeper never opens a path the
caller names. On real pages served here, in real Chromium, through the real keeper and CLI,
on the owner's channel and on a session socket."""

from __future__ import annotations

import base64
import os
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from browserbay import protocol
from browserbay.client import Connection
from browserbay.paths import bay_paths
from browserbay_testing import Bay, assert_refused


def dial(path: Path) -> Connection:
    """A raw connection (the hello exchanged): exactly the frames any program can send."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(path))
    conn = Connection(sock)
    conn.send(protocol.hello("client"))
    conn.keeper = conn.read(time.monotonic() + 10)["hello"]
    return conn


def raw(conn: Connection, frame: dict[str, Any]) -> dict[str, Any]:
    conn.send(frame)
    return conn.read(time.monotonic() + 60)


def keeper_socket(bay: Bay) -> Path:
    return bay_paths({"BAY_HOME": str(bay.home)}).socket


@pytest.fixture
def out(tmp_path: Path) -> Path:
    d = tmp_path / "out"
    d.mkdir()
    return d


# -- the mechanism, with screenshot as its first user ---------------------------------------


def test_a_screenshot_to_a_path_is_written_by_the_client_not_the_keeper(
    bay: Bay, demo: str, out: Path
) -> None:
    s = "files-shot"
    bay.ok("open", f"{demo}/index.html", session=s)
    dest = out / "page.png"
    shot = bay.ok("screenshot", str(dest), session=s)
    assert shot["path"] == str(dest)
    assert "file" not in shot
    assert dest.read_bytes().startswith(b"\x89PNG")
    assert dest.stat().st_mode & 0o777 == 0o600
    assert shot["bytes"] == dest.stat().st_size
    # No temporary file is left beside it.
    assert sorted(p.name for p in out.iterdir()) == ["page.png"]
    # A raw frame naming a path: the keeper answers the bytes and writes nothing there.
    elsewhere = out / "keeper-would-write-here.png"
    conn = dial(keeper_socket(bay))
    try:
        frame = {
            "id": "1",
            "verb": "screenshot",
            "args": {"path": str(elsewhere)},
            "session": {"id": s, "origin": "env"},
            "timeout": 30,
        }
        answer = raw(conn, frame)
        assert answer["ok"], answer
        offer = answer["data"]["file"]
        assert not elsewhere.exists()
        got, offset = b"", 0
        while True:
            part = raw(conn, {"id": "g", "op": "get", "handle": offer["handle"], "offset": offset})
            assert part["ok"], part
            got += base64.b64decode(part["data"]["data"])
            offset = len(got)
            if part["data"]["eof"]:
                break
        assert got.startswith(b"\x89PNG")
        assert len(got) == offer["size"]
        # Fetched: the offer is gone.
        gone = raw(conn, {"id": "g2", "op": "get", "handle": offer["handle"], "offset": 0})
        assert_refused(gone, "bad_frame")
    finally:
        conn.close()
    assert not elsewhere.exists()


def test_a_screenshot_replaces_a_symlink_and_never_writes_through_it(
    bay: Bay, demo: str, out: Path
) -> None:
    s = "files-link"
    bay.ok("open", f"{demo}/index.html", session=s)
    victim = out / "victim.txt"
    victim.write_text("precious")
    link = out / "shot.png"
    link.symlink_to(victim)
    bay.ok("screenshot", str(link), session=s)
    assert victim.read_text() == "precious"
    assert not link.is_symlink()
    assert link.read_bytes().startswith(b"\x89PNG")


def test_a_screenshot_into_a_directory_takes_the_keepers_name_for_it(
    bay: Bay, demo: str, out: Path
) -> None:
    s = "files-dir"
    bay.ok("open", f"{demo}/index.html", session=s)
    shot = bay.ok("screenshot", str(out), session=s)
    path = Path(shot["path"])
    assert path.parent == out
    assert path.suffix == ".png"
    assert path.read_bytes().startswith(b"\x89PNG")


def test_a_path_the_client_cannot_write_is_refused_before_anything_runs(
    bay: Bay, demo: str, out: Path
) -> None:
    s = "files-unwritable"
    bay.ok("open", f"{demo}/index.html", session=s)
    r = bay("screenshot", str(out / "no" / "such" / "dir" / "x.png"), session=s)
    frame = assert_refused(r, "file_unwritable")
    assert "No such file or directory" in frame["data"]["reason"]
    assert not (out / "no").exists()


def test_a_screenshot_on_a_session_socket_lands_at_the_agents_path(
    bay: Bay, demo: str, out: Path
) -> None:
    """The first user of the mechanism on a session socket: once owner-only (the keeper wrote
    the file with the owner's rights), now the agent's own client writes it."""
    sock_dir = bay.home / "sf"
    sock_dir.mkdir(mode=0o700)
    sock = sock_dir / "a.sock"
    bay.ok("session", "grant", "files-agent", "--socket", str(sock), session=None)
    try:
        env = {"BAY_SOCKET": str(sock)}
        assert bay("open", f"{demo}/index.html", session=None, env=env).frame["ok"]
        dest = out / "agent.png"
        r = bay("screenshot", str(dest), session=None, env=env)
        assert r.code == 0, r
        assert r.frame["session"]["id"] == "files-agent"
        assert dest.read_bytes().startswith(b"\x89PNG")
        assert dest.stat().st_mode & 0o777 == 0o600
    finally:
        bay.ok("session", "revoke", "files-agent", session=None)


def test_the_transfers_directory_is_empty_after_each_command(
    bay: Bay, demo: str, out: Path
) -> None:
    s = "files-clean"
    bay.ok("open", f"{demo}/index.html", session=s)
    bay.ok("screenshot", str(out / "a.png"), session=s)
    staged = bay_paths({"BAY_HOME": str(bay.home)}).runtime / "transfers"
    deadline = time.monotonic() + 5
    while staged.exists() and any(staged.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not staged.exists() or list(staged.iterdir()) == []
    assert os.path.exists(out / "a.png")
