"""Every refusal from the outside: the exact --json shape, the exit status, and a way out.
The census (test_refusal_census.py) checks that every code of the table is produced here or
in another test through assert_refused."""

from __future__ import annotations

import json
import socket
import time

from browserbay.paths import bay_paths
from browserbay_testing import Bay, assert_refused


def test_success_and_refusal_json_shapes(bay: Bay, demo: str) -> None:
    ok = bay("open", f"{demo}/", session="shape").frame
    assert set(ok) == {"ok", "verb", "session", "profile", "data"}
    assert ok["ok"] is True
    assert ok["verb"] == "open"
    assert ok["session"] == {"id": "shape", "origin": "env"}
    assert ok["profile"] == {
        "id": "ep-shape",
        "label": "ephemeral",
        "provider": "chromium",
        "tier": 1,
        "ephemeral": True,
        "attached": 1,
        "chosen": "ephemeral",
        "among": 0,
        "changed": False,
    }
    refused = bay("open", "file:///etc/hosts", session="shape")
    assert refused.code == 1
    assert set(refused.frame) == {"ok", "code", "message", "way_out", "data"}
    bay.ok("close", session="shape")


def test_plain_output_value_on_stdout_no_footer_on_its_own_browser(bay: Bay, demo: str) -> None:
    r = bay("open", f"{demo}/form.html", session="plain", json_=False)
    assert r.code == 0
    assert r.stdout == f"Sign up\n{demo}/form.html\n"
    assert r.stderr == ""  # its own isolated browser: nothing it could get wrong
    full = bay("get", "title", session=None, json_=False, env={"BAY_FOOTER": "full"})
    assert "session shell-" in full.stderr
    assert "(from your shell's session)" in full.stderr
    refused = bay("open", "javascript:1", session="plain", json_=False)
    assert refused.code == 1
    assert refused.stdout == ""
    assert refused.stderr.startswith("refused [local_scheme_refused]: ")
    assert "way out: " in refused.stderr
    bay.ok("close", session="plain")


def test_unknown_verb_and_flag_are_usage_errors_with_a_suggestion(bay: Bay) -> None:
    r = bay("snapshto", session="usage")
    frame = assert_refused(r, "usage")
    assert r.code == 2
    assert "did you mean 'snapshot'" in frame["message"]
    r = bay("snapshot", "--interactiv", session="usage")
    assert "did you mean '--interactive'" in assert_refused(r, "usage")["message"]
    r = bay("get", "titel", session="usage")
    assert "did you mean 'title'" in assert_refused(r, "usage")["message"]
    r = bay("click", session="usage")
    assert "needs <target>" in assert_refused(r, "usage")["message"]
    r = bay("snapshot", "--depth", "two", session="usage")
    assert assert_refused(r, "usage")["way_out"] == "bay help snapshot"
    plain = bay("opne", "x", session="usage", json_=False)
    assert plain.code == 2
    assert "did you mean 'open'" in plain.stderr


def test_deadline_exits_124(bay: Bay, demo: str) -> None:
    bay.ok("open", f"{demo}/", session="slow")
    started = time.monotonic()
    r = bay("wait", "5000", "--timeout", "1", session="slow")
    frame = assert_refused(r, "deadline")
    assert r.code == 124
    assert time.monotonic() - started < 4.5
    assert "--timeout 2" in frame["way_out"]
    # The session is usable right after.
    assert bay.ok("get", "title", session="slow")["value"] == "browserbay demo"
    r = bay("open", f"{demo}/slow?s=3", "--timeout", "1", session="slow")
    assert_refused(r, "deadline")
    bay.ok("close", session="slow")


def test_a_2mb_argument_is_refused_before_it_is_sent(bay: Bay, demo: str) -> None:
    bay.ok("status", session="big")  # the keeper runs
    before = [row for row in bay.recorded() if row["hook"] == "bay_before_verb"]
    # argv caps one word at 128 KiB: a 2 MB value comes through stdin ("-") ...
    r = bay("eval", "-", session="big", stdin="1;" + " " * (2 * 1024 * 1024))
    frame = assert_refused(r, "too_large")
    assert frame["data"]["limit"] == 1024 * 1024
    assert frame["data"]["size"] > 2_000_000
    # ... or as many words that add up.
    r = bay("select", "#x", *(["v" * 100_000] * 12), session="big")
    frame = assert_refused(r, "too_large")
    assert frame["data"]["size"] == 1_200_002  # with the target
    after = [row for row in bay.recorded() if row["hook"] == "bay_before_verb"]
    assert len(after) == len(before), "the keeper must never have seen the argument"


def test_text_from_stdin_stays_out_of_argv(bay: Bay, demo: str) -> None:
    bay.ok("open", f"{demo}/form.html", session="stdin")
    bay.ok("fill", "input[name=name]", "-", session="stdin", stdin="typed via stdin\n")
    assert bay.ok("get", "value", "input[name=name]", session="stdin")["value"] == (
        "typed via stdin"
    )
    bay.ok("close", session="stdin")


def test_no_keeper_and_no_autostart_is_keeper_unavailable(fresh_bay: Bay) -> None:
    r = fresh_bay("status", env={"BAY_NO_AUTOSTART": "1"})
    frame = assert_refused(r, "keeper_unavailable")
    assert "BAY_NO_AUTOSTART" in frame["message"]
    assert frame["way_out"].startswith("bay keeper start")


def test_a_missing_browser_is_backend_unavailable_naming_the_fix(fresh_bay: Bay) -> None:
    fresh_bay.env["BAY_CHROMIUM_PATH"] = "/nonexistent/chrome"
    frame = assert_refused(fresh_bay("open", "about:blank"), "backend_unavailable")
    assert "BAY_CHROMIUM_PATH=/nonexistent/chrome" in frame["message"]
    assert "BAY_CHROMIUM_PATH" in frame["way_out"]
    # status still works: nothing needs a browser there.
    assert fresh_bay.ok("status")["browser"] is None


def test_a_provider_without_a_capability_refuses_the_verb_by_name(fresh_bay: Bay) -> None:
    fresh_bay.env["BAY_PLUGIN_MODULES"] = "recorder,windowish"
    fresh_bay.env["BAY_DEFAULT_PROVIDER"] = "windowish"
    frame = assert_refused(fresh_bay("open", "about:blank"), "capability_missing")
    assert frame["data"] == {"provider": "windowish", "verb": "open", "capability": "has_cdp"}
    assert fresh_bay.ok("status")["acts_on"]["provider"] == "windowish"


def test_a_policy_plugin_refuses_a_verb_before_it_runs(fresh_bay: Bay, demo: str) -> None:
    fresh_bay.env["BAY_TEST_REFUSE_VERB"] = "eval"
    fresh_bay.ok("open", f"{demo}/")
    frame = assert_refused(fresh_bay("eval", "document.title = 'changed'"), "verb_refused")
    assert frame["way_out"] == "ask the user to approve it, then retry"
    assert frame["message"] == (
        "'eval' was refused by the recorder plugin: eval needs a human's approval"
    )
    assert fresh_bay.ok("get", "title")["value"] == "browserbay demo"


def test_a_crashing_plugin_is_an_internal_error_and_the_keeper_goes_on(
    fresh_bay: Bay, demo: str
) -> None:
    fresh_bay.env["BAY_TEST_CRASH_VERB"] = "reload"
    fresh_bay.ok("open", f"{demo}/")
    frame = assert_refused(fresh_bay("reload"), "internal_error")
    assert frame["way_out"].startswith("bay keeper logs")
    assert fresh_bay.ok("get", "title")["value"] == "browserbay demo"
    log = fresh_bay("keeper", "logs", json_=False).stdout
    assert "the recorder plugin crashes on purpose" in log


def _raw(home: Bay, payload: bytes) -> list[dict[str, object]]:
    path = str(bay_paths({"BAY_HOME": str(home.home)}).socket)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(path)
        try:
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
        except BrokenPipeError:
            pass  # the keeper hung up on an oversized frame: read what it said first
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return [json.loads(line) for line in data.splitlines() if line.strip()]


def test_malformed_frames_get_error_frames_and_the_connection_goes_on(bay: Bay) -> None:
    bay.ok("status", session="raw")
    hello = b'{"hello": {"role": "test"}}\n'
    request = b'{"id": "9", "verb": "status", "args": {}, "session": {"id": "raw"}}\n'
    frames = _raw(
        bay,
        hello
        + b"not json\n"
        + b"\xff\xfe\n"
        + b"[1, 2]\n"
        + b'{"id": "1", "verb": "fly"}\n'
        + b'{"id": "2", "verb": "status", "args": {}, "session": {"id": "bad id!"}}\n'
        + b'{"id": "3", "verb": "get", "args": {"what": "title", "x": 1},'
        b' "session": {"id": "raw"}}\n' + b"{" * 5000 + b"\n" + request,
    )
    assert "hello" in frames[0]
    errors = frames[1:-1]
    assert len(errors) == 7
    for f in errors:
        assert_refused(f, "bad_frame")
    assert "not JSON" in str(errors[0]["message"])
    assert "UTF-8" in str(errors[1]["message"])
    assert frames[-1]["ok"] is True
    assert frames[-1]["id"] == "9"


def test_an_oversized_frame_is_too_large_and_others_are_still_served(bay: Bay) -> None:
    bay.ok("status", session="huge")
    frames = _raw(
        bay,
        b'{"hello": {}}\n{"id": "1", "verb": "status", "x": "'
        + b"a" * 5_000_000
        + b'"}\n{"id": "2", "verb": "status", "args": {}, "session": {"id": "huge"}}\n',
    )
    assert_refused(frames[1], "too_large")
    # The same connection goes on with the next frame.
    assert frames[2]["ok"] is True
    assert frames[2]["id"] == "2"
    # The keeper keeps serving everyone.
    assert bay.ok("status", session="huge")["session"]["id"] == "huge"
