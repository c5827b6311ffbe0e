"""browserbay.identity: the one session-id rule and the one resolver. Each test pins a case
where the copies it replaced disagreed or were wrong."""

from __future__ import annotations

import os
import time

import pytest

from browserbay import api, identity
from browserbay.keeper.requests import _validate
from browserbay.keeper.triggers import Refused, validate
from browserbay.refusals import Refusal


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("a", True),
        ("agent-7.run_2:x@host", True),
        ("x" * 128, True),  # at the limit
        ("x" * 129, False),  # one past it
        ("", False),
        ("a b", False),
        ("a/b", False),
        ("a\n", False),  # `^…$` with match() took a trailing newline for the end
        ("é", False),
        (7, False),
        (None, False),
    ],
)
def test_the_session_id_rule(value: object, ok: bool) -> None:
    assert identity.is_session_id(value) is ok


def _frame(session: object) -> dict[str, object]:
    return {"verb": "status", "args": {}, "session": session}


def test_the_keeper_refuses_a_session_id_with_a_trailing_newline() -> None:
    with pytest.raises(Refusal) as refused:
        _validate(_frame({"id": "agent\n", "origin": "env"}))
    assert refused.value.code == "bad_frame"
    assert "1-128 of A-Z a-z 0-9 . _ : @ -" in str(refused.value.frame()["message"])
    _, _, ref, _ = _validate(_frame({"id": "x" * 128, "origin": "env"}))
    assert (ref.id, ref.origin) == ("x" * 128, "env")


def test_a_trigger_refuses_a_session_id_with_a_trailing_newline() -> None:
    name = "0b0f3a52-8c7e-4b8e-9a3d-6c1f2e4d5a6b"
    body = {"version": 1, "action": "stop", "session": "agent\n"}
    with pytest.raises(Refused) as refused:
        validate(name, body, time.time())
    assert refused.value.reason == "session must be a session id"


def test_an_unknown_origin_is_the_api() -> None:
    assert identity.from_row({"id": "a", "origin": "ghost"}) == ("a", "api")
    assert identity.from_row({"id": "a"}) == ("a", "api")
    assert identity.from_row({"id": "a", "origin": "shell"}) == ("a", "shell")
    assert identity.from_row({"id": "a b"}) is None
    assert identity.from_row("a") is None


def test_the_resolver_flag_then_env_then_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BAY_SESSION", "from-env")
    assert identity.resolve("given") == {"id": "given", "origin": "flag"}
    assert identity.resolve() == {"id": "from-env", "origin": "env"}
    assert identity.resolve(fallback="mcp-1") == {"id": "from-env", "origin": "env"}
    monkeypatch.setenv("BAY_SESSION", "")
    shell = {"id": f"shell-{os.getsid(0)}", "origin": "shell"}
    assert identity.resolve() == shell
    assert identity.resolve("") == shell
    assert identity.resolve(fallback="mcp-1") == {"id": "mcp-1", "origin": "shell"}
    assert identity.resolve(origin="api") == {**shell, "origin": "api"}


def test_the_cli_and_the_api_resolve_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """The API's identity is the CLI's with origin ``api``."""
    for env in ("", "from-env"):
        monkeypatch.setenv("BAY_SESSION", env)
        for explicit in (None, "given"):
            cli_side = identity.resolve(explicit)
            assert api.api_session(explicit) == {**cli_side, "origin": "api"}
    monkeypatch.setenv("BAY_SESSION", "")
    assert identity.context(session_flag="other")["actor"] == identity.resolve()


def test_a_shell_identity_names_its_shell_session() -> None:
    """What the keeper reads to tell whether an exclusive hold's shell still runs."""
    assert identity.shell_of(identity.shell_session()) == os.getsid(0)
    assert identity.shell_of("shell-42") == 42
    assert identity.shell_of("shell-") is None
    assert identity.shell_of("shell-4x") is None
    assert identity.shell_of("mcp-42") is None
    assert identity.shell_of("agent") is None
