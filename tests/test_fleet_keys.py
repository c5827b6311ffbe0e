"""Issue 22 item 6: keys stay local where they must — a key scoped to one machine is never
read by another keeper of the fleet, nor by anything the keeper starts.

Where a key could be read by another keeper (or by a process of the user) in a fleet, and
the test that closes each path:

- the environment handed to the keeper's children: the fleet's own credentials (the link's
  ``BAY_FLEET_SECRET``, the registry URL's password) were inherited by the Playwright driver
  and every browser (``test_the_fleet_secret_and_the_registry_password_are_in_no_child_environ``);
- a keys file on storage every keeper mounts (``BAY_FLEET_DATA``);
- the registry, shared by the fleet: a profile's stored options (a ``--cdp-url`` carrying
  a token), and the census that no key is in any of its tables;
- a profile whose provider needs a key that another keeper holds: refused
  ``provider_needs_local_key`` naming that keeper's host — never served by copying the key.
- a forwarded verb's frame: a peer over the fleet link cannot set, test or clear a key here,
  and reads masked views only;
- ``bay doctor``'s fleet rows (item 7) are tested at the end.
"""

from __future__ import annotations

import json
import secrets
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import psycopg
import psycopg.sql
import pytest

from browserbay import protocol
from browserbay.keeper import link
from browserbay.paths import bay_paths
from browserbay_keys_file.store import FileStore
from browserbay_testing import Bay, assert_refused, wait_for
from browserbay_testing.fleet import free_port, keeper_fleet, link_env, write_secret
from browserbay_testing.keys import (
    VENDOR_ENV,
    children,
    keyed_bay,
    new_key,
    private_home,
    proc_file,
    view_keys,
)
from browserbay_testing.plugin import keeper as keeper_home
from browserbay_testing.postgres import PgServer


@pytest.fixture
def home() -> Iterator[Path]:
    with private_home() as path:
        yield path


def _with_password(url: str, password: str) -> str:
    """The test server's URL with a password in its userinfo (the server trusts its private
    socket and ignores it; a real one would check it)."""
    return url.replace("postgresql://bay@", f"postgresql://bay:{password}@", 1)


# -- path 1: the environment of the keeper and of everything it starts ------------------------


@pytest.mark.parametrize("road", ["url", "PGPASSWORD"])
def test_the_fleet_secret_and_the_registry_password_are_in_no_child_environ(
    home: Path, postgres: PgServer, road: str
) -> None:
    """A keeper of a fleet is started with the link's secret and the registry's password
    (in the URL, or in libpq's ``PGPASSWORD``); before this, each stayed in its
    ``/proc/<pid>/environ`` and was inherited by the Playwright driver and every browser —
    readable there by any process of the user (an agent's shell), and carried to whatever
    the driver starts. (``PGPASSWORD`` was, until 2026-12-03.)"""
    fleet_secret = "fs-" + secrets.token_hex(16)
    password = "pw-" + secrets.token_hex(12)
    with postgres.schema_url() as url:
        b = keyed_bay(home, BAY_DEFAULT_PROVIDER="chromium")
        started = {"BAY_FLEET_SECRET": fleet_secret}
        if road == "url":
            started["BAY_REGISTRY"] = _with_password(url, password)
        else:
            started.update(BAY_REGISTRY=url, PGPASSWORD=password)
        try:
            b.ok("keeper", "start", env=started)
            b.ok("open", "about:blank", env=started)
            status = b.ok("keeper", "status")
            assert status["registry"].startswith("postgresql://bay")  # it is on PostgreSQL
            keeper = status["pid"]
            tree = children(keeper)
            assert [br["pid"] for br in status["browsers"] if br["pid"] in tree]
            for pid in [keeper, *tree]:
                environ = proc_file(pid, "environ")
                assert environ, f"/proc/{pid}/environ unreadable"
                assert fleet_secret.encode() not in environ, f"fleet secret in /proc/{pid}"
                assert password.encode() not in environ, f"registry password in /proc/{pid}"
            # Neither is printed: status names the registry without its password.
            assert password not in str(status)
            assert "***" in status["registry"]  # the keeper sends it: shown blotted out
            log = b.home.rglob("keeper.log*")
            assert not any(password in p.read_text(errors="replace") for p in log)
        finally:
            b.stop()


# -- path 2: the registry every keeper reads --------------------------------------------------


def _rows_holding(url: str, needle: str) -> list[str]:
    """Every ``table.column`` of the registry's schema holding ``needle`` in any row."""
    found = []
    with psycopg.connect(url) as conn:
        tables = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = "
            "current_schema() AND table_type = 'BASE TABLE'"
        ).fetchall()
        for (table,) in tables:
            rows = conn.execute(
                psycopg.sql.SQL("SELECT * FROM {}").format(psycopg.sql.Identifier(table))
            )
            names = [d.name for d in rows.description or ()]
            for row in rows.fetchall():
                pairs = zip(names, row, strict=True)
                found += [f"{table}.{n}" for n, v in pairs if needle in str(v)]
    return found


@pytest.mark.parametrize(
    "shape",
    ["ws://127.0.0.1:9/devtools/browser/x?token={}", "wss://bay:{}@cdp.example/devtools/browser"],
)
def test_a_cdp_url_carrying_a_token_is_never_stored_in_the_shared_registry(
    home: Path, postgres: PgServer, shape: str
) -> None:
    """``bay new --provider cdp --cdp-url`` stores its URL as the profile's options: a
    registry row, which every keeper of a fleet reads. Before this, a ``ws://`` URL with a
    ``?token=`` (the shape hosted CDP services hand out) was stored as given, its token
    readable by every keeper and anything with the registry's credentials."""
    token = "tk" + secrets.token_hex(12)
    with postgres.schema_url() as url:
        b = keyed_bay(home, BAY_REGISTRY=url)
        try:
            r = b("new", "remote", "--provider", "cdp", "--cdp-url", shape.format(token))
            frame = assert_refused(r, "option_carries_key")
            assert token not in r.stdout + r.stderr  # the refusal names the part, not it
            assert frame["data"]["option"] == "cdp-url"
            assert _rows_holding(url, token) == []
            assert "remote" not in str(b.ok("profiles"))  # nothing was made
        finally:
            b.stop()


# -- path 3: a profile whose key lives on another keeper ---------------------------------------


def _keyed_fleet_env(root: Path) -> dict[str, str]:
    """Every member: the keyed test provider (key from the user's stores or the cluster
    default), no keychain, the profiles' data on storage both mount."""
    shared = root / "shared"
    shared.mkdir(exist_ok=True)
    return {
        "BAY_PLUGIN_MODULES": "recorder,keyed",
        "BAY_TEST_KEY_SCOPE": "user_or_cluster",
        "DBUS_SESSION_BUS_ADDRESS": f"unix:path={root}/no-bus",
        "BAY_FLEET_DATA": str(shared),
    }


def test_a_profile_whose_key_lives_on_keeper_a_is_never_started_by_b_with_a_key(
    postgres: PgServer, tmp_path: Path
) -> None:
    """Keeper A starts profile ``work`` (provider ``keyed``) with its own cluster key: A is
    the profile's key home. With A stopped, B — which mounts the profile's data and holds a
    key of its own — is asked to start it. Before this, B started it with *its* key (and a B
    without one was refused backend_no_key, whose way out is to copy the key there). Now B
    refuses provider_needs_local_key naming host-a, before it reads any key, and gives the
    profile's claim back; A serves it again."""
    key_a, key_b = new_key(), new_key()
    member_env = {
        "a": {"BAY_INTEGRATION_KEYED_API_KEY": key_a, "BAY_KEYED_CALLS": str(tmp_path / "a.calls")},
        "b": {"BAY_INTEGRATION_KEYED_API_KEY": key_b, "BAY_KEYED_CALLS": str(tmp_path / "b.calls")},
    }
    env = _keyed_fleet_env(tmp_path)
    fleet_of = keeper_fleet(postgres, tmp_path, 2, env=env, member_env=member_env, start=False)
    with fleet_of as fleet:
        a, b = fleet["a"], fleet["b"]
        a.start()  # (b starts after the profile is made: it reads the profiles at its start)
        made = a.ok("new", "work", "--provider", "keyed", session=None)
        a.ok("use", made["id"])
        a.ok("open", "about:blank")
        (home,) = fleet.rows("SELECT keeper_id, host, integration, source FROM key_homes")
        assert home == (a.keeper_id(), "host-a", "keyed", "cluster")
        assert key_a not in str(fleet.rows("SELECT * FROM key_homes"))
        a.stop()  # its claim is released: any keeper may take the profile now

        calls = tmp_path / "b.calls"
        calls.unlink(missing_ok=True)
        b.ok("use", made["id"])
        r = b("open", "about:blank")
        frame = assert_refused(r, "provider_needs_local_key")
        assert frame["data"]["host"] == "host-a"
        assert frame["data"]["keeper"] == a.keeper_id()
        assert "host-a" in frame["way_out"]
        assert not calls.exists() or "keyed" not in calls.read_text()  # no key was read
        assert b.ok("keeper", "status")["browsers"] == []
        claims = fleet.rows("SELECT keeper_id, released_at IS NOT NULL FROM profile_claims")
        assert claims == [(b.keeper_id(), True)]  # given back, not held with nothing behind

        a.start()  # the key home serves it again
        assert a.ok("open", "about:blank")
        (browser,) = a.ok("keeper", "status")["browsers"]
        wanted = VENDOR_ENV.encode() + b"=" + key_a.encode()
        assert wanted in proc_file(browser["pid"], "environ").split(b"\0")


def test_a_keyed_profile_used_on_b_is_forwarded_to_its_live_key_home_which_starts_it(
    postgres: PgServer, tmp_path: Path
) -> None:
    """A is the profile's key home and alive, with no browser of the profile running (its
    claim released by a restart). A session on B using the profile was refused
    provider_needs_local_key ("use that keeper"); now its verbs go to A over the link, and
    A starts the browser with A's key — B reads no key and starts nothing."""
    key_a, key_b = new_key(), new_key()
    secret = write_secret(tmp_path)
    member_env = {
        name: {
            "BAY_INTEGRATION_KEYED_API_KEY": key,
            "BAY_KEYED_CALLS": str(tmp_path / f"{name}.calls"),
            "BAY_FLEET_LISTEN": f"127.0.0.1:{free_port()}",
        }
        for name, key in (("a", key_a), ("b", key_b))
    }
    env = {**_keyed_fleet_env(tmp_path), "BAY_FLEET_SECRET_FILE": str(secret)}
    fleet_of = keeper_fleet(
        postgres, tmp_path, 2, ttl=8, env=env, member_env=member_env, start=False
    )
    with fleet_of as fleet:
        a, b = fleet["a"], fleet["b"]
        a.start()
        made = a.ok("new", "work", "--provider", "keyed", session=None)
        a.ok("use", made["id"])
        a.ok("open", "about:blank")
        a.stop()  # its claim released; A comes back alive with no browser of the profile
        a.start()
        b.start()
        calls = tmp_path / "b.calls"
        calls.unlink(missing_ok=True)
        b.ok("use", made["id"], session="s")
        r = b("open", "about:blank", session="s")
        assert r.code == 0, r
        assert r.frame["profile"]["host"] == "host-a", r.frame
        assert not calls.exists() or "keyed" not in calls.read_text()  # B read no key
        assert b.ok("keeper", "status")["browsers"] == []
        (browser,) = a.ok("keeper", "status")["browsers"]
        wanted = VENDOR_ENV.encode() + b"=" + key_a.encode()
        assert wanted in proc_file(browser["pid"], "environ").split(b"\0")


# -- path 4: a keys file on storage every keeper mounts ----------------------------------------


def test_a_keys_file_on_the_fleets_shared_storage_is_never_written_nor_read(
    home: Path,
) -> None:
    """BAY_FLEET_DATA is storage every keeper mounts; a home whose data directory is under it
    would keep its encrypted keys file — and the key file beside it — where every other
    keeper reads them. Before this, ``bay keys set`` wrote ``keys.json`` and ``keys.key``
    there; and a keys file another keeper left there was read as this keeper's own."""
    data = bay_paths({"BAY_HOME": str(home)}).data
    env = {"BAY_FLEET_DATA": str(data)}
    b = keyed_bay(home, **env)
    b.ok("keeper", "start", env=env)
    r = b("keys", "set", "keyed", "api_key", stdin=new_key() + "\n")
    frame = assert_refused(r, "key_store_unavailable")
    assert "BAY_FLEET_DATA" in frame["message"]
    assert not (data / "keys" / "keys.json").exists()
    assert not (data / "keys" / "keys.key").exists()
    b.stop()
    # Another keeper's file there (made with its key file beside it) is not read as ours.
    planted = new_key()
    FileStore(data / "keys").set("keyed", "api_key", planted)
    b.ok("keeper", "start", env=env)
    view = view_keys(b)
    assert view["source"] == "none"
    assert any("BAY_FLEET_DATA" in p for p in view["problems"])
    assert planted not in str(view)
    b.stop()


# -- bay doctor's fleet rows (issue 22 item 7) ------------------------------------------------


def _doctor_fleet(m: Bay, **env: str) -> dict[str, dict[str, Any]]:
    r = m("doctor", session=None, env=env, timeout=120)
    checks = r.frame["data"]["checks"]
    return {c["name"]: c for c in checks if c["area"] == "fleet"}


def test_doctor_lists_the_fleet_and_proves_each_live_peers_link_without_a_verb(
    postgres: PgServer, tmp_path: Path
) -> None:
    secret = write_secret(tmp_path)
    member_env = link_env("abc")
    env = {"BAY_FLEET_SECRET_FILE": str(secret)}
    with keeper_fleet(postgres, tmp_path, 3, ttl=8, env=env, member_env=member_env) as fleet:
        a, b, c = fleet["a"], fleet["b"], fleet["c"]
        rows = _doctor_fleet(a)
        assert rows["keepers"]["status"] == "ok", rows
        assert "3 keeper(s) seen, 3 alive" in rows["keepers"]["detail"]
        assert f"{a.keeper_id()} on host-a: alive" in rows["keepers"]["detail"]
        assert rows["claims"]["detail"].startswith(f"{a.keeper_id()} (this home) holds 0")
        for peer in (b, c):
            link = rows[f"link to host-{peer.name}"]
            assert link["status"] == "ok", link
            assert "handshake proven (no verb sent)" in link["detail"]
        # A wrong secret is a fail row naming the peer; the secret is printed nowhere.
        wrong = tmp_path / "wrong.secret"
        wrong.write_text(secrets.token_hex(32))
        wrong.chmod(0o600)
        r = a("doctor", session=None, env={"BAY_FLEET_SECRET_FILE": str(wrong)}, timeout=120)
        assert wrong.read_text() not in r.stdout
        failing = {c["name"]: c for c in r.frame["data"]["checks"] if c["area"] == "fleet"}
        assert failing["link to host-b"]["status"] == "fail"
        assert "proof is wrong" in failing["link to host-b"]["detail"]
        # A keeper killed is dead after the TTL: the row warns and names its host.
        c.kill()
        wait_for(
            lambda: "dead" in _doctor_fleet(a)["keepers"]["detail"],
            timeout=fleet.ttl * 4,
            what="the killed keeper seen dead",
        )
        rows = _doctor_fleet(a)
        assert rows["keepers"]["status"] == "warn"
        assert "host-c" in rows["keepers"]["fix"]
        assert "link to host-c" not in rows  # a dead peer's link is not tried


# -- path 5: a forwarded verb's frame -----------------------------------------------------------


def test_a_peer_over_the_fleet_link_cannot_set_spend_or_read_a_key(tmp_path: Path) -> None:
    """A frame that reaches a keeper over the fleet link comes from another keeper's session:
    ``keys set`` (a value into this machine's store), ``keys test`` (this machine's key sent
    out) and ``keys clear`` are refused ``owner_only`` there, and ``keys list`` answers masked
    views only — the store holds nothing the peer sent. (Enforced by the link's confinement of
    a forwarded request, ``keeper.link.forwarded``; this is the keys' census of it.)"""
    secret = "fleet-" + secrets.token_hex(20)
    secret_path = tmp_path / "fleet.secret"
    secret_path.write_text(secret)
    secret_path.chmod(0o600)
    address = f"127.0.0.1:{free_port()}"
    planted, value = "sk_" + secrets.token_hex(12), "sk_" + secrets.token_hex(12)
    with keeper_home("lk", BAY_FLEET_LISTEN=address, BAY_FLEET_SECRET_FILE=str(secret_path)) as b:
        b.ok("keys", "set", "cloud:steel", "api_key", stdin=planted + "\n", session=None)
        me = (b.home / "state" / "keeper-id").read_text().strip()
        profile = str(b.ok("new", "work", session=None)["id"])  # a forwarded verb names one

        async def go() -> list[dict[str, Any]]:
            stream = await link.connect_peer(address, secret.encode(), "kp-0badc0de", me)
            await stream.send(protocol.encode(protocol.hello("fleet")))
            answers = [await _frame(stream)]
            frames = [
                {"action": "set", "integration": "cloud:steel", "field": "api_key", "value": value},
                {"action": "test", "integration": "cloud:steel"},
                {"action": "clear", "integration": "cloud:steel"},
                {"action": "list", "integration": "cloud:steel"},
            ]
            for i, args in enumerate(frames, 1):
                frame = {
                    "id": i,
                    "verb": "keys",
                    "args": args,
                    "session": {"id": "s"},
                    "profile": profile,
                }
                await stream.send(protocol.encode(frame))
                answers.append(await _frame(stream))
            await stream.aclose()
            return answers

        wait_for(lambda: _listening(address), what="the fleet link to listen")
        hello, set_, test, clear, listed = anyio.run(go)
        assert hello["hello"]["channel"] == "fleet"
        for refused in (set_, test, clear):
            assert refused["ok"] is False
            assert refused["code"] == "owner_only", refused
        assert listed["ok"] is True
        assert planted not in json.dumps(listed)  # a masked view: the last 4 at most
        (row,) = b.ok("keys", "list", "cloud:steel", session=None)["integrations"]
        assert row["source"] == "user"  # still the owner's key, not the peer's, not cleared
        fields = {f["name"]: f for f in row["fields"]}
        assert fields["api_key"]["view"].endswith(planted[-4:])


async def _frame(stream: Any) -> dict[str, Any]:
    buffer = b""
    with anyio.fail_after(20):
        while b"\n" not in buffer:
            buffer += await stream.receive()
    value = json.loads(buffer.split(b"\n", 1)[0])
    assert isinstance(value, dict)
    return value


def _listening(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    with socket.socket() as s:
        return s.connect_ex((host, int(port))) == 0
