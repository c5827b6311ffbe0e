"""The keeper's fast paths keep their guarantees: a keeper spawned for a page verb starts the
browser's chain first (``--warm``) and still refuses what cannot start, with nothing recorded.
(How fast is measured in bench/, side by side with agent-browser, never asserted here.)"""

from __future__ import annotations

import sqlite3

from browserbay import procfs
from browserbay.paths import bay_paths
from browserbay.protocol import KEEPER_WARM
from browserbay_testing import Bay, assert_refused
from browserbay_testing.plugin import keeper


def _argv(b: Bay) -> list[str]:
    return procfs.argv(b.keeper_pid())


def _browser_rows(b: Bay) -> int:
    with sqlite3.connect(bay_paths({"BAY_HOME": str(b.home)}).registry) as db:
        return int(db.execute("SELECT count(*) FROM browsers").fetchone()[0])


def test_a_keeper_spawned_for_a_page_verb_starts_warm_and_serves_it(
    fresh_bay: Bay, demo: str
) -> None:
    opened = fresh_bay.ok("open", f"{demo}/form.html")
    assert opened["url"].endswith("/form.html")
    assert KEEPER_WARM in _argv(fresh_bay)
    assert fresh_bay.ok("get", "title")["value"] == "Sign up"
    assert _browser_rows(fresh_bay) == 1


def test_a_keeper_spawned_for_another_verb_does_not_start_warm(fresh_bay: Bay) -> None:
    fresh_bay.ok("status")
    assert KEEPER_WARM not in _argv(fresh_bay)


def test_a_driver_that_cannot_start_is_refused_and_records_no_browser(demo: str) -> None:
    # The attack on the warm start: Playwright's driver fails while the keeper is still
    # importing. The page verb is refused with a stable code (not an internal error), no
    # browser row or directory is left behind, and the keeper keeps serving.
    with keeper("d", PLAYWRIGHT_NODEJS_PATH="/nonexistent/node") as b:
        for _ in range(2):  # the verb tries the driver again, and is refused again
            refused = assert_refused(b("open", f"{demo}/form.html"), "backend_unavailable")
            assert "driver did not start" in refused["message"]
        assert KEEPER_WARM in _argv(b)
        assert _browser_rows(b) == 0
        assert not any((b.home / "run" / "browsers").glob("bb-*"))
        assert b.ok("status")["session"]["id"] == "a"
