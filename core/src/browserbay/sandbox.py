"""Chromium's renderer sandbox: the one decision every launch path of ours takes.

A Chromium-family browser runs its renderers (the processes that run a page's JavaScript)
inside a sandbox — on Linux a user/PID/network namespace plus seccomp-bpf, or the setuid
``chrome-sandbox`` helper where namespaces are off. It is what stands between a hostile page
that exploits a renderer bug and the user's files.

* Not root: the sandbox is **on**. Nothing of ours adds ``--no-sandbox``, and Playwright is
  told ``chromium_sandbox=True`` (without it Playwright adds ``--no-sandbox`` by itself, for
  every user). If the OS cannot give Chromium a sandbox (user namespaces disabled or blocked,
  no setuid helper), a launch is refused loudly (``backend_unavailable`` naming why), never
  retried without the sandbox.
* Root: Chromium refuses to start sandboxed, so ``--no-sandbox`` is passed, and ``bay
  doctor`` says so with its consequence and its fix (run the keeper as a non-root user).

The probe runs once per process (a short child process; call :func:`state` off the event
loop the first time).
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from browserbay.model import DoctorCheck
from browserbay.refusals import Refusal

#: CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET: what Chromium's namespace sandbox unshares.
_CLONE_FLAGS = 0x10000000 | 0x20000000 | 0x40000000
#: Run in a fresh single-threaded interpreter (unshare(CLONE_NEWUSER) fails in a threaded one).
_PROBE = (
    "import ctypes,os,sys\n"
    "libc=ctypes.CDLL(None,use_errno=True)\n"
    f"r=libc.unshare({_CLONE_FLAGS})\n"
    "sys.stdout.write('ok' if r==0 else os.strerror(ctypes.get_errno()))\n"
)
PROBE_TIMEOUT_S = 10.0
#: Knobs that switch unprivileged user namespaces off on some kernels (Debian's old patch,
#: Ubuntu's AppArmor restriction), with the value that means "off".
_SYSCTLS = (
    ("/proc/sys/kernel/unprivileged_userns_clone", "0"),
    ("/proc/sys/user/max_user_namespaces", "0"),
    ("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1"),
)
#: What running the keeper as root costs, said by ``bay doctor``.
ROOT_CONSEQUENCE = (
    "the keeper runs as root, so Chromium runs with --no-sandbox: a page that exploits a "
    "renderer bug runs as root, outside any sandbox"
)
ROOT_FIX = "run the keeper as a non-root user (bay keeper stop, then run bay as that user)"
UNAVAILABLE_FIX = (
    "enable unprivileged user namespaces (sysctl -w kernel.unprivileged_userns_clone=1 / "
    "user.max_user_namespaces=15000; in a container, allow unshare in its seccomp profile), "
    "or install Chromium's setuid chrome-sandbox helper"
)


@dataclass(frozen=True)
class SandboxState:
    sandboxed: bool
    """The browser runs with its renderer sandbox (no ``--no-sandbox``)."""
    usable: bool
    """A browser can be launched at all: False when not root and the OS gives no sandbox."""
    detail: str
    """How (``user namespaces``, ``setuid helper …``, ``root``) or why not."""


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _setuid_helper() -> Path | None:
    """Chromium's setuid sandbox helper, if one is installed and really setuid root."""
    named = os.environ.get("CHROME_DEVEL_SANDBOX", "")
    places = [Path(named)] if named else []
    places += [Path("/usr/lib/chromium/chrome-sandbox"), Path("/opt/google/chrome/chrome-sandbox")]
    for place in places:
        try:
            st = place.stat()
        except OSError:
            continue
        if st.st_uid == 0 and st.st_mode & 0o4000:
            return place
    return None


def _userns_refused() -> str | None:
    """Why this process cannot make the namespaces Chromium's sandbox needs, or None."""
    for knob, off in _SYSCTLS:
        try:
            value = Path(knob).read_text().strip()
        except OSError:
            continue
        if value == off:
            return f"{knob.removeprefix('/proc/sys/').replace('/', '.')} is {off}"
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the user-namespace probe could not run ({type(exc).__name__})"
    said = done.stdout.strip()
    if said == "ok":
        return None
    return f"unshare(CLONE_NEWUSER|CLONE_NEWPID|CLONE_NEWNET) fails: {said or 'no answer'}"


@functools.cache
def state() -> SandboxState:
    """What the sandbox can be on this machine, for this process's user (probed once)."""
    if not sys.platform.startswith("linux"):  # pragma: no cover - macOS/Windows
        return SandboxState(True, True, f"the {sys.platform} sandbox")
    if _is_root():
        return SandboxState(False, True, "root: Chromium refuses its sandbox as root")
    why = _userns_refused()
    if why is None:
        return SandboxState(True, True, "user namespaces + seccomp-bpf")
    helper = _setuid_helper()
    if helper is not None:
        return SandboxState(True, True, f"the setuid helper {helper} ({why})")
    return SandboxState(False, False, why)


def flags(provider: str) -> list[str]:
    """The sandbox switches of a launch: ``--no-sandbox`` as root, none otherwise; refused
    (``backend_unavailable``) when the OS gives a non-root user no sandbox at all."""
    now = state()
    if not now.usable:
        raise Refusal(
            "backend_unavailable",
            provider=provider,
            reason=f"Chromium's renderer sandbox cannot start for uid {os.geteuid()}: "
            f"{now.detail} (browserbay never runs a browser without it as a non-root user)",
            fix=UNAVAILABLE_FIX,
        )
    return [] if now.sandboxed else ["--no-sandbox"]


#: Playwright's launch keyword: always on, so the only ``--no-sandbox`` is the one
#: :func:`flags` decided (Playwright otherwise adds it for every user).
PLAYWRIGHT_OPTIONS: dict[str, bool] = {"chromium_sandbox": True}


def doctor_check() -> DoctorCheck:
    """The ``bay doctor`` row: on, off as root (with the consequence and the fix), or
    impossible here (with why and the fix)."""
    now = state()
    if now.sandboxed:
        return DoctorCheck("browser", "renderer sandbox", "ok", f"on ({now.detail})")
    if now.usable:
        return DoctorCheck("browser", "renderer sandbox", "warn", ROOT_CONSEQUENCE, ROOT_FIX)
    return DoctorCheck(
        "browser",
        "renderer sandbox",
        "fail",
        f"cannot start for uid {os.geteuid()}: {now.detail}; every Chromium launch is refused",
        UNAVAILABLE_FIX,
    )
