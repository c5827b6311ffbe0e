"""The keeper's fast paths keep their guarantees: a keeper spawned for a page verb starts the
browser's chain first (``--warm``) and still refuses what cannot start, with nothing recorded;
a ref clicked again is checked on its element each time (covered, disabled, moving: refused,
nothing pressed). (How fast is measured in bench/, side by side with agent-browser, never
asserted here.)"""

from __future__ import annotations

import re
import sqlite3

from browserbay import procfs
from browserbay.paths import bay_paths
from browserbay.protocol import KEEPER_WARM
from browserbay_testing import Bay, assert_refused
from browserbay_testing.plugin import keeper
from tests.test_click import COVER_JS, _page


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


def _browser_argv(b: Bay) -> list[str]:
    """The running browser's argv with its own id and directories left out."""
    with sqlite3.connect(bay_paths({"BAY_HOME": str(b.home)}).registry) as db:
        (row,) = db.execute("SELECT id, pid FROM browsers WHERE stopped_at IS NULL").fetchall()
    browser_id, pid = row
    return sorted(a for a in procfs.argv(pid)[1:] if browser_id not in a and str(b.home) not in a)


def test_the_browser_a_warm_start_launches_early_is_the_providers_own(demo: str) -> None:
    # The warm start launches the verb's browser beside the keeper's imports (daemon.Spare),
    # before the verb is read: it must be the browser the pool would have launched for that
    # verb — the provider's executable, flags and sandbox — and the one the verb then uses
    # (one browser row). Against a keeper that started cold and launched it for the verb.
    with keeper("w") as warm, keeper("c") as cold:
        warm.ok("open", f"{demo}/form.html")
        assert KEEPER_WARM in _argv(warm)
        cold.ok("status")
        cold.ok("open", f"{demo}/form.html")
        assert KEEPER_WARM not in _argv(cold)
        assert _browser_rows(warm) == _browser_rows(cold) == 1
        early, late = _browser_argv(warm), _browser_argv(cold)
        assert early == late
        assert any(a.startswith("--remote-debugging-pipe") for a in early), early  # a pipe


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


def _ref(b: Bay, s: str, name: str) -> str:
    text = b.ok("snapshot", "-i", session=s)["snapshot"]
    (line,) = [x for x in text.splitlines() if f'"{name}"' in x]
    return "@" + re.findall(r" @(\w+)", line)[0]


def test_a_ref_clicked_again_acts_once_each_time_and_is_still_refused_covered_or_disabled(
    bay: Bay, demo: str
) -> None:
    # The fast click keeps the element of a ref clicked twice (fastclick.RefHandles): each
    # later click is checked on it, now — a cover or a disabled state put on it after it was
    # kept refuses the click as before, and nothing is pressed.
    s = "perf-ref-again"
    _page(bay, demo, s)
    ref = _ref(bay, s, "Press")
    for n in (1, 2, 3):
        bay.ok("click", ref, session=s)
        assert bay.ok("get", "text", "#out", session=s)["value"] == f"pressed {n}"
    bay.ok("eval", COVER_JS, session=s)
    assert_refused(bay("click", ref, "--timeout", "2", session=s), "target_covered")
    assert bay.ok("get", "text", "#out", session=s)["value"] == "pressed 3"
    bay.ok("eval", "document.getElementById('cover').remove()", session=s)
    bay.ok("eval", "document.getElementById('b').disabled = true", session=s)
    refused = bay("click", ref, "--timeout", "2", session=s)
    assert refused.code != 0, refused
    assert bay.ok("get", "text", "#out", session=s)["value"] == "pressed 3"
    bay.ok("eval", "document.getElementById('b').disabled = false", session=s)
    bay.ok("click", ref, session=s)
    assert bay.ok("get", "text", "#out", session=s)["value"] == "pressed 4"
    # A new document: the kept element is gone with the old one; the ref is stale.
    bay.ok("open", f"{demo}/form.html", session=s)
    assert bay("click", ref, "--timeout", "2", session=s).code != 0
    bay.ok("close", session=s)


MOVING_JS = """(() => {
  document.head.insertAdjacentHTML('beforeend', `<style>
    @keyframes slide { from { margin-left: 0 } to { margin-left: 400px } }
    #b { animation: slide 0.4s linear infinite alternate }</style>`);
  return 'moving';
})()"""


def test_a_moving_element_is_not_pressed_at_a_point_it_may_have_left(bay: Bay, demo: str) -> None:
    # The fast path's one look cannot see an element move: one that is animated goes to
    # Playwright's click, which waits for it to stand still (here: never, so refused, and
    # nothing pressed). Negative control: the same click once the animation stops.
    s = "perf-moving"
    _page(bay, demo, s)
    assert bay.ok("eval", MOVING_JS, session=s)["value"] == "moving"
    ref = _ref(bay, s, "Press")
    refused = bay("click", ref, "--timeout", "2", session=s)
    assert refused.code != 0, refused
    assert bay.ok("get", "text", "#out", session=s)["value"] == "not yet"
    bay.ok("eval", "document.getElementById('b').style.animation = 'none'", session=s)
    bay.ok("click", ref, session=s)
    assert bay.ok("get", "text", "#out", session=s)["value"] == "pressed 1"
    bay.ok("close", session=s)


#: A jQuery-style animation: a script moves #b every frame (no CSS animation, nothing in
#: document.getAnimations()), and jQuery's timer list says an animation runs, as
#: jQuery(...).animate() / a jQuery UI accordion's slide do. Moved from requestAnimationFrame
#: (as jQuery 3 does), so that no two frames see it in one place, however loaded the machine.
SCRIPTED_JS = """(() => {
  const b = document.getElementById('b');
  b.style.position = 'relative';
  let x = 0;
  window.__moving = true;
  const step = () => {
    if (!window.__moving) return;
    x = (x + 7) % 400;
    b.style.left = x + 'px';
    requestAnimationFrame(step);
  };
  window.jQuery = { timers: [{ elem: document.body }] };
  requestAnimationFrame(step);
  return 'moving';
})()"""
STOP_JS = "window.__moving = false; window.jQuery.timers.length = 0; 'still'"


def test_a_script_animated_element_is_not_pressed_while_jquery_animates(
    bay: Bay, demo: str
) -> None:
    # The fast path's one look sees CSS and Web Animations only: an element a jQuery
    # animation moves (timers) was pressed at a point it may have left (MiniWoB++'s
    # click-collapsible-2: a click on the accordion's link landed on another). With one
    # running, the click goes to Playwright's, which waits for the element to stand still
    # (here: never, so refused, nothing pressed). Negative control: once it stops.
    s = "perf-scripted"
    _page(bay, demo, s)
    ref = _ref(bay, s, "Press")
    assert bay.ok("eval", SCRIPTED_JS, session=s)["value"] == "moving"
    refused = bay("click", ref, "--timeout", "2", session=s)
    assert refused.code != 0, refused
    assert bay.ok("get", "text", "#out", session=s)["value"] == "not yet"
    assert bay.ok("eval", STOP_JS, session=s)["value"] == "still"
    bay.ok("click", ref, session=s)
    assert bay.ok("get", "text", "#out", session=s)["value"] == "pressed 1"
    bay.ok("close", session=s)


def _bay_browsers(b: Bay) -> list[int]:
    """Browser processes of this home's (their argv names a dir under it and a bay id)."""
    home = str(b.home)
    found = []
    for pid in procfs.pids():
        argv = procfs.argv(pid)
        if any(a.startswith("--bay-browser=") for a in argv) and any(home in a for a in argv):
            found.append(pid)
    return found


def test_a_keeper_killed_between_the_early_launch_and_its_adoption_leaves_nothing_behind(
    demo: str,
) -> None:
    # The attack on the warm start: the browser launched beside the keeper's imports
    # (daemon.Spare) has no registry row until the pool adopts it, after the orphan sweep —
    # a keeper SIGKILLed in between left its run/browsers/bb-* directory behind, which no
    # sweep ever found (nothing names it). The next keeper on the home must leave no such
    # directory and no such browser process; and it serves.
    with keeper("k") as b:
        killed = b("open", f"{demo}/form.html", "--timeout", "20", env={"BAY_FAULTS": KILL})
        assert killed.code != 0, killed
        # The kill landed after the launch: the killed keeper's browser dir is there.
        assert list((b.home / "run" / "browsers").glob("bb-*")), _log_text(b)
        assert b.ok("status")["session"]["id"] == "a"  # a new keeper, no fault
        assert not list((b.home / "run" / "browsers").glob("bb-*"))
        assert _bay_browsers(b) == []
        # Negative control: the new keeper's own browser is there once a page verb ran.
        assert b.ok("open", f"{demo}/form.html")["url"].endswith("/form.html")
        assert len(list((b.home / "run" / "browsers").glob("bb-*"))) == 1
        assert len(_bay_browsers(b)) >= 1


KILL = "keeper.spare_launched=kill"


def _log_text(b: Bay) -> str:
    log = b.home / "logs" / "keeper.log"
    return log.read_text() if log.exists() else ""
