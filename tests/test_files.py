"""Files in and out through the connection (browserbay.transfer, keeper/files.py): the
caller's client reads and writes the caller's files; the keeper never opens a path the
caller names. On real pages served here, in real Chromium, through the real keeper and CLI,
on the owner's channel and on a session socket."""

from __future__ import annotations

import base64
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import pytest

from browserbay import Client, SyncClient, errors, protocol, transfer
from browserbay.client import Connection
from browserbay.keeper.downloads import safe_name, session_dir
from browserbay.keeper.files import PER_SESSION
from browserbay.paths import bay_paths
from browserbay_testing import Bay, assert_refused
from browserbay_testing.bay import wait_for
from browserbay_testing.plugin import keeper


def dial(path: Path) -> Connection:
    """A raw connection (the hello exchanged): exactly the frames any program can send."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(path))
    conn = Connection(sock)
    conn.send(protocol.hello("client"))
    conn.keeper = conn.read(time.monotonic() + 10)["hello"]
    return conn


def raw(conn: Connection, frame: dict[str, Any]) -> dict[str, Any]:
    conn.send(frame)
    return conn.read(time.monotonic() + 60)


def keeper_socket(bay: Bay) -> Path:
    return bay_paths({"BAY_HOME": str(bay.home)}).socket


@pytest.fixture
def out(tmp_path: Path) -> Path:
    d = tmp_path / "out"
    d.mkdir()
    return d


# -- the mechanism, with screenshot as its first user ---------------------------------------


def test_a_screenshot_to_a_path_is_written_by_the_client_not_the_keeper(
    bay: Bay, demo: str, out: Path
) -> None:
    s = "files-shot"
    bay.ok("open", f"{demo}/index.html", session=s)
    dest = out / "page.png"
    shot = bay.ok("screenshot", str(dest), session=s)
    assert shot["path"] == str(dest)
    assert "file" not in shot
    assert dest.read_bytes().startswith(b"\x89PNG")
    assert dest.stat().st_mode & 0o777 == 0o600
    assert shot["bytes"] == dest.stat().st_size
    # No temporary file is left beside it.
    assert sorted(p.name for p in out.iterdir()) == ["page.png"]
    # A raw frame naming a path: the keeper answers the bytes and writes nothing there.
    elsewhere = out / "keeper-would-write-here.png"
    conn = dial(keeper_socket(bay))
    try:
        frame = {
            "id": "1",
            "verb": "screenshot",
            "args": {"path": str(elsewhere)},
            "session": {"id": s, "origin": "env"},
            "timeout": 30,
        }
        answer = raw(conn, frame)
        assert answer["ok"], answer
        offer = answer["data"]["file"]
        assert not elsewhere.exists()
        got, offset = b"", 0
        while True:
            part = raw(conn, {"id": "g", "op": "get", "handle": offer["handle"], "offset": offset})
            assert part["ok"], part
            got += base64.b64decode(part["data"]["data"])
            offset = len(got)
            if part["data"]["eof"]:
                break
        assert got.startswith(b"\x89PNG")
        assert len(got) == offer["size"]
        # Fetched: the offer is gone.
        gone = raw(conn, {"id": "g2", "op": "get", "handle": offer["handle"], "offset": 0})
        assert_refused(gone, "bad_frame")
    finally:
        conn.close()
    assert not elsewhere.exists()


def test_a_screenshot_replaces_a_symlink_and_never_writes_through_it(
    bay: Bay, demo: str, out: Path
) -> None:
    s = "files-link"
    bay.ok("open", f"{demo}/index.html", session=s)
    victim = out / "victim.txt"
    victim.write_text("precious")
    link = out / "shot.png"
    link.symlink_to(victim)
    bay.ok("screenshot", str(link), session=s)
    assert victim.read_text() == "precious"
    assert not link.is_symlink()
    assert link.read_bytes().startswith(b"\x89PNG")


def test_a_screenshot_into_a_directory_takes_the_keepers_name_for_it(
    bay: Bay, demo: str, out: Path
) -> None:
    s = "files-dir"
    bay.ok("open", f"{demo}/index.html", session=s)
    shot = bay.ok("screenshot", str(out), session=s)
    path = Path(shot["path"])
    assert path.parent == out
    assert path.suffix == ".png"
    assert path.read_bytes().startswith(b"\x89PNG")


def test_a_path_the_client_cannot_write_is_refused_before_anything_runs(
    bay: Bay, demo: str, out: Path
) -> None:
    s = "files-unwritable"
    bay.ok("open", f"{demo}/index.html", session=s)
    r = bay("screenshot", str(out / "no" / "such" / "dir" / "x.png"), session=s)
    frame = assert_refused(r, "file_unwritable")
    assert "No such file or directory" in frame["data"]["reason"]
    assert not (out / "no").exists()


def test_a_screenshot_on_a_session_socket_lands_at_the_agents_path(
    bay: Bay, demo: str, out: Path
) -> None:
    """The first user of the mechanism on a session socket: once owner-only (the keeper wrote
    the file with the owner's rights), now the agent's own client writes it."""
    sock_dir = bay.home / "sf"
    sock_dir.mkdir(mode=0o700)
    sock = sock_dir / "a.sock"
    bay.ok("session", "grant", "files-agent", "--socket", str(sock), session=None)
    try:
        env = {"BAY_SOCKET": str(sock)}
        assert bay("open", f"{demo}/index.html", session=None, env=env).frame["ok"]
        dest = out / "agent.png"
        r = bay("screenshot", str(dest), session=None, env=env)
        assert r.code == 0, r
        assert r.frame["session"]["id"] == "files-agent"
        assert dest.read_bytes().startswith(b"\x89PNG")
        assert dest.stat().st_mode & 0o777 == 0o600
    finally:
        bay.ok("session", "revoke", "files-agent", session=None)


def test_the_transfers_directory_is_empty_after_each_command(
    bay: Bay, demo: str, out: Path
) -> None:
    s = "files-clean"
    bay.ok("open", f"{demo}/index.html", session=s)
    bay.ok("screenshot", str(out / "a.png"), session=s)
    staged = bay_paths({"BAY_HOME": str(bay.home)}).runtime / "transfers"
    deadline = time.monotonic() + 5
    while staged.exists() and any(staged.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not staged.exists() or list(staged.iterdir()) == []
    assert os.path.exists(out / "a.png")


# -- the pages: a form with file inputs, download links, a page that downloads by itself ----

UPLOAD_HTML = """<!doctype html><title>Upload</title>
<input id=one type=file><input id=many type=file multiple><input id=quiet type=file data-quiet>
<button id=btn>Not a file input</button><pre id=out>nothing yet</pre>
<script>
for (const input of document.querySelectorAll('input:not([data-quiet])'))
 input.onchange = async () => {
  const files = [];
  for (const f of input.files) files.push({name: f.name, size: f.size, text: await f.text()});
  document.getElementById('out').textContent = JSON.stringify({input: input.id, files});
};
</script>"""

DOWNLOADS_HTML = """<!doctype html><title>Downloads</title>
<a id=link href="/file/report.csv">Report</a>
<a id=evil href="/evil">Evil</a>
<a id=big href="/big?kb=2048">Big</a>
<a id=none href="#nowhere">Nothing</a>"""

AUTO_HTML = """<!doctype html><title>Auto</title><p>Your file is on its way.
<script>setTimeout(() => { location.href = '/file/auto.txt'; }, 100);</script>"""


class Pages(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(self, body: bytes, ctype: str, disposition: str | None = None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        if disposition is not None:
            self.send_header("Content-Disposition", disposition)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        pages = {"/upload.html": UPLOAD_HTML, "/downloads.html": DOWNLOADS_HTML}
        pages["/auto.html"] = AUTO_HTML
        if url.path in pages:
            self._send(pages[url.path].encode(), "text/html; charset=utf-8")
        elif url.path.startswith("/file/"):
            name = url.path.removeprefix("/file/")
            body = f"the content of {name}\n".encode()
            self._send(body, "application/octet-stream", f'attachment; filename="{name}"')
        elif url.path == "/evil":
            body = b"a page-suggested name that climbs\n"
            self._send(body, "text/plain", 'attachment; filename="../../evil.txt"')
        elif url.path == "/big":
            kb = int(parse_qs(url.query).get("kb", ["1"])[0])
            self._send(
                b"x" * (kb * 1024), "application/octet-stream", "attachment; filename=big.bin"
            )
        else:
            self.send_error(404)


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def shown(bay: Bay, s: str) -> Any:
    """What the page read of the files set on it (its change handler reads them async)."""
    text = wait_for(
        lambda: (v := bay.ok("get", "text", "#out", session=s)["value"]) != "nothing yet" and v,
        what="the page to read the files",
    )
    return json.loads(text)


def kept_dir(bay: Bay, session: str) -> Path:
    return session_dir(bay_paths({"BAY_HOME": str(bay.home)}).runtime / "downloads", session)


# -- upload ---------------------------------------------------------------------------------


def test_upload_sets_one_file_and_the_page_reads_its_name_size_and_content(
    bay: Bay, site: str, tmp_path: Path
) -> None:
    s = "up-one"
    cv = tmp_path / "cv.txt"
    cv.write_text("Ada Lovelace, analyst\n")
    bay.ok("open", f"{site}/upload.html", session=s)
    up = bay.ok("upload", "#one", str(cv), session=s)
    assert up["files"] == [{"name": "cv.txt", "size": 22}]
    assert shown(bay, s) == {
        "input": "one",
        "files": [{"name": "cv.txt", "size": 22, "text": "Ada Lovelace, analyst\n"}],
    }


def test_upload_sets_several_files_on_a_multiple_input(bay: Bay, site: str, tmp_path: Path) -> None:
    s = "up-many"
    front, back = tmp_path / "front.txt", tmp_path / "back.txt"
    front.write_text("front side")
    back.write_bytes(b"\x00\x01binary\xff")
    bay.ok("open", f"{site}/upload.html", session=s)
    up = bay.ok("upload", "#many", str(front), str(back), session=s)
    assert [f["name"] for f in up["files"]] == ["front.txt", "back.txt"]
    page = shown(bay, s)
    assert page["input"] == "many"
    assert [(f["name"], f["size"]) for f in page["files"]] == [("front.txt", 10), ("back.txt", 9)]
    assert page["files"][0]["text"] == "front side"


def test_upload_to_what_is_not_a_file_input_is_refused_and_sets_nothing(
    bay: Bay, site: str, tmp_path: Path
) -> None:
    s = "up-not-input"
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("a")
    b.write_text("b")
    bay.ok("open", f"{site}/upload.html", session=s)
    frame = assert_refused(bay("upload", "#btn", str(a), session=s), "not_file_input")
    assert frame["data"]["found"] == "<button>"
    # Two files on an input that takes one: refused, not the first of them set.
    frame = assert_refused(bay("upload", "#one", str(a), str(b), session=s), "not_file_input")
    assert "without multiple" in frame["data"]["found"]
    assert bay.ok("get", "text", "#out", session=s)["value"] == "nothing yet"


def test_upload_of_a_missing_file_or_a_directory_is_refused_before_sending(
    bay: Bay, site: str, tmp_path: Path
) -> None:
    s = "up-missing"
    bay.ok("open", f"{site}/upload.html", session=s)
    frame = assert_refused(
        bay("upload", "#one", str(tmp_path / "nope.pdf"), session=s), "file_unreadable"
    )
    assert frame["data"]["reason"] == "No such file or directory"
    frame = assert_refused(bay("upload", "#one", str(tmp_path), session=s), "file_unreadable")
    assert frame["data"]["reason"] == "it is not a regular file"
    assert bay.ok("get", "text", "#out", session=s)["value"] == "nothing yet"


def test_upload_over_the_limit_is_refused_by_the_client_and_by_the_keeper(
    bay: Bay, site: str, tmp_path: Path
) -> None:
    s = "up-big"
    big = tmp_path / "big.bin"
    with open(big, "wb") as f:  # sparse: 50 MiB and one byte, made at once
        f.truncate(transfer.MAX_IN + 1)
    bay.ok("open", f"{site}/upload.html", session=s)
    frame = assert_refused(bay("upload", "#one", str(big), session=s), "too_large")
    assert frame["data"]["limit"] == transfer.MAX_IN
    # A client that skips its own check: the keeper refuses the first put, staging nothing.
    conn = dial(keeper_socket(bay))
    try:
        put = {"id": "p", "op": "put", "name": "big.bin", "size": transfer.MAX_IN + 1}
        frame = assert_refused(raw(conn, {**put, "offset": 0, "data": ""}), "too_large")
        # A verb naming a handle that was never sent is bad_frame, never a file.
        verb = {
            "id": "v",
            "verb": "upload",
            "args": {"target": "#one", "files": ["/etc/passwd"]},
            "session": {"id": s, "origin": "env"},
            "timeout": 30,
        }
        frame = assert_refused(raw(conn, verb), "bad_frame")
        assert "names no file sent on this connection" in frame["message"]
    finally:
        conn.close()
    assert bay.ok("get", "text", "#out", session=s)["value"] == "nothing yet"


def peak_kib(pid: int) -> int:
    """The process's resident high-water mark (VmHWM), KiB."""
    with open(f"/proc/{pid}/status") as f:
        line = next(x for x in f if x.startswith("VmHWM:"))
    return int(line.split()[1])


def test_an_upload_near_the_limit_goes_through_in_bounded_keeper_memory(
    fresh_bay: Bay, site: str, tmp_path: Path
) -> None:
    """45 MiB in 768 KiB frames: the keeper holds one frame of it at a time (staged to disk
    as it comes), so its resident peak grows by far less than the file; a keeper that held
    the file (or its base64) whole would grow by 45-60 MiB or more."""
    s = "up-memory"
    size = 45 * 1024 * 1024
    big = tmp_path / "big.bin"
    with open(big, "wb") as f:
        f.write(os.urandom(1024) * (size // 1024))
    fresh_bay.ok("open", f"{site}/upload.html", session=s)
    pid = fresh_bay.keeper_pid()
    fresh_bay.ok("upload", "#quiet", str(big), session=s)  # a first one: warm every path
    before = peak_kib(pid)
    up = fresh_bay.ok("upload", "#quiet", str(big), session=s, timeout=180)
    grown = peak_kib(pid) - before
    assert up["files"] == [{"name": "big.bin", "size": size}]
    assert (
        fresh_bay.ok("eval", "document.getElementById('quiet').files[0].size", session=s)["value"]
        == size
    )
    assert grown < 16 * 1024, f"the keeper's resident peak grew by {grown} KiB"


# -- download -------------------------------------------------------------------------------


def test_download_clicks_and_saves_at_the_callers_path(bay: Bay, site: str, out: Path) -> None:
    s = "dl-link"
    bay.ok("open", f"{site}/downloads.html", session=s)
    dest = out / "report.csv"
    got = bay.ok("download", "#link", str(dest), session=s)
    assert got["path"] == str(dest)
    assert (got["name"], got["size"]) == ("report.csv", len(b"the content of report.csv\n"))
    assert dest.read_text() == "the content of report.csv\n"
    assert dest.stat().st_mode & 0o777 == 0o600
    # Nothing of it stays in the keeper: not in the session's downloads, not staged.
    assert not kept_dir(bay, s).exists() or list(kept_dir(bay, s).iterdir()) == []
    assert bay.ok("downloads", session=s)["downloads"] == []


def test_a_download_that_never_starts_is_refused_and_leaves_nothing(
    bay: Bay, site: str, out: Path
) -> None:
    s = "dl-none"
    bay.ok("open", f"{site}/downloads.html", session=s)
    dest = out / "nothing.bin"
    frame = assert_refused(
        bay("download", "#none", str(dest), "--timeout", "3", session=s), "download_not_started"
    )
    assert frame["data"]["target"] == "#none"
    assert list(out.iterdir()) == []


def test_a_page_that_downloads_by_itself_keeps_the_file_with_a_notice(
    bay: Bay, site: str, out: Path
) -> None:
    s = "dl-auto"
    bay.ok("open", f"{site}/auto.html", session=s)
    notices: list[str] = []
    listed = wait_for(lambda: kept(bay, s, notices), what="the download kept")
    assert [(d["name"], d["size"]) for d in listed] == [("auto.txt", 24)]
    notice = wait_for(
        lambda: " ".join(notices) if any(notices) else kept(bay, s, notices) and "",
        what="the notice",
    )
    # The notice rides the first answer after the download finished: name, size, command.
    assert "'auto.txt' (24 bytes)" in notice, notice
    assert "bay downloads get auto.txt <path>" in notice, notice
    dest = out / "mine.txt"
    got = bay.ok("downloads", "get", "auto.txt", str(dest), session=s)
    assert got["path"] == str(dest)
    assert dest.read_text() == "the content of auto.txt\n"
    assert dest.stat().st_mode & 0o777 == 0o600
    assert bay.ok("downloads", "clear", session=s)["cleared"] == ["auto.txt"]
    assert bay.ok("downloads", session=s)["downloads"] == []
    assert_refused(bay("downloads", "get", "auto.txt", str(dest), session=s), "download_unknown")
    assert dest.read_text() == "the content of auto.txt\n"  # a refused get leaves it be
    assert sorted(p.name for p in out.iterdir()) == ["mine.txt"]  # no temporary file left


def kept(bay: Bay, s: str, notices: list[str]) -> list[dict[str, Any]]:
    """The session's kept downloads; the notice each answer carried goes to ``notices``."""
    frame = bay("downloads", session=s).frame
    notices.append(str(frame.get("notice") or ""))
    return list(frame["data"]["downloads"])


def test_a_hostile_suggested_name_stays_inside_the_directory(
    bay: Bay, site: str, out: Path
) -> None:
    s = "dl-evil"
    bay.ok("open", f"{site}/downloads.html", session=s)
    # Clicked for: saved into the caller's directory under one reduced name (Chromium's
    # suggested name for "../../evil.txt" is "_.._evil.txt"; the keeper's own reduction,
    # safe_name, would make "evil.txt" of it: either way one component, inside).
    got = bay.ok("download", "#evil", str(out), session=s)
    saved = Path(got["path"])
    assert saved.parent == out
    assert saved.name in ("evil.txt", "_.._evil.txt")
    assert saved.read_text() == "a page-suggested name that climbs\n"
    assert not (out.parent.parent / "evil.txt").exists()
    assert safe_name("../../evil.txt") == "evil.txt"
    assert safe_name("..\\..\\evil.txt") == "evil.txt"
    # Started by the page itself (a click that is no download verb): kept inside the
    # session's directory.
    bay.ok("click", "#evil", session=s)
    listed = wait_for(lambda: kept(bay, s, []), what="the download kept")
    assert [d["name"] for d in listed] == [saved.name]
    directory = kept_dir(bay, s)
    assert sorted(p.name for p in directory.iterdir()) == [saved.name]
    assert not (directory.parent.parent / "evil.txt").exists()
    # A name that climbs is no download of the session.
    for name in ("../evil.txt", f"../{directory.name}/{saved.name}", "/etc/passwd", ".."):
        r = bay("downloads", "get", name, str(out / "x"), session=s)
        assert_refused(r, "download_unknown")
    assert not (out / "x").exists()
    bay.ok("downloads", "clear", session=s)


def test_the_per_session_quota_refuses_a_download_past_it(site: str, out: Path) -> None:
    with keeper("fq", BAY_DOWNLOAD_MAX_MB="1") as b:
        s = "dl-quota"
        b.ok("open", f"{site}/downloads.html", session=s)
        dest = out / "big.bin"
        frame = assert_refused(b("download", "#big", str(dest), session=s), "download_quota")
        assert frame["data"]["name"] == "big.bin"
        assert list(out.iterdir()) == []
        # The same file started by the page itself: cancelled at the bound, said in a notice.
        b.ok("click", "#big", session=s)
        notice = wait_for(lambda: b("status", session=s).frame.get("notice"), what="a notice")
        assert "'big.bin' cancelled" in notice, notice
        assert "bay downloads clear" in notice, notice
        assert b.ok("downloads", session=s)["downloads"] == []
        # Under the bound, a small one still goes.
        assert b.ok("download", "#link", str(out / "r.csv"), session=s)["size"] == 26


# -- from a session socket --------------------------------------------------------------------


def test_upload_and_download_work_on_a_session_socket_and_the_keeper_never_writes_there(
    bay: Bay, site: str, tmp_path: Path
) -> None:
    sock_dir = bay.home / "sg"
    sock_dir.mkdir(mode=0o700)
    sock = sock_dir / "a.sock"
    agent = "files-sock"
    bay.ok("session", "grant", agent, "--socket", str(sock), session=None)
    env = {"BAY_SOCKET": str(sock)}
    try:
        cv = tmp_path / "cv.txt"
        cv.write_text("from the sandbox")
        assert bay("open", f"{site}/upload.html", session=None, env=env).frame["ok"]
        r = bay("upload", "#one", str(cv), session=None, env=env)
        assert r.code == 0, r
        assert r.frame["session"]["id"] == agent
        assert shown(bay, agent)["files"][0]["text"] == "from the sandbox"
        assert bay("open", f"{site}/downloads.html", session=None, env=env).frame["ok"]
        dest = tmp_path / "report.csv"
        r = bay("download", "#link", str(dest), session=None, env=env)
        assert r.code == 0, r
        assert dest.read_text() == "the content of report.csv\n"
        # Raw frames on the socket: the keeper answers the bytes, and writes nothing at the
        # path the agent names (here a file of the owner's it would have replaced).
        victim = bay.home / "victim.txt"
        victim.write_text("the owner's")
        conn = dial(sock)
        try:
            frame = {
                "id": "1",
                "verb": "download",
                "args": {"target": "#link", "path": str(victim)},
                "session": {"id": agent, "origin": "socket"},
                "timeout": 30,
            }
            answer = raw(conn, frame)
            assert answer["ok"], answer
            assert answer["data"]["file"]["size"] == 26
        finally:
            conn.close()
        assert victim.read_text() == "the owner's"
    finally:
        bay.ok("session", "revoke", agent, session=None)


# -- the Python API and the MCP server -----------------------------------------------------


def test_the_python_api_uploads_and_downloads(bay: Bay, site: str, tmp_path: Path) -> None:
    cv = tmp_path / "cv.txt"
    cv.write_text("through the API")
    with SyncClient("files-api", home=bay.home) as c:
        c.open(f"{site}/upload.html")
        up = c.upload("#one", cv)
        assert up.data["files"] == [{"name": "cv.txt", "size": 15}]
        c.open(f"{site}/downloads.html")
        got = c.download("#link", tmp_path / "r.csv")
        assert got.data["path"] == str(tmp_path / "r.csv")
        assert (tmp_path / "r.csv").read_text() == "the content of report.csv\n"
        with pytest.raises(errors.BayRefusal) as refused:
            c.upload("#one", tmp_path / "missing.txt")
        assert refused.value.code == "file_unreadable"

    async def main() -> None:
        async with Client("files-api-async", home=bay.home) as a:
            await a.open(f"{site}/downloads.html")
            got = await a.download("#link", tmp_path / "async.csv")
            assert got.data["size"] == 26
            listed = await a.downloads()
            assert listed.data["downloads"] == []
            await a.open(f"{site}/upload.html")
            await a.upload("#many", cv, tmp_path / "async.csv")
            text = "nothing yet"
            with anyio.fail_after(30):
                while text == "nothing yet":
                    text = (await a.get("text", "#out")).value
                    await anyio.sleep(0.05)
            assert [f["name"] for f in json.loads(text)["files"]] == ["cv.txt", "async.csv"]

    anyio.run(main)
    assert (tmp_path / "async.csv").read_text() == "the content of report.csv\n"


def test_a_closed_sessions_downloads_and_uploads_are_removed(
    bay: Bay, site: str, tmp_path: Path
) -> None:
    """Attack (the keeper's disk, and what a page gave a session): on the old code a closed
    session's kept downloads and the uploads set on its inputs stayed in the keeper's runtime
    directory for the keeper's life. They go with the session — its ``bay close``, and a child
    session's when its parent closes; an idle stop keeps them (the session comes back)."""
    runtime = bay_paths({"BAY_HOME": str(bay.home)}).runtime
    parent = "files-gone"
    bay.ok("open", f"{site}/upload.html", session=parent)
    child = str(bay.ok("session", "child", parent, session=None)["session"])
    cv = tmp_path / "cv.txt"
    cv.write_text("kept until the session closes\n")
    for s in (parent, child):
        bay.ok("open", f"{site}/upload.html", session=s)
        bay.ok("upload", "#one", str(cv), session=s)
        bay.ok("open", f"{site}/auto.html", session=s)
        wait_for(lambda s=s: kept(bay, s, []), what="the download kept")
        assert any(session_dir(runtime / "uploads", s).rglob("cv.txt"))
    bay.ok("close", session=parent)
    for s in (parent, child):
        assert not kept_dir(bay, s).exists(), s
        assert not session_dir(runtime / "uploads", s).exists(), s


def test_one_session_cannot_exhaust_the_staging_every_session_shares(
    bay: Bay, site: str, tmp_path: Path
) -> None:
    """Attack: an agent on its session socket opens connections that each declare a 50 MiB
    upload and never send it (and mints a child to do the same). On the old code the
    keeper-wide 200 MiB bound was every connection's: four such connections made every other
    session's upload ``too_large`` ("wait a moment"). Now a session (with its children) holds
    at most its own share, refused naming that limit, and another session's upload goes on."""
    sock_dir = bay.home / "hog"
    sock_dir.mkdir(mode=0o700)
    sock = sock_dir / "hog.sock"
    hog = "files-hog"
    bay.ok("session", "grant", hog, "--socket", str(sock), session=None)
    conns: list[Connection] = []
    try:
        child = bay("session", "child", session=None, env={"BAY_SOCKET": str(sock)}).data
        put = {"op": "put", "name": "hog.bin", "size": transfer.MAX_IN, "offset": 0, "data": ""}
        answers = []
        for n in range(4):
            conn = dial(Path(child["socket"]) if n % 2 else sock)
            conns.append(conn)
            answers.append(raw(conn, {**put, "id": f"p{n}"}))
        assert answers[0]["ok"], answers[0]
        refused = [a for a in answers if not a["ok"]]
        assert refused, "every one of the hog's connections staged 50 MiB"
        frame = assert_refused(refused[0], "too_large")
        assert frame["data"]["limit"] == PER_SESSION
        assert "your session" in frame["message"]
        # Another session's upload is not refused for it.
        s = "files-not-hog"
        cv = tmp_path / "cv.txt"
        cv.write_text("mine")
        bay.ok("open", f"{site}/upload.html", session=s)
        bay.ok("upload", "#one", str(cv), session=s)
        assert shown(bay, s)["files"][0]["text"] == "mine"
    finally:
        for conn in conns:
            conn.close()
        bay.ok("session", "revoke", hog, session=None)
