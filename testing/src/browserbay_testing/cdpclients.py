"""CDP clients the agents use, against a session-scoped endpoint (``bay cdp-url``): Puppeteer
(``puppeteer-core`` from npm, installed into a cache directory of the tests' own, never a
dependency of browserbay: :func:`puppeteer_dir`), Playwright's ``connect_over_cdp`` and a raw
CDP client. :func:`check_endpoint` is the contract every CDP provider's tests run."""

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

from browserbay_testing.bay import Bay
from browserbay_testing.cdp import Raw, refusal
from browserbay_testing.refusals import assert_refused

HERE = Path(__file__).parent / "node"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "browserbay-tests"


def puppeteer_dir() -> Path:
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
