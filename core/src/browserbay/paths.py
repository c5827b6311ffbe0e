"""Where browserbay keeps its files. Standard library only (the thin client imports it off
its hot path; the hot path itself uses :mod:`browserbay.sockpath`).

``BAY_HOME`` relocates everything (config, state, data, runtime, logs) under one directory,
which is how tests and scripts run side by side: each XDG base directory becomes one
subdirectory of it (``$XDG_CONFIG_HOME/browserbay`` is ``<BAY_HOME>/config``). Without it the
XDG base directories are used.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from browserbay.sockpath import APP, distrust, runtime_dir, socket_for


class BayPaths:
    """The directories and well-known files of one browserbay installation."""

    __slots__ = ("config", "data", "home", "logs", "runtime", "state")

    def __init__(
        self,
        state: Path,
        data: Path,
        runtime: Path,
        logs: Path,
        home: Path | None,
        config: Path | None = None,
    ):
        self.state = state
        self.data = data
        self.runtime = runtime
        self.logs = logs
        self.home = home
        self.config = config
        """The owner's config directory (never made by browserbay); None: no config file
        (a test's hand-made paths)."""

    @property
    def config_file(self) -> Path | None:
        """The owner's keeper settings (docs/configuration.md#the-config-file)."""
        return None if self.config is None else self.config / "config.toml"

    @property
    def socket(self) -> Path:
        """The keeper's unix socket (see :func:`browserbay.sockpath.socket_for`)."""
        return Path(socket_for(str(self.runtime)))

    @property
    def spawn_lock(self) -> Path:
        return self.runtime / "spawn.lock"

    @property
    def registry(self) -> Path:
        return self.state / "registry.sqlite3"

    @property
    def keeper_log(self) -> Path:
        return self.logs / "keeper.log"

    @property
    def outputs(self) -> Path:
        """Full texts of answers that were cut for being too long."""
        return self.runtime / "outputs"

    @property
    def browsers(self) -> Path:
        """Per-browser HOME/XDG directories and ephemeral user-data-dirs."""
        return self.runtime / "browsers"

    def ensure(self) -> BayPaths:
        """Create every directory with a private mode (0700), refusing one that somebody
        else owns (a directory planted in /tmp by another user)."""
        dirs = (self.state, self.data, self.runtime, self.logs, self.outputs, self.browsers)
        for d in (*dirs, self.socket.parent):
            ensure_private(d)
        return self


class NotYours(PermissionError):
    """A directory browserbay would use is somebody else's (or a symlink, or no directory)."""


def ensure_private(d: Path) -> None:
    """``d`` exists, is a directory of this user's (never a symlink: it is not followed) and
    has mode 0700; one of another owner is refused, never reused (:class:`NotYours`)."""
    with contextlib.suppress(FileExistsError):  # a file or a dangling symlink: said below
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
    why = distrust(str(d), directory=True, mode=False)
    if why is not None:
        raise NotYours(
            f"{why}: it is not a directory of yours; remove it, or set BAY_HOME to a private place"
        )
    if d.lstat().st_mode & 0o777 != 0o700:
        os.chmod(d, 0o700)


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` as a new 0600 file, through a temporary name beside it: an
    existing file (whatever its mode) or symlink there is replaced, never written through."""
    tmp = path.with_name(f".{path.name}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _xdg(env: Mapping[str, str], var: str, default: str) -> Path:
    value = env.get(var, "")
    return Path(value) if value.startswith("/") else Path.home() / default


def bay_paths(environ: Mapping[str, str] | None = None) -> BayPaths:
    env = os.environ if environ is None else environ
    runtime = Path(runtime_dir(env))
    home = env.get("BAY_HOME", "")
    if home:
        root = runtime.parent
        return BayPaths(
            root / "state", root / "data", runtime, root / "logs", root, root / "config"
        )
    config = _xdg(env, "XDG_CONFIG_HOME", ".config") / APP
    if sys.platform == "darwin":  # pragma: no cover - exercised on macOS only
        lib = Path.home() / "Library"
        support = lib / "Application Support" / APP
        return BayPaths(
            support / "state", support / "data", runtime, lib / "Logs" / APP, None, config
        )
    state = _xdg(env, "XDG_STATE_HOME", ".local/state") / APP
    data = _xdg(env, "XDG_DATA_HOME", ".local/share") / APP
    return BayPaths(state, data, runtime, state / "logs", None, config)
