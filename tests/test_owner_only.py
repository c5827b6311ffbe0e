"""The channel's gate (browserbay.keeper.channels.admit): on a session socket the session is
fixed (``session_fixed``) and the owner's calls are refused (``owner_only``); on the owner's
channel everything goes through as before.

The attacks run on the real keeper over a real session socket (``bay session grant``): raw
frames, the real ``bay`` CLI with ``BAY_SOCKET``, and the Python API. Every owner-only
condition of the verb table (the core's rows and every shipped plugin's) is a case of its own,
read from the table itself: a new owner-only row is attacked without an edit here, and a new
verb fails :func:`test_every_verb_has_its_owner_only_decision` until someone decides it.
After each attack the owner's view of the keeper is the same as before: the keeper runs with
the same pid, the profiles, the key, the hints, the grants, the group default and the other
session's tab are as they were.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from browserbay import protocol, verbs
from browserbay.keeper.channels import OWNER, Channel, Grant, admit
from browserbay.keeper.route import RouteError, VerbRoute
from browserbay.manual import manual
from browserbay.paths import bay_paths
from browserbay.plugins import load_plugins
from browserbay.refusals import Refusal
from browserbay_testing import Bay, assert_refused
from browserbay_testing.keys import keyed_bay, new_key, private_home, set_key, view_keys

#: Every verb the shipped distributions serve (the core's and the plugins'), as the keeper
#: builds its table.
TABLE: dict[str, verbs.Verb] = load_plugins(strict=True).verb_table()

#: What was decided for each verb: the calls of it only the owner's channel may make. A new
#: verb (or a changed row) fails the census below until its decision is written here.
DECIDED: dict[str, tuple[str, ...]] = {
    # (screenshot PATH: none since its PNG comes back through the connection and the caller's
    # client writes it, browserbay.transfer; upload, download, downloads: the same)
    # (cookies, storage, state: none — they act on the lease's own context only, the fence
    # holds, and a state file moves through the connection, never by a path the keeper opens;
    # new --from-session: none — it reads the asking session's own ephemeral browser, which on
    # a session socket the gate holds to the socket's session)
    # a cdp profile drives somebody else's running browser
    "new": ("provider=cdp", "cdp_url"),
    "profiles": ("orphans",),
    "forget": ("*",),
    "adopt": ("*",),
    "group": ("*",),
    "triggers": ("*",),  # a dropped request acts as any session
    "audit": ("*",),  # keeper-wide
    "hints": ("forget",),
    "session": ("action=grant", "action=revoke"),
    "keeper": ("*",),  # status lists every session; stop/start/logs are the owner's
    "install": ("*",),
    "uninstall": ("*",),
    "keys": ("action=set", "action=clear", "action=test"),  # list shows sources, no value
    "provider": ("*",),
    "chrome": ("allow_open_port", "args"),  # an open DevTools port; a switch runs a program
    "run": ("*",),  # the script runs as the keeper's user, outside the caller's sandbox
    "window": ("action=open",),  # runs a program as the keeper's user
    "trace": ("out",),  # writes the report wherever the caller says
    # live --all: the dashboard shows every session's pages and can pause or stop any of
    # them; live --revoke: none — it revokes the calling session's own links only
    "live": ("all",),
    "record": ("action=start",),  # the keeper writes the video at the caller's path
    "recording": ("*",),  # whether an agent is filmed is the owner's call (it is told)
    # get, is, find and frame: none — they read or act on the caller's own tab (its current
    # frame) and touch no file
    # set: none — DevTools overrides on the lease's own tabs only (the geolocation permission
    # on its own context), undone by close, no file; pdf PATH: none — its bytes come back
    # through the connection and the caller's client writes them (browserbay.transfer)
}


def test_every_verb_has_its_owner_only_decision() -> None:
    table = {name: v.owner_only for name, v in TABLE.items() if v.owner_only}
    assert table == DECIDED


def test_every_owner_only_condition_can_match() -> None:
    assert [p for v in TABLE.values() for p in v.owner_only_problems()] == []


def test_a_typo_in_an_owner_only_condition_stops_the_keeper_at_start() -> None:
    """A condition that names no argument would never match: the verb would be open to every
    session. The route refuses to be built (the keeper does not start)."""
    typo = verbs.Verb(
        "hints", verbs.KEEPER, "x", verbs.BY_NAME["hints"].args, owner_only=("forgot",)
    )
    flag = verbs.Verb(
        "hints", verbs.KEEPER, "x", verbs.BY_NAME["hints"].args, owner_only=("forget=1",)
    )
    for row in (typo, flag):
        with pytest.raises(RouteError, match="owner_only"):
            VerbRoute({"hints": row}, {})


def _sample(a: verbs.Arg) -> Any:
    if a.choices:
        return a.choices[0]
    if a.type in ("int", "float"):
        return 1
    if a.type == verbs.PATH:
        return "/nonexistent/bay-owner-only-test"
    return "x-owner-only-test"


def meeting(verb: verbs.Verb, condition: str, first: str | None = None) -> dict[str, Any]:
    """Arguments of ``verb`` that pass the frame check and meet ``condition`` (``first``: the
    value of its first positional argument with choices)."""
    args: dict[str, Any] = {}
    chosen = False
    for a in verb.args:
        if a.kind == "pos":
            args[a.name] = first if first is not None and a.choices and not chosen else _sample(a)
            chosen = chosen or bool(a.choices)
        elif a.kind == "rest":
            args[a.name] = [_sample(a)]
    if condition != "*":
        name, eq, value = condition.partition("=")
        spec = verb.arg(name)
        if eq:
            args[name] = value
        elif spec.kind == "flag":
            args[name] = True
        elif spec.kind in ("rest", "tail", "many"):
            args[name] = [_sample(spec)]
        else:
            args[name] = _sample(spec)
    return args


def _cases() -> list[Any]:
    """(verb, condition, first): every owner-only condition of the table the keeper serves;
    a ``*`` row once per choice of its first positional argument (``keeper stop``, ``keeper
    status``, …)."""
    cases = []
    for v in TABLE.values():
        if v.scope == verbs.LOCAL:
            continue  # never reaches a keeper: the client says it (test_the_manual_…)
        for cond in v.owner_only:
            firsts: tuple[str | None, ...] = (None,)
            if cond == "*":
                choice = next((a for a in v.args if a.kind == "pos" and a.choices), None)
                firsts = choice.choices if choice is not None else (None,)
            for first in firsts:
                label = f"{v.name}[{cond}]" + (f"[{first}]" if first else "")
                cases.append(pytest.param(v.name, cond, first, id=label))
    return cases


CASES = _cases()
AGENT = f"agent-{os.getpid()}"
OTHER = f"other-{os.getpid()}"
GRANT = Grant(AGENT, Path("/tmp/a.sock"))


# -- the gate, called directly --------------------------------------------------------------


@pytest.mark.parametrize(("name", "condition", "first"), CASES)
def test_the_gate_refuses_each_owner_only_call_on_a_session_socket_only(
    name: str, condition: str, first: str | None
) -> None:
    verb = TABLE[name]
    args = meeting(verb, condition, first)
    with pytest.raises(Refusal) as refused:
        admit(Channel(GRANT), verb, args, session=AGENT, actor=None, group=None, handle=None)
    frame = assert_refused(refused.value, "owner_only")
    assert frame["data"]["condition"] == condition
    assert frame["data"]["command"].startswith(f"bay {name}")
    admit(OWNER, verb, args, session=AGENT, actor="someone-else", group="g", handle=None)


def test_the_way_out_is_the_exact_command_and_never_holds_a_key() -> None:
    keys = TABLE["keys"]
    args = {"action": "set", "integration": "cloud:steel", "field": "api_key", "value": "sk-1"}
    with pytest.raises(Refusal) as refused:
        admit(Channel(GRANT), keys, args, session=AGENT, actor=None, group=None, handle=None)
    r = refused.value
    assert r.fields["command"] == f"bay keys set cloud:steel api_key --session {AGENT}"
    assert "sk-1" not in json.dumps(r.frame())
    assert (
        r.way_out == f"ask the human to run it: bay keys set cloud:steel api_key --session {AGENT}"
    )
    new = TABLE["new"]
    with pytest.raises(Refusal) as refused:
        admit(
            Channel(GRANT),
            new,
            {"label": "mine", "cdp_url": "auto", "headed": True},
            session=AGENT,
            actor=None,
            group=None,
            handle="work",
        )
    assert refused.value.fields["what"] == "new --cdp-url"
    assert refused.value.fields["command"] == (
        "bay new mine --headed --cdp-url auto --profile work"
    )
    chrome = TABLE["chrome"]
    with pytest.raises(Refusal) as refused:
        admit(
            Channel(GRANT),
            chrome,
            {"args": ["--renderer-cmd-prefix=/bin/sh"]},
            session=AGENT,
            actor=None,
            group=None,
            handle=None,
        )
    assert refused.value.fields["what"] == "chrome -- ARGS"
    assert refused.value.fields["command"].startswith("bay chrome -- --renderer-cmd-prefix")


@pytest.mark.parametrize(
    ("session", "actor", "group", "what"),
    [
        (OTHER, None, None, "session"),
        (AGENT, OTHER, None, "session"),
        (AGENT, None, OTHER, "group"),
        (OTHER, AGENT, AGENT, "session"),
    ],
)
def test_the_gate_fixes_the_session_of_a_session_socket(
    session: str, actor: str | None, group: str | None, what: str
) -> None:
    status = TABLE["status"]
    with pytest.raises(Refusal) as refused:
        admit(Channel(GRANT), status, {}, session=session, actor=actor, group=group, handle=None)
    frame = assert_refused(refused.value, "session_fixed")
    assert frame["data"]["fixed"] == AGENT
    assert frame["data"]["asked"] == OTHER
    assert frame["data"]["what"] == what
    assert AGENT in frame["message"]
    assert OTHER in frame["message"]
    assert f"you are always session {AGENT}" in frame["way_out"]
    admit(OWNER, status, {}, session=session, actor=actor, group=group, handle=None)


def test_its_own_session_actor_and_group_pass() -> None:
    admit(Channel(GRANT), TABLE["status"], {}, session=AGENT, actor=AGENT, group=AGENT, handle=None)


def test_the_manual_and_bay_help_mark_the_owner_only_calls() -> None:
    text = manual()
    block = text[text.index("owner only") :].split("\n\n")[0]
    for v in verbs.VERBS:
        if v.owner_only:
            assert v.owner_only_phrase() in " ".join(block.split()), v.name
    assert "keys set/clear/test" in manual(v for v in TABLE.values() if v.plugin)
    from browserbay_cli.parse import help_text

    assert "owner only: hints --forget" in help_text("hints")
    assert "owner only" not in help_text("open")


# -- the real keeper, over a real session socket -------------------------------------------


@dataclass
class World:
    bay: Bay
    home: Path
    sock: Path
    owner_sock: Path
    profile: str
    other_tab: str
    other_url: str

    def agent(self, *args: str, **kw: Any) -> Any:
        """The real ``bay`` CLI on the session socket (no BAY_SESSION)."""
        env = {"BAY_SOCKET": str(self.sock), **kw.pop("env", {})}
        return self.bay(*args, session=kw.pop("session", None), env=env, **kw)


def raw(path: Path, verb: str, args: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    """One request frame on the unix socket at ``path``, after the hello; its answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(120)
        s.connect(str(path))
        f = s.makefile("rwb")
        f.write(protocol.encode(protocol.hello("client")))
        f.flush()
        hello = json.loads(f.readline())
        if verb == "hello":
            return dict(hello["hello"])
        frame = {"id": "1", "verb": verb, "args": args or {}, "timeout": 60, **fields}
        frame.setdefault("session", {"id": AGENT, "origin": "api"})
        f.write(protocol.encode(frame))
        f.flush()
        while True:
            answer = json.loads(f.readline())
            if "ok" in answer:
                return dict(answer)


def as_(session: str) -> dict[str, Any]:
    return {"session": {"id": session, "origin": "api"}}


GROUP = f"g-{os.getpid()}"


def owner_view(w: World) -> dict[str, Any]:
    """What the owner's channel sees of everything an owner-only call could change."""

    def data(verb: str, args: dict[str, Any] | None = None, **fields: Any) -> Any:
        answer = raw(w.owner_sock, verb, args, **{**as_(f"observer-{os.getpid()}"), **fields})
        assert answer["ok"], answer
        return answer["data"]

    profiles = data("profiles")["profiles"]
    other_tabs = data("tab", {"action": "list"}, **as_(OTHER))
    return {
        "keeper": raw(w.owner_sock, "hello")["pid"],
        "profiles": sorted((p["id"], p["label"], p["provider"]) for p in profiles),
        "keys": data("keys", {"action": "list", "integration": "keyed"}),
        "hints": data("hints")["hints"],
        "grants": data("session", {"action": "list"}),
        "group": data("status", group=GROUP)["acts_on"]["id"],
        "other_tabs": [(t["id"], t["url"]) for t in other_tabs["tabs"]],
    }


@pytest.fixture(scope="module")
def world(demo: str) -> Iterator[World]:
    with private_home() as home:
        b = keyed_bay(
            home, BAY_DEFAULT_PROVIDER="chromium", BAY_PLUGIN_MODULES="recorder,keyed,standin"
        )
        set_key(b, "keyed", "api_key", new_key())
        profile = b.ok("new", f"kept-{os.getpid()}", session=None)["id"]
        b.ok("group", "default", GROUP, profile, session=None)
        b.ok("blocked", "--url", "https://shop.example/", "--why", "a captcha", session=OTHER)
        url = f"{demo}/"
        opened = b.ok("open", url, session=OTHER)
        agents = home / "agents"
        agents.mkdir(mode=0o700)
        sock = agents / "a.sock"
        b.ok("session", "grant", AGENT, "--socket", str(sock), "--profile", profile, session=None)
        owner_sock = bay_paths({"BAY_HOME": str(home)}).socket
        yield World(b, home, sock, owner_sock, profile, opened["tab"], opened["url"])


def test_the_keeper_serves_the_decided_table(world: World) -> None:
    rows = raw(world.owner_sock, "verbs", **as_(OTHER))["data"]["verbs"]
    served = {r["name"]: tuple(r["owner_only"]) for r in rows if r["owner_only"]}
    assert served == DECIDED


@pytest.mark.parametrize(("name", "condition", "first"), CASES)
def test_a_session_socket_client_cannot_make_an_owner_only_call(
    world: World, name: str, condition: str, first: str | None
) -> None:
    before = owner_view(world)
    answer = raw(world.sock, name, meeting(TABLE[name], condition, first))
    frame = assert_refused(answer, "owner_only")
    assert frame["data"]["condition"] == condition
    assert frame["way_out"] == f"ask the human to run it: {frame['data']['command']}"
    assert owner_view(world) == before


#: Owner-channel runs the module's keeper cannot survive or that start a real browser of the
#: human's: covered by the fixture's teardown (``bay keeper stop`` on the owner's channel)
#: and by tests/test_keeper.py, providers/cdp's tests.
OWNER_SKIP = {("keeper", "stop"), ("keeper", "start"), ("chrome", "allow_open_port")}


@pytest.mark.parametrize(("name", "condition", "first"), CASES)
def test_the_same_call_on_the_owners_channel_is_not_refused_owner_only(
    world: World, name: str, condition: str, first: str | None
) -> None:
    if (name, first or condition) in OWNER_SKIP:
        pytest.skip("ends the module's keeper or starts the human's Chrome")
    answer = raw(world.owner_sock, name, meeting(TABLE[name], condition, first), **as_(OTHER))
    assert answer.get("code") != "owner_only", answer


def test_a_session_socket_client_cannot_stop_the_keeper(world: World) -> None:
    pid = world.bay.keeper_pid()
    refused = assert_refused(world.agent("keeper", "stop"), "owner_only")
    assert refused["message"].startswith("'keeper stop' is the owner's to run")
    assert refused["way_out"] == "ask the human to run it: bay keeper stop"
    assert_refused(raw(world.sock, "keeper", {"action": "stop"}), "owner_only")
    shutdown = {"id": "s", "op": "shutdown"}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(30)
        s.connect(str(world.sock))
        f = s.makefile("rwb")
        f.write(protocol.encode(shutdown))
        f.flush()
        assert_refused(json.loads(f.readline()), "owner_only")
    assert world.bay.keeper_pid() == pid
    # The attempt is in the owner's audit, with who tried it.
    rows = raw(world.owner_sock, "audit", {"last": 500}, **as_(OTHER))["data"]["audit"]
    tried = {(r["verb"], r["code"], r["actor"]) for r in rows if not r["ok"]}
    assert ("keeper", "owner_only", f"session-socket:{AGENT}") in tried


def test_a_session_socket_client_cannot_set_or_clear_a_key(world: World) -> None:
    before = view_keys(world.bay)
    refused = assert_refused(
        world.agent("keys", "set", "keyed", "api_key", stdin=new_key() + "\n"), "owner_only"
    )
    assert refused["data"]["command"] == f"bay keys set keyed api_key --session {AGENT}"
    assert_refused(world.agent("keys", "clear", "keyed"), "owner_only")
    assert view_keys(world.bay) == before
    # What a key's source is stays readable on the session socket (never a value).
    assert world.agent("keys", "list", "keyed").data["integrations"][0]["id"] == "keyed"


def test_a_session_socket_client_cannot_forget_or_adopt_or_regroup(world: World) -> None:
    before = owner_view(world)
    assert_refused(world.agent("forget", world.profile), "owner_only")
    assert_refused(world.agent("adopt", str(world.home), "mine"), "owner_only")
    assert_refused(world.agent("group", "default", GROUP, world.profile), "owner_only")
    assert_refused(world.agent("hints", "shop.example", "--forget"), "owner_only")
    assert owner_view(world) == before


def test_a_session_socket_client_cannot_open_a_devtools_port(world: World) -> None:
    before = owner_view(world)
    refused = assert_refused(world.agent("chrome", "--allow-open-port"), "owner_only")
    assert refused["data"]["what"] == "chrome --allow-open-port"
    assert owner_view(world) == before  # no cdp profile was registered, no Chrome started


@pytest.mark.parametrize(
    "road",
    ["--session", "BAY_SESSION", "raw session", "raw actor", "raw group", "python api"],
)
def test_a_session_socket_client_cannot_act_as_another_session(world: World, road: str) -> None:
    """Every road that names session B is refused ``session_fixed``, and B's tab was not
    touched: the same tab at the same URL."""
    before = owner_view(world)
    evil = "about:blank#taken-over"
    if road == "--session":
        answer = world.agent("open", evil, "--session", OTHER).frame
    elif road == "BAY_SESSION":
        answer = world.agent("open", evil, env={"BAY_SESSION": OTHER}).frame
    elif road == "raw session":
        answer = raw(world.sock, "open", {"url": evil}, **as_(OTHER))
    elif road == "raw actor":
        answer = raw(world.sock, "close", actor={"id": OTHER, "origin": "flag"})
    elif road == "raw group":
        answer = raw(world.sock, "status", group=GROUP)
    else:
        answer = _python_api(world, evil)
    frame = assert_refused(answer, "session_fixed")
    assert frame["data"]["fixed"] == AGENT
    assert frame["data"]["asked"] in (OTHER, GROUP)
    after = owner_view(world)
    assert after == before
    assert after["other_tabs"] == [(world.other_tab, world.other_url)]
    if road == "raw session":  # audited as asked: the session it claimed, the socket it used
        rows = raw(world.owner_sock, "audit", {"last": 500}, **as_(OTHER))["data"]["audit"]
        assert {(r["session"], r["actor"]) for r in rows if r["code"] == "session_fixed"} >= {
            (OTHER, f"session-socket:{AGENT}")
        }


def _python_api(world: World, url: str) -> dict[str, Any]:
    """``SyncClient(OTHER)`` with ``BAY_SOCKET``: the refusal it raises, as a frame."""
    import subprocess
    import sys

    code = (
        "import json, browserbay\n"
        "from browserbay.errors import BayRefusal\n"
        f"c = browserbay.SyncClient({OTHER!r})\n"
        "try:\n"
        f"    c.open({url!r})\n"
        "    print(json.dumps({'ok': True}))\n"
        "except BayRefusal as r:\n"
        "    print(json.dumps(r.frame()))\n"
    )
    env = {**world.bay.env, "BAY_SOCKET": str(world.sock)}
    env.pop("BAY_SESSION", None)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_on_a_session_socket_the_hints_listing_is_its_own(world: World) -> None:
    """Another session's claims say where it browsed: a session socket sees its own only."""
    assert world.agent("blocked", "--url", "https://shop.example/x", "--why", "mine").data
    shown = world.agent("hints").data["hints"]
    assert shown
    assert {h["by"] for h in shown} == {AGENT}
    everyone = raw(world.owner_sock, "hints", **as_(OTHER))["data"]["hints"]
    assert {h["by"] for h in everyone} >= {AGENT, OTHER}


def test_on_a_session_socket_status_is_its_own_session(world: World) -> None:
    status = world.agent("status").data
    assert status["session"]["id"] == AGENT
    text = json.dumps(status)
    assert OTHER not in text
    assert world.other_tab not in text


@pytest.mark.parametrize(
    "name", [v.name for v in verbs.VERBS if v.scope == verbs.LOCAL and v.owner_only]
)
def test_a_session_socket_client_is_told_a_local_owner_only_verb_is_the_humans(
    world: World, name: str
) -> None:
    """``bay install`` runs in the client, never at the keeper's gate: the client refuses it
    on a session socket before anything runs (no installer is started)."""
    refused = assert_refused(world.agent(name, "browserbay-no-such-dist"), "owner_only")
    assert refused["data"]["command"] == f"bay {name} browserbay-no-such-dist"
    assert "browserbay-no-such-dist" not in world.bay("plugins", session=None).stdout


def _profile_row(w: World, pid: str) -> dict[str, Any]:
    rows = raw(w.owner_sock, "profiles", **as_(OTHER))["data"]["profiles"]
    return dict(next(p for p in rows if p["id"] == pid))


def test_a_session_socket_client_cannot_switch_the_backend_of_a_shared_profile(
    world: World,
) -> None:
    """The owner's profile, granted to the agent: neither a switch nor an accept, and no
    proposal is recorded. Its own group's profile switches — until another session holds it."""
    assert world.agent("use", world.profile).data
    before = owner_view(world)
    refused = assert_refused(
        world.agent("backend", "standin", "--profile", world.profile), "owner_only"
    )
    assert refused["data"]["command"] == f"bay backend standin --profile {world.profile}"
    assert "belongs to owner" in refused["message"]
    assert_refused(world.agent("backend", "--accept", "--profile", world.profile), "owner_only")
    assert owner_view(world) == before  # still on chromium
    assert _profile_row(world, world.profile)["proposal"] is None
    mine = world.agent("new", f"mine-{os.getpid()}").data["id"]
    assert world.agent("use", mine).data
    assert world.agent("backend", "standin", "--profile", mine).data["switched"] is True
    # Shared once another session holds it (the owner attached it to OTHER).
    assert raw(world.owner_sock, "use", {"profile": mine}, **as_(OTHER))["ok"]
    try:
        refused = assert_refused(
            world.agent("backend", "chromium", "--profile", mine), "owner_only"
        )
        assert "1 other session(s) hold it" in refused["message"]
        assert _profile_row(world, mine)["provider"] == "standin"
        assert _profile_row(world, mine)["proposal"] is None
    finally:
        raw(world.owner_sock, "detach", profile=mine, **as_(OTHER))


def test_on_a_session_socket_the_trace_of_a_shared_profile_is_its_own_actions(
    demo: str,
) -> None:
    """A profile's trace holds every session's actions on it (frames: screenshots of their
    pages). On a session socket ``bay trace show`` reports the socket's session's only; the
    owner's channel still sees them all."""
    with private_home() as home:
        b = Bay(home, BAY_TRACE="1")
        pid = b.ok("new", "shared", session=None)["id"]
        b.ok("use", pid, session=OTHER)
        b.ok("open", f"{demo}/?theirs-5e1f", session=OTHER)
        agents = home / "agents"
        agents.mkdir(mode=0o700)
        sock = agents / "t.sock"
        b.ok("session", "grant", AGENT, "--socket", str(sock), "--profile", pid, session=None)
        on_socket = {"BAY_SOCKET": str(sock)}
        b.ok("use", pid, session=None, env=on_socket)
        b.ok("open", f"{demo}/?mine", session=None, env=on_socket)
        shown = b.ok("trace", "show", "--last", "10", session=None, env=on_socket)
        assert shown["actions"]
        assert {a["session"] for a in shown["actions"]} == {AGENT}
        assert "theirs-5e1f" not in Path(shown["path"]).read_text(encoding="utf-8")
        everyone = b.ok("trace", "show", "--last", "10", session=OTHER)
        assert {a["session"] for a in everyone["actions"]} == {AGENT, OTHER}


def test_on_a_session_socket_a_proposal_names_no_other_session_nor_its_page(
    world: World, demo: str
) -> None:
    """A switch another session proposed for a profile the agent was granted: the agent sees
    that one is proposed (and for which backend), not who proposed it, who else holds the
    profile, nor the page the proposer was on."""
    third = f"third-{os.getpid()}"
    assert world.agent("use", world.profile).data
    owner = {**as_(third), "profile": world.profile}
    assert raw(world.owner_sock, "use", {"profile": world.profile}, **as_(third))["ok"]
    assert raw(world.owner_sock, "open", {"url": f"{demo}/?third-page"}, **owner)["ok"]
    proposed = raw(world.owner_sock, "backend", {"provider": "standin"}, **owner)
    assert proposed["data"]["switched"] is False, proposed
    try:
        for answer in (
            world.agent("status", "--profile", world.profile),
            world.agent("profiles"),
            world.agent("backend", "--profile", world.profile),
        ):
            text = json.dumps(answer.frame) + answer.stderr
            assert "standin" in text  # the proposal is there
            assert third not in text
            assert "third-page" not in text
        assert third in json.dumps(raw(world.owner_sock, "profiles", **as_(OTHER)))
    finally:
        raw(world.owner_sock, "backend", {"decline": True}, **owner)
        raw(world.owner_sock, "close", **as_(third))
        raw(world.owner_sock, "detach", **owner)
