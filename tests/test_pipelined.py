"""The hello and the first request in one write (browserbay.client._pipelined): one round
trip for a warm verb on the owner's channel. A keeper of this version serves the request
after the hello as ever; a keeper whose version or protocol the client's hello does not
state as its own runs nothing after that hello but the shutdown op that replaces it."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

from browserbay import protocol
from browserbay.sockpath import runtime_dir, socket_for
from browserbay_testing import Bay

OTHER = {"role": "client", "version": "0.0.1-other", "protocol": 1}


def _socket(b: Bay) -> Path:
    return Path(socket_for(runtime_dir({"BAY_HOME": str(b.home)})))


def _write_all(path: Path, *frames: dict[str, Any]) -> list[dict[str, Any]]:
    """``frames`` in one write; the answers to each (progress lines skipped)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(60)
        s.connect(str(path))
        s.sendall(b"".join(protocol.encode(f) for f in frames))
        lines = s.makefile("rb")
        answers: list[dict[str, Any]] = []
        while len(answers) < len(frames):
            answer = json.loads(lines.readline())
            if "progress" not in answer or "ok" in answer:
                answers.append(answer)
        return answers


def _open(session: str) -> dict[str, Any]:
    return {
        "id": "1",
        "verb": "open",
        "args": {"url": "about:blank"},
        "session": {"id": session, "origin": "api"},
        "timeout": 60,
    }


def test_a_request_written_with_its_hello_is_served(fresh_bay: Bay) -> None:
    fresh_bay.ok("status", session="pipe-warm")  # a keeper listening
    hello, answer = _write_all(_socket(fresh_bay), protocol.hello("client"), _open("pipe-a"))
    assert hello["hello"]["version"] == protocol.hello("keeper")["hello"]["version"]
    assert answer["ok"], answer
    assert answer["id"] == "1"


def test_a_keeper_runs_nothing_a_client_of_another_version_sent_after_its_hello(
    fresh_bay: Bay,
) -> None:
    """The request a newer client wrote with its hello (before it could read that this
    keeper is not its version) is refused, not run: the client replaces the keeper and sends
    it again to the new one, so running it here would run it twice. The shutdown op, the
    replacement itself, is served. On the old code the request ran (``open`` answered ok)."""
    fresh_bay.ok("status", session="pipe-warm")
    path = _socket(fresh_bay)
    hello, refused = _write_all(path, {"hello": OTHER}, _open("pipe-other"))
    assert "hello" in hello
    assert refused["ok"] is False
    assert refused["code"] == "keeper_unavailable"
    assert refused["id"] == "1"
    assert "0.0.1-other" in refused["message"]
    tabs = fresh_bay.ok("tab", "list", session="pipe-other")
    assert tabs["tabs"] == [], tabs  # the open never ran
    for frame in ({"id": "2", "op": "put", "name": "x", "size": 1, "offset": 0, "data": "eA=="},):
        _, answer = _write_all(path, {"hello": OTHER}, frame)
        assert answer["code"] == "keeper_unavailable", answer
    _, stopping = _write_all(path, {"hello": OTHER}, {"id": "3", "op": "shutdown"})
    assert stopping == {"id": "3", "ok": True, "data": {"stopping": True}}


def test_a_hello_that_states_no_version_is_served_as_before(fresh_bay: Bay) -> None:
    """A tool's or a test's hello (``{"hello": {}}``) states nothing to disagree with."""
    fresh_bay.ok("status", session="pipe-warm")
    _, answer = _write_all(_socket(fresh_bay), {"hello": {}}, _open("pipe-bare"))
    assert answer["ok"], answer
