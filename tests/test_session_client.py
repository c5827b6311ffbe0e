"""Issue 17, items 1 (the client's side) and 8: a client on a session socket.

``BAY_SOCKET=<path>`` (or ``Client(socket=...)``): ``bay``, the Python API and the MCP server
connect there and never start, stop or replace a keeper; the session is the one the socket's
hello names unless the caller names another (sent as named: the keeper refuses it
``session_fixed``); a socket that is gone is ``session_socket_gone`` with the way out, never an
autostart; ``bay status`` says which channel the caller is on.

The first tests need no keeper: a fake one of our own uid on the session socket answers a
hello and records every frame, so what the client sends (and does not send) is seen byte for
byte. The rest run the real keeper, a real grant and the real clients.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from browserbay import errors, identity, procfs, protocol
from browserbay.api import Client, SessionInfo, SyncClient
from browserbay.keeper.channels import OWNER, Channel, Grant
from browserbay.paths import bay_paths
from browserbay_testing import BAY as BAY_CLI
from browserbay_testing import Bay, Result, assert_refused
from browserbay_testing.bay import wait_for
from browserbay_testing.bwrap import Jail, missing
from browserbay_testing.planted import fake_answer
from browserbay_testing.plugin import short_home


class FakeKeeper:
    """A listener of our own uid on ``path``: it answers a hello (a compatible one, updated
    with ``hello``) and ``ok`` to every verb, and keeps every frame it received."""

    def __init__(self, path: Path, **hello: Any):
        self.path = path
        self.hello = hello
        self.frames: list[dict[str, Any]] = []
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen(8)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                self._answer(conn)

    def _answer(self, conn: socket.socket) -> None:
        buf = b""
        while True:
            try:
                chunk = conn.recv(1 << 16)
            except OSError:
                return
            if not chunk:
                return
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                frame = json.loads(line)
                self.frames.append(frame)
                reply = fake_answer(frame, text="done", pid=os.getpid(), **self.hello)
                conn.sendall(protocol.encode(reply))

    def requests(self) -> list[dict[str, Any]]:
        """The frames after the hellos."""
        return [f for f in self.frames if "hello" not in f]

    def close(self) -> None:
        self.listener.close()
        self.path.unlink(missing_ok=True)


@contextmanager
def fake_keeper(**hello: Any) -> Iterator[FakeKeeper]:
    place = short_home("fk")
    fake = FakeKeeper(place / "agent.sock", **hello)
    try:
        yield fake
    finally:
        fake.close()
        shutil.rmtree(place, ignore_errors=True)


@pytest.fixture
def home() -> Iterator[Bay]:
    """A home whose keeper no test here should ever start: its tests look for one after."""
    b = Bay(short_home("sc"))
    yield b
    b.stop()
    shutil.rmtree(b.home, ignore_errors=True)


def no_keeper_started(b: Bay) -> None:
    """Neither the home's socket nor its keeper lock exists: nothing spawned a keeper."""
    paths = bay_paths({"BAY_HOME": str(b.home)})
    assert not paths.socket.exists(), "a keeper was started on the home's socket"
    assert not (paths.runtime / "keeper.lock").exists(), "a keeper was started"


SESSION_HELLO = {"channel": "session", "session": "granted-1"}


# -- identity: the socket's session takes the fallback's place, never a named one's -------


def test_the_socket_session_stands_in_for_the_fallback_never_for_a_named_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("BAY_SESSION", raising=False)
    fixed = identity.fixed_by(SESSION_HELLO)
    assert fixed == "granted-1"
    assert identity.resolve(fixed=fixed) == {"id": "granted-1", "origin": "socket"}
    assert identity.resolve(fixed=fixed, fallback="mcp-1", origin="api") == {
        "id": "granted-1",
        "origin": "socket",
    }
    assert identity.resolve("B", fixed=fixed) == {"id": "B", "origin": "flag"}
    monkeypatch.setenv("BAY_SESSION", "B")
    assert identity.resolve(fixed=fixed) == {"id": "B", "origin": "env"}
    assert identity.pick(identity.named(), fixed=fixed, origin="api") == {
        "id": "B",
        "origin": "api",
    }


def test_only_a_session_channels_hello_fixes_a_session() -> None:
    assert identity.fixed_by({"channel": "owner", "session": None}) is None
    assert identity.fixed_by({"channel": "owner", "session": "x"}) is None
    assert identity.fixed_by({}) is None  # a keeper from before channels
    assert identity.fixed_by({"channel": "session", "session": "bad id!"}) is None
    assert identity.fixed_by({"channel": "session", "session": 7}) is None


# -- the CLI and the Python API on a session socket (a fake keeper records what arrives) --


def test_bay_on_a_session_socket_acts_as_the_sockets_session(home: Bay) -> None:
    with fake_keeper(**SESSION_HELLO) as fake:
        r = home("get", "title", session=None, env={"BAY_SOCKET": str(fake.path)})
        assert r.code == 0, r
        (frame,) = fake.requests()
    assert frame["session"] == {"id": "granted-1", "origin": "socket"}
    assert frame["road"] == "cli"
    assert "actor" not in frame
    assert r.frame["session"] == {"id": "granted-1", "origin": "socket"}
    no_keeper_started(home)


def test_a_session_named_on_a_session_socket_is_sent_as_named_never_replaced(
    home: Bay,
) -> None:
    """``--session B`` / ``BAY_SESSION=B`` on a socket bound to another session: the client
    sends B (and says who asks) for the keeper to refuse ``session_fixed``; it never quietly
    acts as the socket's session instead."""
    with fake_keeper(**SESSION_HELLO) as fake:
        env = {"BAY_SOCKET": str(fake.path)}
        assert home("--session", "B", "get", "title", session=None, env=env).code == 0
        assert home("get", "title", session="B", env=env).code == 0
        flag, by_env = fake.requests()
    assert flag["session"] == {"id": "B", "origin": "flag"}
    assert flag["actor"] == {"id": "granted-1", "origin": "socket"}
    assert by_env["session"] == {"id": "B", "origin": "env"}
    assert "actor" not in by_env
    no_keeper_started(home)


def test_the_python_api_on_a_session_socket(home: Bay, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BAY_SESSION", raising=False)
    with fake_keeper(**SESSION_HELLO) as fake:
        with SyncClient(socket=fake.path) as c:
            assert c.socket == str(fake.path)
            assert c.status().session == SessionInfo("granted-1", "socket")
            assert c.session == {"id": "granted-1", "origin": "socket"}
        with SyncClient("B", socket=fake.path) as c:
            c.status()
        monkeypatch.setenv("BAY_SOCKET", str(fake.path))
        monkeypatch.setenv("BAY_HOME", str(home.home))

        async def main() -> None:
            async with Client() as bay:
                await bay.status()

        anyio.run(main)
        socket_session, named, from_env = fake.requests()
    assert socket_session["session"] == {"id": "granted-1", "origin": "socket"}
    assert named["session"] == {"id": "B", "origin": "api"}
    assert from_env["session"] == {"id": "granted-1", "origin": "socket"}
    assert {f["road"] for f in fake.requests()} == {"api"}
    no_keeper_started(home)


def test_a_session_socket_client_never_replaces_a_keeper_of_another_version(home: Bay) -> None:
    """On the home's socket a keeper of another version is asked to shut down and replaced;
    on a session socket that would let an agent stop every session's browsers. Refused,
    naming both versions; nothing but the hello is sent, and no keeper is started."""
    with fake_keeper(version="0.0.1-other", **SESSION_HELLO) as fake:
        r = home("status", session=None, env={"BAY_SOCKET": str(fake.path)})
        with pytest.raises(errors.BY_CODE["keeper_unavailable"]) as raised:
            SyncClient(socket=fake.path).status()
        frames = list(fake.frames)
    frame = assert_refused(r, "keeper_unavailable")
    assert "0.0.1-other" in frame["message"]
    assert "never replaces" in frame["message"]
    assert "the owner's channel" in frame["way_out"]
    assert "0.0.1-other" in str(raised.value)
    assert all("hello" in f for f in frames), frames  # no shutdown op, no verb
    no_keeper_started(home)


def test_keeper_lifecycle_verbs_on_a_session_socket_go_to_the_keeper(home: Bay) -> None:
    """``bay keeper stop/start/logs`` on a session socket are not the client's to run (it
    would read the owner's log, or start a keeper): each goes to the keeper as a verb, for it
    to refuse ``owner_only``; never the shutdown op."""
    with fake_keeper(**SESSION_HELLO) as fake:
        for action in ("stop", "start", "logs"):
            r = home("keeper", action, session=None, env={"BAY_SOCKET": str(fake.path)})
            assert r.code == 0, r
        sent = fake.requests()
    assert [(f.get("verb"), f.get("args")) for f in sent] == [
        ("keeper", {"action": "stop"}),
        ("keeper", {"action": "start"}),
        ("keeper", {"action": "logs"}),
    ]
    assert not any("op" in f for f in sent)
    no_keeper_started(home)


# -- a session socket that is gone ---------------------------------------------------------


def _gone(r: Result, path: Path) -> None:
    frame = assert_refused(r, "session_socket_gone")
    assert str(path) in frame["message"]
    assert "bay session grant" in frame["way_out"]
    assert "Traceback" not in r.stderr


def test_a_missing_session_socket_is_gone_and_starts_no_keeper(home: Bay, tmp_path: Path) -> None:
    path = tmp_path / "revoked.sock"
    env = {"BAY_SOCKET": str(path)}
    _gone(home("open", "about:blank", session=None, env=env), path)
    _gone(home("keeper", "stop", session=None, env=env), path)
    _gone(home("keeper", "start", session=None, env=env), path)
    r = home("open", "about:blank", session=None, env=env, json_=False)
    assert r.code == 1
    assert "session_socket_gone" in r.stderr
    assert "Traceback" not in r.stderr
    with pytest.raises(errors.BY_CODE["session_socket_gone"]):
        SyncClient(socket=path).open("about:blank")
    no_keeper_started(home)


def test_a_session_socket_nobody_listens_on_is_gone(home: Bay, tmp_path: Path) -> None:
    """The socket file is there but its listener is not (ECONNREFUSED): a keeper that died,
    or a revoked socket whose file stayed."""
    path = tmp_path / "dead.sock"
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))
    dead.close()
    _gone(home("status", session=None, env={"BAY_SOCKET": str(path)}), path)
    no_keeper_started(home)


# -- trust: the socket file and its listener, not the directory ------------------------------


def test_a_session_socket_that_is_a_symlink_is_refused_before_a_byte_is_sent(home: Bay) -> None:
    with fake_keeper(**SESSION_HELLO) as fake:
        link = fake.path.with_name("link.sock")
        link.symlink_to(fake.path)
        r = home("fill", "@e1", "-", session=None, env={"BAY_SOCKET": str(link)}, stdin="pw")
        assert fake.frames == []
    frame = assert_refused(r, "socket_untrusted")
    assert "symlink" in frame["message"]


def test_a_session_socket_in_a_directory_of_another_owner_is_used(home: Bay) -> None:
    """The rule for a session socket's directory: not the home's (this user's, 0700). The
    owner chose it at the grant, and in a sandbox the agent sees whatever the harness mounted
    it into; the socket file and its listener are checked instead."""
    with fake_keeper(**SESSION_HELLO) as fake:
        os.chmod(fake.path.parent, 0o1777)  # a /tmp-like directory others can write in
        r = home("get", "title", session=None, env={"BAY_SOCKET": str(fake.path)})
        assert r.code == 0, r
        assert len(fake.requests()) == 1


def _as_nobody_listening(path: Path, record: Path) -> int:
    """A fork that becomes ``nobody`` and listens on ``path``, writing every byte it receives
    to ``record``; its pid (kill it). Ready when ``path`` exists."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the attacker's process
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(str(path))
            listener.listen(4)
            with open(record, "ab") as out:
                while True:
                    conn, _ = listener.accept()
                    conn.settimeout(5)
                    try:
                        while chunk := conn.recv(1 << 16):
                            out.write(chunk)
                            out.flush()
                            conn.sendall(protocol.encode(protocol.hello("keeper")))
                    except OSError:
                        pass
                    conn.close()
        finally:
            os._exit(0)
    return pid


@contextmanager
def nobodys_socket() -> Iterator[tuple[Path, Path]]:
    """A session socket path another uid listens on, and the file of what it received."""
    place = short_home("nb")
    os.chmod(place, 0o1777)
    record = place / "record"
    record.touch()
    os.chmod(record, 0o666)
    path = place / "agent.sock"
    pid = _as_nobody_listening(path, record)
    try:
        wait = 0
        while not path.exists():
            assert wait < 500, "the other uid did not listen"
            wait += 1
            threading.Event().wait(0.01)
        yield path, record
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        shutil.rmtree(place, ignore_errors=True)


needs_root = pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another user")


@needs_root
def test_a_session_socket_another_user_made_is_refused_before_a_byte_is_sent(home: Bay) -> None:
    with nobodys_socket() as (path, record):
        r = home("fill", "@e1", "-", session=None, env={"BAY_SOCKET": str(path)}, stdin="pw")
        assert record.read_bytes() == b""
    frame = assert_refused(r, "socket_untrusted")
    assert "owned by uid 65534" in frame["message"]
    no_keeper_started(home)


@needs_root
def test_a_session_socket_of_ours_another_user_listens_on_is_refused_by_its_peer(
    home: Bay,
) -> None:
    """The socket file is ours (chowned here, as a swap inside a directory others can write
    in would leave it), the listener is not: the peer credentials say so before the hello."""
    with nobodys_socket() as (path, record):
        os.chown(path, os.getuid(), os.getgid(), follow_symlinks=False)
        r = home("fill", "@e1", "-", session=None, env={"BAY_SOCKET": str(path)}, stdin="pw")
        assert record.read_bytes() == b""
    frame = assert_refused(r, "socket_untrusted")
    assert "peer" in frame["message"]
    assert "uid 65534" in frame["message"]
    no_keeper_started(home)


# -- bay status says which channel the caller is on (item 8) ---------------------------------


def test_the_channel_as_bay_status_names_it() -> None:
    assert OWNER.label == "owner"
    assert OWNER.as_row() == {"kind": "owner", "socket": None, "session": None, "expires": None}
    grant = Grant("agent-1", Path("/run/a/bay.sock"), expires=None)
    on_socket = Channel(grant)
    assert on_socket.label == "session socket /run/a/bay.sock (session agent-1, until revoked)"
    timed = Channel(Grant("agent-1", Path("/run/a/bay.sock"), expires=1_800_000_000.0))
    assert timed.label.startswith("session socket /run/a/bay.sock (session agent-1, expires 20")
    assert timed.as_row() == {
        "kind": "session",
        "socket": "/run/a/bay.sock",
        "session": "agent-1",
        "expires": 1_800_000_000.0,
    }


def test_bay_status_on_the_owners_channel_says_so(bay: Bay) -> None:
    assert bay.ok("status")["channel"] == OWNER.as_row()
    r = bay("status", json_=False)
    assert r.code == 0, r
    assert "\nchannel: owner\n" in r.stdout


# -- the real keeper, a real grant, the real clients ------------------------------------------


def grant(owner: Bay, sid: str, **kw: str) -> Path:
    """``bay session grant sid`` on the owner's channel: its socket, in a 0700 directory of
    the owner's under the home (short: AF_UNIX's limit)."""
    place = owner.home / f"g-{sid}"
    place.mkdir(mode=0o700)
    path = place / "bay.sock"
    extra = [a for k, v in kw.items() for a in (f"--{k}", v)]
    owner.ok("session", "grant", sid, "--socket", str(path), *extra, session=None)
    return path


def on(path: Path, **env: str) -> dict[str, str]:
    """An agent's environment: only its session socket (no BAY_SESSION unless given)."""
    return {"BAY_SOCKET": str(path), **env}


def keepers_of(home: Path) -> list[int]:
    """The processes running a keeper for ``home``."""
    found = []
    for pid in procfs.pids():
        argv = procfs.argv(pid)
        if "browserbay.keeper" in argv and procfs.environ(pid).get("BAY_HOME") == str(home):
            found.append(pid)
    return [pid for pid in found if procfs.alive(pid)]


def test_bay_on_a_granted_socket_drives_its_own_tab(bay: Bay, demo: str) -> None:
    path = grant(bay, "cli-agent")
    page = bay("open", f"{demo}/index.html", session=None, env=on(path), json_=True).frame
    assert page["ok"], page
    assert page["session"] == {"id": "cli-agent", "origin": "socket"}
    title = bay("get", "title", session=None, env=on(path, BAY_FOOTER="full"), json_=False)
    assert title.code == 0, title
    assert "session cli-agent (from your session socket)" in title.stderr
    (mine,) = bay.ok("tab", "list", session=None, env=on(path))["tabs"]
    # The owner sees that tab as the granted session's, and nobody else's.
    assert [t["id"] for t in bay.ok("tab", "list", session="cli-agent")["tabs"]] == [mine["id"]]
    assert bay.ok("tab", "list", session="someone-else")["tabs"] == []


def test_bay_status_on_a_session_socket_names_the_socket_session_and_expiry(bay: Bay) -> None:
    path = grant(bay, "status-agent", ttl="600")
    data = bay.ok("status", session=None, env=on(path))
    channel = data["channel"]
    assert channel["kind"] == "session"
    assert channel["socket"] == str(path)
    assert channel["session"] == "status-agent"
    assert channel["expires"] > time.time() + 500
    assert data["session"] == {"id": "status-agent", "origin": "socket"}
    text = bay("status", session=None, env=on(path), json_=False).stdout
    assert f"\nchannel: session socket {path} (session status-agent, expires 20" in text
    forever = grant(bay, "forever-agent")
    text = bay("status", session=None, env=on(forever), json_=False).stdout
    assert f"channel: session socket {forever} (session forever-agent, until revoked)" in text


def test_a_named_other_session_on_a_granted_socket_is_refused_session_fixed(
    bay: Bay, demo: str
) -> None:
    """The attack: an agent on its socket names session B (``--session``, ``BAY_SESSION``,
    ``SyncClient('B')``) to reach B's tabs. The client sends B as named; the keeper refuses it
    ``session_fixed``, and B is untouched. Naming the socket's own session is fine."""
    path = grant(bay, "fixed-agent")
    bay.ok("open", f"{demo}/index.html", session="B")
    before = bay.ok("tab", "list", session="B")["tabs"]
    for r in (
        bay("--session", "B", "tab", "list", session=None, env=on(path)),
        bay("tab", "list", session="B", env=on(path)),
        bay("open", "about:blank", session="B", env=on(path)),
    ):
        frame = assert_refused(r, "session_fixed")
        assert "fixed-agent" in frame["message"]
    with pytest.raises(errors.BY_CODE["session_fixed"]):
        SyncClient("B", socket=path).tabs()
    assert bay.ok("tab", "list", session="B")["tabs"] == before
    assert bay.ok("--session", "fixed-agent", "status", session=None, env=on(path))
    assert bay.ok("status", session="fixed-agent", env=on(path))
    assert SyncClient("fixed-agent", socket=path).status().session.id == "fixed-agent"


def test_the_python_api_on_a_granted_socket(
    bay: Bay, demo: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = grant(bay, "api-agent")
    for key in [k for k in os.environ if k.startswith("BAY_")]:
        monkeypatch.delenv(key)
    with SyncClient(socket=path) as c:
        page = c.open(f"{demo}/index.html")
        assert page.session == SessionInfo("api-agent", "socket")
        assert c.session == {"id": "api-agent", "origin": "socket"}
        assert c.keeper["channel"] == "session"
        (tab,) = c.tabs().tabs
    monkeypatch.setenv("BAY_SOCKET", str(path))

    async def main() -> None:
        async with Client() as api:
            assert [t.id for t in (await api.tabs()).tabs] == [tab.id]
            assert api.socket == str(path)

    anyio.run(main)


def _mcp(env: dict[str, str], demo: str) -> tuple[Any, Any]:
    params = StdioServerParameters(command=BAY_CLI, args=["mcp"], env=env)

    async def body() -> tuple[Any, Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            went = await s.call_tool("open", {"url": f"{demo}/index.html"})
            status = await s.call_tool("status", {})
            return went, status

    return anyio.run(body)


def test_the_mcp_server_on_a_granted_socket(bay: Bay, demo: str) -> None:
    path = grant(bay, "mcp-agent")
    agent = {k: v for k, v in os.environ.items() if not k.startswith("BAY_")}
    went, status = _mcp({**agent, **on(path)}, demo)
    assert not went.is_error, went
    assert status.structured_content["session"] == {"id": "mcp-agent", "origin": "socket"}
    assert status.structured_content["channel"]["session"] == "mcp-agent"
    assert len(bay.ok("tab", "list", session="mcp-agent")["tabs"]) == 1
    # BAY_SESSION naming another: sent as named, refused by the keeper.
    went, _ = _mcp({**agent, **on(path, BAY_SESSION="B2")}, demo)
    assert went.is_error
    assert went.structured_content["code"] == "session_fixed"
    assert bay.ok("tab", "list", session="B2")["tabs"] == []


def test_a_session_socket_client_cannot_stop_the_keeper(bay: Bay) -> None:
    """``bay keeper stop`` (and start, logs, status) from a session socket: refused
    ``owner_only`` by the keeper, which goes on running; the client sends no shutdown op."""
    path = grant(bay, "stopper")
    pid = bay.keeper_pid()
    for action in ("stop", "start", "logs", "status"):
        frame = assert_refused(bay("keeper", action, session=None, env=on(path)), "owner_only")
        assert "ask the human" in frame["way_out"]
    with pytest.raises(errors.BY_CODE["owner_only"]):
        SyncClient(socket=path).keeper_status()
    assert bay.keeper_pid() == pid


def test_a_revoked_socket_is_gone_for_every_client(bay: Bay) -> None:
    path = grant(bay, "revoked-agent")
    assert bay.ok("status", session=None, env=on(path))
    bay.ok("session", "revoke", "revoked-agent", session=None)
    _gone(bay("status", session=None, env=on(path)), path)
    with pytest.raises(errors.BY_CODE["session_socket_gone"]):
        SyncClient(socket=path).status()


def test_a_stopped_keeper_is_never_started_from_a_session_socket(fresh_bay: Bay) -> None:
    """The keeper down: every client on the session socket is refused
    ``session_socket_gone`` with the way out, and no keeper process appears (on the home's
    socket the same command would have started one)."""
    path = grant(fresh_bay, "orphan")
    fresh_bay.stop()
    wait_for(lambda: keepers_of(fresh_bay.home) == [], what="the keeper to exit")
    agent = {k: v for k, v in os.environ.items() if not k.startswith("BAY_")}
    for argv in (("status",), ("open", "about:blank"), ("keeper", "start")):
        _gone(fresh_bay(*argv, session=None, env=on(path)), path)
    with pytest.raises(errors.BY_CODE["session_socket_gone"]):
        SyncClient(socket=path).status()
    went, _ = _mcp({**agent, **on(path)}, "http://127.0.0.1:1")
    assert went.is_error
    assert went.structured_content["code"] == "session_socket_gone"
    time.sleep(0.5)  # a keeper spawned detached would be there by now
    assert keepers_of(fresh_bay.home) == []
    assert not bay_paths({"BAY_HOME": str(fresh_bay.home)}).socket.exists()


def test_a_plugins_verb_on_a_session_socket_comes_from_the_keepers_table(fresh_bay: Bay) -> None:
    """The thin client learns the plugins' verbs from a file in the owner's runtime directory,
    which an agent on a session socket does not see (in a sandbox it is not there at all): it
    asks the keeper's table over the socket instead, and the plugin's verb runs as the
    socket's session."""
    fresh_bay.env["BAY_PLUGIN_MODULES"] = "recorder,greeter"
    path = grant(fresh_bay, "plugin-agent")
    elsewhere = {"BAY_HOME": str(fresh_bay.home / "not-the-owners")}
    r = fresh_bay("greet", "Ada", session=None, env=on(path, **elsewhere))
    assert r.code == 0, r
    assert r.frame["data"]["greeting"] == "hello Ada"
    assert r.frame["session"] == {"id": "plugin-agent", "origin": "socket"}
    assert not (fresh_bay.home / "not-the-owners").exists()


@pytest.mark.skipif(missing() is not None, reason=str(missing()))
def test_a_jailed_agent_on_its_session_socket_passes_the_clients_checks(
    bay: Bay, demo: str
) -> None:
    """Under bubblewrap (new user namespace, only the socket's directory of the host): the
    socket file's owner and the listener's credentials, as the jail sees them, are the
    agent's own, so the client talks to the keeper — as the socket's session, its own tab."""
    path = grant(bay, "jailed")
    jail = Jail(path.parent)
    env = {"BAY_SOCKET": str(path)}
    page = jail.bay("open", f"{demo}/index.html", env=env)
    assert page.code == 0, page
    assert page.frame["session"] == {"id": "jailed", "origin": "socket"}
    status = jail.bay("status", env=env)
    assert status.data["channel"]["session"] == "jailed"
    assert [t["url"] for t in status.data["leases"][0]["tabs"]] == [f"{demo}/index.html"]


def test_a_connected_client_whose_grant_is_revoked_is_told_the_socket_is_gone(bay: Bay) -> None:
    """Revoking cuts the open connection too: the next verb of a connected Python client (and
    of the MCP server's) reconnects, finds no socket, and is refused ``session_socket_gone`` —
    it neither starts a keeper nor falls back to the home's socket."""
    path = grant(bay, "cut-agent")
    with SyncClient(socket=path) as c:
        c.status()
        bay.ok("session", "revoke", "cut-agent", session=None)
        with pytest.raises(errors.BY_CODE["session_socket_gone"]):
            c.status()

    async def main() -> None:
        path = grant(bay, "cut-async")
        async with Client(socket=path) as api:
            await api.status()
            bay.ok("session", "revoke", "cut-async", session=None)
            with pytest.raises(errors.BY_CODE["session_socket_gone"]):
                await api.status()

    anyio.run(main)
