"""The CLI's warm road (browserbay.keeper.argvroad): the argv made into the very frame the
whole client sends, or answered ``whole`` — nothing run — for what needs the client's side."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from browserbay.keeper.argvroad import Asked, made
from browserbay.keeper.channels import OWNER, Channel, Grant
from browserbay.verbs import BY_NAME, PLUGIN, Arg, Verb


def argv(*words: str, sid: int = 77, **env: str) -> dict[str, Any]:
    return {"id": "1", "argv": list(words), "facts": {"env": env, "sid": sid}, "progress": True}


def test_a_warm_verb_is_the_frame_the_whole_client_sends() -> None:
    asked = made(argv("get", "title"), BY_NAME, OWNER)
    assert isinstance(asked, Asked)
    assert asked.frame == {
        "id": "1",
        "verb": "get",
        "args": {"what": "title"},
        "session": {"id": "shell-77", "origin": "shell"},
        "timeout": 30.0,
        "progress": True,
        "road": "cli",
    }
    assert (asked.as_json, asked.full) == (False, False)


def test_the_callers_environment_names_its_session_profile_and_group() -> None:
    env = {"BAY_SESSION": "mine", "BAY_GROUP": "g1", "BAY_PROFILE": "work", "BAY_FOOTER": "full"}
    asked = made(argv("click", "@e2", "--session", "other", "--json", **env), BY_NAME, OWNER)
    assert isinstance(asked, Asked)
    assert asked.frame["session"] == {"id": "other", "origin": "flag"}
    assert asked.frame["actor"] == {"id": "mine", "origin": "env"}
    assert (asked.frame["profile"], asked.frame["group"]) == ("work", "g1")
    assert (asked.as_json, asked.full) == (True, True)


def test_an_environment_variable_it_does_not_read_is_dropped() -> None:
    asked = made(argv("get", "url", BAY_HOME="/elsewhere", BAY_SOCKET="/x"), BY_NAME, OWNER)
    assert isinstance(asked, Asked)
    assert "BAY_HOME" not in str(asked.frame)
    assert "/x" not in str(asked.frame)


@pytest.mark.parametrize(
    ("words", "why"),
    [
        (["get", "titel"], "usage"),
        (["nosuch"], "usage"),
        (["get", "--help"], "help"),
        (["--version"], "help"),
        (["help"], "the client's own verb"),
        (["keeper", "status"], "the client's own verb"),
        (["doctor"], "the client's own verb"),
        (["fill", "@e1", "-"], "stdin"),
        (["screenshot", "shot.png"], "files or secrets"),
        (["upload", "@e3", "cv.pdf"], "files or secrets"),
        (["get", "title", "--timeout", "5000"], "timeout"),
        (["type", "@e1", "x" * (1024 * 1024 + 1)], "too large"),
    ],
)
def test_what_needs_the_clients_side_is_answered_whole(words: list[str], why: str) -> None:
    assert made(argv(*words), BY_NAME, OWNER) == why


def test_a_verb_with_a_secret_argument_is_the_clients_given_or_not() -> None:
    """The client reads a secret (a hidden prompt, stdin) when the keeper asks for it; on
    the warm road nobody would (tests/test_keys_e2e.py: `bay keys set` refused
    secret_required)."""
    secret = Arg("value", "opt", "the key", type="secret")
    keys = Verb("keys", PLUGIN, "keys", (Arg("action", "pos", "set"), secret), plugin="keys")
    assert made(argv("keys", "set"), {**BY_NAME, "keys": keys}, OWNER) == "files or secrets"


def test_a_session_socket_never_takes_the_warm_road() -> None:
    channel = Channel(Grant("agent-1", Path("/run/a/bay.sock")))
    assert made(argv("get", "title"), BY_NAME, channel) == (
        "a session socket's client sends its frames itself"
    )


@pytest.mark.parametrize(
    "frame",
    [
        {"id": "1", "argv": "get title", "facts": {"env": {}, "sid": 1}},
        {"id": "1", "argv": ["get", 3], "facts": {"env": {}, "sid": 1}},
        {"id": "1", "argv": ["get", "title"], "facts": {"env": {}, "sid": "1"}},
        {"id": "1", "argv": ["get", "title"], "facts": {"env": [], "sid": 1}},
        {"id": "1", "argv": ["get", "title"]},
    ],
)
def test_a_malformed_argv_frame_runs_nothing(frame: dict[str, Any]) -> None:
    assert isinstance(made(frame, BY_NAME, OWNER), str)
