"""The local-window provider's parts that need no display: its row, the verb's arguments,
key chords, the tree's text and census, the browser's argv, settings, and a walker that
stops answering (it is ended, never waited on)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio
import pytest

from browserbay.plugins import load_plugins
from browserbay.refusals import Refusal
from browserbay.testing import check_row
from browserbay.urls import normalize_url
from browserbay_cli.parse import parse, usage_line
from browserbay_local_window import chromium, plugin, procs
from browserbay_local_window.settings import Settings
from browserbay_local_window.tree import render_tree
from browserbay_local_window.walkerclient import WalkerClient, WalkerError
from browserbay_local_window.windows import pick_action
from browserbay_local_window.x11 import KeyNameError, char_keysym, parse_chord
from browserbay_testing import assert_refused


def test_the_provider_row_is_tier_3_without_cdp() -> None:
    (row,) = plugin.LocalWindowPlugin().bay_providers()
    check_row(row)
    assert row.id == "local-window"
    assert row.tier == 3
    caps = row.capabilities
    assert (caps.has_cdp, caps.lease_kind, caps.ephemeral_contexts) == (False, "window", False)
    assert row.probe is not None
    assert row.probe() is None  # setup.sh installs what it needs


def test_its_driver_refuses_a_page_by_capability() -> None:
    (row,) = plugin.LocalWindowPlugin().bay_providers()
    assert row.driver_factory is not None
    with pytest.raises(Refusal) as info:
        anyio.run(row.driver_factory().launch, None, None)
    assert_refused(info.value, "capability_missing")


def test_the_window_verb_comes_from_the_plugin_with_a_tail_after_dashdash() -> None:
    table = load_plugins({}).verb_table()
    window = table["window"]
    assert window.plugin == "local-window"
    assert "[-- command...]" in usage_line(window)
    _, args, options = parse(["window", "open", "--json", "--", "app", "--json", "-x"], table)
    assert args == {"action": "open", "command": ["app", "--json", "-x"]}
    assert options == {"json": True}
    _, args, _ = parse(["window", "type", "w1", "@e4", "-"], table)
    assert args == {"action": "type", "handle": "w1", "target": "@e4", "text": "-"}
    _, args, _ = parse(["window", "list"], table)
    assert args == {"action": "list"}
    assert window.secret_args == ("text",)


def test_key_chords() -> None:
    from Xlib import XK

    def sym(name: str) -> int:
        return int(XK.string_to_keysym(name))

    assert parse_chord("ctrl+s") == [sym("Control_L"), sym("s")]
    assert parse_chord("ctrl+S") == [sym("Control_L"), sym("s")]
    assert parse_chord("shift+Tab") == [sym("Shift_L"), sym("Tab")]
    assert parse_chord("Return") == parse_chord("enter") == [sym("Return")]
    assert parse_chord("alt+F4") == [sym("Alt_L"), sym("F4")]
    assert parse_chord("ctrl++") == [sym("Control_L"), sym("plus")]
    for bad in ("", "hyper+x", "ctrl+nosuchkey"):
        with pytest.raises(KeyNameError):
            parse_chord(bad)
    assert char_keysym("a") == ord("a")
    assert char_keysym("é") == 0xE9
    assert char_keysym("€") == 0x01000000 | 0x20AC
    assert char_keysym("\n") == sym("Return")


def _node(d: int, role: str, name: str = "", **kw: object) -> dict[str, object]:
    row: dict[str, object] = {
        "d": d,
        "bus": ":1.1",
        "path": f"/p/{role}/{name}",
        "role": role,
        "name": name,
        "states": ["enabled", "showing"],
        "ifaces": [],
        "actions": [],
        "bounds": None,
        "value": None,
        "more": 0,
        "unreadable": None,
    }
    row.update(kw)
    return row


def test_the_tree_text_refs_boxes_and_census() -> None:
    nodes = [
        _node(0, "application", "app"),
        _node(1, "frame", "Main", bounds=[100, 50, 400, 200]),
        _node(2, "push button", "OK", actions=["click"], bounds=[110, 60, 80, 30]),
        _node(
            2, "text", "Name", ifaces=["EditableText", "Text"], value="Ada", actions=["activate"]
        ),
        _node(2, "label", "Hi", states=["enabled"]),
        _node(2, "panel", more=7),
        _node(1, "unreadable subtree", unreadable="the application did not answer"),
    ]
    refs, text, census = render_tree(nodes, (100, 50))
    assert refs["e3"] == {
        "bus": ":1.1",
        "path": "/p/push button/OK",
        "role": "push button",
        "name": "OK",
    }
    assert '    - push button "OK" @e3 actions=click box=10,10,80,30' in text
    assert 'value="Ada"' in text
    assert "(+7 children not walked: node budget)" in text
    assert "- unreadable subtree @e7: the application did not answer" in text
    assert census == {
        "nodes": 7,
        "action": 2,
        "editable_text": 1,
        "text": 1,
        "unreadable": 1,
        "truncated": True,
    }
    _, flat, _ = render_tree(nodes, (0, 0), interactive=True)
    assert flat.splitlines()[0].startswith('- push button "OK"')
    assert "label" not in flat  # no action, and not showing
    assert "unreadable subtree" in flat


def test_a_click_prefers_the_nodes_own_click_action() -> None:
    assert pick_action(["click"]) == 0
    assert pick_action(["showContextMenu", "jump"]) == 1
    assert pick_action(["doDefault", "showContextMenu"]) == 0
    assert pick_action(["expand or contract", "activate"]) == 1
    assert pick_action(["showContextMenu"]) == 0
    assert pick_action([]) is None


def test_the_browser_argv_has_accessibility_and_no_automation(tmp_path: Path) -> None:
    argv = chromium.argv("/usr/lib/chromium/chromium", tmp_path, "https://example.org/", (800, 600))
    assert "--force-renderer-accessibility" in argv
    assert argv[-1] == "https://example.org/"
    assert not [a for a in argv if a.startswith(chromium.FORBIDDEN)]
    assert chromium.env({"DISPLAY": ":9"}) == {"DISPLAY": ":9", "ACCESSIBILITY_ENABLED": "1"}
    assert normalize_url("localhost:8000/x") == "http://localhost:8000/x"
    assert normalize_url("example.org") == "https://example.org"
    for bad in ("file:///etc/passwd", "javascript:alert(1)", "chrome://settings"):
        with pytest.raises(Refusal) as info:
            normalize_url(bad)
        assert_refused(info.value, "local_scheme_refused")


def test_settings_from_the_environment() -> None:
    s = Settings.from_env({})
    assert (s.xvfb, s.python, s.xtest, s.desktop) == ("Xvfb", "/usr/bin/python3", True, False)
    s = Settings.from_env(
        {
            "BAY_WINDOW_XTEST": "0",
            "BAY_WINDOW_DESKTOP": "yes",
            "BAY_WINDOW_SCREEN": "800x600x16",
            "BAY_WINDOW_CALL_MS": "50",
        }
    )
    assert (s.xtest, s.desktop, s.screen, s.call_ms) == (False, True, "800x600x16", 100)
    assert Settings.from_env({"BAY_WINDOW_SCREEN": "huge"}).screen == "1280x800x24"
    assert Settings.from_env({"BAY_WINDOW_CALL_MS": "soon"}).call_ms == 1000


def test_a_walker_that_stops_answering_is_ended_not_waited_on(tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text('#!/bin/sh\necho \'{"ok": true, "ready": true}\'\nexec sleep 600\n')
    fake.chmod(0o755)

    async def go() -> tuple[float, int | None, int]:
        client = WalkerClient(str(fake), {"PATH": os.environ["PATH"]}, tmp_path / "w.log")
        started = time.monotonic()
        with pytest.raises(WalkerError) as info:
            await client.call("snapshot", 0.5, pids=[1])
        assert info.value.kind == "timeout"
        elapsed = time.monotonic() - started
        assert client.proc is None  # ended
        # The next request starts a fresh walker (which stops answering again).
        with pytest.raises(WalkerError):
            await client.call("hello", 0.5)
        pid = next(iter(procs.LIVE), None)
        await client.close()
        return elapsed, pid, len(procs.LIVE)

    elapsed, _pid, live = anyio.run(go)
    assert elapsed < 2.0
    assert live == 0


def test_a_walker_python_that_is_missing_is_unavailable(tmp_path: Path) -> None:
    async def go() -> WalkerError:
        client = WalkerClient(str(tmp_path / "nope"), {}, tmp_path / "w.log")
        with pytest.raises(WalkerError) as info:
            await client.call("hello", 2.0)
        return info.value

    err = anyio.run(go)
    assert err.kind == "unavailable"
    assert "is not there" in err.reason


def test_the_xauthority_file_is_the_binary_format_with_one_cookie(tmp_path: Path) -> None:
    import socket

    from browserbay_local_window import xauth

    cookie = xauth.new_cookie()
    assert len(cookie) == 16
    assert xauth.new_cookie() != cookie
    path = tmp_path / "Xauthority"
    xauth.write(path, cookie, ":7")
    assert path.stat().st_mode & 0o777 == 0o600
    entries = xauth.read(path)
    assert entries == [
        (xauth.FAMILY_LOCAL, socket.gethostname().encode(), b"7", b"MIT-MAGIC-COOKIE-1", cookie),
        (xauth.FAMILY_WILD, b"", b"7", b"MIT-MAGIC-COOKIE-1", cookie),
    ]
    # python-xlib's own reader finds it for a unix-socket display 7 (and not for display 8).
    from Xlib import error as xerror
    from Xlib import xauth as xlib_xauth

    found = xlib_xauth.Xauthority(str(path)).get_best_auth(
        xlib_xauth.FamilyLocal, socket.gethostname().encode(), 7
    )
    assert found == (b"MIT-MAGIC-COOKIE-1", cookie)
    with pytest.raises(xerror.XNoAuthError):
        xlib_xauth.Xauthority(str(path)).get_best_auth(
            xlib_xauth.FamilyLocal, socket.gethostname().encode(), 8
        )


def test_live_page_keys_map_to_x_keysyms() -> None:
    from Xlib import XK

    from browserbay_local_window.live import keysym_for

    assert keysym_for("Enter") == XK.string_to_keysym("Return")
    assert keysym_for("ArrowLeft") == XK.string_to_keysym("Left")
    assert keysym_for("Shift") == XK.string_to_keysym("Shift_L")
    assert keysym_for("F5") == XK.string_to_keysym("F5")
    assert keysym_for("a") == ord("a")
    assert keysym_for("G") == ord("G")
    assert keysym_for("é") == 0xE9
    assert keysym_for("✓") == 0x01000000 | ord("✓")
    assert keysym_for("Unidentified") is None
