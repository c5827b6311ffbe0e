"""Where browserbay keeps its files. Standard library only: the thin client imports this.

``BAY_HOME`` relocates everything (state, data, runtime, logs) under one directory, which is
how tests and scripts run side by side. Without it the XDG base directories are used.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

APP = "browserbay"


class BayPaths:
    """The directories and well-known files of one browserbay installation."""

    __slots__ = ("data", "home", "logs", "runtime", "state")

    def __init__(self, state: Path, data: Path, runtime: Path, logs: Path, home: Path | None):
        self.state = state
        self.data = data
        self.runtime = runtime
        self.logs = logs
        self.home = home

    @property
    def socket(self) -> Path:
        """The keeper's unix socket. AF_UNIX paths are capped near 108 bytes, so a deep
        ``BAY_HOME`` gets a short private directory under /tmp named after it instead."""
        path = self.runtime / "keeper.sock"
        if len(os.fsencode(path)) < 100:
            return path
        import zlib

        tag = format(zlib.crc32(os.fsencode(self.runtime)), "08x")
        # A private dir checked by ensure_private(): /tmp is only where it lives.
        return Path(f"/tmp/bay-{os.getuid()}-{tag}") / "keeper.sock"  # noqa: S108

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


def ensure_private(d: Path) -> None:
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    st = d.lstat()
    if st.st_uid != os.getuid() or not os.path.isdir(d) or os.path.islink(d):
        raise PermissionError(
            f"{d} is not a directory of yours; remove it, or set BAY_HOME to a private place"
        )
    if st.st_mode & 0o777 != 0o700:
        os.chmod(d, 0o700)


def _xdg(var: str, default: str) -> Path:
    value = os.environ.get(var, "")
    return Path(value) if value.startswith("/") else Path.home() / default


def bay_paths(environ: dict[str, str] | None = None) -> BayPaths:
    env = os.environ if environ is None else environ
    home = env.get("BAY_HOME", "")
    if home:
        root = Path(home).expanduser().absolute()
        return BayPaths(root / "state", root / "data", root / "run", root / "logs", root)
    if sys.platform == "darwin":  # pragma: no cover - exercised on macOS only
        lib = Path.home() / "Library"
        return BayPaths(
            lib / "Application Support" / APP / "state",
            lib / "Application Support" / APP / "data",
            Path(os.environ.get("TMPDIR", "/tmp")) / f"{APP}-{os.getuid()}",  # noqa: S108
            lib / "Logs" / APP,
            None,
        )
    state = _xdg("XDG_STATE_HOME", ".local/state") / APP
    data = _xdg("XDG_DATA_HOME", ".local/share") / APP
    runtime_base = os.environ.get("XDG_RUNTIME_DIR", "")
    runtime = (
        Path(runtime_base) / APP
        if runtime_base.startswith("/")
        else Path(f"/tmp/{APP}-{os.getuid()}")  # noqa: S108 - ownership checked in ensure()
    )
    return BayPaths(state, data, runtime, state / "logs", None)
