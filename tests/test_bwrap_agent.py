"""Issue 17 item 7: an agent under bubblewrap with only its session socket.

One real keeper on the owner's channel (a home of its own, a stored key, a tab of session B
opened there) grants session A a socket in a directory of its own; the agent runs under
``bwrap`` (:class:`browserbay_testing.bwrap.Jail`: docs/sandboxing.md's recipe) with only that
directory of the host. Inside it drives its own tab, and reaches nothing else: the keeper's
home is not even there (``ENOENT`` for the registry, the home's socket, the keys store, the
log), the owner's verbs are refused, session B is neither reachable nor seen, and no keeper
can be started from inside. After each attack the owner checks from outside that the same
keeper still runs and B's tab is as it was.

Each probe has its control: the same probe in a looser jail (one that binds the home, shares
the host's PID namespace or network, or has a writable home) sees what this one must not, so
an ``ENOENT`` here is the jail's doing, not a wrong path. With the keeper's gate taken out
(``channels.admit`` answering everything) the attacks over the socket succeed and their
tests fail.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from browserbay.paths import BayPaths, bay_paths
from browserbay_testing import Bay, assert_refused
from browserbay_testing.bwrap import Jail, missing, python_paths
from browserbay_testing.keys import new_key
from browserbay_testing.plugin import keeper, short_home

pytestmark = pytest.mark.skipif(missing() is not None, reason=str(missing()))

#: The session whose tab the owner opened; the agent must never reach it.
OTHER = "B"
#: The session the owner grants the jailed agent.
AGENT = "A"


@dataclass(frozen=True)
class World:
    """The owner's side: its keeper (pid), its home's files, B's tab, and the share (the one
    directory the jail binds)."""

    owner: Bay
    paths: BayPaths
    share: Path
    keeper_pid: int
    b_tab: str
    b_url: str

    @property
    def jail(self) -> Jail:
        return Jail(self.share)

    def intact(self) -> None:
        """From outside: the same keeper answers the owner, and B's tab is where it was."""
        assert self.owner.keeper_pid() == self.keeper_pid
        tabs = self.owner.ok("tab", "list", session=OTHER)["tabs"]
        assert [(t["id"], t["url"]) for t in tabs] == [(self.b_tab, self.b_url)]


@pytest.fixture(scope="module")
def world(demo: str) -> Iterator[World]:
    # The keyed test plugin gives an integration to store a key for; with no D-Bus the key
    # goes to the encrypted file store, in the home.
    modules = "recorder,keyed"
    with keeper("bw", BAY_PLUGIN_MODULES=modules, DBUS_SESSION_BUS_ADDRESS="unix:path=/nil") as b:
        b_url = f"{demo}/index.html?of-b"  # a URL no page of A's has
        b.ok("open", b_url, session=OTHER)
        (tab,) = b.ok("tab", "list", session=OTHER)["tabs"]
        b.ok("keys", "set", "keyed", "api_key", stdin=new_key() + "\n", session=None)
        share = short_home("s")
        try:
            paths = bay_paths({"BAY_HOME": str(b.home)})
            yield World(b, paths, share, b.keeper_pid(), tab["id"], b_url)
        finally:
            shutil.rmtree(share, ignore_errors=True)


def test_the_keepers_home_is_not_even_visible_in_the_jail(world: World) -> None:
    keys = sorted(p for p in (world.paths.data / "keys").rglob("*") if p.is_file())
    assert keys, "the owner's key store holds the key just set"
    secret = [
        world.owner.home,
        world.paths.registry,
        world.paths.socket,
        world.paths.keeper_log,
        world.paths.data / "keys",
        *keys,
    ]
    for path in secret:
        assert path.exists(), path
    seen = world.jail.look(*secret, world.share)
    assert seen == {**{str(p): "ENOENT" for p in secret}, str(world.share): "ok"}
    # The control: the same probe, in a jail that binds the home, reads every one of them.
    control = Jail(world.share, readonly=(*python_paths(), world.owner.home))
    assert set(control.look(*secret).values()) == {"ok"}
    world.intact()


def test_the_jail_reaches_no_loopback_port_of_the_host(world: World, demo: str) -> None:
    # The demo site stands for any of them: the scoped CDP endpoint, the live view, a cdp
    # profile's open DevTools port. The browser, outside the jail, still loads it (the
    # agent's own tab, below).
    port = urlsplit(demo).port
    assert port is not None
    # The jail's own loopback is up, and nothing listens on it.
    assert world.jail.reach("127.0.0.1", port) == "ECONNREFUSED"
    # The control: a jail that shares the host's network reaches it.
    assert Jail(world.share, network=True).reach("127.0.0.1", port) == "ok"


def test_a_jailed_agent_cannot_start_a_keeper(world: World) -> None:
    # Neither for the owner's home (what an agent inherits from the shell that made it) nor
    # for the default one: the jail's root is read-only, so no home can be made; and right
    # after, no keeper process is in the jail (one it spawned would still run there).
    for env in ({"BAY_HOME": str(world.owner.home)}, {}):
        r, keepers = world.jail.keepers(["status"], env)
        frame = assert_refused(r, "keeper_unavailable")
        assert "Read-only file system" in frame["data"]["reason"], frame
        assert keepers == []
    # The control: given a writable home (inside the share), the same command starts one.
    r, keepers = world.jail.keepers(["status"], {"BAY_HOME": str(world.share / "own")})
    assert r.code == 0, r
    assert len(keepers) == 1
    shutil.rmtree(world.share / "own")
    world.intact()


def test_a_jailed_agent_can_neither_see_nor_signal_the_keeper(world: World) -> None:
    # Without a PID namespace of its own the agent (same user) reads the keeper's argv and may
    # kill it: signals cross user namespaces between processes of one user. Signal 0 sends
    # nothing and says whether a signal would be delivered.
    pid = world.keeper_pid
    assert world.jail.look(f"/proc/{pid}/cmdline") == {f"/proc/{pid}/cmdline": "ENOENT"}
    assert world.jail.signal(pid) == "ESRCH"
    # The control: the same jail sharing the host's PID namespace sees it and could kill it.
    control = Jail(world.share, pids=True)
    assert control.look(f"/proc/{pid}/cmdline") == {f"/proc/{pid}/cmdline": "ok"}
    assert control.signal(pid) == "ok"
    world.intact()


# -- over the session socket ------------------------------------------------------------------


@pytest.fixture(scope="module")
def agent(world: World) -> dict[str, str]:
    """The owner grants session A a socket in the share: the agent's environment."""
    sock = world.share / "bay.sock"
    world.owner.ok("session", "grant", AGENT, "--socket", str(sock), session=None)
    return {"BAY_SOCKET": str(sock)}


def test_a_jailed_agent_drives_its_own_tab(world: World, agent: dict[str, str], demo: str) -> None:
    jail = world.jail
    opened = jail.bay("open", f"{demo}/form.html", env=agent).frame
    assert opened["ok"], opened
    assert opened["session"]["id"] == AGENT
    snap = jail.bay("snapshot", "-i", env=agent).data["snapshot"]
    line = next(x for x in snap.splitlines() if 'button "Create account"' in x)
    ref = "@" + re.findall(r" @(\w+)", line)[0]
    assert jail.bay("click", ref, env=agent).frame["ok"]
    url = jail.bay("get", "url", env=agent).data["value"]
    assert url.startswith(f"{demo}/result"), url
    (tab,) = jail.bay("tab", "list", env=agent).data["tabs"]
    assert tab["id"] != world.b_tab
    # The owner sees the agent's tab as session A's.
    (seen,) = world.owner.ok("tab", "list", session=AGENT)["tabs"]
    assert (seen["id"], seen["url"]) == (tab["id"], url)
    world.intact()


def test_a_jailed_agent_cannot_stop_the_keeper(world: World, agent: dict[str, str]) -> None:
    assert_refused(world.jail.bay("keeper", "stop", env=agent), "owner_only")
    world.intact()


def test_a_jailed_agent_cannot_reach_or_see_session_b(world: World, agent: dict[str, str]) -> None:
    jail = world.jail
    assert_refused(jail.bay("tab", "list", "--session", OTHER, env=agent), "session_fixed")
    assert_refused(jail.bay("tab", "list", env={**agent, "BAY_SESSION": OTHER}), "session_fixed")
    assert_refused(jail.bay("get", "url", "--session", OTHER, env=agent), "session_fixed")
    # B's tab, named by its id from A's own session: not A's.
    assert_refused(jail.bay("tab", world.b_tab, env=agent), "not_your_tab")
    # Nothing of B in what A may list.
    for args in (("tab", "list"), ("status",), ("session", "list")):
        r = jail.bay(*args, env=agent)
        assert r.code == 0, (args, r)
        # As a JSON string: a tab id is short ("t1"), and the socket's path is random.
        assert json.dumps(world.b_tab) not in r.stdout, (args, r.stdout)
        assert world.b_url not in r.stdout, (args, r.stdout)
    world.intact()


def test_a_jailed_agent_cannot_start_a_keeper_through_a_gone_socket(world: World) -> None:
    r, keepers = world.jail.keepers(["status"], {"BAY_SOCKET": str(world.share / "gone.sock")})
    assert_refused(r, "session_socket_gone")
    assert keepers == []
    world.intact()


def test_a_jailed_agent_cannot_have_the_keeper_write_outside_the_jail(
    world: World, agent: dict[str, str], demo: str
) -> None:
    # A screenshot's PNG comes back through the socket and the jail's own bay writes it
    # (browserbay.transfer): a path outside the jail (here the owner's home, which the agent
    # cannot even see) is one the jail cannot write, so nothing is asked of the keeper; and
    # a path in the jail's share gets the PNG, written by the jailed client. (Before, the
    # keeper wrote it with the owner's rights: such a path was refused owner_only.)
    jail = world.jail
    assert jail.bay("open", f"{demo}/index.html", env=agent).frame["ok"]
    planted = world.owner.home / "planted.png"
    frame = assert_refused(jail.bay("screenshot", str(planted), env=agent), "file_unwritable")
    assert "No such file or directory" in frame["data"]["reason"], frame
    assert not planted.exists()
    mine = world.share / "shot.png"
    shot = jail.bay("screenshot", str(mine), env=agent).data
    assert shot["path"] == str(mine)
    assert mine.read_bytes().startswith(b"\x89PNG")
    assert mine.stat().st_mode & 0o777 == 0o600
    mine.unlink()
    world.intact()


def test_a_jailed_agents_long_answer_is_cut_not_a_crash(
    world: World, agent: dict[str, str]
) -> None:
    # A long answer's full text goes to the home's outputs directory, which a jail cannot
    # make (its root is read-only): the answer is still given, cut, and says where it is not.
    jail = world.jail
    assert jail.bay("open", "about:blank", env=agent).frame["ok"]
    r = jail.bay("eval", "'x'.repeat(60000)", env=agent)
    assert r.code == 0, r
    assert "Traceback" not in r.stderr, r.stderr
    value = r.data["value"]
    assert value.startswith("x" * 50_000)
    tail = value[50_000:]
    assert "could not be saved" in tail, tail
    assert "Read-only file system" in tail, tail
    world.intact()
