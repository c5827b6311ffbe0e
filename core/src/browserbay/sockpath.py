"""The keeper's socket path, computed with ``os.path`` strings only: the thin client's hot
path must not pay for ``pathlib`` (≈5 ms with what it imports). :mod:`browserbay.paths`
builds on the same two functions, so there is one rule for where things are."""

from __future__ import annotations

import os
import sys

APP = "browserbay"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping


def runtime_dir(env: Mapping[str, str]) -> str:
    """Where the socket, locks and per-browser dirs live."""
    home = env.get("BAY_HOME", "")
    if home:
        return os.path.join(os.path.abspath(os.path.expanduser(home)), "run")
    if sys.platform == "darwin":  # pragma: no cover - exercised on macOS only
        return os.path.join(os.environ.get("TMPDIR", "/tmp"), f"{APP}-{os.getuid()}")  # noqa: S108
    base = env.get("XDG_RUNTIME_DIR", "")
    if base.startswith("/"):
        return os.path.join(base, APP)
    return f"/tmp/{APP}-{os.getuid()}"  # noqa: S108 - ownership checked in paths.ensure_private


def socket_for(runtime: str) -> str:
    """The keeper's unix socket in ``runtime``. AF_UNIX paths are capped near 108 bytes, so a
    deep runtime dir gets a short private directory under /tmp named after it instead."""
    path = os.path.join(runtime, "keeper.sock")
    if len(os.fsencode(path)) < 100:
        return path
    import zlib

    tag = format(zlib.crc32(os.fsencode(runtime)), "08x")
    return f"/tmp/bay-{os.getuid()}-{tag}/keeper.sock"  # noqa: S108 - checked private


def distrust(path: str, *, directory: bool, mode: bool = True) -> str | None:
    """Why ``path`` is not this user's own private directory (``directory``; ``mode``: with
    no group or other bits) or file (the socket: of any kind, the keeper says itself when
    it cannot bind there), or None when it is. Raises FileNotFoundError when nothing is
    there. ``lstat``: a symlink is never followed (another user in /tmp may have planted it)."""
    import stat  # already loaded by os: free

    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return f"{path} is a symlink"
    if directory and not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a directory"
    if st.st_uid != os.getuid():
        return f"{path} is owned by uid {st.st_uid}, not by you (uid {os.getuid()})"
    if directory and mode and st.st_mode & 0o077:
        return f"{path} has mode {stat.S_IMODE(st.st_mode):04o}, not 0700"
    return None


def socket_path(env: Mapping[str, str] | None = None) -> str:
    return socket_for(runtime_dir(os.environ if env is None else env))


def session_socket(env: Mapping[str, str] | None = None) -> str | None:
    """``BAY_SOCKET``: the session socket the owner gave this agent (``bay session grant``),
    made absolute; None when unset or empty (the home's own socket: the owner's channel)."""
    value = (os.environ if env is None else env).get("BAY_SOCKET", "")
    return os.path.abspath(os.path.expanduser(value)) if value else None
