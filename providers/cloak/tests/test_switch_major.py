"""The cloak row's Chromium major, read by the version ladder of ``bay backend cloak``: from
the vendor's cache directory name without running the binary (a Pro build checks its licence
at start), and from ``--version`` only for a binary named by CLOAKBROWSER_BINARY_PATH."""

from __future__ import annotations

from pathlib import Path

import pytest

from browserbay_cloak import contract, plugin


def _script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o700)
    return path


def test_the_cached_build_s_major_comes_from_its_directory_never_from_running_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = tmp_path / "ran"
    version = contract.pinned_version({})
    assert version is not None
    binary = contract.version_dir(version, {contract.CACHE_ENV: str(tmp_path)}) / (
        contract.binary_relpath()
    )
    _script(binary, f"touch {ran}; echo 'Chromium 999.0.0.0'")
    monkeypatch.delenv(contract.BINARY_ENV, raising=False)
    monkeypatch.setenv(contract.CACHE_ENV, str(tmp_path))
    assert plugin.browser_major() == int(version.split(".")[0])
    assert not ran.exists()  # the binary was never started


def test_a_binary_named_by_the_variable_is_asked_its_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stand_in = _script(tmp_path / "bin" / "chrome", "echo 'Chromium 151.0.7000.1'")
    monkeypatch.setenv(contract.BINARY_ENV, str(stand_in))
    assert plugin.browser_major() == 151
    _script(stand_in, "echo 'no version here at all'")  # negative control
    assert plugin.browser_major() is None
    monkeypatch.setenv(contract.BINARY_ENV, str(tmp_path / "missing"))
    assert plugin.browser_major() is None
