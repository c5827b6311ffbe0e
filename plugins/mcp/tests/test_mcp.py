"""`bay mcp` through the MCP SDK's own stdio client: tools/list, then navigate → snapshot →
act (fill, click) on the demo site, every result naming session and profile, refusals as
tool errors carrying code and way out. A real keeper and Chromium."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, ImageContent, TextContent

from browserbay.api import Client
from browserbay.demo.server import serve
from browserbay.refusals import CODES

BAY = str(Path(sys.executable).with_name("bay"))


@pytest.fixture(scope="module")
def demo() -> Iterator[str]:
    server, base = serve()
    yield base
    server.shutdown()


@pytest.fixture
def env() -> Iterator[dict[str, str]]:
    home = tempfile.mkdtemp(prefix="bay-mcp-", dir="/tmp")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("BAY_")}
    e = dict(clean, BAY_HOME=home, BAY_SESSION="mcp-test")
    yield e
    subprocess.run([BAY, "keeper", "stop"], env=e, capture_output=True, timeout=60)
    shutil.rmtree(home, ignore_errors=True)


def text(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


async def _session_run(env: dict[str, str], body: Any, *args: Any) -> Any:
    params = StdioServerParameters(command=BAY, args=["mcp"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await body(session, *args)


def test_tools_list_then_navigate_snapshot_click(env: dict[str, str], demo: str) -> None:
    async def body(session: ClientSession) -> None:
        listed = await session.list_tools()
        tools = {t.name: t for t in listed.tools}
        assert set(tools) == {
            "navigate",
            "snapshot",
            "act",
            "wait",
            "mouse",
            "keyboard",
            "read",
            "is_state",
            "find",
            "frame",
            "tabs",
            "dialog",
            "logs",
            "network",
            "emulate",
            "screenshot",
            "cookies",
            "storage",
            "state",
            "upload",
            "download",
            "status",
            "close",
        }
        # The page verbs that act, in the table's order (dblclick: a row, no MCP edit).
        assert tools["act"].input_schema["properties"]["action"]["enum"] == [
            "click",
            "dblclick",
            "drag",
            "focus",
            "fill",
            "type",
            "press",
            "keydown",
            "keyup",
            "select",
            "check",
            "uncheck",
            "hover",
        ]
        assert tools["navigate"].description

        opened = await session.call_tool("navigate", {"url": f"{demo}/form.html"})
        assert not opened.is_error, text(opened)
        assert text(opened).startswith(f"Sign up\n{demo}/form.html")
        assert "profile:" not in text(opened)  # no CLI footer: it is in the structure
        assert opened.structured_content["profile"]["id"] == "ep-mcp-test"
        assert opened.structured_content["session"] == {"id": "mcp-test", "origin": "api"}

        snap = await session.call_tool("snapshot", {})
        assert not snap.is_error
        tree = snap.structured_content["data"]["snapshot"]
        name = re.search(r'textbox "Name" \[ref=(e\d+)\]', tree)
        submit = re.search(r'button "Create account" \[ref=(e\d+)\]', tree)
        assert name, tree
        assert submit, tree
        assert "session mcp-test" not in text(snap)

        filled = await session.call_tool(
            "act", {"action": "fill", "ref": "@" + name[1], "text": "Ada"}
        )
        assert not filled.is_error, text(filled)
        dbl = await session.call_tool("act", {"action": "dblclick", "ref": "@" + name[1]})
        assert not dbl.is_error, text(dbl)
        assert text(dbl).startswith("double-clicked")
        clicked = await session.call_tool("act", {"action": "click", "ref": "@" + submit[1]})
        assert not clicked.is_error, text(clicked)
        assert text(clicked).startswith("clicked")
        title = await session.call_tool("read", {"what": "title"})
        assert text(title).startswith("Signed up")
        body_text = await session.call_tool("read", {"what": "text"})
        assert "Ada" in text(body_text)

        # A refusal is a tool error with the code, the way out and the frame.
        stale = await session.call_tool("act", {"action": "click", "ref": "@" + submit[1]})
        assert stale.is_error
        assert text(stale).startswith("refused [ref_stale]: Reference @e")
        assert "way out: bay snapshot -i" in text(stale)
        assert stale.structured_content["code"] == "ref_stale"
        assert set(stale.structured_content) == {"ok", "code", "message", "way_out", "data"}

        bad = await session.call_tool("navigate", {"url": "file:///etc/passwd"})
        assert bad.is_error
        assert bad.structured_content["code"] == "local_scheme_refused"

        missing = await session.call_tool("act", {"action": "click"})
        assert missing.is_error
        assert missing.structured_content["code"] == "usage"
        assert "give ref=@eN" in text(missing)
        assert missing.structured_content["code"] in CODES

    anyio.run(_session_run, env, body)


def test_read_state_find_and_frame(env: dict[str, str], demo: str) -> None:
    async def body(session: ClientSession) -> None:
        opened = await session.call_tool("navigate", {"url": f"{demo}/form.html"})
        assert not opened.is_error, text(opened)
        count = await session.call_tool("read", {"what": "count", "ref": "option"})
        assert count.structured_content["data"]["value"] == 3
        attr = await session.call_tool("read", {"what": "attr", "ref": "select", "name": "name"})
        assert text(attr).startswith("plan")
        box = await session.call_tool("read", {"what": "box", "ref": "h1"})
        assert set(box.structured_content["data"]["value"]) == {"x", "y", "width", "height"}
        unticked = await session.call_tool("is_state", {"what": "checked", "ref": "[name=terms]"})
        assert not unticked.is_error, text(unticked)
        assert text(unticked).startswith("false")
        found = await session.call_tool(
            "find", {"by": "label", "value": "I accept", "action": "check"}
        )
        assert not found.is_error, text(found)
        ticked = await session.call_tool("is_state", {"what": "checked", "ref": "[name=terms]"})
        assert text(ticked).startswith("true")
        filled = await session.call_tool(
            "find",
            {"by": "role", "value": "textbox", "name": "Name", "action": "fill", "text": "Ada"},
        )
        assert not filled.is_error, text(filled)
        read = await session.call_tool("read", {"what": "value", "ref": "[name=name]"})
        assert text(read).startswith("Ada")
        several = await session.call_tool(
            "find", {"by": "role", "value": "textbox", "action": "click"}
        )
        assert several.is_error
        assert several.structured_content["code"] == "target_ambiguous"
        no_frame = await session.call_tool("frame", {"ref": "h1"})
        assert no_frame.structured_content["code"] == "not_a_frame"
        main = await session.call_tool("frame", {"ref": "main"})
        assert not main.is_error, text(main)

    anyio.run(_session_run, env, body)


def test_tabs_history_screenshot_status_close(env: dict[str, str], demo: str) -> None:
    async def body(session: ClientSession) -> None:
        await session.call_tool("navigate", {"url": f"{demo}/"})
        await session.call_tool("navigate", {"url": f"{demo}/form.html"})
        back = await session.call_tool("navigate", {"go": "back"})
        assert text(back).startswith("browserbay demo")
        new = await session.call_tool("tabs", {"action": "new", "url": f"{demo}/form.html"})
        new_tab = new.structured_content["data"]["tab"]
        listed = await session.call_tool("tabs", {})
        tabs = listed.structured_content["data"]["tabs"]
        assert [t["current"] for t in tabs] == [False, True]
        switched = await session.call_tool("tabs", {"action": "switch", "tab": tabs[0]["id"]})
        assert text(switched).startswith(tabs[0]["id"])
        closed = await session.call_tool("tabs", {"action": "close", "tab": new_tab})
        assert not closed.is_error
        gone = await session.call_tool("tabs", {"action": "switch", "tab": new_tab})
        assert gone.structured_content["code"] == "tab_gone"

        shot = await session.call_tool("screenshot", {})
        assert isinstance(shot.content[0], ImageContent)
        assert shot.content[0].mime_type == "image/png"
        status = await session.call_tool("status", {})
        assert "session mcp-test" in text(status)
        ended = await session.call_tool("close", {})
        assert not ended.is_error

    anyio.run(_session_run, env, body)


def test_emulate_sets_what_the_page_sees_and_refuses_an_unknown_device(
    env: dict[str, str], demo: str
) -> None:
    async def body(session: ClientSession) -> None:
        await session.call_tool("navigate", {"url": f"{demo}/form.html"})
        set_ = await session.call_tool(
            "emulate", {"setting": "viewport", "value": 333, "second": 444}
        )
        assert not set_.is_error, text(set_)
        hidden = await session.call_tool(
            "emulate", {"setting": "headers", "value": {"X-Mcp": "MCPHEADERSECRET"}}
        )
        assert not hidden.is_error, text(hidden)
        assert "MCPHEADERSECRET" not in str(hidden.structured_content) + text(hidden)
        async with Client("mcp-test", home=env["BAY_HOME"]) as api:
            assert (await api.eval("[innerWidth, innerHeight]")).value == [333, 444]
        bad = await session.call_tool("emulate", {"setting": "device", "value": "Pixel 55"})
        assert bad.is_error
        assert bad.structured_content["code"] == "device_unknown"
        assert "Pixel" in text(bad)
        await session.call_tool("close", {})

    anyio.run(_session_run, env, body)


def test_logs_and_network_read_the_tab_and_route_its_requests(
    env: dict[str, str], demo: str
) -> None:
    async def body(session: ClientSession) -> None:
        await session.call_tool("navigate", {"url": f"{demo}/form.html"})
        routed = await session.call_tool(
            "network", {"action": "route", "glob": "**/mocked", "body": {"n": 1}, "status": 201}
        )
        assert not routed.is_error, text(routed)
        await session.call_tool("network", {"action": "har_start"})
        js = (
            "fetch('/mocked', {headers: {Authorization: 'Bearer MCPSECRET'}})"
            ".then(async r => { console.log('got', r.status, await r.text()); return 1 })"
        )
        # No tool evaluates script: the page's fetch runs through the Python API, same session.
        async with Client("mcp-test", home=env["BAY_HOME"]) as api:
            await api.eval(js)
        for _ in range(100):
            logged = await session.call_tool("logs", {})
            if logged.structured_content["data"]["messages"]:
                break
            await anyio.sleep(0.05)
        assert 'got 201 {"n": 1}' in text(logged)
        requests = await session.call_tool("logs", {"what": "requests", "filter": "/mocked"})
        rows = requests.structured_content["data"]["requests"]
        assert [r["routed"] for r in rows] == ["mocked"]
        har = await session.call_tool("network", {"action": "har_stop"})
        assert "MCPSECRET" not in str(har.structured_content)
        entries = har.structured_content["data"]["har"]["log"]["entries"]
        assert any(e["request"]["url"].endswith("/mocked") for e in entries)
        none = await session.call_tool("network", {"action": "unroute", "glob": "**/other"})
        assert none.is_error
        assert none.structured_content["code"] == "route_unknown"
        gone = await session.call_tool("network", {"action": "unroute"})
        assert not gone.is_error
        errors = await session.call_tool("logs", {"what": "errors"})
        assert errors.structured_content["data"]["errors"] == []

    anyio.run(_session_run, env, body)


def test_bay_mcp_without_the_plugin_is_a_usage_refusal_naming_the_install() -> None:
    code = (
        "import sys; sys.modules['browserbay_mcp'] = None\n"
        "from browserbay_cli.main import run\n"
        "sys.exit(run(['mcp', '--json']))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 2
    assert '"code": "usage"' in out.stdout
    assert "bay install " in out.stdout
    assert "plugins/mcp" in out.stdout  # from the checkout: browserbay-mcp is not on PyPI


#: C0 controls but newline and tab, DEL and C1: never raw in a tool result's text.
CONTROLS = {chr(c) for c in (*range(0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0))}


def test_page_escapes_are_escaped_and_refusals_clipped(env: dict[str, str], demo: str) -> None:
    """Issue 15 item 8 through MCP: a page's terminal escapes (escapes.html) reach the text of
    a result as visible escapes, the structured content keeps them; a 120 KB URL and a
    5 MB-ish page text in a refusal come back clipped."""

    async def body(session: ClientSession) -> None:
        opened = await session.call_tool("navigate", {"url": f"{demo}/escapes.html"})
        assert not opened.is_error, text(opened)
        for what in ("title", "text", "html"):
            read = await session.call_tool("read", {"what": what})
            assert not read.is_error, text(read)
            raw = sorted(repr(c) for c in set(text(read)) & CONTROLS)
            assert raw == [], (what, raw)
            assert "\\x9b" in text(read), (what, text(read)[:300])
        value = (await session.call_tool("read", {"what": "text", "ref": "#p"})).structured_content
        assert "\x1b]0;pwned\x07" in str(value["data"]["value"])  # the data is unchanged
        snap = await session.call_tool("snapshot", {"interactive": False})
        assert set(text(snap)) & CONTROLS == set(), text(snap)
        assert "[ref=e4]" in text(await session.call_tool("snapshot", {"interactive": True}))

        big = await session.call_tool("navigate", {"url": "http://127.0.0.1:1/" + "a" * 120_000})
        assert big.is_error
        assert big.structured_content["code"] == "action_failed"
        assert len(text(big)) < 4_000, len(text(big))
        assert len(str(big.structured_content)) < 4_000
        assert "…(+" in big.structured_content["message"]

    anyio.run(_session_run, env, body)


def test_wait_mouse_and_keyboard_tools(env: dict[str, str], demo: str) -> None:
    async def body(session: ClientSession) -> None:
        await session.call_tool("navigate", {"url": f"{demo}/form.html"})
        later = "setTimeout(() => document.title = 'Ready now', 800); 1"
        await session.call_tool("act", {"action": "focus", "ref": "input[name=name]"})
        typed = await session.call_tool("keyboard", {"action": "type", "text": "Ada"})
        assert not typed.is_error, text(typed)
        assert text(typed).startswith("typed 3 characters into input[name=name]")
        inserted = await session.call_tool("keyboard", {"action": "inserttext", "text": " L"})
        assert not inserted.is_error, text(inserted)
        value = await session.call_tool("read", {"what": "value", "ref": "input[name=name]"})
        assert value.structured_content["data"]["value"] == "Ada L"
        moved = await session.call_tool("mouse", {"action": "move", "x": 30, "y": 40})
        assert "(CSS px of the viewport)" in text(moved), text(moved)
        down = await session.call_tool("mouse", {"action": "down"})
        assert down.structured_content["data"]["x"] == 30
        up = await session.call_tool("mouse", {"action": "up", "button": "left"})
        assert not up.is_error, text(up)
        wheel = await session.call_tool("mouse", {"action": "wheel", "dy": 50})
        assert "scroll" in wheel.structured_content["data"]
        no_xy = await session.call_tool("mouse", {"action": "move", "x": 3})
        assert no_xy.structured_content["code"] == "usage"
        # A condition met a moment later (the same session's page, set up through the API);
        # none given is a usage refusal.
        async with Client("mcp-test", home=env["BAY_HOME"]) as c:
            assert (await c.eval(later)).value == 1
        waited = await session.call_tool("wait", {"text": "Sign up"})
        assert not waited.is_error, text(waited)
        titled = await session.call_tool("wait", {"fn": "document.title === 'Ready now'"})
        assert not titled.is_error, text(titled)
        idle = await session.call_tool("wait", {"load": "networkidle"})
        assert idle.structured_content["data"]["waited"] == "networkidle"
        none = await session.call_tool("wait", {})
        assert none.structured_content["code"] == "usage"

    anyio.run(_session_run, env, body)


def test_the_tools_run_verbs_of_the_table_with_the_arguments_it_names() -> None:
    from typing import get_args

    from browserbay.verbs import BY_NAME
    from browserbay_mcp import server

    assert server.ACTIONS, "act runs no verb"
    for verb in (*server.ACTIONS, *get_args(server.Go)):
        assert verb in BY_NAME, verb
    for action in server.ACTIONS:
        assert {a.name for a in BY_NAME[action].args} <= set(server.ACT_PARAMS), action


def test_cookies_storage_and_a_state_file_that_is_never_shown(
    env: dict[str, str], demo: str, tmp_path: Path
) -> None:
    secret = "v" * 64
    path = tmp_path / "state.json"

    async def body(session: ClientSession) -> None:
        await session.call_tool("navigate", {"url": f"{demo}/"})
        made = await session.call_tool(
            "cookies", {"action": "set", "name": "sid", "value": secret, "http_only": True}
        )
        assert not made.is_error, text(made)
        assert secret not in text(made)
        got = await session.call_tool("cookies", {})
        row = next(c for c in got.structured_content["data"]["cookies"] if c["name"] == "sid")
        assert row["http_only"] is True
        assert row["value_chars"] == 64
        assert secret not in text(got)
        bad = await session.call_tool("cookies", {"action": "set", "name": "x"})
        assert bad.is_error
        put = await session.call_tool(
            "storage", {"area": "local", "action": "set", "key": "k", "value": "1"}
        )
        assert not put.is_error, text(put)
        one = await session.call_tool("storage", {"area": "local", "key": "k"})
        assert one.structured_content["data"]["value"] == "1"
        saved = await session.call_tool("state", {"action": "save", "path": str(path)})
        assert not saved.is_error, text(saved)
        assert secret not in text(saved)
        assert (path.stat().st_mode & 0o777) == 0o600
        assert secret in path.read_text()
        cleared = await session.call_tool("cookies", {"action": "clear"})
        assert cleared.structured_content["data"]["cleared"] == 1
        loaded = await session.call_tool("state", {"action": "load", "path": str(path)})
        assert not loaded.is_error, text(loaded)
        again = await session.call_tool("cookies", {"name": "sid"})
        assert again.structured_content["data"]["cookies"][0]["value_chars"] == 64

    anyio.run(_session_run, env, body)


FILES_HTML = b"""<!doctype html><title>Files</title><input id=f type=file multiple>
<pre id=out>nothing yet</pre><a id=dl href="/report.csv">Report</a>
<script>document.getElementById('f').onchange = async e => {
  const names = [];
  for (const f of e.target.files) names.push(f.name + ':' + (await f.text()));
  document.getElementById('out').textContent = names.join(',');
};</script>"""


class FilesPage(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        body, headers = FILES_HTML, {"Content-Type": "text/html"}
        if self.path == "/report.csv":
            body = b"a,b\n1,2\n"
            headers = {"Content-Disposition": "attachment; filename=report.csv"}
        self.send_response(200)
        for k, v in {**headers, "Content-Length": str(len(body))}.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)


def test_upload_and_download_tools_move_files_of_this_machine(
    env: dict[str, str], tmp_path: Path
) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FilesPage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    site = f"http://127.0.0.1:{server.server_address[1]}"
    cv = tmp_path / "cv.txt"
    cv.write_text("Ada")

    async def body(session: ClientSession) -> None:
        await session.call_tool("navigate", {"url": f"{site}/files.html"})
        up = await session.call_tool("upload", {"ref": "#f", "paths": [str(cv)]})
        assert not up.is_error, text(up)
        assert up.structured_content["data"]["files"] == [{"name": "cv.txt", "size": 3}]
        shown = "nothing yet"
        with anyio.fail_after(10):
            while shown == "nothing yet":
                read = await session.call_tool("read", {"what": "text", "ref": "#out"})
                shown = read.structured_content["data"]["value"]
        assert shown == "cv.txt:Ada"
        missing = await session.call_tool("upload", {"ref": "#f", "paths": [str(tmp_path / "no")]})
        assert missing.structured_content["code"] == "file_unreadable"
        dest = tmp_path / "r.csv"
        got = await session.call_tool("download", {"ref": "#dl", "path": str(dest)})
        assert not got.is_error, text(got)
        assert dest.read_text() == "a,b\n1,2\n"
        listed = await session.call_tool("download", {})
        assert listed.structured_content["data"]["downloads"] == []
        need = await session.call_tool("download", {"ref": "#dl"})
        assert need.structured_content["code"] == "usage"

    try:
        anyio.run(_session_run, env, body)
    finally:
        server.shutdown()


def test_a_confirm_is_named_by_the_tool_that_opened_it_and_answered_by_dialog(
    env: dict[str, str], demo: str
) -> None:
    js = (
        "document.body.insertAdjacentHTML('beforeend', '<button id=c>Delete</button>');"
        " document.getElementById('c').onclick ="
        " () => { document.title = String(confirm('Delete everything?')); }; 'ok'"
    )

    async def body(session: ClientSession) -> None:
        await session.call_tool("navigate", {"url": f"{demo}/form.html"})
        proc = subprocess.run(
            [BAY, "eval", js, "--json"], env=env, capture_output=True, text=True, timeout=60
        )
        assert json.loads(proc.stdout)["ok"], proc
        clicked = await session.call_tool("act", {"action": "click", "ref": "#c"})
        assert not clicked.is_error, text(clicked)
        assert 'notice: dialog: confirm "Delete everything?"' in text(clicked)
        refused = await session.call_tool("read", {"what": "title"})
        assert refused.is_error
        assert refused.structured_content is not None
        assert refused.structured_content["code"] == "dialog_open"
        status = await session.call_tool("dialog", {})
        assert status.structured_content is not None
        assert status.structured_content["data"]["dialogs"][0]["type"] == "confirm"
        accepted = await session.call_tool("dialog", {"action": "accept"})
        assert not accepted.is_error, text(accepted)
        title = await session.call_tool("read", {"what": "title"})
        assert title.structured_content is not None
        assert title.structured_content["data"]["value"] == "true"
        none = await session.call_tool("dialog", {"action": "dismiss"})
        assert none.is_error
        assert none.structured_content is not None
        assert none.structured_content["code"] == "no_dialog"

    anyio.run(_session_run, env, body)
