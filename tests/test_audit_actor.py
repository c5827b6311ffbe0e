"""The audit records who acted (issue 17, item 6): ``owner`` for the home's own socket,
``session-socket:<id>`` for a session socket, ``trigger`` for the trigger intake — named by
the keeper from where the request came in, never by the client. Rows from before the actor
was recorded show as ``unknown``. Real keepers, the real CLI and the real registry."""

from __future__ import annotations

import json
import os
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any

from browserbay import client
from browserbay.paths import bay_paths
from browserbay_testing import Bay, wait_for


def _audit(bay: Bay) -> list[dict[str, Any]]:
    rows = bay.ok("audit", "--last", "500", session=None)["audit"]
    assert isinstance(rows, list)
    return rows


def _of(rows: list[dict[str, Any]], session: str) -> list[tuple[str, str, str | None]]:
    return [(r["actor"], r["verb"], r["road"]) for r in rows if r["session"] == session]


def test_the_owners_channel_is_audited_as_the_owner(bay: Bay) -> None:
    """The old audit had no actor: its rows could not tell the owner from an agent."""
    bay.ok("status", session="aud-owner")
    bay.ok("profiles", session="aud-owner")
    rows = _of(_audit(bay), "aud-owner")
    assert ("owner", "status", "cli") in rows
    assert ("owner", "profiles", "cli") in rows
    text = bay("audit", "--last", "500", session=None, json_=False).stdout
    assert any("owner" in line and "aud-owner" in line for line in text.splitlines())


def test_a_client_cannot_declare_itself_another_actor(bay: Bay) -> None:
    """A frame claiming the trigger road (and a stranger's ``actor``) over the owner's socket
    is still the owner's: the actor comes from the channel, the road from a closed list."""
    paths = bay_paths({"BAY_HOME": str(bay.home)})
    frame = client.call(
        "status",
        session={"id": "aud-forge", "origin": "api"},
        paths=paths,
        extra={"road": "trigger", "actor": {"id": "aud-other", "origin": "api"}},
    )
    assert frame["ok"], frame
    assert _of(_audit(bay), "aud-forge") == [("owner", "status", "api")]


def _publish(directory: Path, body: dict[str, Any]) -> str:
    name = str(uuid.uuid4())
    tmp = directory / f".{name}.tmp"
    tmp.write_text(json.dumps(body))
    os.replace(tmp, directory / f"{name}.json")
    return name


def test_a_trigger_is_audited_as_the_trigger(bay: Bay) -> None:
    directory = Path(bay.ok("triggers", "path", session=None)["path"])
    name = _publish(directory, {"version": 1, "action": "open", "session": "aud-trig"})
    result = directory / "processed" / f"{name}.result.json"
    wait_for(result.exists, timeout=90, what="the trigger's result")
    assert json.loads(result.read_text())["ok"] is True
    assert ("trigger", "open", "trigger") in _of(_audit(bay), "aud-trig")
    bay.ok("close", session="aud-trig")


def test_a_row_from_before_the_actor_was_recorded_shows_as_unknown(bay: Bay) -> None:
    registry = bay_paths({"BAY_HOME": str(bay.home)}).registry
    with sqlite3.connect(registry) as db:  # as migration 7 left a row: no actor
        db.execute(
            "INSERT INTO audit(at, session, profile, verb, ok, code, road) "
            "VALUES (?, 'aud-old', NULL, 'open', 1, NULL, 'cli')",
            (time.time(),),
        )
    assert _of(_audit(bay), "aud-old") == [("unknown", "open", "cli")]
    text = bay("audit", "--last", "500", session=None, json_=False).stdout
    assert any("unknown" in line and "aud-old" in line for line in text.splitlines())


def test_a_session_socket_is_audited_as_that_socket_even_when_refused(bay: Bay) -> None:
    """Over a socket the owner granted, every row names the socket's session as the actor —
    a verb it may run and an owner-only one the gate refused — never ``owner``."""
    sid = "aud-sock"
    directory = bay.home / sid
    directory.mkdir(mode=0o700)
    path = directory / "bay.sock"
    bay.ok("session", "grant", sid, "--socket", str(path), session=None)
    try:
        agent = {"BAY_SOCKET": str(path)}
        assert bay("status", session=None, env=agent).code == 0
        refused = bay("audit", session=None, env=agent)
        assert refused.frame["code"] == "owner_only"
        rows = _of(_audit(bay), sid)
        assert (f"session-socket:{sid}", "status", "cli") in rows
        assert (f"session-socket:{sid}", "audit", "cli") in rows
        assert all(actor == f"session-socket:{sid}" for actor, _, _ in rows)
        text = bay("audit", "--last", "500", session=None, json_=False).stdout
        assert any(f"session-socket:{sid}" in line for line in text.splitlines())
    finally:
        bay.ok("session", "revoke", sid, session=None)
