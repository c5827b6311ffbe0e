"""keys-keyring against a REAL Secret Service: a private D-Bus session bus and a
gnome-keyring daemon on it, unlocked without a prompt (browserbay_testing.secretservice).
Nothing here touches the user's own session bus or keyring."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from browserbay.model import KeySource
from browserbay_keys_keyring import plugin
from browserbay_testing.secretservice import missing_binaries, private_secret_service

KEY = "sk_keyring0123456789abcdIJKL"


@pytest.fixture
def secret_service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    missing = missing_binaries()
    assert not missing, f"missing {missing}: run scripts/setup.sh"
    with private_secret_service(tmp_path / "ss") as env:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        plugin.reset()
        yield env
        plugin.reset()


def _source() -> KeySource:
    (source,) = plugin.bay_key_sources()
    return source


def test_the_source_row_is_the_users_own_and_asked_first() -> None:
    source = _source()
    assert (source.name, source.precedence, source.order) == ("keyring", "user", 10)
    assert source.set is not None
    assert source.delete is not None
    assert source.probe is not None


def test_set_get_delete_in_a_real_secret_service(secret_service: dict[str, str]) -> None:
    source = _source()
    assert source.set is not None
    assert source.delete is not None
    assert source.probe is not None
    assert source.probe() is None
    assert "SecretService" in type(plugin.Keychain().backend()).__module__
    assert source.get("cloud:steel", "api_key") is None
    source.set("cloud:steel", "api_key", KEY)
    assert source.get("cloud:steel", "api_key") == KEY
    # It is a real keychain item, visible to any Secret Service client of this session.
    out = subprocess.run(
        ["secret-tool", "lookup", "service", "browserbay:cloud:steel", "username", "api_key"],
        capture_output=True,
        text=True,
        env={**os.environ, **secret_service},
        timeout=10,
    )
    assert out.stdout == KEY, out
    source.delete("cloud:steel", "api_key")
    source.delete("cloud:steel", "api_key")  # no error when there is none
    assert source.get("cloud:steel", "api_key") is None


def test_timings_in_a_real_secret_service(secret_service: dict[str, str]) -> None:
    """Reported, not asserted (a loaded machine is slower): see bench/keys_file.py."""
    source = _source()
    assert source.set is not None
    source.set("cloak", "license_key", "cb_warmup0123")
    t0 = time.perf_counter()
    source.set("cloak", "license_key", "cb_0123456789")
    t1 = time.perf_counter()
    assert source.get("cloak", "license_key") == "cb_0123456789"
    t2 = time.perf_counter()
    print(f"keyring set {1000 * (t1 - t0):.1f} ms, get {1000 * (t2 - t1):.1f} ms")


def test_without_a_session_bus_the_source_is_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={tmp_path}/no-bus")
    monkeypatch.delenv("PYTHON_KEYRING_BACKEND", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # no keyringrc of the user's
    plugin.reset()
    try:
        problem = _source().probe()  # type: ignore[misc]
        assert problem is not None
        assert problem.startswith("no usable keychain"), problem
    finally:
        plugin.reset()
