"""``assert_refused`` is how a test says which refusal it produces: the census in
tests/test_refusal_census.py reads these calls."""

from __future__ import annotations

from typing import Any

from browserbay.refusals import CODES, Refusal, exit_code
from browserbay_testing.bay import Result


def assert_refused(result: Result | dict[str, Any] | Refusal, code: str) -> dict[str, Any]:
    """The result is the refusal ``code``, well formed, with the right exit status."""
    assert code in CODES, f"{code} is not in the refusal table"
    if isinstance(result, Refusal):
        frame = result.frame()
    elif isinstance(result, Result):
        frame = result.frame
        assert result.code == exit_code(code), (result.code, frame)
    else:
        frame = result
    assert frame["ok"] is False, frame
    assert frame["code"] == code, frame
    assert set(frame) >= {"ok", "code", "message", "way_out", "data"}, frame
    assert frame["message"], frame
    assert "{" not in frame["message"], frame
    assert frame["way_out"], frame
    return frame
