"""The keeper's settings: every keeper-side ``BAY_*`` variable, typed, read once.

The keeper reads its settings once, when it starts (:func:`load_settings`), and hands the
one :class:`BaySettings` to the services that use a setting; nothing in the keeper reads
``os.environ`` for a setting at import time or per call. docs/configuration.md lists every
field here (``tests/test_docs.py`` checks it both ways).

A setting comes from, strongest first: ``bay keeper start --set NAME=VALUE`` (the keeper's
argv), the ``BAY_<NAME>`` variable of the owner's command that started the keeper, the
owner's config file (``config.toml``, :attr:`browserbay.paths.BayPaths.config_file`; refused
unless only its owner can write it), the default. The three layers are text read by the one
parser (:func:`_parse`); :class:`Configured` says where each value came from (``bay keeper
status``).

Standard library only, on purpose: the keeper imports this before its first answer, so its
import is part of every cold ``bay`` command (a pydantic-settings model cost ~250 ms there,
18 % of a cold first open: ``bench/keeper_compare.py``). The config file is read with
``tomllib`` for the same reason (the issue asked for pydantic-settings), imported only when
there is a file to read (a fresh home has none), as ``difflib`` only for a name to correct.

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
  ``BAY_KEYS_PASSPHRASE``, ``BAY_FLEET_SECRET``, a ``BAY_REGISTRY`` with a password): moved
  out of the environment at the keeper's start
  (:mod:`browserbay.keys`), never held in a settings object; ``BAY_KEYS_STORE`` is read by
  the key book when ``bay keys set`` writes.
"""

from __future__ import annotations

import dataclasses
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

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
    dialog_timeout: float = _setting(
        120.0,
        "Seconds a dialog a page opened (alert, confirm, prompt, beforeunload) waits for an "
        "answer before the keeper dismisses it; the session's next answer says so.",
    )
    memory_notice_mb: float = _setting(
        0.0,
        "MiB of memory (PSS) above which a browser is marked and its sessions told once "
        "(again only after it fell below 80 % of it); never stopped for its size. 0: no line.",
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
    fleet_ttl: float = _setting(
        15.0,
        "Seconds after which a keeper of a fleet that stopped beating is dead and its "
        "profile claims expire (it beats every sixth of it; at least 1).",
    )
    fleet_host: str = _setting(
        "", "The host name the keeper registers in the fleet; empty: socket.gethostname()."
    )
    fleet_listen: str = _setting(
        "", "HOST:PORT of the keeper's fleet link, registered for the others; empty: none."
    )
    fleet_data: str = _setting(
        "",
        "A directory every keeper of a fleet mounts: profiles' data goes under it "
        "(profiles/<id>), so another keeper serves a dead one's profiles; empty: the "
        "home's data dir, this keeper's alone.",
    )

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
#: bounded more gently by a mistake, never left unbounded or the keeper unstarted. The same
#: rule in the file, the environment and ``--set`` (one parser).
_LENIENT: dict[str, float | None] = {
    "outputs_max_age": None,
    "outputs_max_mb": None,
    "download_max_mb": 0.0,
}


#: Numbers refused below a minimum (the keeper does not start; the message says it).
_MINIMUM: dict[str, float] = {"fleet_ttl": 1.0}


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

_FIELDS: dict[str, dataclasses.Field[Any]] = {f.name: f for f in dataclasses.fields(BaySettings)}

Source = Literal["flag", "env", "file", "default"]
"""Where a setting's value came from, strongest first: ``bay keeper start --set``, the
environment of the process that started the keeper, the owner's config file, the default."""


@dataclass(frozen=True)
class Setting:
    """One setting as ``bay keeper status`` shows it."""

    name: str
    value: Any
    source: Source

    def as_row(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Configured:
    """The keeper's settings and where each came from (:func:`load_settings`)."""

    settings: BaySettings
    sources: Mapping[str, Source]
    """Field name -> its source; a field not here is its default."""
    file: Path | None = None
    """The config file the keeper looked at (None: this installation has none, e.g. a test's
    hand-made paths)."""
    file_found: bool = False
    """Whether that file was there (and read)."""
    flags: tuple[tuple[str, str], ...] = ()
    """The ``--set`` pairs the keeper was started with, as given."""

    def started_with(self, words: Sequence[str]) -> bool:
        """Whether ``NAME=VALUE`` words (a ``bay keeper start --set``) are exactly the
        settings this keeper was started with, in any order."""
        return sorted(map(_pair, words)) == sorted(self.flags)

    def rows(self) -> list[Setting]:
        """Every setting, in the order of the fields, with its value and source."""
        return [
            Setting(name, getattr(self.settings, name), self.sources.get(name, "default"))
            for name in _FIELDS
        ]

    def given(self) -> list[Setting]:
        """The settings that did not come from their default."""
        return [s for s in self.rows() if s.source != "default"]


def _parse(name: str, raw: str, where: str) -> tuple[Any, str | None]:
    """The one parser of a setting's text, whichever layer it came from: ``(value, None)``,
    or ``(None, problem)`` where the problem names ``where`` (``BAY_TICK``, ``tick`` in the
    file, ``--set tick``) and what the field needs."""
    f = _FIELDS[name]
    if name in _LENIENT:
        default = f.default
        assert isinstance(default, float)  # every lenient field is a number
        return _lenient(raw, default, _LENIENT[name]), None
    parse, what = _KINDS[str(f.type)]
    try:
        value = parse(raw.strip())
    except ValueError:
        return None, f"{where}={raw[:40]!r}: needs {what}"
    least = _MINIMUM.get(name)
    if least is not None and not value >= least:  # (not >=: a NaN is refused too)
        return None, f"{where}={raw[:40]!r}: needs a number of at least {least:g}"
    return value, None


def _unknown(name: str, where: str) -> str:
    import difflib

    close = difflib.get_close_matches(name, list(_FIELDS), n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"{where}{name[:40]!r} is no keeper setting{hint} (docs/configuration.md lists them)"


def _file_layer(path: Path, problems: list[str]) -> dict[str, str] | None:
    """The owner's config file as ``field -> text``, or None when there is none. A file
    somebody else could have written is refused (:class:`SettingsError`), never read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SettingsError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    import tomllib

    with os.fdopen(fd, "rb") as f:
        why = _untrusted(path, os.fstat(f.fileno()))
        if why is not None:
            raise SettingsError(why)
        try:
            table = tomllib.load(f)
        except tomllib.TOMLDecodeError as exc:
            raise SettingsError(f"{path} is not TOML: {exc}") from None
    found: dict[str, str] = {}
    for key, value in table.items():
        if key not in _FIELDS:
            problems.append(_unknown(key, f"{path}: "))
            continue
        kind = str(_FIELDS[key].type)
        if isinstance(value, str):
            found[key] = value
        elif kind != "str" and isinstance(value, int | float) and not isinstance(value, bool):
            found[key] = repr(value)
        else:
            problems.append(
                f"{path}: {key}={str(value)[:40]!r}: needs {_KINDS[kind][1]}"
                + (" (a TOML string)" if kind == "str" else "")
            )
    return found


def _untrusted(path: Path, st: os.stat_result) -> str | None:
    """Why another user could have written the config file (it, or the directory holding
    it: owned by somebody else, or group/other-writable), or None. Policy is the owner's:
    a file another user can write is refused, with the command that fixes it."""
    me = os.getuid()
    for what, where, info in (
        ("file", path, st),
        ("directory", path.parent, os.stat(path.parent)),
    ):
        if info.st_uid != me:
            return (
                f"the config {what} {where} is owned by uid {info.st_uid}, not by the keeper's "
                f"user (uid {me}): another user could set the keeper's policy; it is not read. "
                f"Make it yours (chown {me} {where}) or remove it"
            )
        if info.st_mode & 0o022:
            mode = f"{stat.S_IMODE(info.st_mode):04o}"
            return (
                f"the config {what} {where} is writable by group or others (mode {mode}): "
                f"another user could set the keeper's policy; it is not read. Run: "
                f"chmod go-w {where}"
            )
    return None


def _pair(word: str) -> tuple[str, str]:
    """``NAME=VALUE`` as ``(field, value)``: the field's own name (``max_browsers``) or its
    variable's (``BAY_MAX_BROWSERS``), as the owner knows it from the environment."""
    name, _, value = word.partition("=")
    name = name.strip()
    if name.startswith(PREFIX) and name[len(PREFIX) :].lower() in _FIELDS:
        name = name[len(PREFIX) :].lower()
    return name, value


def flags_from_argv(argv: Sequence[str]) -> list[tuple[str, str]]:
    """The keeper's argv (``--set NAME=VALUE``..., what ``bay keeper start --set`` passes)
    as ``(name, value)`` pairs; anything else is a :class:`SettingsError`."""
    pairs = []
    words = list(argv)
    while words:
        option = words.pop(0)
        if option != "--set" or not words or "=" not in words[0]:
            raise SettingsError(f"the keeper takes --set NAME=VALUE arguments, not {option!r}")
        pairs.append(_pair(words.pop(0)))
    return pairs


def load_settings(
    environ: Mapping[str, str] | None = None,
    *,
    file: Path | None = None,
    flags: Sequence[tuple[str, str]] = (),
) -> Configured:
    """The keeper's settings, strongest first: ``flags`` (``bay keeper start --set``), the
    ``BAY_*`` variables of ``environ`` (default: this process's environment, the one the
    owner's ``bay`` command started the keeper with), the config ``file`` (the owner's
    ``config.toml``), the defaults. Each layer's text goes through the one parser; an empty
    variable is its default. :class:`SettingsError` names every key or value that does not
    parse, and a config file another user could write; the keeper does not start then."""
    env = os.environ if environ is None else environ
    problems: list[str] = []
    layers: list[tuple[Source, dict[str, tuple[str, str]]]] = []
    found = False
    if file is not None:
        from_file = _file_layer(file, problems)
        found = from_file is not None
        texts = from_file or {}
        layers.append(("file", {k: (v, f"{file}: {k}") for k, v in texts.items()}))
    from_env: dict[str, tuple[str, str]] = {}
    for name, f in _FIELDS.items():
        var = f"{PREFIX}{name.upper()}"
        raw = env.get(var)
        if raw is None or (raw == "" and f.type != "str"):
            continue
        from_env[name] = (raw, var)
    layers.append(("env", from_env))
    from_flags: dict[str, tuple[str, str]] = {}
    for name, raw in flags:
        if name not in _FIELDS:
            problems.append(_unknown(name, "--set "))
            continue
        from_flags[name] = (raw, f"--set {name}")
    layers.append(("flag", from_flags))
    values: dict[str, Any] = {}
    sources: dict[str, Source] = {}
    for source, layer in layers:
        for name, (raw, where) in layer.items():
            value, problem = _parse(name, raw, where)
            if problem is not None:
                problems.append(problem)
                continue
            values[name] = value
            sources[name] = source
    if problems:
        raise SettingsError("settings do not parse: " + "; ".join(problems))
    return Configured(BaySettings(**values), sources, file, found, tuple(flags))
