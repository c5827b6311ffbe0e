"""The version ladder of a backend switch, as a matrix: what wrote the directory (its own
``Last Version``, the registry's record), the target's major, a human's confirmation → the
decision. Pure rows first, then the readers against real files and the real Chromium
binary. Fast: no keeper, no browser session."""

from __future__ import annotations

from pathlib import Path

import pytest

from browserbay.ladder import (
    DirVersion,
    binary_major,
    decide,
    parse_major,
    read_dir_version,
)

FRESH = DirVersion("fresh")
UNREADABLE = DirVersion("unreadable")


def read(major: int) -> DirVersion:
    return DirVersion("read", major)


# (directory, registry record, target major, confirmed) -> (ok, code, written)
MATRIX = [
    # nothing has written the directory: any target, even one that cannot tell its major
    (FRESH, None, 156, False, True, None, None),
    (FRESH, None, None, False, True, None, None),
    # the same major, an upgrade
    (read(156), None, 156, False, True, None, 156),
    (read(146), None, 156, False, True, None, 146),
    (read(146), 146, 151, False, True, None, 146),
    # a downgrade, by the directory's own stamp
    (read(156), None, 146, False, False, "backend_downgrade", 156),
    # a downgrade, by the registry's record only (the stamp says less, or is unreadable)
    (read(146), 156, 151, False, False, "backend_downgrade", 156),
    (UNREADABLE, 156, 146, False, False, "backend_downgrade", 156),
    # the higher of the two wins in both directions
    (read(156), 146, 151, False, False, "backend_downgrade", 156),
    (read(151), 146, 151, False, True, None, 151),
    # a confirmation never overrides a known downgrade
    (read(156), None, 146, True, False, "backend_downgrade", 156),
    (read(146), 156, 151, True, False, "backend_downgrade", 156),
    # unknown: written by some Chromium, no readable stamp, no record
    (UNREADABLE, None, 156, False, False, "backend_version_unknown", None),
    (UNREADABLE, None, 156, True, True, None, None),
    (UNREADABLE, None, None, True, True, None, None),
    # unknown: the target cannot tell its major
    (read(146), None, None, False, False, "backend_version_unknown", 146),
    (UNREADABLE, 146, None, False, False, "backend_version_unknown", 146),
    (read(146), None, None, True, True, None, 146),
    # a record alone decides when the directory lost its stamp
    (UNREADABLE, 146, 156, False, True, None, 146),
    (FRESH, 146, 156, False, True, None, 146),
    (FRESH, 156, 146, False, False, "backend_downgrade", 156),
]


@pytest.mark.parametrize(
    ("found", "recorded", "target", "confirmed", "ok", "code", "written"), MATRIX
)
def test_the_ladder_matrix(
    found: DirVersion,
    recorded: int | None,
    target: int | None,
    confirmed: bool,
    ok: bool,
    code: str | None,
    written: int | None,
) -> None:
    verdict = decide(found, recorded, target, confirmed)
    assert (verdict.ok, verdict.code, verdict.written) == (ok, code, written)
    assert verdict.target == target
    assert verdict.why
    assert verdict.evidence
    if code == "backend_downgrade":
        assert str(written) in verdict.why
        assert str(target) in verdict.why


def test_the_matrix_has_negative_controls_for_every_outcome() -> None:
    """Each outcome appears both refused and allowed by changing one input: the rows are
    not all one answer."""
    outcomes = {(row[4], row[5]) for row in MATRIX}
    assert outcomes == {
        (True, None),
        (False, "backend_downgrade"),
        (False, "backend_version_unknown"),
    }
    # Flip only the target: the same directory is a downgrade below and an upgrade above.
    assert not decide(read(151), None, 150, False).ok
    assert decide(read(151), None, 151, False).ok
    # Flip only the confirmation: unknown is refused, then allowed.
    assert not decide(UNREADABLE, None, 156, False).ok
    assert decide(UNREADABLE, None, 156, True).ok


@pytest.mark.parametrize(
    ("text", "major"),
    [
        ("156.0.8078.108", 156),
        ("156.0.8078.108\n", 156),
        ("Chromium 156.0.8078.108 built on Debian GNU/Linux 12 (bookworm)", 156),
        ("Google Chrome 151.0.7000.1 ", 151),
        ("999.0.0.0", 999),
        ("", None),
        ("garbage", None),
        ("156", None),
        ("1.2.3", None),
        ("v8 12.3.4.5.6.7", 12),
        ("chromium-146.0.7680.177.5", 146),
        ("chromium-146.0.7680.177.5-pro", 146),
    ],
)
def test_parse_major(text: str, major: int | None) -> None:
    assert parse_major(text) == major


def test_read_dir_version_from_real_files(tmp_path: Path) -> None:
    assert read_dir_version(tmp_path) == FRESH
    assert read_dir_version(tmp_path / "missing") == FRESH
    (tmp_path / "Local State").write_text("{}")
    assert read_dir_version(tmp_path) == UNREADABLE  # used by a Chromium, no stamp
    (tmp_path / "Last Version").write_text("not a version")
    assert read_dir_version(tmp_path) == UNREADABLE
    (tmp_path / "Last Version").write_text("151.0.7000.1")
    assert read_dir_version(tmp_path) == read(151)
    other = tmp_path / "d"
    (other / "Default").mkdir(parents=True)
    assert read_dir_version(other) == UNREADABLE


def test_binary_major_of_the_real_chromium_and_of_a_non_browser(tmp_path: Path) -> None:
    major = binary_major("/usr/lib/chromium/chromium")
    assert isinstance(major, int)
    assert major >= 100
    assert binary_major(str(tmp_path / "nothing")) is None
    script = tmp_path / "fake-browser"
    script.write_text("#!/bin/sh\necho 'Not a browser'\n")
    script.chmod(0o700)
    assert binary_major(str(script)) is None  # negative control: no version printed
    script.write_text("#!/bin/sh\necho 'Chromium 146.0.7000.1'\n")
    assert binary_major(str(script)) == 146  # the cache follows the file's size and mtime
