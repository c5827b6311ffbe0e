"""The version ladder of a backend switch: may this profile directory be opened by the
target backend's Chromium?

Chromium's profile stamp is one-way: a user-data-dir written by a newer major is refused (or
damaged) by an older one. So before a switch moves anything, the highest major known to
have written the directory — its own ``Last Version`` file (Chromium writes it at every
start) and the registry's record (the keeper writes it each time a browser starts on the
profile), whichever is higher — is compared with the target's major:

- nothing has written the directory yet: the switch goes ahead;
- target major ≥ written major: the switch goes ahead;
- target major < written major: refused ``backend_downgrade``, naming both (no flag
  overrides a known downgrade);
- the written major, or the target's, cannot be known (an adopted directory without a
  readable ``Last Version`` and no record; a provider that cannot tell its major): refused
  ``backend_version_unknown`` until a human confirms (``--confirm-version``).

:func:`decide` is pure (the matrix test drives it); :func:`read_dir_version` and
:func:`binary_major` touch the disk or run a process and are called in a worker thread.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

#: The file Chromium writes into a user-data-dir at every start: ``156.0.8078.108``.
LAST_VERSION = "Last Version"
#: Files that show a directory has been used by a Chromium (even without ``Last Version``).
WRITTEN_MARKERS = ("Local State", "Default")
VERSION_TIMEOUT = 10.0

_MAJOR = re.compile(r"(?<![\d.])(\d{2,4})\.\d+\.\d+\.\d+")

DirState = Literal["fresh", "read", "unreadable"]


def parse_major(text: str) -> int | None:
    """The major of the first ``N.N.N.N`` version in ``text`` (``Chromium 156.0.8078.108``,
    ``156.0.8078.108``), or None."""
    m = _MAJOR.search(text)
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class DirVersion:
    """What a profile directory says about the Chromium that last wrote it."""

    state: DirState
    """``fresh``: no Chromium has written it; ``read``: its ``Last Version`` was read;
    ``unreadable``: written by some Chromium, but no readable ``Last Version``."""
    major: int | None = None


def read_dir_version(directory: Path) -> DirVersion:
    """Read ``<dir>/Last Version`` (read-only). Blocking: call in a worker thread."""
    stamp = directory / LAST_VERSION
    try:
        text = stamp.read_text(encoding="utf-8", errors="replace")[:200]
    except FileNotFoundError:
        written = any((directory / m).exists() for m in WRITTEN_MARKERS)
        return DirVersion("unreadable" if written else "fresh")
    except OSError:
        return DirVersion("unreadable")
    major = parse_major(text)
    return DirVersion("read", major) if major is not None else DirVersion("unreadable")


def binary_major(path: str) -> int | None:
    """The Chromium major of a browser binary (``<binary> --version``), cached per binary
    file (path, size, mtime). Blocking: call in a worker thread."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return _binary_major(path, st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=32)
def _binary_major(path: str, _size: int, _mtime: int) -> int | None:
    env = {k: os.environ[k] for k in ("PATH", "LANG") if k in os.environ}
    try:
        out = subprocess.run(
            [path, "--version"],
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT,
            env=env,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_major(out.stdout) or parse_major(out.stderr)


@dataclass(frozen=True)
class Verdict:
    """The ladder's decision for one switch."""

    ok: bool
    code: Literal["backend_downgrade", "backend_version_unknown"] | None
    written: int | None
    """The highest major known to have written the directory (None: unknown or never)."""
    target: int | None
    evidence: str
    """Where ``written`` comes from, in words (``its Last Version 156 and the registry's
    record 151``)."""
    why: str
    """The decision in words (for the answer or the refusal)."""


def _evidence(found: DirVersion, recorded: int | None) -> str:
    parts = []
    if found.state == "read":
        parts.append(f"its Last Version says {found.major}")
    elif found.state == "unreadable":
        parts.append("its Last Version cannot be read")
    else:
        parts.append("no Chromium has written it yet")
    parts.append(
        f"the registry recorded {recorded}"
        if recorded is not None
        else "the registry has no record"
    )
    return "; ".join(parts)


def decide(found: DirVersion, recorded: int | None, target: int | None, confirmed: bool) -> Verdict:
    """Whether a directory last written as ``found``/``recorded`` may be opened by a
    browser of major ``target``. ``confirmed``: a human said go although a version is
    unknown (it never overrides a known downgrade)."""
    known = [m for m in (found.major, recorded) if m is not None]
    written = max(known) if known else None
    evidence = _evidence(found, recorded)
    if written is None and found.state == "fresh":
        return Verdict(True, None, None, target, evidence, "nothing has written the directory")
    if written is None:
        why = "which Chromium last wrote the directory is unknown"
    elif target is None:
        why = "the target cannot tell its Chromium version"
    elif target < written:
        return Verdict(
            False,
            "backend_downgrade",
            written,
            target,
            evidence,
            f"Chromium {written} wrote the directory and the target is {target}: an older "
            "Chromium cannot open it safely",
        )
    else:
        return Verdict(
            True, None, written, target, evidence, f"{target} ≥ {written}: an upgrade or the same"
        )
    if confirmed:
        why += "; confirmed by --confirm-version"
        return Verdict(True, None, written, target, evidence, why)
    return Verdict(False, "backend_version_unknown", written, target, evidence, why)
