"""The chromium provider: finding the browser without downloading anything, the launch
flags, and the core's conformance suite against the real Debian Chromium."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from browserbay.model import LaunchSpec
from browserbay.testing import check_provider
from browserbay_chromium import plugin
from browserbay_chromium.driver import (
    CLOSED_NETWORK_FLAGS,
    browser_env,
    launch_args,
    launch_options,
)
from browserbay_chromium.find import CANDIDATE_PATHS, NotFound, find_chromium


def _exe(path: Path) -> Path:
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_bay_chromium_path_wins_and_a_bad_one_is_named(tmp_path: Path) -> None:
    exe = _exe(tmp_path / "my-chrome")
    assert find_chromium({"BAY_CHROMIUM_PATH": str(exe)}) == exe
    with pytest.raises(NotFound, match="is not an executable file") as info:
        find_chromium({"BAY_CHROMIUM_PATH": str(tmp_path / "missing")})
    assert "BAY_CHROMIUM_PATH" in info.value.fix


def test_debian_real_binary_comes_before_the_wrapper_script() -> None:
    assert CANDIDATE_PATHS[0] == "/usr/lib/chromium/chromium"
    if Path("/usr/lib/chromium/chromium").exists():
        assert find_chromium({"PATH": "/usr/bin:/bin"}) == Path("/usr/lib/chromium/chromium")


def test_path_lookup_and_nothing_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import browserbay_chromium.find as find

    monkeypatch.setattr(find, "CANDIDATE_PATHS", ())
    _exe(tmp_path / "chromium")
    assert find_chromium({"PATH": str(tmp_path)}) == tmp_path / "chromium"
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(NotFound, match="no Chromium, Chrome or Edge was found") as info:
        find_chromium({"PATH": str(empty)})
    assert "apt-get install -y chromium" in info.value.fix


def test_flags_and_environment_of_the_browser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BAY_INTEGRATION_X_API_KEY", "must-not-leak")
    spec = LaunchSpec(browser_id="bb-12345678", home=tmp_path, env={"ONLY_FOR_ME": "1"})
    args = launch_args(spec)
    for flag in CLOSED_NETWORK_FLAGS:
        assert flag in args
    assert "--bay-browser=bb-12345678" in args
    # The renderer sandbox: off only as root (Chromium refuses it there), and Playwright is
    # told chromium_sandbox=True so that it adds no --no-sandbox of its own for anyone
    # (tests/test_sandbox.py reads the real argv of a non-root user's browser).
    assert ("--no-sandbox" in args) == (os.geteuid() == 0)
    options = launch_options(spec, tmp_path / "chromium", args, {})
    assert options["chromium_sandbox"] is True
    assert not any("remote-debugging" in a for a in args)
    env = browser_env(spec)
    assert env["HOME"] == str(tmp_path)
    assert env["XDG_CONFIG_HOME"].startswith(str(tmp_path))
    assert env["ONLY_FOR_ME"] == "1"
    assert "BAY_INTEGRATION_X_API_KEY" not in env


def test_the_provider_row() -> None:
    (row,) = plugin.bay_providers()
    assert row.id == "chromium"
    assert row.tier == 1
    assert row.capabilities.has_cdp
    assert row.capabilities.ephemeral_contexts
    assert row.probe is not None
    assert row.probe() is None  # this machine has Chromium (the setup installs it)


def test_conformance_with_the_real_chromium(tmp_path: Path) -> None:
    from browserbay.demo.server import serve

    server, base = serve()
    try:
        (row,) = plugin.bay_providers()
        check_provider(row, tmp_path, f"{base}/form.html")
    finally:
        server.shutdown()
