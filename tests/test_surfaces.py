"""The census of the agent's surfaces: every verb an agent may call (``agent_verb``: it runs in
the keeper and is not the owner's alone) is in the agent manual, the Python API (a typed
``Client`` method, and the same on ``SyncClient``) and the MCP server's tools (the ``all``
profile: ``browserbay_mcp.tools.tool_names``). A verb left out of a surface on purpose is
listed here with the reason; a new verb that is in none of the lists fails.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from browserbay.api import Client, SyncClient
from browserbay.verbs import VERBS, agent_verb
from browserbay_mcp.tools import tool_names

REPO = Path(__file__).resolve().parents[1]
AGENT_VERBS = [v.name for v in VERBS if agent_verb(v)]

#: Agent verbs with no typed ``Client`` method, and why: each is still reachable as
#: ``Client.call(verb, ...)`` (the generic call every verb takes).
API_ABSENT = {
    "login-check": "a login probe for scripts that drive a login flow: Client.call('login-check')",
    "use": "attaching a profile is the session's setup, done once, before a script: "
    "Client.call('use', profile=...)",
    "resume": "reopening kept tabs after a close: Client.call('resume')",
    "detach": "the session's setup: Client.call('detach')",
    "pin": "the session's setup: Client.call('pin', profile=...)",
    "profiles": "the keeper's listing of profiles, for the owner's tools: Client.call('profiles')",
    "backend": "switching a profile's backend is a decision for a human (it asks to confirm): "
    "Client.call('backend', ...)",
    "blocked": "reporting a blocked site to the keeper's notes: Client.call('blocked', ...)",
    "hints": "the keeper's notes on hosts: Client.call('hints', ...)",
    "session": "session sockets and child sessions are the orchestrator's: "
    "Client.call('session', ...)",
}
#: Agent verbs the MCP server lists no tool for, and why (none: every agent verb is a tool of
#: the ``all`` profile).
MCP_ABSENT: dict[str, str] = {}
#: Agent verbs the agent manual has no section for (none: tests/test_docs.py demands one for
#: every verb of the table).
MANUAL_ABSENT: dict[str, str] = {}

#: Public ``Client`` methods that send no one verb of their own.
_NOT_VERBS = {"call", "connect", "aclose"}
_SENDS = re.compile(r"self\._request\(\s*\"([a-z-]+)\"")


def _methods_by_verb() -> dict[str, list[str]]:
    """Each verb, to the public ``Client`` methods whose body sends it (read from their
    source: the method is the verb's only when it really sends that verb)."""
    found: dict[str, list[str]] = {}
    for name, fn in inspect.getmembers(Client, inspect.iscoroutinefunction):
        if name.startswith("_") or name in _NOT_VERBS:
            continue
        sent = set(_SENDS.findall(inspect.getsource(fn)))
        assert sent, f"Client.{name} sends no verb it names: list it in _NOT_VERBS or fix it"
        for verb in sent:
            found.setdefault(verb, []).append(name)
    return found


def test_the_absent_lists_name_only_agent_verbs() -> None:
    for listed in (API_ABSENT, MCP_ABSENT, MANUAL_ABSENT):
        assert set(listed) <= set(AGENT_VERBS), set(listed) - set(AGENT_VERBS)
        assert all(reason.strip() for reason in listed.values())


def test_every_agent_verb_is_in_the_agent_manual() -> None:
    manual = (REPO / "docs" / "agent-manual.md").read_text()
    sections = set(re.findall(r"^### (\S+)$", manual, flags=re.MULTILINE))
    missing = [v for v in AGENT_VERBS if v not in sections and v not in MANUAL_ABSENT]
    assert missing == [], f"no '### <verb>' section in docs/agent-manual.md: {missing}"
    assert not set(MANUAL_ABSENT) & sections, "listed absent, but the manual has it"


def test_every_agent_verb_has_a_python_api_method() -> None:
    by_verb = _methods_by_verb()
    missing = [v for v in AGENT_VERBS if v not in by_verb and v not in API_ABSENT]
    assert missing == [], (
        f"agent verbs with no Client method (add one, or list it in API_ABSENT): {missing}"
    )
    stale = sorted(set(API_ABSENT) & set(by_verb))
    assert stale == [], f"listed absent from the API, but a Client method sends it: {stale}"


@pytest.mark.parametrize("method", sorted({m for ms in _methods_by_verb().values() for m in ms}))
def test_the_sync_client_has_each_method_too(method: str) -> None:
    assert callable(getattr(SyncClient, method, None)), (
        f"SyncClient.{method} is missing: regenerate _sync_api.py (scripts/unasync.py)"
    )


def test_every_agent_verb_is_an_mcp_tool() -> None:
    tools = tool_names(["all"])
    served = set(tools.values())
    missing = [v for v in AGENT_VERBS if v not in served and v not in MCP_ABSENT]
    assert missing == [], f"agent verbs with no MCP tool (profile all): {missing}"
    assert not set(MCP_ABSENT) & served, "listed absent, but the MCP server has a tool for it"
    assert served <= set(AGENT_VERBS), "an MCP tool runs a verb no agent may call"
