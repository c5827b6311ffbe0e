"""The pipe relay's reading of a CDP ``TargetFilter`` (what its emulated browser-level
auto-attach and discovery pass on): Chromium's default hides the browser and ``tab`` targets;
Puppeteer's filter keeps tabs and drops pages."""

from __future__ import annotations

import pytest

from browserbay_cdp.relay import kept

PUPPETEER = [{"type": "page", "exclude": True}, {}]


@pytest.mark.parametrize(
    ("filters", "kind", "expected"),
    [
        (None, "page", True),
        (None, "tab", False),
        (None, "browser", False),
        (None, "worker", True),
        (PUPPETEER, "tab", True),
        (PUPPETEER, "page", False),
        ([{}], "tab", True),
        ([], "page", False),
        ([{"type": "tab"}], "page", False),
    ],
)
def test_a_target_filter_keeps_what_chromium_would(
    filters: list[dict[str, object]] | None, kind: str, expected: bool
) -> None:
    assert kept(filters, kind) is expected
