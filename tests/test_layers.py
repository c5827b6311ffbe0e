"""The import contracts (``[tool.importlinter]``, checked by ``lint-imports`` in the test
command) cover every distribution, and their custom types (scripts/importcontracts.py) fail
on what they forbid: a third-party import in the thin client whether it sits at module level,
under ``TYPE_CHECKING`` or in a function; an import cycle made of such imports; a listed
pending cycle that no longer exists; a configuration that hides ``TYPE_CHECKING`` imports.

Fast: no keeper, no browser.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
#: Core modules that are neither the thin client nor kept off the keeper: the keeper itself,
#: ``bay doctor`` (it runs the keeper's backend checks), the built-in plugins (held to the
#: plugins' contract), and the provider conformance suite (browserbay.testing: the keeper's
#: contract for provider authors).
CORE_EXEMPT = {
    "browserbay.keeper",
    "browserbay.doctor",
    "browserbay.builtins",
    "browserbay.testing",
}


def _pyproject() -> dict[str, Any]:
    with (REPO / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)


def _config() -> dict[str, Any]:
    config: dict[str, Any] = _pyproject()["tool"]["importlinter"]
    return config


def _contract(name_starts: str) -> dict[str, Any]:
    found = [c for c in _config()["contracts"] if c["name"].startswith(name_starts)]
    assert len(found) == 1, name_starts
    return found[0]


def test_every_distribution_is_a_root_package() -> None:
    members = _pyproject()["tool"]["uv"]["workspace"]["members"]
    packages = {
        init.parent.name for glob in members for init in REPO.glob(f"{glob}/src/*/__init__.py")
    }
    assert sorted(_config()["root_packages"]) == sorted(packages)


def test_every_core_module_is_in_a_layer() -> None:
    """A new core module joins the thin client (standard library only) or the core that
    imports no keeper code, or says here why it is neither."""
    core = REPO / "core/src/browserbay"
    modules = {f"browserbay.{p.stem}" for p in core.glob("*.py") if p.stem != "__init__"}
    modules |= {f"browserbay.{p.parent.name}" for p in core.glob("*/__init__.py")}
    thin = {m for m in _contract("The thin client")["modules"] if m.startswith("browserbay.")}
    layered = thin | set(_contract("The core outside the keeper")["source_modules"])
    assert sorted(modules - layered - CORE_EXEMPT) == []
    assert sorted((layered | CORE_EXEMPT) - modules) == []


def test_every_provider_and_plugin_is_kept_off_the_keeper() -> None:
    # browserbay_testing is no plugin: the dev-only test support may reach into the keeper
    plugins = set(_config()["root_packages"]) - {
        "browserbay",
        "browserbay_cli",
        "browserbay_testing",
    }
    contract = _contract("Providers and plugins")
    assert set(contract["source_modules"]) == plugins | {"browserbay.builtins"}
    assert contract["forbidden_modules"] == ["browserbay.keeper"]


def test_no_product_distribution_imports_the_test_support() -> None:
    products = set(_config()["root_packages"]) - {"browserbay_testing"}
    contract = _contract("No product distribution imports the test support")
    assert set(contract["source_modules"]) == products
    assert contract["forbidden_modules"] == ["browserbay_testing"]


def test_every_import_counts() -> None:
    assert _config()["exclude_type_checking_imports"] is False
    assert _config()["include_external_packages"] is True


def _lint(tmp_path: Path, config: str) -> tuple[int, str]:
    (tmp_path / "pyproject.toml").write_text(config)
    env = {
        **os.environ,
        "PYTHONPATH": f"{REPO}{os.pathsep}{tmp_path}",  # the contract types, the package
        "COLUMNS": "300",  # one line per import in the report
    }
    done = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.returncode, done.stdout + done.stderr


def _package(tmp_path: Path) -> None:
    pkg = tmp_path / "lay"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "thin.py").write_text(
        "import json\n"
        "from typing import TYPE_CHECKING\n"
        "from lay import thin2\n"
        "if TYPE_CHECKING:\n"
        "    import pydantic\n"
        "def later() -> None:\n"
        "    import anyio\n"
        "    from lay import a\n"
    )
    (pkg / "thin2.py").write_text("import os\nimport playwright\n")
    (pkg / "a.py").write_text("def later() -> None:\n    from lay import b\n")
    (pkg / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from lay import a\n"
    )


CONFIG = """
[tool.importlinter]
root_packages = ["lay"]
include_external_packages = true
exclude_type_checking_imports = {exclude}
contract_types = [
    "stdlib_only: scripts.importcontracts.StdlibOnlyContract",
    "acyclic: scripts.importcontracts.AcyclicContract",
]

[[tool.importlinter.contracts]]
name = "thin"
type = "stdlib_only"
modules = ["lay.thin", "lay.thin2"]

[[tool.importlinter.contracts]]
name = "acyclic"
type = "acyclic"
pending = ["lay.thin, lay.thin2"]
"""


def test_the_contracts_fail_on_every_kind_of_import(tmp_path: Path) -> None:
    _package(tmp_path)
    code, out = _lint(tmp_path, CONFIG.format(exclude="false"))
    assert code == 1, out
    assert "Contracts: 0 kept, 2 broken." in out
    for stray in (
        "lay.thin -> pydantic (l.5)",  # under TYPE_CHECKING
        "lay.thin -> anyio (l.7)",  # inside a function
        "lay.thin -> lay.a (l.8)",  # ours, outside the layer
        "lay.thin2 -> playwright (l.2)",  # at module level
    ):
        assert stray in out, out
    assert "lay.thin -> json" not in out
    assert "lay.thin -> lay.thin2" not in out  # inside the layer
    assert "lay.thin2 -> os" not in out
    # a.py imports b in a function, b imports a under TYPE_CHECKING: still a cycle
    assert "Import cycle lay.a ↔ lay.b:" in out
    assert "lay.a -> lay.b (l.2)" in out
    assert "lay.b -> lay.a (l.3)" in out
    assert "no longer a cycle (take it off the list): lay.thin ↔ lay.thin2" in out


def test_a_graph_without_type_checking_imports_is_refused(tmp_path: Path) -> None:
    _package(tmp_path)
    code, out = _lint(tmp_path, CONFIG.format(exclude="true"))
    assert code != 0
    assert "needs exclude_type_checking_imports = false" in out
