"""The cloak driver: the provider conformance suite on a STAND-IN binary (Debian Chromium via
``CLOAKBROWSER_BINARY_PATH``; stock Chromium ignores the fingerprint switches), and the seed
rule (a profile's stored seed, never minted behind its back)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from browserbay import procfs
from browserbay.demo.server import serve
from browserbay.model import LaunchSpec
from browserbay.refusals import Refusal
from browserbay.testing import check_provider
from browserbay_cloak import contract, plugin
from browserbay_cloak.driver import CloakHandle, Seats, seed_of
from browserbay_cloak.find import find_binary
from browserbay_testing import assert_refused

STAND_IN = "/usr/lib/chromium/chromium"


@pytest.mark.browser
@pytest.mark.skipif(not Path(STAND_IN).exists(), reason="the stand-in Chromium is missing")
def test_conformance_on_the_stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BAY_HOME", str(tmp_path / "bay"))
    monkeypatch.setenv(contract.BINARY_ENV, STAND_IN)
    server, base = serve()
    try:
        (row,) = plugin.bay_providers()
        check_provider(row, tmp_path, f"{base}/form.html", options=plugin.check_options({}))
    finally:
        server.shutdown()


def _spec(tmp_path: Path, persistent: bool, **options: str) -> LaunchSpec:
    udd = tmp_path / "bp-0000abcd" if persistent else None
    return LaunchSpec("bb-1", tmp_path, user_data_dir=udd, options=options)


def test_a_profile_launches_with_its_stored_seed_and_never_a_new_one(tmp_path: Path) -> None:
    assert seed_of(_spec(tmp_path, True, seed="54321")) == "54321"
    frame = assert_refused(_failing(lambda: seed_of(_spec(tmp_path, True))), "backend_unavailable")
    assert "bp-0000abcd has no fingerprint seed" in frame["message"]
    assert frame["way_out"].startswith("bay new <label> --provider cloak")
    assert contract.valid_seed(seed_of(_spec(tmp_path, False)))  # ephemeral: one launch's seed


def test_the_binary_is_found_in_the_vendors_cache_layout(tmp_path: Path) -> None:
    env = {contract.CACHE_ENV: str(tmp_path), contract.VERSION_ENV: "146.0.7680.177.5"}
    frame = assert_refused(_failing(lambda: find_binary(env)), "backend_unavailable")
    assert frame["way_out"].startswith("bay provider install cloak")
    pro = tmp_path / "chromium-146.0.7680.177.5-pro" / contract.binary_relpath()
    pro.parent.mkdir(parents=True)
    pro.write_text("#!/bin/sh\n")
    assert_refused(_failing(lambda: find_binary(env)), "backend_unavailable")  # not executable
    pro.chmod(0o755)
    assert find_binary(env) == pro


def _failing(call: Callable[[], object]) -> Refusal:
    try:
        call()
    except Refusal as refused:
        return refused
    raise AssertionError("no refusal")


def test_doctor_says_where_the_binary_is_or_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(contract.CACHE_ENV, str(tmp_path))
    monkeypatch.delenv(contract.BINARY_ENV, raising=False)
    (row,) = plugin.bay_doctor_checks()
    assert (row.name, row.status) == ("cloak", "warn")
    assert row.fix.startswith("bay provider install cloak")
    monkeypatch.setenv(contract.BINARY_ENV, "/bin/sh")
    (row,) = plugin.bay_doctor_checks()
    assert (row.status, row.detail, row.fix) == ("ok", "/bin/sh", "")


def test_a_seat_is_not_held_by_a_pid_another_process_has_since() -> None:
    """The seat count drops a browser whose pid now names another process (its start time
    differs), as it drops one that died."""
    started = procfs.start_time(os.getpid())
    assert started is not None
    ours, reused = (
        CloakHandle("bb-ours", None, None, os.getpid()),
        CloakHandle("bb-reused", None, None, os.getpid()),
    )
    ours.started, reused.started = started, started - 1
    seats = Seats()
    seats.taken(ours)
    seats.taken(reused)
    assert seats.in_use() == {"bb-ours": "ephemeral"}
