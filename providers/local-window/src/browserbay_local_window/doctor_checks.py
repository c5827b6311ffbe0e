"""``bay doctor`` rows of the local-window provider: the machine part of its probe matrix
(:func:`machine`, which ``bay window doctor`` shows too), plus two things tried for real and
undone at once — an Xvfb that starts and answers, and the AT-SPI bindings under the walker's
python."""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import time
from typing import Any

from browserbay.model import DoctorCheck
from browserbay_local_window import chromium, procs
from browserbay_local_window.names import launcher
from browserbay_local_window.settings import Settings

#: How long Xvfb may take to report its display, and the walker's python its imports.
START_TIMEOUT_S = 10.0

#: machine() row -> (area, what fixes it). Its chromium row is left to the chromium
#: provider's own check.
_MACHINE = {
    "xvfb": ("display", "apt-get install -y xvfb   (or BAY_WINDOW_XVFB=/path/to/Xvfb)"),
    "dbus": ("at-spi", "apt-get install -y dbus"),
    "atspi_launcher": ("at-spi", "apt-get install -y at-spi2-core"),
    "keeper_death_cleanup": ("display", "apt-get install -y util-linux   (for setpriv)"),
}

Row = dict[str, Any]


def row(ok: bool, detail: str) -> Row:
    """One probe's result: whether it works, and what was found (or what fixes it)."""
    return {"ok": ok, "detail": detail}


def machine(s: Settings) -> dict[str, Row]:
    """What is installed: cheap, no process started (the machine part of ``bay window
    doctor``'s probe matrix, and of ``bay doctor``'s rows)."""
    xvfb = shutil.which(s.xvfb)
    spi = launcher()
    dbus = shutil.which("dbus-daemon")
    browser = chromium.find()
    tool = procs.setpriv()
    return {
        "xvfb": row(xvfb is not None, xvfb or f"{s.xvfb} not found (apt-get install -y xvfb)"),
        "dbus": row(dbus is not None, dbus or "dbus-daemon not found (apt-get install -y dbus)"),
        "atspi_launcher": row(
            spi is not None,
            spi or "at-spi-bus-launcher not found (apt-get install -y at-spi2-core)",
        ),
        "chromium": row(browser is not None, browser or chromium.INSTALL),
        "keeper_death_cleanup": row(
            tool is not None,
            f"{tool} --pdeathsig" if tool else "no setpriv: a killed keeper leaves its display",
        ),
    }


ATSPI_IMPORT = (
    "import gi; gi.require_version('Atspi', '2.0'); from gi.repository import Atspi; "
    "print(getattr(Atspi, '_version', '2.0'))"
)


def xvfb_starts(binary: str) -> DoctorCheck:
    """Start Xvfb on a display of its choosing (``-displayfd``), wait for it to say which,
    then end it."""
    fix = "apt-get install -y xvfb xauth   (then bay window doctor)"
    path = shutil.which(binary)
    if path is None:
        return DoctorCheck("display", "xvfb starts", "fail", f"{binary} not found", fix)
    read_fd, write_fd = os.pipe()
    try:
        proc = subprocess.Popen(
            [path, "-displayfd", str(write_fd), "-screen", "0", "64x64x24", "-nolisten", "tcp"],
            pass_fds=(write_fd,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
    except OSError as exc:
        os.close(read_fd)
        os.close(write_fd)
        return DoctorCheck("display", "xvfb starts", "fail", f"{path}: {exc}", fix)
    os.close(write_fd)
    started = time.monotonic()
    try:
        ready, _, _ = select.select([read_fd], [], [], START_TIMEOUT_S)
        number = os.read(read_fd, 32).decode(errors="replace").strip() if ready else ""
    finally:
        os.close(read_fd)
        proc.terminate()
        try:
            _, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
    if not number.isdigit():
        last = (err.decode(errors="replace").strip().splitlines() or ["no output"])[-1]
        return DoctorCheck(
            "display", "xvfb starts", "fail", f"{path} did not start a display: {last}", fix
        )
    ms = (time.monotonic() - started) * 1000
    return DoctorCheck("display", "xvfb starts", "ok", f"{path} served :{number} ({ms:.0f} ms)")


def atspi_bindings(python: str) -> DoctorCheck:
    """The walker runs under ``python`` (Debian's /usr/bin/python3): it needs PyGObject and
    the Atspi typelib."""
    fix = "apt-get install -y python3-pyatspi gir1.2-atspi-2.0   (or BAY_WINDOW_PYTHON=...)"
    try:
        done = subprocess.run(
            [python, "-c", ATSPI_IMPORT],
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return DoctorCheck("at-spi", "pyatspi", "fail", f"{python}: {exc}", fix)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return DoctorCheck("at-spi", "pyatspi", "fail", f"{python}: {last}", fix)
    version = done.stdout.strip()
    return DoctorCheck("at-spi", "pyatspi", "ok", f"{python}: Atspi {version}")


def checks(settings: Settings | None = None) -> list[DoctorCheck]:
    settings = Settings.from_env() if settings is None else settings
    rows = []
    for key, found in machine(settings).items():
        if key not in _MACHINE:
            continue
        area, fix = _MACHINE[key]
        if found["ok"]:
            rows.append(DoctorCheck(area, key.replace("_", " "), "ok", found["detail"]))
        else:
            name = key.replace("_", " ")
            if key == "keeper_death_cleanup":
                rows.append(DoctorCheck(area, name, "warn", found["detail"], fix))
            else:
                rows.append(DoctorCheck(area, name, "fail", found["detail"], fix))
    rows.append(xvfb_starts(settings.xvfb))
    rows.append(atspi_bindings(settings.python))
    return rows
