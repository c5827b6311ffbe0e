"""Issue 15 item 10: faults that read as something else, each performed on the real keeper.

* A full disk made every verb ``keeper_unavailable``: the audit insert failed inside the
  handler and took the connection down. The home here is a real, tiny tmpfs, really filled.
* Downloads were accepted silently, landed anywhere and were never capped.
* Spill files in ``run/outputs`` were never pruned.
* A directory at ``keeper.sock`` ended the keeper.
* Screenshots were written 0644.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import BinaryIO

import pytest

from browserbay.paths import bay_paths
from browserbay_testing import Bay, Result, assert_refused

root_only = pytest.mark.skipif(os.getuid() != 0, reason="mounts a tmpfs (needs root)")


def _write_until_full(f: BinaryIO, size: int) -> int:
    """Write ``size``-byte blocks until the file system refuses one; its errno."""
    while True:
        try:
            f.write(b"\0" * size)
        except OSError as exc:
            return exc.errno or 0


def _fill(path: Path) -> None:
    """Write zeros into ``path`` until the file system says ENOSPC (then the last bytes)."""
    with open(path, "wb", buffering=0) as f:
        for size in (1 << 20, 4096):
            assert _write_until_full(f, size) == errno.ENOSPC
    assert shutil.disk_usage(path.parent).free < 64 << 10


@pytest.fixture
def tiny_home() -> Iterator[Path]:
    """A BAY_HOME on a 96 MiB tmpfs of its own."""
    home = Path(tempfile.mkdtemp(prefix="bay-df-", dir="/tmp"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96m,mode=0700", "tmpfs", str(home)])
    try:
        yield home
    finally:
        with contextlib.suppress(OSError):
            (home / "filler").unlink()
        Bay(home).stop()
        subprocess.run(["umount", "-l", str(home)], capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


@root_only
def test_a_full_disk_leaves_verbs_working_and_names_itself(tiny_home: Path, demo: str) -> None:
    # Without the test recorder plugin: it writes every hook call into the home, and a
    # policy hook that fails (here for want of space) refuses the verb, as it should.
    b = Bay(tiny_home, BAY_PLUGIN_MODULES="")
    assert b.ok("open", f"{demo}/list.html?n=5000")["status"] == 200
    _fill(tiny_home / "filler")

    # A verb that needs no disk answers as before: its audit row cannot be written, which is
    # logged and counted, never the verb's failure.
    for _ in range(3):
        assert b.ok("get", "title")["value"] == "List of 5000"
    status = b.ok("keeper", "status")
    assert status["audit_failures"] >= 3, status
    said = b("keeper", "status", json_=False).stdout
    assert "audit rows not written" in said, said
    # An answer too long to print whole is still shown, cut, though its spill file cannot
    # be written (the client says so instead of failing).
    long = b("get", "text", "body", json_=False)
    assert long.code == 0, long
    assert "the full text could not be saved" in long.stdout, long.stdout[-300:]

    # A verb that must write is refused disk_full, naming where and the way out.
    frame = assert_refused(b("screenshot"), "disk_full")
    assert str(tiny_home) in frame["message"], frame
    assert "free space" in frame["way_out"], frame
    # So is a new session, whose first sight and browser need the disk.
    frame = assert_refused(b("open", f"{demo}/form.html", session="newcomer"), "disk_full")
    assert f"the disk under {tiny_home} is full" in frame["message"], frame

    # Space again: everything works, and the audit writes again.
    (tiny_home / "filler").unlink()
    shot = b.ok("screenshot")
    assert Path(shot["path"]).stat().st_size > 0
    rows = b.ok("audit", "--last", "5")["audit"]
    assert any(r["verb"] == "screenshot" and r["ok"] for r in rows), rows


def test_a_directory_at_keeper_sock_is_moved_aside_not_a_dead_keeper(fresh_bay: Bay) -> None:
    sock = bay_paths({"BAY_HOME": str(fresh_bay.home)}).ensure().socket
    sock.mkdir(mode=0o700)
    (sock / "something").write_text("the user's, kept")
    status = fresh_bay.ok("keeper", "start")
    assert status["socket"] == str(sock)
    assert stat.S_ISSOCK(sock.lstat().st_mode)
    (moved,) = sock.parent.glob("keeper.sock.moved-*")
    assert (moved / "something").read_text() == "the user's, kept"  # moved, never removed
    log = (fresh_bay.home / "logs" / "keeper.log").read_text()
    assert f"moved it to {moved}" in log, log


def test_screenshots_are_private_files_in_a_private_directory(
    fresh_bay: Bay, demo: str, tmp_path: Path
) -> None:
    shots = bay_paths({"BAY_HOME": str(fresh_bay.home)}).ensure().state / "shots"
    shots.mkdir(mode=0o755)  # as an older keeper left it
    os.chmod(shots, 0o755)
    fresh_bay.ok("open", f"{demo}/form.html")
    default = Path(fresh_bay.ok("screenshot")["path"])
    assert default.parent == shots
    assert stat.S_IMODE(default.stat().st_mode) == 0o600, oct(default.stat().st_mode)
    assert stat.S_IMODE(shots.stat().st_mode) == 0o700, oct(shots.stat().st_mode)
    named = tmp_path / "page.png"
    fresh_bay.ok("screenshot", str(named))
    assert stat.S_IMODE(named.stat().st_mode) == 0o600, oct(named.stat().st_mode)
    named.write_bytes(b"old")  # an existing file of the user's is replaced, and private
    os.chmod(named, 0o644)
    fresh_bay.ok("screenshot", str(named))
    assert stat.S_IMODE(named.stat().st_mode) == 0o600, oct(named.stat().st_mode)
    assert named.read_bytes().startswith(b"\x89PNG")


def _spill(directory: Path, name: str, size: int, age: float) -> Path:
    path = directory / name
    path.write_bytes(b"x" * size)
    then = time.time() - age
    os.utime(path, (then, then))
    return path


def _wait_for(condition: Callable[[], bool], what: str, within: float = 20) -> None:
    end = time.monotonic() + within
    while not condition():
        assert time.monotonic() < end, what
        time.sleep(0.1)


def test_spill_files_are_pruned_by_age_and_total_size(tmp_path: Path) -> None:
    home = Path(tempfile.mkdtemp(prefix="bay-o-", dir="/tmp"))
    b = Bay(home, BAY_OUTPUTS_MAX_MB="1", BAY_OUTPUTS_MAX_AGE="3600", BAY_TICK="0.2")
    try:
        out = bay_paths({"BAY_HOME": str(home)}).ensure().outputs
        stale = _spill(out, "20250101-000000-1-get.txt", 1000, age=7200)
        kept = [_spill(out, f"recent-{n}.txt", 300_000, age=600 - n) for n in range(3)]
        outside = tmp_path / "not-a-spill.txt"
        outside.write_text("the user's")
        (out / "a-link.txt").symlink_to(outside)
        b.ok("keeper", "start")  # the keeper starts and prunes
        _wait_for(lambda: not stale.exists(), "the day-old spill file was not pruned at start")
        assert all(p.exists() for p in kept)  # 900 KB: under the 1 MiB bound
        # While it runs: more spill past the bound; the oldest go first, off the loop.
        newer = [_spill(out, f"newer-{n}.txt", 300_000, age=100 - n) for n in range(2)]
        _wait_for(lambda: not kept[1].exists(), "the total size bound was not kept")
        assert not kept[0].exists()
        assert kept[2].exists()
        assert all(p.exists() for p in newer)
        assert sum(p.stat().st_size for p in out.iterdir() if p.is_file()) <= 1 << 20
        assert (out / "a-link.txt").is_symlink()
        assert outside.read_text() == "the user's"
    finally:
        b.stop()
        shutil.rmtree(home, ignore_errors=True)


class _Files(BaseHTTPRequestHandler):
    """A page with two downloads: a small one whose name tries to leave the directory, and
    a big one that arrives slowly (past a 1 MiB bound)."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.startswith("/small"):
            self._file(b"hello\n", "../../../../tmp/bay-escaped.txt")
        elif self.path.startswith("/big"):
            self._file(b"x" * (3 << 20), "big.bin", slow=True)
        else:
            body = (
                b'<title>files</title><a id=small href="/small">s</a> <a id=big href="/big">b</a>'
            )
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    def _file(self, data: bytes, name: str, slow: bool = False) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Disposition", f'attachment; filename="{name}"')
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        step = 256 << 10
        with contextlib.suppress(OSError):  # the browser hangs up on a cancelled one
            for at in range(0, len(data), step):
                self.wfile.write(data[at : at + step])
                self.wfile.flush()
                if slow:
                    time.sleep(0.1)


@pytest.fixture
def files_site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Files)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def _notice_containing(b: Bay, word: str, first: Result, within: float = 20) -> str:
    """The notice of the first answer that carries ``word``: ``first`` (the verb that started
    the download: it carries the notice when the download ended before it answered), then
    cheap verbs, polled."""
    notice = str(first.frame.get("notice", ""))
    if word in notice:
        return notice
    end = time.monotonic() + within
    while time.monotonic() < end:
        r = b("get", "title")
        notice = str(r.frame.get("notice", ""))
        if word in notice:
            return notice
        time.sleep(0.2)
    raise AssertionError(f"no notice saying {word!r}")


def test_downloads_land_in_the_sessions_own_directory_under_a_bound(
    files_site: str,
) -> None:
    home = Path(tempfile.mkdtemp(prefix="bay-dl-", dir="/tmp"))
    b = Bay(home, BAY_DOWNLOAD_MAX_MB="1")
    escaped = Path("/tmp/bay-escaped.txt")
    escaped.unlink(missing_ok=True)
    try:
        b.ok("open", files_site)
        clicked = b("click", "#small")
        assert clicked.code == 0, clicked
        said = _notice_containing(b, "downloaded", clicked)
        root = home / "run" / "downloads"
        (directory,) = root.iterdir()
        assert directory.name.startswith("a-")  # the session's own ("a")
        (kept,) = directory.iterdir()
        assert kept.read_bytes() == b"hello\n"
        assert f"bay downloads get {kept.name} " in said, said  # named, with the fetch command
        assert "/" not in kept.name
        assert not escaped.exists()
        assert stat.S_IMODE(kept.stat().st_mode) == 0o600
        for d in (root, directory):
            assert stat.S_IMODE(d.stat().st_mode) == 0o700, d

        # Past the bound: cancelled as it arrives, its partial file gone, said in a notice.
        clicked = b("click", "#big")
        assert clicked.code == 0, clicked
        said = _notice_containing(b, "cancelled", clicked)
        assert "BAY_DOWNLOAD_MAX_MB" in said, said
        assert [p.name for p in directory.iterdir()] == [kept.name]
        partials = list((home / "run").rglob("*.crdownload"))
        assert partials == [], partials
    finally:
        b.stop()
        escaped.unlink(missing_ok=True)
        shutil.rmtree(home, ignore_errors=True)
