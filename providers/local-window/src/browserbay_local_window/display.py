"""Displays: the one we own (Xvfb + a private D-Bus session bus + the AT-SPI bus launcher, in
a private XDG_RUNTIME_DIR) and, when a setting allows it, the user's own desktop ($DISPLAY).

Start order (measured, see FACTS): Xvfb → session bus → ``at-spi-bus-launcher
--launch-immediately`` (the registry daemon is activated by itself). GTK3 applications then
export their tree with no GTK_MODULES; Chromium needs ``ACCESSIBILITY_ENABLED=1``."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

from browserbay import procfs
from browserbay_local_window import procs, xauth
from browserbay_local_window.names import launcher
from browserbay_local_window.settings import Settings
from browserbay_local_window.walkerclient import WalkerClient
from browserbay_local_window.x11 import XConn

log = logging.getLogger("browserbay.local_window")

START_TIMEOUT = 10.0
INSTALL = "apt-get install -y xvfb at-spi2-core dbus python3-pyatspi   (or bash scripts/setup.sh)"
#: The programs a display of ours runs (what a sweep may end).
OURS = ("Xvfb", "dbus-daemon", "at-spi-bus-launcher", "setpriv")
#: The environment an application on our display inherits from the keeper, nothing more.
PASSED = ("PATH", "LANG", "LC_ALL", "TZ")


class DisplayError(Exception):
    def __init__(self, reason: str, fix: str = INSTALL):
        super().__init__(reason)
        self.reason = reason
        self.fix = fix


@dataclass
class Display:
    """A display windows live on, with what reads and drives it."""

    name: str
    env: dict[str, str]
    """The environment of an application started on it (and of the walker)."""
    desktop: bool
    xtest_allowed: bool
    walker: WalkerClient
    x: XConn
    runtime: Path | None = None
    home: Path | None = None
    children: list[tuple[str, anyio.abc.Process]] = field(default_factory=list)
    started_at: float = field(default_factory=time.time)

    @property
    def label(self) -> str:
        return f"{self.name} ({'your desktop' if self.desktop else 'ours'})"

    async def stop(self) -> None:
        await self.walker.close()
        await anyio.to_thread.run_sync(self.x.close)
        if not self.desktop:
            xauth.forget(self.name)
        for what, proc in reversed(self.children):
            log.info("stopping %s (pid %d)", what, proc.pid)
            await procs.end(proc, grace=2.0)
        self.children.clear()
        if self.runtime is not None:
            runtime = self.runtime
            await anyio.to_thread.run_sync(lambda: shutil.rmtree(runtime, ignore_errors=True))
            procs.DIRS.discard(str(runtime))


def _short_tmp() -> Path:
    """A private directory for the display's runtime files. AT-SPI puts unix sockets in it,
    so its path must stay short (sockaddr_un holds 108 bytes)."""
    base = os.environ.get("TMPDIR") or tempfile.gettempdir()
    if len(base) > 50 or not os.path.isdir(base):
        base = "/tmp"  # noqa: S108 - mkdtemp makes a fresh 0700 directory in it
    return Path(tempfile.mkdtemp(prefix="bay-x-", dir=base))


def _app_env(display: str, bus: str, runtime: Path, home: Path) -> dict[str, str]:
    env = {k: os.environ[k] for k in PASSED if k in os.environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.setdefault("LANG", "C.UTF-8")
    env.update(
        DISPLAY=display,
        DBUS_SESSION_BUS_ADDRESS=bus,
        XDG_RUNTIME_DIR=str(runtime),
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local/share"),
        XDG_STATE_HOME=str(home / ".local/state"),
        TMPDIR=str(runtime / "tmp"),
        GSETTINGS_BACKEND="memory",
    )
    return env


async def _read_displayfd(fd: int, timeout: float) -> str:
    data = b""
    with anyio.fail_after(timeout):
        while not data.endswith(b"\n"):
            await anyio.wait_readable(fd)
            chunk = os.read(fd, 64)
            if not chunk:
                break
            data += chunk
    number = data.decode().strip()
    if not number.isdigit():
        raise DisplayError(
            "Xvfb exited before it was ready (another X server? see bay keeper logs)"
        )
    return f":{number}"


async def start_own(settings: Settings, state_dir: Path) -> Display:
    """Start Xvfb, a session bus and the AT-SPI bus launcher; raise :class:`DisplayError`
    naming what is missing. Nothing is left running when it fails."""
    xvfb = shutil.which(settings.xvfb)
    if xvfb is None:
        raise DisplayError(f"the X server {settings.xvfb!r} was not found")
    dbus = shutil.which("dbus-daemon")
    if dbus is None:
        raise DisplayError("dbus-daemon was not found")
    spi = launcher()
    if spi is None:
        raise DisplayError("at-spi-bus-launcher was not found (package at-spi2-core)")
    sweep(state_dir)
    runtime = _short_tmp()
    os.chmod(runtime, 0o700)
    procs.DIRS.add(str(runtime))
    home = runtime / "home"
    for d in (home, runtime / "tmp", home / ".config", home / ".cache"):
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
    children: list[tuple[str, anyio.abc.Process]] = []
    authority = runtime / "Xauthority"
    cookie = xauth.new_cookie()
    xauth.write(authority, cookie)  # read by the server at its start
    # A local file, opened once per display start: handed to the children as their stderr.
    log_file = open(runtime / "display.log", "ab")  # noqa: SIM115, ASYNC230
    try:
        read_fd, write_fd = os.pipe()
        try:
            argv = [xvfb, "-displayfd", str(write_fd), "-screen", "0", settings.screen]
            argv += ["-nolisten", "tcp", "-noreset", "-auth", str(authority)]
            if not settings.xtest:
                argv.append("-tst")  # no XTEST: injection is refused, by the probe's finding
            base = {k: os.environ[k] for k in PASSED if k in os.environ}
            proc = await procs.spawn(
                argv, base, "Xvfb", stderr=log_file, stdout=log_file, pass_fds=(write_fd,)
            )
            children.append(("Xvfb", proc))
            os.close(write_fd)
            write_fd = -1
            name = await _read_displayfd(read_fd, START_TIMEOUT)
        finally:
            os.close(read_fd)
            if write_fd >= 0:
                os.close(write_fd)
        xauth.write(authority, cookie, name)  # now with the display's number, for clients
        bus = f"unix:path={runtime}/bus"
        env = _app_env(name, bus, runtime, home)
        env["XAUTHORITY"] = str(authority)
        proc = await procs.spawn(
            [dbus, "--session", "--nofork", "--nopidfile", f"--address={bus}", "--print-address=1"],
            env,
            "dbus-daemon",
            stdout=subprocess.PIPE,
            stderr=log_file,
        )
        children.append(("dbus-daemon", proc))
        assert proc.stdout is not None
        with anyio.fail_after(START_TIMEOUT):
            await BufferedByteReceiveStream(proc.stdout).receive_until(b"\n", 4096)
        proc = await procs.spawn(
            [spi, "--launch-immediately"], env, "at-spi-bus-launcher", stderr=log_file
        )
        children.append(("at-spi-bus-launcher", proc))
    except BaseException as exc:
        with anyio.CancelScope(shield=True):
            for _what, child in reversed(children):
                await procs.end(child, grace=1.0)
        log_file.close()
        shutil.rmtree(runtime, ignore_errors=True)
        procs.DIRS.discard(str(runtime))
        if isinstance(exc, DisplayError):
            raise
        if isinstance(exc, (OSError, TimeoutError, anyio.EndOfStream, anyio.IncompleteRead)):
            raise DisplayError(f"the display did not start: {exc!r}") from exc
        raise
    log_file.close()
    xauth.remember(name, cookie)
    display = Display(
        name=name,
        env=env,
        desktop=False,
        xtest_allowed=settings.xtest,
        walker=WalkerClient(settings.python, env, runtime / "walker.log"),
        x=XConn(name),
        runtime=runtime,
        home=home,
        children=children,
    )
    _remember(state_dir, display)
    log.info("display %s started (runtime %s)", name, runtime)
    return display


def desktop(settings: Settings, env: dict[str, str] | None = None) -> Display | None:
    """The user's own display, when the setting allows it and $DISPLAY names one."""
    env = dict(os.environ) if env is None else env
    name = env.get("DISPLAY", "")
    if not settings.desktop or not name:
        return None
    keep = (
        *PASSED,
        *("DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "HOME"),
        *("AT_SPI_BUS_ADDRESS", "XAUTHORITY"),
    )
    denv = {k: env[k] for k in keep if k in env}
    log_path = Path(tempfile.gettempdir()) / f"bay-desktop-walker-{os.getpid()}.log"
    return Display(
        name=name,
        env=denv,
        desktop=True,
        xtest_allowed=settings.xtest,
        walker=WalkerClient(settings.python, denv, log_path),
        x=XConn(name),
    )


# -- leftovers of a keeper that was killed ----------------------------------------------------


def _record(state_dir: Path) -> Path:
    return state_dir / "local-window" / "display.json"


def _remember(state_dir: Path, display: Display) -> None:
    path = _record(state_dir)
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        row: dict[str, Any] = {
            "display": display.name,
            "runtime": str(display.runtime),
            "pids": [p.pid for _w, p in display.children],
            "keeper": os.getpid(),
        }
        path.write_text(json.dumps(row))


def forget(state_dir: Path) -> None:
    with contextlib.suppress(OSError):
        _record(state_dir).unlink()


def sweep(state_dir: Path) -> list[int]:
    """A display recorded by a keeper that is gone: end what is left of it (setpriv's
    death signal normally did already) and remove its runtime directory."""
    path = _record(state_dir)
    try:
        row = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    if int(row.get("keeper", 0)) == os.getpid():
        return []
    runtime = str(row.get("runtime", ""))
    ended = []
    for pid in row.get("pids", []):
        argv = procfs.argv(int(pid))
        if argv and Path(argv[0]).name in OURS:
            with contextlib.suppress(OSError):
                os.kill(int(pid), 15)
                ended.append(int(pid))
    if "/bay-x-" in runtime:
        shutil.rmtree(runtime, ignore_errors=True)
    forget(state_dir)
    return ended
