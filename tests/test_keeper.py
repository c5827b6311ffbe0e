"""The keeper daemon: status, graceful stop, logs, version replacement, orphan sweep, idle
timeout, private file modes, secrets, and one session never blocking another."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

from browserbay import procfs
from browserbay.paths import bay_paths
from browserbay_testing import Bay, assert_refused
from browserbay_testing.bay import wait_for_no_keeper


def _marked(browser_id: str) -> list[int]:
    """Processes whose command line carries the browser's marker switch."""
    return [p for p in procfs.pids() if f"--bay-browser={browser_id}" in procfs.argv(p)]


def _wait(predicate, timeout: float = 15.0) -> bool:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return bool(predicate())


def _registry(b: Bay) -> sqlite3.Connection:
    return sqlite3.connect(bay_paths({"BAY_HOME": str(b.home)}).registry)


def test_status_stop_and_logs(fresh_bay: Bay, demo: str) -> None:
    fresh_bay.ok("open", f"{demo}/")
    status = fresh_bay.ok("keeper", "status")
    paths = bay_paths({"BAY_HOME": str(fresh_bay.home)})
    assert status["socket"] == str(paths.socket)
    assert status["version"] == "0.1.0"
    assert status["uptime_s"] >= 0
    assert [s["session"]["id"] for s in status["sessions"]] == ["a"]
    (browser,) = status["browsers"]
    pid = status["pid"]
    assert procfs.alive(pid)
    assert _marked(browser["id"]) == [browser["pid"]]

    plain = fresh_bay("keeper", "status", json_=False)
    assert f"keeper pid {pid}" in plain.stdout

    stopped = fresh_bay.ok("keeper", "stop")
    assert stopped["pid"] == pid
    assert _wait(lambda: not procfs.alive(pid))
    assert _marked(browser["id"]) == []
    assert not paths.socket.exists()
    with _registry(fresh_bay) as db:
        row = db.execute("SELECT stop_reason FROM browsers WHERE id=?", (browser["id"],)).fetchone()
    assert row == ("keeper_stop",)

    log = fresh_bay("keeper", "logs", json_=False).stdout
    assert f"browser {browser['id']} stopped (keeper_stop)" in log
    assert "keeper stopped" in log
    # `keeper start` brings it back.
    started = fresh_bay.ok("keeper", "start")
    assert started["pid"] != pid


def test_a_keeper_of_another_version_is_asked_to_exit_and_replaced(fresh_bay: Bay) -> None:
    old = fresh_bay.ok("keeper", "start")["pid"]
    code = (
        "import browserbay.protocol as p; p.__version__ = '0.0.0-other';"
        "from browserbay import client; import json;"
        "print(json.dumps(client.call('status', {}, session={'id': 'v', 'origin': 'env'})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=fresh_bay.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    # The keeper started in its place is of this code's version, not the patched client's:
    # it runs nothing that client sends after its hello (keeper/daemon._other_version).
    answer = json.loads(out.stdout)
    assert answer["code"] == "keeper_unavailable", answer
    assert "the client 0.0.0-other" in answer["message"]
    assert _wait(lambda: not procfs.alive(old))
    new = fresh_bay.ok("keeper", "status")["pid"]
    assert new != old
    assert "asked to stop (version)" in fresh_bay("keeper", "logs", json_=False).stdout


def test_orphans_of_a_killed_keeper_are_swept_at_the_next_start(fresh_bay: Bay, demo: str) -> None:
    fresh_bay.ok("open", f"{demo}/")
    status = fresh_bay.ok("keeper", "status")
    (browser,) = status["browsers"]
    tmp = fresh_bay.home / "run" / "tmp"
    assert list(tmp.glob("playwright*")), "Playwright's temp dirs belong under BAY_HOME"
    os.kill(status["pid"], signal.SIGKILL)
    assert _wait(lambda: not procfs.alive(status["pid"]))
    # The next start makes a new keeper, which sweeps what the old one left.
    fresh_bay.ok("keeper", "start")
    after = fresh_bay.ok("keeper", "status")
    assert browser["id"] in after["swept_at_start"]
    assert not list(tmp.glob("playwright*"))
    assert _wait(lambda: _marked(browser["id"]) == [])
    with _registry(fresh_bay) as db:
        row = db.execute("SELECT stop_reason FROM browsers WHERE id=?", (browser["id"],)).fetchone()
        assert row == ("orphan_swept",)
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert not (fresh_bay.home / "run" / "browsers" / browser["id"]).exists()
    # The session starts over with a new browser; its old tab is gone.
    assert_refused(fresh_bay("tab", browser["id"]), "tab_gone")
    assert fresh_bay.ok("open", f"{demo}/")["title"] == "browserbay demo"


def test_an_idle_session_loses_its_browser(fresh_bay: Bay, demo: str) -> None:
    fresh_bay.env.update(BAY_IDLE_TIMEOUT="2", BAY_TICK="0.2", BAY_BROWSER_GRACE="0.5")
    fresh_bay.ok("open", f"{demo}/")
    browser = fresh_bay.ok("status")["browser"]
    assert browser
    assert _wait(lambda: not fresh_bay.ok("keeper", "status", session="watcher")["browsers"])
    assert _wait(lambda: _marked(browser) == [])
    assert "idle" in fresh_bay("keeper", "logs", json_=False).stdout
    assert _wait(
        lambda: (
            ("bay_browser_stopped", "idle")
            in [(r["hook"], r.get("reason")) for r in fresh_bay.recorded()]
        )
    )


def test_files_are_private(fresh_bay: Bay, demo: str) -> None:
    fresh_bay.ok("open", f"{demo}/")
    paths = bay_paths({"BAY_HOME": str(fresh_bay.home)})
    for d in (paths.state, paths.data, paths.runtime, paths.logs, paths.browsers):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
    assert stat.S_IMODE(paths.socket.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(paths.socket.stat().st_mode) & 0o077 == 0
    for f in (paths.registry, paths.keeper_log):
        assert stat.S_IMODE(f.stat().st_mode) == 0o600, f


def test_typed_text_is_never_logged_audited_or_hooked(fresh_bay: Bay, demo: str) -> None:
    secret = "hunter2-typed-secret"
    fresh_bay.ok("open", f"{demo}/form.html")
    fresh_bay.ok("fill", "input[name=name]", secret)
    fresh_bay.ok("type", "input[name=email]", secret)
    fresh_bay.ok("eval", f"'{secret}'.length")
    fresh_bay.ok("keeper", "stop")
    # The stop's own audit row is written after its answer left: read once the keeper is gone.
    wait_for_no_keeper(fresh_bay.home)
    paths = bay_paths({"BAY_HOME": str(fresh_bay.home)})
    for f in [
        paths.keeper_log,
        *paths.state.glob("registry.sqlite3*"),
        fresh_bay.home / "recorder.jsonl",
    ]:
        assert secret.encode() not in f.read_bytes(), f
    fills = [r for r in fresh_bay.recorded() if r["hook"] == "bay_after_verb"]
    fill = next(r for r in fills if r["call"]["verb"] == "fill")
    assert fill["call"]["args"]["text"] == {"chars": len(secret)}
    with _registry(fresh_bay) as db:
        verbs = [r[0] for r in db.execute("SELECT verb FROM audit WHERE session='a' ORDER BY id")]
    assert verbs == ["open", "fill", "type", "eval", "keeper"]


def test_a_slow_verb_in_one_session_does_not_block_another(bay: Bay, demo: str) -> None:
    bay.ok("open", f"{demo}/", session="busy")
    bay.ok("open", f"{demo}/", session="free")
    # The busy session's verb is still running when the free one's answer is back: an
    # order of events, not a wall-clock bound (the free verb has the 8 s of the wait).
    slow = threading.Thread(target=lambda: bay.ok("wait", "8000", session="busy"))
    slow.start()
    time.sleep(0.5)
    assert bay.ok("get", "title", session="free")["value"] == "browserbay demo"
    assert slow.is_alive()
    slow.join()
    bay.ok("close", session="busy")
    bay.ok("close", session="free")


def test_output_over_50000_characters_is_cut_naming_the_full_file(bay: Bay, demo: str) -> None:
    bay.ok("open", f"{demo}/list.html?n=3000", session="long")
    plain = bay("get", "html", session="long", json_=False)
    assert plain.code == 0
    body, marker = plain.stdout.rsplit("\n… [cut at 50,000 of ", 1)
    assert len(body) == 50_000
    full_path = Path(marker.split("full text: ", 1)[1].rstrip("]\n"))
    full = full_path.read_text()
    assert full.startswith(body)
    assert len(full) > 100_000
    assert stat.S_IMODE(full_path.stat().st_mode) == 0o600
    as_json = bay.ok("get", "html", session="long")
    assert len(as_json["value"]) < 50_200
    assert Path(as_json["cut"]["value"]["file"]).read_text() == full
    bay.ok("close", session="long")
