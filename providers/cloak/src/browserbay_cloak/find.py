"""Find the CloakBrowser binary without downloading anything: ``CLOAKBROWSER_BINARY_PATH``,
else the pinned version in the vendor's cache (``CLOAKBROWSER_CACHE_DIR`` or
``~/.cloakbrowser``, the layout its own wrapper uses, so either can install it)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from browserbay.refusals import Refusal
from browserbay_cloak import contract

INSTALL_FIX = (
    "bay provider install cloak   (downloads the pinned CloakBrowser build, ~217 MB, and checks "
    "its signature; add --timeout 1800 on a slow line), or set CLOAKBROWSER_BINARY_PATH to a "
    "CloakBrowser binary"
)


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def cached_binary(env: Mapping[str, str] | None = None) -> Path | None:
    version = contract.pinned_version(env)
    if version is None:
        return None
    for pro in (False, True):
        path = contract.version_dir(version, env, pro) / contract.binary_relpath()
        if _executable(path):
            return path
    return None


def find_binary(env: Mapping[str, str] | None = None) -> Path:
    """The binary to launch, or ``backend_unavailable`` naming what was tried and the fix."""
    env = os.environ if env is None else env
    explicit = env.get(contract.BINARY_ENV, "")
    if explicit:
        if _executable(Path(explicit)):
            return Path(explicit)
        raise Refusal(
            "backend_unavailable",
            provider="cloak",
            reason=f"{contract.BINARY_ENV}={explicit} is not an executable file",
            fix=f"point {contract.BINARY_ENV} at a CloakBrowser binary, or unset it",
        )
    found = cached_binary(env)
    if found is not None:
        return found
    version = contract.pinned_version(env) or "(none for this platform)"
    return _missing(version, contract.cache_dir(env))


def _missing(version: str, cache: Path) -> Path:
    raise Refusal(
        "backend_unavailable",
        provider="cloak",
        reason=f"no CloakBrowser binary: {contract.BINARY_ENV} is not set and version {version} "
        f"is not in {cache}",
        fix=INSTALL_FIX,
    )
