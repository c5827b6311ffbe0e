"""The example third-party provider (examples/provider-phone) from the outside: a fresh venv
holding only browserbay-core, browserbay-cli and browserbay-phone, installed from their paths
with no network (the dependencies from this workspace's lock, out of uv's cache), where
`bay plugins` lists it, its own tests (the conformance suite) pass, and a profile on it opens
pages that see a phone. Real Chromium; no workspace plugin is in that venv."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browserbay_testing import wait_for_no_keeper

REPO = Path(__file__).resolve().parents[1]

EXAMPLE = REPO / "examples" / "provider-phone"
UV = shutil.which("uv")
CORE_AND_CLI = (str(REPO / "core"), str(REPO / "cli"))

pytestmark = pytest.mark.skipif(UV is None, reason="uv is not on PATH (the workspace's tool)")


def _uv(*args: str) -> None:
    assert UV is not None
    done = subprocess.run([UV, *args], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, f"uv {' '.join(args)}:\n{done.stdout}\n{done.stderr}"


@pytest.fixture(scope="module")
def venv() -> Iterator[Path]:
    """A fresh venv: the locked dependencies of core and cli (plus pytest) from uv's cache,
    then core and cli from their paths, then the example with `bay install <path>` — all
    offline."""
    root = Path(tempfile.mkdtemp(prefix="bay-x-", dir="/tmp"))
    py = root / "venv" / "bin" / "python"
    locks = root / "locks"
    locks.mkdir()
    common = ["--frozen", "--no-emit-workspace", "--format", "pylock.toml", "-q"]
    _uv("export", "--package", "browserbay-cli", "--no-dev", *common, "-o", f"{locks}/pylock.toml")
    _uv("export", "--only-group", "dev", *common, "-o", f"{locks}/pylock.dev.toml")
    _uv("venv", "-q", str(root / "venv"), "--python", str(REPO / ".venv" / "bin" / "python"))
    for lock in ("pylock.toml", "pylock.dev.toml"):
        _uv("pip", "install", "--offline", "-q", "--python", str(py), "-r", str(locks / lock))
    _uv("pip", "install", "--offline", "-q", "--python", str(py), *CORE_AND_CLI)
    # the example as a user installs a plugin: `bay install <path>` (uv in bay's own venv)
    bay = root / "venv" / "bin" / "bay"
    env = _env(root / "home", UV_OFFLINE="1")
    done = subprocess.run(
        [str(bay), "install", str(EXAMPLE)], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.startswith("phone "), done.stdout  # the plugin it added, as listed
    assert "browserbay-phone" in done.stdout
    assert "bay_providers" in done.stdout
    _uv("pip", "check", "--python", str(py))
    yield root / "venv"
    shutil.rmtree(root, ignore_errors=True)


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BAY_", "PYTHON", "VIRTUAL"))}
    env.update(BAY_HOME=str(home), BAY_SESSION="phone-test", **extra)
    return env


def _bay(venv: Path, env: dict[str, str], *args: str) -> Any:
    done = subprocess.run(
        [str(venv / "bin" / "bay"), *args, "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    frame = json.loads(done.stdout)
    assert done.returncode == 0, (args, frame, done.stderr)
    return frame["data"]


def test_the_venv_holds_only_core_cli_and_the_example(venv: Path) -> None:
    listing = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list", "--format", "json"],
        capture_output=True,
        text=True,
    )
    if listing.returncode != 0:  # a uv venv has no pip: ask uv
        assert UV is not None
        listing = subprocess.run(
            [UV, "pip", "list", "--python", str(venv / "bin" / "python"), "--format", "json"],
            capture_output=True,
            text=True,
            check=True,
        )
    names = {row["name"] for row in json.loads(listing.stdout)}
    ours = sorted(n for n in names if n.startswith("browserbay"))
    assert ours == ["browserbay-cli", "browserbay-core", "browserbay-phone"]
    where = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import browserbay_phone; print(browserbay_phone.__file__)",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert where.startswith(str(venv)), where  # the installed copy, not the source tree


def test_bay_plugins_lists_it_and_a_profile_on_it_is_a_phone(venv: Path, demo: str) -> None:
    home = Path(tempfile.mkdtemp(prefix="bay-xp-", dir="/tmp"))
    env = _env(home, BAY_DEFAULT_PROVIDER="phone")
    try:
        data = _bay(venv, env, "plugins")
        plugin = next(p for p in data["plugins"] if p["name"] == "phone")
        assert plugin["distribution"] == "browserbay-phone"
        assert plugin["version"] == "0.1.0"
        assert plugin["hooks"] == ["bay_doctor_checks", "bay_providers"]
        assert plugin["error"] is None
        provider = next(p for p in data["providers"] if p["id"] == "phone")
        assert provider["tier"] == 1
        assert "chromium" not in {p["id"] for p in data["providers"]}  # nothing else is here

        probe = "[navigator.userAgent, screen.width, devicePixelRatio, navigator.maxTouchPoints]"
        # a persistent profile on the provider
        _bay(venv, env, "new", "handset", "--provider", "phone")
        _bay(venv, env, "use", "handset")
        _bay(venv, env, "open", f"{demo}/form.html")
        ua, width, scale, touch = _bay(venv, env, "eval", probe)["value"]
        assert "Android" in ua
        assert "Mobile" in ua
        assert width == 412  # Pixel 7
        assert scale == 2.625
        assert touch > 0
        # and a session's ephemeral browser (the keeper's contexts get context_options)
        other = {**env, "BAY_SESSION": "phone-eph"}
        _bay(venv, other, "open", f"{demo}/form.html")
        ua2, width2, _, _ = _bay(venv, other, "eval", probe)["value"]
        assert (ua2, width2) == (ua, 412)
        doctor = subprocess.run(
            [str(venv / "bin" / "bay"), "doctor", "--json"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        row = next(r for r in json.loads(doctor.stdout)["data"]["checks"] if r["name"] == "phone")
        assert (row["area"], row["status"]) == ("browser", "ok")
        without = subprocess.run(
            [str(venv / "bin" / "bay"), "doctor", "--json"],
            capture_output=True,
            text=True,
            env={**env, "BAY_DISABLE_PLUGINS": "phone"},
            timeout=120,
        )
        names = {r["name"] for r in json.loads(without.stdout)["data"]["checks"]}
        assert "phone" not in names  # the row came from the plugin
    finally:
        subprocess.run(
            [str(venv / "bin" / "bay"), "keeper", "stop"], env=env, capture_output=True, timeout=60
        )
        wait_for_no_keeper(home)  # its browsers write into the home until it has exited
        shutil.rmtree(home, ignore_errors=True)


def test_its_own_tests_pass_in_the_fresh_venv(venv: Path, tmp_path: Path) -> None:
    """The example's tests, conformance suite included, against the installed distribution."""
    done = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pytest",
            str(EXAMPLE / "tests"),
            "-v",
            "-p",
            "no:cacheprovider",
            "-c",
            str(EXAMPLE / "pyproject.toml"),
            "--rootdir",
            str(EXAMPLE),
            "--basetemp",
            str(tmp_path / "t"),
        ],
        capture_output=True,
        text=True,
        env=_env(tmp_path / "home"),
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "test_phone.py::test_conformance PASSED" in done.stdout, done.stdout[-4000:]
    summary = done.stdout.strip().splitlines()[-1]
    assert " passed" in summary
    assert "failed" not in summary
    assert "skipped" not in summary, summary  # Chromium is here: nothing may be skipped
