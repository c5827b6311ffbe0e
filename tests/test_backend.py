"""``bay backend``: the providers by tier, and switching a live profile's backend.

The switch tests run a real keeper, real Chromium and the real CLI. Their second backend is
``standin`` (the test keeper plugin ``browserbay_testing/keeper_plugins/standin.py``): the same
Debian Chromium under another provider id,
a STAND-IN for a fingerprint browser — stock Chromium ignores the seed it is given, so what
these tests prove is the mechanics (leases, tabs, cookies, the seed carried, the version
ladder, proposals, the gap), not a fingerprint."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browserbay import procfs
from browserbay.paths import bay_paths
from browserbay_testing import Bay, Result, assert_refused


def _wait(predicate, timeout: float = 30.0) -> bool:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return bool(predicate())


def _stop_and_remove(b: Bay) -> None:
    """Stop the keeper (``Bay.stop`` waits until it has exited), then remove its home."""
    b.stop()
    shutil.rmtree(b.home, ignore_errors=True)


@pytest.fixture
def sbay() -> Iterator[Bay]:
    """A keeper of its own with the stand-in provider, its launch gate and fail switch."""
    home = Path(tempfile.mkdtemp(prefix="bay-sw-", dir="/tmp"))
    (home / "gate").mkdir()
    b = Bay(
        home,
        BAY_PLUGIN_MODULES="recorder,standin",
        BAY_TEST_STANDIN_GATE=str(home / "gate"),
        BAY_TEST_STANDIN_FAIL=str(home / "gate"),
    )
    yield b
    _stop_and_remove(b)


def _seeds_running(profile_dir: str) -> set[str]:
    """The ``--bay-test-seed=`` of every browser main process running on the directory."""
    seeds = set()
    for pid in procfs.pids():
        argv = procfs.argv(pid)
        if f"--user-data-dir={profile_dir}" in argv and not any(
            a.startswith("--type=") for a in argv
        ):
            seeds |= {a[16:] for a in argv if a.startswith("--bay-test-seed=")}
            seeds.add("(running)")
    return seeds


def _registry(b: Bay) -> sqlite3.Connection:
    return sqlite3.connect(bay_paths({"BAY_HOME": str(b.home)}).registry)


def _profile_dir(b: Bay, pid: str) -> str:
    """The profile's directory: the registry keeps one under the data root relative to it."""
    with _registry(b) as db:
        stored = str(db.execute("SELECT dir FROM profiles WHERE id=?", (pid,)).fetchone()[0])
    return str(bay_paths({"BAY_HOME": str(b.home)}).data / stored)


def _options(b: Bay, pid: str) -> dict[str, Any]:
    import json

    with _registry(b) as db:
        return dict(
            json.loads(db.execute("SELECT options FROM profiles WHERE id=?", (pid,)).fetchone()[0])
        )


def _tabs(b: Bay, session: str) -> list[tuple[str, str]]:
    return [(t["id"], t["url"]) for t in b.ok("tab", "list", session=session)["tabs"]]


# -- the listing ------------------------------------------------------------------------


def test_the_listing_by_tier_with_availability_key_source_and_capabilities(sbay: Bay) -> None:
    steel_key = "st_live_0123456789abcdef0123"
    listing = sbay(
        "backend", session="lister", env={"BAY_INTEGRATION_CLOUD_STEEL_API_KEY": steel_key}
    )
    data = listing.data
    rows = {r["id"]: r for r in data["providers"]}
    # Tiers come from the provider rows: chromium 1, the stand-in 2, local-window 3.
    tiers = {t["tier"]: t for t in data["tiers"]}
    assert "chromium" in tiers[1]["providers"]
    assert "standin" in tiers[2]["providers"]
    assert "local-window" in tiers[3]["providers"]
    assert tiers[2]["name"] == "fingerprint-cdp"
    for row in rows.values():
        assert row["id"] in tiers[row["tier"]]["providers"]
    # Availability: a runnable row is available; a declared-but-not-runnable one says why.
    assert rows["chromium"]["available"] is True
    assert rows["chromium"]["reason"] is None
    for pid, row in rows.items():
        if not row["runnable"]:
            assert row["available"] is False, pid
            assert row["reason"], pid
    # Key source: a cluster default is named as such, never its value; none when unset.
    steel = rows["cloud:steel"]
    assert steel["key"]["source"] == "cluster"
    assert steel["key"]["store"]
    assert rows["cloud:kernel"]["key"]["source"] == "none"
    assert rows["cloud:kernel"]["key"]["missing"] == ["api_key"]
    assert rows["chromium"]["key"] is None
    assert steel_key not in listing.stdout
    assert steel_key[-4:] not in listing.stdout
    # Capabilities are the rows' cells, the same as bay plugins shows.
    plugins = {p["id"]: p for p in sbay.ok("plugins", session="lister")["providers"]}
    for pid, row in rows.items():
        assert row["capabilities"] == plugins[pid]["capabilities"], pid
        assert row["runnable"] == plugins[pid]["runnable"], pid
    # Switch pairs: either row may name the other (the stand-in names chromium).
    assert "standin" in rows["chromium"]["switch_partners"]
    assert "chromium" in rows["standin"]["switch_partners"]
    assert rows["cdp"]["switch_partners"] == []
    # The text says the same: one block per tier, every provider with its state.
    text = sbay("backend", session="lister", json_=False).stdout
    assert text.index("tier 1") < text.index("tier 2") < text.index("tier 3")
    for pid, row in rows.items():
        assert pid in text
        if not row["available"]:
            assert f"{pid:<22} NOT available" in text
    assert "is on chromium (tier 1)" in text


# -- switching ---------------------------------------------------------------------------


def _two_sessions_on(sbay: Bay, demo: str) -> tuple[str, dict[str, list[tuple[str, str]]]]:
    pid = sbay.ok("new", "work", session="setup")["id"]
    for s in ("a", "b"):
        sbay.ok("use", "work", session=s)
    sbay.ok("open", f"{demo}/cookie?set=before-switch", session="a")
    sbay.ok("tab", "new", f"{demo}/form.html", session="a")
    sbay.ok("open", f"{demo}/index.html", session="b")
    return pid, {s: _tabs(sbay, s) for s in ("a", "b")}


def test_a_switch_with_two_sessions_is_a_proposal_their_owner_accepts_and_both_leases_survive(
    sbay: Bay, demo: str
) -> None:
    pid, before = _two_sessions_on(sbay, demo)
    directory = _profile_dir(sbay, pid)
    assert _seeds_running(directory) == {"(running)"}  # chromium: no seed on its argv
    assert _options(sbay, pid) == {}

    # a asks: b holds the profile too, so nothing stops — a proposal for the owner.
    proposed = sbay.ok("backend", "standin", session="a")
    assert proposed["switched"] is False
    assert proposed["proposal"]["provider"] == "standin"
    assert proposed["proposal"]["by"] == "a"
    assert "b" in proposed["proposal"]["why"]
    assert sorted(proposed["proposal"]["affects"]) == ["a", "b"]
    assert proposed["proposal"]["url"] == f"{demo}/form.html"
    assert proposed["accept"] == f"bay backend --accept --profile {pid}"
    assert sbay.ok("profiles", session="a")["profiles"][0]["provider"] == "chromium"
    # Shown where the owner looks: bay status and bay profiles.
    status_b = sbay.ok("status", session="b")
    assert status_b["leases"][0]["proposal"]["provider"] == "standin"
    assert "bay backend --accept --profile" in sbay("status", session="b", json_=False).stdout
    assert sbay.ok("profiles", session="b")["profiles"][0]["proposal"]["by"] == "a"
    # The proposer cannot accept its own proposal; nothing moved.
    assert_refused(sbay("backend", "--accept", session="a"), "own_proposal")
    assert _tabs(sbay, "a") == before["a"]

    # b (the owner) accepts: one switch, both leases survive with their tab ids and URLs.
    accepted = sbay.ok("backend", "--accept", session="b")
    assert accepted["switched"] is True
    assert (accepted["from"], accepted["to"], accepted["accepted"]) == ("chromium", "standin", "a")
    assert accepted["reopened"] == {"a": 2, "b": 1}
    assert accepted["options_kept"] == ["seed"]
    seed = _options(sbay, pid)["seed"]
    assert _seeds_running(directory) == {"(running)", seed}
    after_b = sbay("tab", "list", session="b")
    assert after_b.frame["profile"]["provider"] == "standin"
    assert after_b.frame["profile"]["tier"] == 2
    assert [(t["id"], t["url"]) for t in after_b.data["tabs"]] == before["b"]
    first_a = sbay("tab", "list", session="a")
    assert "switched from chromium to standin" in first_a.frame["notice"]
    assert [(t["id"], t["url"]) for t in first_a.data["tabs"]] == before["a"]
    assert sbay.ok("profiles", session="a")["profiles"][0]["proposal"] is None

    # Both keep acting on their own tabs only; the cookie set before the switch is there.
    assert sbay.ok("get", "url", session="a")["value"] == f"{demo}/form.html"
    assert sbay.ok("get", "url", session="b")["value"] == f"{demo}/index.html"
    tab_b = before["b"][0][0]
    assert_refused(sbay("tab", tab_b, session="a"), "not_your_tab")
    sbay.ok("tab", before["a"][0][0], session="a")
    sbay.ok("reload", session="a")
    assert sbay.ok("get", "text", "#seen", session="a")["value"] == "demo=before-switch"

    # And back: b proposes, a accepts; the seed stays in the options (carried, not used).
    assert sbay.ok("backend", "chromium", session="b")["switched"] is False
    back = sbay.ok("backend", "--accept", session="a")
    assert (back["from"], back["to"]) == ("standin", "chromium")
    assert _options(sbay, pid) == {"seed": seed}
    assert _seeds_running(directory) == {"(running)"}
    assert _tabs(sbay, "b") == before["b"]
    assert [t[0] for t in _tabs(sbay, "a")] == [t[0] for t in before["a"]]
    sbay.ok("reload", session="a")
    assert sbay.ok("get", "text", "#seen", session="a")["value"] == "demo=before-switch"

    # Once more to the stand-in: the same seed, never re-minted.
    sbay.ok("backend", "standin", session="a")
    sbay.ok("backend", "--accept", session="b")
    assert _options(sbay, pid) == {"seed": seed}
    assert _seeds_running(directory) == {"(running)", seed}


def test_the_only_holder_switches_at_once_and_an_idle_profile_switches_without_a_browser(
    sbay: Bay, demo: str
) -> None:
    pid = sbay.ok("new", "solo", session="solo")["id"]
    sbay.ok("use", "solo", session="solo")
    # Not running yet: the row changes; the browser starts on it with the next verb.
    idle = sbay.ok("backend", "standin", session="solo")
    assert idle["switched"] is True
    assert idle["reopened"] == {}
    sbay.ok("open", f"{demo}/cookie?set=solo", session="solo")
    assert _seeds_running(_profile_dir(sbay, pid)) == {"(running)", _options(sbay, pid)["seed"]}
    tabs = _tabs(sbay, "solo")
    direct = sbay.ok("backend", "chromium", session="solo")
    assert direct["switched"] is True
    assert direct["reopened"] == {"solo": 1}
    assert _tabs(sbay, "solo") == tabs
    # Declining: nothing to decline, then a withdrawn proposal.
    assert_refused(sbay("backend", "--decline", session="solo"), "no_proposal")
    assert_refused(sbay("backend", "--accept", session="solo"), "no_proposal")


def test_switches_that_cannot_work_are_refused_before_anything_moves(sbay: Bay, demo: str) -> None:
    pid = sbay.ok("new", "fixed", session="r")["id"]
    sbay.ok("use", "fixed", session="r")
    sbay.ok("open", f"{demo}/index.html", session="r")
    tabs = _tabs(sbay, "r")
    assert_refused(sbay("backend", "chromium", session="r"), "usage")  # already on it
    assert_refused(sbay("backend", "nosuch", session="r"), "backend_unavailable")
    assert_refused(sbay("backend", "cloud:steel", session="r"), "capability_missing")
    missing = assert_refused(sbay("backend", "cdp", session="r"), "capability_missing")
    assert missing["data"]["capability"] == "can_switch_to"
    assert_refused(sbay("backend", "local-window", session="r"), "capability_missing")
    assert_refused(sbay("backend", "--accept", "--decline", session="r"), "usage")
    assert_refused(sbay("backend", "standin", session="eph"), "usage")  # an ephemeral browser
    assert _tabs(sbay, "r") == tabs
    assert sbay.ok("profiles", session="r")["profiles"][0]["provider"] == "chromium"
    assert pid


def test_a_downgrade_is_refused_by_the_directory_or_the_record(sbay: Bay, demo: str) -> None:
    pid = sbay.ok("new", "ladder", session="l")["id"]
    sbay.ok("use", "ladder", session="l")
    sbay.ok("open", f"{demo}/index.html", session="l")  # chromium 156 writes its stamp
    directory = Path(_profile_dir(sbay, pid))
    assert (directory / "Last Version").read_text().startswith("156.")
    with _registry(sbay) as db:
        assert db.execute(
            "SELECT major, backend FROM profile_versions WHERE profile=?", (pid,)
        ).fetchone() == (156, "chromium")
    # A newer Chromium wrote the directory (its own stamp says so): refused, both named.
    (directory / "Last Version").write_text("999.0.0.0")
    refused = assert_refused(sbay("backend", "standin", session="l"), "backend_downgrade")
    assert refused["data"]["written"] == 999
    assert refused["data"]["target"] == 156
    assert "999" in refused["message"]
    assert "156" in refused["message"]
    # The confirmation flag does not override a known downgrade.
    assert_refused(
        sbay("backend", "standin", "--confirm-version", session="l"), "backend_downgrade"
    )
    assert sbay.ok("profiles", session="l")["profiles"][0]["provider"] == "chromium"
    # Negative control: with the stamp back at 156 the same switch goes through.
    (directory / "Last Version").write_text("156.0.8078.108")
    assert sbay.ok("backend", "standin", session="l")["switched"] is True


def test_the_registry_record_refuses_a_downgrade_the_directory_no_longer_shows(
    demo: str,
) -> None:
    home = Path(tempfile.mkdtemp(prefix="bay-sw-", dir="/tmp"))
    b = Bay(home, BAY_PLUGIN_MODULES="recorder,standin", BAY_TEST_STANDIN_MAJOR="146")
    try:
        pid = b.ok("new", "rec", session="r")["id"]
        b.ok("use", "rec", session="r")
        b.ok("open", f"{demo}/index.html", session="r")  # the record: 156
        directory = Path(_profile_dir(b, pid))
        (directory / "Last Version").write_text("140.0.0.0")  # the stamp says less
        refused = assert_refused(b("backend", "standin", session="r"), "backend_downgrade")
        assert refused["data"]["written"] == 156
        assert refused["data"]["target"] == 146
        assert "registry recorded 156" in refused["data"]["evidence"]
    finally:
        _stop_and_remove(b)


def test_an_unknown_version_is_refused_until_confirmed(sbay: Bay, tmp_path: Path) -> None:
    # An adopted directory some Chromium used, without a Last Version, never run by us.
    adopted = tmp_path / "adopted"
    (adopted / "Default").mkdir(parents=True)
    (adopted / "Local State").write_text("{}")
    pid = sbay.ok("adopt", str(adopted), "old", session="u")["id"]
    sbay.ok("use", "old", session="u")
    refused = assert_refused(sbay("backend", "standin", session="u"), "backend_version_unknown")
    assert "--confirm-version" in refused["way_out"]
    assert "cannot be read" in refused["data"]["evidence"]
    assert sbay.ok("profiles", session="u")["profiles"][0]["provider"] == "chromium"
    confirmed = sbay.ok("backend", "standin", "--confirm-version", session="u")
    assert confirmed["switched"] is True
    assert "confirmed" in confirmed["ladder"]["why"]
    assert pid


def test_a_verb_in_the_gap_is_refused_browser_restarting_then_served_on_its_own_tab(
    sbay: Bay, demo: str
) -> None:
    pid, before = _two_sessions_on(sbay, demo)
    gate = sbay.home / "gate"
    sbay.ok("backend", "standin", session="a")
    # a's other browser (its own ephemeral one) is running before the gap.
    sbay.ok("open", f"{demo}/index.html", session="a", env={"BAY_PROFILE": "ephemeral"})
    (gate / "armed").write_text("")
    answers: list[Result] = []
    accept = threading.Thread(
        target=lambda: answers.append(sbay("backend", "--accept", session="b", timeout=120))
    )
    accept.start()
    try:
        assert _wait(lambda: (gate / "waiting").exists())  # the old browser is stopped
        gap = sbay("get", "url", session="a")
        refused = assert_refused(gap, "browser_restarting")
        assert refused["data"]["provider"] == "standin"
        assert "same ids" in refused["way_out"]
        assert_refused(sbay("tab", "list", session="a"), "browser_restarting")
        assert_refused(sbay("close", session="a"), "browser_restarting")
        assert_refused(sbay("backend", "chromium", session="a"), "browser_restarting")
        assert sbay("status", session="a").code == 0  # the way out works in the gap
        # Another profile of the same session is not held up.
        other = sbay.ok("get", "url", session="a", env={"BAY_PROFILE": "ephemeral"})
        assert other["value"] == f"{demo}/index.html"
    finally:
        (gate / "armed").unlink()
        (gate / "open").write_text("")
        accept.join(120)
    assert len(answers) == 1
    assert answers[0].code == 0, answers
    assert answers[0].data["switched"] is True
    assert sbay.ok("get", "url", session="a")["value"] == f"{demo}/form.html"
    assert _tabs(sbay, "a") == before["a"]
    assert _tabs(sbay, "b") == before["b"]
    assert pid


def test_trigger_actions_in_the_gap_are_refused_browser_restarting_and_audited(
    sbay: Bay, demo: str
) -> None:
    """A trigger request is an action like a verb: in a backend switch's gap it is refused
    ``browser_restarting`` (it neither waits for, nor launches, a browser of its own), and
    the refusal is in the audit with its road."""
    _two_sessions_on(sbay, demo)
    sbay.ok("backend", "standin", session="a")  # b holds it too: a proposal for b
    d = Path(sbay.ok("triggers", "path")["path"])
    gate = sbay.home / "gate"
    (gate / "armed").write_text("")
    answers: list[Result] = []
    switch = threading.Thread(
        target=lambda: answers.append(sbay("backend", "--accept", session="b", timeout=120))
    )
    switch.start()
    results: dict[str, dict[str, Any]] = {}
    try:
        assert _wait(lambda: (gate / "waiting").exists())  # the old browser is stopped
        for action, extra in (("open", {"url": f"{demo}/index.html"}), ("resume", {})):
            name = str(uuid.uuid4())
            body = {"version": 1, "action": action, "session": "a", **extra}
            (d / f".{name}.tmp").write_text(json.dumps(body))
            os.replace(d / f".{name}.tmp", d / f"{name}.json")
            path = d / "processed" / f"{name}.result.json"
            assert _wait(lambda p=path: p.exists())
            results[action] = json.loads(path.read_text())
    finally:
        (gate / "armed").unlink()
        (gate / "open").write_text("")
        switch.join(120)
    for action, answer in results.items():
        assert answer["ok"] is False, (action, answer)
        assert answer["reason"] == "browser_restarting", (action, answer)
    assert answers[0].code == 0, answers
    assert sbay.ok("get", "url", session="a")["value"] == f"{demo}/form.html"  # not moved
    rows = [(r["verb"], r["road"], r["code"]) for r in sbay.ok("audit", session="a")["audit"]]
    assert ("open", "trigger", "browser_restarting") in rows
    assert ("resume", "trigger", "browser_restarting") in rows


def test_verbs_racing_a_switch_are_refused_or_served_on_their_own_tab(sbay: Bay, demo: str) -> None:
    """Session a keeps working while b's accept switches the profile under it: every answer
    is either browser_restarting or its own tab's URL — never a wrong tab, never an
    internal error."""
    _pid, before = _two_sessions_on(sbay, demo)
    sbay.ok("backend", "standin", session="a")
    done = threading.Event()
    seen: list[Result] = []

    def hammer() -> None:
        while not done.is_set():
            seen.append(sbay("get", "url", session="a"))

    worker = threading.Thread(target=hammer)
    worker.start()
    try:
        assert _wait(lambda: len(seen) >= 1)
        switched = sbay.ok("backend", "--accept", session="b", timeout=120)
    finally:
        done.set()
        worker.join(60)
    assert switched["switched"] is True
    assert len(seen) >= 2
    for r in seen:
        frame = r.frame
        if frame["ok"]:
            assert frame["data"]["value"] == f"{demo}/form.html", frame
        else:
            assert_refused(r, "browser_restarting")
    assert _tabs(sbay, "a") == before["a"]


def test_a_backend_that_fails_to_start_rolls_the_switch_back(sbay: Bay, demo: str) -> None:
    pid = sbay.ok("new", "back", session="f")["id"]
    sbay.ok("use", "back", session="f")
    sbay.ok("open", f"{demo}/cookie?set=kept", session="f")
    tabs = _tabs(sbay, "f")
    (sbay.home / "gate" / "fail").write_text("")
    failed = assert_refused(sbay("backend", "standin", session="f"), "backend_unavailable")
    assert failed["data"]["provider"] == "standin"
    (sbay.home / "gate" / "fail").unlink()
    after = sbay("tab", "list", session="f")
    assert after.frame["profile"]["provider"] == "chromium"
    assert "back on chromium" in after.frame["notice"]
    assert [(t["id"], t["url"]) for t in after.data["tabs"]] == tabs
    assert sbay.ok("get", "text", "#seen", session="f")["value"] == "demo=kept"
    with _registry(sbay) as db:
        assert db.execute("SELECT provider FROM profiles WHERE id=?", (pid,)).fetchone() == (
            "chromium",
        )


def test_a_profile_a_human_holds_is_never_restarted_by_an_accept(sbay: Bay, demo: str) -> None:
    """b hands its lease to a human (bay handoff): a's switch is a proposal naming that,
    and c's accept is refused browser_paused until the controls come back."""
    sbay.ok("new", "held", session="setup")
    for s in ("a", "b", "c"):
        sbay.ok("use", "held", session=s)
    sbay.ok("open", f"{demo}/index.html", session="b")
    answers: list[Result] = []
    handoff = threading.Thread(
        target=lambda: answers.append(
            sbay("handoff", "--reason", "log in", "--wait", "15", "--timeout", "40", session="b")
        )
    )
    handoff.start()
    try:
        # (b's own verbs wait behind its handoff; a's proposal says when the pause is on.)
        assert _wait(
            lambda: (
                "a human holds the controls"
                in sbay.ok("backend", "standin", session="a")["proposal"]["why"]
            )
        )
        paused = assert_refused(sbay("backend", "--accept", session="c"), "browser_paused")
        assert paused["data"]["origin"] == "handoff"
        assert sbay.ok("profiles", session="c")["profiles"][0]["provider"] == "chromium"
    finally:
        handoff.join(60)
    assert answers[0].code == 0
    accepted = sbay.ok("backend", "--accept", session="c")  # the controls came back
    assert accepted["switched"] is True
    assert sbay.ok("get", "url", session="b")["value"] == f"{demo}/index.html"


# -- the cloak provider (its binary a stand-in) -------------------------------------------

STAND_IN = "/usr/lib/chromium/chromium"


@pytest.mark.skipif(not Path(STAND_IN).exists(), reason="the stand-in Chromium is missing")
def test_chromium_to_cloak_and_back_keeps_two_sessions_leases_tabs_and_cookie(demo: str) -> None:
    """The real cloak provider, its binary a STAND-IN (Debian Chromium named by
    CLOAKBROWSER_BINARY_PATH, which ignores the fingerprint switches): a chromium profile
    held by two sessions goes to cloak and back; both leases survive with their tab ids at
    their URLs, each session keeps acting on its own tabs, the cookie set before the first
    switch is still there, and the seed minted at the first switch is the one on the argv
    of every later cloak launch."""
    home = Path(tempfile.mkdtemp(prefix="bay-swc-", dir="/tmp"))
    b = Bay(
        home,
        CLOAKBROWSER_BINARY_PATH=STAND_IN,
        CLOAKBROWSER_CACHE_DIR=str(home / "no-cloak-cache"),
        DBUS_SESSION_BUS_ADDRESS=f"unix:path={home}/no-bus",
    )
    try:
        listing = {r["id"]: r for r in b.ok("backend", session="a")["providers"]}
        assert listing["cloak"]["available"] is True
        assert "cloak" in listing["chromium"]["switch_partners"]
        pid, before = _two_sessions_on(b, demo)
        directory = _profile_dir(b, pid)

        def fingerprint_seeds() -> set[str]:
            seeds = set()
            for p in procfs.pids():
                argv = procfs.argv(p)
                if f"--user-data-dir={directory}" in argv and not any(
                    a.startswith("--type=") for a in argv
                ):
                    seeds |= {a.split("=", 1)[1] for a in argv if a.startswith("--fingerprint=")}
            return seeds

        assert fingerprint_seeds() == set()
        assert b.ok("backend", "cloak", session="a")["switched"] is False  # b holds it too
        to_cloak = b.ok("backend", "--accept", session="b")
        assert (to_cloak["from"], to_cloak["to"]) == ("chromium", "cloak")
        assert to_cloak["ladder"]["target"] == to_cloak["ladder"]["written"]  # 156 both
        seed = _options(b, pid)["seed"]
        assert fingerprint_seeds() == {seed}
        for s in ("a", "b"):
            listed = b("tab", "list", session=s)
            assert listed.frame["profile"]["provider"] == "cloak"
            assert [(t["id"], t["url"]) for t in listed.data["tabs"]] == before[s]
        assert b.ok("get", "url", session="a")["value"] == f"{demo}/form.html"
        assert b.ok("get", "url", session="b")["value"] == f"{demo}/index.html"
        assert_refused(b("tab", before["b"][0][0], session="a"), "not_your_tab")
        b.ok("tab", before["a"][0][0], session="a")
        b.ok("reload", session="a")
        assert b.ok("get", "text", "#seen", session="a")["value"] == "demo=before-switch"

        assert b.ok("backend", "chromium", session="b")["switched"] is False
        to_chromium = b.ok("backend", "--accept", session="a")
        assert (to_chromium["from"], to_chromium["to"]) == ("cloak", "chromium")
        assert fingerprint_seeds() == set()
        assert _options(b, pid)["seed"] == seed  # carried while on chromium
        assert _tabs(b, "b") == before["b"]
        assert [t[0] for t in _tabs(b, "a")] == [t[0] for t in before["a"]]
        b.ok("reload", session="a")
        assert b.ok("get", "text", "#seen", session="a")["value"] == "demo=before-switch"
        b.ok("open", f"{demo}/form.html", session="b")  # b still acts, on its own tab
        assert b.ok("get", "url", session="a")["value"] == f"{demo}/cookie?set=before-switch"

        b.ok("backend", "cloak", session="a")
        b.ok("backend", "--accept", session="b")
        assert fingerprint_seeds() == {seed}  # never re-minted
    finally:
        _stop_and_remove(b)


def test_a_verb_still_running_after_the_drain_bound_is_cut_browser_restarting(
    sbay: Bay, demo: str
) -> None:
    """A switch lets the verbs in flight on the profile finish, up to its bound (10 s); one
    still running then is cut and answered browser_restarting, naming the command."""
    _pid, before = _two_sessions_on(sbay, demo)
    sbay.ok("backend", "standin", session="a")
    answers: list[Result] = []
    waiter = threading.Thread(
        target=lambda: answers.append(sbay("wait", "25000", "--timeout", "60", session="a"))
    )
    waiter.start()
    try:
        assert _wait(lambda: "bay wait 25000" in _inflight(sbay, "a"))
        switched = sbay.ok("backend", "--accept", session="b", timeout=120)
    finally:
        waiter.join(90)
    assert switched["switched"] is True
    (cut,) = answers
    frame = assert_refused(cut, "browser_restarting")
    assert frame["data"]["cut"] == "bay wait 25000"
    assert frame["data"]["may_have_reached_page"] is False
    assert _tabs(sbay, "a") == before["a"]


def _inflight(b: Bay, session: str) -> list[str]:
    """The verbs running on the session's leases now, as bay keeper status lists them."""
    for s in b.ok("keeper", "status", session="probe")["sessions"]:
        if s["session"]["id"] == session:
            return [c for lease in s["leases"] for c in lease["inflight"]]
    return []
