"""Session sockets on the real keeper: ``bay session grant`` makes a 0600 unix socket bound
to one session, served with the grant's channel; ``bay session revoke`` (or the grant's
``--ttl``) stops it at once, open connections included; grants survive a keeper restart and
keep the keeper from idling out; every bad grant is a typed refusal that changes nothing.

Clients here talk to a session socket with the thin client's :class:`Connection` over a plain
``socket.socket(AF_UNIX)``: exactly the frames any program on that socket can send."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browserbay import procfs, protocol
from browserbay.client import Connection
from browserbay.paths import bay_paths
from browserbay_testing import Bay, assert_refused
from browserbay_testing.asuser import AsUser
from browserbay_testing.bay import wait_for, wait_for_no_keeper


def agent_dir(bay: Bay, name: str, mode: int = 0o700) -> Path:
    """A directory of the keeper's user for a grant's socket (short: AF_UNIX's limit)."""
    d = bay.home / name
    d.mkdir(mode=mode)
    os.chmod(d, mode)
    return d


def dial(path: Path) -> Connection:
    """A connection to a session socket, the hello exchanged."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(path))
    conn = Connection(sock)
    conn.send(protocol.hello("client"))
    conn.keeper = conn.read(time.monotonic() + 10)["hello"]
    return conn


def ask(conn: Connection, session: str, verb: str, **args: Any) -> dict[str, Any]:
    return conn.request(verb, args, {"id": session, "origin": "env"}, 30.0)


def grants_rows(bay: Bay) -> dict[str, tuple[Any, ...]]:
    """The registry's grants table, read directly (session -> socket, expires, revoked)."""
    path = bay_paths({"BAY_HOME": str(bay.home)}).registry
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT session, socket, expires_at, revoked_at FROM grants").fetchall()
    return {r[0]: r[1:] for r in rows}


def listed(bay: Bay) -> dict[str, dict[str, Any]]:
    return {g["session"]: g for g in bay.ok("session", "list", session=None)["grants"]}


@pytest.fixture
def granted(bay: Bay, session_name: str) -> Iterator[tuple[str, Path]]:
    """A live grant of this test's own (revoked after, if it still lives)."""
    sid = f"g-{abs(hash(session_name)) % 10**8}"
    path = agent_dir(bay, sid) / "bay.sock"
    bay.ok("session", "grant", sid, "--socket", str(path), session=None)
    yield sid, path
    if sid in listed(bay):
        bay.ok("session", "revoke", sid, session=None)


def test_a_granted_socket_serves_its_session_and_drives_its_own_tab(
    bay: Bay, demo: str, granted: tuple[str, Path]
) -> None:
    sid, path = granted
    st = path.lstat()
    assert stat.S_ISSOCK(st.st_mode)
    assert stat.S_IMODE(st.st_mode) == 0o600
    assert st.st_uid == os.getuid()
    conn = dial(path)
    try:
        assert conn.keeper["channel"] == "session"
        assert conn.keeper["session"] == sid
        opened = ask(conn, sid, "open", url=f"{demo}/")
        assert opened["ok"], opened
        assert ask(conn, sid, "get", what="url")["data"]["value"].startswith(demo)
    finally:
        conn.close()
    # The owner sees the same session's tab: it is that session, nothing else.
    tabs = bay.ok("tab", "list", session=sid)["tabs"]
    assert [t["url"].startswith(demo) for t in tabs] == [True]
    assert listed(bay)[sid]["socket"] == str(path)
    bay.ok("close", session=sid)


def test_the_owners_keeper_status_lists_the_session_sockets(
    bay: Bay, granted: tuple[str, Path]
) -> None:
    sid, path = granted
    status = bay.ok("keeper", "status", session=None)
    rows = {g["session"]: g for g in status["grants"]}
    assert rows[sid]["socket"] == str(path)
    text = bay("keeper", "status", session=None, json_=False).stdout
    assert f"session sockets {len(rows)}" in text
    bay.ok("session", "revoke", sid, session=None)
    after = bay.ok("keeper", "status", session=None)["grants"]
    assert sid not in {g["session"] for g in after}


def test_bay_with_bay_socket_is_the_grants_session(
    bay: Bay, demo: str, granted: tuple[str, Path]
) -> None:
    """The real CLI on the socket: no session named, it is the grant's."""
    sid, path = granted
    on_socket = {"BAY_SOCKET": str(path)}
    opened = bay("open", f"{demo}/", session=None, env=on_socket)
    assert opened.code == 0, opened
    assert opened.frame["session"]["id"] == sid
    assert bay.ok("tab", "list", session=sid)["tabs"][0]["url"].startswith(demo)
    bay.ok("close", session=None, env=on_socket)


def test_the_owners_socket_still_says_it_is_the_owners(bay: Bay) -> None:
    conn = dial(bay_paths({"BAY_HOME": str(bay.home)}).socket)
    try:
        assert conn.keeper["channel"] == "owner"
        assert conn.keeper["session"] is None
    finally:
        conn.close()


def test_a_session_socket_client_cannot_grant_or_revoke(
    bay: Bay, granted: tuple[str, Path]
) -> None:
    """The attack: an agent on its socket grants itself a second one (for another session),
    or revokes another agent's. Before the grants service the verb was a stub (usage)."""
    sid, path = granted
    other = agent_dir(bay, "stolen") / "x.sock"
    conn = dial(path)
    try:
        made = ask(conn, sid, "session", action="grant", id=sid + "x", socket=str(other))
        assert_refused(made, "owner_only")
        cut = ask(conn, sid, "session", action="revoke", id=sid)
        assert_refused(cut, "owner_only")
        assert not other.exists()
        mine = ask(conn, sid, "session", action="list")["data"]["grants"]
        assert [g["session"] for g in mine] == [sid]  # its own grant only
    finally:
        conn.close()
    assert sid in listed(bay)
    assert sid + "x" not in listed(bay)


def test_list_on_a_session_socket_shows_only_its_own_grant(
    bay: Bay, granted: tuple[str, Path]
) -> None:
    sid, path = granted
    other = agent_dir(bay, "neighbour") / "n.sock"
    bay.ok("session", "grant", "neighbour", "--socket", str(other), session=None)
    try:
        assert {sid, "neighbour"} <= set(listed(bay))  # the owner sees every grant
        conn = dial(path)
        try:
            mine = ask(conn, sid, "session", action="list")["data"]["grants"]
        finally:
            conn.close()
        assert [g["session"] for g in mine] == [sid]
    finally:
        bay.ok("session", "revoke", "neighbour", session=None)


def test_revoke_stops_the_socket_at_once_and_cuts_an_open_connection(
    bay: Bay, demo: str, granted: tuple[str, Path]
) -> None:
    sid, path = granted
    conn = dial(path)
    idle = dial(path)
    try:
        assert ask(conn, sid, "open", url=f"{demo}/")["ok"]
        # A verb in flight when the revoke comes gets no answer: the connection is cut.
        conn.send({"id": "slow", "verb": "wait", "args": {"what": "20000"}, "session": {"id": sid}})
        time.sleep(0.3)
        said = bay.ok("session", "revoke", sid, session=None)
        assert said["revoked"] == sid
        started = time.monotonic()
        with pytest.raises((ConnectionError, OSError)):
            conn.read(time.monotonic() + 5)
        assert time.monotonic() - started < 2
        # An open connection with nothing in flight answers nothing more either.
        with pytest.raises((ConnectionError, OSError)):
            ask(idle, sid, "status")
    finally:
        conn.close()
        idle.close()
    assert not path.exists()  # the file went: a new client finds nothing there
    with pytest.raises(FileNotFoundError):
        dial(path)
    gone = bay("status", session=None, env={"BAY_SOCKET": str(path)})
    assert_refused(gone, "session_socket_gone")
    assert sid not in listed(bay)
    assert grants_rows(bay)[sid][2] is not None  # revoked_at recorded
    # Its leases ended as for an idle stop: no browser, its tab kept for restore.
    status = bay.ok("status", session=sid)
    assert all(lease["browser"] is None for lease in status["leases"]), status
    assert_refused(bay("session", "revoke", sid, session=None), "grant_refused")


def test_a_grant_ends_by_itself_when_its_ttl_runs_out(bay: Bay) -> None:
    path = agent_dir(bay, "ttl") / "t.sock"
    bay.ok("session", "grant", "ttl-1", "--socket", str(path), "--ttl", "1.5", session=None)
    conn = dial(path)
    try:
        assert ask(conn, "ttl-1", "status")["ok"]
        assert listed(bay)["ttl-1"]["expires"] is not None
        wait_for(lambda: not path.exists(), 10, "the expired socket to go")
        with pytest.raises((ConnectionError, OSError)):
            ask(conn, "ttl-1", "status")
    finally:
        conn.close()
    assert "ttl-1" not in listed(bay)
    _socket, expires, revoked = grants_rows(bay)["ttl-1"]
    assert revoked is not None
    assert revoked <= expires + 0.5


def test_a_revoked_grant_can_be_granted_again(bay: Bay) -> None:
    path = agent_dir(bay, "again") / "a.sock"
    for _ in range(2):
        bay.ok("session", "grant", "again-1", "--socket", str(path), session=None)
        assert dial(path).keeper["session"] == "again-1"
        bay.ok("session", "revoke", "again-1", session=None)


def test_grant_profiles_are_stored_as_ids(bay: Bay) -> None:
    made = bay.ok("new", "grantme", session=None)
    pid = made["id"]
    path = agent_dir(bay, "prof") / "p.sock"
    # --profile repeated: each reaches the grant (a label, then the same profile by id).
    got = bay.ok(
        "session", "grant", "prof-1", "--socket", str(path), "--profile", "grantme",
        "--profile", pid, session=None,
    )  # fmt: skip
    try:
        assert got["profiles"] == [pid]
        assert listed(bay)["prof-1"]["profiles"] == [pid]
    finally:
        bay.ok("session", "revoke", "prof-1", session=None)
        bay.ok("forget", "grantme", session=None)


# -- bad grants: a typed refusal each, nothing changed --------------------------------------


def _refused_and_unchanged(bay: Bay, code: str, *argv: str) -> dict[str, Any]:
    before = listed(bay)
    frame = assert_refused(bay("session", "grant", *argv, session=None), code)
    assert listed(bay) == before
    return frame


def test_a_second_grant_for_a_live_session_is_refused(bay: Bay, granted: tuple[str, Path]) -> None:
    sid, path = granted
    other = agent_dir(bay, "second") / "s.sock"
    frame = _refused_and_unchanged(bay, "grant_refused", sid, "--socket", str(other))
    assert "bay session revoke" in frame["way_out"]
    assert not other.exists()
    assert path.exists()


def test_a_path_where_something_is_is_refused_and_left_alone(bay: Bay) -> None:
    d = agent_dir(bay, "taken")
    mine = d / "notes.txt"
    mine.write_text("the user's")
    _refused_and_unchanged(bay, "grant_refused", "taken-1", "--socket", str(mine))
    assert mine.read_text() == "the user's"
    # The home's own socket too: never replaced by a grant.
    own = bay_paths({"BAY_HOME": str(bay.home)}).socket
    _refused_and_unchanged(bay, "grant_refused", "taken-2", "--socket", str(own))
    assert dial(own).keeper["channel"] == "owner"


def test_a_directory_another_user_owns_is_refused(bay: Bay) -> None:
    d = agent_dir(bay, "theirs")
    os.chown(d, 65534, 65534)  # nobody's
    frame = _refused_and_unchanged(bay, "grant_refused", "theirs-1", "--socket", f"{d}/s.sock")
    assert "uid 65534" in frame["message"]
    assert os.listdir(d) == []


@pytest.mark.parametrize("mode", [0o770, 0o707, 0o1777])
def test_a_directory_group_or_others_can_write_is_refused(bay: Bay, mode: int) -> None:
    d = agent_dir(bay, f"loose-{mode:o}", mode)
    _refused_and_unchanged(bay, "grant_refused", "loose-1", "--socket", f"{d}/s.sock")
    assert os.listdir(d) == []


def test_a_directory_under_one_others_can_write_is_refused(bay: Bay) -> None:
    """Another user who may write the directory above could rename ours away and put theirs
    in its place; a sticky one (as /tmp) lets nobody rename what is not theirs."""
    above = agent_dir(bay, "open", 0o777)
    (above / "mine").mkdir(mode=0o700)
    frame = _refused_and_unchanged(
        bay, "grant_refused", "open-1", "--socket", f"{above}/mine/s.sock"
    )
    assert "above it" in frame["message"]
    assert os.listdir(above / "mine") == []
    os.chmod(above, 0o1777)
    bay.ok("session", "grant", "open-2", "--socket", f"{above}/mine/s.sock", session=None)
    bay.ok("session", "revoke", "open-2", session=None)


def test_a_directory_others_may_only_read_is_fine(bay: Bay) -> None:
    """Reading the directory lets nobody in: the socket itself is 0600."""
    path = agent_dir(bay, "readable", 0o755) / "r.sock"
    bay.ok("session", "grant", "readable-1", "--socket", str(path), session=None)
    assert stat.S_IMODE(path.lstat().st_mode) == 0o600
    bay.ok("session", "revoke", "readable-1", session=None)


def test_a_symlinked_directory_is_refused(bay: Bay) -> None:
    real = agent_dir(bay, "real")
    link = bay.home / "link"
    link.symlink_to(real)
    frame = _refused_and_unchanged(bay, "grant_refused", "link-1", "--socket", f"{link}/s.sock")
    assert "symlink" in frame["message"]
    # A symlink higher up the path is refused too, naming the real path as the way out.
    (real / "sub").mkdir(mode=0o700)
    frame = _refused_and_unchanged(bay, "grant_refused", "link-2", "--socket", f"{link}/sub/s.sock")
    assert str(real / "sub" / "s.sock") in frame["way_out"]
    assert os.listdir(real / "sub") == []


def test_a_path_too_long_for_a_unix_socket_is_refused(bay: Bay) -> None:
    d = agent_dir(bay, "long")
    _refused_and_unchanged(bay, "grant_refused", "long-1", "--socket", f"{d}/{'s' * 120}.sock")


def test_a_missing_directory_is_refused(bay: Bay) -> None:
    _refused_and_unchanged(bay, "grant_refused", "gone-1", "--socket", f"{bay.home}/no/s.sock")
    assert not (bay.home / "no").exists()


def test_an_id_that_is_not_a_session_id_is_refused(bay: Bay) -> None:
    d = agent_dir(bay, "badid")
    _refused_and_unchanged(bay, "usage", "not a session!", "--socket", f"{d}/s.sock")
    assert os.listdir(d) == []


def test_a_profile_that_does_not_exist_is_refused(bay: Bay) -> None:
    d = agent_dir(bay, "noprof")
    frame = _refused_and_unchanged(
        bay, "grant_refused", "noprof-1", "--socket", f"{d}/s.sock", "--profile", "no-such"
    )
    assert "no-such" in frame["message"]
    assert os.listdir(d) == []


def test_grant_and_revoke_need_their_arguments(bay: Bay) -> None:
    assert_refused(bay("session", "grant", "x", session=None), "usage")  # no --socket
    assert_refused(bay("session", "grant", session=None), "usage")
    assert_refused(bay("session", "revoke", session=None), "usage")
    assert_refused(bay("session", "revoke", "never-granted", session=None), "grant_refused")


# -- grants outlive the keeper ---------------------------------------------------------------


def test_grants_survive_a_keeper_restart(fresh_bay: Bay) -> None:
    path = agent_dir(fresh_bay, "keep") / "k.sock"
    fresh_bay.ok("session", "grant", "keep-1", "--socket", str(path), session=None)
    fresh_bay.stop()
    assert not path.exists()  # a stopped keeper leaves no socket that nobody answers
    fresh_bay.ok("keeper", "start", session=None)
    wait_for(path.exists, 15, "the grant's socket to be made again")
    assert stat.S_IMODE(path.lstat().st_mode) == 0o600
    conn = dial(path)
    try:
        assert conn.keeper["session"] == "keep-1"
        assert ask(conn, "keep-1", "status")["ok"]
    finally:
        conn.close()


def test_a_grant_that_expired_while_no_keeper_ran_is_not_bound_again(fresh_bay: Bay) -> None:
    path = agent_dir(fresh_bay, "lapse") / "l.sock"
    fresh_bay.ok("session", "grant", "lapse-1", "--socket", str(path), "--ttl", "2", session=None)
    fresh_bay.ok("session", "grant", "lapse-2", "--socket", f"{path}.2", session=None)
    fresh_bay.stop()
    time.sleep(2.5)
    fresh_bay.ok("keeper", "start", session=None)
    wait_for(lambda: _answers(Path(f"{path}.2")), 15, "the live grant's socket")
    assert not path.exists()
    assert set(listed(fresh_bay)) == {"lapse-2"}
    _socket, expires, revoked = grants_rows(fresh_bay)["lapse-1"]
    assert revoked == expires  # ended at its expiry, recorded by the next keeper


def test_a_killed_keepers_stale_socket_is_bound_again(fresh_bay: Bay) -> None:
    path = agent_dir(fresh_bay, "stale") / "s.sock"
    fresh_bay.ok("session", "grant", "stale-1", "--socket", str(path), session=None)
    pid = fresh_bay.keeper_pid()
    os.kill(pid, signal.SIGKILL)
    wait_for_no_keeper(fresh_bay.home)
    assert stat.S_ISSOCK(path.lstat().st_mode)  # left behind, nobody listening
    fresh_bay.ok("keeper", "start", session=None)
    wait_for(lambda: _answers(path), 15, "the stale socket to be bound again")
    assert dial(path).keeper["session"] == "stale-1"


def _answers(path: Path) -> bool:
    try:
        dial(path).close()
    except OSError:
        return False
    return True


def test_the_keeper_does_not_idle_out_while_a_grant_lives(fresh_bay: Bay) -> None:
    fresh_bay.env.update(BAY_KEEPER_IDLE="1", BAY_TICK="0.2")
    path = agent_dir(fresh_bay, "idle") / "i.sock"
    fresh_bay.ok("session", "grant", "idle-1", "--socket", str(path), session=None)
    pid = fresh_bay.keeper_pid()
    time.sleep(3)  # idle many times over
    assert fresh_bay.keeper_pid() == pid
    assert path.exists()
    fresh_bay.ok("session", "revoke", "idle-1", session=None)
    wait_for(lambda: not procfs.alive(pid), 15, "the keeper to idle out")  # nothing keeps it


# -- who may connect ------------------------------------------------------------------------


def test_a_session_socket_is_served_64_connections_at_once(
    bay: Bay, granted: tuple[str, Path]
) -> None:
    """An agent that opens connection after connection holds its own socket's slots, not
    the owner's (whose socket has its own): the 65th waits until one of its 64 ends."""
    _sid, path = granted
    held = [dial(path) for _ in range(64)]
    try:
        waiting = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        waiting.connect(str(path))  # into the backlog
        extra = Connection(waiting)
        extra.send(protocol.hello("client"))
        with pytest.raises(TimeoutError):
            extra.read(time.monotonic() + 1.0)
        assert bay.ok("session", "list", session=None)  # the owner's socket answers
        held.pop().close()
        assert extra.read(time.monotonic() + 10)["hello"]["channel"] == "session"
        extra.close()
    finally:
        for conn in held:
            conn.close()


def _stall(conns: list[socket.socket], payload: bytes, seconds: float) -> None:
    """Push ``payload`` (a frame with no newline) into every connection for a while,
    without blocking: what the keeper reads of it it must hold until the frame ends."""
    for s in conns:
        s.setblocking(False)
    sent = [0] * len(conns)
    end = time.monotonic() + seconds
    while time.monotonic() < end and min(sent) < len(payload):
        moved = False
        for i, s in enumerate(conns):
            try:
                n = s.send(payload[sent[i] : sent[i] + (1 << 20)])
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                n = len(payload) - sent[i]
            sent[i] += n
            moved = moved or n > 0
        if not moved:
            time.sleep(0.05)


def test_an_agents_half_sent_frames_cannot_starve_the_owners_large_frames(
    fresh_bay: Bay,
) -> None:
    """The attack: an agent opens its socket's 64 connections and sends each 4 MB of a
    frame with no end, to hold the keeper's budget for partial frames. The owner's own large
    frame must still be read and answered at once: the session sockets share one budget,
    the owner's socket has its own. Before, one budget served every socket: the owner's
    frame waited until the agent's were cut at the frame timeout, and was cut itself."""
    fresh_bay.env.update(BAY_FRAME_TIMEOUT="30")
    path = agent_dir(fresh_bay, "flood") / "f.sock"
    fresh_bay.ok("session", "grant", "flood-1", "--socket", str(path), session=None)
    conns = [dial(path).sock for _ in range(64)]
    try:
        _stall(conns, b'{"id": "1", "verb": "status", "x": "' + b"a" * 4_000_000, 6.0)
        owner = dial(bay_paths({"BAY_HOME": str(fresh_bay.home)}).socket)
        try:
            started = time.monotonic()
            frame = {
                "id": "big",
                "verb": "session",
                "args": {"action": "list"},
                "session": {"id": "owner-1"},
                "pad": "b" * 2_000_000,
            }
            owner.send(frame)
            answer = owner.read(time.monotonic() + 25)
            assert answer["ok"], answer
            assert time.monotonic() - started < 5
        finally:
            owner.close()
    finally:
        for s in conns:
            s.close()


def test_a_peer_of_another_uid_is_hung_up_on(nobody: AsUser) -> None:
    """Another user cannot even connect (the socket is 0600, in a directory only the
    keeper's user can write); root can, and the keeper's SO_PEERCRED check hangs up on it."""
    d = nobody.home / "agent"
    d.mkdir(mode=0o700)
    os.chown(d, nobody.uid, nobody.gid)
    path = d / "n.sock"
    made = nobody("session", "grant", "nb-1", "--socket", str(path))
    assert made.code == 0, made
    assert path.lstat().st_uid == nobody.uid
    with pytest.raises((ConnectionError, OSError)):
        dial(path)  # we are root: through the file mode, not past the peer check
