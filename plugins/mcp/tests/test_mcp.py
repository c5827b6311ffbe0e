"""`bay mcp` through the MCP SDK's own stdio client: tools/list, then navigate → snapshot →
act (fill, click) on the demo site, every result naming session and profile, refusals as
tool errors carrying code and way out. A real keeper and Chromium."""

from __future__ import annotations

import base64
import functools
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
from browserbay.verbs import BY_NAME, VERBS, Verb
from browserbay_mcp.tools import tool_names

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


def data(result: CallToolResult) -> dict[str, Any]:
    """A result's structured content: what its data says more than its text ({} if none)."""
    return dict(result.structured_content or {})


def error(result: CallToolResult) -> dict[str, Any]:
    """A tool error in its documented shape: the JSON of its text, its structured content the
    same (plus ``data`` when the refusal has more to say)."""
    assert result.is_error, text(result)
    shape = json.loads(text(result))
    assert set(shape) == {"code", "message", "way_out"}, shape
    assert {k: v for k, v in data(result).items() if k != "data"} == shape
    assert shape["code"] in CODES
    assert "bay " not in shape["way_out"] or "ask the user to run" in shape["way_out"], shape
    if "ask the user to run" not in shape["way_out"]:  # a shell's words only for the human
        assert not CLI_WORDS.search(shape["message"] + "\n" + shape["way_out"]), shape
    return dict(shape, data=data(result).get("data", {}))


def no_footer_nor_repeat(result: CallToolResult) -> None:
    """No CLI footer in a result, no command in a shell's words, and no string of its
    structured content its text says."""
    shown = text(result)
    assert not CLI_WORDS.search(shown + json.dumps(data(result))), shown
    assert "profile: ephemeral" not in shown, shown
    assert "(from the API)" not in shown, shown
    for key, value in data(result).items():
        assert not (isinstance(value, str) and value and value in shown), (key, value)


async def _session_run(env: dict[str, str], body: Any, *args: Any, tools: str = "") -> Any:
    argv = ["mcp", "--tools", tools] if tools else ["mcp"]
    params = StdioServerParameters(command=BAY, args=argv, env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await body(session, *args)


def run(env: dict[str, str], body: Any, tools: str = "") -> None:
    anyio.run(functools.partial(_session_run, env, body, tools=tools))


async def keeper_plugins(env: dict[str, str]) -> list[Verb]:
    """The plugins' verbs the keeper of ``env`` lists (``bay verbs``)."""
    async with Client("mcp-test", home=env["BAY_HOME"]) as api:
        rows = (await api.call("verbs")).data["verbs"]
    return [Verb.from_row(r) for r in rows if r["plugin"]]


def test_tools_list_is_the_core_profile_generated_from_the_verb_table(env: dict[str, str]) -> None:
    async def body(session: ClientSession) -> None:
        listed = await session.list_tools()
        tools = {t.name: t for t in listed.tools}
        # The census: one tool per agent verb of the core profile (the core table's, then the
        # installed plugins' of that profile: liveview-web's handoff and live), none other.
        plugins = await keeper_plugins(env)
        assert set(tools) == set(tool_names(["core"], plugins))
        assert {"handoff", "live"} <= set(tools)
        order = [*VERBS, *plugins]
        assert [t.name for t in listed.tools] == [v.name for v in order if v.name in tools]
        table = {v.name: v for v in order}
        for name, tool in tools.items():
            verb = table[name]
            assert tool.description == verb.summary or "bay " not in (tool.description or "")
            props = tool.input_schema.get("properties", {})
            assert list(props) == [a.name for a in verb.args], name
            required = [a.name for a in verb.args if a.kind in ("pos", "rest")]
            assert tool.input_schema.get("required", []) == required, name
        assert tools["get"].input_schema["properties"]["what"]["enum"] == list(
            BY_NAME["get"].arg("what").choices
        )
        assert tools["snapshot"].input_schema["properties"]["interactive"]["type"] == "boolean"
        # The target's help, shared by a dozen tools, is said once in the instructions.
        assert "description" not in tools["click"].input_schema["properties"]["target"]

    run(env, body)


def test_tools_selects_profiles_and_an_unknown_one_is_refused(env: dict[str, str]) -> None:
    async def body(session: ClientSession) -> None:
        names = {t.name for t in (await session.list_tools()).tools}
        assert names == set(tool_names(["core", "io", "network"], await keeper_plugins(env)))
        assert "trace" in names  # the trace plugin's verb is a tool of network
        assert {"upload", "mouse", "console", "network"} <= names
        assert "cookies" not in names
        off = await session.call_tool("cookies", {})
        refused = error(off)
        assert refused["code"] == "usage"
        assert "no tool 'cookies'" in refused["message"]

    run(env, body, tools="core,io,network")
    bad = subprocess.run(
        [BAY, "mcp", "--tools", "core,nope", "--json"], env=env, capture_output=True, text=True
    )
    assert bad.returncode == 2
    assert json.loads(bad.stdout)["code"] == "usage"
    assert "'nope'" in bad.stdout


def test_open_snapshot_fill_click_results_and_refusals(env: dict[str, str], demo: str) -> None:
    async def body(session: ClientSession) -> None:
        opened = await session.call_tool("open", {"url": f"{demo}/form.html"})
        assert not opened.is_error, text(opened)
        assert text(opened) == f"Sign up\n{demo}/form.html"
        no_footer_nor_repeat(opened)

        snap = await session.call_tool("snapshot", {"interactive": True})
        assert not snap.is_error, text(snap)
        tree = text(snap)
        no_footer_nor_repeat(snap)
        assert "snapshot" not in data(snap)  # the tree is the text, once
        name = re.search(r'textbox "Name" @(e\d+)\b', tree)
        submit = re.search(r'button "Create account" @(e\d+)\b', tree)
        assert name, tree
        assert submit, tree

        filled = await session.call_tool("fill", {"target": "@" + name[1], "text": "Ada"})
        assert not filled.is_error, text(filled)
        dbl = await session.call_tool("dblclick", {"target": "@" + name[1]})
        assert text(dbl).startswith("double-clicked"), text(dbl)
        clicked = await session.call_tool("click", {"target": "@" + submit[1]})
        assert text(clicked).startswith("clicked"), text(clicked)
        no_footer_nor_repeat(clicked)
        title = await session.call_tool("get", {"what": "title"})
        assert text(title) == "Signed up"
        body_text = await session.call_tool("get", {"what": "text"})
        assert "Ada" in text(body_text)

        # A refusal: the documented shape, its way out said as a tool call.
        stale = error(await session.call_tool("click", {"target": "@" + submit[1]}))
        assert stale["code"] == "ref_stale"
        assert stale["message"].startswith("Reference @e")
        assert stale["way_out"].startswith("snapshot(interactive=true)")
        local = error(await session.call_tool("open", {"url": "file:///etc/passwd"}))
        assert local["code"] == "local_scheme_refused"

    run(env, body)


def test_argument_mistakes_are_refused_in_the_documented_shape(env: dict[str, str]) -> None:
    """Nothing reaches the keeper: no browser is started for any of these."""

    async def body(session: ClientSession) -> None:
        unknown = error(await session.call_tool("click", {"target": "h1", "button": "right"}))
        assert unknown["code"] == "usage"
        assert unknown["message"] == "click has no argument 'button'; its arguments: target"
        assert unknown["way_out"] == "call click with only: target"
        missing = error(await session.call_tool("click", {}))
        assert missing["message"].startswith("click needs target")
        assert missing["way_out"] == "call click with target"
        choice = error(await session.call_tool("get", {"what": "colour"}))
        assert "what takes one of title, url" in choice["message"]
        typed = error(await session.call_tool("snapshot", {"depth": "deep"}))
        assert typed["message"] == 'snapshot: depth takes an integer, not "deep"'
        flag = error(await session.call_tool("snapshot", {"interactive": "yes"}))
        assert "interactive takes true or false" in flag["message"]
        for shown in (unknown, missing, choice, typed, flag):
            assert "pydantic" not in json.dumps(shown)
            assert "validation error" not in json.dumps(shown)
        status = await session.call_tool("status", {})
        assert "browser bb-" not in text(status), text(status)

    run(env, body)


def test_read_state_find_and_frame(env: dict[str, str], demo: str) -> None:
    async def body(session: ClientSession) -> None:
        opened = await session.call_tool("open", {"url": f"{demo}/form.html"})
        assert not opened.is_error, text(opened)
        count = await session.call_tool("get", {"what": "count", "target": "option"})
        assert data(count)["value"] == 3
        attr = await session.call_tool("get", {"what": "attr", "target": "select", "name": "name"})
        assert text(attr) == "plan"
        box = await session.call_tool("get", {"what": "box", "target": "h1"})
        assert set(data(box)["value"]) == {"x", "y", "width", "height"}
        unticked = await session.call_tool("is", {"what": "checked", "target": "[name=terms]"})
        assert text(unticked).startswith("false"), text(unticked)
        found = await session.call_tool(
            "find", {"by": "label", "value": "I accept", "action": "check"}
        )
        assert not found.is_error, text(found)
        ticked = await session.call_tool("is", {"what": "checked", "target": "[name=terms]"})
        assert text(ticked).startswith("true")
        filled = await session.call_tool(
            "find",
            {"by": "role", "value": "textbox", "name": "Name", "action": "fill", "text": "Ada"},
        )
        assert not filled.is_error, text(filled)
        read = await session.call_tool("get", {"what": "value", "target": "[name=name]"})
        assert text(read) == "Ada"
        several = await session.call_tool(
            "find", {"by": "role", "value": "textbox", "action": "click"}
        )
        assert error(several)["code"] == "target_ambiguous"
        no_frame = error(await session.call_tool("frame", {"target": "h1"}))
        assert no_frame["code"] == "not_a_frame"
        assert 'frame(target="@eN")' in no_frame["way_out"]
        main = await session.call_tool("frame", {"target": "main"})
        assert not main.is_error, text(main)

    run(env, body)


def test_tabs_history_screenshot_status_close(env: dict[str, str], demo: str) -> None:
    async def body(session: ClientSession) -> None:
        await session.call_tool("open", {"url": f"{demo}/"})
        await session.call_tool("open", {"url": f"{demo}/form.html"})
        back = await session.call_tool("back", {})
        assert text(back).startswith("browserbay demo")
        new = await session.call_tool("tab", {"action": "new", "arg": f"{demo}/form.html"})
        assert not new.is_error, text(new)
        listed = await session.call_tool("tab", {})
        tabs = data(listed)["tabs"]
        assert [t["current"] for t in tabs] == [False, True]
        new_tab = tabs[1]["id"]
        assert new_tab in text(new)  # said by the text, so not repeated structured
        switched = await session.call_tool("tab", {"action": tabs[0]["id"]})
        assert not switched.is_error, text(switched)
        closed = await session.call_tool("tab", {"action": "close", "arg": new_tab})
        assert not closed.is_error
        gone = error(await session.call_tool("tab", {"action": new_tab}))
        assert gone["code"] == "tab_gone"
        assert gone["way_out"] == 'tab(action="list")'

        shot = await session.call_tool("screenshot", {})
        assert not shot.is_error, text(shot)
        assert isinstance(shot.content[0], ImageContent)
        assert shot.content[0].mime_type == "image/png"
        assert base64.b64decode(shot.content[0].data).startswith(b"\x89PNG")
        assert shot.structured_content is None
        status = await session.call_tool("status", {})
        assert "session mcp-test" in text(status)
        ended = await session.call_tool("close", {})
        assert not ended.is_error

    run(env, body, tools="core,tabs")


def test_an_annotated_jpeg_screenshot_keeps_its_legend_and_mime_and_unchanged_has_no_image(
    env: dict[str, str], demo: str
) -> None:
    async def body(session: ClientSession) -> None:
        await session.call_tool("open", {"url": f"{demo}/form.html"})
        args = {"annotate": True, "format": "jpeg", "max_px": 640}
        shot = await session.call_tool("screenshot", args)
        assert not shot.is_error, text(shot)
        assert isinstance(shot.content[0], ImageContent)
        assert shot.content[0].mime_type == "image/jpeg"
        assert base64.b64decode(shot.content[0].data)[:2] == b"\xff\xd8"
        said = text(shot)
        assert re.search(r'^@e\d+ button "Create account"$', said, re.M), said
        assert "scale 0.5" in said
        again = await session.call_tool("screenshot", {**args, "if_changed": True})
        assert not again.is_error, text(again)
        assert not [c for c in again.content if isinstance(c, ImageContent)]
        assert "unchanged" in text(again)

    run(env, body, tools="core")


def test_emulation_sets_what_the_page_sees_and_refuses_an_unknown_device(
    env: dict[str, str], demo: str
) -> None:
    async def body(session: ClientSession) -> None:
        await session.call_tool("open", {"url": f"{demo}/form.html"})
        set_ = await session.call_tool("set", {"setting": "viewport", "value": 333, "second": 444})
        assert not set_.is_error, text(set_)
        hidden = await session.call_tool(
            "set", {"setting": "headers", "value": {"X-Mcp": "MCPHEADERSECRET"}}
        )
        assert not hidden.is_error, text(hidden)
        assert "MCPHEADERSECRET" not in str(hidden.structured_content) + text(hidden)
        async with Client("mcp-test", home=env["BAY_HOME"]) as api:
            assert (await api.eval("[innerWidth, innerHeight]")).value == [333, 444]
        bad = error(await session.call_tool("set", {"setting": "device", "value": "Pixel 55"}))
        assert bad["code"] == "device_unknown"
        assert "Pixel" in bad["message"] + bad["way_out"]
        assert 'set(setting="device"' in bad["way_out"]
        await session.call_tool("close", {})

    run(env, body, tools="core,windows")


def test_console_and_network_read_the_tab_and_route_its_requests(
    env: dict[str, str], demo: str
) -> None:
    async def body(session: ClientSession) -> None:
        await session.call_tool("open", {"url": f"{demo}/form.html"})
        routed = await session.call_tool(
            "network",
            {"action": "route", "arg": "**/mocked", "body": {"n": 1}, "status": 201},
        )
        assert not routed.is_error, text(routed)
        await session.call_tool("network", {"action": "har", "arg": "start"})
        js = (
            "fetch('/mocked', {headers: {Authorization: 'Bearer MCPSECRET'}})"
            ".then(async r => { console.log('got', r.status, await r.text()); return 1 })"
        )
        await session.call_tool("eval", {"js": js})
        for _ in range(100):
            logged = await session.call_tool("console", {})
            if "got 201" in text(logged):
                break
            await anyio.sleep(0.05)
        assert 'got 201 {"n": 1}' in text(logged)
        requests = await session.call_tool("network", {"action": "requests", "filter": "/mocked"})
        rows = data(requests)["requests"]
        assert [r["routed"] for r in rows] == ["mocked"]
        har = await session.call_tool("network", {"action": "har", "arg": "stop"})
        assert "MCPSECRET" not in str(har.structured_content) + text(har)
        entries = data(har)["har"]["log"]["entries"]
        assert any(e["request"]["url"].endswith("/mocked") for e in entries)
        none = error(await session.call_tool("network", {"action": "unroute", "arg": "**/other"}))
        assert none["code"] == "route_unknown"
        assert 'network(action="route")' in none["way_out"]
        gone = await session.call_tool("network", {"action": "unroute"})
        assert not gone.is_error
        errors = await session.call_tool("errors", {})
        assert not errors.is_error, text(errors)

    run(env, body, tools="core,network")


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
    a result as visible escapes, the structured content keeps them; a 120 KB URL in a refusal
    comes back clipped."""

    async def body(session: ClientSession) -> None:
        opened = await session.call_tool("open", {"url": f"{demo}/escapes.html"})
        assert not opened.is_error, text(opened)
        for what in ("title", "text", "html"):
            read = await session.call_tool("get", {"what": what})
            assert not read.is_error, text(read)
            raw = sorted(repr(c) for c in set(text(read)) & CONTROLS)
            assert raw == [], (what, raw)
            assert "\\x9b" in text(read), (what, text(read)[:300])
        value = await session.call_tool("get", {"what": "text", "target": "#p"})
        # The text shows the escapes escaped, so the raw value says more: it is structured.
        assert "\x1b]0;pwned\x07" in str(data(value)["value"])
        snap = await session.call_tool("snapshot", {})
        assert set(text(snap)) & CONTROLS == set(), text(snap)
        flat = text(await session.call_tool("snapshot", {"interactive": True}))
        assert re.search(r" @e4\b", flat), flat

        big = await session.call_tool("open", {"url": "http://127.0.0.1:1/" + "a" * 120_000})
        assert error(big)["code"] == "action_failed"
        assert len(text(big)) < 4_000, len(text(big))
        assert len(str(big.structured_content)) < 8_000
        assert "…(+" in error(big)["message"]

    run(env, body)


def test_wait_mouse_and_keyboard_tools(env: dict[str, str], demo: str) -> None:
    async def body(session: ClientSession) -> None:
        await session.call_tool("open", {"url": f"{demo}/form.html"})
        later = "setTimeout(() => document.title = 'Ready now', 800); 1"
        await session.call_tool("focus", {"target": "input[name=name]"})
        typed = await session.call_tool("keyboard", {"action": "type", "text": "Ada"})
        assert text(typed).startswith("typed 3 characters into input[name=name]"), text(typed)
        inserted = await session.call_tool("keyboard", {"action": "inserttext", "text": " L"})
        assert not inserted.is_error, text(inserted)
        value = await session.call_tool("get", {"what": "value", "target": "input[name=name]"})
        assert text(value) == "Ada L"
        # Numbers for the table's words (mouse move x y) are sent as the CLI sends them.
        moved = await session.call_tool("mouse", {"action": "move", "first": 30, "second": 40})
        assert text(moved) == "at 30,40", text(moved)
        down = await session.call_tool("mouse", {"action": "down"})
        assert data(down)["x"] == 30
        up = await session.call_tool("mouse", {"action": "up", "first": "left"})
        assert not up.is_error, text(up)
        wheel = await session.call_tool("mouse", {"action": "wheel", "first": 50})
        assert "scroll" in data(wheel)
        no_xy = error(await session.call_tool("mouse", {"action": "move", "first": 3}))
        assert no_xy["code"] == "usage"
        assert (await session.call_tool("eval", {"js": later})).is_error is False
        waited = await session.call_tool("wait", {"text": "Sign up"})
        assert not waited.is_error, text(waited)
        titled = await session.call_tool("wait", {"fn": "document.title === 'Ready now'"})
        assert not titled.is_error, text(titled)
        idle = await session.call_tool("wait", {"load": "networkidle"})
        assert not idle.is_error, text(idle)
        none = error(await session.call_tool("wait", {}))
        assert none["code"] == "usage"
        assert "bay help" not in none["way_out"]

    run(env, body, tools="core,io")


def test_cookies_storage_and_a_state_file_that_is_never_shown(
    env: dict[str, str], demo: str, tmp_path: Path
) -> None:
    secret = "v" * 64
    path = tmp_path / "state.json"

    async def body(session: ClientSession) -> None:
        await session.call_tool("open", {"url": f"{demo}/"})
        made = await session.call_tool(
            "cookies", {"action": "set", "cookie": "sid", "value": secret, "http_only": True}
        )
        assert not made.is_error, text(made)
        assert secret not in text(made) + str(made.structured_content)
        got = await session.call_tool("cookies", {})
        row = next(c for c in data(got)["cookies"] if c["name"] == "sid")
        assert row["http_only"] is True
        assert row["value_chars"] == 64
        assert secret not in text(got)
        bad = await session.call_tool("cookies", {"action": "set", "cookie": "x"})
        assert bad.is_error
        put = await session.call_tool(
            "storage", {"area": "local", "action": "set", "key": "k", "value": "1"}
        )
        assert not put.is_error, text(put)
        one = await session.call_tool("storage", {"area": "local", "key": "k"})
        assert text(one).startswith("1") or data(one).get("value") == "1", text(one)
        saved = await session.call_tool("state", {"action": "save", "file": str(path)})
        assert not saved.is_error, text(saved)
        assert secret not in text(saved)
        assert (path.stat().st_mode & 0o777) == 0o600
        assert secret in path.read_text()
        cleared = await session.call_tool("cookies", {"action": "clear"})
        assert data(cleared)["cleared"] == 1
        loaded = await session.call_tool("state", {"action": "load", "file": str(path)})
        assert not loaded.is_error, text(loaded)
        again = await session.call_tool("cookies", {"name": "sid"})
        assert data(again)["cookies"][0]["value_chars"] == 64

    run(env, body, tools="core,state")


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
        await session.call_tool("open", {"url": f"{site}/files.html"})
        up = await session.call_tool("upload", {"target": "#f", "files": [str(cv)]})
        assert not up.is_error, text(up)
        assert data(up)["files"] == [{"name": "cv.txt", "size": 3}]
        shown = "nothing yet"
        with anyio.fail_after(10):
            while shown == "nothing yet":
                read = await session.call_tool("get", {"what": "text", "target": "#out"})
                shown = text(read)
        assert shown == "cv.txt:Ada"
        missing = await session.call_tool(
            "upload", {"target": "#f", "files": [str(tmp_path / "no")]}
        )
        assert error(missing)["code"] == "file_unreadable"
        dest = tmp_path / "r.csv"
        got = await session.call_tool("download", {"target": "#dl", "path": str(dest)})
        assert not got.is_error, text(got)
        assert dest.read_text() == "a,b\n1,2\n"
        listed = await session.call_tool("downloads", {})
        assert not listed.is_error, text(listed)
        need = error(await session.call_tool("download", {"target": "#dl"}))
        assert need["code"] == "usage"
        assert need["way_out"] == "call download with path"

    try:
        run(env, body, tools="core,io")
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
        await session.call_tool("open", {"url": f"{demo}/form.html"})
        assert not (await session.call_tool("eval", {"js": js})).is_error
        clicked = await session.call_tool("click", {"target": "#c"})
        assert not clicked.is_error, text(clicked)
        # The notice: its own block of text, and structured; said as tool calls.
        notice = data(clicked)["notice"]
        assert notice.startswith('dialog: confirm "Delete everything?"'), notice
        assert f"notice: {notice}" in text(clicked)
        assert "bay dialog" not in notice
        assert 'dialog(action="accept")' in notice, notice
        refused = error(await session.call_tool("get", {"what": "title"}))
        assert refused["code"] == "dialog_open"
        assert refused["way_out"].startswith('dialog(action="accept"'), refused
        status = await session.call_tool("dialog", {"action": "status"})
        assert data(status)["dialogs"][0]["type"] == "confirm"
        accepted = await session.call_tool("dialog", {"action": "accept"})
        assert not accepted.is_error, text(accepted)
        title = await session.call_tool("get", {"what": "title"})
        assert text(title) == "true"
        none = error(await session.call_tool("dialog", {"action": "dismiss"}))
        assert none["code"] == "no_dialog"

    run(env, body)


def test_a_plugins_verbs_are_tools_of_the_profile_each_names_and_worded_for_mcp(
    env: dict[str, str],
) -> None:
    """A real plugin (mcp_plugin.py) registered in the keeper this server starts: its verb of
    profile ``core`` is a tool of the default server, called and refused like the core's;
    its verb of no profile is a tool of ``all`` only; its owner-only verb is never a tool."""
    here = str(Path(__file__).resolve().parent)
    env = dict(env, PYTHONPATH=here, BAY_PLUGIN_MODULES="mcp_plugin")

    async def core(session: ClientSession) -> None:
        # Called before any listing: the server asks the keeper for its plugins' verbs.
        hello = await session.call_tool("greet", {"name": "Ada", "loud": True})
        assert not hello.is_error, text(hello)
        assert text(hello) == "hello Ada!"
        assert data(hello) == {"times": 1}  # "Ada" is said by the text
        no_footer_nor_repeat(hello)
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert "greet" in tools
        assert {"shelve", "wipe"}.isdisjoint(tools)
        assert set(tools) == set(tool_names(["core"], await keeper_plugins(env)))
        schema = tools["greet"].input_schema
        assert schema["required"] == ["name"]
        assert schema["properties"]["loud"] == {"type": "boolean", "description": "with a bang"}
        # Its refusal's way out names its own tool (and a core one) as calls, no shell.
        nobody = error(await session.call_tool("greet", {"name": "nobody"}))
        assert nobody["code"] == "usage"
        assert nobody["way_out"] == (
            'greet(name="Ada", loud=true)  (or look with snapshot(interactive=true) first)'
        )
        unknown = error(await session.call_tool("greet", {"name": "Ada", "volume": 3}))
        assert unknown["message"] == "greet has no argument 'volume'; its arguments: name, loud"
        off = error(await session.call_tool("shelve", {}))
        assert "no tool 'shelve'" in off["message"]

    async def every(session: ClientSession) -> None:
        names = {t.name for t in (await session.list_tools()).tools}
        assert {"greet", "shelve"} <= names
        assert "wipe" not in names
        shelved = await session.call_tool("shelve", {})
        assert text(shelved) == "shelved"

    run(env, core)
    run(env, every, tools="all")


#: A command said in a shell's words (``bay <verb>`` or a ``--option``), where an MCP agent
#: has no shell to run it.
CLI_WORDS = re.compile(r"`?\bbay [a-z]|(?<![\w-])--[a-z]")


def no_cli_words(result: CallToolResult, page_text: str = "") -> str:
    """A result's text and structured content with no command in a shell's words (but the
    page's own ``page_text``, said as it is); its text."""
    said = text(result)
    for where in (said.replace(page_text, "") if page_text else said, json.dumps(data(result))):
        assert not CLI_WORDS.search(where), where
    return said


def test_answer_bodies_and_refusals_say_tool_calls_not_commands_and_leave_the_page_be(
    env: dict[str, str], demo: str, tmp_path: Path
) -> None:
    """Issue 19 item 5 over a real MCP session on a real page: the keeper's answers carry
    `bay …` commands and `--options` in their text (a snapshot's next page, a key held,
    a frame entered, a HAR recording, kept tabs) and in their refusals' messages; the MCP
    server says each as the tool call, and leaves a page's own prose about a bay as it is."""
    answer = tmp_path / "answer.json"
    answer.write_text("{}")
    prose = "Boats sail the bay open to all; the bay close to town is calm."
    js = (
        "document.body.insertAdjacentHTML('beforeend', '<p id=prose>" + prose + "</p>"
        '<iframe srcdoc="<button>In</button>"></iframe>\'); 1'
    )

    async def body(session: ClientSession) -> None:
        await session.call_tool("open", {"url": f"{demo}/list.html?n=40"})
        paged = await session.call_tool("snapshot", {"interactive": True, "limit": 5})
        said = no_cli_words(paged)
        assert "snapshot(interactive=true, limit=5, page=2)" in said, said
        assert "next" not in data(paged)  # the text says it (as a tool call)
        await session.call_tool("open", {"url": f"{demo}/form.html"})
        assert not (await session.call_tool("eval", {"js": js})).is_error
        read = await session.call_tool("get", {"what": "text", "target": "#prose"})
        assert no_cli_words(read, prose) == prose  # the page's words, as they are
        framed = await session.call_tool("frame", {"target": "iframe"})
        assert 'frame(target="main") leaves it' in no_cli_words(framed), text(framed)
        await session.call_tool("frame", {"target": "main"})
        held = await session.call_tool("keydown", {"key": "Shift"})
        assert 'keyup(key="Shift") releases it' in no_cli_words(held), text(held)
        await session.call_tool("keyup", {"key": "Shift"})
        har = await session.call_tool("network", {"action": "har", "arg": "start"})
        assert 'network(action="har", arg="stop")' in no_cli_words(har), text(har)
        await session.call_tool("network", {"action": "har", "arg": "stop"})
        # A refusal's message names the verb's options as its tool's parameters.
        state = error(await session.call_tool("wait", {"state": "hidden"}))
        assert "--" not in state["message"], state
        assert "milliseconds, text, url, load, fn" in state["message"], state
        assert state["way_out"] == "the wait tool's description and input schema"
        both = error(
            await session.call_tool(
                "network", {"action": "route", "arg": "**/x", "body": "1", "body_file": str(answer)}
            )
        )
        assert "body or body_file" in both["message"], both
        closed = await session.call_tool("close", {})
        assert "resume() reopens them" in no_cli_words(closed), text(closed)

    run(env, body, tools="core,io,network,tabs")


def test_a_session_in_handoff_is_refused_at_once_on_mcp_as_on_the_cli_never_blocked(
    env: dict[str, str], demo: str
) -> None:
    """Issue 20 item 6 on the MCP road: while the agent's own handoff waits for a human, its
    other calls on the same server are refused ``browser_paused`` at once — the code the
    CLI gets for the same session — instead of queueing behind the handoff's exchange on
    one connection (old code: the server's one client took its exchanges in turn, so a
    call waited out the whole handoff)."""

    async def body(session: ClientSession) -> None:
        opened = await session.call_tool("open", {"url": f"{demo}/form.html"})
        assert not opened.is_error, text(opened)
        outcome: dict[str, CallToolResult] = {}

        async def hand_off() -> None:
            args = {"reason": "look at the form", "wait": 25}
            outcome["handoff"] = await session.call_tool("handoff", args)

        async with anyio.create_task_group() as tg:
            tg.start_soon(hand_off)
            await anyio.sleep(3)  # the handoff holds the browser now
            started = anyio.current_time()
            with anyio.fail_after(10):
                paused = await session.call_tool("get", {"what": "title"})
            took = anyio.current_time() - started
            cli = subprocess.run(
                [BAY, "get", "title", "--json"], env=env, capture_output=True, text=True
            )
            assert "handoff" not in outcome  # still waiting for its human
            tg.cancel_scope.cancel()
        refused = error(paused)
        assert refused["code"] == "browser_paused", refused
        assert took < 5, took
        assert json.loads(cli.stdout)["code"] == "browser_paused", cli.stdout
        assert "bay " not in refused["message"], refused

    run(env, body)
