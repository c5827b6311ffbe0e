"""The lean launcher (browserbay_cli.launcher): ``bay`` as ``python -S`` with the client's
directories on the path. A warm verb loads no ``site``; what leaves the hot path reads the
same as under the installer's console script; a launcher whose directories are gone, or
whose interpreter path cannot go on a ``#!`` line, still runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from browserbay_cli import launcher

from .test_cli import _imported, fake_keeper

CONSOLE_SCRIPT = """#!{python}
import sys
from browserbay_cli.main import main
sys.exit(main())
"""


def _write(path: Path, text: str) -> str:
    path.write_text(text)
    path.chmod(0o755)
    return str(path)


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)


def test_a_warm_verb_through_the_launcher_loads_no_site(tmp_path: Path) -> None:
    bay = tmp_path / "bay"
    text = launcher.write(str(bay))
    assert text.startswith(f"#!{sys.executable} -S\n")
    assert os.stat(bay).st_mode & 0o777 == 0o755
    env = {"BAY_HOME": str(tmp_path / "home"), "BAY_SESSION": "lean", "PATH": "/usr/bin:/bin"}
    with fake_keeper(tmp_path / "home") as got:
        code, loaded = _imported([str(bay), "get", "title"], env)
    assert code == 0
    assert "site" not in loaded
    assert [f["verb"] for f in got if "verb" in f] == ["get"]


def test_off_the_hot_path_the_launcher_answers_as_the_console_script(tmp_path: Path) -> None:
    """``bay --help`` lists the plugins not installed here from the installed distributions'
    metadata, and an unknown verb is named as a plugin's: both need site-packages, which
    the launcher completes first (without, every plugin read as not installed)."""
    lean = str(tmp_path / "bay")
    launcher.write(lean)
    console = _write(tmp_path / "bay-console", CONSOLE_SCRIPT.format(python=sys.executable))
    env = {"BAY_HOME": str(tmp_path / "home"), "BAY_NO_AUTOSTART": "1", "PATH": "/usr/bin:/bin"}
    for argv in (["--help"], ["trace"], ["help"], ["bay-no-such-verb", "--json"]):
        ours, theirs = _run([lean, *argv], env), _run([console, *argv], env)
        assert (ours.returncode, ours.stdout, ours.stderr) == (
            theirs.returncode,
            theirs.stdout,
            theirs.stderr,
        ), argv
    assert "trace" in _run([lean, "trace"], env).stderr


def test_a_launcher_whose_directories_are_gone_falls_back_to_site(tmp_path: Path) -> None:
    text = launcher.script(sys.executable, [str(tmp_path / "moved")])
    bay = _write(tmp_path / "bay", text)
    r = _run([bay, "--version"], {"PATH": "/usr/bin:/bin"})
    assert (r.returncode, r.stdout.split()[0]) == (0, "bay"), r.stderr


def test_an_interpreter_path_with_a_space_is_started_through_sh(tmp_path: Path) -> None:
    spaced = tmp_path / "a dir"
    spaced.mkdir()
    (spaced / "python").symlink_to(sys.executable)
    text = launcher.script(str(spaced / "python"), launcher.package_dirs())
    assert text.startswith("#!/bin/sh\n")
    bay = _write(tmp_path / "bay", text)
    r = _run([bay, "--version", "--json"], {"PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    assert '"version"' in r.stdout


def test_the_workspace_venv_runs_the_lean_launcher() -> None:
    """scripts/setup.sh writes it over the console script ``uv sync`` installs: as ``bay``,
    or as ``bay-py`` beside the native client (cli/tests/test_native.py)."""
    bay = Path(sys.executable).with_name(launcher.PYTHON_CLIENT)
    first = bay.read_text().splitlines()[0]
    assert first.endswith(" -S"), f"{bay} is not the lean launcher: run scripts/setup.sh"
