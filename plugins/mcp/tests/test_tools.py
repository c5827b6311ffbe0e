"""The generated tools against the verb table, no keeper needed: every agent verb is a tool of
``all``, every profile names verbs of the table, ``--tools`` refuses a profile there is not."""

from __future__ import annotations

import pytest

from browserbay.refusals import Refusal
from browserbay.verbs import BY_NAME, TOOL_PROFILES, VERBS, agent_verb
from browserbay_mcp.tools import profiles_of, tool_names


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
