"""browserbay.render: the one rendering ``bay``, the MCP server and the Python API's Answer
print. The footer used to name profile, provider, how it was chosen and the session under
every answer (~100 characters, 39 % of what an agent read on MiniWoB tasks); it now says only
what an agent could get wrong, in at most 40 characters, and nothing otherwise."""

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
    "among": 0,
    "changed": False,
}
WORK = {
    "id": "bp-3f9a1c02",
    "label": "work",
    "provider": "chromium",
    "tier": 1,
    "ephemeral": False,
    "attached": 2,
    "chosen": "default",
    "among": 1,
    "changed": False,
}


def test_nothing_to_get_wrong_is_no_footer_at_all() -> None:
    """The session's own browser, or its only attachment it has used before: nothing."""
    assert render.footer(EPHEMERAL) == ""
    assert render.footer(WORK) == ""
    assert render.footer(None) == ""
    assert render.footer({}) == ""


def test_two_or_more_attached_names_the_profile_acted_on() -> None:
    pinned = {**WORK, "chosen": "pinned", "among": 3}
    assert render.footer(pinned) == "profile: work (3 attached)"


def test_a_profile_that_just_changed_is_named() -> None:
    assert render.footer({**WORK, "changed": True}) == "profile: work (changed)"
    both = {**WORK, "changed": True, "among": 2}
    assert render.footer(both) == "profile: work (changed, 2 attached)"
    back = {**EPHEMERAL, "chosen": "pinned", "changed": True, "among": 2}
    assert render.footer(back) == "profile: ephemeral (changed, 2 attached)"


def test_the_footer_fits_in_40_characters_whatever_the_label() -> None:
    long = {**WORK, "label": "a-very-long-profile-label-" * 4, "changed": True, "among": 12}
    line = render.footer(long)
    assert len(line) == render.FOOTER_MAX == 40
    assert line.startswith("profile: a-very-")
    assert line.endswith("… (changed, 12 attached)")


def test_the_full_footer_names_everything_for_a_human() -> None:
    """``BAY_FOOTER=full``: the old line, unchanged."""
    assert render.full_footer(WORK, {"id": "agent-7", "origin": "env"}) == (
        "profile: work (bp-3f9a1c02) · chromium · default · 2 attached"
        " · session agent-7 (from BAY_SESSION)"
    )
    assert render.full_footer(EPHEMERAL, {"id": "a", "origin": "flag"}) == (
        "profile: ephemeral (ep-a) · chromium · own isolated browser · session a (from --session)"
    )


def test_each_origin_is_named_and_an_unknown_one_is_the_api() -> None:
    named = {
        origin: render.full_footer(None, {"id": "a", "origin": origin})
        for origin in ("env", "flag", "shell", "api", "ghost")
    }
    assert named == {
        "env": "session a (from BAY_SESSION)",
        "flag": "session a (from --session)",
        "shell": "session a (from your shell's session)",
        "api": "session a (from the API)",
        "ghost": "session a (from the API)",
    }


def test_plain_is_the_value_then_its_notice_and_hint_without_footer() -> None:
    frame = {
        "ok": True,
        "text": "Sign up",
        "notice": "restored 3 tab(s) kept when your browser stopped (profile work)",
        "data": {"hint": "the page may be checking for bots"},
        "profile": {**WORK, "changed": True},
        "session": {"id": "a", "origin": "env"},
    }
    assert render.plain(frame) == (
        "Sign up\nnotice: restored 3 tab(s) kept when your browser stopped (profile work)\n"
        "hint: the page may be checking for bots"
    )
    assert render.plain({"text": "done"}) == "done"
    assert render.plain({"text": "", "notice": "n"}) == "notice: n"
    assert render.plain({"text": "x"}, text="other") == "other"


def test_the_apis_answer_renders_the_same() -> None:
    row = {**WORK, "changed": True}
    frame = {
        "ok": True,
        "verb": "open",
        "text": "Sign up",
        "notice": "n",
        "session": {"id": "a", "origin": "api"},
        "profile": row,
    }
    answer = Answer.from_frame(frame)
    assert answer.footer == render.footer(row) == "profile: work (changed)"
    assert answer.full_footer == render.full_footer(row, frame["session"])
    assert answer.plain == "Sign up\nnotice: n"
    assert answer.profile is not None
    assert answer.profile.changed
    assert answer.profile.among == 1
    bare = Answer.from_frame({"ok": True, "verb": "verbs", "session": frame["session"]})
    assert bare.footer == ""
    assert bare.full_footer == "session a (from the API)"


def test_a_refusal_reads_code_message_and_way_out() -> None:
    frame = {"ok": False, "code": "ref_stale", "message": "gone", "way_out": "bay snapshot -i"}
    assert render.refusal(frame) == "refused [ref_stale]: gone\nway out: bay snapshot -i"
    assert render.refusal(frame, indent="  ") == (
        "refused [ref_stale]: gone\n  way out: bay snapshot -i"
    )
    assert render.refusal({**frame, "way_out": ""}) == "refused [ref_stale]: gone"


def test_the_footer_says_where_a_forwarded_verb_ran() -> None:
    """A verb forwarded over the fleet link: the footer always says the browser's host."""
    ran = {"id": "bp-1", "label": "work", "among": 1, "changed": False, "host": "host-a"}
    assert render.footer(ran) == "profile: work · on host-a"
    assert render.footer({**ran, "changed": True}) == "profile: work (changed) · on host-a"
    assert render.footer({**ran, "host": None}) == ""
    assert " · on host-a · session s1" in render.full_footer(ran, {"id": "s1", "origin": "env"})
