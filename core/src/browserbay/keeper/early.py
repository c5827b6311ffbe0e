"""Playwright's Node.js driver, spawned at the keeper's first instant (``python -m
browserbay.keeper``: right after :func:`browserbay.keys.hide_keys`, before anything slow is
imported). Standard library only, and nothing of Playwright's Python side.

A cold ``bay open`` waits for a serial chain: Playwright's Python import (~250 ms), then its
Node.js driver's boot (~300 ms), then the browser's launch. Spawned here, the driver boots on
the other core while Python imports Playwright and the keeper; :mod:`browserbay.keeper.pipe`
then hands its pipes to Playwright's connection (Playwright itself would spawn the same
``node cli.js run-driver``, with the same environment, only later).

The driver gets what Playwright's own spawn gives it — the keeper's environment (the keys are
out of it already), Playwright's three ``PW_*`` variables, stdin/stdout pipes, the keeper's
stderr (its log) — plus the compile cache (``NODE_COMPILE_CACHE``, :func:`compile_caches`) and
the private temp directory the keeper gives every child (``<runtime>/tmp``, see
``browserbay.keeper.daemon._private_tmp``, made under the keeper lock before any browser
starts).
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from browserbay.paths import BayPaths, ensure_private

log = logging.getLogger("browserbay.keeper")


@dataclass
class EarlyDriver:
    """A driver process spawned before Playwright was imported: taken once by
    :class:`browserbay.keeper.driver.PlaywrightDriver` (or discarded)."""

    proc: subprocess.Popen[bytes]
    #: Taken by the keeper's Playwright driver, which ends it from then on.
    taken: bool = False

    def discard(self) -> None:
        """End it: its stdin closed (the driver exits at end of input), killed if it has
        not within a second. A keeper that exits at start leaves no driver behind."""
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        try:
            self.proc.wait(1.0)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def compile_caches(state: Path, prefix: str = sys.prefix) -> tuple[Path, Path]:
    """Where the driver's compile cache may live, best first: in the install (``<prefix>/
    var/cache/browserbay/node-compile-cache``: shared by every home of the user who owns the
    install, so a fresh ``BAY_HOME``'s first start has it), else in the home's state.

    It holds V8's compiled code of Playwright's driver, keyed by Node's version and each
    file's content: no secret, but code the driver runs. So it is used only as a private
    directory of this user's (0700, :func:`browserbay.paths.ensure_private`): in an install
    this user can write — whoever can write there can already change the driver's code —
    and never in an install of somebody else's (another user's, or root's system install
    used by a user: the mkdir fails, or the directory is refused, and the home's is used)."""
    install = Path(prefix) / "var" / "cache" / "browserbay" / "node-compile-cache"
    return install, state / "node-compile-cache"


def usable_cache(candidates: Sequence[Path]) -> Path | None:
    """The first of ``candidates`` that is (or could be made) a private directory of this
    user's; None (no cache: Node compiles as without one) when none is."""
    for path in candidates:
        try:
            ensure_private(path)
        except OSError:  # NotYours too: never a directory of somebody else's
            log.debug("no compile cache for the Playwright driver at %s", path, exc_info=True)
            continue
        return path
    log.warning(
        "no compile cache for the Playwright driver (tried %s)", ", ".join(map(str, candidates))
    )
    return None


def driver_command() -> list[str] | None:
    """``node cli.js run-driver`` as Playwright would run it (its bundled Node, or
    ``PLAYWRIGHT_NODEJS_PATH``), found without importing Playwright; None when Playwright is
    not installed (the keeper's own start then says what is missing)."""
    spec = importlib.util.find_spec("playwright")
    if spec is None or not spec.submodule_search_locations:
        return None
    driver = Path(next(iter(spec.submodule_search_locations))) / "driver"
    node = os.environ.get("PLAYWRIGHT_NODEJS_PATH") or str(driver / "node")
    return [node, str(driver / "package" / "cli.js"), "run-driver"]


def driver_env(version: str) -> dict[str, str]:
    """Playwright's driver environment (``playwright._impl._driver.get_driver_env``)."""
    env = dict(os.environ)
    env["PW_LANG_NAME"] = "python"
    env["PW_LANG_NAME_VERSION"] = f"{sys.version_info.major}.{sys.version_info.minor}"
    env["PW_CLI_DISPLAY_VERSION"] = version
    return env


def playwright_version() -> str:
    """Playwright's version, from its generated version file (no import of Playwright)."""
    spec = importlib.util.find_spec("playwright._repo_version")
    if spec is None or spec.origin is None:
        return "unknown"
    for line in Path(spec.origin).read_text().splitlines():
        if line.startswith("__version__ = version = "):
            return line.split("=")[-1].strip().strip("'\"")
    return "unknown"


def start_driver(paths: BayPaths) -> EarlyDriver | None:
    """The driver, spawned now; None when it cannot be (no Playwright, no Node where it is
    looked for: the keeper's usual start then tries, and says why) or should not be: with no
    compile cache in the install (the home's own is not touched before the keeper lock and
    the home's checks, :func:`browserbay.keeper.daemon.bind_first`; the usual start uses it)."""
    try:
        command = driver_command()
        if command is None:
            return None
        if "NODE_COMPILE_CACHE" not in os.environ:  # one the user set is kept
            install, _home = compile_caches(paths.state)
            try:
                ensure_private(install)
            except OSError:  # NotYours too
                return None
            # Read by Node only (Chromium gets an environment of its own): a driver the
            # keeper starts later (after this one failed or stopped) gets it too.
            os.environ["NODE_COMPILE_CACHE"] = str(install)
        env = driver_env(playwright_version())
        env["TMPDIR"] = str(paths.runtime / "tmp")  # as os.environ gets it (_private_tmp)
        proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, close_fds=True
        )
    except (OSError, ValueError):  # not logged yet: the keeper's own start says it
        return None
    return EarlyDriver(proc)
