"""``bay provider install cloak``'s download, against a FAKE download host (the vendor's
cannot be reached from here) serving a STAND-IN archive: a verified build is installed where
the vendor's wrapper would put it; a wrong checksum or signature leaves nothing installed."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from browserbay.model import Installer
from browserbay.refusals import Refusal
from browserbay_cloak import contract
from browserbay_cloak.find import find_binary
from browserbay_cloak.install import MIRROR_KEYS_ENV, install, parse_checksums, verify_signature
from browserbay_testing import assert_refused
from browserbay_testing.fakecloak import FakeCloakDownloads

VERSION = "146.0.7680.177.5"


@pytest.fixture(autouse=True)
def _linux_x64(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(contract, "platform_tag", lambda: "linux-x64")


def _installer(lines: list[str], seconds: float = 60) -> Installer:
    return Installer(say=lines.append, deadline=time.monotonic() + seconds)


def _env(cache: Path, fake: FakeCloakDownloads, **more: str) -> dict[str, str]:
    return {
        contract.CACHE_ENV: str(cache),
        contract.DOWNLOAD_ENV: fake.url,
        contract.VERSION_ENV: VERSION,
        **more,
    }


def _left(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.iterdir()) if cache.exists() else []


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[Path]:
    return tmp_path / "cloak-cache"


def test_a_signed_and_checked_build_is_installed_with_progress(cache: Path) -> None:
    lines: list[str] = []
    with FakeCloakDownloads(VERSION) as fake:
        env = _env(cache, fake, **{MIRROR_KEYS_ENV: fake.public_key})
        said = install(_installer(lines), env)
    binary = cache / f"chromium-{VERSION}" / "chrome"
    assert str(binary) in said
    assert "Ed25519 signature OK" in said
    assert binary.is_file()
    assert os.access(binary, os.X_OK)
    assert find_binary({contract.CACHE_ENV: str(cache), contract.VERSION_ENV: VERSION}) == binary
    bars = [line for line in lines if line.startswith("[")]
    assert len(bars) >= 3
    assert bars[-1].startswith("[####################] 100%")
    assert any("SHA-256 OK" in line for line in lines)
    assert _left(cache) == [f"chromium-{VERSION}"]  # no download or staging left behind
    base = f"/chromium-v{VERSION}"
    assert fake.requests[:2] == [f"{base}/SHA256SUMS", f"{base}/SHA256SUMS.sig"]

    with FakeCloakDownloads(VERSION) as again:  # installed: nothing is fetched twice
        assert "already installed" in install(_installer([]), _env(cache, again))
        assert again.requests == []


@pytest.mark.parametrize(
    ("knob", "why"),
    [
        ({"wrong_checksum": True}, "SHA-256"),
        ({"wrong_signature": True}, "signature does not verify"),
        ({"unsigned": True}, "SHA256SUMS.sig is missing"),
        ({"manifest_version": "145.0.7632.109.2"}, "downgrade"),
    ],
)
def test_a_failed_check_leaves_nothing_installed(
    cache: Path, knob: dict[str, object], why: str
) -> None:
    with FakeCloakDownloads(VERSION, **knob) as fake:  # type: ignore[arg-type]
        env = _env(cache, fake, **{MIRROR_KEYS_ENV: fake.public_key})
        with pytest.raises(Refusal) as refused:
            install(_installer([]), env)
    frame = assert_refused(refused.value, "install_failed")
    assert why in frame["message"]
    assert "nothing was installed" in frame["message"]
    assert _left(cache) == []
    with pytest.raises(Refusal):
        find_binary({contract.CACHE_ENV: str(cache), contract.VERSION_ENV: VERSION})


def test_the_vendors_path_takes_only_the_pinned_key(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a mirror, a mirror key is not honoured: the fake's own signature (a valid one,
    by a key that is not the vendor's) is refused."""
    with FakeCloakDownloads(VERSION) as fake:
        monkeypatch.setattr(contract, "DOWNLOAD_URL", fake.url)
        env = {
            contract.CACHE_ENV: str(cache),
            contract.VERSION_ENV: VERSION,
            MIRROR_KEYS_ENV: fake.public_key,
        }
        with pytest.raises(Refusal) as refused:
            install(_installer([]), env)
    assert "signature does not verify" in refused.value.message
    assert _left(cache) == []


def test_a_mirror_without_a_key_is_checked_by_its_checksum_and_says_so(cache: Path) -> None:
    with FakeCloakDownloads(VERSION, unsigned=True) as fake:
        said = install(_installer([]), _env(cache, fake))
    assert "no signature" in said
    with (
        FakeCloakDownloads(VERSION, unsigned=True, wrong_checksum=True) as fake,
        pytest.raises(Refusal),
    ):
        install(_installer([]), _env(cache / "other", fake))
    assert _left(cache / "other") == []


def test_a_deadline_stops_the_download_and_leaves_nothing(cache: Path) -> None:
    with FakeCloakDownloads(VERSION) as fake:
        env = _env(cache, fake, **{MIRROR_KEYS_ENV: fake.public_key})
        with pytest.raises(Refusal) as refused:
            install(_installer([], seconds=-1), env)
    assert "deadline" in refused.value.message
    assert _left(cache) == []


def test_the_checks_themselves() -> None:
    with FakeCloakDownloads(VERSION) as fake:
        files = fake.files()
    manifest = files[f"/chromium-v{VERSION}/SHA256SUMS"]
    sig = files[f"/chromium-v{VERSION}/SHA256SUMS.sig"]
    verify_signature(manifest, sig, (fake.public_key,))
    verify_signature(manifest, sig, ("not base64 at all", fake.public_key))  # a bad key skipped
    with pytest.raises(Exception, match="does not verify"):
        verify_signature(manifest + b" ", sig, (fake.public_key,))  # one byte more
    with pytest.raises(Exception, match="does not verify"):
        verify_signature(manifest, sig, contract.SIGNING_KEYS)  # not the vendor's signature
    sums = parse_checksums(manifest.decode() + "\njunk line\nabc  short.tar.gz\n")
    assert list(sums) == ["cloakbrowser-linux-x64.tar.gz"]


def test_a_mirror_must_be_http(cache: Path) -> None:
    env = {contract.CACHE_ENV: str(cache), contract.DOWNLOAD_ENV: "file:///tmp/x"}
    with pytest.raises(Refusal) as refused:
        install(_installer([]), {**env, contract.VERSION_ENV: VERSION})
    assert "http(s) URL" in assert_refused(refused.value, "install_failed")["message"]
    assert _left(cache) == []
