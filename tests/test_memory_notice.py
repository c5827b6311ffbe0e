"""A browser over the owner's memory line (BAY_MEMORY_NOTICE_MB) is marked and its sessions are
told once; it is never stopped for its size. Real Chromium, the real keeper and CLI."""

from __future__ import annotations

import time

import pytest

from browserbay_testing import wait_for
from browserbay_testing.plugin import keeper

pytestmark = pytest.mark.browser


def test_a_browser_over_the_memory_line_is_marked_said_once_and_never_stopped(demo: str) -> None:
    # A line far below any Chromium's PSS: it is over at the first measure.
    with keeper("mem", BAY_MEMORY_NOTICE_MB="1", BAY_TICK="0.3") as bay:
        heard: dict[str, list[str]] = {"m1": [], "m2": []}

        def verb(s: str, *args: str) -> None:
            frame = bay(*args, session=s).frame
            assert frame["ok"], frame
            if "memory" in (frame.get("notice") or ""):
                heard[s].append(frame["notice"])

        bay.ok("new", "big", session="m1")
        for s in ("m1", "m2"):
            bay.ok("use", "big", session=s)
        verb("m1", "open", f"{demo}/form.html")
        verb("m2", "get", "url")  # m2 holds a lease on the same browser
        wait_for(
            lambda: [verb(s, "get", "url") for s in ("m1", "m2")] and all(heard.values()),
            timeout=20,
            what="the memory notice, to both sessions",
        )
        assert "over the owner's line of 1 MiB" in heard["m1"][0]
        assert "not stopped" in heard["m1"][0]
        time.sleep(1.5)  # several more measures, still over the line: said only once
        for s in ("m1", "m2"):
            verb(s, "get", "url")
            assert len(heard[s]) == 1, heard[s]
        lease = bay.ok("status", session="m1")["leases"][0]
        assert lease["memory_over"] is True
        assert lease["browser_pss_kib"] > 1024
        assert lease["browser"] is not None  # never stopped for its size
        assert "over the memory line" in bay("status", session="m1", json_=False).stdout
