"""The census: every code in the refusal table is produced by at least one test, through
``assert_refused(result, "<code>")`` (which also checks the frame's shape and exit status).
A new code without a test that produces it fails here."""

from __future__ import annotations

import ast
from pathlib import Path

from browserbay.refusals import CODES

REPO = Path(__file__).resolve().parents[1]


def _produced_codes() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    files = [
        *REPO.glob("tests/**/*.py"),
        *REPO.glob("*/tests/**/*.py"),
        *REPO.glob("*/*/tests/**/*.py"),
    ]
    for path in files:
        if path.name == Path(__file__).name:
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "assert_refused"
                and len(node.args) == 2
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
            ):
                test = f"{path.relative_to(REPO)}:{node.lineno}"
                found.setdefault(node.args[1].value, []).append(test)
    return found


def test_every_refusal_code_is_produced_by_a_test() -> None:
    produced = _produced_codes()
    missing = sorted(set(CODES) - set(produced))
    assert not missing, f"refusal codes no test produces: {missing}"


def test_no_test_asserts_a_code_that_is_not_in_the_table() -> None:
    unknown = sorted(set(_produced_codes()) - set(CODES))
    assert not unknown, unknown
