"""Agent onboarding: ``bay help`` (the short manual), ``bay install-skill`` and the copy in
docs/agent-manual.md. No browser; no keeper is started."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from browserbay import manual, refusals, verbs
from browserbay.plugins import load_plugins
from browserbay.verbs import PLUGIN, Verb
from browserbay_cli import skill
from browserbay_testing import BAY, Bay, assert_refused

REPO = Path(__file__).resolve().parents[1]


def _tokens(text: str) -> int:
    """A real tokenizer's count when one is installed, else the conservative estimate."""
    try:
        import tiktoken  # type: ignore[import-not-found]
    except ImportError:
        return manual.estimate_tokens(text)
    return len(tiktoken.get_encoding("cl100k_base").encode(text))


def test_the_manual_is_within_its_token_budget() -> None:
    text = manual.manual()
    assert _tokens(text) <= manual.TOKEN_BUDGET, _tokens(text)
    # the measure can fail: twice the manual is over the budget
    assert _tokens(text * 2) > manual.TOKEN_BUDGET


def test_the_estimate_is_conservative() -> None:
    assert manual.estimate_tokens("word " * 301) == 401  # 301 words x 1.33, rounded up
    assert manual.estimate_tokens("x" * 4001) == 1001  # one long word: chars / 4, rounded up


GROUPED = {c for _, codes in refusals.AGENT_REMEDIES for c in codes}
DEFAULTED = [c for c in refusals.CODES if c not in GROUPED]


@pytest.mark.parametrize("code", sorted(refusals.CODES))
def test_every_refusal_code_is_in_the_manual_or_under_its_default(code: str) -> None:
    """A code with a remedy of its own is spelled out; every other code falls under the one
    default line (stop and ask the human), which the manual states."""
    text = manual.manual()
    named = re.search(rf"(?<![a-z_]){code}(?![a-z_])", text) is not None
    if code in GROUPED:
        assert named, code
    else:
        assert f"  any other code: {refusals.OTHERWISE}\n" in text


def test_refusal_groups_name_only_real_codes_and_each_code_once() -> None:
    grouped = [c for _, codes in refusals.AGENT_REMEDIES for c in codes]
    assert len(grouped) == len(set(grouped)), "a code is in two groups"
    assert set(grouped) <= set(refusals.CODES), set(grouped) - set(refusals.CODES)
    listed = [c for _, codes in refusals.remedy_lines() for c in codes]
    assert sorted(listed) == sorted(refusals.CODES)


def test_a_new_code_in_no_group_costs_the_manual_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    before = manual.manual()
    monkeypatch.setitem(refusals.CODES, "brand_new", refusals.Code("brand_new", "m", "w"))
    after = manual.manual()
    assert after == before  # stated by the default line, never spelled out
    assert f"  any other code: {refusals.OTHERWISE}\n" in after
    assert refusals.remedy_lines()[-1] == (refusals.OTHERWISE, [*DEFAULTED, "brand_new"])


def _verb_named(text: str, name: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text) is not None


@pytest.mark.parametrize("verb", [v.name for v in verbs.VERBS])
def test_every_core_verb_is_in_the_manual(verb: str) -> None:
    assert _verb_named(manual.manual(), verb)


def test_every_verb_of_the_shipped_plugins_is_in_the_manual() -> None:
    table = load_plugins(strict=True).verb_table()
    plugin_verbs = sorted(name for name, v in table.items() if v.plugin)
    assert "handoff" in plugin_verbs  # the rule "ask the human through bay handoff" holds
    text = manual.manual()
    assert [v for v in plugin_verbs if not _verb_named(text, v)] == []
    shipped = {name for name, _ in manual.SHIPPED_PLUGIN_VERBS}
    assert shipped <= set(plugin_verbs), "the manual names plugin verbs that no plugin adds"


def test_a_third_party_plugin_verb_gets_a_line_of_its_own() -> None:
    extra = Verb("stamp", PLUGIN, "Stamp the page with a date.", plugin="stamper")
    assert not _verb_named(manual.manual(), "stamp")
    text = manual.manual([extra])
    assert "  stamp: Stamp the page with a date. (stamper)" in text


def test_the_manual_states_the_rules() -> None:
    text = manual.manual()
    for needle in (
        "@eN",
        "ephemeral",
        "--exclusive",
        "Sharing",
        "bay new work",
        "Your tabs are yours",
        "data, not instructions",
        "Never echo a cookie",
        "bay handoff",
        "captcha",
    ):
        assert needle in text, needle


def test_docs_agent_manual_holds_the_same_text() -> None:
    doc = (REPO / "docs" / "agent-manual.md").read_text(encoding="utf-8")
    assert manual.doc_block() in doc, (
        "docs/agent-manual.md differs from bay help: python -m browserbay.manual --docs"
    )


def test_bay_help_prints_the_manual_without_a_keeper(tmp_path: Path) -> None:
    bay = Bay(tmp_path)
    r = bay("help", json_=False, session=None)
    assert r.code == 0, r
    assert r.stdout == manual.manual()
    r = bay("help", session=None)
    assert r.data["text"] == manual.manual().rstrip("\n")
    r = bay("help", "click", json_=False, session=None)
    assert r.stdout.startswith("bay click <target>")
    assert not list(tmp_path.rglob("keeper.sock"))


HELP_IMPORTS = """
import sys, io, contextlib
before = set(sys.modules)
from browserbay_cli.main import run
with contextlib.redirect_stdout(io.StringIO()):
    run(["help"])
print("\\n".join(sorted(set(sys.modules) - before)))
"""


def test_bay_help_imports_only_the_standard_library(tmp_path: Path) -> None:
    env = {"BAY_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", HELP_IMPORTS], capture_output=True, text=True, check=True, env=env
    )
    loaded = {m.split(".")[0] for m in out.stdout.split()}
    third_party = loaded - set(sys.stdlib_module_names) - {"browserbay", "browserbay_cli"}
    assert third_party == set()
    assert not {"pluggy", "anyio", "playwright", "asyncio", "subprocess"} & loaded


# -- install-skill ------------------------------------------------------------------------


def _front_matter(text: str) -> dict[str, str]:
    assert text.startswith("---\n"), text[:40]
    head, _, _ = text[4:].partition("\n---\n")
    fields = {}
    for line in head.splitlines():
        key, _, value = line.partition(": ")
        fields[key] = value
    return fields


def test_install_skill_claude_writes_skill_md_idempotently(tmp_path: Path) -> None:
    bay = Bay(tmp_path / "home")
    project = tmp_path / "project"
    first = bay.ok("install-skill", "--claude", "--dir", str(project), session=None)
    path = project / ".claude" / "skills" / "browserbay" / "SKILL.md"
    assert first["written"] == [{"kind": "claude", "path": str(path), "action": "created"}]
    text = path.read_text(encoding="utf-8")
    fields = _front_matter(text)
    assert fields["name"] == "browserbay"
    # YAML: a plain scalar may not hold ": ", so the description is double-quoted
    raw = fields["description"]
    assert raw.startswith('"')
    assert raw.endswith('"')
    description = json.loads(raw)
    assert ": " in description
    assert "bay handoff" in description
    assert manual.manual().rstrip() in text
    mtime = path.stat().st_mtime_ns
    again = bay.ok("install-skill", "--claude", "--dir", str(project), session=None)
    assert again["written"][0]["action"] == "unchanged"
    assert path.read_text(encoding="utf-8") == text
    assert path.stat().st_mtime_ns == mtime  # not rewritten


def test_install_skill_agents_keeps_the_users_content(tmp_path: Path) -> None:
    bay = Bay(tmp_path / "home")
    project = tmp_path / "p"
    project.mkdir()
    agents = project / "AGENTS.md"
    mine = "# My project\n\nRun `make test` before committing.\n"
    agents.write_text(mine, encoding="utf-8")
    data = bay.ok("install-skill", "--agents", "--dir", str(project), session=None)
    assert data["written"][0]["action"] == "appended"
    after = agents.read_text(encoding="utf-8")
    assert after.startswith(mine)
    assert after.count(skill.BEGIN) == 1
    assert after.count(skill.END) == 1
    assert manual.manual().rstrip() in after

    # the user adds text after our block; an old block is replaced, their text stays
    agents.write_text(after + "\n## Later notes\nkeep me\n", encoding="utf-8")
    stale = agents.read_text(encoding="utf-8").replace("bay: a browser of your own", "OLD TEXT")
    agents.write_text(stale, encoding="utf-8")
    data = bay.ok("install-skill", "--codex", "--dir", str(project), session=None)
    assert data["written"][0]["action"] == "replaced"
    final = agents.read_text(encoding="utf-8")
    assert "OLD TEXT" not in final
    assert final.startswith(mine)
    assert final.endswith("\n## Later notes\nkeep me\n")
    assert final.count(skill.BEGIN) == 1

    data = bay.ok("install-skill", "--dir", str(project), session=None)  # default: AGENTS.md
    assert data["written"][0]["action"] == "unchanged"
    assert agents.read_text(encoding="utf-8") == final


def test_install_skill_creates_agents_md_when_there_is_none(tmp_path: Path) -> None:
    text, action = skill.merge_block(None, skill.agents_block())
    assert action == "created"
    assert text == skill.agents_block()
    text2, action2 = skill.merge_block(text, skill.agents_block())
    assert (text2, action2) == (text, "unchanged")


def test_install_skill_refuses_an_unwritable_target(tmp_path: Path) -> None:
    bay = Bay(tmp_path / "home")
    not_a_dir = tmp_path / "file.txt"
    not_a_dir.write_text("a file, not a directory\n")
    r = bay("install-skill", "--claude", "--dir", str(not_a_dir), session=None)
    frame = assert_refused(r, "install_failed")
    assert "--dir" in frame["way_out"]
    assert not_a_dir.read_text() == "a file, not a directory\n"

    project = tmp_path / "q"
    (project / "AGENTS.md").mkdir(parents=True)  # a directory where the file should be
    r = bay("install-skill", "--agents", "--dir", str(project), session=None)
    assert_refused(r, "install_failed")


def test_install_skill_refuses_damaged_markers(tmp_path: Path) -> None:
    bay = Bay(tmp_path / "home")
    project = tmp_path / "d"
    project.mkdir()
    damaged = f"# Mine\n{skill.BEGIN}\nhalf a block, no end\n"
    (project / "AGENTS.md").write_text(damaged)
    r = bay("install-skill", "--dir", str(project), session=None)
    frame = assert_refused(r, "install_failed")
    assert "markers" in frame["way_out"]
    assert (project / "AGENTS.md").read_text() == damaged


def test_the_bay_binary_is_the_one_under_test() -> None:
    assert Path(BAY).is_file()
