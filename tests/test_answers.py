"""What an answer costs: the footer says only what the agent could get wrong — the profile,
when two or more are attached to the session or it just changed — and nothing otherwise;
notices stay in full; ``--json`` keeps every field; ``BAY_FOOTER=full`` prints the whole
line for a human. Real Chromium, real keeper, the real CLI."""

from __future__ import annotations

from browserbay import render
from browserbay_testing import Bay, assert_refused


def test_an_agent_on_its_own_browser_reads_no_footer(fresh_bay: Bay, demo: str) -> None:
    """The old footer (~100 characters) was under every one of these answers."""
    for args in (("open", f"{demo}/form.html"), ("snapshot", "-i"), ("get", "title")):
        r = fresh_bay(*args, session="lone", json_=False)
        assert r.code == 0, r
        assert r.stdout
        assert r.stderr == "", args
    r = fresh_bay("get", "title", session="lone", json_=False, env={"BAY_FOOTER": "full"})
    assert r.stderr == (
        "profile: ephemeral (ep-lone) · chromium · own isolated browser"
        " · session lone (from BAY_SESSION)\n"
    )
    frame = fresh_bay("get", "title", session="lone").frame
    assert frame["session"] == {"id": "lone", "origin": "env"}
    assert frame["profile"] == {
        "id": "ep-lone",
        "label": "ephemeral",
        "provider": "chromium",
        "tier": 1,
        "ephemeral": True,
        "attached": 1,
        "chosen": "ephemeral",
        "among": 0,
        "changed": False,
    }


def test_the_footer_names_the_profile_when_two_are_attached_or_it_changed(
    fresh_bay: Bay, demo: str
) -> None:
    def footer(*args: str) -> str:
        r = fresh_bay(*args, session="w", json_=False)
        assert r.code == 0, r
        lines = [line for line in r.stderr.splitlines() if not line.startswith("notice: ")]
        assert all(len(line) <= render.FOOTER_MAX for line in lines), lines
        return "\n".join(lines)

    fresh_bay.ok("new", "work")
    fresh_bay.ok("new", "two")
    assert footer("use", "work") == "profile: work (changed)"
    assert footer("open", f"{demo}/form.html") == ""  # the same profile: nothing to say
    assert footer("get", "url") == ""
    fresh_bay.ok("use", "two", session="w")
    assert_refused(fresh_bay("get", "url", session="w"), "profile_required")
    fresh_bay.ok("pin", "two", session="w")
    assert footer("open", f"{demo}/") == "profile: two (2 attached)"
    assert footer("get", "url", "--profile", "work") == "profile: work (changed, 2 attached)"
    assert footer("get", "url") == "profile: two (changed, 2 attached)"
    frame = fresh_bay("get", "url", session="w").frame
    assert frame["profile"]["label"] == "two"
    assert frame["profile"]["chosen"] == "pinned"
    assert frame["profile"]["among"] == 2
    assert frame["profile"]["changed"] is False
    assert set(frame["profile"]) >= {"id", "provider", "tier", "ephemeral", "attached"}


def test_a_notice_is_said_in_full_with_or_without_a_footer(fresh_bay: Bay, demo: str) -> None:
    fresh_bay.ok("new", "work", session="k")
    fresh_bay.ok("use", "work", session="k")
    fresh_bay.ok("open", f"{demo}/form.html", session="k")
    fresh_bay.ok("close", session="k")
    r = fresh_bay("get", "url", session="k", json_=False)
    assert r.code == 0, r
    notices = [line for line in r.stderr.splitlines() if line.startswith("notice: ")]
    assert notices, r.stderr
    assert "bay resume" in notices[0]
