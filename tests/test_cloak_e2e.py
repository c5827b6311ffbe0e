"""The cloak provider end to end, through the real `bay`, keeper and Playwright.

CloakBrowser's own binary cannot be downloaded here, so the browser is a STAND-IN: Debian's
Chromium (/usr/lib/chromium/chromium) named by ``CLOAKBROWSER_BINARY_PATH``. Stock Chromium
ignores the fingerprint switches, so what these tests prove is what the keeper hands the
binary — its argv (the profile's stable seed and platform, no automation default) and its
environment (the licence key, and nowhere else) — not the fingerprint itself.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from browserbay_testing import BAY, Bay, assert_refused

STAND_IN = "/usr/lib/chromium/chromium"
KEY = "cb_standin_licence_0123456789"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(STAND_IN).exists(), reason="the stand-in Chromium is missing"),
]


@pytest.fixture
def home() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="bay-c-", dir="/tmp"))
    yield path
    subprocess.run(
        [BAY, "keeper", "stop"], env={"BAY_HOME": str(path)}, capture_output=True, timeout=60
    )
    shutil.rmtree(path, ignore_errors=True)


def _bay(home: Path, **env: str) -> Bay:
    base = {
        "CLOAKBROWSER_BINARY_PATH": STAND_IN,  # the stand-in for CloakBrowser's binary
        "CLOAKBROWSER_CACHE_DIR": str(home / "no-cloak-cache"),
        "BAY_INTEGRATION_CLOAK_LICENSE_KEY": KEY,  # a cluster default (the keys-env source)
        "BAY_BROWSER_GRACE": "0",
        "DBUS_SESSION_BUS_ADDRESS": f"unix:path={home}/no-bus",
    }
    return Bay(home, **{**base, **env})


def _argv(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")


def _environ(pid: int) -> list[bytes]:
    return Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")


def _browser_of(b: Bay, profile: str) -> dict[str, object]:
    browsers = b.ok("keeper", "status")["browsers"]
    (found,) = [x for x in browsers if x["profile"] == profile]
    return found


def _seed_in(argv: list[str]) -> str:
    (seed,) = [a.split("=", 1)[1] for a in argv if a.startswith("--fingerprint=")]
    return seed


def _stored_options(home: Path, profile: str) -> dict[str, str]:
    db = sqlite3.connect(home / "state" / "registry.sqlite3")
    try:
        (row,) = db.execute("SELECT options FROM profiles WHERE id=?", (profile,)).fetchall()
    finally:
        db.close()
    options = json.loads(row[0])
    assert isinstance(options, dict)
    return options


def _wait_stopped(b: Bay, profile: str) -> None:
    """Until the profile's browser is gone (a condition, not a sleep of a guessed length)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if not [x for x in b.ok("keeper", "status")["browsers"] if x["profile"] == profile]:
            return
        time.sleep(0.2)
    raise AssertionError(f"the browser of {profile} did not stop")


def test_a_cloak_profile_launches_the_stand_in_with_its_own_stable_seed(
    home: Path, demo: str
) -> None:
    b = _bay(home)
    work = b.ok("new", "work", "--provider", "cloak")
    assert work["provider"] == "cloak"
    assert work["tier"] == 2
    assert sorted(work["options"]) == ["platform", "seed"]
    b.ok("use", work["id"])
    page = b.ok("open", f"{demo}/form.html")
    assert page["url"].endswith("/form.html")
    assert page["status"] == 200

    stored = _stored_options(home, work["id"])
    pid = int(_browser_of(b, work["id"])["pid"])  # type: ignore[call-overload]
    argv = _argv(pid)
    assert argv[0] == STAND_IN
    assert _seed_in(argv) == stored["seed"]
    assert f"--fingerprint-platform={stored['platform']}" in argv
    assert "--enable-automation" not in argv
    assert "--enable-unsafe-swiftshader" not in argv
    # The licence key: in this browser's environment, under the vendor's name; never argv.
    assert f"CLOAKBROWSER_LICENSE_KEY={KEY}".encode() in _environ(pid)
    assert not [a for a in argv if KEY in a]
    assert not [e for e in _environ(pid) if e.startswith(b"BAY_INTEGRATION_")]
    keeper_pid = int(b.ok("keeper", "status")["pid"])
    assert KEY.encode() not in Path(f"/proc/{keeper_pid}/cmdline").read_bytes()
    assert KEY not in (home / "logs").joinpath("keeper.log").read_text(errors="replace")

    # The browser restarts: the same seed.
    b.ok("close")
    _wait_stopped(b, work["id"])
    b.ok("use", work["id"])
    b.ok("open", f"{demo}/form.html")
    again = int(_browser_of(b, work["id"])["pid"])  # type: ignore[call-overload]
    assert again != pid
    assert _seed_in(_argv(again)) == stored["seed"]

    # The keeper restarts: the same seed.
    b.stop()
    b.ok("use", work["id"])
    b.ok("open", f"{demo}/form.html")
    third = int(_browser_of(b, work["id"])["pid"])  # type: ignore[call-overload]
    assert _seed_in(_argv(third)) == stored["seed"]
    assert _stored_options(home, work["id"]) == stored  # never re-minted

    # Another profile: another seed (negative control for "stable").
    play = b.ok("new", "play", "--provider", "cloak")
    b.ok("use", play["id"], session="b")
    b.ok("open", f"{demo}/form.html", session="b")
    other = int(_browser_of(b, play["id"])["pid"])  # type: ignore[call-overload]
    assert _seed_in(_argv(other)) == _stored_options(home, play["id"])["seed"]
    assert _seed_in(_argv(other)) != stored["seed"]


def test_a_chromium_profile_gets_no_fingerprint_and_keeps_playwrights_defaults(
    home: Path, demo: str
) -> None:
    """Negative control: the switches above come from the cloak row, not from every launch."""
    b = _bay(home)
    plain = b.ok("new", "plain")
    b.ok("use", plain["id"])
    b.ok("open", f"{demo}/form.html")
    argv = _argv(int(_browser_of(b, plain["id"])["pid"]))  # type: ignore[call-overload]
    assert not [a for a in argv if a.startswith("--fingerprint")]
    # Playwright's default that the cloak row removes (1.65 no longer adds --enable-automation
    # to a launch; the row removes it too, for the versions that do).
    assert "--enable-unsafe-swiftshader" in argv
    assert plain["options"] == []


def test_without_a_binary_it_is_backend_unavailable_with_the_install_command(home: Path) -> None:
    b = _bay(home, CLOAKBROWSER_BINARY_PATH="")
    work = b.ok("new", "work", "--provider", "cloak")  # a profile can be made before installing
    b.ok("use", work["id"])
    frame = assert_refused(b("open", "about:blank"), "backend_unavailable")
    assert "no CloakBrowser binary" in frame["message"]
    assert frame["way_out"].startswith("bay provider install cloak")
    assert b.ok("keeper", "status")["browsers"] == []  # nothing was started
    providers = {p["id"]: p for p in b.ok("plugins")["providers"]}
    assert "bay provider install cloak" in providers["cloak"]["problem"]

    bad = _bay(home, CLOAKBROWSER_BINARY_PATH=str(home / "nothing-here"))
    bad.stop()  # the keeper reads the environment it was started with
    frame = assert_refused(bad("open", "about:blank"), "backend_unavailable")
    assert "is not an executable file" in frame["message"]


def test_bay_provider_install_cloak_fetches_only_when_asked_and_checks_it(
    home: Path, demo: str
) -> None:
    """Against a FAKE download host (the vendor's cannot be reached from here) serving a
    STAND-IN archive (a shell script, not a browser)."""
    from browserbay_cloak.contract import pinned_version
    from browserbay_testing.fakecloak import FakeCloakDownloads

    version = pinned_version({})
    if version is None:
        pytest.skip("CloakBrowser publishes no build for this platform")
    cache = home / "cloak-cache"
    with FakeCloakDownloads(version, wrong_checksum=True) as bad:
        b = _bay(
            home,
            CLOAKBROWSER_BINARY_PATH="",
            CLOAKBROWSER_CACHE_DIR=str(cache),
            CLOAKBROWSER_DOWNLOAD_URL=bad.url,
            BAY_CLOAK_MIRROR_KEYS=bad.public_key,
        )
        work = b.ok("new", "work", "--provider", "cloak")
        b.ok("use", work["id"])
        assert_refused(b("open", "about:blank"), "backend_unavailable")
        assert bad.requests == []  # nothing is downloaded unless the user asks
        frame = assert_refused(b("provider", "install", "cloak"), "install_failed")
        assert "SHA-256" in frame["message"]
        assert "nothing was installed" in frame["message"]
        assert not cache.exists() or list(cache.iterdir()) == []
        b.stop()
    with FakeCloakDownloads(version) as good:
        b = _bay(
            home,
            CLOAKBROWSER_BINARY_PATH="",
            CLOAKBROWSER_CACHE_DIR=str(cache),
            CLOAKBROWSER_DOWNLOAD_URL=good.url,
            BAY_CLOAK_MIRROR_KEYS=good.public_key,
        )
        r = b("provider", "install", "cloak", json_=False)
        assert r.code == 0, r
        assert "installed" in r.stdout
        assert "Ed25519 signature OK" in r.stdout
        assert "100%" in r.stderr  # the progress bar, on stderr while it ran
    binary = cache / f"chromium-{version}" / "chrome"
    assert binary.is_file()
    providers = {p["id"]: p for p in b.ok("plugins")["providers"]}
    assert providers["cloak"]["problem"] is None  # found in the vendor's cache now
    assert_refused(b("provider", "install", "chromium"), "usage")  # nothing to install


def _licence_stand_in(home: Path) -> tuple[Path, Path]:
    """A stand-in binary that answers like the Pro binary's licence check when ``deny`` holds
    an exit code (76 seat limit, 77 invalid key), and is Debian's Chromium otherwise."""
    deny = home / "deny"
    script = home / "cloak-stand-in.sh"
    script.write_text(
        f'#!/bin/sh\nif [ -e {deny} ]; then exit "$(cat {deny})"; fi\nexec {STAND_IN} "$@"\n'
    )
    script.chmod(0o755)
    return script, deny


def _cloak_profiles(b: Bay, *labels: str) -> list[str]:
    ids = []
    for n, label in enumerate(labels):
        pid = b.ok("new", label, "--provider", "cloak")["id"]
        b.ok("use", pid, session=f"s{n}")
        ids.append(pid)
    return ids


def test_licence_exit_codes_and_a_fresh_seat_total_refuse_by_name(home: Path, demo: str) -> None:
    script, deny = _licence_stand_in(home)
    b = _bay(home, CLOAKBROWSER_BINARY_PATH=str(script), BAY_INTEGRATION_CLOAK_LICENSE_KEY="")
    key = "cb_users_own_licence_0123456789"
    assert b.ok("keys", "set", "cloak", "license_key", stdin=key + "\n")["source"] == "user"
    first, second = _cloak_profiles(b, "first", "second")

    deny.write_text("77")
    frame = assert_refused(b("open", f"{demo}/", session="s0"), "backend_key_invalid")
    assert frame["data"]["source"] == "user"
    assert key not in json.dumps(frame)
    deny.unlink()
    b.ok("open", f"{demo}/", session="s0")  # one seat in use, by `first`

    deny.write_text("76")  # the binary: seat limit reached
    frame = assert_refused(b("open", f"{demo}/", session="s1"), "backend_seat_taken")
    assert frame["data"]["said_by"] == "the binary"
    assert frame["data"]["holders"] == [first]
    deny.unlink()
    # The total (1) is now known and fresh: the keeper's own count refuses before launching,
    # though the binary would start now.
    frame = assert_refused(b("open", f"{demo}/", session="s1"), "backend_seat_taken")
    assert frame["data"]["said_by"].startswith("the keeper's count")
    assert "1 used / 1 total" in frame["message"]
    assert first in frame["message"]
    assert [x["profile"] for x in b.ok("keeper", "status")["browsers"]] == [first]
    ledger = (home / "state" / "cloak" / "seats.json").read_text()
    assert key not in ledger

    b.ok("close", session="s0")  # frees the seat
    _wait_stopped(b, first)
    assert b.ok("open", f"{demo}/", session="s1")["status"] == 200  # under the total now
    assert second in [x["profile"] for x in b.ok("keeper", "status")["browsers"]]


def test_a_cluster_default_never_learns_a_total_so_never_refuses_by_count(
    home: Path, demo: str
) -> None:
    """Negative control: the same refusal from the binary under a cluster default (seats shared
    fleet-wide) leaves the total unknown, and an unknown total never refuses."""
    script, deny = _licence_stand_in(home)
    b = _bay(home, CLOAKBROWSER_BINARY_PATH=str(script))  # the cluster default key
    first, second = _cloak_profiles(b, "first", "second")
    b.ok("open", f"{demo}/", session="s0")
    deny.write_text("76")
    frame = assert_refused(b("open", f"{demo}/", session="s1"), "backend_seat_taken")
    assert "cluster default" in frame["message"]
    assert first not in frame["message"]  # it cannot know who holds the shared seats
    assert frame["way_out"].startswith("bay keys set cloak license_key")
    deny.unlink()
    assert b.ok("open", f"{demo}/", session="s1")["status"] == 200  # no ceiling from unknown
    running = {x["profile"] for x in b.ok("keeper", "status")["browsers"]}
    assert running == {first, second}


def test_an_ephemeral_session_on_cloak_gets_a_seed_for_its_one_launch(
    home: Path, demo: str
) -> None:
    b = _bay(home, BAY_DEFAULT_PROVIDER="cloak")
    assert b.ok("open", f"{demo}/form.html")["status"] == 200
    (browser,) = b.ok("keeper", "status")["browsers"]
    assert browser["provider"] == "cloak"
    assert browser["ephemeral"] is True
    argv = _argv(int(browser["pid"]))
    assert 10000 <= int(_seed_in(argv)) <= 99999
    assert "--enable-unsafe-swiftshader" not in argv
