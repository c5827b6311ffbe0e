"""Find a local Chromium-family browser without downloading anything."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

#: Absolute paths tried in order after ``BAY_CHROMIUM_PATH``. Debian's real binary comes
#: first: ``/usr/bin/chromium`` is a wrapper script that costs ~30 ms and adds flags.
CANDIDATE_PATHS: tuple[str, ...] = (
    "/usr/lib/chromium/chromium",
    "/opt/google/chrome/chrome",
    "/usr/bin/google-chrome-stable",
    "/usr/bin/google-chrome",
    "/usr/lib/chromium-browser/chromium-browser",
    "/snap/bin/chromium",
    "/opt/microsoft/msedge/msedge",
    "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
    "/Applications/Chromium.app/Contents/MacOS/Chromium",
    "/Applications/Microsoft Edge.app/Contents/MacOS/Microsoft Edge",
)
#: Names looked up on PATH last.
CANDIDATE_NAMES: tuple[str, ...] = (
    "chromium",
    "chromium-browser",
    "google-chrome-stable",
    "google-chrome",
    "microsoft-edge",
)

INSTALL_HINT = (
    "apt-get install -y chromium   (Debian/Ubuntu; or install Google Chrome), "
    "or set BAY_CHROMIUM_PATH=/path/to/chrome"
)


class NotFound(Exception):
    def __init__(self, reason: str, fix: str = INSTALL_HINT):
        super().__init__(reason)
        self.reason = reason
        self.fix = fix


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_chromium(env: Mapping[str, str] | None = None) -> Path:
    """The browser to launch, or :class:`NotFound` saying what was tried and what to install."""
    env = os.environ if env is None else env
    explicit = env.get("BAY_CHROMIUM_PATH", "")
    if explicit:
        if _executable(explicit):
            return Path(explicit)
        raise NotFound(
            f"BAY_CHROMIUM_PATH={explicit} is not an executable file",
            "point BAY_CHROMIUM_PATH at a Chromium/Chrome binary, or unset it",
        )
    for path in CANDIDATE_PATHS:
        if _executable(path):
            return Path(path)
    for name in CANDIDATE_NAMES:
        found = shutil.which(name, path=env.get("PATH"))
        if found:
            return Path(found)
    where = "macOS" if sys.platform == "darwin" else "this machine"
    raise NotFound(f"no Chromium, Chrome or Edge was found on {where}")
