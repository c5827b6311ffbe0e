"""The trigger campaign's short run (campaigns/triggers.py; the full run is
``campaigns/run.sh triggers``): one round, killed mid-action and mid result write, under
concurrent requests for one session."""

from __future__ import annotations

import os

import pytest

from campaigns.triggers import campaign


def test_a_kill_mid_action_and_mid_result_write_answers_every_request_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for key, value in os.environ.items():  # the campaign's home rewrites BAY_*: put it back
        monkeypatch.setenv(key, value)
    f = campaign(1, ("mid-action", "writing"))
    assert f.requests == 12
    assert f.exactly_once == 12
    assert (f.missing, f.rewritten, f.twice, f.ok_without_action) == ([], [], [], [])
    assert f.certain_but_acted == []
    assert f.wrong_victim == []
    assert f.problems == []
