"""A test plugin for bay_doctor_checks: one row of its own, and a second hook object that
raises (BAY_DOCTOR_RAISE=1), which bay doctor must turn into a fail row naming it."""

from __future__ import annotations

import os

from browserbay.hookspecs import hookimpl
from browserbay.model import DoctorCheck


@hookimpl
def bay_doctor_checks() -> list[DoctorCheck]:
    if os.environ.get("BAY_DOCTOR_RAISE") == "1":
        raise RuntimeError("the probe exploded")
    return [DoctorCheck("gadgets", "sprocket", "warn", "sprocket is loose", "tighten-sprocket")]
