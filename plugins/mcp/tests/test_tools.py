"""The generated tools against the verb table, no keeper needed: every agent verb is a tool of
``all``, every profile names verbs of the table, ``--tools`` refuses a profile there is not."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from browserbay.refusals import _ROWS, Refusal
from browserbay.verbs import (
    BY_NAME,
    PLUGIN,
    TOOL_PROFILES,
    VERBS,
    Arg,
    Verb,
    agent_verb,
    tool_profile_of,
    tool_verbs,
)
from browserbay_mcp.tools import content_words, generate, profiles_of, tool_names
from browserbay_mcp.wording import Wording


def test_every_agent_verb_is_a_tool_of_all_and_no_other_verb_is() -> None:
    assert set(tool_names(["all"]).values()) == {v.name for v in VERBS if agent_verb(v)}
    for local in ("help", "doctor", "mcp", "install", "keeper", "audit"):
        assert local not in tool_names(["all"])


def test_every_profile_names_verbs_of_the_table_and_the_default_is_core() -> None:
    for profile in TOOL_PROFILES:
        assert all(v in BY_NAME and agent_verb(BY_NAME[v]) for v in profile.verbs), profile.name
    assert profiles_of(None) == ("core",)
    core = set(tool_names(["core"]))
    assert core == set(next(p for p in TOOL_PROFILES if p.name == "core").verbs)
    both = set(tool_names(profiles_of("core,io")))
    assert core < both
    assert {"upload", "mouse"} <= both


def test_an_unknown_profile_is_refused_naming_the_profiles() -> None:
    with pytest.raises(Refusal) as caught:
        profiles_of("core,nope")
    assert caught.value.code == "usage"
    assert "'nope'" in caught.value.message
    assert "windows" in caught.value.message


def test_every_way_out_of_the_refusal_table_is_said_as_tool_calls() -> None:
    """No way out tells an MCP agent to run a verb of the table in a shell: a tool of the
    server is called, a tool of another profile is named with its profile, and a verb no
    agent may call is the user's to run."""
    words = Wording(tool_names(["core"]))
    for row in _ROWS:
        said = words.text(row.way_out)
        for m in re.finditer(r"\bbay ([a-z][a-z-]*)", said):
            verb = m.group(1)
            if verb in BY_NAME:
                asked = said[: m.start()].endswith("(ask the user to run: ")
                assert asked, (row.name, said)
                assert not agent_verb(BY_NAME[verb]), (row.name, said)


def test_commands_are_parsed_against_the_verb_table() -> None:
    words = Wording(tool_names(["core"]))
    assert words.text("bay snapshot -i  (then act)") == "snapshot(interactive=true)  (then act)"
    assert words.text("`bay frame main`, then") == 'frame(target="main"), then'
    assert words.text("bay wait --text Saved --timeout 60") == 'wait(text="Saved")'
    assert words.text("bay tab list") == 'tab(action="list") (not on this server: profile tabs)'
    assert words.text("bay keeper logs") == "(ask the user to run: bay keeper logs)"
    assert words.text("bay status shows it") == "status() shows it"
    # Only where our words put a command: a page's prose about a bay is left as it is.
    assert words.text("the bay close to town") == "the bay close to town"
    assert words.text("until bay keyup Shift") == (
        'until keyup(key="Shift") (not on this server: profile io)'
    )
    assert words.text("bay select @e9 red blue") == 'select(target="@e9", values=["red", "blue"])'
    # In a verb's own help its options are its parameters.
    assert words.text("all, or --name / --domain", BY_NAME["cookies"]) == "all, or name / domain"


def _generated(profiles: tuple[str, ...] = ("all",)) -> dict[str, Any]:
    gen = generate(profiles, Wording(tool_names(profiles)), {"screenshot": "path"})
    return {name: tool.listing() for name, tool in gen.tools.items()}


def test_schemas_are_lean_enums_types_only_where_they_constrain_and_no_implied_help() -> None:
    tools = _generated()
    for name, tool in tools.items():
        schema = tool["inputSchema"]
        assert schema["type"] == "object"
        assert "\n" not in tool["description"], name  # one line per tool
        for arg, prop in schema.get("properties", {}).items():
            spec = BY_NAME[name].arg(arg)
            if spec.choices:  # the enum says the choices and that they are words
                assert prop["enum"] == list(spec.choices)
                assert "type" not in prop
            elif spec.kind == "flag":
                assert prop["type"] == "boolean"
            elif spec.type in ("int", "float"):
                assert prop["type"] in ("integer", "number")
            elif spec.kind in ("rest", "many", "tail"):
                assert prop["type"] == "array"
            else:  # a word: a string, or a number / JSON value sent as its word
                assert "type" not in prop, (name, arg)
            assert "--" not in prop.get("description", ""), (name, arg)
    # The choices are the enum, not prose; a help the name and the tool say is not repeated.
    assert tools["cookies"]["inputSchema"]["properties"]["action"] == {
        "enum": ["get", "set", "clear"]
    }
    assert "description" not in tools["open"]["inputSchema"]["properties"]["url"]
    assert "description" not in tools["eval"]["inputSchema"]["properties"]["js"]
    # An option the tool's description names (--full) is explained there.
    shot = tools["screenshot"]["inputSchema"]["properties"]
    assert "description" not in shot["full"]
    assert "full page" in tools["screenshot"]["description"]
    # What the name does not say stays.
    assert shot["quality"]["description"].startswith("0-100")
    assert tools["network"]["inputSchema"]["properties"]["arg"]["description"].startswith(
        "route/unroute:"
    )
    # A tool with no argument lists no properties at all.
    assert tools["back"]["inputSchema"] == {"type": "object"}


def test_a_help_said_by_the_name_and_description_is_implied() -> None:
    said = content_words
    assert said("the URL to open") <= said("url open Navigate the current tab to a URL")
    assert said("option values or labels") <= said("values select Choose options by label")
    assert not said("route: default 200") <= said("status network The tab's requests")


def test_a_plugins_verb_joins_the_profile_its_row_names_and_all() -> None:
    greet = Verb(
        "greet", PLUGIN, "Greet.", (Arg("name", "pos", "whom"),), plugin="p", tool_profile="io"
    )
    loose = Verb("loose", PLUGIN, "No profile.", plugin="p")
    owner = Verb("owner", PLUGIN, "Owner's.", owner_only=("*",), plugin="p", tool_profile="core")
    plugins = [Verb.from_row(v.to_row()) for v in (greet, loose, owner)]  # as the keeper lists
    assert [tool_profile_of(v) for v in plugins] == ["io", "all", "core"]
    assert "greet" in tool_names(["io"], plugins)
    assert "greet" not in tool_names(["core"], plugins)
    assert {"greet", "loose"} <= set(tool_names(["all"], plugins))
    assert "owner" not in tool_names(["all", "core"], plugins)
    assert list(tool_names(["io"], plugins))[-1] == "greet"  # after the core table's
    # A plugin's row never replaces a core verb's tool.
    fake = Verb("open", PLUGIN, "Not the core's open.", plugin="p", tool_profile="io")
    assert tool_verbs(["all"], [fake]).count(BY_NAME["open"]) == 1
    assert fake not in tool_verbs(["all"], [fake])
    # Its commands in a way out are tool calls too.
    words = Wording(tool_names(["core"], plugins), {**BY_NAME, "greet": plugins[0]})
    assert (
        words.text("run bay greet Ada") == 'run greet(name="Ada") (not on this server: profile io)'
    )


def test_no_tool_description_tells_an_agent_to_run_a_shell_command() -> None:
    for name, tool in _generated().items():
        said = json.dumps(tool)
        assert not re.search(r"\bbay [a-z]", said) or "ask the user to run" in said, name
