"""Issue 15, items 2 and 7 (keys): the attacks a prompt-injected agent can try on the keys,
performed through the real `bay` CLI and keeper.

- a key goes only to the host it was stored for: an agent that points the integration's URL
  field at its own loopback listener gets nothing from `bay keys test` (the key is cleared
  by the URL change; a key stored without a pin goes only to the documented host);
- cluster keys and BAY_KEYS_PASSPHRASE are not readable in /proc/<pid>/environ of the keeper
  or of anything it started, and still work;
- `bay keys list` says which protection the file store gives.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from browserbay.keys import env_name
from browserbay.paths import bay_paths
from browserbay_keys_file.store import FileStore
from browserbay_testing import assert_refused
from browserbay_testing.asuser import SYSTEM_PYTHON, AsUser
from browserbay_testing.fakevendor import FakeVendor, Listener
from browserbay_testing.keys import (
    VENDOR_ENV,
    children,
    in_tree,
    keyed_bay,
    new_key,
    private_home,
    proc_file,
    set_key,
    view_keys,
)


@pytest.fixture
def home() -> Iterator[Path]:
    """A private BAY_HOME, its keeper stopped after."""
    with private_home() as path:
        yield path


def _steel_key() -> str:
    return "sk_" + secrets.token_hex(12)


def _store(home: Path) -> FileStore:
    return FileStore(bay_paths({"BAY_HOME": str(home)}).data / "keys")


# -- attack 1: the key follows a changed URL -------------------------------------------------


def test_a_url_changed_after_the_key_never_receives_it(home: Path) -> None:
    key = _steel_key()
    b = keyed_bay(home)
    with (
        FakeVendor("/v1/sessions", headers={"steel-api-key": key}) as vendor,
        Listener() as listener,
    ):
        set_key(b, "cloud:steel", "api_url", vendor.url)
        stored = set_key(b, "cloud:steel", "api_key", key)
        assert stored["pinned"] == vendor.url  # the answer names the host it is bound to
        listed = b("keys", "list", "cloud:steel", json_=False).stdout
        assert f"the key goes only to {vendor.url}" in listed
        # The negative control: the host it was stored for gets it, and a path change on that
        # same host keeps it.
        assert b.ok("keys", "test", "cloud:steel")["host"] == vendor.host
        kept = set_key(b, "cloud:steel", "api_url", vendor.url + "/")
        assert kept["cleared"] == []
        assert b.ok("keys", "test", "cloud:steel")["ok"] is True
        assert len(vendor.requests) == 2

        # The attack: the URL field pointed at the agent's own listener, then a key test.
        moved = set_key(b, "cloud:steel", "api_url", listener.url)
        b("keys", "test", "cloud:steel")
        assert not listener.got(key), "the listener received the stored key"
        assert listener.received == []  # not even a request without it
        assert moved["cleared"] == ["api_key"]
        view = view_keys(b, "cloud:steel")
        assert view["missing"] == ["api_key"]
        assert len(vendor.requests) == 2
        # The user gives the key again for the new host: it is pinned there, and sent there.
        again = set_key(b, "cloud:steel", "api_key", key)
        assert again["pinned"] == listener.url
        assert key not in json.dumps(again)


def test_a_key_without_a_pin_goes_only_to_the_documented_host(home: Path) -> None:
    """A key stored before pins (or by another tool) next to a URL off the documented host
    is not sent there: the test and the launch are refused by name."""
    key = _steel_key()
    b = keyed_bay(home, BAY_KEYS_STORE="file")
    with Listener() as listener:
        store = _store(home)
        store.set("cloud:steel", "api_key", key)
        store.set("cloud:steel", "api_url", listener.url)
        frame = assert_refused(b("keys", "test", "cloud:steel"), "key_host_mismatch")
        assert frame["data"]["pinned"] == "https://api.steel.dev"
        assert not listener.got(key), "the listener received a key with no pin"
        assert listener.received == []


# -- attack 3: the keeper's environment ------------------------------------------------------


def test_cluster_keys_and_the_passphrase_are_in_no_proc_environ_and_still_work(
    home: Path,
) -> None:
    cluster_key, user_key = new_key(), new_key()
    phrase = "pp-" + secrets.token_hex(16)
    b = keyed_bay(home, BAY_TEST_KEY_SCOPE="user_or_cluster")
    started = {"BAY_INTEGRATION_KEYED_API_KEY": cluster_key, "BAY_KEYS_PASSPHRASE": phrase}
    b.ok("keeper", "start", env=started)
    assert view_keys(b)["source"] == "cluster"
    b.ok("open", "about:blank")
    status = b.ok("keeper", "status")
    keeper = status["pid"]
    (browser,) = status["browsers"]
    tree = children(keeper)
    assert browser["pid"] in tree
    for pid in [keeper, *tree]:
        environ = proc_file(pid, "environ")
        assert environ, f"/proc/{pid}/environ unreadable"
        assert phrase.encode() not in environ, f"the passphrase is in /proc/{pid}/environ"
        assert b"BAY_KEYS_PASSPHRASE=" not in environ, pid
        assert b"BAY_INTEGRATION_" not in environ, pid
        if pid == keeper or not in_tree(pid, browser["pid"], tree):
            assert cluster_key.encode() not in environ, f"the key is in /proc/{pid}/environ"
    # The cluster key still works: it reached the one child that needs it.
    wanted = VENDOR_ENV.encode() + b"=" + cluster_key.encode()
    assert wanted in proc_file(browser["pid"], "environ").split(b"\0")

    # The passphrase still works: a user key is sealed with it (no key file beside it) ...
    set_key(b, "keyed", "api_key", user_key)
    keys_dir = bay_paths({"BAY_HOME": str(home)}).data / "keys"
    assert json.loads((keys_dir / "keys.json").read_text())["kdf"]["name"] == "scrypt"
    assert not (keys_dir / "keys.key").exists()
    (file_row,) = [s for s in b.ok("keys", "list")["sources"] if s["name"] == "file"]
    assert file_row["protection"].startswith("passphrase")
    b.stop()
    # ... and opens again in a keeper started with it, not in one started without it.
    b.ok("keeper", "start", env=started)
    assert view_keys(b)["source"] == "user"
    b.stop()
    b.ok("keeper", "start")
    view = view_keys(b)
    assert view["source"] == "none"
    assert any("BAY_KEYS_PASSPHRASE" in p for p in view["problems"])


# -- attack 4: what the file store protects ---------------------------------------------------


def test_keys_list_and_doctor_say_the_file_store_without_a_passphrase_is_not_agent_proof(
    home: Path,
) -> None:
    b = keyed_bay(home)
    set_key(b, "keyed", "api_key", new_key())
    (row,) = [s for s in b.ok("keys", "list")["sources"] if s["name"] == "file"]
    assert row["protection"].startswith("key file")
    assert "BAY_KEYS_PASSPHRASE" in row["protection"]
    assert "key file beside it" in b("keys", "list", json_=False).stdout
    checks = [c for c in b.ok("doctor")["checks"] if c["name"] == "file store"]
    assert checks
    assert checks[0]["status"] == "warn"
    assert "BAY_KEYS_PASSPHRASE" in checks[0]["fix"]


# -- attack 3, by an agent of the same uid: the keeper's memory ----------------------------

#: What an agent with a shell of the keeper's own uid tries: the keeper's environment block,
#: then every writable mapping of its memory through /proc/<pid>/mem, for the key's bytes.
READ_KEEPER = r"""
import sys
pid, needle = int(sys.argv[1]), sys.argv[2].encode()
said = []
try:
    env = open(f"/proc/{pid}/environ", "rb").read()
    said.append("environ:" + ("KEY" if needle in env else "clean"))
except PermissionError:
    said.append("environ:denied")
try:
    maps = open(f"/proc/{pid}/maps").read().splitlines()
    found = False
    with open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            span, perms = line.split()[:2]
            if "r" not in perms or "w" not in perms:
                continue
            start, end = (int(x, 16) for x in span.split("-"))
            try:
                mem.seek(start)
                if needle in mem.read(end - start):
                    found = True
                    break
            except (OSError, ValueError, OverflowError):
                continue
    said.append("mem:" + ("KEY" if found else "clean"))
except PermissionError:
    said.append("mem:denied")
print(" ".join(said))
"""


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another user")
def test_an_agent_of_the_keepers_own_uid_cannot_read_its_keys_from_proc(
    nobody: AsUser,
) -> None:
    key = _steel_key()
    with FakeVendor("/v1/sessions", headers={"steel-api-key": key}) as vendor:
        nobody.env.update(
            {
                env_name("cloud:steel", "api_key"): key,
                env_name("cloud:steel", "api_url"): vendor.url,
            }
        )
        nobody.ok("keeper", "start")
        del nobody.env[env_name("cloud:steel", "api_key")]  # the agent's own shell: no key
        # The positive control: the keeper holds the key and uses it.
        assert nobody.ok("keys", "test", "cloud:steel")["ok"] is True
        keeper = int(str(nobody.ok("keeper", "status")["pid"]))
        assert Path(f"/proc/{keeper}").stat().st_uid == nobody.uid
        read = nobody.run([SYSTEM_PYTHON, "-c", READ_KEEPER, str(keeper), key])
        assert read.code == 0, read
        said = read.stdout.split()
        assert "environ:KEY" not in said, "the key is in the keeper's environ"
        assert "mem:KEY" not in said, "a process of the keeper's uid read the key from its memory"
        assert said == ["environ:denied", "mem:denied"], said
