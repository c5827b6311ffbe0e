"""The session-scoped endpoint for every CDP provider, driven by the clients agents use:
Puppeteer (``puppeteer-core`` from npm, installed by these tests into a cache directory of
their own: never a dependency of browserbay), Playwright's ``connect_over_cdp`` and a raw CDP
client. On each provider a session lists, creates, drives and closes its own tabs through
``bay cdp-url``, and a second session's tab on the same browser is neither listed nor
attachable (its ``tab`` target nor its ``page`` target)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import sync_playwright

from browserbay_testing import Bay, assert_refused
from browserbay_testing.cdp import Raw, refusal

HERE = Path(__file__).parent / "node"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "browserbay-tests"


@pytest.fixture(scope="session")
def puppeteer() -> Path:
    """A directory holding ``node_modules/puppeteer-core`` (the version ``node/package.json``
    pins) and the tests' script; skips only when node or npm is missing or npm's registry
    does not answer."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the Puppeteer client")
    pinned = json.loads((HERE / "package.json").read_text())["dependencies"]["puppeteer-core"]
    where = CACHE / f"puppeteer-core-{pinned}"
    where.mkdir(parents=True, exist_ok=True)
    with (CACHE / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (where / "node_modules" / "puppeteer-core" / "package.json").exists():
            shutil.copy(HERE / "package.json", where / "package.json")
            done = subprocess.run(
                ["npm", "install", "--no-audit", "--no-fund", "--ignore-scripts"],
                cwd=where,
                capture_output=True,
                text=True,
                timeout=300,
            )
            if done.returncode != 0:
                pytest.skip(f"npm install puppeteer-core failed: {done.stderr[-300:]}")
    shutil.copy(HERE / "drive.mjs", where / "drive.mjs")
    return where


def drive(puppeteer: Path, url: str, page: str, theirs: str) -> dict[str, Any]:
    """The Puppeteer script against ``url``: what it saw and did."""
    done = subprocess.run(
        ["node", "drive.mjs", url, page, theirs],
        cwd=puppeteer,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return seen


def tab_targets(raw: Raw) -> list[dict[str, Any]]:
    """Every target the endpoint lists when asked for all of them (``tab`` ones too)."""
    answer = raw.call("Target.getTargets", {"filter": [{}]})
    infos: list[dict[str, Any]] = answer["result"]["targetInfos"]
    return infos


def check_endpoint(bay: Bay, puppeteer: Path, demo: str, mine: str, other: str) -> None:
    """The contract on one provider: ``mine`` and ``other`` are two sessions with a tab each
    on the same browser (``mine`` on ``/``, ``other`` on ``/form.html``)."""
    got = bay.ok("cdp-url", session=mine)
    theirs = bay.ok("cdp-url", session=other)
    seen = drive(puppeteer, got["url"], f"{demo}/shop.html", f"{demo}/form.html")
    assert seen["before"] == [f"{demo}/"], seen
    assert not seen["sawTheirs"], seen
    assert seen["title"] == "Shop"
    assert seen["status"] == "Order placed: 1 kettle"
    assert seen["during"] == [f"{demo}/", f"{demo}/shop.html"]
    assert seen["after"] == [f"{demo}/"]
    assert [t["url"] for t in bay.ok("tab", "list", session=mine)["tabs"]] == [f"{demo}/"]
    assert bay.ok("get", "url", session=other)["value"] == f"{demo}/form.html"

    raw = Raw(got["url"])
    try:
        listed = tab_targets(raw)
        ids = {t["targetId"] for t in listed}
        assert theirs["target"] not in ids
        assert {t["type"] for t in listed} >= {"tab", "page"}, listed
        assert all(t["url"] != f"{demo}/form.html" for t in listed), listed
        assert [t["url"] for t in listed if t["type"] == "tab"] == [f"{demo}/"], listed
        answer = raw.call("Target.attachToTarget", {"targetId": theirs["target"], "flatten": True})
        assert_refused(refusal(answer), "not_your_tab")
        other_raw = Raw(theirs["url"])
        try:
            (other_tab,) = [t for t in tab_targets(other_raw) if t["type"] == "tab"]
        finally:
            other_raw.close()
        for method in ("Target.attachToTarget", "Target.closeTarget", "Target.activateTarget"):
            answer = raw.call(method, {"targetId": other_tab["targetId"], "flatten": True})
            assert_refused(refusal(answer), "not_your_tab")
    finally:
        raw.close()

    with sync_playwright() as pw:
        browser = pw.chromium.connect_over_cdp(got["url"])
        context = browser.contexts[0]
        assert [p.url for p in context.pages] == [f"{demo}/"]
        page = context.new_page()
        page.goto(f"{demo}/shop.html")
        assert page.title() == "Shop"
        page.click("#wish")
        assert page.text_content("#status") == "Added to your wishlist"
        page.close()
        browser.close()
    assert [t["url"] for t in bay.ok("tab", "list", session=mine)["tabs"]] == [f"{demo}/"]
    assert bay.ok("get", "url", session=other)["value"] == f"{demo}/form.html"


def two_sessions(bay: Bay, profile: str, demo: str, name: str) -> tuple[str, str]:
    mine, other = f"{name}-a", f"{name}-b"
    for s, path in ((mine, "/"), (other, "/form.html")):
        bay.ok("use", profile, session=s)
        bay.ok("open", demo + path, session=s)
    return mine, other


def test_puppeteer_and_playwright_drive_their_own_tabs_on_a_cdp_profile(
    cbay: Bay, work: str, demo: str, puppeteer: Path
) -> None:
    mine, other = two_sessions(cbay, work, demo, "cdp")
    try:
        check_endpoint(cbay, puppeteer, demo, mine, other)
    finally:
        cbay.ok("close", session=mine)
        cbay.ok("close", session=other)


def test_puppeteer_and_playwright_drive_their_own_tabs_on_the_ephemeral_default(
    bay: Bay, demo: str, puppeteer: Path
) -> None:
    """Two sessions on the isolated default: one ephemeral Chromium the keeper drives over a
    pipe (no debugging port), a context each."""
    mine, other = "eph-a", "eph-b"
    for s, path in ((mine, "/"), (other, "/form.html")):
        bay.ok("open", demo + path, session=s)
    try:
        check_endpoint(bay, puppeteer, demo, mine, other)
    finally:
        bay.ok("close", session=mine)
        bay.ok("close", session=other)


def test_puppeteer_and_playwright_drive_their_own_tabs_on_a_persistent_chromium_profile(
    bay: Bay, demo: str, puppeteer: Path
) -> None:
    bay.ok("new", "shared")
    mine, other = two_sessions(bay, "shared", demo, "per")
    try:
        check_endpoint(bay, puppeteer, demo, mine, other)
    finally:
        bay.ok("close", session=mine)
        bay.ok("close", session=other)


def test_bay_run_on_the_ephemeral_default(bay: Bay, demo: str, tmp_path: Path) -> None:
    """A Playwright script through the session's endpoint on the isolated default browser
    (before: capability_missing, the verb needed a cdp profile)."""
    bay.ok("open", f"{demo}/", session="runner")
    bay.ok("open", f"{demo}/form.html", session="runner-other")
    script = tmp_path / "steps.py"
    script.write_text(
        f"await page.goto({demo + '/shop.html'!r})\n"
        "await page.click('#buy')\n"
        "print('status:', await page.text_content('#status'))\n"
        "print('pages:', sorted(p.url for p in context.pages))\n"
    )
    try:
        ran = bay("run", str(script), session="runner", timeout=60)
        assert ran.code == 0, ran
        assert ran.frame["data"]["url"] == f"{demo}/shop.html"
        assert "status: Order placed: 1 kettle" in ran.stderr
        assert f"pages: ['{demo}/shop.html']" in ran.stderr, ran.stderr
        assert bay.ok("get", "url", session="runner-other")["value"] == f"{demo}/form.html"
    finally:
        bay.ok("close", session="runner")
        bay.ok("close", session="runner-other")


def test_cdp_url_on_a_session_socket_is_its_own_sessions_and_no_other(
    bay: Bay, demo: str, puppeteer: Path
) -> None:
    """An agent with only its session socket (issue 17) gets its own session's endpoint and
    drives its tabs with Puppeteer; naming another session is ``session_fixed``."""
    sock = bay.home / "ag.sock"
    bay.ok("session", "grant", "sock-agent", "--socket", str(sock), session=None)
    on_socket = {"BAY_SOCKET": str(sock)}
    bay.ok("open", f"{demo}/form.html", session="sock-other")
    try:
        bay.ok("open", f"{demo}/", session=None, env=on_socket)
        answer = bay("cdp-url", session=None, env=on_socket)
        assert answer.frame["session"]["id"] == "sock-agent", answer
        got = answer.frame["data"]
        seen = drive(puppeteer, got["url"], f"{demo}/shop.html", f"{demo}/form.html")
        assert seen["before"] == [f"{demo}/"]
        assert not seen["sawTheirs"]
        assert seen["status"] == "Order placed: 1 kettle"
        refused = assert_refused(
            bay("cdp-url", "--session", "sock-other", session=None, env=on_socket),
            "session_fixed",
        )
        assert refused["data"]["fixed"] == "sock-agent"
    finally:
        bay.ok("session", "revoke", "sock-agent", session=None)
        bay.ok("close", session="sock-other")
