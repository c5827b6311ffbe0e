"""Policy comes from the owner (issue 17, item 5): the keeper's settings from the owner's
config file, the owner's ``BAY_*`` at start and ``bay keeper start --set``, in that order of
strength; a config file another user could write is refused. Real keepers, real files."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from browserbay_testing import Bay, wait_for_no_keeper


def _config(bay: Bay, text: str, mode: int = 0o600) -> Path:
    """The home's config file (``<BAY_HOME>/config/config.toml``), written as the owner."""
    directory = bay.home / "config"
    directory.mkdir(mode=0o700, exist_ok=True)
    path = directory / "config.toml"
    path.write_text(text)
    path.chmod(mode)
    return path


def _sources(bay: Bay) -> dict[str, tuple[Any, str]]:
    data = bay.ok("keeper", "status", session=None)
    return {s["name"]: (s["value"], s["source"]) for s in data["settings"]}


def _keeper_alive(bay: Bay) -> bool:
    """``keeper status`` starts no keeper: with none running it answers ``pid: null``."""
    r = bay("keeper", "status", session=None)
    return r.code == 0 and r.frame["data"]["pid"] is not None


def test_a_setting_in_the_owners_config_file_takes_effect(fresh_bay: Bay) -> None:
    """The old keeper read no file: its idle exit stayed at an hour."""
    path = _config(fresh_bay, "tick = 0.2\nkeeper_idle = 1\nidle_timeout = 77\n")
    status = fresh_bay.ok("keeper", "start", session=None)
    assert status["config"] == str(path)
    assert status["config_found"] is True
    sources = _sources(fresh_bay)
    assert sources["idle_timeout"] == (77.0, "file")
    assert sources["max_browsers"] == (8, "default")
    assert fresh_bay.ok("status", session="p1")["idle_timeout_s"] == 77.0
    # keeper_idle = 1 from the file: the keeper holding nothing exits by itself.
    wait_for_no_keeper(fresh_bay.home, timeout=30)
    assert not _keeper_alive(fresh_bay)


def test_the_owners_environment_at_start_beats_the_file_and_a_flag_beats_both(
    fresh_bay: Bay,
) -> None:
    _config(fresh_bay, "tick = 0.2\nkeeper_idle = 1\nidle_timeout = 77\nmax_browsers = 3\n")
    started = fresh_bay(
        "keeper",
        "start",
        "--set",
        "max_browsers=5",
        "--set",
        "browser_grace=7",
        session=None,
        env={"BAY_KEEPER_IDLE": "3600", "BAY_IDLE_TIMEOUT": "55", "BAY_MAX_BROWSERS": "4"},
    )
    assert started.code == 0, started
    sources = _sources(fresh_bay)
    assert sources["keeper_idle"] == (3600.0, "env")
    assert sources["idle_timeout"] == (55.0, "env")
    assert sources["max_browsers"] == (5, "flag")
    assert sources["browser_grace"] == (7.0, "flag")
    assert sources["tick"] == (0.2, "file")
    text = fresh_bay("keeper", "status", session=None, json_=False).stdout
    assert "max_browsers = 5   (flag)" in text
    assert "tick = 0.2   (file)" in text
    # The same start again is answered by the keeper started with it; another --set is not.
    same = ("--set", "browser_grace=7", "--set", "max_browsers=5")
    assert fresh_bay("keeper", "start", *same, session=None).code == 0
    again = fresh_bay("keeper", "start", "--set", "max_browsers=6", session=None)
    assert again.frame["code"] == "usage"
    assert _sources(fresh_bay)["max_browsers"] == (5, "flag")
    # The file's keeper_idle = 1 lost to the environment's hour: the keeper stays.
    time.sleep(2.5)
    assert _keeper_alive(fresh_bay)


def test_set_on_a_running_keeper_is_refused_and_changes_nothing(fresh_bay: Bay) -> None:
    pid = fresh_bay.keeper_pid()
    r = fresh_bay("keeper", "start", "--set", "max_browsers=1", session=None)
    assert r.code != 0
    assert r.frame["code"] == "usage"
    assert "bay keeper stop" in r.frame["message"]
    assert fresh_bay.keeper_pid() == pid
    assert _sources(fresh_bay)["max_browsers"] == (8, "default")


def test_an_unknown_key_in_the_config_file_refuses_the_start_naming_it(fresh_bay: Bay) -> None:
    _config(fresh_bay, "max_browser = 2\n")
    r = fresh_bay("keeper", "start", session=None)
    assert r.code != 0
    assert r.frame["code"] == "keeper_unavailable"
    assert "'max_browser' is no keeper setting (did you mean max_browsers?)" in r.frame["message"]
    assert not _keeper_alive(fresh_bay)


def test_a_bad_value_in_the_config_file_or_a_flag_refuses_the_start_naming_it(
    fresh_bay: Bay,
) -> None:
    _config(fresh_bay, 'max_browsers = "many"\n')
    r = fresh_bay("keeper", "start", session=None)
    assert r.frame["code"] == "keeper_unavailable"
    assert "max_browsers='many': needs a whole number" in r.frame["message"]
    _config(fresh_bay, "")
    r = fresh_bay("keeper", "start", "--set", "tik=1", session=None)
    assert r.frame["code"] == "keeper_unavailable"
    assert "--set 'tik' is no keeper setting" in r.frame["message"]
    assert not _keeper_alive(fresh_bay)


def test_a_group_writable_config_file_cannot_set_the_keepers_policy(fresh_bay: Bay) -> None:
    """Another user in the file's group could have written it: the keeper does not start
    on it (the old keeper read no file, so nobody's policy could come from one — and no
    file of the owner's either)."""
    path = _config(fresh_bay, "max_browsers = 0\n", mode=0o664)
    r = fresh_bay("keeper", "start", session=None)
    assert r.frame["code"] == "keeper_unavailable"
    assert f"the config file {path} is writable by group or others" in r.frame["message"]
    # The fix is named; the path after it may be clipped when the client also saw a broken
    # pipe (the message then carries that and the log's tail first).
    assert "chmod go-w " in r.frame["message"]
    assert not _keeper_alive(fresh_bay)
    path.chmod(0o600)  # the way out
    assert fresh_bay("keeper", "start", session=None).code == 0
    assert _sources(fresh_bay)["max_browsers"] == (0, "file")


def test_a_config_file_of_another_user_cannot_set_the_keepers_policy(fresh_bay: Bay) -> None:
    path = _config(fresh_bay, "max_browsers = 0\n")
    os.chown(path, 65534, 65534)  # nobody's (the tests run as root)
    r = fresh_bay("keeper", "start", session=None)
    assert r.frame["code"] == "keeper_unavailable"
    assert "is owned by uid 65534, not by the keeper's user" in r.frame["message"]
    assert not _keeper_alive(fresh_bay)


def test_an_agent_on_a_session_socket_cannot_set_the_keepers_policy(fresh_bay: Bay) -> None:
    """``bay keeper start`` with the agent's ``BAY_*`` or ``--set`` over its session socket is
    refused ``owner_only`` (by the keeper's gate; the CLI answered ``--set`` itself before,
    with a ``usage`` that said nothing of who may) and the keeper keeps the owner's policy."""
    _config(fresh_bay, "max_browsers = 4\n")
    pid = fresh_bay.keeper_pid()
    directory = fresh_bay.home / "agent"
    directory.mkdir(mode=0o700)
    path = directory / "bay.sock"
    fresh_bay.ok("session", "grant", "pol-agent", "--socket", str(path), session=None)
    agent = {"BAY_SOCKET": str(path), "BAY_MAX_BROWSERS": "1"}
    for argv in (("keeper", "start"), ("keeper", "start", "--set", "max_browsers=1")):
        r = fresh_bay(*argv, session=None, env=agent)
        assert r.frame["code"] == "owner_only", (argv, r)
    assert fresh_bay.keeper_pid() == pid
    assert _sources(fresh_bay)["max_browsers"] == (4, "file")
