"""Plugins seen from the outside: `bay plugins`, lifecycle hooks as the keeper calls them,
and a keeper that stays up whatever a plugin or a missing provider does."""

from __future__ import annotations

import time
from pathlib import Path

from browserbay import procfs
from browserbay.paths import bay_paths
from browserbay_testing import Bay, assert_refused


def test_bay_plugins_lists_name_distribution_version_hooks_and_providers(bay: Bay) -> None:
    data = bay.ok("plugins")
    chromium = next(p for p in data["plugins"] if p["name"] == "chromium")
    assert chromium == {
        "name": "chromium",
        "distribution": "browserbay-chromium",
        "version": "0.1.0",
        "hooks": ["bay_doctor_checks", "bay_providers"],
        "builtin": False,
        "error": None,
    }
    assert any(p["name"] == "recorder" for p in data["plugins"])
    provider = next(p for p in data["providers"] if p["id"] == "chromium")
    assert provider["runnable"] is True
    assert provider["problem"] is None
    assert provider["capabilities"]["has_cdp"] is True
    plain = bay("plugins", json_=False).stdout
    assert "browserbay-chromium" in plain
    assert "provider chromium" in plain


def test_lifecycle_hooks_in_the_order_the_keeper_calls_them(fresh_bay: Bay, demo: str) -> None:
    fresh_bay.ok("open", f"{demo}/popup.html")
    fresh_bay.ok("eval", "window.open('/index.html') && 1")
    fresh_bay.ok("wait", "200")
    fresh_bay.ok("close")
    pid = fresh_bay.ok("keeper", "stop")["pid"]
    end = time.monotonic() + 15
    while procfs.alive(pid) and time.monotonic() < end:
        time.sleep(0.05)
    events = [
        (r["hook"], r.get("change") or r.get("reason") or r.get("call", {}).get("verb"))
        for r in fresh_bay.recorded()
    ]
    keeper = [e[0] for e in events if e[0] in ("bay_keeper_started", "bay_keeper_stopping")]
    assert keeper == ["bay_keeper_started", "bay_keeper_stopping"]
    assert events[0][0] == "bay_keeper_started"  # before the keeper serves
    stopping = events.index(("bay_keeper_stopping", None))
    assert stopping < events.index(("bay_browser_stopped", "keeper_stop"))
    lifecycle = [e for e in events if e[0] not in ("bay_before_verb", "bay_after_verb", *keeper)]
    assert lifecycle[0] == ("bay_browser_started", None)
    assert lifecycle[1] == ("bay_lease_changed", "attached")
    assert lifecycle[-1] == ("bay_browser_stopped", "keeper_stop")
    leases = [r for r in fresh_bay.recorded() if r["hook"] == "bay_lease_changed"]
    assert [r["change"] for r in leases].count("tabs") >= 2
    detached = next(r for r in leases if r["change"] == "detached")
    assert len(detached["lease"]["tabs"]) == 2
    assert detached["lease"]["input_holder"] == "agent"
    verbs = [e[1] for e in events if e[0] == "bay_after_verb"]
    assert verbs[:4] == ["open", "eval", "wait", "close"]


def test_a_plugin_crashing_after_a_verb_is_logged_and_skipped(fresh_bay: Bay, demo: str) -> None:
    fresh_bay.env["BAY_TEST_CRASH_AFTER"] = "open"
    assert fresh_bay.ok("open", f"{demo}/")["title"] == "browserbay demo"
    assert fresh_bay.ok("get", "title")["value"] == "browserbay demo"
    log = fresh_bay("keeper", "logs", json_=False).stdout
    assert "plugin 'recorder' failed in bay_after_verb; carrying on" in log


def test_a_missing_default_provider_leaves_the_keeper_manageable(fresh_bay: Bay) -> None:
    fresh_bay.env["BAY_DEFAULT_PROVIDER"] = "nosuch"
    frame = assert_refused(fresh_bay("open", "about:blank"), "backend_unavailable")
    assert "no installed plugin provides it" in frame["message"]
    assert fresh_bay.ok("status")["acts_on"]["provider"] == "nosuch"
    assert "chromium" in [p["id"] for p in fresh_bay.ok("plugins")["providers"]]
    assert fresh_bay.ok("keeper", "status")["pid"] > 0
    assert fresh_bay.ok("keeper", "stop")["stopping"] is True


def test_keeper_stop_never_starts_a_keeper(tmp_path: Path) -> None:
    b = Bay(tmp_path)
    r = b("keeper", "stop", json_=False)
    assert r.code == 0
    assert r.stdout == "no keeper is running\n"
    assert b.ok("keeper", "stop")["stopping"] is False
    assert not bay_paths({"BAY_HOME": str(tmp_path)}).socket.exists()
    help_frame = b("help", "open")
    assert help_frame.frame["data"]["text"].startswith("bay open <url>")


def test_the_session_flag_is_named_as_the_origin(bay: Bay) -> None:
    r = bay("--session", "flagged", "status", session=None, json_=False, env={"BAY_FOOTER": "full"})
    assert r.code == 0
    assert "session flagged (from --session)" in r.stderr
    assert bay.ok("--session", "flagged", "status", session=None)["session"]["origin"] == "flag"


def test_plugin_verbs_reach_the_cli_without_touching_its_hot_path(
    fresh_bay: Bay, demo: str
) -> None:
    fresh_bay.env["BAY_PLUGIN_MODULES"] = "recorder,greeter"
    # The first unknown verb starts the keeper, which writes down the plugins' verbs.
    greeting = fresh_bay.ok("greet", "Ada", "--shout")
    assert greeting == {"greeting": "hello Ada!", "session": "a"}
    plain = fresh_bay("greet", "Grace", json_=False)
    assert plain.stdout == "hello Grace\n"
    assert_refused(fresh_bay("greet", "nobody"), "target_not_found")
    assert_refused(fresh_bay("greet"), "usage")
    assert_refused(fresh_bay("greetz", "x"), "usage")
    fresh_bay.ok("open", f"{demo}/form.html")
    assert fresh_bay.ok("heading") == {"heading": "Sign up"}
    listing = fresh_bay("help", json_=False).stdout
    assert "\n  greet: " in listing  # the manual gives a plugin's own verb a line
    assert "greet" in listing
    assert "(greeter)" in listing
    table = {v["name"]: v for v in fresh_bay.ok("verbs")["verbs"]}
    assert table["greet"]["plugin"] == "greeter"
    assert table["open"]["plugin"] == ""


def test_a_plugin_verb_needing_cdp_is_refused_on_a_provider_without_it(fresh_bay: Bay) -> None:
    fresh_bay.env.update(
        BAY_PLUGIN_MODULES="recorder,greeter,windowish", BAY_DEFAULT_PROVIDER="windowish"
    )
    frame = assert_refused(fresh_bay("heading"), "capability_missing")
    assert frame["data"]["capability"] == "has_cdp"
    assert fresh_bay.ok("greet", "Ada")["greeting"] == "hello Ada"
