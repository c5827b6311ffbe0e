"""What a new user meets first: ``bay --help`` is bay's usage (it printed the help of the verb
``help``), ``bay --version``, a wheel set built offline from the checkout installs into a
fresh venv and runs, install hints name commands that exist (none of browserbay's
distributions is on PyPI: the hints said ``pip install browserbay-<x>``), a plugin verb that is
not installed says which plugin adds it and how to install it (it was an unknown verb), and
``bay keeper status`` never starts a keeper (it started one to ask it)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from browserbay import __version__, distributions
from browserbay.plugins import load_plugins
from browserbay_testing import BAY, Bay, assert_refused

REPO = Path(__file__).resolve().parents[1]


def _bay(bay: str, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"BAY_HOME": str(home), "PATH": f"{Path(bay).parent}:/usr/bin:/bin"}
    return subprocess.run([bay, *args], capture_output=True, text=True, env=env, timeout=60)


def test_bay_help_flag_is_bays_usage_and_bay_help_the_manual(tmp_path: Path) -> None:
    for flag in ("--help", "-h"):
        r = _bay(BAY, tmp_path, flag)
        assert r.returncode == 0, r
        assert r.stdout.startswith("usage: bay <verb>")
        assert "bay help <verb>" in r.stdout
        assert "  snapshot " in r.stdout  # the verbs
        assert not r.stdout.startswith("bay help [verb]")  # the old answer: help's own help
    r = _bay(BAY, tmp_path, "help")
    assert r.stdout.startswith("bay: a browser of your own.")  # the agent manual
    r = _bay(BAY, tmp_path, "--version")
    assert (r.returncode, r.stdout) == (0, f"bay {__version__}\n")
    r = _bay(BAY, tmp_path, "click", "--help")
    assert r.stdout.startswith("bay click <target>")
    assert not (tmp_path / "run" / "keeper.sock").exists()


def test_bay_keeper_status_does_not_start_a_keeper(tmp_path: Path) -> None:
    """On the old code it started one to ask it, and answered its status."""
    b = Bay(tmp_path)
    try:
        r = b("keeper", "status", json_=False, session=None)
        assert r.code == 0, r
        assert r.stdout.startswith("no keeper is running")
        assert "way out: bay keeper start" in r.stdout
        data = b.ok("keeper", "status", session=None)
        assert data["running"] is False
        assert data["way_out"].startswith("bay keeper start")
        assert not (tmp_path / "run" / "keeper.sock").exists(), "a keeper started to report"
        b.ok("keeper", "start", session=None)
        assert b.ok("keeper", "status", session=None)["pid"]
    finally:
        b.stop()


def test_the_distribution_table_is_the_workspaces() -> None:
    """Every first-party distribution is a workspace package at its path, and the verbs each
    is said to add are the ones its plugin adds (the dev venv has them all installed)."""
    for d in distributions.FIRST_PARTY:
        project = tomllib.loads((REPO / d.path / "pyproject.toml").read_text())["project"]
        assert project["name"] == d.name
        assert (REPO / d.path / "src" / d.module).is_dir(), d
        assert d.installed, d
    table = load_plugins(strict=True).verb_table()
    dist_of = {ep.name: ep.dist.name for ep in entry_points(group="browserbay") if ep.dist}
    added: dict[str, set[str]] = {}
    for name, verb in table.items():
        dist = dist_of.get(verb.plugin or "")  # None: the core's own (keys, provider)
        if dist is not None:
            added.setdefault(dist, set()).add(name)
    said = {d.name: set(d.verbs) - {"mcp"} for d in distributions.FIRST_PARTY if d.verbs}
    assert {k: v for k, v in said.items() if v} == added
    assert distributions.checkout() == str(REPO)


def test_no_hint_names_a_package_that_is_not_published() -> None:
    """``pip install browserbay-<x>`` and ``bay install browserbay-<x>`` name packages no index
    has: the way outs and docs say how to install from the checkout or a wheel instead."""
    bad = re.compile(r"(pip|bay|uv pip|pipx) install (--\S+ )*browserbay(-[a-z][a-z-]*)?(?![\w<-])")
    found = []
    for path in [*REPO.glob("*.md"), *(REPO / "docs").rglob("*.md")] + [
        p
        for top in ("core", "cli", "plugins", "providers", "examples", "scripts")
        for p in (REPO / top).rglob("*.py")
        if "tests" not in p.parts
    ]:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if bad.search(line):
                found.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert found == []


def test_a_missing_providers_hint_is_the_checkout_directory() -> None:
    hint = distributions.provider_hint("cloud:steel")
    assert hint == f"bay install {REPO}/providers/cloud   (then bay plugins)"
    assert distributions.provider_hint("nobody-knows").startswith("bay install <")


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """browserbay-core and browserbay-cli built as wheels from the checkout, offline, and
    installed into a fresh venv from those files alone (``--no-index --find-links``). Their
    third-party dependencies are left out (``--no-deps``): ``bay`` itself runs on the standard
    library, and the keeper's (Playwright…) come from a package index, which a test here
    does not reach. ``uv`` builds (``pip wheel`` would need hatchling installed)."""
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH (scripts/setup.sh installs it)")
    root = tmp_path_factory.mktemp("wheels")
    wheels = root / "wheels"
    for package in ("core", "cli"):
        subprocess.run(
            [uv, "build", "--offline", "--wheel", "-o", str(wheels), str(REPO / package)],
            check=True,
            capture_output=True,
            timeout=120,
        )
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    subprocess.run(
        [
            *(uv, "pip", "install", "--offline", "--no-index", "--no-deps"),
            *("--find-links", str(wheels), "--python", str(venv / "bin" / "python")),
            *("browserbay-cli", "browserbay-core"),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return venv


def test_a_wheel_set_built_offline_installs_and_bay_runs(wheel_venv: Path, tmp_path: Path) -> None:
    bay = str(wheel_venv / "bin" / "bay")
    r = _bay(bay, tmp_path, "--version")
    assert (r.returncode, r.stdout) == (0, f"bay {__version__}\n"), r
    r = _bay(bay, tmp_path, "--help")
    assert r.returncode == 0, r
    assert r.stdout.startswith("usage: bay <verb>")
    # No plugin is installed there: its verbs are listed as such, with how to install them
    # (no checkout to name: the wheels are not one).
    assert "not installed here" in r.stdout
    assert (
        "  live, handoff: browserbay-liveview-web, bay install <browserbay checkout>/plugins/"
        "liveview-web\n"
    ) in r.stdout
    assert "not on PyPI: from a checkout, or a wheel built there with uv build" in r.stdout
    assert "pip install" not in r.stdout
    r = _bay(bay, tmp_path, "help")
    assert "live (not installed)" in r.stdout
    assert "mcp (not installed)" in r.stdout
    r = _bay(bay, tmp_path, "help", "window")
    assert r.stdout.startswith("bay window: from the browserbay-local-window plugin")
    assert "providers/local-window" in r.stdout
    r = _bay(bay, tmp_path, "live")
    assert r.returncode == 2, r
    assert r.stderr.startswith(
        "refused [usage]: 'live' comes from the browserbay-liveview-web plugin, not installed here"
    )
    assert "way out: bay install <browserbay checkout>/plugins/liveview-web" in r.stderr
    r = _bay(bay, tmp_path, "keeper", "status")
    assert (r.returncode, r.stdout.splitlines()[0][:20]) == (0, "no keeper is running"), r
    assert not (tmp_path / "run" / "keeper.sock").exists()


def test_a_plugin_verb_not_in_the_running_keeper_says_how_to_load_it(bay: Bay) -> None:
    """Installed here, but the keeper that runs started without it (BAY_DISABLE_PLUGINS
    stands in for a plugin installed after the keeper started)."""
    b = Bay(bay.home.parent / "noliveview", BAY_DISABLE_PLUGINS="liveview-web")
    try:
        b.ok("keeper", "start", session=None)
        frame = assert_refused(b("live"), "usage")
        assert (
            "browserbay-liveview-web plugin, not installed in the running keeper"
            in (frame["message"])
        )
        assert frame["way_out"].startswith("bay keeper stop")
    finally:
        b.stop()


def test_the_readme_opens_with_its_two_commands_and_puts_bay_on_path(tmp_path: Path) -> None:
    """A fresh shell (nothing but HOME and a bare PATH): the README's PATH line, run from the
    checkout, gives a ``bay`` that runs."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    first = readme.split("```sh\n", 1)[1].split("```", 1)[0].splitlines()
    assert [line.split()[0] for line in first] == ["./scripts/demo.sh", "./scripts/test.sh"]
    export = next(line for line in readme.splitlines() if line.startswith('export PATH="$PWD/'))
    assert "uv tool install ./cli --with ." in readme
    command = export.split("#")[0].strip()
    home = tmp_path
    out = subprocess.run(
        [
            "env",
            "-i",
            f"HOME={home}",
            "PATH=/usr/bin:/bin",
            "bash",
            "--norc",
            "--noprofile",
            "-c",
            f"cd {REPO} && {command} && bay --version && bay --help",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out
    assert out.stdout.startswith(f"bay {__version__}\nusage: bay <verb>")
