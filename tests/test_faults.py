"""Regression tests for what the fault-injection campaign (campaigns/faults.py) found: a
browser killed under a session's feet, and the verbs that arrive while its driver is still
reporting the crash."""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any

from browserbay import client, procfs
from browserbay.paths import bay_paths
from browserbay_testing import Bay


def _call(b: Bay, session: str, verb: str, **args: Any) -> dict[str, Any]:
    paths = bay_paths({"BAY_HOME": str(b.home)})
    return client.call(verb, args, session={"id": session, "origin": "api"}, paths=paths)


def test_verbs_racing_a_browser_crash_restart_it_with_every_kept_tab(
    fresh_bay: Bay, demo: str
) -> None:
    """Killing a shared profile's browser while two sessions list their tabs in a loop: no
    verb fails (it used to be internal_error: the tab dict changed under `tab list`), and no
    tab is lost (a verb between the pages closing and the disconnect used to write an
    empty kept-tab list over the kept one)."""
    fresh_bay.ok("new", "crashy")
    want: dict[str, list[str]] = {}
    for s in ("a", "b"):
        fresh_bay.ok("use", "crashy", session=s)
        fresh_bay.ok("open", f"{demo}/form.html?s={s}", session=s)
        fresh_bay.ok("tab", "new", f"{demo}/item/{s}", session=s)
        want[s] = [t["url"] for t in fresh_bay.ok("tab", "list", session=s)["tabs"]]
    for _round in range(3):
        status = fresh_bay.ok("keeper", "status")
        (pid,) = [b["pid"] for b in status["browsers"] if b["profile"]]
        stop = threading.Event()
        bad: list[str] = []

        def spam(s: str, stop: threading.Event, bad: list[str]) -> None:
            while not stop.is_set():
                frame = _call(fresh_bay, s, "tab", action="list")
                if not frame["ok"]:
                    bad.append(f"{s}: {frame['code']}: {frame['message']}")
                    continue
                urls = [t["url"] for t in frame["data"]["tabs"]]
                if urls and urls != want[s]:  # the dead pages may still be listed, never others
                    bad.append(f"{s}: listed {urls}")

        threads = [threading.Thread(target=spam, args=(s, stop, bad)) for s in want]
        for t in threads:
            t.start()
        time.sleep(0.5)
        os.kill(pid, signal.SIGKILL)
        time.sleep(3)
        stop.set()
        for t in threads:
            t.join()
        assert bad == []
        for s, urls in want.items():
            assert [t["url"] for t in fresh_bay.ok("tab", "list", session=s)["tabs"]] == urls


def test_a_browser_dying_under_tab_new_is_a_typed_refusal(fresh_bay: Bay, demo: str) -> None:
    """`tab new <url>` whose browser dies while the page loads is action_failed (it used to
    be internal_error: the navigation's error escaped untyped), and the next verb goes on."""
    fresh_bay.ok("open", f"{demo}/form.html")
    status = fresh_bay.ok("keeper", "status")
    (pid,) = [b["pid"] for b in status["browsers"]]
    timer = threading.Timer(1.0, os.kill, (pid, signal.SIGKILL))
    timer.start()
    try:
        frame = _call(fresh_bay, "a", "tab", action="new", arg=f"{demo}/slow?s=4")
    finally:
        timer.join()
    assert frame["ok"] is False
    assert frame["code"] == "action_failed", frame
    tabs = fresh_bay.ok("tab", "list")["tabs"]
    assert [t["url"] for t in tabs] == [f"{demo}/form.html"]


class _Page:
    def __init__(self, url: str, on_title: Any = None):
        self.url = url
        self.on_title = on_title

    async def title(self) -> str:
        if self.on_title is not None:
            self.on_title()
        return "t"


class _KeptTabs:
    def __init__(self) -> None:
        self.kept: list[Any] = []

    def keep(self, session: str, profile: str, tabs: list[Any], state: str) -> None:
        self.kept = tabs


def test_kept_tabs_are_one_snapshot_even_if_a_crash_clears_the_lease_meanwhile() -> None:
    """persist() awaits each tab's title; a crash handled meanwhile clears the lease's
    current tab. The current flag written is the one of the snapshot (it used to be read
    after the awaits, so a crash could write no current tab and the restore picked the
    last one)."""
    import anyio

    from browserbay.keeper.leases import Leases
    from browserbay.keeper.sessions import Lease, Session, TabBook
    from browserbay.model import ProfileRef, SessionRef

    ref = SessionRef("s", "api")
    lease = Lease(ref, ProfileRef("bp-1", "p", "chromium", 1, False))
    lease.binding.bind(object(), None)  # type: ignore[arg-type]
    book = TabBook()

    def crash() -> None:
        book.select(lease, None)  # what the crash path does between two awaits

    first = book.add(_Page("http://x/form", crash), lease, None)  # type: ignore[arg-type]
    book.add(_Page("http://x/item"), lease, None)  # type: ignore[arg-type]
    book.select(lease, first.id)
    kept_tabs = _KeptTabs()

    async def db(fn: Any, *args: Any) -> Any:
        return fn(*args)

    leases = Leases(None, book, kept_tabs, None, None, None, db, {})  # type: ignore[arg-type]
    anyio.run(leases.persist, Session(ref, "s"), lease)
    assert [(k.url, k.current) for k in kept_tabs.kept] == [
        ("http://x/form", True),
        ("http://x/item", False),
    ]


def test_a_new_page_that_never_comes_is_given_up_when_its_browser_dies() -> None:
    """Playwright's new_page() never returns when the browser dies while it waits; the
    session's verb used to hang (holding the session) until its deadline. It is now given up
    as soon as the browser's process is gone: tab_gone, at once."""
    import subprocess
    from pathlib import Path
    from types import SimpleNamespace

    import anyio

    from browserbay.keeper.browsers import BrowserPool, Running
    from browserbay.refusals import Refusal

    proc = subprocess.Popen(["sleep", "30"])
    running = Running("bb-x", None, SimpleNamespace(pid=proc.pid), Path("/"), True, 0.0)  # type: ignore[arg-type]
    pool = BrowserPool(None, None, None, None, None, None, None)  # type: ignore[arg-type]

    class Context:
        async def new_page(self) -> None:
            await anyio.sleep_forever()

    async def main() -> Refusal:
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.to_thread.run_sync, lambda: (time.sleep(0.3), proc.kill()))
            try:
                with anyio.fail_after(5):
                    await pool.new_page(running, Context())
            except Refusal as r:
                return r
        raise AssertionError("new_page returned")

    started = time.monotonic()
    refusal = anyio.run(main)
    proc.wait()
    assert refusal.code == "tab_gone"
    assert time.monotonic() - started < 3


def test_a_failed_tab_new_leaves_no_blank_tab_and_keeps_the_current(
    fresh_bay: Bay, demo: str
) -> None:
    """`tab new <url>` whose page cannot load is refused and changes nothing: it used to
    leave a blank tab behind as the current one (which a crash then restored as "current"
    nowhere)."""
    fresh_bay.ok("open", f"{demo}/form.html")
    before = fresh_bay.ok("tab", "list")["tabs"]
    frame = _call(fresh_bay, "a", "tab", action="new", arg="http://127.0.0.1:9/")
    assert frame["ok"] is False
    assert frame["code"] == "action_failed", frame
    assert fresh_bay.ok("tab", "list")["tabs"] == before
    assert fresh_bay.ok("get", "url")["value"] == f"{demo}/form.html"


def test_a_killed_process_is_not_alive_before_it_is_reaped() -> None:
    """The keeper tells a dead browser by /proc (a zombie, or a task already exiting), not
    by waiting for its driver's disconnect event."""
    import subprocess

    proc = subprocess.Popen(["sleep", "30"])
    assert procfs.alive(proc.pid)
    proc.kill()
    end = time.monotonic() + 5
    while procfs.alive(proc.pid) and time.monotonic() < end:
        time.sleep(0.01)
    assert not procfs.alive(proc.pid)  # a zombie: killed, not yet reaped
    proc.wait()
    assert not procfs.alive(proc.pid)


def test_a_new_ephemeral_session_right_after_its_shared_browser_died_gets_a_new_one(
    fresh_bay: Bay, demo: str
) -> None:
    """An ephemeral browser killed just before another session asks for a context: the dead
    one is never handed out (new_context on it used to escape as internal_error)."""
    fresh_bay.ok("open", f"{demo}/", session="first")
    for n in range(3):
        (pid,) = [b["pid"] for b in fresh_bay.ok("keeper", "status")["browsers"]]
        os.kill(pid, signal.SIGKILL)
        frame = _call(fresh_bay, f"next{n}", "open", url=f"{demo}/form.html")
        assert frame["ok"], frame


def test_a_tab_being_opened_becomes_current_only_once_it_loaded(fresh_bay: Bay, demo: str) -> None:
    """While `tab new <url>` loads, the session's current tab is still the one it was: a crash
    or a keeper killed meanwhile keeps that one as current (it used to be the blank new tab,
    which is never kept, so the restore made the last tab current)."""
    first = fresh_bay.ok("open", f"{demo}/form.html")["tab"]
    opened: dict[str, Any] = {}
    worker = threading.Thread(
        target=lambda: opened.update(
            _call(fresh_bay, "a", "tab", action="new", arg=f"{demo}/slow?s=3")
        )
    )
    worker.start()
    time.sleep(1.5)
    (session,) = [
        s for s in fresh_bay.ok("keeper", "status")["sessions"] if s["session"]["id"] == "a"
    ]
    assert session["leases"][0]["current_tab"] == first
    assert session["leases"][0]["tabs"] == 2
    worker.join()
    assert opened["ok"], opened
    assert fresh_bay.ok("tab", "list")["tabs"][-1]["current"] is True


def test_tab_ids_never_repeat_across_keepers_even_after_a_kill(fresh_bay: Bay, demo: str) -> None:
    """A new keeper numbered its tabs from t1 again, so a tab id the session saw before a
    restart could name another of its tabs (`tab close t9` closed a different tab). Ids are
    now reserved in blocks before use: a stale one is tab_gone."""
    fresh_bay.ok("open", f"{demo}/form.html")
    old = fresh_bay.ok("tab", "new", f"{demo}/item/1")["tab"]
    before = {t["id"] for t in fresh_bay.ok("tab", "list")["tabs"]}
    pid = fresh_bay.ok("keeper", "status")["pid"]
    os.kill(pid, signal.SIGKILL)
    after = fresh_bay.ok("tab", "list")["tabs"]  # a new keeper; the kept tabs come back
    assert [t["url"] for t in after] == [f"{demo}/form.html", f"{demo}/item/1"]
    assert not before & {t["id"] for t in after}
    r = fresh_bay("tab", "close", old)
    assert r.frame["code"] == "tab_gone", r.frame
    assert len(fresh_bay.ok("tab", "list")["tabs"]) == 2


class _OwnersProfiles:
    """The profile book as the owner's channel sees it: every profile may be reached."""

    @staticmethod
    def check_ref(ref: Any, channel: Any) -> None:
        return None


class _DyingPage:
    """A page whose browser dies as it is brought to front (Playwright raises then)."""

    def __init__(self, url: str, dies: bool):
        self.url = url
        self.dies = dies

    async def bring_to_front(self) -> None:
        if self.dies:
            raise RuntimeError("Target page, context or browser has been closed")

    async def title(self) -> str:
        return "t"


def test_a_switch_whose_browser_dies_leaves_the_current_tab_as_it_was() -> None:
    """`tab <id>` made the tab current before bringing it to front: when the browser died
    right then, the switch was refused but the current tab had moved (and the crash path
    kept it: faults campaign, browser kills on a shared profile). Negative control: the same
    switch on a live page does move it."""
    import anyio

    from browserbay import verbs
    from browserbay.keeper.channels import OWNER
    from browserbay.keeper.route import LeaseCall
    from browserbay.keeper.sessions import Lease, Session, TabBook
    from browserbay.keeper.sessionverbs import TabVerbs
    from browserbay.model import ProfileRef, SessionRef

    async def switch(dies: bool) -> tuple[str | None, bool]:
        ref = SessionRef("s", "flag")
        session = Session(ref, "g")
        lease = Lease(ref, ProfileRef("bp-1", "work", "chromium", 1, False))
        session.leases["bp-1"] = lease
        book = TabBook()
        first = book.add(_DyingPage("http://a/", False), lease, None)  # type: ignore[arg-type]
        second = book.add(_DyingPage("http://b/", dies), lease, None)  # type: ignore[arg-type]
        book.select(lease, first.id)

        class Leases:
            @staticmethod
            def lease_of(tab: Any) -> Lease:
                return lease

        tab_verbs = TabVerbs(None, book, Leases(), _OwnersProfiles())  # type: ignore[arg-type]
        call = LeaseCall(
            verbs.BY_NAME["tab"], {"action": second.id}, session, lease, 1e12, 30, OWNER
        )
        refused = False
        try:
            await tab_verbs.tab(call)
        except RuntimeError:
            refused = True
        return lease.current, refused

    assert anyio.run(switch, True) == ("t1", True)  # refused: still the tab it was
    assert anyio.run(switch, False) == ("t2", False)  # the control: a live switch moves it


class _LoadingPage:
    """A new tab's page; ``crash`` (if set) runs while it loads, as a browser dying then."""

    def __init__(self, crash: Any = None):
        self.url = "about:blank"
        self.crash = crash

    async def goto(self, url: str, wait_until: str = "load") -> None:
        if self.crash is not None:
            self.crash()
        self.url = url

    async def title(self) -> str:
        return "t"

    async def close(self) -> None:
        return None


def test_a_tab_new_whose_browser_dies_as_it_loads_is_not_answered_ok() -> None:
    """`tab new <url>` answered ok although its browser died while the tab loaded: the crash
    had kept the tabs with the previous current one, so after the restore the current tab was
    not the one the answer had opened (faults campaign, browser kills on a shared profile).
    Negative control: the same `tab new` without a crash is ok and makes the tab current."""
    import anyio

    from browserbay import verbs
    from browserbay.keeper.channels import OWNER
    from browserbay.keeper.route import LeaseCall
    from browserbay.keeper.sessions import Lease, Session, TabBook
    from browserbay.keeper.sessionverbs import TabVerbs
    from browserbay.model import ProfileRef, SessionRef
    from browserbay.refusals import Refusal

    async def tab_new(crashes: bool) -> tuple[str | None, str]:
        ref = SessionRef("s", "flag")
        session = Session(ref, "g")
        lease = Lease(ref, ProfileRef("bp-1", "work", "chromium", 1, False))
        book = TabBook()
        first = book.add(_LoadingPage(), lease, None)  # type: ignore[arg-type]
        book.select(lease, first.id)

        def crash() -> None:  # what the keeper's crash path does to the lease
            for tab in list(lease.tabs.values()):
                book.drop(tab, lease, "its browser stopped unexpectedly")
            book.select(lease, None)

        class Leases:
            dialogs = None  # no page of this stand-in opens a dialog

            async def ensure(self, session: Any, lease: Any) -> None:
                return None

            async def new_tab(self, lease: Lease) -> Any:
                tab = book.add(_LoadingPage(crash if crashes else None), lease, None)  # type: ignore[arg-type]
                book.select(lease, tab.id)
                return tab

        tab_verbs = TabVerbs(None, book, Leases(), _OwnersProfiles())  # type: ignore[arg-type]
        args = {"action": "new", "arg": "http://b/"}
        try:
            await tab_verbs.tab(
                LeaseCall(verbs.BY_NAME["tab"], args, session, lease, 1e12, 30, OWNER)
            )
        except Refusal as r:
            return lease.current, r.code
        return lease.current, "ok"

    assert anyio.run(tab_new, True) == (None, "action_failed")
    assert anyio.run(tab_new, False) == ("t2", "ok")
