"""The local-window provider's settings: environment variables read by the keeper when a
window verb first needs them (the keeper inherits the environment of the ``bay`` command that
started it). Each is in docs/configuration.md."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

_SCREEN = re.compile(r"^\d{2,5}x\d{2,5}x(8|16|24)$")


def _flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    return raw.strip().lower() not in ("0", "false", "no", "off")


@dataclass(frozen=True)
class Settings:
    xvfb: str = "Xvfb"
    """``BAY_WINDOW_XVFB``: the X server binary (found on PATH)."""
    python: str = "/usr/bin/python3"
    """``BAY_WINDOW_PYTHON``: the python that runs the AT-SPI walker (needs PyGObject and the
    Atspi typelib: Debian's python3-pyatspi)."""
    xtest: bool = True
    """``BAY_WINDOW_XTEST``: 0 starts our display without the XTEST extension (and refuses
    injection into desktop windows), so pointer and key injection are refused."""
    desktop: bool = False
    """``BAY_WINDOW_DESKTOP``: 1 also lists the windows of the user's own display ($DISPLAY)."""
    screen: str = "1280x800x24"
    """``BAY_WINDOW_SCREEN``: the size and depth of our display."""
    call_ms: int = 1000
    """``BAY_WINDOW_CALL_MS``: how long one accessibility call may take before the application
    is taken as not answering."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        screen = env.get("BAY_WINDOW_SCREEN", "").strip() or cls.screen
        if not _SCREEN.match(screen):
            screen = cls.screen
        try:
            call_ms = max(100, min(30_000, int(env.get("BAY_WINDOW_CALL_MS", "") or cls.call_ms)))
        except ValueError:
            call_ms = cls.call_ms
        return cls(
            xvfb=env.get("BAY_WINDOW_XVFB", "").strip() or cls.xvfb,
            python=env.get("BAY_WINDOW_PYTHON", "").strip() or cls.python,
            xtest=_flag(env, "BAY_WINDOW_XTEST", True),
            desktop=_flag(env, "BAY_WINDOW_DESKTOP", False),
            screen=screen,
            call_ms=call_ms,
        )
