"""The Python API against a real keeper and Chromium: browserbay.Client (async) and
browserbay.SyncClient, typed answers naming session and profile, one exception class per
refusal code, plugin verbs through call(), reconnection, and a warm verb's latency."""

from __future__ import annotations

import re
import statistics
import time
from pathlib import Path

import anyio
import pytest

import browserbay
from browserbay import errors, procfs
from browserbay.api import Answer, Client, Page, Snapshot, SyncClient
from browserbay_testing import Bay, assert_refused


def _ref(snapshot: str, role: str, name: str) -> str:
    m = re.search(rf'{role} "{re.escape(name)}"[^\n]*? @(e\d+)\b', snapshot)
    assert m, f"no {role} {name!r} in:\n{snapshot}"
    return "@" + m.group(1)


@pytest.fixture(scope="module")
def home(bay: Bay) -> Path:
    """The module's keeper, started by the CLI (with the test plugins), used by the API."""
    bay.ok("keeper", "start")
    return bay.home


def test_async_client_drives_the_form_and_names_session_and_profile(home: Path, demo: str) -> None:
    async def main() -> None:
        async with Client("api-form", home=home) as bay:
            page = await bay.open(f"{demo}/form.html")
            assert isinstance(page, Page)
            assert (page.title, page.url, page.status) == ("Sign up", f"{demo}/form.html", 200)
            assert page.tab.startswith("t")
            assert page.session == browserbay.SessionInfo("api-form", "api")
            assert page.profile is not None
            assert page.profile.id == "ep-api-form"
            assert page.profile.ephemeral is True
            assert page.profile.provider == "chromium"

            snap = await bay.snapshot(interactive=True)
            assert isinstance(snap, Snapshot)
            assert snap.refs >= 5
            assert snap.url == f"{demo}/form.html"
            name = _ref(snap.tree, "textbox", "Name")
            await bay.fill(name, "Ada Lovelace")
            assert (await bay.select(_ref(snap.tree, "combobox", "Plan"), "team"))["selected"] == [
                "team"
            ]
            await bay.check(_ref(snap.tree, "checkbox", "I accept the terms"))
            assert (await bay.get("value", name)).value == "Ada Lovelace"
            assert (await bay.eval("1 + 1")).value == 2
            clicked = await bay.click(_ref(snap.tree, "button", "Create account"))
            assert clicked.verb == "click"
            assert clicked.text == "clicked"
            assert (await bay.get("title")).value == "Signed up"
            assert "team" in (await bay.get("text")).value
            back = await bay.back()
            assert back.title == "Sign up"
            assert (await bay.forward()).title == "Signed up"
            assert (await bay.reload()).status == 200
            status = await bay.status()
            assert status.browser is not None
            assert status.current is not None
            assert status.current.title == "Signed up"
            assert bay.keeper["version"] == browserbay.__version__
            assert (await bay.close()).data["closed_tabs"] == 1

    anyio.run(main)


def test_refusals_are_raised_as_the_class_of_their_code(home: Path, demo: str) -> None:
    async def main() -> None:
        async with Client("api-refusals", home=home) as bay:
            await bay.open(f"{demo}/form.html")
            with pytest.raises(errors.RefStale) as stale:
                await bay.click("@e999")
            r = stale.value
            assert isinstance(r, browserbay.BayRefusal)
            assert r.code == "ref_stale"
            assert r.message == assert_refused(r.frame(), "ref_stale")["message"]
            assert "bay snapshot -i" in r.way_out  # after the nearest names on the page
            assert r.data["ref"] == "@e999"
            with pytest.raises(errors.LocalSchemeRefused):
                await bay.open("file:///etc/passwd")
            with pytest.raises(errors.TabGone):
                await bay.switch_tab("t9999")
            with pytest.raises(errors.Usage):
                await bay.get("value")
            with pytest.raises(errors.BadFrame):
                await bay.call("open", {"url": "x", "nope": 1})
            # The deadline is a TimeoutError as well; the client reconnects after it.
            with pytest.raises(TimeoutError) as late:
                await bay.wait(3000, timeout=0.5)
            assert isinstance(late.value, errors.Deadline)
            assert late.value.code == "deadline"
            assert (await bay.get("title")).value == "Sign up"
            await bay.close()

    anyio.run(main)


def test_sync_client_tabs_keeper_verbs_and_generic_call(home: Path, demo: str) -> None:
    with SyncClient("api-sync", home=home) as bay:
        first = bay.open(f"{demo}/")
        assert first.title == "browserbay demo"
        second = bay.new_tab(f"{demo}/form.html")
        assert second.title == "Sign up"
        tabs = bay.tabs()
        assert [t.id for t in tabs.tabs] == [first.tab, second.tab]
        assert tabs.current is not None
        assert tabs.current.id == second.tab
        switched = bay.switch_tab(first.tab)
        assert (switched.tab, switched.title) == (first.tab, "browserbay demo")
        assert bay.get("url").value == f"{demo}/"
        closed = bay.close_tab(second.tab)
        assert closed.data["closed"] == second.tab
        with pytest.raises(errors.TabGone):
            bay.switch_tab(second.tab)
        assert bay.scroll("down", 100).data["direction"] == "down"
        assert bay.hover("a").verb == "hover"
        assert bay.wait(load=True).data["waited"] == "load"
        shot = bay.screenshot(home / "shot.png")
        assert shot.path == home / "shot.png"
        assert shot.path.read_bytes().startswith(b"\x89PNG")
        assert bay.status().profile is not None
        listing = bay.plugins()
        assert listing.profile is None
        assert "chromium" in [p["name"] for p in listing.data["plugins"]]
        assert bay.keeper_status().data["pid"] == bay.keeper["pid"]
        verbs = bay.call("verbs")
        assert isinstance(verbs, Answer)
        assert "open" in [v["name"] for v in verbs.data["verbs"]]
        bay.close()


def test_type_press_uncheck_through_the_sync_client(home: Path, demo: str) -> None:
    with SyncClient("api-keys", home=home) as bay:
        bay.open(f"{demo}/form.html")
        snap = bay.snapshot()
        name = _ref(snap.tree, "textbox", "Name")
        terms = _ref(snap.tree, "checkbox", "I accept the terms")
        bay.fill(name, "Ada")
        bay.type(name, " Lovelace")
        bay.press("End")
        assert bay.get("value", name).value == "Ada Lovelace"
        bay.check(terms)
        bay.uncheck(terms)
        assert bay.eval("document.querySelector('[name=terms]').checked").value is False
        bay.close()


def test_plugin_verbs_through_call_and_reconnecting_after_a_keeper_restart(
    fresh_bay: Bay,
) -> None:
    fresh_bay.env["BAY_PLUGIN_MODULES"] = "recorder,greeter"
    fresh_bay.ok("keeper", "start")
    with SyncClient("api-plugin", home=fresh_bay.home) as bay:
        greeting = bay.call("greet", name="Ada", shout=True)
        assert greeting.data == {"greeting": "hello Ada!", "session": "api-plugin"}
        with pytest.raises(errors.TargetNotFound):
            bay.call("greet", {"name": "nobody"})
        old = bay.keeper["pid"]
        fresh_bay.ok("keeper", "stop")
        end = time.monotonic() + 15
        while procfs.alive(old) and time.monotonic() < end:
            time.sleep(0.05)
        # The next verb finds the connection gone before sending: it starts a new keeper
        # (with this process's environment: no greeter) and asks it.
        status = bay.status()
        assert status.session.origin == "api"
        assert bay.keeper["pid"] != old
    recorded = [r for r in fresh_bay.recorded() if r["hook"] == "bay_before_verb"]
    assert {"id": "api-plugin", "origin": "api"} in [r["call"]["session"] for r in recorded]


def test_no_keeper_and_no_autostart_is_keeper_unavailable(tmp_path: Path) -> None:
    with pytest.raises(ConnectionError) as failed:
        SyncClient("x", home=tmp_path, autostart=False).status()
    assert isinstance(failed.value, errors.KeeperUnavailable)
    assert "bay keeper start" in failed.value.way_out

    async def main() -> None:
        with pytest.raises(errors.KeeperUnavailable):
            await Client("x", home=tmp_path, autostart=False).status()

    anyio.run(main)


def test_a_warm_verb_through_the_api_is_one_round_trip(home: Path, demo: str) -> None:
    """The in-keeper latency of the benchmarks: a warm `get url` through the async client."""

    async def main() -> tuple[float, float]:
        async with Client("api-latency", home=home) as bay:
            await bay.open(f"{demo}/")
            times = []
            for _ in range(50):
                t0 = time.perf_counter()
                await bay.get("url")
                times.append((time.perf_counter() - t0) * 1000)
            await bay.close()
        return statistics.median(times), max(times)

    median, worst = anyio.run(main)
    print(f"warm `get url` through browserbay.Client: median {median:.2f} ms, max {worst:.2f} ms")
    assert median < 25, median
