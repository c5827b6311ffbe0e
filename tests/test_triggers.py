"""Trigger intake: the file protocol, every reason in its order and the results envelope, the
three actions on real Chromium, and exactly once whatever happens — a reused UUID (refused
or not), a kill -9 at a step of a request's life (its file found late, or gone), a file not
yet whole, a result file that cannot be written, one session's FIFO across a restart.

Actions are counted where they land (:class:`browserbay_testing.hits.HitSite`), not by the
keeper's word."""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browserbay import procfs
from browserbay.paths import bay_paths
from browserbay_testing import Bay
from browserbay_testing.hits import HitSite

ENVELOPE = {
    "version",
    "action",
    "ok",
    "outcome",
    "reason",
    "session",
    "uncertain",
    "error",
    "detail",
}


@pytest.fixture
def site() -> Iterator[HitSite]:
    with HitSite().serve() as s:
        yield s


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
            answer = dict(json.loads(path.read_text()))
            assert set(answer) == ENVELOPE, answer
            return answer
        time.sleep(0.05)
    raise AssertionError(f"no result for {name}")


def _kill_on_hit(site: HitSite, b: Bay, hit: str, hold: threading.Event | None = None) -> int:
    """SIGKILL the keeper the moment its browser's navigation reaches ``hit`` (mid-action:
    the side effect happened, the action has not finished) — after ``hold`` is set."""
    pid = b.keeper_pid()

    def kill() -> None:
        if hold is not None:
            hold.wait(60)
        os.kill(pid, signal.SIGKILL)

    site.on_hit[hit] = kill
    return pid


def _gone(pid: int) -> None:
    end = time.monotonic() + 15
    while procfs.alive(pid) and time.monotonic() < end:
        time.sleep(0.05)
    assert not procfs.alive(pid)


REQ = {"version": 1, "action": "open", "session": "trig"}
_ = None  # the envelope's null

#: (body, filename or None for a fresh UUID, reason, version and action echoed, session)
REASONS: list[tuple[Any, str | None, str, Any, Any, Any]] = [
    ("[1, 2]", None, "trigger must be an object", _, _, _),
    ("null", None, "trigger must be an object", _, _, _),
    ('"open"', None, "trigger must be an object", _, _, _),
    ("not json", None, "invalid JSON", _, _, _),
    (b'{"version": 1, "action": "open\xff"}', None, "invalid JSON", _, _, _),
    ({**REQ, "version": 2, "action": "fly"}, None, "unsupported version", 2, "fly", "trig"),
    ({**REQ, "version": True}, None, "unsupported version", True, "open", "trig"),
    ({**REQ, "version": 1.0}, None, "unsupported version", 1.0, "open", "trig"),
    ({**REQ, "version": "1"}, None, "unsupported version", "1", "open", "trig"),
    ({"action": "open", "session": "trig"}, None, "unsupported version", _, "open", "trig"),
    ({"version": 1, "session": "trig"}, None, "unsupported action", 1, _, "trig"),
    ({**REQ, "action": "fly", "session": "bad id!"}, None, "unsupported action", 1, "fly", _),
    ({**REQ, "action": ["open"]}, None, "unsupported action", 1, ["open"], "trig"),
    (
        {**REQ, "session": "bad id!"},
        "NOT-A-UUID",
        "trigger filename must be a lowercase UUID",
        1,
        "open",
        _,
    ),
    (
        {**REQ, "session": "bad id!"},
        str(uuid.uuid4()).upper(),
        "trigger filename must be a lowercase UUID",
        1,
        "open",
        _,
    ),
    ({"version": 1, "action": "open"}, None, "missing required field: session", 1, "open", _),
    (
        {**REQ, "zeta": 1, "extra": 1, "url": "file:///x"},
        None,
        "unsupported field: extra",
        1,
        "open",
        "trig",
    ),
    ({**REQ, "cli": {"options": 1}}, None, "unsupported field: cli", 1, "open", "trig"),
    (
        {"version": 1, "action": "stop", "session": "s", "url": "http://x/"},
        None,
        "unsupported field: url",
        1,
        "stop",
        "s",
    ),
    (
        {"version": 1, "action": "resume", "session": "s", "url": "http://x/"},
        None,
        "unsupported field: url",
        1,
        "resume",
        "s",
    ),
    (
        {**REQ, "session": "bad id!", "url": "file:///x"},
        None,
        "session must be a session id",
        1,
        "open",
        _,
    ),
    ({**REQ, "session": 5}, None, "session must be a session id", 1, "open", _),
    ({**REQ, "profile": None}, None, "profile must be a profile handle", 1, "open", "trig"),
    ({**REQ, "profile": ""}, None, "profile must be a profile handle", 1, "open", "trig"),
    (
        {**REQ, "url": "file:///etc/passwd", "timeout_ms": 0},
        None,
        "url must be an http, https or about:blank URL",
        1,
        "open",
        "trig",
    ),
    ({**REQ, "url": ""}, None, "url must be an http, https or about:blank URL", 1, "open", "trig"),
    ({**REQ, "timeout_ms": 0}, None, "invalid timeout_ms", 1, "open", "trig"),
    ({**REQ, "timeout_ms": True}, None, "invalid timeout_ms", 1, "open", "trig"),
    ({**REQ, "timeout_ms": 30.0}, None, "invalid timeout_ms", 1, "open", "trig"),
    ({**REQ, "timeout_ms": 600_001}, None, "invalid timeout_ms", 1, "open", "trig"),
    (
        json.dumps({**REQ, "pad": "x" * 70_000}),
        None,
        "trigger too large (max 64 KiB)",
        _,
        _,
        _,
    ),
]


def test_every_reason_in_its_order_and_the_envelope(bay: Bay) -> None:
    """Each row fails one check and every later one (the first failure wins); the result
    echoes version and action as sent (``true`` stays ``true``: never coerced), and the
    reason is the exact stable string — what varies is in ``detail``."""
    d = _dir(bay)
    published = [_publish(d, body, name) for body, name, *_rest in REASONS]
    for name, (body, _name, reason, version, action, session) in zip(
        published, REASONS, strict=True
    ):
        answer = _result(d, name)
        answer.pop("detail")
        assert answer == {
            "version": version,
            "action": action,
            "ok": False,
            "outcome": "refused",
            "reason": reason,
            "session": session,
            "uncertain": False,
            "error": None,
        }, body


def test_a_stale_request_keeps_its_age_out_of_the_reason(fresh_bay: Bay) -> None:
    d = _dir(fresh_bay)
    fresh_bay.ok("keeper", "stop")
    old = _publish(d, REQ)
    past = time.time() - 7200
    os.utime(d / f"{old}.json", (past, past))
    fresh_bay.ok("keeper", "start")
    answer = _result(d, old)
    assert (answer["reason"], answer["action"], answer["uncertain"]) == (
        "stale trigger",
        "open",
        False,
    )
    assert answer["detail"].startswith("published 72")


def test_open_resume_and_stop_on_a_real_browser(fresh_bay: Bay, demo: str) -> None:
    d = _dir(fresh_bay)
    opened = _result(d, _publish(d, {**REQ, "url": f"{demo}/form.html"}))
    assert opened == {
        "version": 1,
        "action": "open",
        "ok": True,
        "outcome": "opened",
        "reason": None,
        "session": "trig",
        "uncertain": False,
        "error": None,
        "detail": f"browser running; current tab {demo}/form.html",
    }
    assert fresh_bay.ok("get", "title", session="trig")["value"] == "Sign up"
    stopped = _result(d, _publish(d, {"version": 1, "action": "stop", "session": "trig"}))
    assert (stopped["outcome"], stopped["reason"]) == ("stopped", None)
    assert fresh_bay.ok("status", session="trig")["browser"] is None
    again = _result(d, _publish(d, {"version": 1, "action": "stop", "session": "trig"}))
    assert (again["outcome"], again["reason"]) == (
        "not-found",
        "no running browser for this session",
    )
    resumed = _result(d, _publish(d, {"version": 1, "action": "resume", "session": "trig"}))
    assert resumed["outcome"] == "resumed", resumed
    tabs = fresh_bay.ok("tab", "list", session="trig")["tabs"]
    assert [t["url"] for t in tabs] == [f"{demo}/form.html"]
    nothing = _result(d, _publish(d, {"version": 1, "action": "resume", "session": "nobody"}))
    assert (nothing["outcome"], nothing["reason"]) == ("not-found", "no kept tabs for this session")
    # Each action is audited as the verb it is, on the road it came by, by the trigger.
    audit = [(r["verb"], r["road"], r["actor"], r["ok"]) for r in fresh_bay.ok("audit")["audit"]]
    assert ("open", "trigger", "trigger", True) in audit
    assert ("close", "trigger", "trigger", True) in audit
    assert ("resume", "trigger", "trigger", True) in audit
    assert ("get", "cli", "owner", True) in audit


# -- exactly once ---------------------------------------------------------------------------


def test_a_repeated_uuid_gets_the_first_result_and_is_never_replayed(
    bay: Bay, site: HitSite
) -> None:
    d = _dir(bay)
    name = _publish(d, {**REQ, "session": "trig-again", "url": site.url("first")})
    first = _result(d, name)
    assert first["ok"] is True
    _publish(d, {**REQ, "session": "trig-again", "url": site.url("second")}, name)
    assert _result(d, name) == first
    assert (site.hits["first"], site.hits["second"]) == (1, 0)


def test_a_refused_uuid_is_answered_from_its_record_and_never_run(bay: Bay, site: HitSite) -> None:
    """The old code recorded no refusal: the same UUID, published again and valid, ran and
    overwrote the first terminal result."""
    d = _dir(bay)
    name = _publish(d, {**REQ, "version": 2, "url": site.url("refused")})
    first = _result(d, name)
    assert first["outcome"] == "refused"
    _publish(d, {**REQ, "session": "trig-refused", "url": site.url("refused")}, name)
    again = _result(d, name)
    time.sleep(0.5)
    assert site.hits["refused"] == 0
    assert again == first
    assert first["reason"] == "unsupported version"


def test_an_interrupted_request_found_late_is_interrupted_not_stale(
    fresh_bay: Bay, site: HitSite
) -> None:
    """Recovery comes before the age check. The old code answered a request it had been
    killed in the middle of, found again after its age limit, ``stale`` with
    ``uncertain: false`` — although it had navigated."""
    d = _dir(fresh_bay)
    pid = _kill_on_hit(site, fresh_bay, "late")
    name = _publish(d, {**REQ, "url": site.url("late")})
    _gone(pid)
    past = time.time() - 7200
    os.utime(d / f"{name}.json", (past, past))
    fresh_bay.ok("keeper", "start")
    answer = _result(d, name, timeout=30)
    assert (answer["outcome"], answer["reason"], answer["uncertain"]) == (
        "refused",
        "interrupted by restart",
        True,
    )
    assert (answer["version"], answer["action"], answer["session"]) == (1, "open", "trig")
    assert site.hits["late"] == 1  # never replayed


def test_a_claimed_request_whose_file_vanished_still_gets_its_result(
    fresh_bay: Bay, site: HitSite
) -> None:
    """The old code found interrupted requests only through their files: with the file gone
    after the crash, no result was ever written."""
    d = _dir(fresh_bay)
    pid = _kill_on_hit(site, fresh_bay, "vanished")
    name = _publish(d, {**REQ, "url": site.url("vanished")})
    _gone(pid)
    (d / f"{name}.json").unlink()
    fresh_bay.ok("keeper", "start")
    answer = _result(d, name, timeout=30)
    assert (answer["reason"], answer["uncertain"], answer["session"]) == (
        "interrupted by restart",
        True,
        "trig",
    )
    assert site.hits["vanished"] == 1


def test_a_kill_after_the_claim_before_the_action_is_certain_and_not_replayed(
    fresh_bay: Bay, site: HitSite
) -> None:
    """Killed after its claim and before its action began (the BAY_FAULTS hook): answered
    ``interrupted by restart`` with ``uncertain: false`` — nothing of it ran, and nothing
    runs it after the restart."""
    name = str(uuid.uuid4())
    fresh_bay.env["BAY_FAULTS"] = f"trigger.claimed@{name}=kill"
    d = _dir(fresh_bay)
    pid = fresh_bay.keeper_pid()
    _publish(d, {**REQ, "url": site.url("claimed")}, name)
    _gone(pid)
    del fresh_bay.env["BAY_FAULTS"]
    fresh_bay.ok("keeper", "start")
    answer = _result(d, name, timeout=30)
    assert (answer["reason"], answer["uncertain"]) == ("interrupted by restart", False)
    time.sleep(0.5)
    assert site.hits["claimed"] == 0
    assert fresh_bay.ok("status", session="trig")["browser"] is None


def test_a_file_not_yet_whole_is_read_again(fresh_bay: Bay) -> None:
    """One parse retry: a file written in place is read again after a short delay (widened
    here by the BAY_FAULTS hook so that the test completes the file inside it). The old code
    answered the half-written file ``not an object`` and the request was lost."""
    fresh_bay.env["BAY_FAULTS"] = "trigger.reread@*=sleep:2"
    d = _dir(fresh_bay)
    name = str(uuid.uuid4())
    body = json.dumps({"version": 1, "action": "stop", "session": "trig-whole"})
    path = d / f"{name}.json"
    path.write_text(body[:20])  # in place, not by rename: the keeper sees it half written
    time.sleep(1.0)
    assert not (d / "processed" / f"{name}.result.json").exists()  # it waits to read again
    path.write_text(body)
    answer = _result(d, name, timeout=20)
    assert (answer["outcome"], answer["reason"]) == (
        "not-found",
        "no running browser for this session",
    )


def test_a_result_that_cannot_be_written_is_retried_and_stops_nothing(fresh_bay: Bay) -> None:
    """A result file that cannot be written (here: a directory stands in its place) is
    retried, logged, and written once it can be; the requests after it are answered
    meanwhile. The old code let the write's error end the whole intake until a restart."""
    d = _dir(fresh_bay)
    blocked, after = str(uuid.uuid4()), str(uuid.uuid4())
    blocker = d / "processed" / f"{blocked}.result.json"
    blocker.mkdir()
    (blocker / "x").write_text("x")
    stop = {"version": 1, "action": "stop", "session": "trig-w"}
    _publish(d, stop, blocked)
    time.sleep(0.5)
    _publish(d, stop, after)
    assert _result(d, after, timeout=20)["outcome"] == "not-found"
    log = bay_paths({"BAY_HOME": str(fresh_bay.home)}).keeper_log
    assert f"trigger {blocked}: its result could not be written" in log.read_text()
    assert (d / f"{blocked}.json").exists()  # kept until its result is written
    shutil.rmtree(blocker)
    assert _result(d, blocked, timeout=20)["outcome"] == "not-found"


def test_one_sessions_queue_keeps_its_order_across_a_restart(fresh_bay: Bay, site: HitSite) -> None:
    """B is admitted before C, although C's file is older (written first, published later).
    The keeper is killed while A acts: the next keeper answers A, then runs B, then C — the
    order they were admitted in. The old code kept the queue in memory only and ran C
    before B after the restart (the files' modification times)."""
    d = _dir(fresh_bay)
    hold = threading.Event()
    pid = _kill_on_hit(site, fresh_bay, "A", hold)
    a = _publish(d, {**REQ, "url": site.url("A")})
    end = time.monotonic() + 60
    while not site.hits["A"] and time.monotonic() < end:
        time.sleep(0.05)
    b, c = str(uuid.uuid4()), str(uuid.uuid4())
    (d / f".{c}.tmp").write_text(json.dumps({**REQ, "url": site.url("C")}))
    time.sleep(0.05)
    (d / f".{b}.tmp").write_text(json.dumps({**REQ, "url": site.url("B")}))
    os.replace(d / f".{b}.tmp", d / f"{b}.json")
    time.sleep(1.0)  # B is admitted
    os.replace(d / f".{c}.tmp", d / f"{c}.json")
    time.sleep(1.0)  # C is admitted, behind B
    hold.set()
    _gone(pid)
    fresh_bay.ok("keeper", "start")
    answers = [_result(d, name) for name in (a, b, c)]
    assert site.order == ["A", "B", "C"]
    assert [(x["reason"], x["uncertain"]) for x in answers] == [
        ("interrupted by restart", True),
        (None, False),
        (None, False),
    ]
    assert fresh_bay.ok("get", "title", session="trig")["value"] == "C"


def test_a_timed_out_or_failed_action_says_whether_it_began(bay: Bay, site: HitSite) -> None:
    """The two results of an action that began and did not finish: ``session action timed
    out`` (the page held its answer past ``timeout_ms``) and ``action_failed`` (nothing
    listens: the browser's error is the ``error``), both ``uncertain``."""
    d = _dir(bay)
    site.on_hit["slow"] = lambda: time.sleep(4)
    bay.ok("open", "about:blank", session="trig-slow")  # its browser runs: the page is slow
    slow = _publish(d, {**REQ, "session": "trig-slow", "url": site.url("slow"), "timeout_ms": 1500})
    failed = _publish(d, {**REQ, "session": "trig-fail", "url": "http://127.0.0.1:9/"})
    answer = _result(d, slow)
    assert (answer["outcome"], answer["reason"], answer["uncertain"]) == (
        "refused",
        "session action timed out",
        True,
    )
    assert answer["detail"] == "timeout_ms (1500) ran out"
    assert site.hits["slow"] == 1
    answer = _result(d, failed)
    assert (answer["reason"], answer["uncertain"]) == ("action_failed", True), answer
    assert answer["error"].startswith("Page.goto: net::ERR_")


def test_every_action_goes_through_the_approval_hooks_and_is_audited_as_the_trigger(
    fresh_bay: Bay, demo: str
) -> None:
    """A plugin's ``bay_before_verb`` vetoes each trigger action as the verb it is (``open``,
    ``resume``, ``close`` for ``stop``): refused ``verb_refused``, nothing done, one audit row
    on the road ``trigger`` by the actor ``trigger``."""
    veto = fresh_bay.home / "veto"
    fresh_bay.env["BAY_TEST_REFUSE_FILE"] = str(veto)
    d = _dir(fresh_bay)
    fresh_bay.ok("open", f"{demo}/form.html", session="trig-veto")
    veto.write_text("open\nresume\nclose\n")
    answers = {
        action: _result(
            d,
            _publish(d, {"version": 1, "action": action, "session": "trig-veto"}),
        )
        for action in ("open", "resume", "stop")
    }
    veto.unlink()
    for action, answer in answers.items():
        assert (answer["outcome"], answer["reason"], answer["uncertain"]) == (
            "refused",
            "verb_refused",
            False,
        ), action
        assert "recorder" in answer["detail"]
    assert fresh_bay.ok("get", "title", session="trig-veto")["value"] == "Sign up"  # running
    rows = {
        (r["verb"], r["road"], r["actor"], r["ok"], r["code"])
        for r in fresh_bay.ok("audit")["audit"]
        if r["road"] == "trigger"
    }
    assert rows == {
        (verb, "trigger", "trigger", False, "verb_refused") for verb in ("open", "resume", "close")
    }
