"""The hostile campaign's catalogue (campaigns/attacks.py) is data: the same seed generates the
same attacks, every family is there, and the runner imports. The attacks themselves are not
run here (each has its own regression test; `campaigns/run.sh hostile` runs them all)."""

from __future__ import annotations

import os
from pathlib import Path

from campaigns.attacks import DEFAULT_SAMPLE, FAMILIES, catalogue, fill


def test_the_catalogue_is_generated_deterministically_from_its_seed() -> None:
    first = catalogue(7, DEFAULT_SAMPLE)
    assert first == catalogue(7, DEFAULT_SAMPLE), "the same seed, the same attacks in order"
    assert first != catalogue(8, DEFAULT_SAMPLE), "another seed samples other variants"
    assert {a.family for a in first} == set(FAMILIES)
    for family, n in DEFAULT_SAMPLE.items():
        assert sum(a.family == family for a in first) == n
    whole = catalogue(7)
    assert len(whole) > 2000
    assert len({a.key() for a in whole}) == len(whole), "every variant is named once"


def test_placeholders_are_filled_through_lists_and_dicts() -> None:
    got = fill({"u": ["{site}/t/{aid}", 3]}, {"site": "http://127.0.0.1:1", "aid": "a1"})
    assert got == {"u": ["http://127.0.0.1:1/t/a1", 3]}


def test_the_runner_imports() -> None:
    import campaigns.hostile

    assert campaigns.hostile.ORDER


def test_the_owner_channel_counts_the_owners_own_powers_as_cooperative_not_as_leaks() -> None:
    from campaigns.attacks import Attack, boundary_variants, cooperative_on_owner
    from campaigns.hostile import summarize

    rows = boundary_variants()
    assert rows
    assert all(cooperative_on_owner(a) for a in rows)
    assert cooperative_on_owner(Attack("environ", "bay-chrome-allow-open-port"))
    assert not cooperative_on_owner(Attack("schemes", "open/file/as-is"))

    def row(channel: str, family: str, leaked: bool, cooperative: bool) -> dict[str, object]:
        return {
            "family": family,
            "name": "x",
            "channel": channel,
            "code": "answered",
            "leaked": leaked,
            "cooperative": cooperative,
        }

    s = summarize(
        {
            "channels": ["owner", "session"],
            "results": [
                row("owner", "boundary", False, True),
                row("owner", "schemes", True, False),
                row("session", "boundary", True, False),
                row("session", "boundary", False, False),
            ],
        }
    )
    assert (s["owner"]["cooperative"], s["owner"]["leaked"], s["owner"]["refused"]) == (1, 1, 0)
    assert (s["session"]["cooperative"], s["session"]["leaked"], s["session"]["refused"]) == (
        0,
        1,
        1,
    )


def test_an_agent_on_a_session_socket_gets_only_bay_socket(tmp_path: Path) -> None:
    from campaigns.agents import Agent
    from campaigns.common import Home

    saved = dict(os.environ)
    os.environ["BAY_SESSION"] = "someone-else"
    h = Home("cat-test")  # it sets BAY_HOME in the environment: restored below
    try:
        env = Agent(h, "a1", tmp_path / "a1.sock").env()
        assert env["BAY_SOCKET"] == str(tmp_path / "a1.sock")
        assert not [k for k in env if k.startswith("BAY_") and k != "BAY_SOCKET"], env
        assert env["HOME"].startswith(str(h.root)), "a keeper it started would be found there"
        os.environ["BAY_HOME"] = "/tmp/another-home"  # what a second Home would have set
        owner = Agent(h, "a1").env()
        assert owner["BAY_HOME"] == str(h.root)
        assert owner["BAY_SESSION"] == "a1"
    finally:
        h.remove()
        os.environ.clear()
        os.environ.update(saved)
