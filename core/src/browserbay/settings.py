"""The keeper's settings: every keeper-side ``BAY_*`` variable, typed, read once.

The keeper reads its environment once, when it starts (:func:`load_settings`), and hands the
one :class:`BaySettings` to the services that use a setting; nothing in the keeper reads
``os.environ`` for a setting at import time or per call. docs/configuration.md lists every
field here (``tests/test_docs.py`` checks it both ways).

Standard library only, on purpose: the keeper imports this before its first answer, so its
import is part of every cold ``bay`` command (a pydantic-settings model cost ~250 ms there,
18 % of a cold first open: ``bench/keeper_compare.py``).

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

import dataclasses
import os
from collections.abc import Callable, Mapping
from typing import Any

PREFIX = "BAY_"


class SettingsError(ValueError):
    """A keeper variable that does not parse: the keeper does not start (the message names the
    variable and what it needs)."""


def _setting(default: Any, description: str) -> Any:
    return dataclasses.field(default=default, metadata={"description": description})


@dataclasses.dataclass(frozen=True)
class BaySettings:
    """The keeper's settings: the defaults; :func:`load_settings` reads ``BAY_<FIELD>``
    from the environment, and tests build one with the values they need
    (``BaySettings(idle_timeout=2)``)."""

    default_provider: str = _setting(
        "chromium", "The provider id of every session's ephemeral profile."
    )
    default_profile: str = _setting(
        "",
        "The instance default profile (a label or id) a session with no other "
        "choice acts on; empty: none.",
    )
    idle_timeout: float = _setting(
        900.0,
        "Seconds without a verb after which a session loses its leases (its tabs "
        "are kept); also how long an exclusive holder may stay silent.",
    )
    handback_idle: float = _setting(
        300.0,
        "Seconds without input after which a human's takeover hands the controls back by itself.",
    )
    browser_grace: float = _setting(
        30.0, "Seconds a browser with no user left runs before it is stopped."
    )
    keeper_idle: float = _setting(
        3600.0,
        "Seconds without a request after which a keeper holding nothing exits.",
    )
    tick: float = _setting(15.0, "Seconds between housekeeping runs.")
    outputs_max_age: float = _setting(
        86400.0, "Seconds a spill file of run/outputs is kept (above 0)."
    )
    outputs_max_mb: float = _setting(
        256.0, "MiB the spill files of run/outputs stay under (above 0)."
    )
    download_max_mb: float = _setting(
        100.0,
        "MiB one session's downloads may weigh together (0 refuses every download).",
    )
    contexts_per_browser: int = _setting(
        16, "Isolated session contexts one shared browser process holds."
    )
    frame_timeout: float = _setting(
        10.0,
        "Seconds a request frame may take from its first byte to its newline.",
    )
    trigger_poll: float = _setting(0.2, "Seconds between scans of the trigger intake directory.")
    trigger_max_age: float = _setting(
        3600.0,
        "Seconds after publication a trigger request is refused as stale.",
    )
    max_browsers: int = _setting(
        8, "The most browser processes the keeper runs at once (0: no ceiling)."
    )
    log_level: str = _setting("INFO", "Level of the keeper log.")

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
            f"{PREFIX}{f.name.upper()}": str(f.metadata["description"])
            for f in dataclasses.fields(cls)
        }

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """``BAY_<FIELD>`` -> the field's default."""
        return {f"{PREFIX}{f.name.upper()}": f.default for f in dataclasses.fields(cls)}


#: Limits for which a value that does not parse, or is not above 0 (None) / below the
#: minimum given, is the field's default: the spill files and downloads are only ever
#: bounded more gently by a mistake, never left unbounded or the keeper unstarted.
_LENIENT: dict[str, float | None] = {
    "outputs_max_age": None,
    "outputs_max_mb": None,
    "download_max_mb": 0.0,
}


def _lenient(raw: str, default: float, minimum: float | None) -> float:
    try:
        number = float(raw)
    except ValueError:
        return default
    if minimum is None:
        return number if number > 0 else default
    return number if number >= minimum else default


_KINDS: dict[str, tuple[Callable[[str], Any], str]] = {
    "float": (float, "a number"),
    "int": (int, "a whole number"),
    "str": (str, "text"),
}


def load_settings(environ: Mapping[str, str] | None = None) -> BaySettings:
    """The keeper's settings from ``environ`` (default: this process's environment), or
    :class:`SettingsError` naming each variable that does not parse. An empty variable is
    its default."""
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    problems: list[str] = []
    for f in dataclasses.fields(BaySettings):
        var = f"{PREFIX}{f.name.upper()}"
        raw = env.get(var)
        if raw is None or (raw == "" and f.type != "str"):
            continue
        if f.name in _LENIENT:
            default = f.default
            assert isinstance(default, float)  # every lenient field is a number
            values[f.name] = _lenient(raw, default, _LENIENT[f.name])
            continue
        parse, what = _KINDS[str(f.type)]
        try:
            values[f.name] = parse(raw.strip())
        except ValueError:
            problems.append(f"{var}={raw[:40]!r}: needs {what}")
    if problems:
        raise SettingsError("settings do not parse: " + "; ".join(problems))
    return BaySettings(**values)
