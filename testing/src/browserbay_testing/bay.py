"""The real ``bay`` CLI against a keeper of its own (:class:`Bay`), its answers
(:class:`Result`), and waiting for a condition or for a keeper to be gone."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from browserbay.paths import bay_paths

#: The ``bay`` command of the environment the tests run in.
BAY = str(Path(sys.executable).with_name("bay"))
#: The test plugins a test's keeper loads (``BAY_PLUGIN_MODULES``): a directory of plain
#: modules put on the keeper's ``PYTHONPATH``, each registered under its module name.
KEEPER_PLUGINS = str(Path(__file__).with_name("keeper_plugins"))


def wait_for(fn: Callable[[], Any], timeout: float = 15.0, what: str = "condition") -> Any:
    """``fn()``'s first truthy value, polled every 50 ms; AssertionError naming ``what`` after
    ``timeout`` seconds."""
    end = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def wait_for_no_keeper(home: Path, timeout: float = 60) -> None:
    """Until no keeper holds this home's lock (a keeper holds it for its whole life)."""
    lock = bay_paths({"BAY_HOME": str(home)}).runtime / "keeper.lock"
    if not lock.exists():
        return
    end = time.monotonic() + timeout
    with open(lock, "a") as f:
        while time.monotonic() < end:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                time.sleep(0.05)


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    @property
    def frame(self) -> dict[str, Any]:
        lines = self.stdout.strip().splitlines()
        assert len(lines) == 1, f"--json must print exactly one line, got {self.stdout!r}"
        value = json.loads(lines[0])
        assert isinstance(value, dict)
        return value

    @property
    def data(self) -> Any:
        frame = self.frame
        assert frame["ok"], frame
        return frame["data"]


class Bay:
    """Runs the real `bay` CLI against one BAY_HOME."""

    def __init__(self, home: Path, **env: str):
        self.home = home
        self.env = dict(os.environ)
        for key in list(self.env):
            if key.startswith("BAY_"):
                del self.env[key]
        self.env.update(
            BAY_HOME=str(home),
            PYTHONPATH=KEEPER_PLUGINS,
            BAY_PLUGIN_MODULES="recorder",
            BAY_RECORDER_FILE=str(home / "recorder.jsonl"),
        )
        self.env.update(env)

    def __call__(
        self,
        *args: str,
        session: str | None = "a",
        json_: bool = True,
        env: dict[str, str] | None = None,
        timeout: float = 90,
        stdin: str | None = None,
    ) -> Result:
        e = dict(self.env)
        if session is not None:
            e["BAY_SESSION"] = session
        e.update(env or {})
        argv = [BAY, *args, *(["--json"] if json_ else [])]
        p = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            env=e,
            timeout=timeout,
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
        )
        return Result(p.returncode, p.stdout, p.stderr)

    def ok(self, *args: str, session: str | None = "a", **kw: Any) -> Any:
        r = self(*args, session=session, **kw)
        assert r.code == 0, (args, r)
        return r.data

    def stop(self) -> None:
        """Stop the keeper and wait until it has exited: it writes its last lines into the
        home as it goes, so only then may a test remove the home."""
        subprocess.run([BAY, "keeper", "stop"], env=self.env, capture_output=True, timeout=60)
        wait_for_no_keeper(self.home)

    def keeper_pid(self) -> int:
        """The pid of this home's keeper (started by this call when none runs: ``keeper
        start`` answers the running one)."""
        return int(self.ok("keeper", "start", session=None)["pid"])

    def recorded(self) -> list[dict[str, Any]]:
        path = self.home / "recorder.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line]
