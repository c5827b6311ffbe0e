"""The keeper's settings (browserbay.settings): read once, typed, with the old parsing rules."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from browserbay.settings import SettingsError, flags_from_argv, load_settings


def test_the_defaults_need_no_environment() -> None:
    settings = load_settings({}).settings
    assert (settings.idle_timeout, settings.tick, settings.max_browsers) == (900.0, 15.0, 8)
    assert settings.default_provider == "chromium"
    assert settings.download_max_bytes == 100 << 20


def test_values_come_from_bay_variables() -> None:
    settings = load_settings(
        {"BAY_IDLE_TIMEOUT": "2", "BAY_MAX_BROWSERS": "0", "OTHER": "x"}
    ).settings
    assert settings.idle_timeout == 2.0
    assert settings.max_browsers == 0


def test_a_number_that_does_not_parse_names_its_variable() -> None:
    with pytest.raises(SettingsError, match="BAY_TICK='soon'"):
        load_settings({"BAY_TICK": "soon"})


def test_spill_and_download_limits_fall_back_to_their_defaults() -> None:
    """As before the settings object: a spill limit not above 0, or a downloads limit below
    0, that does not parse is its default; a downloads limit of 0 refuses every download."""
    settings = load_settings(
        {"BAY_OUTPUTS_MAX_MB": "0", "BAY_OUTPUTS_MAX_AGE": "x", "BAY_DOWNLOAD_MAX_MB": "-1"}
    ).settings
    assert settings.outputs_max_bytes == 256 << 20
    assert settings.outputs_max_age == 86400.0
    assert settings.download_max_bytes == 100 << 20
    assert load_settings({"BAY_DOWNLOAD_MAX_MB": "0"}).settings.download_max_bytes == 0


def test_the_environment_is_read_by_the_model_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BAY_BROWSER_GRACE", "0.5")
    assert load_settings().settings.browser_grace == 0.5


# -- the owner's config file and the layers (issue 17, item 5) ----------------------------


def _config(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    path.chmod(mode)
    tmp_path.chmod(0o700)
    return path


def test_flags_beat_the_environment_which_beats_the_file_which_beats_the_defaults(
    tmp_path: Path,
) -> None:
    path = _config(tmp_path, "tick = 1\nidle_timeout = 2\nmax_browsers = 3\n")
    configured = load_settings(
        {"BAY_IDLE_TIMEOUT": "20", "BAY_MAX_BROWSERS": "30"},
        file=path,
        flags=[("max_browsers", "300")],
    )
    s = configured.settings
    assert (s.tick, s.idle_timeout, s.max_browsers, s.keeper_idle) == (1.0, 20.0, 300, 3600.0)
    assert configured.sources == {"tick": "file", "idle_timeout": "env", "max_browsers": "flag"}
    assert configured.file_found
    assert [(g.name, g.source) for g in configured.given()] == [
        ("idle_timeout", "env"),
        ("tick", "file"),
        ("max_browsers", "flag"),
    ]


def test_the_file_goes_through_the_environments_parser(tmp_path: Path) -> None:
    """TOML numbers and strings are read as the text the environment would give: an int
    field given 2.5 is refused as BAY_MAX_BROWSERS=2.5 is; a lenient limit falls back."""
    with pytest.raises(SettingsError, match=r"max_browsers='2.5': needs a whole number"):
        load_settings({}, file=_config(tmp_path, "max_browsers = 2.5\n"))
    with pytest.raises(SettingsError, match=r"log_level='5': needs text \(a TOML string\)"):
        load_settings({}, file=_config(tmp_path, "log_level = 5\n"))
    ok = load_settings({}, file=_config(tmp_path, 'tick = "7"\noutputs_max_mb = 0\n')).settings
    assert (ok.tick, ok.outputs_max_mb) == (7.0, 256.0)


def test_an_unknown_key_in_the_file_or_a_flag_is_named(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"'max_browser' is no keeper setting \(did you"):
        load_settings({}, file=_config(tmp_path, "max_browser = 2\n"))
    with pytest.raises(SettingsError, match=r"--set 'tik' is no keeper setting"):
        load_settings({}, flags=[("tik", "1")])
    with pytest.raises(SettingsError, match="is not TOML"):
        load_settings({}, file=_config(tmp_path, "tick = \n"))


def test_no_file_is_the_defaults(tmp_path: Path) -> None:
    configured = load_settings({}, file=tmp_path / "nothing.toml")
    assert not configured.file_found
    assert configured.given() == []


@pytest.mark.parametrize("mode", [0o620, 0o602])
def test_a_config_file_others_can_write_is_refused(tmp_path: Path, mode: int) -> None:
    with pytest.raises(SettingsError, match=r"writable by group or others .*chmod go-w"):
        load_settings({}, file=_config(tmp_path, "tick = 1\n", mode))


def test_a_config_file_in_a_directory_others_can_write_is_refused(tmp_path: Path) -> None:
    path = _config(tmp_path, "tick = 1\n")
    tmp_path.chmod(0o777)
    with pytest.raises(SettingsError, match=rf"config directory {tmp_path} is writable"):
        load_settings({}, file=path)


@pytest.mark.skipif(os.getuid() != 0, reason="chown to another user needs root")
def test_a_config_file_of_another_user_is_refused(tmp_path: Path) -> None:
    path = _config(tmp_path, "tick = 1\n")
    os.chown(path, 65534, 65534)  # we are root in the test machine
    with pytest.raises(SettingsError, match=r"owned by uid 65534, not by the keeper's user"):
        load_settings({}, file=path)


def test_the_keepers_argv_is_set_pairs() -> None:
    assert flags_from_argv(["--set", "tick=1", "--set", "default_profile=a=b"]) == [
        ("tick", "1"),
        ("default_profile", "a=b"),
    ]
    with pytest.raises(SettingsError, match="--set NAME=VALUE"):
        flags_from_argv(["tick=1"])


def test_a_set_pair_may_name_the_settings_variable() -> None:
    """``--set BAY_MAX_BROWSERS=1``, as the owner knows the setting from the environment, is
    ``max_browsers`` (it used to stop the keeper at start: 'no keeper setting')."""
    assert flags_from_argv(["--set", "BAY_MAX_BROWSERS=1"]) == [("max_browsers", "1")]
    configured = load_settings({}, flags=flags_from_argv(["--set", "BAY_MAX_BROWSERS=1"]))
    assert configured.settings.max_browsers == 1
    assert flags_from_argv(["--set", "BAY_NOPE=1"]) == [("BAY_NOPE", "1")]  # refused later
