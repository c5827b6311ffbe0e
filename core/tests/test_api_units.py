"""The Python API without a keeper: exception classes generated from the refusal table,
typed answers built from frames, and the package's lazy exports."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from typing import Any

import pytest

import browserbay
from browserbay import _answers, api, errors
from browserbay._connection import SyncConnection
from browserbay.refusals import CODES, Refusal
from browserbay.verbs import BY_NAME


@pytest.mark.parametrize("code", sorted(CODES))
def test_every_refusal_code_has_its_exception_class(code: str) -> None:
    cls = errors.BY_CODE[code]
    assert cls.__name__ == errors.class_name(code)
    assert getattr(errors, cls.__name__) is cls
    assert getattr(browserbay, cls.__name__) is cls
    assert issubclass(cls, errors.BayRefusal)
    assert cls.__module__ == "browserbay.errors"
    raised = errors.BayRefusal.from_frame(Refusal(code, way_out="do this").frame())
    assert type(raised) is cls
    assert (raised.code, raised.way_out) == (code, "do this")


def test_class_names_and_builtin_bases() -> None:
    assert errors.class_name("ref_stale") == "RefStale"
    assert errors.class_name("tab_gone") == "TabGone"
    assert issubclass(errors.BY_CODE["deadline"], TimeoutError)
    assert issubclass(errors.BY_CODE["keeper_unavailable"], ConnectionError)
    assert not issubclass(errors.BY_CODE["ref_stale"], TimeoutError)


def test_a_refusal_frame_becomes_an_exception_with_code_message_way_out_data() -> None:
    frame = Refusal("ref_stale", ref="@e9").frame()
    exc = errors.BayRefusal.from_frame(frame)
    assert isinstance(exc, errors.BY_CODE["ref_stale"])
    assert exc.code == "ref_stale"
    assert exc.message == frame["message"]
    assert exc.way_out == frame["way_out"]
    assert exc.data == {"ref": "@e9"}
    assert exc.frame() == frame
    assert "way out: bay snapshot" in str(exc)
    # A code from a newer keeper: the base class, with the code it said.
    future = errors.BayRefusal.from_frame({"ok": False, "code": "from_the_future", "message": "m"})
    assert type(future) is errors.BayRefusal
    assert future.code == "from_the_future"


def test_answers_are_built_from_frames() -> None:
    frame = {
        "ok": True,
        "verb": "open",
        "session": {"id": "s", "origin": "api"},
        "profile": {
            "id": "ep-s",
            "label": "ephemeral",
            "provider": "chromium",
            "tier": 1,
            "ephemeral": True,
            "attached": 1,
            "chosen": "ephemeral",
        },
        "data": {"url": "http://x/", "title": "X", "tab": "t1", "status": 200},
        "text": "X\nhttp://x/",
        "notice": "hello",
    }
    page = _answers.answer(frame, api.Page)
    assert (page.url, page.title, page.tab, page.status, page.hint) == (
        "http://x/",
        "X",
        "t1",
        200,
        None,
    )
    assert page.session == api.SessionInfo("s", "api")
    assert page.profile is not None
    assert page.profile.label == "ephemeral"
    assert page.profile.row["chosen"] == "ephemeral"  # fields newer than the client are kept
    assert page.notice == "hello"
    assert page["title"] == "X"
    keeper = _answers.answer(
        {"ok": True, "verb": "plugins", "profile": None, "data": {}}, api.Answer
    )
    assert keeper.profile is None
    with pytest.raises(errors.BY_CODE["tab_gone"]):
        _answers.answer(Refusal("tab_gone", tab="t9", reason="closed").frame(), api.Answer)


def test_status_tabs_come_from_the_lease_it_acted_on() -> None:
    tab = {"id": "t2", "url": "u", "title": "T", "current": True, "opener": None}
    frame = {
        "ok": True,
        "verb": "status",
        "session": {"id": "s", "origin": "api"},
        "profile": {"id": "bp-1", "label": "work", "provider": "chromium", "tier": 1},
        "data": {
            "browser": "bb-1",
            "leases": [
                {"profile": {"id": "ep-s"}, "tabs": [dict(tab, id="t1")]},
                {"profile": {"id": "bp-1"}, "tabs": [tab]},
            ],
        },
    }
    status = _answers.answer(frame, api.Status)
    assert [t.id for t in status.tabs] == ["t2"]
    assert status.current == api.Tab("t2", "u", "T", True, None)
    assert status.browser == "bb-1"


def test_the_session_is_the_argument_else_bay_session_with_origin_api(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BAY_SESSION", "from-env")
    assert api.api_session("given") == {"id": "given", "origin": "api"}
    assert api.api_session() == {"id": "from-env", "origin": "api"}
    monkeypatch.delenv("BAY_SESSION")
    assert api.api_session()["id"].startswith("shell-")


def test_frames_leave_out_unset_options_and_check_the_timeout() -> None:
    c = api.SyncClient("s", home="/tmp/unused", profile="work")
    frame = c._frame("snapshot", {"interactive": False, "depth": None}, None)
    assert frame["args"] == {}
    assert frame["profile"] == "work"
    assert frame["session"] == {"id": "s", "origin": "api"}
    assert c._frame("wait", {"what": "5", "load": True}, 2.5)["timeout"] == 2.5
    with pytest.raises(errors.BY_CODE["usage"]):
        c._frame("wait", {}, 0)


#: The async client's names that have another name in the blocking one.
TWINS = {
    "Client": "SyncClient",
    "__aenter__": "__enter__",
    "__aexit__": "__exit__",
    "aclose": "disconnect",
}


def _blocking(text: str) -> str:
    """What the async client's signature or docstring says, in the blocking client's words."""
    for a, b in TWINS.items():
        text = text.replace(a, b)
    return text.replace("await ", "").replace("async with", "with")


def test_the_blocking_client_has_the_async_clients_methods_signatures_and_docstrings() -> None:
    public = {n for n in vars(api.Client) if not n.startswith("_") or n in TWINS}
    assert {"open", "snapshot", "screenshot", "call", "keeper_status", "aclose"} <= public
    for name in public | {"__init__"}:
        mine, twin = vars(api.Client)[name], vars(api.SyncClient)[TWINS.get(name, name)]
        assert _blocking(inspect.getdoc(mine) or "") == (inspect.getdoc(twin) or ""), name
        if isinstance(mine, property):
            assert isinstance(twin, property), name
            continue
        assert inspect.iscoroutinefunction(mine) != inspect.iscoroutinefunction(twin) or (
            name == "__init__"
        ), name
        assert _blocking(str(inspect.signature(mine))) == str(inspect.signature(twin)), name
    methods = {n for n in vars(api.SyncClient) if not n.startswith("_")}
    assert methods == {TWINS.get(n, n) for n in public if not n.startswith("_")}
    assert api.SyncClient.__doc__ == _blocking(api.Client.__doc__ or "")


def test_a_file_of_the_caller_is_sent_absolute_for_every_verb_the_table_marks() -> None:
    c = api.SyncClient("s", home="/tmp/unused")
    shot = c._frame("screenshot", {"path": "shot.png", "full": False}, None)
    assert shot["args"] == {"path": os.path.join(os.getcwd(), "shot.png")}
    assert c._frame("screenshot", {"path": None}, None)["args"] == {}
    assert c._frame("open", {"url": "shot.png"}, None)["args"] == {"url": "shot.png"}


#: One call of each typed verb method.
CALLS: dict[str, tuple[object, ...]] = {
    **dict.fromkeys(
        ("click", "dblclick", "check", "uncheck", "hover", "focus", "scroll_into_view"), ("@e1",)
    ),
    **dict.fromkeys(("keyboard_type", "insert_text"), ("hi",)),
    **dict.fromkeys(("keydown", "keyup"), ("Shift",)),
    **dict.fromkeys(("mouse_down", "mouse_up"), ("right",)),
    "mouse_move": (10, 20.5),
    "mouse_wheel": (300,),
    "drag": ("@e1", "@e2"),
    **dict.fromkeys(("fill", "type"), ("@e1", "Ada")),
    **dict.fromkeys(("snapshot", "scroll", "wait", "back", "forward", "reload"), ()),
    **dict.fromkeys(("tabs", "close", "status", "plugins", "verbs", "keeper_status"), ()),
    **dict.fromkeys(("console", "errors", "requests", "unroute", "har_start", "har_stop"), ()),
    "route": ("**/api/*",),
    "open": ("https://example.org",),
    "press": ("Enter",),
    "select": ("@e1", "a", "b"),
    "get": ("attr", "@e1", "href"),
    "is_": ("visible", "@e1"),
    "find": ("role", "button", "click"),
    "frame": ("@e4",),
    "eval": ("1 + 1",),
    "screenshot": ("shot.png",),
    "upload": ("@e1", "cv.pdf", "photo.png"),
    "download": ("@e1", "report.csv"),
    "downloads": ("get", "report.csv", "mine.csv"),
    "new_tab": ("https://example.org",),
    "close_tab": ("t2",),
    "switch_tab": ("t2",),
    **dict.fromkeys(("cookies", "clear_cookies"), ()),
    "set_cookie": ("sid", "v"),
    **dict.fromkeys(("storage", "clear_storage"), ("local",)),
    "set_storage": ("local", "k", "v"),
    **dict.fromkeys(("save_state", "load_state"), ("state.json",)),
    "new_profile": ("work",),
    "dialog_accept": ("Ada",),
    **dict.fromkeys(("dialog_dismiss", "dialog_status"), ()),
    "pdf": ("page.pdf",),
    "record_start": ("run.webm",),
    "record_stop": (),
    "emulate": ("viewport", 800, 600),
}


def test_the_typed_methods_send_verbs_and_arguments_of_the_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sent: list[dict[str, Any]] = []

    def exchange(self: SyncConnection, frame: dict[str, Any]) -> dict[str, Any]:
        sent.append(frame)
        return {"ok": True, "verb": frame["verb"], "data": {}}

    monkeypatch.setattr(SyncConnection, "exchange", exchange)
    c = api.SyncClient("s", home="/tmp/unused")
    untyped = {"connect", "disconnect", "call", "paths", "autostart", "keeper", "session", "socket"}
    assert set(CALLS) == {n for n in vars(api.SyncClient) if not n.startswith("_")} - untyped
    for name, args in CALLS.items():
        getattr(c, name)(*args)
        frame = sent.pop()
        row = BY_NAME[frame["verb"]]
        for arg, value in frame["args"].items():
            spec = row.arg(arg)
            assert not spec.choices or value in spec.choices, (name, arg)


LAZY = """
import sys
import browserbay
assert "browserbay.api" not in sys.modules
assert "browserbay.errors" not in sys.modules
from browserbay import protocol  # a submodule is never mistaken for a lazy name
assert "browserbay.api" not in sys.modules
try:
    browserbay.nope
except AttributeError:
    pass
else:
    raise SystemExit("no AttributeError")
assert browserbay.Client.__module__ == "browserbay.api"
assert browserbay.RefStale.__name__ == "RefStale"
print("ok")
"""


def test_the_package_exports_the_api_lazily() -> None:
    out = subprocess.run([sys.executable, "-c", LAZY], capture_output=True, text=True, check=True)
    assert out.stdout == "ok\n", out.stderr
    assert browserbay.SyncClient is api.SyncClient
    assert browserbay.BayRefusal is errors.BayRefusal
    with pytest.raises(AttributeError):
        _ = browserbay.NotAThing
