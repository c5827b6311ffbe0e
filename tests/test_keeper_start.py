"""A keeper's cold start (issue 19 item 6): what it does early to answer its first page verb
sooner keeps every guarantee of a later start. (How fast is measured in bench/perf.py part c,
side by side with agent-browser, never asserted here.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from browserbay import procfs
from browserbay.keeper.early import compile_caches, usable_cache
from browserbay_testing import Bay, assert_refused
from browserbay_testing.plugin import keeper

DRIVER = "run-driver"


def _driver_pids(b: Bay) -> list[int]:
    """The keeper's Playwright driver processes (Node running ``cli.js run-driver``)."""
    keeper = b.keeper_pid()
    return [p for p in procfs.tree(keeper) if p != keeper and DRIVER in procfs.argv(p)]


def test_a_fresh_home_gets_the_installs_compile_cache(fresh_bay: Bay, demo: str) -> None:
    # The bench's cold open (a new BAY_HOME each time) found no compile cache: Node compiled
    # the whole driver again (about twice the CPU). The cache is the install's now, shared by
    # every home of its owner: a private directory (0700, ours) in the install's prefix.
    fresh_bay.ok("open", f"{demo}/form.html")
    (driver,) = _driver_pids(fresh_bay)
    install, home = compile_caches(fresh_bay.home / "state")
    assert procfs.environ(driver)["NODE_COMPILE_CACHE"] == str(install)
    assert install.is_relative_to(sys.prefix)
    st = install.lstat()
    assert (st.st_uid, st.st_mode & 0o777) == (os.getuid(), 0o700)
    assert any(install.iterdir())  # Node wrote its cache there
    assert not home.exists()


def test_a_cache_directory_of_somebody_elses_is_never_used(tmp_path: Path) -> None:
    # The attack: another user plants the cache directory in an install the keeper's user
    # runs (or a shared prefix), to feed its Node.js driver compiled code of their own. The
    # planted directory is refused and the home's own private one is used instead.
    prefix, state = tmp_path / "prefix", tmp_path / "state"
    install, home = compile_caches(state, str(prefix))
    install.mkdir(parents=True, mode=0o755)
    os.chown(install, 65534, 65534)  # nobody's
    assert usable_cache((install, home)) == home
    assert home.lstat().st_mode & 0o777 == 0o700
    assert install.lstat().st_uid == 65534  # left as it was: not taken over, not removed
    # A symlink to a directory of ours is no cache directory either (never followed).
    install.rmdir()
    (tmp_path / "elsewhere").mkdir()
    install.symlink_to(tmp_path / "elsewhere")
    assert usable_cache((install, home)) == home
    # Negative control: an install of ours gets the cache, made private.
    install.unlink()
    assert usable_cache((install, home)) == install
    assert install.lstat().st_mode & 0o777 == 0o700


def _log(b: Bay) -> str:
    return (b.home / "logs" / "keeper.log").read_text()


def _early_driver_pid(b: Bay) -> int:
    """The driver pid the keeper's log says it took from its first instant."""
    said = re.findall(r"the Playwright driver \(pid (\d+)\) spawned at the keeper's start", _log(b))
    assert said, "the keeper did not use the driver spawned at its start"
    return int(said[-1])


def test_the_driver_spawned_at_the_first_instant_gets_no_key_and_the_private_tmp(
    demo: str,
) -> None:
    # The driver is spawned before Playwright (and most of the keeper) is imported: right
    # after hide_keys. The attack: a key in the environment the keeper was started with
    # reaching the driver (every process of the user can read a process's environ, and the
    # driver's children inherit it). It must see the environment Playwright's own spawn
    # would give it, with the key gone, and the keeper's private temp directory.
    secret = "s3cr3t-early-driver-key"
    with keeper("early", BAY_INTEGRATION_EARLYTEST_TOKEN=secret) as b:
        b.ok("open", f"{demo}/form.html")
        pid = _early_driver_pid(b)
        assert _driver_pids(b) == [pid]
        env = procfs.environ(pid)
        assert not [k for k, v in env.items() if k.startswith("BAY_INTEGRATION") or secret in v]
        assert env["TMPDIR"] == str(b.home / "run" / "tmp")
        assert env["PW_LANG_NAME"] == "python"
        assert b.ok("get", "title")["value"] == "Sign up"


def test_the_collector_paused_for_a_cold_start_runs_again_once_the_keeper_listens(
    fresh_bay: Bay, demo: str
) -> None:
    # `python -m browserbay.keeper` pauses the cyclic collector for its start (the start's
    # imports are CPU a cold open waits for). A keeper that stayed without it would never
    # collect a cycle in its whole life: it must be on again once the keeper listens, with
    # the start's objects frozen, and the keeper must serve as before.
    fresh_bay.ok("open", f"{demo}/form.html")
    assert fresh_bay.ok("get", "title")["value"] == "Sign up"
    log = (fresh_bay.home / "logs" / "keeper.log").read_text()
    listening = log.index(" listening on ")
    (line,) = re.findall(r"garbage collector on \((\d+) objects of the start frozen\)", log)
    assert int(line) > 10_000  # every module's objects, not a handful
    assert log.index("garbage collector on") > listening


def test_resume_gc_turns_on_only_a_collector_the_start_paused() -> None:
    # In a child: the collector's state is the process's. Resumed once; never turned on when
    # the keeper's start did not pause it (an embedding process that disabled it keeps it off).
    code = """
import gc
from browserbay.keeper import daemon
gc.disable()
daemon.resume_gc()
print(gc.isenabled(), gc.get_freeze_count())
daemon._gc_paused = True  # as main(gc_paused=True) leaves it
daemon.resume_gc()
print(gc.isenabled(), gc.get_freeze_count() > 0)
gc.disable()
daemon.resume_gc()
print(gc.isenabled())
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["False 0", "True True", "False"]


def test_a_keeper_that_does_not_start_leaves_no_early_driver(bay: Bay) -> None:
    # A second keeper on a home whose keeper runs exits at once ("another keeper holds the
    # lock"): the driver it spawned at its first instant must go with it, not be left running.
    bay.ok("status")
    home = str(bay.home)
    env = {**bay.env, "BAY_HOME": home}
    before = {p for p in procfs.pids() if DRIVER in procfs.argv(p)}
    done = subprocess.run(
        [sys.executable, "-m", "browserbay.keeper"], env=env, capture_output=True, timeout=60
    )
    assert done.returncode == 0, done
    assert b"another keeper" in done.stderr
    left = [
        p
        for p in procfs.pids()
        if p not in before
        and DRIVER in procfs.argv(p)
        and procfs.environ(p).get("BAY_HOME") == home
    ]
    assert left == []


def test_an_early_driver_that_dies_is_not_waited_for(demo: str) -> None:
    # A driver that exits at once (here: "node" is /bin/false) is discarded and Playwright's
    # own start is tried; that failing too, the page verb is refused backend_unavailable (not
    # hung until its deadline), nothing recorded, and the keeper keeps serving.
    with keeper("edie", PLAYWRIGHT_NODEJS_PATH="/bin/false") as b:
        done = b("open", f"{demo}/form.html", "--timeout", "20")
        refused = assert_refused(done, "backend_unavailable")
        assert "driver did not start" in refused["message"]
        assert "the early Playwright driver failed" in _log(b)
        assert b.ok("status")["session"]["id"]
