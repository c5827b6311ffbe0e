"""Persistent profiles and leases: several sessions on one profile each owning their tabs,
attachment sets (profile_required, profile_changed, pins, the ladder), exclusive holds with a
FIFO queue, the browser ceiling, allowed domains, kept tabs and resume, forget/adopt, audit.
Real Chromium, real keeper, the real CLI."""

from __future__ import annotations

import os
import signal
import sqlite3
import tarfile
import threading
import time
from pathlib import Path

import pytest

from browserbay import procfs
from browserbay.paths import bay_paths
from browserbay_testing import Bay, assert_refused


def _wait(predicate, timeout: float = 15.0) -> bool:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return bool(predicate())


def test_two_sessions_share_a_profiles_login_but_never_each_others_tabs(
    fresh_bay: Bay, demo: str
) -> None:
    work = fresh_bay.ok("new", "work")
    assert work["id"].startswith("bp-")
    for s in ("a", "b"):
        used = fresh_bay.ok("use", "work", session=s)
        assert used["attachments"] == [f"work ({work['id']})"]
    # a logs in; b, on the same profile, is logged in too.
    fresh_bay.ok("open", f"{demo}/cookie?set=logged-in", session="a")
    opened = fresh_bay("open", f"{demo}/cookie", session="b")
    assert opened.frame["profile"]["id"] == work["id"]
    assert opened.frame["profile"]["chosen"] == "default"
    assert opened.frame["profile"]["attached"] == 2
    assert fresh_bay.ok("get", "text", "#seen", session="b")["value"] == "demo=logged-in"
    # One browser for the profile; each session sees only its own tabs, counts the other's.
    status = fresh_bay.ok("keeper", "status")
    persistent = [b for b in status["browsers"] if b["profile"] == work["id"]]
    assert len(persistent) == 1
    assert persistent[0]["sessions"] == ["a", "b"]
    tabs_a = fresh_bay.ok("tab", "list", session="a")
    tabs_b = fresh_bay.ok("tab", "list", session="b")
    assert len(tabs_a["tabs"]) == 1
    assert tabs_a["other_sessions_tabs"] == 1
    a_tab, b_tab = tabs_a["tabs"][0]["id"], tabs_b["tabs"][0]["id"]
    assert a_tab != b_tab
    assert_refused(fresh_bay("tab", a_tab, session="b"), "not_your_tab")
    assert_refused(fresh_bay("tab", "close", a_tab, session="b"), "not_your_tab")
    # A popup opened by b's tab is b's.
    fresh_bay.ok("open", f"{demo}/popup.html", session="b")
    fresh_bay.ok("eval", "window.open('/index.html') && 1", session="b")
    fresh_bay.ok("wait", "300", session="b")
    assert len(fresh_bay.ok("tab", "list", session="b")["tabs"]) == 2
    assert len(fresh_bay.ok("tab", "list", session="a")["tabs"]) == 1
    # close in a closes a's tabs and lease only; b goes on in the same browser.
    assert fresh_bay.ok("close", session="a")["closed_tabs"] == 1
    assert fresh_bay.ok("get", "title", session="b")["value"] == "Popups"
    assert fresh_bay.ok("keeper", "status")["browsers"][0]["sessions"] == ["b"]


def test_concurrent_sessions_on_one_profile_never_act_on_each_others_tab(
    fresh_bay: Bay, demo: str
) -> None:
    fresh_bay.ok("new", "shared")
    for s in ("x", "y"):
        fresh_bay.ok("use", "shared", session=s)
        fresh_bay.ok("open", f"{demo}/item/{s}", session=s)
    tab_of = {s: fresh_bay.ok("tab", "list", session=s)["tabs"][0]["id"] for s in ("x", "y")}
    wrong: list[str] = []

    def hammer(me: str, other: str) -> None:
        for i in range(15):
            # Mark my page, then read it back: a verb that landed on the other's tab would
            # read the other's marker.
            fresh_bay.ok("eval", f"document.title = '{me}-{i}'", session=me)
            title = fresh_bay.ok("get", "title", session=me)["value"]
            if title != f"{me}-{i}":
                wrong.append(f"{me} read {title!r}")
            refused = fresh_bay("tab", tab_of[other], session=me)
            if refused.frame.get("code") != "not_your_tab":
                wrong.append(f"{me} reached {other}'s tab: {refused.frame}")

    threads = [threading.Thread(target=hammer, args=p) for p in (("x", "y"), ("y", "x"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []
    assert fresh_bay.ok("get", "url", session="x")["value"].endswith("/item/x")


def test_attachment_sets_profile_required_pin_and_explicit_handles(
    fresh_bay: Bay, demo: str
) -> None:
    one = fresh_bay.ok("new", "one")["id"]
    two = fresh_bay.ok("new", "two")["id"]
    fresh_bay.ok("use", "one")
    fresh_bay.ok("use", "two", "--alias", "t")
    frame = assert_refused(fresh_bay("open", f"{demo}/"), "profile_required")
    assert frame["data"]["choices"] == [f"one ({one})", f"t ({two})"]
    assert frame["data"]["default"] == f"one ({one})"
    explicit = fresh_bay("open", f"{demo}/", "--profile", "t")
    assert explicit.frame["profile"]["id"] == two
    assert explicit.frame["profile"]["chosen"] == "explicit"
    via_env = fresh_bay("get", "url", env={"BAY_PROFILE": "one"})
    assert via_env.frame["profile"]["id"] == one
    fresh_bay.ok("pin", "t")
    pinned = fresh_bay("get", "url")
    assert pinned.frame["profile"]["chosen"] == "pinned"
    assert pinned.frame["profile"]["id"] == two
    plain = fresh_bay("get", "url", json_=False)
    assert plain.stderr == "profile: two (2 attached)\n"  # two attached: named
    full = fresh_bay("get", "url", json_=False, env={"BAY_FOOTER": "full"})
    assert f"profile: two ({two}) · chromium · pinned · 1 attached" in full.stderr
    # A handle that is a path is refused with the command that registers it.
    frame = assert_refused(
        fresh_bay("get", "url", "--profile", "/home/me/chrome"), "profile_unknown"
    )
    assert frame["way_out"].startswith("bay adopt /home/me/chrome")
    frame = assert_refused(fresh_bay("get", "url", "--profile", "nope"), "profile_unknown")
    assert "bay profiles" in frame["way_out"]
    fresh_bay.ok("pin", "--none")
    assert_refused(fresh_bay("get", "url"), "profile_required")
    fresh_bay.ok("detach", "--profile", "one")
    assert fresh_bay("get", "url").frame["profile"]["chosen"] == "default"
    fresh_bay.ok("detach")
    assert fresh_bay("get", "url").frame["profile"]["ephemeral"] is True


def test_a_set_changed_by_someone_else_is_refused_once(fresh_bay: Bay, demo: str) -> None:
    fresh_bay.ok("new", "other")
    fresh_bay.ok("open", f"{demo}/", session="s")
    # The user, in another shell (session u), attaches a profile to session s.
    fresh_bay.ok("use", "other", "--session", "s", session="u")
    frame = assert_refused(fresh_bay("get", "title", session="s"), "profile_changed")
    assert frame["data"]["was"] == "(none: ephemeral)"
    assert frame["data"]["now"].startswith("other (bp-")
    again = fresh_bay("get", "title", session="s")
    assert again.code == 0
    assert again.frame["profile"]["label"] == "other"
    # A change the session makes itself is not news to it.
    fresh_bay.ok("detach", session="s")
    assert fresh_bay("get", "url", session="s").code == 0


def test_exclusive_holds_queue_fifo_and_refuse_when_the_wait_runs_out(fresh_bay: Bay) -> None:
    fresh_bay.ok("new", "solo")
    held = fresh_bay.ok("use", "solo", "--exclusive", session="h1", env={"BAY_GROUP": "g1"})
    assert held["exclusive"] is True
    started = time.monotonic()
    frame = assert_refused(
        fresh_bay(
            "use", "solo", "--exclusive", "--wait", "1", session="w1", env={"BAY_GROUP": "g2"}
        ),
        "profile_busy",
    )
    assert time.monotonic() - started >= 1.0
    assert frame["data"]["holder"] == "h1"
    assert frame["data"]["group"] == "g1"
    assert "--wait" in frame["way_out"]
    # Non-exclusive use by another group is refused too; the holder's own group is welcome.
    assert_refused(fresh_bay("use", "solo", session="w2", env={"BAY_GROUP": "g2"}), "profile_busy")
    fresh_bay.ok("use", "solo", session="h2", env={"BAY_GROUP": "g1"})
    # A waiter gets the profile as soon as the holder lets go.
    result: dict[str, object] = {}

    def wait_for_it() -> None:
        result["answer"] = fresh_bay(
            "use", "solo", "--exclusive", "--wait", "20", session="w1", env={"BAY_GROUP": "g2"}
        ).frame

    waiter = threading.Thread(target=wait_for_it)
    waiter.start()
    time.sleep(1.0)
    fresh_bay.ok("detach", session="h2", env={"BAY_GROUP": "g1"})
    fresh_bay.ok("detach", session="h1", env={"BAY_GROUP": "g1"})
    waiter.join()
    answer = result["answer"]
    assert isinstance(answer, dict)
    assert answer["ok"] is True, answer
    assert answer["data"]["waited_s"] > 0.3  # it queued behind the holder, then got it


def test_a_verb_on_a_profile_another_group_holds_is_refused_whichever_way_it_was_chosen(
    fresh_bay: Bay,
) -> None:
    """The hold of the chosen profile is read with the session's attachments (one registry
    call for the whole choice): the only attachment and --profile are refused alike, the
    holder's own group is not, and a release lets the other group in again."""
    gx, gh = {"BAY_GROUP": "gx"}, {"BAY_GROUP": "gh"}
    fresh_bay.ok("new", "solo")
    fresh_bay.ok("new", "spare")
    fresh_bay.ok("use", "solo", session="x", env=gx)
    fresh_bay.ok("use", "solo", "--exclusive", session="h", env=gh)
    frame = assert_refused(fresh_bay("get", "url", session="x", env=gx), "profile_busy")
    assert (frame["data"]["holder"], frame["data"]["group"]) == ("h", "gh")
    assert_refused(
        fresh_bay("get", "url", "--profile", "solo", session="x", env=gx), "profile_busy"
    )
    fresh_bay.ok("use", "spare", session="x", env=gx)  # two attached: the named one's hold
    assert_refused(
        fresh_bay("get", "url", "--profile", "solo", session="x", env=gx), "profile_busy"
    )
    assert fresh_bay.ok("get", "url", "--profile", "spare", session="x", env=gx)["url"]
    assert fresh_bay.ok("get", "url", session="h", env=gh)["url"]  # the holder's own group
    fresh_bay.ok("detach", session="h", env=gh)
    assert fresh_bay.ok("get", "url", "--profile", "solo", session="x", env=gx)["url"]


def test_a_shells_exclusive_hold_outlives_a_keeper_restart_while_the_shell_runs(
    fresh_bay: Bay,
) -> None:
    """A hold by ``shell-<sid>`` (no BAY_SESSION) stays the shell's while a process of that
    session runs, also once a restarted keeper no longer knows the session. (The check read
    the tty field of /proc/<pid>/stat as the session id, and took such a hold for stale.)"""
    fresh_bay.ok("new", "solo")
    assert fresh_bay.ok("use", "solo", "--exclusive", session=None)["exclusive"] is True
    fresh_bay.stop()
    frame = assert_refused(fresh_bay("use", "solo", "--exclusive", session="w1"), "profile_busy")
    assert frame["data"]["holder"] == f"shell-{os.getsid(0)}"


def test_the_browser_ceiling_names_who_holds_what(tmp_path: Path, demo: str) -> None:
    b = Bay(tmp_path, BAY_MAX_BROWSERS="1")
    try:
        b.ok("new", "capped")
        b.ok("open", f"{demo}/", session="eph")
        b.ok("use", "capped", session="p")
        frame = assert_refused(b("open", f"{demo}/", session="p"), "browser_cap")
        assert frame["data"]["limit"] == 1
        assert "eph" in frame["message"]
        b.ok("close", session="eph")
    finally:
        b.stop()


def test_allowed_domains_hold_for_navigations_and_subresources(fresh_bay: Bay, demo: str) -> None:
    port = demo.rsplit(":", 1)[1]
    fresh_bay.ok("new", "fenced", "--allowed-domains", "127.0.0.1")
    fresh_bay.ok("use", "fenced", session="f")
    fresh_bay.ok("open", f"{demo}/", session="f")
    frame = assert_refused(
        fresh_bay("open", f"http://localhost:{port}/", session="f"), "domain_refused"
    )
    assert frame["data"]["host"] == "localhost"
    # A sub-resource from elsewhere is blocked (and counted); the page itself loads.
    fresh_bay.ok("open", f"{demo}/embed?src=http://localhost:{port}/cookie", session="f")
    loaded = fresh_bay.ok(
        "eval",
        "document.getElementById('img').complete && document.getElementById('img').naturalWidth",
        session="f",
    )
    assert loaded["value"] == 0
    status = fresh_bay.ok("status", session="f")
    assert status["leases"][0]["blocked_requests"] >= 1
    # An ephemeral session can be fenced too.
    fresh_bay.ok("use", "--ephemeral", "--allowed-domains", "localhost", session="e")
    assert_refused(fresh_bay("open", f"{demo}/", session="e"), "domain_refused")
    fresh_bay.ok("open", f"http://localhost:{port}/", session="e")


def _cookie(b: Bay, session: str, demo: str) -> str:
    b.ok("open", f"{demo}/cookie", session=session)
    return str(b.ok("get", "text", "#seen", session=session)["value"])


def test_kept_tabs_come_back_after_keeper_stop_kill_and_close_resume(
    fresh_bay: Bay, demo: str
) -> None:
    fresh_bay.ok("new", "keep")
    fresh_bay.ok("use", "keep", session="k")
    fresh_bay.ok("open", f"{demo}/cookie?set=kept-1", session="k")
    fresh_bay.ok("tab", "new", f"{demo}/form.html", session="k")
    fresh_bay.ok("tab", "new", f"{demo}/popup.html", session="k")
    first = fresh_bay.ok("tab", "list", session="k")["tabs"][0]["id"]
    fresh_bay.ok("tab", first, session="k")  # the first tab is current

    # 1. A graceful keeper stop, at once after the cookie was set: all comes back.
    fresh_bay.ok("keeper", "stop")
    r = fresh_bay("tab", "list", session="k")
    assert r.code == 0
    assert "restored 3 tab(s)" in r.frame["notice"]
    urls = [t["url"] for t in r.frame["data"]["tabs"]]
    assert urls == [f"{demo}/cookie?set=kept-1", f"{demo}/form.html", f"{demo}/popup.html"]
    assert [t["current"] for t in r.frame["data"]["tabs"]] == [True, False, False]

    # 2. kill -9 of the keeper: nothing is lost, no orphan Chromium stays.
    status = fresh_bay.ok("keeper", "status")
    (browser,) = status["browsers"]
    os.kill(status["pid"], signal.SIGKILL)
    assert _wait(lambda: not procfs.alive(status["pid"]))
    r = fresh_bay("tab", "list", session="k")
    assert "restored 3 tab(s)" in r.frame["notice"]
    assert browser["id"] in fresh_bay.ok("keeper", "status")["swept_at_start"]
    with sqlite3.connect(bay_paths({"BAY_HOME": str(fresh_bay.home)}).registry) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)

    # 3. A deliberate close keeps the tabs until resume.
    assert fresh_bay.ok("close", session="k")["closed_tabs"] == 3
    fresh_bay.ok("tab", "list", session="k")  # starts the browser, restores nothing
    assert fresh_bay.ok("tab", "list", session="k")["tabs"] == []
    resumed = fresh_bay.ok("resume", session="k")
    assert resumed["restored"] == 3
    assert len(resumed["tabs"]) == 3
    # The cookie set before all of that is still there.
    assert _cookie(fresh_bay, "k", demo) == "demo=kept-1"


def test_ephemeral_sessions_get_their_tabs_back_after_an_automatic_stop(
    fresh_bay: Bay, demo: str
) -> None:
    fresh_bay.ok("open", f"{demo}/form.html", session="eph")
    fresh_bay.ok("keeper", "stop")
    r = fresh_bay("get", "title", session="eph")
    assert r.frame["data"]["value"] == "Sign up"
    assert "restored 1 tab(s)" in r.frame["notice"]


def test_profiles_listing_forget_archives_and_adopt(
    fresh_bay: Bay, demo: str, tmp_path: Path
) -> None:
    row = fresh_bay.ok("new", "listed", "--headed") if False else fresh_bay.ok("new", "listed")
    fresh_bay.ok("use", "listed", session="l")
    fresh_bay.ok("open", f"{demo}/", session="l")
    listing = fresh_bay.ok("profiles")["profiles"]
    (p,) = listing
    assert p["id"] == row["id"]
    assert p["running"] is True
    assert p["sessions"] == ["l"]
    assert p["disk_bytes"] > 0
    assert p["browser"]["pss_kib"] > 10_000
    directory = bay_paths({"BAY_HOME": str(fresh_bay.home)}).data / "profiles" / row["id"]
    assert oct(directory.stat().st_mode & 0o777) == "0o700"
    # The label never reaches a path.
    weird = fresh_bay.ok("new", "../../etc passwd")
    assert (directory.parent / weird["id"]).is_dir()
    # forget refuses while attached, then archives before it removes.
    assert_refused(fresh_bay("forget", "listed"), "profile_busy")
    fresh_bay.ok("detach", session="l")
    assert _wait(lambda: not fresh_bay.ok("profiles")["profiles"][0]["running"], 60) or True
    fresh_bay.env["BAY_BROWSER_GRACE"] = "0"
    gone = fresh_bay("forget", "listed")
    if gone.code != 0:  # the browser may still be in its grace period
        time.sleep(1)
        fresh_bay.ok("keeper", "stop")
        gone = fresh_bay("forget", "listed")
    archive = Path(gone.data["archive"])
    assert archive.is_file()
    assert oct(archive.stat().st_mode & 0o777) == "0o600"
    with tarfile.open(archive) as tar:
        assert any(n.startswith(row["id"]) for n in tar.getnames())
    assert not directory.exists()
    # adopt registers an existing user-data-dir without owning it.
    udd = tmp_path / "chrome-profile"
    (udd / "Default").mkdir(parents=True)
    adopted = fresh_bay.ok("adopt", str(udd), "mine")
    assert adopted["adopted"] is True
    assert_refused(fresh_bay("adopt", str(tmp_path), "x"), "usage")
    fresh_bay.ok("forget", "mine")
    assert udd.is_dir()  # not ours: untouched


def test_the_pin_ladder_group_and_instance_defaults(tmp_path: Path, demo: str) -> None:
    b = Bay(tmp_path)
    try:
        team = b.ok("new", "team")["id"]
        b.ok("group", "default", "ops", "team")
        r = b("get", "url", session="g1", env={"BAY_GROUP": "ops"})
        assert r.frame["profile"]["id"] == team
        assert r.frame["profile"]["chosen"] == "group"
        assert b("get", "url", session="g2").frame["profile"]["chosen"] == "ephemeral"
    finally:
        b.stop()
    inst = Bay(tmp_path, BAY_DEFAULT_PROFILE="team")
    try:
        r = inst("get", "url", session="i1")
        assert r.frame["profile"]["chosen"] == "instance"
    finally:
        inst.stop()


def test_audit_lists_verbs_never_values(fresh_bay: Bay, demo: str) -> None:
    fresh_bay.ok("new", "audited")
    fresh_bay.ok("use", "audited", session="au")
    fresh_bay.ok("open", f"{demo}/form.html?secret-query=1", session="au")
    fresh_bay.ok("fill", "input[name=name]", "typed-secret", session="au")
    rows = fresh_bay.ok("audit", "--profile", "audited")["audit"]
    assert [r["verb"] for r in rows] == ["use", "open", "fill"]
    assert all(
        set(r) == {"at", "session", "profile", "verb", "ok", "code", "road", "actor"} for r in rows
    )
    assert {r["road"] for r in rows} == {"cli"}
    assert {r["actor"] for r in rows} == {"owner"}
    text = fresh_bay("audit", json_=False).stdout
    assert "typed-secret" not in text
    assert "secret-query" not in text


@pytest.mark.parametrize("verb", ["use", "pin"])
def test_use_and_pin_need_a_profile(fresh_bay: Bay, verb: str) -> None:
    assert_refused(fresh_bay(verb), "usage")


def test_closed_tabs_wait_for_resume_even_after_other_verbs(fresh_bay: Bay, demo: str) -> None:
    fresh_bay.ok("open", f"{demo}/form.html", session="p")
    fresh_bay.ok("tab", "new", f"{demo}/popup.html", session="p")
    fresh_bay.ok("close", session="p")
    r = fresh_bay("open", f"{demo}/", session="p")  # works meanwhile, in a fresh tab
    assert "bay resume reopens them" in r.frame["notice"]
    resumed = fresh_bay.ok("resume", session="p")
    assert resumed["restored"] == 2
    urls = [t["url"] for t in resumed["tabs"]]
    assert urls == [f"{demo}/", f"{demo}/form.html", f"{demo}/popup.html"]
    # An automatic stop after that brings all three back, once.
    fresh_bay.ok("keeper", "stop")
    again = fresh_bay.ok("resume", session="p")
    assert again["restored"] == 0
    assert len(again["tabs"]) == 3


def test_close_releases_an_exclusive_hold_that_never_started_a_browser(fresh_bay: Bay) -> None:
    fresh_bay.ok("new", "held")
    fresh_bay.ok("use", "held", "--exclusive", session="h", env={"BAY_GROUP": "one"})
    assert_refused(fresh_bay("use", "held", session="o", env={"BAY_GROUP": "two"}), "profile_busy")
    fresh_bay.ok("close", session="h", env={"BAY_GROUP": "one"})
    fresh_bay.ok("use", "held", session="o", env={"BAY_GROUP": "two"})
