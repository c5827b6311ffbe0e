"""The keeper's settings: every keeper-side ``BAY_*`` variable, typed, read once.

The keeper reads its environment once, when it starts (:func:`load_settings`), and hands the
one :class:`BaySettings` to the services that use a setting; nothing in the keeper reads
``os.environ`` for a setting at import time or per call. docs/configuration.md lists every
field here (``tests/test_docs.py`` checks it both ways).

Not here, on purpose:

- what the thin client reads (``BAY_SESSION``, ``BAY_PROFILE``, ``BAY_GROUP``,
  ``BAY_NO_AUTOSTART``, ``BAY_HOME`` and the socket path): the client imports only the
  standard library, and reads them with its own code (``browserbay.client``,
  ``browserbay.paths``);
- what the plugin manager reads (``BAY_LOAD_PLUGINS``, ``BAY_DISABLE_PLUGINS``,
  ``BAY_PLUGIN_MODULES``): ``bay doctor`` loads the plugins without a keeper;
- what a plugin reads (``BAY_TRACE``, ``BAY_WINDOW_XVFB``, ``BAY_CHROMIUM_PATH``, …): a
  plugin's own settings are the plugin's;
- key variables (``BAY_INTEGRATION_<ID>_<FIELD>``, ``BAY_INTEGRATIONS``,
  ``BAY_KEYS_PASSPHRASE``): moved out of the environment at the keeper's start
  (:mod:`browserbay.keys`), never held in a settings object; ``BAY_KEYS_STORE`` is read by
  the key book when ``bay keys set`` writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

PREFIX = "BAY_"


class SettingsError(ValueError):
    """A keeper variable that does not parse: the keeper does not start (the message names the
    variable and what it needs)."""


class BaySettings(BaseSettings):
    """The keeper's settings. ``BaySettings()`` reads ``BAY_<FIELD>`` from the environment;
    tests build one with the values they need (``BaySettings(idle_timeout=2)``)."""

    model_config = SettingsConfigDict(env_prefix=PREFIX, extra="ignore", frozen=True)

    default_provider: str = Field(
        default="chromium", description="The provider id of every session's ephemeral profile."
    )
    default_profile: str = Field(
        default="",
        description="The instance default profile (a label or id) a session with no other "
        "choice acts on; empty: none.",
    )
    idle_timeout: float = Field(
        default=900.0,
        description="Seconds without a verb after which a session loses its leases (its tabs "
        "are kept); also how long an exclusive holder may stay silent.",
    )
    handback_idle: float = Field(
        default=300.0,
        description="Seconds without input after which a human's takeover hands the controls "
        "back by itself.",
    )
    browser_grace: float = Field(
        default=30.0, description="Seconds a browser with no user left runs before it is stopped."
    )
    keeper_idle: float = Field(
        default=3600.0,
        description="Seconds without a request after which a keeper holding nothing exits.",
    )
    tick: float = Field(default=15.0, description="Seconds between housekeeping runs.")
    outputs_max_age: float = Field(
        default=86400.0, description="Seconds a spill file of run/outputs is kept (above 0)."
    )
    outputs_max_mb: float = Field(
        default=256.0, description="MiB the spill files of run/outputs stay under (above 0)."
    )
    download_max_mb: float = Field(
        default=100.0,
        description="MiB one session's downloads may weigh together (0 refuses every download).",
    )
    contexts_per_browser: int = Field(
        default=16, description="Isolated session contexts one shared browser process holds."
    )
    frame_timeout: float = Field(
        default=10.0,
        description="Seconds a request frame may take from its first byte to its newline.",
    )
    trigger_poll: float = Field(
        default=0.2, description="Seconds between scans of the trigger intake directory."
    )
    trigger_max_age: float = Field(
        default=3600.0,
        description="Seconds after publication a trigger request is refused as stale.",
    )
    max_browsers: int = Field(
        default=8, description="The most browser processes the keeper runs at once (0: no ceiling)."
    )
    log_level: str = Field(default="INFO", description="Level of the keeper log.")

    @field_validator("outputs_max_age", "outputs_max_mb", mode="before")
    @classmethod
    def _positive_or_default(cls, value: Any, info: Any) -> Any:
        """A spill limit that does not parse or is not above 0 is its default (logged by
        nobody: the spill files are only ever pruned more gently)."""
        return _number_or_default(value, cls.model_fields[info.field_name].default, minimum=None)

    @field_validator("download_max_mb", mode="before")
    @classmethod
    def _non_negative_or_default(cls, value: Any, info: Any) -> Any:
        """A downloads limit that does not parse or is negative is its default (0 is a value:
        no downloads)."""
        return _number_or_default(value, cls.model_fields[info.field_name].default, minimum=0.0)

    @property
    def outputs_max_bytes(self) -> int:
        return int(self.outputs_max_mb * (1 << 20))

    @property
    def download_max_bytes(self) -> int:
        return int(self.download_max_mb * (1 << 20))

    @classmethod
    def variables(cls) -> dict[str, str]:
        """``BAY_<FIELD>`` -> the field's description: what docs/configuration.md lists."""
        return {
            f"{PREFIX}{name.upper()}": field.description or ""
            for name, field in cls.model_fields.items()
        }


def _number_or_default(value: Any, default: float, minimum: float | None) -> Any:
    if value in (None, ""):
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    if minimum is None:
        return number if number > 0 else default
    return number if number >= minimum else default


def load_settings(environ: Mapping[str, str] | None = None) -> BaySettings:
    """The keeper's settings from ``environ`` (default: this process's environment), or
    :class:`SettingsError` naming each variable that does not parse."""
    try:
        if environ is None:
            return BaySettings()
        values = {
            name: environ[f"{PREFIX}{name.upper()}"]
            for name in BaySettings.model_fields
            if f"{PREFIX}{name.upper()}" in environ
        }
        return BaySettings.model_validate(values)
    except ValidationError as exc:
        problems = "; ".join(
            f"{PREFIX}{str(error['loc'][0]).upper()}={error.get('input')!r}: {error['msg']}"
            for error in exc.errors()
        )
        raise SettingsError(f"settings do not parse: {problems}") from None
