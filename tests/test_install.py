"""`bay install` / `bay uninstall`: the installer runs in bay's own environment (the Python
that runs `bay`), the plugin shows in `bay plugins` once the keeper restarts, and a keeper
that runs browsers is left alone. The example distribution in examples/approval-gate is
installed from its path, without the network, into a throwaway venv that sees the
workspace's packages, so the workspace's own .venv is never changed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from browserbay_testing import Result, assert_refused

REPO = Path(__file__).resolve().parents[1]

EXAMPLE = REPO / "examples" / "approval-gate"


@dataclass
class Env:
    python: Path
    env: dict[str, str]

    def __call__(self, *args: str, json_: bool = True) -> Result:
        argv = [str(self.python), "-m", "browserbay_cli.main", *args, *(["--json"] * json_)]
        p = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            env=self.env,
            timeout=180,
            stdin=subprocess.DEVNULL,
        )
        return Result(p.returncode, p.stdout, p.stderr)

    def ok(self, *args: str) -> Any:
        r = self(*args)
        assert r.code == 0, (args, r)
        return r.data

    def plugin_names(self) -> list[str]:
        return [p["name"] for p in self.ok("plugins")["plugins"]]


@pytest.fixture
def venv(tmp_path: Path) -> Iterator[Env]:
    if shutil.which("uv") is None:
        pytest.skip("uv is not on PATH (bay install falls back to pip, which this venv lacks)")
    target = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(target)], check=True)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = target / "lib" / version / "site-packages"
    main_site = sysconfig.get_paths()["purelib"]
    # The workspace's packages (and their editable .pth files) without touching .venv.
    (site / "_workspace.pth").write_text(f"import site; site.addsitedir({main_site!r})\n")
    home = Path(f"/tmp/bay-i-{os.getpid()}")
    shutil.rmtree(home, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BAY_", "VIRTUAL_ENV"))}
    env.update(BAY_HOME=str(home), BAY_SESSION="installer", UV_OFFLINE="1")
    e = Env(target / "bin" / "python", env)
    yield e
    e("keeper", "stop")
    shutil.rmtree(home, ignore_errors=True)


def test_install_shows_the_plugin_and_uninstall_removes_it(venv: Env) -> None:
    assert "approval_gate" not in venv.plugin_names()
    venv.ok("open", "about:blank")  # a browser runs: the keeper is busy

    installed = venv.ok("install", "--no-deps", str(EXAMPLE))
    assert installed["installer"] == "uv"
    assert installed["python"] == str(venv.python)
    assert installed["installed"] == [
        {
            "name": "approval_gate",
            "distribution": "browserbay-approval-gate",
            "version": "0.1.0",
            "hooks": ["bay_after_verb", "bay_before_action"],
            "builtin": False,
        }
    ]
    assert installed["keeper"].startswith("busy (1 browser(s) running)")
    assert "approval_gate" not in venv.plugin_names()  # the busy keeper was left alone

    venv.ok("keeper", "stop")
    listing = {p["name"]: p for p in venv.ok("plugins")["plugins"]}
    row = listing["approval_gate"]
    assert {k: row[k] for k in installed["installed"][0]} == installed["installed"][0]

    # Uninstalling with an idle keeper stops it, so the next command no longer loads it.
    r = venv("uninstall", "browserbay-approval-gate", json_=False)
    assert r.code == 0, r
    assert r.stdout.splitlines() == [
        "removed plugin approval_gate (browserbay-approval-gate 0.1.0)",
        "keeper: stopped; the next command starts one with this change",
    ]
    assert "approval_gate" not in venv.plugin_names()


def test_installing_with_an_idle_keeper_restarts_it(venv: Env) -> None:
    pid = venv.ok("keeper", "start")["pid"]
    r = venv("install", "--no-deps", str(EXAMPLE), json_=False)
    assert r.code == 0, r
    lines = r.stdout.splitlines()
    assert lines[0].split() == [
        "approval_gate",
        "browserbay-approval-gate",
        "0.1.0",
        "bay_after_verb,",
        "bay_before_action",
    ]
    assert lines[-1] == "keeper: stopped; the next command starts one with this change"
    assert venv.ok("keeper", "start")["pid"] != pid
    assert "approval_gate" in venv.plugin_names()
    assert venv.ok("uninstall", "browserbay-approval-gate")["removed"] == [
        {"name": "approval_gate", "distribution": "browserbay-approval-gate", "version": "0.1.0"}
    ]


def test_install_failures_are_typed(venv: Env, tmp_path: Path) -> None:
    frame = assert_refused(
        venv("install", "--no-deps", str(tmp_path / "nowhere")), "install_failed"
    )
    assert frame["data"]["verb"] == "install"
    assert frame["data"]["reason"].startswith("uv exited")
    assert frame["data"]["output"]
    frame = assert_refused(venv("uninstall", "browserbay-core"), "usage")
    assert "bay itself" in frame["message"]
    assert_refused(venv("install"), "usage")


def test_without_an_installer_the_refusal_says_how_to_get_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from browserbay_cli import extras

    monkeypatch.setattr(extras.shutil, "which", lambda name: None)
    monkeypatch.setattr(extras.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(extras.Refusal) as refused:
        extras.installer("install")
    frame = assert_refused(refused.value, "install_failed")
    assert "install uv" in frame["way_out"]
    monkeypatch.setattr(extras.importlib.util, "find_spec", lambda name: object())
    cmd, tool = extras.installer("uninstall")
    assert (cmd, tool) == ([sys.executable, "-m", "pip", "uninstall", "-y"], "pip")


def test_install_and_uninstall_are_in_the_verb_table_and_never_reach_the_keeper() -> None:
    from browserbay.verbs import BY_NAME, LOCAL

    for name in ("install", "uninstall", "mcp"):
        assert BY_NAME[name].scope == LOCAL
    assert json.dumps(BY_NAME["install"].to_row())
