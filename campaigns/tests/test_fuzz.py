"""The bounded fuzz (campaigns/fuzz.py runs the long one): random, malformed, partial and
cut frames against a real keeper, and random argv against the CLI parser and the real `bay`.
The keeper never dies, never blocks another session, and every bad input is a typed refusal
or a usage error."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator

import pytest

from browserbay import client
from browserbay.paths import bay_paths
from browserbay_testing import Bay
from campaigns.fuzz import Keeper, fuzz_frames, fuzz_parse, fuzz_processes


@pytest.fixture(scope="module")
def fuzzed(bay: Bay) -> Iterator[Keeper]:
    bay.ok("status", session="fuzz-start")
    keeper = Keeper(bay_paths({"BAY_HOME": str(bay.home)}))
    keeper.start_canary(every=0.25)
    yield keeper
    keeper.stop_canary()


def test_a_client_hanging_up_before_its_answer_never_ends_the_keeper(fuzzed: Keeper) -> None:
    """The hello (or an error frame) written to a client that already hung up used to raise
    out of the connection handler and end the whole keeper."""
    for n in range(40):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(str(fuzzed.paths.socket))
            s.sendall(b'{"hello": {}}\n' if n % 2 else b"not json\n")
    time.sleep(0.5)
    assert fuzzed.alive()


def test_lone_surrogates_and_huge_numbers_are_bad_frames_not_internal_errors(
    fuzzed: Keeper,
) -> None:
    """ "\\ud800" is valid JSON but no text (SQLite and the answer's encoder choked on it), and
    a number past 2^53 overflowed SQLite: both are refused by name now."""
    answers = fuzzed.exchange(
        [
            b'{"id": 1, "verb": "new", "args": {"label": "\\ud800x"}, "session": {"id": "a"}}',
            b'{"id": 2, "verb": "status", "session": {"id": "a"}, "profile": "\\udfff"}',
            b'{"id": 3, "verb": "audit", "args": {"last": 99999999999999999999999},'
            b' "session": {"id": "a"}}',
            b'{"id": 4, "verb": "use", "args": {"profile": "x", "wait": NaN},'
            b' "session": {"id": "a"}}',
        ],
        [],
        None,
    )
    assert answers is not None
    assert [a["code"] for a in answers[1:]] == ["bad_frame", "bad_frame", "usage", "usage"]


def test_random_frames_get_one_typed_answer_each_and_the_keeper_goes_on(fuzzed: Keeper) -> None:
    result = fuzz_frames(fuzzed, 120)
    assert result["problems"] == []
    assert fuzzed.alive()
    assert fuzzed.canary_failures == []
    assert max(fuzzed.canary_ms) < 5000, "another session waited for the fuzzed one"


def test_random_argv_parses_or_is_a_usage_error() -> None:
    result = fuzz_parse(400)
    assert result["problems"] == []
    assert result["parsed"]
    assert result["usage"]


def test_odd_argv_through_the_real_bay_is_typed(bay: Bay, fuzzed: Keeper) -> None:
    env = dict(bay.env, BAY_SESSION="fuzz-cli", BAY_NO_AUTOSTART="1")
    result = fuzz_processes(env, 6)
    assert result["problems"] == []
    assert fuzzed.alive()
    assert client.call("status", {}, session={"id": "after", "origin": "api"}, paths=fuzzed.paths)[
        "ok"
    ]
    assert os.environ.get("BAY_HOME") != str(bay.home)  # the test never took over the env


def test_help_with_json_is_one_json_object(bay: Bay) -> None:
    """`bay <verb> --help --json` printed the plain help text (several lines), breaking the
    --json promise of exactly one JSON object."""
    for argv in (["--help"], ["get", "-h"], ["eval", "x", "--help"]):
        frame = bay(*argv).frame
        assert frame["ok"] is True
        assert frame["verb"] == "help"
        assert frame["data"]["text"].startswith(("bay ", "usage: bay "))
