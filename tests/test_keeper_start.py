"""A keeper's cold start (issue 19 item 6): what it does early to answer its first page verb
sooner keeps every guarantee of a later start. (How fast is measured in bench/perf.py part c,
side by side with agent-browser, never asserted here.)"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from browserbay import procfs
from browserbay.keeper.driver import compile_caches, usable_cache
from browserbay_testing import Bay

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
