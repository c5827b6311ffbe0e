"""``bay doctor`` rows of the chromium provider: which browser it would launch, that the
binary runs (``--version``, bounded), and whether its renderer sandbox is on."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping

from browserbay import sandbox
from browserbay.model import DoctorCheck
from browserbay_chromium.find import NotFound, find_chromium

#: How long ``chromium --version`` may take.
VERSION_TIMEOUT_S = 15.0


def browser_checks(env: Mapping[str, str] | None = None) -> list[DoctorCheck]:
    return [*_binary_checks(env), sandbox.doctor_check()]


def _binary_checks(env: Mapping[str, str] | None) -> list[DoctorCheck]:
    try:
        path = find_chromium(env)
    except NotFound as exc:
        return [DoctorCheck("browser", "chromium", "fail", exc.reason, exc.fix)]
    fix = f"run {path} --version to see why, or point BAY_CHROMIUM_PATH at another Chromium"
    try:
        done = subprocess.run(
            [str(path), "--version"],
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return [
            DoctorCheck(
                "browser",
                "chromium",
                "fail",
                f"{path} --version hung past {VERSION_TIMEOUT_S:g}s",
                fix,
            )
        ]
    except OSError as exc:
        return [DoctorCheck("browser", "chromium", "fail", f"{path} cannot run: {exc}", fix)]
    version = done.stdout.strip().splitlines()[0] if done.stdout.strip() else ""
    if done.returncode != 0 or not version:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return [
            DoctorCheck(
                "browser",
                "chromium",
                "fail",
                f"{path} --version exited {done.returncode}: {last}",
                fix,
            )
        ]
    return [DoctorCheck("browser", "chromium", "ok", f"{version} · {path}")]
