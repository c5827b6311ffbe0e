"""A private, headless Secret Service for tests: a D-Bus session bus of its own and a
gnome-keyring daemon on it, unlocked without a prompt. Nothing touches the user's own
session bus or keyring::

    with private_secret_service(tmp_path) as env:
        os.environ.update(env)   # or hand env to a child process
        ...

Needs ``dbus-daemon``, ``dbus-send`` and ``gnome-keyring-daemon`` (``scripts/setup.sh``
installs them on Debian/Ubuntu).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

SECRETS_NAME = "org.freedesktop.secrets"
BINARIES = ("dbus-daemon", "dbus-send", "gnome-keyring-daemon")


def missing_binaries() -> list[str]:
    return [b for b in BINARIES if shutil.which(b) is None]


def _bus_call(env: dict[str, str], method: str, arg: str) -> str:
    out = subprocess.run(
        [
            "dbus-send",
            "--session",
            "--print-reply=literal",
            "--dest=org.freedesktop.DBus",
            "/org/freedesktop/DBus",
            f"org.freedesktop.DBus.{method}",
            f"string:{arg}",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=5,
        check=True,
    )
    return out.stdout.strip()


@contextlib.contextmanager
def private_secret_service(
    root: Path,
    password: str = "browserbay-test",
) -> Iterator[dict[str, str]]:
    """Start the bus and the keyring under ``root``; yield the variables that point a
    process at them (``DBUS_SESSION_BUS_ADDRESS``, ``XDG_RUNTIME_DIR``); stop both after."""
    missing = missing_binaries()
    if missing:
        raise RuntimeError(f"missing {', '.join(missing)}: run scripts/setup.sh")
    run, home = root / "run", root / "home"
    run.mkdir(mode=0o700, parents=True)
    home.mkdir(mode=0o700, parents=True)
    out = subprocess.run(
        [
            "dbus-daemon",
            "--session",
            "--fork",
            "--print-address=1",
            "--print-pid=1",
            f"--address=unix:path={run}/bus",
        ],
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    )
    address, bus_pid = out.stdout.split()[:2]
    pids = [int(bus_pid)]
    env = {
        **os.environ,
        "DBUS_SESSION_BUS_ADDRESS": address,
        "XDG_RUNTIME_DIR": str(run),
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CONFIG_HOME": str(home / ".config"),
    }
    try:
        # --unlock reads the login keyring's password on stdin (creating it unlocked);
        # --start then registers the secrets component on the bus.
        for args, stdin in ((["--unlock"], password), (["--start"], None)):
            subprocess.run(
                ["gnome-keyring-daemon", *args, "--components=secrets"],
                input=stdin,
                env=env,
                capture_output=True,
                text=True,
                timeout=10,
                check=True,
            )
        end = time.monotonic() + 10
        while "true" not in _bus_call(env, "NameHasOwner", SECRETS_NAME):
            if time.monotonic() > end:
                raise RuntimeError("gnome-keyring did not register org.freedesktop.secrets")
            time.sleep(0.05)
        pids.append(int(_bus_call(env, "GetConnectionUnixProcessID", SECRETS_NAME).split()[-1]))
        yield {"DBUS_SESSION_BUS_ADDRESS": address, "XDG_RUNTIME_DIR": str(run)}
    finally:
        for pid in reversed(pids):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
