"""``bay doctor``: prints :mod:`browserbay.doctor`'s rows. Never on the hot path; starts no
keeper. Exit 0 when no row fails, 1 when one does (the rows say what to run)."""

from __future__ import annotations

from browserbay.doctor import render, run_checks, worst
from browserbay.refusals import EXIT_OK, EXIT_REFUSED
from browserbay_cli.main import _emit_json, _local_frame


def run_doctor(as_json: bool) -> int:
    rows = run_checks()
    status = worst(rows)
    if as_json:
        data = {"worst": status, "checks": [r.as_row() for r in rows]}
        _emit_json(_local_frame("doctor", data), "doctor")
    else:
        print(render(rows))
    return EXIT_REFUSED if status == "fail" else EXIT_OK
