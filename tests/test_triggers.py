"""Trigger intake: the file protocol, its validation order, the three actions on real
Chromium, exactly-once (a duplicate UUID, a kill -9 between claim and result) and FIFO."""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from browserbay import procfs
from browserbay_testing import Bay


def _dir(b: Bay) -> Path:
    path = Path(b.ok("triggers", "path")["path"])
    assert oct(path.stat().st_mode & 0o777) == "0o700"
    return path


def _publish(d: Path, body: Any, name: str | None = None) -> str:
    """Write, then rename into place: how a request is published."""
    name = name or str(uuid.uuid4())
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    tmp = d / f".{name}.tmp"
    tmp.write_bytes(data.encode() if isinstance(data, str) else data)
    os.replace(tmp, d / f"{name}.json")
    return name


def _result(d: Path, name: str, timeout: float = 90) -> dict[str, Any]:
    path = d / "processed" / f"{name}.result.json"
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.exists() and not (d / f"{name}.json").exists():
            return dict(json.loads(path.read_text()))
        time.sleep(0.05)
    raise AssertionError(f"no result for {name}")


REQ = {"version": 1, "action": "open", "session": "trig"}


@pytest.mark.parametrize(
    ("body", "name", "reason"),
    [
        ("[1, 2]", None, "not an object"),
        ("not json", None, "not an object"),
        ({**REQ, "version": 2, "action": "fly"}, None, "unsupported version: 2"),
        ({**REQ, "action": "fly", "session": "bad id!"}, None, 'unsupported action: "fly"'),
        ({**REQ, "session": "bad id!"}, "NOT-A-UUID", "filename not a lowercase UUID"),
        ({**REQ, "session": "bad id!"}, str(uuid.uuid4()).upper(), "filename not a lowercase UUID"),
        ({"version": 1, "action": "open"}, None, "missing field: session"),
        ({**REQ, "extra": 1, "url": "file:///x"}, None, "unsupported field: extra"),
        ({**REQ, "session": "bad id!", "url": "file:///x"}, None, "bad session id"),
        (
            {**REQ, "url": "file:///etc/passwd", "timeout_ms": 0},
            None,
            "bad URL: only http, https and about:blank",
        ),
        ({**REQ, "timeout_ms": 0}, None, "bad timeout: timeout_ms is a whole number in 1..600000"),
        (
            {"version": 1, "action": "stop", "session": "s", "url": "http://x/"},
            None,
            "unsupported field: url",
        ),
    ],
)
def test_validation_reasons_in_order(bay: Bay, body: Any, name: str | None, reason: str) -> None:
    d = _dir(bay)
    published = _publish(d, body, name)
    answer = _result(d, published)
    assert answer["ok"] is False
    assert answer["outcome"] == "refused"
    assert answer["reason"] == reason
    assert answer["uncertain"] is False
    assert set(answer) == {"version", "action", "ok", "outcome", "reason", "session", "uncertain"}


def test_too_large_and_stale_requests_are_refused(fresh_bay: Bay) -> None:
    d = _dir(fresh_bay)
    big = _publish(d, json.dumps({**REQ, "pad": "x" * 70_000}))
    assert _result(d, big)["reason"] == "too large (limit 65536 bytes)"
    fresh_bay.ok("keeper", "stop")
    old = _publish(d, REQ)
    past = time.time() - 7200
    os.utime(d / f"{old}.json", (past, past))
    fresh_bay.ok("keeper", "start")
    assert _result(d, old)["reason"].startswith("stale request: published")


def test_open_resume_and_stop_on_a_real_browser(fresh_bay: Bay, demo: str) -> None:
    d = _dir(fresh_bay)
    opened = _result(d, _publish(d, {**REQ, "url": f"{demo}/form.html"}))
    assert opened["ok"] is True
    assert opened["outcome"] == "opened"
    assert fresh_bay.ok("get", "title", session="trig")["value"] == "Sign up"
    stopped = _result(d, _publish(d, {"version": 1, "action": "stop", "session": "trig"}))
    assert stopped["outcome"] == "stopped"
    assert fresh_bay.ok("status", session="trig")["browser"] is None
    again = _result(d, _publish(d, {"version": 1, "action": "stop", "session": "trig"}))
    assert again["outcome"] == "not-found"
    resumed = _result(d, _publish(d, {"version": 1, "action": "resume", "session": "trig"}))
    assert resumed["outcome"] == "resumed", resumed
    tabs = fresh_bay.ok("tab", "list", session="trig")["tabs"]
    assert [t["url"] for t in tabs] == [f"{demo}/form.html"]
    nothing = _result(d, _publish(d, {"version": 1, "action": "resume", "session": "nobody"}))
    assert nothing["outcome"] == "not-found"
    # Each action is audited as the verb it is, on the road it came by.
    audit = [(r["verb"], r["road"], r["ok"]) for r in fresh_bay.ok("audit")["audit"]]
    assert ("open", "trigger", True) in audit
    assert ("close", "trigger", True) in audit
    assert ("resume", "trigger", True) in audit
    assert ("get", "cli", True) in audit


def test_a_repeated_uuid_gets_the_first_result_and_is_never_replayed(
    fresh_bay: Bay, demo: str
) -> None:
    d = _dir(fresh_bay)
    name = _publish(d, {**REQ, "url": f"{demo}/form.html"})
    first = _result(d, name)
    fresh_bay.ok("open", f"{demo}/", session="trig")  # move away
    _publish(d, {**REQ, "url": f"{demo}/form.html"}, name)
    assert _result(d, name) == first
    assert fresh_bay.ok("get", "title", session="trig")["value"] == "browserbay demo"


def test_a_kill_between_claim_and_result_answers_uncertain_and_does_not_replay(
    fresh_bay: Bay, demo: str
) -> None:
    fresh_bay.env["BAY_PLUGIN_MODULES"] = "recorder,slowtriggers"  # claimed, then 3 s
    d = _dir(fresh_bay)
    status = fresh_bay.ok("keeper", "status")
    name = _publish(d, {**REQ, "url": f"{demo}/form.html"})
    time.sleep(1.0)  # claimed, not yet acted on
    os.kill(status["pid"], signal.SIGKILL)
    end = time.monotonic() + 15
    while procfs.alive(status["pid"]) and time.monotonic() < end:
        time.sleep(0.05)
    fresh_bay.env["BAY_PLUGIN_MODULES"] = "recorder"
    fresh_bay.ok("keeper", "start")
    answer = _result(d, name)
    assert answer["uncertain"] is True
    assert answer["ok"] is False
    assert "may have taken effect" in answer["reason"]
    # Exactly once: the interrupted open was not replayed.
    assert fresh_bay.ok("status", session="trig")["browser"] is None


def test_one_sessions_requests_run_in_order(fresh_bay: Bay, demo: str) -> None:
    d = _dir(fresh_bay)
    fresh_bay.ok("keeper", "stop")  # publish both before the keeper sees either
    first = _publish(d, {**REQ, "url": f"{demo}/form.html"})
    time.sleep(0.02)
    second = _publish(d, {**REQ, "url": f"{demo}/popup.html"})
    fresh_bay.ok("keeper", "start")
    assert _result(d, first)["ok"] is True
    assert _result(d, second)["ok"] is True
    assert fresh_bay.ok("get", "title", session="trig")["value"] == "Popups"
    assert fresh_bay.ok("back", session="trig")["title"] == "Sign up"
