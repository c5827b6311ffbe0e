"""The thin client: argv parsing from the verb table, and a hot path that imports only
cheap standard-library modules."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from browserbay.verbs import VERBS
from browserbay_cli.parse import UsageError, help_text, parse, usage_line


def test_parse_positional_flags_values_and_rest() -> None:
    verb, args, opts = parse(["snapshot", "-i", "--depth", "3", "--json", "--timeout=5"])
    assert (verb.name, args, opts) == (
        "snapshot",
        {"interactive": True, "depth": 3},
        {"json": True, "timeout": 5.0},
    )
    verb, args, _ = parse(["select", "@e3", "a", "b"])
    assert args == {"target": "@e3", "values": ["a", "b"]}
    verb, args, _ = parse(["fill", "@e1", "--", "--not-a-flag"])
    assert args == {"target": "@e1", "text": "--not-a-flag"}
    verb, args, _ = parse(["scroll", "down", "-300"])
    assert args == {"direction": "down", "pixels": -300}
    verb, args, _ = parse(["tab"])
    assert (verb.name, args) == ("tab", {})
    verb, args, opts = parse(["--session", "x", "get", "title"])
    assert opts == {"session": "x"}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "no verb given"),
        (["clik", "@e1"], "did you mean 'click'"),
        (["click"], "needs <target>"),
        (["click", "@e1", "extra"], "takes no more words"),
        (["snapshot", "--dept", "2"], "did you mean '--depth'"),
        (["snapshot", "--depth"], "needs a value"),
        (["snapshot", "--depth", "x"], "whole number"),
        (["get", "tittle"], "did you mean 'title'"),
        (["snapshot", "-i=yes"], "takes no value"),
        (["open", "u", "--timeout", "soon"], "must be a number"),
    ],
)
def test_usage_errors_say_what_to_do(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse(argv)


def test_help_lists_every_verb_and_each_has_a_usage_line() -> None:
    text = help_text(None)
    for verb in VERBS:
        assert f"  {verb.name} " in text
        assert usage_line(verb).startswith(f"bay {verb.name}")
        assert verb.summary in help_text(verb.name)


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    bay = str(__import__("pathlib").Path(sys.executable).with_name("bay"))
    return subprocess.run([bay, *args], capture_output=True, text=True, env=env, timeout=30)


def test_help_and_usage_need_no_keeper(tmp_path: __import__("pathlib").Path) -> None:
    env = {"BAY_HOME": str(tmp_path), "BAY_NO_AUTOSTART": "1", "PATH": "/usr/bin:/bin"}
    r = _run("help", env=env)
    assert r.returncode == 0
    assert "bay help <verb>" in r.stdout  # the agent manual (tests/test_onboarding.py)
    r = _run("click", "--help", env=env)
    assert r.returncode == 0
    assert r.stdout.startswith("bay click <target>")
    r = _run("wat", "--json", env=env)
    assert r.returncode == 2
    assert json.loads(r.stdout)["code"] == "usage"
    assert not (tmp_path / "run" / "keeper.sock").exists()


HOT_PATH = """
import sys
before = set(sys.modules)
import browserbay_cli.main
from browserbay_cli.parse import parse
parse(["get", "title", "--json"])
import browserbay.client
new = sorted(set(sys.modules) - before)
print("\\n".join(new))
"""


def test_the_hot_path_imports_only_cheap_standard_library_modules() -> None:
    out = subprocess.run(
        [sys.executable, "-c", HOT_PATH], capture_output=True, text=True, check=True
    )
    loaded = set(out.stdout.split())
    ours = {m for m in loaded if m.split(".")[0] in ("browserbay", "browserbay_cli")}
    assert ours <= {
        "browserbay",
        "browserbay._version",
        "browserbay.client",
        "browserbay.identity",
        "browserbay.protocol",
        "browserbay.refusals",
        "browserbay.render",
        "browserbay.sockpath",
        "browserbay.transfer",  # files through the connection: base64, os, stat only
        "browserbay.verbs",
        "browserbay_cli",
        "browserbay_cli.main",
        "browserbay_cli.parse",
    }, ours
    third_party = {
        m.split(".")[0] for m in loaded - ours if m.split(".")[0] not in sys.stdlib_module_names
    }
    assert not third_party, third_party
    heavy = {
        "typing",
        "dataclasses",
        "argparse",
        "subprocess",
        "asyncio",
        "inspect",
        "pluggy",
        "anyio",
        "playwright",
    }
    assert not (heavy & {m.split(".")[0] for m in loaded}), heavy & loaded


def test_every_local_verb_of_the_table_has_one_handler_in_the_client() -> None:
    from browserbay.verbs import LOCAL
    from browserbay_cli import extras, main

    assert set(main.OFF_HOT_PATH) == set(extras.HANDLERS)
    assert {v.name for v in VERBS if v.scope == LOCAL} == {*extras.HANDLERS, "help"}
