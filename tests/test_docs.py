"""The documentation under docs/ stays true to the code.

- every hookspec is in docs/hooks.md under a heading of its own, with its exact signature as
  ``inspect.signature`` prints it, and has at least one test (the datasette rule);
- every refusal code is in the table of docs/refusals.md, with its exit status and templates,
  and the table holds no code the core does not have;
- every verb is in docs/agent-manual.md with its usage line;
- every ``BAY_*`` variable the source mentions is in docs/configuration.md.

Fast: no keeper, no browser.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from browserbay import hookspecs, refusals, verbs
from browserbay.settings import BaySettings
from browserbay_cli.parse import usage_line

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
SOURCE_GLOBS = ("core/src", "cli/src", "providers/*/src", "plugins/*/src")
TEST_DIR_GLOBS = ("tests", "*/tests", "*/*/tests")


def _doc(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def _skipped(path: Path) -> bool:
    parts = path.relative_to(REPO).parts
    return any(p.startswith(".") or p == "node_modules" for p in parts)


def _section(text: str, heading: str, level: str) -> str | None:
    """The text under ``heading`` (an exact line) up to the next heading of ``level``."""
    lines = text.splitlines()
    try:
        start = lines.index(heading)
    except ValueError:
        return None
    body = []
    for line in lines[start + 1 :]:
        if line.startswith(level + " "):
            break
        body.append(line)
    return "\n".join(body)


# -- hooks --------------------------------------------------------------------------------

HOOKS = sorted(
    name
    for name, obj in vars(hookspecs).items()
    if name.startswith("bay_") and inspect.isfunction(obj)
)


def signature_line(name: str) -> str:
    """``bay_before_verb(call: 'VerbCall') -> 'Refusal | None'``: the format docs/hooks.md uses."""
    return f"{name}{inspect.signature(getattr(hookspecs, name))}"


def hook_heading(name: str) -> str:
    """``## bay_before_verb(call)``: the hook's name and parameter names."""
    params = inspect.signature(getattr(hookspecs, name)).parameters
    return f"## {name}({', '.join(params)})"


def _is_firstresult(name: str) -> bool:
    opts = getattr(getattr(hookspecs, name), f"{hookspecs.PROJECT}_spec")
    return bool(opts.get("firstresult"))


def test_hookspecs_are_found() -> None:
    assert HOOKS, "no bay_* hookspecs found in browserbay.hookspecs"
    for name in HOOKS:
        fn = getattr(hookspecs, name)
        assert getattr(fn, f"{hookspecs.PROJECT}_spec", None) is not None, (
            f"{name} in browserbay.hookspecs is not marked @hookspec"
        )


@pytest.mark.parametrize("name", HOOKS)
def test_hook_is_documented_with_its_exact_signature(name: str) -> None:
    text = _doc("hooks.md")
    heading = hook_heading(name)
    section = _section(text, heading, "##")
    assert section is not None, f"docs/hooks.md has no heading line {heading!r}"
    signature = signature_line(name)
    assert signature in [line.strip() for line in section.splitlines()], (
        f"docs/hooks.md, section {heading!r}, lacks the signature line {signature!r}"
    )
    prose = " ".join(section.split())
    if _is_firstresult(name):
        assert "**`firstresult`**" in prose, f"{heading}: say it is firstresult"
    else:
        assert "Not `firstresult`" in prose, f"{heading}: say it is not firstresult"
    assert "@hookimpl" in section, f"{heading}: give an example implementation"


def test_hooks_md_documents_no_other_hook() -> None:
    documented = re.findall(r"^## (bay_[a-z_]+)\(", _doc("hooks.md"), flags=re.MULTILINE)
    assert sorted(set(documented) - set(HOOKS)) == [], (
        "docs/hooks.md documents hooks that do not exist"
    )
    assert len(documented) == len(set(documented)), "a hook is documented twice"


def _test_modules() -> list[Path]:
    this = Path(__file__).resolve()
    found: set[Path] = set()
    for pattern in TEST_DIR_GLOBS:
        for tests_dir in REPO.glob(pattern):
            if not tests_dir.is_dir() or _skipped(tests_dir):
                continue
            for path in tests_dir.rglob("*.py"):
                is_test = path.name.startswith("test_") or path.name.endswith("_test.py")
                if is_test and path.resolve() != this and not _skipped(path):
                    found.add(path)
    return sorted(found)


@pytest.mark.parametrize("name", HOOKS)
def test_hook_has_a_test(name: str) -> None:
    """The datasette rule: a hook nobody tests is a hook nobody knows works."""
    pattern = re.compile(rf"\b{re.escape(name)}\b")
    modules = _test_modules()
    assert any(pattern.search(p.read_text(encoding="utf-8", errors="replace")) for p in modules), (
        f"no test module under tests/ or */tests/ names {name}; write a test that exercises it"
    )


# -- refusals -----------------------------------------------------------------------------

_ROW = re.compile(r"^\|\s*`(?P<code>[a-z_]+)`\s*\|(?P<rest>.*)$")


def _refusal_rows() -> dict[str, list[str]]:
    rows: dict[str, list[str]] = {}
    for line in _doc("refusals.md").splitlines():
        m = _ROW.match(line)
        if m:
            assert m.group("code") not in rows, f"{m.group('code')} is in the table twice"
            rows[m.group("code")] = [c.strip() for c in m.group("rest").split("|")]
    return rows


def test_refusal_table_matches_codes() -> None:
    documented = set(_refusal_rows())
    assert sorted(set(refusals.CODES) - documented) == [], "codes missing from docs/refusals.md"
    assert sorted(documented - set(refusals.CODES)) == [], (
        "docs/refusals.md documents codes that are not in browserbay.refusals.CODES"
    )


@pytest.mark.parametrize("code", sorted(refusals.CODES))
def test_refusal_row_is_exact(code: str) -> None:
    row = refusals.CODES[code]
    cells = _refusal_rows().get(code)
    assert cells is not None, f"docs/refusals.md has no row for {code}"
    exit_status, message, way_out = cells[0], cells[1], cells[2]
    assert exit_status == str(row.exit), f"{code}: exit {exit_status}, the code says {row.exit}"
    assert message == f"`{row.message}`", f"{code}: message template differs"
    assert way_out == f"`{row.way_out}`", f"{code}: way-out template differs"
    assert len(cells) > 3, f"{code}: the row has no 'when it happens' cell"
    assert cells[3], f"{code}: say when it happens"


# -- verbs --------------------------------------------------------------------------------


@pytest.mark.parametrize("verb", [v.name for v in verbs.VERBS])
def test_verb_is_in_the_agent_manual_with_its_usage_line(verb: str) -> None:
    text = _doc("agent-manual.md")
    section = _section(text, f"### {verb}", "###")
    assert section is not None, f"docs/agent-manual.md has no '### {verb}' heading"
    usage = usage_line(verbs.BY_NAME[verb])
    assert usage in [line.strip() for line in section.splitlines()], (
        f"docs/agent-manual.md, section '### {verb}', lacks the usage line {usage!r}"
    )
    assert "Example:" in section, f"'### {verb}' gives no example"


def test_agent_manual_documents_no_other_verb() -> None:
    text = _doc("agent-manual.md")
    verbs_part = text.split("\n## Verbs\n", 1)
    assert len(verbs_part) == 2, "docs/agent-manual.md has no '## Verbs' section"
    documented = re.findall(r"^### (\S+)$", verbs_part[1], flags=re.MULTILINE)
    assert sorted(set(documented) - set(verbs.BY_NAME)) == [], (
        "docs/agent-manual.md documents verbs that do not exist"
    )


# -- configuration ------------------------------------------------------------------------

_VAR = re.compile(r"\bBAY_[A-Z_]+")


def _source_variables() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for pattern in SOURCE_GLOBS:
        for root in REPO.glob(pattern):
            for path in sorted(root.rglob("*.py")):
                if _skipped(path):
                    continue
                for var in _VAR.findall(path.read_text(encoding="utf-8", errors="replace")):
                    found.setdefault(var, path.relative_to(REPO))
    for var in BaySettings.variables():  # read by load_settings: BAY_ + the field's name
        found.setdefault(var, Path("core/src/browserbay/settings.py"))
    return found


def test_every_variable_in_the_source_is_documented() -> None:
    text = _doc("configuration.md")
    missing = {
        var: str(path)
        for var, path in _source_variables().items()
        if not re.search(rf"`{re.escape(var)}(?![A-Z0-9_])", text)
    }
    assert missing == {}, "BAY_* variables read by the code but not in docs/configuration.md"


def test_every_variable_in_the_table_is_in_the_source() -> None:
    rows = re.findall(r"^\|\s*`(BAY_[A-Z0-9_]+)`\s*\|", _doc("configuration.md"), re.MULTILINE)
    assert rows, "docs/configuration.md has no table of variables"
    stale = sorted(set(rows) - set(_source_variables()))
    assert stale == [], "docs/configuration.md documents variables no code mentions"


def _config_rows() -> dict[str, tuple[str, str]]:
    """docs/configuration.md's rows: variable -> (default cell, read-by cell)."""
    rows = re.findall(
        r"^\|\s*`(BAY_[A-Z0-9_<>]+)`\s*\|([^|]*)\|([^|]*)\|", _doc("configuration.md"), re.MULTILINE
    )
    return {var: (default.strip(), reader.strip()) for var, default, reader in rows}


def test_the_keeper_settings_are_the_keeper_rows_of_the_configuration_table() -> None:
    """Every field of the keeper's settings model is documented as read by the keeper, and
    every variable documented as read by the keeper alone is a field of it, with the
    documented default."""
    rows = _config_rows()
    fields = BaySettings.variables()
    keeper_rows = {var for var, (_, reader) in rows.items() if reader == "keeper"}
    assert sorted(set(fields) - keeper_rows) == [], "settings fields not documented as keeper"
    assert sorted(keeper_rows - set(fields)) == [], "keeper rows that are no settings field"
    defaults = BaySettings.defaults()
    for var in fields:
        default = defaults[var]
        cell = rows[var][0]
        documented = re.match(r"`([^`]*)`", cell)
        if default == "":
            assert cell == "unset", (var, cell)
        else:
            assert documented is not None, (var, cell)
            shown = f"{default:g}" if isinstance(default, float) else str(default)
            assert documented.group(1) == shown, (var, cell, default)


# -- the index ----------------------------------------------------------------------------


def test_docs_links_point_at_existing_pages() -> None:
    for page in sorted(DOCS.glob("*.md")):
        for target in re.findall(r"\]\(([^)#]+\.md)(?:#[^)]*)?\)", page.read_text("utf-8")):
            assert (page.parent / target).is_file(), f"{page.name} links to missing {target}"


#: Where the tests live whose names the docs cite.
TEST_DIRS = ("tests", "core/tests", "cli/tests", "plugins", "providers", "campaigns", "examples")


def _defined_tests() -> set[str]:
    """Every test function's name, and every test module's (a doc may cite either)."""
    names: set[str] = set()
    for top in TEST_DIRS:
        for path in (REPO / top).rglob("test_*.py"):
            if ".venv" in path.parts:
                continue
            names.add(path.stem)
            names.update(re.findall(r"^\s*(?:async )?def (test_\w+)", path.read_text(), re.M))
    return names


#: The documents that claim what is enforced, citing the tests that show it (the others
#: show example tests of their own, in code blocks).
CLAIMS = sorted(
    {p.name for p in DOCS.glob("*.md")} - {"hooks.md", "testing-plugins.md", "plugin-guide.md"}
)


@pytest.mark.parametrize("doc", [*CLAIMS, "../RELIABILITY.md"])
def test_every_test_a_doc_cites_exists(doc: str) -> None:
    """docs/security.md says what is enforced and which test shows it: a test renamed or
    removed must not leave the claim standing on nothing."""
    path = DOCS / doc
    assert "test_no_such_claim_anywhere" not in _defined_tests()  # the check can fail
    cited = set(re.findall(r"\b(test_[a-z0-9_]+)", path.read_text()))
    cited = {c for c in cited if not c.endswith("_")}  # a prefix ("test_foo_…") names a family
    missing = sorted(cited - _defined_tests())
    assert not missing, f"docs/{doc} cites tests that do not exist: {missing}"
