"""Which Chromium to launch and which phone to emulate: both read from the environment of the
keeper (it inherits the environment of the ``bay`` command that started it)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping

#: The device descriptor (a key of Playwright's ``playwright.devices``) used by default.
DEFAULT_DEVICE = "Pixel 7"
#: Named in the refusal for a device Playwright does not know.
SUGGESTED = (DEFAULT_DEVICE, "Pixel 5", "Galaxy S9+", "iPhone 13", "iPhone SE")

#: Tried in order after ``BAY_PHONE_CHROMIUM``; then ``chromium`` on PATH.
CANDIDATES = ("/usr/lib/chromium/chromium", "/usr/bin/chromium", "/usr/bin/google-chrome")

INSTALL = "apt-get install -y chromium   (or set BAY_PHONE_CHROMIUM=/path/to/chromium)"


def device_name(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    return env.get("BAY_PHONE_DEVICE", "").strip() or DEFAULT_DEVICE


def chromium(env: Mapping[str, str] | None = None) -> str | None:
    """The browser binary, or None when there is none."""
    env = os.environ if env is None else env
    explicit = env.get("BAY_PHONE_CHROMIUM", "").strip()
    if explicit:
        return explicit if os.access(explicit, os.X_OK) and os.path.isfile(explicit) else None
    for path in CANDIDATES:
        if os.access(path, os.X_OK):
            return path
    return shutil.which("chromium", path=env.get("PATH"))
