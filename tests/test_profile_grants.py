"""Profiles belong to someone: on a session socket a session uses only the profiles its grant
names, the profiles its own group made, and its own ephemeral browser; every other road to a
profile (its label, id or alias, a pin or an attachment made on the owner's channel, a tab of
it, a group default, the instance default, `bay backend --profile`, `bay profiles`) is
refused `profile_not_granted` or passes it over. Real keeper, real session sockets, real
Chromium, the real CLI; the agent's client has only its socket (BAY_SOCKET, no BAY_HOME, no
BAY_SESSION)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from browserbay_testing import Bay, assert_refused
from browserbay_testing.bay import BAY, Result


class Agent:
    """An agent whose client has only its session socket: the owner's environment without
    BAY_HOME or BAY_SESSION, and BAY_SOCKET."""

    def __init__(self, owner: Bay, socket: Path, **env: str) -> None:
        self.socket = socket
        self.env = {k: v for k, v in owner.env.items() if k not in ("BAY_HOME", "BAY_SESSION")}
        self.env.update(BAY_SOCKET=str(socket), **env)

    def __call__(self, *args: str, timeout: float = 90) -> Result:
        p = subprocess.run(
            [BAY, *args, "--json"],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        return Result(p.returncode, p.stdout, p.stderr)

    def ok(self, *args: str) -> Any:
        r = self(*args)
        assert r.code == 0, (args, r)
        return r.data


def grant(owner: Bay, session: str, *profiles: str, **env: str) -> Agent:
    """The owner's `bay session grant <session> --socket <path> [--profile P]...`, and the
    agent that has that socket."""
    where = owner.home / "agents" / session
    where.mkdir(parents=True, exist_ok=True)
    os.chmod(where, 0o700)
    socket = where / "bay.sock"
    argv = ["session", "grant", session, "--socket", str(socket)]
    for p in profiles:
        argv += ["--profile", p]
    owner.ok(*argv, session=None)
    return Agent(owner, socket, **env)


def not_granted(result: Result, handle: str, *hidden: str) -> dict[str, Any]:
    """Refused `profile_not_granted` naming ``handle``, with the owner's exact command, and
    saying nothing of ``hidden`` (what the handle does not already say)."""
    frame = assert_refused(result, "profile_not_granted")
    assert handle in frame["message"], frame
    assert f"--profile {handle}" in frame["way_out"], frame
    assert "bay session grant " in frame["way_out"], frame
    text = json.dumps(frame)
    for secret in hidden:
        assert secret not in text, (secret, frame)
    return frame


def logged_in(b: Bay, demo: str, label: str) -> dict[str, Any]:
    """The owner's profile ``label``, logged in (the demo's cookie) on the owner's channel."""
    row: dict[str, Any] = b.ok("new", label, session="own")
    b.ok("use", label, session=f"own-{label}")
    b.ok("open", "--profile", label, f"{demo}/cookie?set=secret-{label}", session=f"own-{label}")
    return row


def seen(agent: Agent, demo: str) -> tuple[dict[str, Any], str]:
    """The agent opens the demo's cookie page (a bare verb): the profile it acted on, and
    the cookie it sent."""
    opened = agent("open", f"{demo}/cookie")
    assert opened.code == 0, opened
    value = agent.ok("get", "text", "#seen")["value"]
    return opened.frame, value


@pytest.fixture(scope="module")
def owner(bay: Bay, demo: str) -> tuple[Bay, dict[str, Any]]:
    """The module's keeper with the owner's logged-in profile `work`."""
    return bay, logged_in(bay, demo, "work")


def test_a_session_socket_without_a_grant_cannot_name_the_owners_profile(
    owner: tuple[Bay, dict[str, Any]], demo: str
) -> None:
    b, work = owner
    agent = grant(b, "nogrant-1")
    for handle in ("work", work["id"]):
        hidden = () if handle == work["id"] else (work["id"],)
        not_granted(agent("open", "--profile", handle, f"{demo}/cookie"), handle, *hidden)
        not_granted(agent("use", handle), handle, *hidden)
        not_granted(agent("use", handle, "--exclusive"), handle, *hidden)
        not_granted(agent("snapshot", "--profile", handle), handle, *hidden)
        not_granted(agent("status", "--profile", handle), handle, *hidden)
        not_granted(agent("close", "--profile", handle), handle, *hidden)
        not_granted(agent("backend", "--profile", handle), handle, *hidden)
        not_granted(agent("backend", "chromium", "--profile", handle), handle, *hidden)
    # A handle that names no profile reads the same: no oracle for which profiles exist.
    not_granted(agent("use", "no-such-profile"), "no-such-profile")
    # `bay profiles` shows it nothing of the owner's.
    listed = agent.ok("profiles")["profiles"]
    assert work["id"] not in json.dumps(listed)
    # Nothing of it was attached, and its own browser is what it works in.
    frame, cookie = seen(agent, demo)
    assert frame["profile"]["ephemeral"] is True
    assert "secret-work" not in cookie
    assert b.ok("status", session="nogrant-1")["attachments"] == []


def test_what_the_owner_set_up_for_the_session_is_out_of_its_sockets_reach(
    owner: tuple[Bay, dict[str, Any]], demo: str
) -> None:
    """An attachment, a pin and an open tab on the owner's profile, made for the session on
    the owner's channel before its socket was granted: the socket reaches none of them."""
    b, work = owner
    sid = "nogrant-2"
    b.ok("use", "work", "--alias", "w", session=sid)
    b.ok("pin", "w", session=sid)
    b.ok("open", f"{demo}/cookie?from=owner", session=sid)
    tab = b.ok("tab", "list", session=sid)["tabs"][0]["id"]
    agent = grant(b, sid)
    # The pin and the only attachment are passed over: a bare verb acts in its own browser,
    # and the answer says what was not used.
    opened = agent("open", f"{demo}/cookie")
    assert opened.code == 0, opened
    assert opened.frame["profile"]["ephemeral"] is True
    assert "not granted" in opened.frame.get("notice", ""), opened.frame
    assert "secret-work" not in agent.ok("get", "text", "#seen")["value"]
    # Naming it, by alias, label or id, is refused; so is its tab and pinning it again.
    for handle in ("w", "work", work["id"]):
        not_granted(agent("get", "url", "--profile", handle), handle)
        not_granted(agent("pin", handle), handle)
    not_granted(agent("tab", tab), work["id"])
    not_granted(agent("tab", "close", tab), work["id"])
    # `bay status` shows nothing of that lease (its tabs' URLs and titles are the profile's).
    leases = json.dumps(agent.ok("status")["leases"])
    assert f'"{tab}"' not in leases
    assert work["id"] not in leases
    assert "from=owner" not in leases
    # On the owner's channel the session's setup is as it was.
    assert b.ok("get", "text", "#seen", session=sid)["value"] == "demo=secret-work"


def test_a_group_default_is_not_a_road_to_the_owners_profile(
    owner: tuple[Bay, dict[str, Any]], demo: str
) -> None:
    """On a session socket the session's group is its own id (another group is refused
    session_fixed): the owner's default for that very group is passed over."""
    b, _work = owner
    sid = "nogrant-3"
    b.ok("group", "default", sid, "work", session="own")
    agent = grant(b, sid)
    frame, cookie = seen(agent, demo)
    assert frame["profile"]["ephemeral"] is True
    assert "secret-work" not in cookie
    # The same group on the owner's channel still defaults to it.
    opened = b("open", f"{demo}/cookie", session="owners-3", env={"BAY_GROUP": sid})
    assert opened.frame["profile"]["chosen"] == "group"


def test_the_instance_default_profile_is_not_a_road_to_it(demo: str, tmp_path: Path) -> None:
    b = Bay(Path(tmp_path), BAY_DEFAULT_PROFILE="home")
    try:
        home = logged_in(b, demo, "home")
        # The owner's sessions default to it ...
        assert b("open", f"{demo}/cookie", session="owners-4").frame["profile"]["id"] == home["id"]
        # ... an agent on a session socket does not.
        agent = grant(b, "nogrant-4")
        frame, cookie = seen(agent, demo)
        assert frame["profile"]["ephemeral"] is True
        assert "secret-home" not in cookie
    finally:
        b.stop()


def test_with_a_grant_the_session_socket_uses_the_owners_profile(
    owner: tuple[Bay, dict[str, Any]], demo: str
) -> None:
    b, work = owner
    agent = grant(b, "granted-1", "work")
    assert agent.ok("use", "work")["attachments"] == [f"work ({work['id']})"]
    frame, cookie = seen(agent, demo)
    assert frame["profile"]["id"] == work["id"]
    assert cookie == "demo=secret-work"
    listed = agent.ok("profiles")["profiles"]
    assert [p["id"] for p in listed] == [work["id"]]
    assert (listed[0]["owner"], listed[0]["sharing"]) == ("owner", "granted")
    assert listed[0]["sessions"] == ["granted-1"]  # never the other sessions on it
    agent.ok("close")


def test_a_profile_its_group_made_is_its_own_and_another_groups_is_not(
    owner: tuple[Bay, dict[str, Any]], demo: str
) -> None:
    b, _work = owner
    maker, other = grant(b, "maker-1"), grant(b, "other-1")
    mine = maker.ok("new", "mine")
    assert (mine["owner"], mine["sharing"]) == ("group:maker-1", "owner")
    maker.ok("use", "mine")
    maker.ok("open", f"{demo}/cookie?set=secret-mine")
    assert [p["id"] for p in maker.ok("profiles")["profiles"]] == [mine["id"]]
    for handle in ("mine", mine["id"]):
        not_granted(other("use", handle), handle)
        not_granted(other("open", "--profile", handle, f"{demo}/cookie"), handle)
    assert other.ok("profiles")["profiles"] == []
    # The owner sees whose it is; a profile of sharing `owner` cannot be granted to another.
    rows = {p["id"]: p for p in b.ok("profiles", session=None)["profiles"]}
    assert (rows[mine["id"]]["owner"], rows[mine["id"]]["sharing"]) == ("group:maker-1", "owner")
    where = b.home / "agents" / "other-2"
    where.mkdir(parents=True)
    os.chmod(where, 0o700)
    socket = str(where / "bay.sock")
    refused = b("session", "grant", "other-2", "--socket", socket, "--profile", mine["id"])
    assert_refused(refused, "grant_refused")
    # One the maker made `--sharing granted` the owner may grant to another session.
    shared = maker.ok("new", "shared", "--sharing", "granted")
    assert shared["sharing"] == "granted"
    maker.ok("use", "shared")
    maker.ok("open", "--profile", "shared", f"{demo}/cookie?set=secret-shared")
    maker.ok("close")
    other3 = grant(b, "other-3", "shared")
    other3.ok("use", "shared")
    frame, cookie = seen(other3, demo)
    assert frame["profile"]["id"] == shared["id"]
    assert cookie == "demo=secret-shared"
    other3.ok("close")


def test_its_own_ephemeral_browser_always_works(
    owner: tuple[Bay, dict[str, Any]], demo: str
) -> None:
    b, _work = owner
    agent = grant(b, "ephemeral-1")
    frame, _cookie = seen(agent, demo)
    assert frame["profile"]["id"] == "ep-ephemeral-1"
    assert agent("open", "--profile", "ephemeral", f"{demo}/cookie").code == 0
    agent.ok("use", "--ephemeral")
    agent.ok("pin", "ephemeral")
    assert agent("get", "title").frame["profile"]["chosen"] == "pinned"
    agent.ok("close")


def test_new_with_a_sharing_other_than_the_two_is_refused_and_makes_nothing(
    owner: tuple[Bay, dict[str, Any]],
) -> None:
    b, _work = owner
    before = [p["id"] for p in b.ok("profiles", session=None)["profiles"]]
    assert_refused(b("new", "odd", "--sharing", "public", session=None), "usage")
    assert [p["id"] for p in b.ok("profiles", session=None)["profiles"]] == before


def test_the_owners_profiles_say_whose_they_are_and_an_owner_only_one_is_never_granted(
    owner: tuple[Bay, dict[str, Any]],
) -> None:
    b, work = owner
    bank = b.ok("new", "bank", "--sharing", "owner", session=None)
    assert (bank["owner"], bank["sharing"]) == ("owner", "owner")
    text = b("profiles", session=None, json_=False).stdout
    assert "the owner's, sharing granted" in text
    assert "the owner's, sharing owner" in text
    rows = {p["id"]: p for p in b.ok("profiles", session=None)["profiles"]}
    assert (rows[work["id"]]["owner"], rows[work["id"]]["sharing"]) == ("owner", "granted")
    where = b.home / "agents" / "bank-1"
    where.mkdir(parents=True)
    os.chmod(where, 0o700)
    socket = str(where / "bay.sock")
    refused = b("session", "grant", "bank-1", "--socket", socket, "--profile", "bank")
    assert_refused(refused, "grant_refused")
    # On the owner's channel it works as any profile.
    assert b.ok("use", "bank", session="own-bank")["attachments"] == [f"bank ({bank['id']})"]


def test_a_parent_hands_its_child_only_a_profile_it_may_use_and_may_share(
    owner: tuple[Bay, dict[str, Any]],
) -> None:
    b, work = owner
    parent = grant(b, "parent-1", "work")
    parent.ok("new", "parents-own")  # sharing owner: the parent's group's only
    b.ok("new", "not-parents", session=None)
    # The owner's profile its grant names, the child may be given.
    assert parent.ok("session", "child", "--profile", "work")["profiles"] == [work["id"]]
    # One the parent may not use itself is not granted; one of its own with sharing owner
    # never leaves it.
    not_granted(parent("session", "child", "--profile", "not-parents"), "not-parents")
    assert_refused(parent("session", "child", "--profile", "parents-own"), "grant_refused")
    # A child given nothing owns nothing of its parent's.
    child = Agent(b, Path(parent.ok("session", "child")["socket"]))
    not_granted(child("use", "parents-own"), "parents-own")
    not_granted(child("use", "work"), "work")
    assert child.ok("profiles")["profiles"] == []


def test_a_session_socket_cannot_drop_or_widen_the_fence_the_owner_set_on_its_browser(
    owner: tuple[Bay, dict[str, Any]], demo: str
) -> None:
    """The owner fences session A's own browser to 127.0.0.1; the agent on A's socket tries
    to lift it (`use --ephemeral` with no domains) or widen it (`--allowed-domains
    127.0.0.1,localhost`) and then reach localhost. On the code before, both went through
    and `open http://localhost:…` loaded."""
    b, _work = owner
    elsewhere = demo.replace("127.0.0.1", "localhost")
    agent = grant(b, "fenced-1")
    b.ok("use", "--ephemeral", "--allowed-domains", "127.0.0.1", session="fenced-1")
    assert_refused(agent("open", f"{elsewhere}/"), "domain_refused")
    for widen in (
        [],
        ["--allowed-domains", "127.0.0.1,localhost"],
        ["--allowed-domains", "localhost"],
    ):
        refused = assert_refused(agent("use", "--ephemeral", *widen), "owner_only")
        assert "bay use --ephemeral" in refused["data"]["command"], refused
        assert "--session fenced-1" in refused["data"]["command"], refused
    assert_refused(agent("open", f"{elsewhere}/"), "domain_refused")
    # Narrowing (or restating) its own fence is the agent's to do.
    agent.ok("use", "--ephemeral", "--allowed-domains", "127.0.0.1")
    assert agent("open", f"{demo}/").code == 0
    # An agent whose browser nobody fenced may fence it itself, and then not lift it.
    free = grant(b, "fenced-2")
    free.ok("use", "--ephemeral", "--allowed-domains", "127.0.0.1")
    assert_refused(free("use", "--ephemeral"), "owner_only")
    # The owner may lift it.
    b.ok("use", "--ephemeral", session="fenced-1")
    assert agent("open", f"{elsewhere}/").code == 0
    agent.ok("close")
    free.ok("close")
