"""The keeper's settings (browserbay.settings): read once, typed, with the old parsing rules."""

from __future__ import annotations

import pytest

from browserbay.settings import SettingsError, load_settings


def test_the_defaults_need_no_environment() -> None:
    settings = load_settings({})
    assert (settings.idle_timeout, settings.tick, settings.max_browsers) == (900.0, 15.0, 8)
    assert settings.default_provider == "chromium"
    assert settings.download_max_bytes == 100 << 20


def test_values_come_from_bay_variables() -> None:
    settings = load_settings({"BAY_IDLE_TIMEOUT": "2", "BAY_MAX_BROWSERS": "0", "OTHER": "x"})
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
    )
    assert settings.outputs_max_bytes == 256 << 20
    assert settings.outputs_max_age == 86400.0
    assert settings.download_max_bytes == 100 << 20
    assert load_settings({"BAY_DOWNLOAD_MAX_MB": "0"}).download_max_bytes == 0


def test_the_environment_is_read_by_the_model_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BAY_BROWSER_GRACE", "0.5")
    assert load_settings().browser_grace == 0.5
