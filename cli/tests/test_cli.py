"""The thin client: argv parsing from the verb table, and a hot path that imports only
cheap standard-library modules."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browserbay import protocol
from browserbay.refusals import Refusal
from browserbay.verbs import VERBS
from browserbay_cli.parse import UsageError, help_text, parse, usage_line
from browserbay_testing.bay import Bay
from browserbay_testing.planted import fake_answer
from browserbay_testing.unixserver import unix_server


def test_parse_positional_flags_values_and_rest() -> None:
    verb, args, opts = parse(["snapshot", "-i", "--depth", "3", "--json", "--timeout=5"])
    assert (verb.name, args, opts) == (
        "snapshot",
        {"interactive": True, "depth": 3},
        {"json": True, "timeout": 5.0},
    )
    verb, args, _ = parse(["select", "@e3", "a", "b"])
    assert args == {"target": "@e3", "values": ["a", "b"]}
    verb, args, _ = parse(["fill", "@e1", "--", "--not-a-flag"])
    assert args == {"target": "@e1", "text": "--not-a-flag"}
    verb, args, _ = parse(["scroll", "down", "-300"])
    assert args == {"direction": "down", "pixels": -300}
    verb, args, _ = parse(["tab"])
    assert (verb.name, args) == ("tab", {})
    verb, args, opts = parse(["--session", "x", "get", "title"])
    assert opts == {"session": "x"}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "no verb given"),
        (["clik", "@e1"], "did you mean 'click'"),
        (["click"], "needs <target>"),
        (["click", "@e1", "extra"], "takes no more words"),
        (["snapshot", "--dept", "2"], "did you mean '--depth'"),
        (["snapshot", "--depth"], "needs a value"),
        (["snapshot", "--depth", "x"], "whole number"),
        (["get", "tittle"], "did you mean 'title'"),
        (["snapshot", "-i=yes"], "takes no value"),
        (["open", "u", "--timeout", "soon"], "must be a number"),
    ],
)
def test_usage_errors_say_what_to_do(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse(argv)


def test_help_lists_every_verb_and_each_has_a_usage_line() -> None:
    text = help_text(None)
    for verb in VERBS:
        assert f"  {verb.name} " in text
        assert usage_line(verb).startswith(f"bay {verb.name}")
        assert verb.summary in help_text(verb.name)


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    bay = str(__import__("pathlib").Path(sys.executable).with_name("bay"))
    return subprocess.run([bay, *args], capture_output=True, text=True, env=env, timeout=30)


def test_help_and_usage_need_no_keeper(tmp_path: __import__("pathlib").Path) -> None:
    env = {"BAY_HOME": str(tmp_path), "BAY_NO_AUTOSTART": "1", "PATH": "/usr/bin:/bin"}
    r = _run("help", env=env)
    assert r.returncode == 0
    assert "bay help <verb>" in r.stdout  # the agent manual (tests/test_onboarding.py)
    r = _run("click", "--help", env=env)
    assert r.returncode == 0
    assert r.stdout.startswith("bay click <target>")
    r = _run("wat", "--json", env=env)
    assert r.returncode == 2
    assert json.loads(r.stdout)["code"] == "usage"
    assert not (tmp_path / "run" / "keeper.sock").exists()


#: What a warm verb's whole ``bay`` process imports beyond a bare interpreter's start
#: (``python -c pass``, site included) on the warm road (browserbay_cli.hot: the keeper
#: parses the argv and answers the text): no verb table, parser, refusals or renderer; no
#: ``json`` (nor the ``re`` and ``enum`` it loads), no ``socket`` (nor ``selectors``), no
#: ``typing`` or ``dataclasses``. Each module costs ~0.1-0.5 ms of a command's ~12.
WARM_ROAD = {
    "__future__",
    "_json",
    "_socket",
    "browserbay",
    "browserbay._version",
    "browserbay.protocol",
    "browserbay.sockpath",
    "browserbay_cli",
    "browserbay_cli.hot",
}
#: What the whole client (a keeper that answers ``whole``, or none on the warm road) may
#: import besides: still the standard library's cheap modules only.
HOT_PATH = WARM_ROAD | {
    "browserbay.argv",
    "browserbay.client",
    "browserbay.identity",
    "browserbay.refusals",
    "browserbay.render",
    "browserbay.verbs",
    "browserbay_cli.main",
}


def _imported(argv: list[str], env: dict[str, str], stdin: str = "") -> tuple[int, set[str]]:
    """The exit code of ``argv`` and every module its process imported (``-X importtime``,
    given by the environment so that it reaches the launcher's interpreter too)."""
    r = subprocess.run(
        argv,
        input=stdin,
        capture_output=True,
        text=True,
        env={**env, "PYTHONPROFILEIMPORTTIME": "1"},
        timeout=30,
    )
    names = {
        line.rsplit("|", 1)[1].strip()
        for line in r.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return r.returncode, names - {"package"}  # the header line's column title


@contextlib.contextmanager
def fake_keeper(
    home: Path, *, together: bool = False, **hello: Any
) -> Iterator[list[dict[str, Any]]]:
    """A keeper at ``home``'s socket that answers a hello (updated with ``hello``), ``ok`` to
    every verb, ``target_not_found`` to ``click`` and ``stopping`` to the shutdown op: the
    client's whole run, with no browser behind it. ``together``: it answers nothing until
    it holds a connection's first two frames (a client that waits for the hello before it
    sends its request waits in vain). Yields the frames it received."""
    run = home / "run"
    run.mkdir(mode=0o700, parents=True)
    got: list[dict[str, Any]] = []

    def answer(frame: dict[str, Any]) -> dict[str, Any]:
        if frame.get("op") == "shutdown":
            return {"id": frame.get("id"), "ok": True, "data": {"stopping": True}}
        if frame.get("verb") == "click":
            return dict(Refusal("target_not_found", target="@e9").frame(), id=frame["id"])
        return fake_answer(frame, text="the title", **hello)

    def serve(conn: socket.socket) -> None:
        # A client that hung up before its answers (the warm road, on a keeper of another
        # version) ends only its own connection, as with a real keeper: a write to it
        # fails EPIPE, and a read ECONNRESET when it closed with our answer unread (the
        # native bay execs bay-py at once; the reset killed the serving thread, and bay-py's
        # connection then waited in the backlog for a hello that never came).
        with conn, conn.makefile("rb") as lines, contextlib.suppress(ConnectionError):
            held: list[dict[str, Any]] = []
            for n, line in enumerate(lines):
                held.append(json.loads(line))
                got.append(held[-1])
                if together and n == 0:
                    continue
                for f in held:
                    conn.sendall(protocol.encode(answer(f)))
                held = []
                if got[-1].get("op") == "shutdown":  # gone, as a keeper that stops
                    listener.close()
                    (run / "keeper.sock").unlink()
                    return

    with unix_server(run / "keeper.sock", serve, backlog=8, in_turn=True) as listener:
        yield got


def test_a_warm_verbs_whole_process_imports_only_the_hot_path(tmp_path: Path) -> None:
    env = {"BAY_HOME": str(tmp_path), "BAY_SESSION": "hot", "PATH": "/usr/bin:/bin"}
    bay = str(Path(sys.executable).with_name("bay-py"))  # the Python client, not the native bay
    _, bare = _imported([sys.executable, "-c", "pass"], env)
    with fake_keeper(tmp_path) as got:
        for argv, stdin, code in [
            (["get", "title"], "", 0),
            (["get", "title", "--json"], "", 0),
            (["fill", "@e1", "-"], "typed", 0),  # stdin
            (["click", "@e9"], "", 1),  # a refusal
            (["click", "@e9", "--json"], "", 1),
        ]:
            exit, loaded = _imported([bay, *argv], env, stdin)
            assert exit == code, argv
            assert loaded - bare <= HOT_PATH, (argv, sorted(loaded - bare - HOT_PATH))
    assert [f.get("verb") for f in got if "verb" in f] == ["get", "get", "fill", "click", "click"]
    fill = next(f for f in got if f.get("verb") == "fill")
    assert fill["args"] == {"target": "@e1", "text": "typed"}


def test_a_warm_verb_on_a_real_keeper_imports_only_the_warm_road(bay: Bay) -> None:
    env = {**bay.env, "BAY_SESSION": "warm-road", "PATH": "/usr/bin:/bin"}
    client = str(Path(sys.executable).with_name("bay-py"))  # the Python client's imports
    _, bare = _imported([sys.executable, "-c", "pass"], env)
    bay.ok("open", "about:blank", session="warm-road")
    for argv, code in [
        (["get", "title"], 0),
        (["get", "url", "--json"], 0),
        (["click", "@e9"], 1),  # a refusal
        (["click", "@e9", "--json"], 1),
        (["tab", "list"], 0),
    ]:
        exit, loaded = _imported([client, *argv], env)
        assert exit == code, argv
        assert loaded - bare <= WARM_ROAD, (argv, sorted(loaded - bare - WARM_ROAD))
    # What needs the client's own side is the whole client's, run as before.
    for argv, code in [(["fill", "@e1", "-"], 1), (["get", "titel"], 2)]:
        exit, loaded = _imported([client, *argv], env, "typed")
        assert exit == code, argv
        assert "browserbay_cli.main" in loaded, argv


def test_the_hot_path_modules_are_standard_library_only() -> None:
    ours = {m for m in HOT_PATH if m.split(".")[0] in ("browserbay", "browserbay_cli")}
    assert {m.split(".")[0] for m in HOT_PATH - ours} <= set(sys.stdlib_module_names)


def test_every_local_verb_of_the_table_has_one_handler_in_the_client() -> None:
    from browserbay.verbs import LOCAL
    from browserbay_cli import extras, main

    assert set(main.OFF_HOT_PATH) == set(extras.HANDLERS)
    assert {v.name for v in VERBS if v.scope == LOCAL} == {*extras.HANDLERS, "help"}


def test_a_warm_verb_writes_its_hello_and_its_request_together(tmp_path: Path) -> None:
    """One round trip to the keeper, not two (on the old code the client waited for the
    hello's answer, which this keeper gives only once it holds the request too: 10 s, then
    keeper_unavailable)."""
    env = {"BAY_HOME": str(tmp_path), "BAY_SESSION": "one-trip", "PATH": "/usr/bin:/bin"}
    with fake_keeper(tmp_path, together=True) as got:
        r = _run("get", "title", env=env)
    assert (r.returncode, r.stdout) == (0, "the title\n"), r.stderr
    # The warm road's try (this keeper answers it `whole`), then the whole client's: each
    # connection's hello and request in one write.
    assert ["hello" in f for f in got] == [True, False, True, False]
    assert "argv" in got[1]
    assert got[3]["session"] == {"id": "one-trip", "origin": "env"}


def test_a_keeper_of_another_version_is_retired_before_the_verb_is_sent_again(
    tmp_path: Path,
) -> None:
    """Its answer to the request written with the hello is dropped (a keeper of this code
    refuses it unrun: tests/test_pipelined.py); it is asked to shut down (reason version),
    and the verb goes to a keeper of this version — here none may start."""
    env = {"BAY_HOME": str(tmp_path), "BAY_NO_AUTOSTART": "1", "PATH": "/usr/bin:/bin"}
    with fake_keeper(tmp_path, version="0.0.1-other") as got:
        r = _run("get", "title", "--json", env=env)
    assert r.returncode == 1
    assert json.loads(r.stdout)["code"] == "keeper_unavailable"
    assert "the title" not in r.stdout
    shutdowns = [f for f in got if f.get("op") == "shutdown"]
    assert shutdowns == [{"id": "retire", "op": "shutdown", "reason": "version"}]


def test_a_command_handed_over_after_the_keeper_had_it_is_not_sent_again(tmp_path: Path) -> None:
    """BAY_HANDED (browserbay_cli.hot): a native client that hands over the keeper's frame
    (an inherited file, named in the environment) or a deadline: the Python client prints
    it and never contacts the keeper; ``whole`` skips the warm road's try."""
    import os
    import tempfile

    env = {"BAY_HOME": str(tmp_path), "BAY_SESSION": "handed", "PATH": "/usr/bin:/bin"}
    bay = str(Path(sys.executable).with_name("bay-py"))  # the Python client the native one hands to
    frame = {"id": "1", "printed": {"out": "héllo\n", "err": "", "code": 3}}
    with fake_keeper(tmp_path) as got, tempfile.TemporaryFile() as f:
        f.write(protocol.encode(frame))
        f.flush()
        fd = f.fileno()
        r = subprocess.run(
            [bay, "get", "title"],
            capture_output=True,
            env={**env, "BAY_HANDED": f"said:{fd}"},
            pass_fds=(fd,),
            timeout=30,
        )
        assert (r.returncode, r.stdout) == (3, "héllo\n".encode()), r.stderr
        r = subprocess.run(
            [bay, "get", "title", "--timeout", "2", "--json"],
            capture_output=True,
            text=True,
            env={**env, "BAY_HANDED": "deadline"},
            timeout=30,
        )
        assert json.loads(r.stdout)["code"] == "deadline", r.stderr
        assert got == []  # neither was sent again
        r = subprocess.run(
            [bay, "get", "title"],
            capture_output=True,
            text=True,
            env={**env, "BAY_HANDED": "whole"},
            timeout=30,
        )
        assert (r.returncode, r.stdout) == (0, "the title\n"), r.stderr
        assert [f.get("verb") for f in got if "verb" in f] == ["get"]
        assert not any("argv" in f for f in got)  # no warm road's try first
    assert "BAY_HANDED" not in os.environ


@pytest.mark.parametrize("value", ["1e400", "inf", "nan", "-1", "3601", "0", "0.0"])
def test_a_timeout_out_of_range_is_refused_usage_on_the_warm_road_too(
    tmp_path: Path, value: str
) -> None:
    """With a keeper listening, ``--timeout 1e400`` (infinite) went down the warm road and
    the socket's timeout overflowed: a traceback (the fuzz campaign found it). Out of the
    parser's range, the warm road leaves it to the whole client, which refuses ``usage``."""
    env = {"BAY_HOME": str(tmp_path), "BAY_SESSION": "hot", "PATH": "/usr/bin:/bin"}
    bay = str(Path(sys.executable).with_name("bay"))
    with fake_keeper(tmp_path) as got:
        p = subprocess.run(
            [bay, "status", "--timeout", value], env=env, capture_output=True, text=True, timeout=30
        )
    assert p.returncode == 2, p
    assert "Traceback" not in p.stderr
    assert "refused [usage]: --timeout must be in (0, 3600]" in p.stdout + p.stderr
    assert [f for f in got if "verb" in f] == []
