"""The names the local-window provider's modules share: its provider id, the actions of
``bay window`` (their handlers: :data:`browserbay_local_window.windows.ACTIONS`) and where
the AT-SPI bus launcher is installed. Standard library only: the plugin module imports it,
and every keeper and ``bay plugins`` loads that one.
"""

from __future__ import annotations

import os

PROVIDER = "local-window"
ACTIONS = (
    "open",
    "browser",
    "list",
    "attach",
    "detach",
    "close",
    "snapshot",
    "click",
    "type",
    "key",
    "screenshot",
    "doctor",
)
LAUNCHERS = (
    "/usr/libexec/at-spi-bus-launcher",
    "/usr/lib/at-spi2-core/at-spi-bus-launcher",
    "/usr/lib/at-spi2/at-spi-bus-launcher",
)


def launcher() -> str | None:
    """The AT-SPI bus launcher of this machine, or None."""
    return next((p for p in LAUNCHERS if os.access(p, os.X_OK)), None)
