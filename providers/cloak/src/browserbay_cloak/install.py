"""``bay provider install cloak``: the vendor's download, reimplemented from its documented
contract (``cloakbrowser/download.py`` 0.6.4) so the framework never imports the wrapper.

1. Fetch ``SHA256SUMS`` and its detached ``SHA256SUMS.sig`` from the release's origin.
2. Verify the Ed25519 signature over the manifest's raw bytes against the pinned vendor keys
   FIRST (plus, for a self-hosted mirror, the keys in ``BAY_CLOAK_MIRROR_KEYS``), then the
   manifest's ``version=`` line against the version asked for (no forced downgrade).
3. Download the archive (progress lines), verify its SHA-256 against the signed manifest.
4. Extract into a private staging directory, flatten, mark the binary executable, and
   rename it into ``<cache>/chromium-<version>`` only when all of that held.

Any failure removes the download and the staging directory: a failed check leaves nothing
installed. The vendor's own rule for a self-hosted mirror (``CLOAKBROWSER_DOWNLOAD_URL``)
is kept, minus its skip switch: without a mirror key, a mirror's same-origin checksum is
checked (mandatory here; ``CLOAKBROWSER_SKIP_CHECKSUM`` is not honoured), and the answer
says the signature was not checked.
"""

from __future__ import annotations

import base64
import hashlib
import os
import platform
import shutil
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
import uuid
import zipfile
from collections.abc import Mapping
from pathlib import Path

from browserbay.model import Installer
from browserbay.refusals import Refusal
from browserbay_cloak import contract

MIRROR_KEYS_ENV = "BAY_CLOAK_MIRROR_KEYS"
CHUNK = 256 * 1024
REQUEST_TIMEOUT = 30.0


class CheckFailed(Exception):
    """A signature, version or checksum check failed (the message says which)."""


def _refuse(reason: str, fix: str) -> Refusal:
    return Refusal("install_failed", verb="provider install", what="cloak", reason=reason, fix=fix)


# -- checks (pure) ------------------------------------------------------------------------


def verify_signature(manifest: bytes, sig_b64: bytes, keys: tuple[str, ...]) -> None:
    """Any of ``keys`` (base64 raw Ed25519 public keys) validates the detached signature."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        signature = base64.b64decode(sig_b64.strip(), validate=True)
    except ValueError:
        raise CheckFailed("SHA256SUMS.sig is not valid base64") from None
    for key in keys:
        try:
            public = Ed25519PublicKey.from_public_bytes(base64.b64decode(key))
            public.verify(signature, manifest)
        except Exception:  # noqa: S112 - a key that does not validate: try the next one
            continue
        return
    raise CheckFailed("the SHA256SUMS signature does not verify against any pinned key")


def manifest_version(text: str) -> str | None:
    for line in text.splitlines():
        if line.strip().startswith("version="):
            return line.strip()[len("version=") :].strip()
    return None


def parse_checksums(text: str) -> dict[str, str]:
    """``<64 hex>  <file>`` lines; anything else (``version=``, junk) is ignored."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.strip().split(None, 1)
        if len(parts) != 2:
            continue
        digest = parts[0].lower()
        if len(digest) == 64 and all(c in "0123456789abcdef" for c in digest):
            found[parts[1].lstrip("*")] = digest
    return found


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


# -- network --------------------------------------------------------------------------------


def _get(url: str) -> bytes | None:
    """A small file (the manifest, its signature); None when the origin has none (404)."""
    try:
        with urllib.request.urlopen(url, timeout=REQUEST_TIMEOUT) as r:  # noqa: S310 - http(s) only
            return bytes(r.read(1 << 20))
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise


def bar(done: int, total: int) -> str:
    mb = 1 << 20
    if total <= 0:
        return f"downloaded {done / mb:.0f} MB"
    pct = min(100, done * 100 // total)
    filled = pct // 5
    return f"[{'#' * filled}{'.' * (20 - filled)}] {pct:3d}% {done / mb:.1f}/{total / mb:.1f} MB"


def download(url: str, dest: Path, installer: Installer) -> None:
    with urllib.request.urlopen(url, timeout=REQUEST_TIMEOUT) as r, dest.open("wb") as out:  # noqa: S310
        total = int(r.headers.get("Content-Length") or 0)
        done, said = 0, -5
        installer.say(f"downloading {url}")
        while chunk := r.read(CHUNK):
            if time.monotonic() > installer.deadline:
                raise TimeoutError
            out.write(chunk)
            done += len(chunk)
            pct = done * 100 // total if total else done // (8 << 20) * 5
            if pct >= said + 5:
                said = pct
                installer.say(bar(done, total))
        if said < 100:
            installer.say(bar(done, total))


# -- install --------------------------------------------------------------------------------


def _extract(archive: Path, staging: Path) -> None:
    # Only a verified archive gets here. zipfile drops absolute and ``..`` parts itself;
    # tar's "data" filter refuses them and links out of the tree (macOS .app bundles need
    # their own links, as the vendor's wrapper notes).
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as z:
            z.extractall(staging)  # noqa: S202
    else:
        with tarfile.open(archive, "r:gz") as t:
            if platform.system() == "Darwin":
                t.extractall(staging, filter="fully_trusted")  # noqa: S202
            else:
                t.extractall(staging, filter="data")
    entries = list(staging.iterdir())
    if len(entries) == 1 and entries[0].is_dir() and not entries[0].name.endswith(".app"):
        inner = entries[0]
        for item in inner.iterdir():
            shutil.move(str(item), str(staging / item.name))
        inner.rmdir()


def install(installer: Installer, env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    tag, version = contract.platform_tag(), contract.pinned_version(env)
    if tag is None or version is None:
        raise _refuse(
            f"CloakBrowser publishes no build for {platform.system()} {platform.machine()}",
            f"set {contract.BINARY_ENV} to a CloakBrowser binary you built or obtained",
        )
    target = contract.version_dir(version, env)
    binary = target / contract.binary_relpath()
    if binary.is_file() and os.access(binary, os.X_OK):
        return f"CloakBrowser {version} is already installed: {binary}"
    base, name = contract.release_base(version, env), contract.archive_name(tag)
    if not base.startswith(("https://", "http://")):
        raise _refuse(
            f"{contract.DOWNLOAD_ENV} must be an http(s) URL, not {base.split('/chromium-v')[0]!r}",
            f"set {contract.DOWNLOAD_ENV} to your mirror's https:// URL, or unset it",
        )
    mirror = bool(env.get(contract.DOWNLOAD_ENV))
    mirror_keys = tuple(k.strip() for k in env.get(MIRROR_KEYS_ENV, "").split(",") if k.strip())
    keys = contract.SIGNING_KEYS + (mirror_keys if mirror else ())
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{name}.", dir=target.parent)
    os.close(fd)
    archive = Path(tmp_name)
    staging = target.with_name(f"{target.name}.partial-{uuid.uuid4().hex}")
    try:
        checked = _verified_manifest(base, version, keys, signed=not mirror or bool(mirror_keys))
        expected = parse_checksums(checked.text).get(name)
        if expected is None:
            raise CheckFailed(f"SHA256SUMS has no entry for {name}")
        download(f"{base}/{name}", archive, installer)
        actual = sha256_of(archive)
        if actual != expected:
            raise CheckFailed(f"the SHA-256 of {name} is {actual}, SHA256SUMS says {expected}")
        installer.say(f"checked: {checked.how}, SHA-256 OK; extracting")
        staging.mkdir(mode=0o700)
        _extract(archive, staging)
        staged = staging / contract.binary_relpath()
        if not staged.is_file():
            raise CheckFailed(f"the archive holds no {contract.binary_relpath()}")
        staged.chmod(staged.stat().st_mode | 0o111)
        if target.exists():  # an incomplete earlier install (no binary in it): replaced
            shutil.rmtree(target)
        staging.rename(target)
    except CheckFailed as exc:
        raise _refuse(
            f"{exc}; nothing was installed",
            "run it again later; if it fails again, report it to the vendor (never install an "
            "unverified build)",
        ) from None
    except TimeoutError:
        raise _refuse(
            "the download did not finish before the deadline; nothing was installed",
            "bay provider install cloak --timeout 3600",
        ) from None
    except (OSError, urllib.error.URLError, tarfile.TarError, zipfile.BadZipFile) as exc:
        raise _refuse(
            f"{type(exc).__name__}: {exc}; nothing was installed",
            f"check this machine can reach {base.split('/chromium-v')[0]} (or set "
            f"{contract.DOWNLOAD_ENV} to a mirror), then run it again",
        ) from None
    finally:
        archive.unlink(missing_ok=True)
        shutil.rmtree(staging, ignore_errors=True)
    return f"CloakBrowser {version} installed: {target / contract.binary_relpath()} ({checked.how})"


class _Manifest:
    def __init__(self, text: str, how: str):
        self.text = text
        self.how = how


def _verified_manifest(base: str, version: str, keys: tuple[str, ...], signed: bool) -> _Manifest:
    manifest = _get(f"{base}/SHA256SUMS")
    if manifest is None:
        raise CheckFailed(f"{base}/SHA256SUMS is missing: the build cannot be verified")
    if not signed:
        return _Manifest(
            manifest.decode("utf-8", "replace"),
            f"a self-hosted mirror's checksum (no signature: set {MIRROR_KEYS_ENV} to check one)",
        )
    sig = _get(f"{base}/SHA256SUMS.sig")
    if sig is None:
        raise CheckFailed(f"{base}/SHA256SUMS.sig is missing: the build cannot be verified")
    verify_signature(manifest, sig, keys)
    text = manifest.decode("utf-8", "replace")
    declared = manifest_version(text)
    if declared != version:
        raise CheckFailed(
            f"the signed SHA256SUMS is for version {declared or 'none'}, not {version} (a "
            "downgrade?)"
        )
    return _Manifest(text, "Ed25519 signature OK")
