"""``bay doctor``: :mod:`browserbay.doctor`'s rows as an answer. Never on the hot path; starts
no keeper. Exit 0 when no row fails, 1 when one does (the rows say what to run)."""

from __future__ import annotations

from typing import Any

from browserbay.doctor import render, run_checks, worst
from browserbay.refusals import EXIT_OK, EXIT_REFUSED


def run_doctor() -> tuple[dict[str, Any], str, int]:
    """The rows as ``--json`` data, as text, and the exit code."""
    rows = run_checks()
    status = worst(rows)
    data = {"worst": status, "checks": [r.as_row() for r in rows]}
    return data, render(rows), EXIT_REFUSED if status == "fail" else EXIT_OK
