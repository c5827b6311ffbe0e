"""browserbay.render: the one footer. The CLI's and the MCP server's copies disagreed; these
pin the one rendering both (and the Python API's Answer.footer) now print."""

from __future__ import annotations

from browserbay import render
from browserbay.api import Answer

EPHEMERAL = {
    "id": "ep-a",
    "label": "ephemeral",
    "provider": "chromium",
    "tier": 1,
    "ephemeral": True,
    "attached": 1,
    "chosen": "ephemeral",
}
WORK = {
    "id": "bp-3f9a1c02",
    "label": "work",
    "provider": "chromium",
    "tier": 1,
    "ephemeral": False,
    "attached": 2,
    "chosen": "default",
}


def test_a_persistent_profile_says_how_it_was_chosen_and_how_many_share_it() -> None:
    """The MCP copy left out how it was chosen (``default``)."""
    assert render.footer(WORK, {"id": "agent-7", "origin": "env"}) == (
        "profile: work (bp-3f9a1c02) · chromium · default · 2 attached"
        " · session agent-7 (from BAY_SESSION)"
    )


def test_an_ephemeral_profile_is_the_sessions_own_browser() -> None:
    assert render.footer(EPHEMERAL, {"id": "a", "origin": "flag"}) == (
        "profile: ephemeral (ep-a) · chromium · own isolated browser · session a (from --session)"
    )


def test_each_origin_is_named_and_an_unknown_one_is_the_api() -> None:
    """The MCP copy said ``a shell`` for the shell, and an unknown origin raw."""
    named = {
        origin: render.footer(None, {"id": "a", "origin": origin})
        for origin in ("env", "flag", "shell", "api", "ghost")
    }
    assert named == {
        "env": "session a (from BAY_SESSION)",
        "flag": "session a (from --session)",
        "shell": "session a (from your shell's session)",
        "api": "session a (from the API)",
        "ghost": "session a (from the API)",
    }


def test_no_profile_is_the_session_part_alone() -> None:
    """The MCP copy said ``profile: none (the keeper's own verb)``, also for ``close``,
    which is the session's verb."""
    assert render.footer(None, {"id": "a", "origin": "api"}) == "session a (from the API)"
    assert render.footer({}, {"id": "a", "origin": "api"}) == "session a (from the API)"


def test_the_apis_answer_renders_the_same_footer() -> None:
    frame = {"ok": True, "verb": "open", "session": {"id": "a", "origin": "api"}, "profile": WORK}
    assert Answer.from_frame(frame).footer == render.footer(WORK, frame["session"])
    bare = Answer.from_frame({"ok": True, "verb": "verbs", "session": frame["session"]})
    assert bare.footer == "session a (from the API)"


def test_a_refusal_reads_code_message_and_way_out() -> None:
    frame = {"ok": False, "code": "ref_stale", "message": "gone", "way_out": "bay snapshot -i"}
    assert render.refusal(frame) == "refused [ref_stale]: gone\nway out: bay snapshot -i"
    assert render.refusal(frame, indent="  ") == (
        "refused [ref_stale]: gone\n  way out: bay snapshot -i"
    )
    assert render.refusal({**frame, "way_out": ""}) == "refused [ref_stale]: gone"
