"""``bay window browser``: Debian's Chromium, headed on our display, with its accessibility
tree on and **no** automation at all — no debugging port, no ``--enable-automation``, no
Playwright. The tier-3 way to use a site: read it through AT-SPI, act by its actions and by
XTEST keys, like a person with a screen reader would."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from browserbay import sandbox

CANDIDATES = ("/usr/lib/chromium/chromium", "/usr/lib/chromium-browser/chromium-browser")
NAMES = ("chromium", "chromium-browser", "google-chrome-stable", "google-chrome")
INSTALL = "apt-get install -y chromium   (or set BAY_CHROMIUM_PATH=/path/to/chromium)"

#: Flags a browser driven by automation carries; none of them may reach this one's argv.
FORBIDDEN = ("--remote-debugging", "--enable-automation", "--remote-allow-origins", "--headless")

#: Quiet on a closed network, no first-run UI, no keychain prompt.
QUIET = (
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--disable-breakpad",
    "--password-store=basic",
)


def find(env: Mapping[str, str] | None = None) -> str | None:
    env = os.environ if env is None else env
    explicit = env.get("BAY_CHROMIUM_PATH", "")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    for path in CANDIDATES:
        if os.access(path, os.X_OK):
            return path
    for name in NAMES:
        found = shutil.which(name, path=env.get("PATH"))
        if found:
            return found
    return None


def argv(binary: str, user_data_dir: Path, url: str, size: tuple[int, int]) -> list[str]:
    args = [
        binary,
        f"--user-data-dir={user_data_dir}",
        "--force-renderer-accessibility",
        "--window-position=0,0",
        f"--window-size={size[0]},{size[1]}",
        *QUIET,
    ]
    args += sandbox.flags("local-window")  # --no-sandbox only as root
    args.append(url)
    bad = [a for a in args if a.startswith(FORBIDDEN)]
    assert not bad, f"automation flags must never reach a tier-3 browser: {bad}"
    return args


def env(display_env: Mapping[str, str]) -> dict[str, str]:
    """The display's environment plus what turns Chromium's web content tree on."""
    return {**display_env, "ACCESSIBILITY_ENABLED": "1"}
