"""CloakBrowser's documented contract, written down from its wrapper (PyPI ``cloakbrowser``
0.6.4, ``cloakbrowser/config.py``, ``download.py`` and ``license.py``) instead of imported.

Why not import it: ``cloakbrowser`` 0.6.4 imports private Playwright modules and fails to
import with Playwright 1.65 (``No module named 'playwright._impl._js_handle'``). Importing it
would pin the whole framework's Playwright to what the wrapper supports. What the keeper
needs from it is small and stable — a binary path, a few switches, the licence exit codes,
a signed checksum list — so it is restated here, each value naming where it comes from.
See docs/tiers.md ("CloakBrowser without its wrapper").
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path

#: The wrapper release this contract was read from.
WRAPPER_VERSION = "0.6.4"

#: ``PLATFORM_CHROMIUM_VERSIONS`` of that release: the free build per platform. A pinned
#: version is part of the control (an unpinned auto-download invalidates what was measured);
#: ``CLOAKBROWSER_VERSION`` overrides it, as it does for the wrapper.
PINNED_VERSIONS: Mapping[str, str] = {
    "linux-x64": "146.0.7680.177.5",
    "linux-arm64": "146.0.7680.177.3",
    "darwin-arm64": "145.0.7632.109.2",
    "darwin-x64": "145.0.7632.109.2",
    "windows-x64": "146.0.7680.177.5",
}

#: ``SUPPORTED_PLATFORMS``: (system, machine) -> platform tag.
PLATFORM_TAGS: Mapping[tuple[str, str], str] = {
    ("Linux", "x86_64"): "linux-x64",
    ("Linux", "aarch64"): "linux-arm64",
    ("Darwin", "arm64"): "darwin-arm64",
    ("Darwin", "x86_64"): "darwin-x64",
    ("Windows", "AMD64"): "windows-x64",
    ("Windows", "x86_64"): "windows-x64",
}

#: ``BINARY_SIGNING_PUBKEYS``: base64 raw Ed25519 public keys that sign ``SHA256SUMS``.
SIGNING_KEYS: tuple[str, ...] = ("MKFKwIhUcKWq5xTuNA0Ovg99njcDEcEJvmWYYhApvaU=",)

#: ``DOWNLOAD_BASE_URL`` (overridden by ``CLOAKBROWSER_DOWNLOAD_URL``: a self-hosted mirror).
DOWNLOAD_URL = "https://cloakbrowser.dev"

#: ``IGNORE_DEFAULT_ARGS``: Playwright defaults that leak automation (navigator.webdriver,
#: a SwiftShader renderer string no real browser has).
IGNORE_DEFAULT_ARGS: tuple[str, ...] = ("--enable-automation", "--enable-unsafe-swiftshader")

#: ``SEED_MIN, SEED_MAX``: the fingerprint seed is a decimal in this range.
SEED_MIN, SEED_MAX = 10000, 99999

#: Environment variables the binary or the wrapper read (``FACTS.md``, ``config.py``).
LICENSE_ENV = "CLOAKBROWSER_LICENSE_KEY"
BINARY_ENV = "CLOAKBROWSER_BINARY_PATH"
CACHE_ENV = "CLOAKBROWSER_CACHE_DIR"
DOWNLOAD_ENV = "CLOAKBROWSER_DOWNLOAD_URL"
VERSION_ENV = "CLOAKBROWSER_VERSION"
#: ``LICENSE_STATUS_FILE_ENV``: where the Pro binary writes its licence exit code when it
#: denies a licence after the CDP handshake (the exit code then never reaches a launch error).
STATUS_FILE_ENV = "CLOAKBROWSER_LICENSE_STATUS_FILE"


def mint_seed() -> str:
    """A fresh fingerprint seed, minted once per profile (``secrets``, not ``random``)."""
    return str(SEED_MIN + secrets.randbelow(SEED_MAX - SEED_MIN + 1))


def valid_seed(value: str) -> bool:
    return value.isascii() and value.isdigit() and SEED_MIN <= int(value) <= SEED_MAX


def default_fingerprint_platform() -> str:
    """``get_default_stealth_args``: a Mac runs as a native Mac browser (``macos``); Linux and
    Windows present a Windows fingerprint (``windows``)."""
    import platform  # at first use: not with every keeper's plugins

    return "macos" if platform.system() == "Darwin" else "windows"


def fingerprint_args(seed: str, fingerprint_platform: str) -> list[str]:
    """The switches that turn the binary's fingerprint patches on for one identity."""
    return [f"--fingerprint={seed}", f"--fingerprint-platform={fingerprint_platform}"]


def platform_tag() -> str | None:
    import platform

    return PLATFORM_TAGS.get((platform.system(), platform.machine()))


def pinned_version(env: Mapping[str, str] | None = None) -> str | None:
    env = os.environ if env is None else env
    explicit = env.get(VERSION_ENV, "").strip()
    if explicit:
        return explicit
    tag = platform_tag()
    return PINNED_VERSIONS.get(tag) if tag else None


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """``get_cache_dir``: ``CLOAKBROWSER_CACHE_DIR``, else ``~/.cloakbrowser``."""
    env = os.environ if env is None else env
    custom = env.get(CACHE_ENV, "")
    return Path(custom) if custom else Path.home() / ".cloakbrowser"


def binary_relpath() -> Path:
    """``get_binary_path`` below a version's directory."""
    import platform

    system = platform.system()
    if system == "Darwin":
        return Path("Chromium.app/Contents/MacOS/Chromium")
    return Path("chrome.exe" if system == "Windows" else "chrome")


def version_dir(version: str, env: Mapping[str, str] | None = None, pro: bool = False) -> Path:
    """``get_binary_dir``: ``<cache>/chromium-<version>[-pro]``."""
    return cache_dir(env) / f"chromium-{version}{'-pro' if pro else ''}"


def archive_name(tag: str) -> str:
    """``get_archive_name``."""
    return f"cloakbrowser-{tag}{'.zip' if tag.startswith('windows') else '.tar.gz'}"


def release_base(version: str, env: Mapping[str, str] | None = None) -> str:
    """``get_download_url`` without the file: ``<base>/chromium-v<version>``."""
    env = os.environ if env is None else env
    base = env.get(DOWNLOAD_ENV, "").rstrip("/") or DOWNLOAD_URL
    return f"{base}/chromium-v{version}"
