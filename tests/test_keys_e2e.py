"""Provider keys end to end, through the real `bay` CLI and keeper: the three precedence
states over one fixture, the secrets census (a planted key reaches the provider child's
environment and nothing else), the named refusals (secret_on_argv, secret_required,
backend_no_key, provider_needs_local_key, key_invalid, key_store_unavailable,
key_test_failed, key_test_no_host), the hidden prompt, and `bay keys test` against a local
FAKE vendor (browserbay_testing.fakevendor)."""

from __future__ import annotations

import json
import os
import pty
import secrets
import select
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browserbay import procfs
from browserbay.paths import bay_paths
from browserbay_testing import BAY, Result, assert_refused
from browserbay_testing.fakevendor import FakeVendor
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
from browserbay_testing.secretservice import private_secret_service


@pytest.fixture
def home() -> Iterator[Path]:
    with private_home() as path:
        yield path


# -- precedence ---------------------------------------------------------------------------------


@pytest.mark.parametrize("store", ["file", "keyring"])
def test_three_precedence_states_give_three_sources_through_the_cli(
    home: Path, store: str, tmp_path: Path
) -> None:
    with contextlib_for(store, tmp_path) as bus:
        b = keyed_bay(home, **bus)
        user_key, cluster_key = new_key(), new_key()
        answers: list[str] = []

        none = view_keys(b)
        assert (none["source"], none["missing"]) == ("none", ["api_key"])
        b.stop()

        # The cluster default is in the environment the keeper starts with — never in the
        # agent's own commands.
        b.ok("keeper", "start", env={"BAY_INTEGRATION_KEYED_API_KEY": cluster_key})
        cluster = view_keys(b)
        assert cluster["source"] == "cluster"
        assert cluster["fields"][0]["view"] == "••••" + cluster_key[-4:]
        assert cluster["fields"][0]["from"] == "env"

        stored = set_key(b, "keyed", "api_key", user_key)
        assert (stored["store"], stored["view"], stored["source"]) == (
            store,
            "••••" + user_key[-4:],
            "user",
        )
        user = view_keys(b)
        assert (user["source"], user["fields"][0]["from"]) == ("user", store)

        cleared = b.ok("keys", "clear", "keyed")
        assert cleared["cleared"] == [store]
        assert cleared["source"] == "cluster"  # precedence lands where it lands

        assert len({none["source"], cluster["source"], user["source"]}) == 3
        answers += [json.dumps(v) for v in (none, cluster, user, stored, cleared)]
        text = b("keys", "list", json_=False)
        answers.append(text.stdout + text.stderr)
        assert "keyed" in text.stdout
        assert "cluster" in text.stdout
        for answer in answers:
            assert user_key not in answer
            assert cluster_key not in answer


def contextlib_for(store: str, tmp_path: Path) -> Any:
    """A private Secret Service for the keyring store; nothing for the file store."""
    import contextlib

    if store == "keyring":
        return private_secret_service(tmp_path / "ss")
    return contextlib.nullcontext({})


# -- the census -------------------------------------------------------------------------------


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:  # gone since it was listed (a browser's temporary file)
        return b""


def test_secrets_census_the_key_reaches_the_provider_child_and_nothing_else(
    home: Path, demo: str
) -> None:
    key = new_key()
    needle = key.encode()
    b = keyed_bay(home)
    results: list[Result] = []

    def run(*args: str, **kw: Any) -> Result:
        r = b(*args, **kw)
        results.append(r)
        assert r.code == 0, (args, r)
        return r

    run("keys", "set", "keyed", "api_key", stdin=key + "\n")
    run("keys", "list")
    run("keys", "list", json_=False)
    run("keys", "test", "keyed")
    run("open", f"{demo}/form.html")
    run("snapshot", "-i")
    run("fill", "input[name=name]", "Ada")
    run("get", "title")
    run("status")
    run("tab", "list")
    run("plugins")
    status = run("keeper", "status").frame["data"]
    run("keys", "list", "keyed", json_=False)

    keeper_pid = status["pid"]
    (browser,) = status["browsers"]
    assert browser["provider"] == "keyed"
    tree = children(keeper_pid)
    assert browser["pid"] in tree, "the browser is not a process the keeper started"
    carried = 0
    for pid in [keeper_pid, *tree]:
        argv, environ = proc_file(pid, "cmdline"), proc_file(pid, "environ")
        assert needle not in argv, f"the key is in the argv of pid {pid}"
        assert b"BAY_INTEGRATION_" not in environ, f"pid {pid} inherited BAY_INTEGRATION_*"
        if pid != keeper_pid and in_tree(pid, browser["pid"], tree):
            carried += (VENDOR_ENV.encode() + b"=" + needle) in environ.split(b"\0")
        else:
            assert needle not in environ, f"pid {pid} (not the provider child) has the key"
    # The positive control: the one child that needs it carries it, under the vendor's name.
    assert (VENDOR_ENV.encode() + b"=" + needle) in proc_file(browser["pid"], "environ").split(
        b"\0"
    )
    assert carried >= 1
    # The environment an agent's command sees: the agent's own, untouched by the keeper.
    agent_env = subprocess.run(
        ["env"], env={**b.env, "BAY_SESSION": "a"}, capture_output=True, timeout=10
    ).stdout
    assert needle not in agent_env
    assert VENDOR_ENV.encode() not in agent_env
    # Files while the browser runs too (its private HOME goes when it stops).
    running_files = _files(home)
    assert any("browsers" in p.parts for p in running_files)
    for path in running_files:
        assert needle not in _read(path), f"the key is in {path} (while running)"

    b.stop()
    end = time.monotonic() + 15
    while procfs.alive(keeper_pid) and time.monotonic() < end:
        time.sleep(0.05)

    for r in results:
        assert key not in r.stdout, r
        assert key not in r.stderr, r
    assert any("••••" + key[-4:] in r.stdout for r in results)  # views are masked, not absent
    files = _files(home)
    assert any(p.name == "keeper.log" for p in files)
    assert any(p.name == "keys.json" for p in files)  # the encrypted store is searched too
    for path in files:
        assert needle not in _read(path), f"the key is in {path}"
    registry = bay_paths({"BAY_HOME": str(home)}).registry
    with sqlite3.connect(registry) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        dump = [row for t in tables for row in db.execute(f"SELECT * FROM {t}")]
        audited = db.execute("SELECT count(*) FROM audit WHERE verb='keys'").fetchone()[0]
    assert dump
    assert audited >= 5
    assert key not in repr(dump)
    hooked = [r for r in b.recorded() if r.get("call", {}).get("verb") == "keys"]
    assert {"chars": len(key)} in [r["call"]["args"].get("value") for r in hooked]


def test_a_cluster_default_reaches_the_child_and_is_stripped_from_all_it_hands_on(
    home: Path,
) -> None:
    key = new_key()
    b = keyed_bay(home, BAY_TEST_KEY_SCOPE="user_or_cluster")
    b.ok("keeper", "start", env={"BAY_INTEGRATION_KEYED_API_KEY": key})
    b.ok("open", "about:blank")  # the agent's command: no key in its environment
    status = b.ok("keeper", "status")
    (browser,) = status["browsers"]
    assert (VENDOR_ENV.encode() + b"=" + key.encode()) in proc_file(
        browser["pid"], "environ"
    ).split(b"\0")
    tree = children(status["pid"])
    assert len(tree) >= 2  # the Playwright driver and the browser, at least
    for pid in tree:
        assert b"BAY_INTEGRATION_" not in proc_file(pid, "environ"), pid
        if not in_tree(pid, browser["pid"], tree):
            assert key.encode() not in proc_file(pid, "environ"), pid
    assert view_keys(b)["source"] == "cluster"


# -- refusals ---------------------------------------------------------------------------------


def test_a_key_on_argv_is_refused_and_never_sent(home: Path) -> None:
    key = new_key()
    b = keyed_bay(home)
    r = b("keys", "set", "keyed", "api_key", key)
    frame = assert_refused(r, "secret_on_argv")
    assert key not in r.stdout + r.stderr
    assert frame["way_out"].startswith("pipe the value into bay keys set keyed api_key on stdin")
    text = b("keys", "set", "keyed", "api_key", key, json_=False)
    assert text.code == 2
    assert "rotate it" in text.stderr
    assert not [r for r in b.recorded() if r.get("call", {}).get("verb") == "keys"]
    assert view_keys(b)["source"] == "none"
    # "-" reads it from stdin instead.
    assert b.ok("keys", "set", "keyed", "api_key", "-", stdin=key)["source"] == "user"


def test_a_set_without_a_value_over_the_api_is_asked_for_it(home: Path) -> None:
    from browserbay import client

    b = keyed_bay(home)
    b.ok("keeper", "start")
    paths = bay_paths({"BAY_HOME": str(home)})
    frame = client.call(
        "keys",
        {"action": "set", "integration": "keyed", "field": "api_key"},
        session={"id": "api", "origin": "api"},
        paths=paths,
    )
    frame = assert_refused(frame, "secret_required")
    assert frame["data"]["arg"] == "value"
    assert "args.value" in frame["way_out"]


def test_no_key_is_backend_no_key_and_starts_nothing(home: Path) -> None:
    b = keyed_bay(home)
    frame = assert_refused(b("open", "about:blank"), "backend_no_key")
    assert (frame["data"]["integration"], frame["data"]["field"]) == ("keyed", "api_key")
    assert frame["way_out"].startswith("bay keys set keyed api_key")
    assert "only your own key" in frame["message"]
    assert b.ok("keeper", "status")["browsers"] == []
    assert not [r for r in b.recorded() if r["hook"] == "bay_browser_started"]
    with sqlite3.connect(bay_paths({"BAY_HOME": str(home)}).registry) as db:
        assert db.execute("SELECT count(*) FROM browsers").fetchone() == (0,)
    # Never a silent fallback: the session's provider is still the keyed one.
    assert b("status").frame["profile"]["provider"] == "keyed"
    set_key(b, "keyed", "api_key", new_key())
    assert b.ok("open", "about:blank")["url"] == "about:blank"


def test_a_remote_key_bearing_provider_is_refused_before_resolving(home: Path) -> None:
    b = keyed_bay(home, BAY_DEFAULT_PROVIDER="keyed-remote")
    set_key(b, "keyed", "api_key", new_key())
    calls = home / "calls.txt"
    before = calls.read_text() if calls.exists() else ""
    frame = assert_refused(b("open", "about:blank"), "provider_needs_local_key")
    assert frame["data"]["provider"] == "keyed-remote"
    assert (calls.read_text() if calls.exists() else "") == before  # nothing was resolved
    assert b.ok("keeper", "status")["browsers"] == []


def test_the_keeper_resolves_once_at_launch(home: Path) -> None:
    b = keyed_bay(home)
    set_key(b, "keyed", "api_key", new_key())
    calls = home / "calls.txt"
    calls.unlink()
    b.ok("open", "about:blank")
    b.ok("--session", "second", "open", "about:blank", session=None)  # shares that browser
    assert calls.read_text().splitlines() == ["keyed api_key"]


def test_malformed_values_and_a_missing_store_are_named(home: Path) -> None:
    b = keyed_bay(home)
    bad = "bu_has a space in it"
    r = b("keys", "set", "cloud:browser-use", "api_key", stdin=bad)
    frame = assert_refused(r, "key_invalid")
    assert bad not in r.stdout + r.stderr
    assert "whitespace" in frame["message"]
    assert_refused(b("keys", "set", "cloud:nope", "api_key", stdin="x" * 20), "usage")
    assert_refused(b("keys", "set", "keyed"), "usage")
    b.stop()
    b.env["BAY_DISABLE_PLUGINS"] = "keys-file,keys-keyring"
    frame = assert_refused(
        b("keys", "set", "keyed", "api_key", stdin=new_key()), "key_store_unavailable"
    )
    assert "browserbay-keys-file" in frame["way_out"]


def test_the_hidden_prompt_reads_a_key_without_echoing_it(home: Path) -> None:
    key = new_key()
    b = keyed_bay(home)
    b.ok("keeper", "start")
    env = {**b.env, "BAY_SESSION": "tty"}
    pid, fd = pty.fork()
    if pid == 0:  # the child: bay on a terminal
        os.execve(BAY, [BAY, "keys", "set", "keyed", "api_key"], env)
    out = b""
    try:
        out += _read_until(fd, b"(hidden", 60)
        os.write(fd, key.encode() + b"\n")
        out += _read_until(fd, b"", 60)
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0, out
    assert b"bay keys set keyed api_key: value (hidden" in out
    assert key.encode() not in out, "the key was echoed"
    assert b"\xe2\x80\xa2" * 4 + key[-4:].encode() in out  # ••••<last 4>
    assert view_keys(b)["source"] == "user"


def _read_until(fd: int, marker: bytes, timeout: float) -> bytes:
    """Read from a pty until ``marker`` shows (or, for b"", until it closes)."""
    got = b""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            return got
        if not chunk:
            return got
        got += chunk
        if marker and marker in got:
            return got
    if marker:
        raise AssertionError(f"no {marker!r} within {timeout}s: {got!r}")
    return got


# -- bay keys test --------------------------------------------------------------------------------


def test_keys_test_reaches_the_fake_vendor_named_by_the_row_and_records_its_verdict(
    home: Path,
) -> None:
    key = "sk_" + secrets.token_hex(12)
    b = keyed_bay(home)
    with FakeVendor("/v1/sessions", headers={"steel-api-key": key}) as vendor:
        set_key(b, "cloud:steel", "api_url", vendor.url)  # first: a key is pinned to its host
        set_key(b, "cloud:steel", "api_key", key)
        verdict = b.ok("keys", "test", "cloud:steel")
        assert (verdict["ok"], verdict["host"], verdict["kind"]) == (
            True,
            vendor.host,
            "credential-exchange",
        )
        (seen,) = vendor.requests
        assert seen.headers["steel-api-key"] == key
        assert seen.path == "/v1/sessions"
        listed = view_keys(b, "cloud:steel")["last_test"]
        assert listed["ok"] is True
        assert listed["at"] > time.time() - 60
        assert "last test: ok" in b("keys", "list", json_=False).stdout

        set_key(b, "cloud:steel", "api_key", "sk_" + secrets.token_hex(12))
        frame = assert_refused(b("keys", "test", "cloud:steel"), "key_test_failed")
        assert f"{vendor.host} refused the key (HTTP 401)" in frame["message"]
        assert frame["way_out"].startswith("bay keys set cloud:steel api_key")
        assert view_keys(b, "cloud:steel")["last_test"]["ok"] is False
        assert len(vendor.requests) == 2

    moved = set_key(b, "cloud:steel", "api_url", "http://steel.invalid")
    assert moved["cleared"] == ["api_key"]  # another host: the key was dropped
    set_key(b, "cloud:steel", "api_key", key)
    frame = assert_refused(b("keys", "test", "cloud:steel"), "key_test_no_host")
    assert frame["data"]["field"] == "api_url"
    assert key not in json.dumps(b.ok("keys", "list"))


def test_the_key_needing_providers_are_listed_with_their_key_scope(home: Path) -> None:
    b = keyed_bay(home, BAY_DEFAULT_PROVIDER="cloud:steel")
    providers = {p["id"]: p for p in b.ok("plugins")["providers"]}
    for pid in ("cloud:steel", "cloud:browser-use"):
        assert providers[pid]["capabilities"]["key_scope"] == "user_or_cluster"
    for pid in ("cloud:steel", "cloud:browser-use"):  # runnable: the key is asked at launch
        assert providers[pid]["runnable"] is True
    frame = assert_refused(b("open", "about:blank"), "backend_no_key")
    assert frame["way_out"].startswith("bay keys set cloud:steel api_key")


def test_keys_act_on_no_profile_even_with_two_attached(home: Path) -> None:
    b = keyed_bay(home, BAY_DEFAULT_PROVIDER="chromium")
    for label in ("work", "play"):
        b.ok("new", label)
        b.ok("use", label)
    assert_refused(b("get", "title"), "profile_required")  # a page verb must say which
    assert view_keys(b)["source"] == "none"  # bay keys needs none: no profile_required
    assert set_key(b, "keyed", "api_key", new_key())["source"] == "user"
    leases = b.ok("status")["leases"]
    assert not [lease for lease in leases if lease["profile"]["ephemeral"]]  # none left behind
