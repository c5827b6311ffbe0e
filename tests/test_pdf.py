"""``bay pdf <file>`` on a real page served here, through the real keeper and CLI: a valid PDF
of the page, written by the caller's own client (the keeper never opens the path)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from browserbay_testing import Bay, assert_refused
from tests.test_emulation import Site


@pytest.fixture(scope="module")
def page_site() -> Iterator[Site]:
    server = Site()
    yield server
    server.shutdown()


def _pages(pdf: bytes) -> int:
    """The PDF's page objects (Chromium's text is in CID fonts: not extractable simply)."""
    return len(re.findall(rb"/Type\s*/Page(?![s\w])", pdf))


def test_pdf_writes_a_valid_pdf_of_the_page_at_the_callers_path(
    bay: Bay, page_site: Site, tmp_path: Path
) -> None:
    s = "pdf-page"
    bay.ok("open", page_site.url, session=s)
    dest = tmp_path / "out" / "report.pdf"
    dest.parent.mkdir()
    got = bay.ok("pdf", str(dest), session=s)
    assert got["path"] == str(dest)
    pdf = dest.read_bytes()
    assert pdf.startswith(b"%PDF-")
    assert got["bytes"] == len(pdf)
    assert _pages(pdf) >= 1
    assert os.stat(dest).st_mode & 0o777 == 0o600
    bay.ok("close", session=s)


def test_pdf_to_a_path_the_caller_cannot_write_is_refused_before_anything(
    bay: Bay, tmp_path: Path
) -> None:
    s = "pdf-unwritable"
    bay.ok("open", "about:blank", session=s)
    r = bay("pdf", str(tmp_path / "no" / "such" / "dir" / "x.pdf"), session=s)
    assert_refused(r, "file_unwritable")
    bay.ok("close", session=s)
