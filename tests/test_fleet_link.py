"""The fleet link (issue 22, item 3): who may talk to a keeper's ``BAY_FLEET_LISTEN`` and what
a proven peer may do there. Attacks first: each is refused ``fleet_link_refused`` (or hung up
on before TLS), logged without the secret, and nothing of the keeper's runs for it."""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import select
import socket
import sqlite3
import ssl
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import anyio
import pytest
from anyio.streams.tls import TLSStream

from browserbay import protocol
from browserbay.keeper import link
from browserbay.refusals import Refusal
from browserbay.selfsigned import ensure_self_signed
from browserbay_testing.bay import Bay, wait_for
from browserbay_testing.fleet import (
    Member,
    free_port,
    keeper_fleet,
    link_env,
    linked_fleet,
    read_frame,
    write_secret,
)
from browserbay_testing.live import open_live_link, press_hand_back, press_take_over
from browserbay_testing.pages import serve_pages
from browserbay_testing.plugin import keeper, short_home
from browserbay_testing.postgres import PgServer
from browserbay_testing.refusals import assert_refused

T = TypeVar("T")
SECRET = "0123456789abcdef-fleet-link-secret-for-tests"
OTHER = "kp-0badc0de"  # the id the test's own peer says it has


def in_thread(fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``anyio.run(fn, *args)`` in a thread of its own: a test of this module may hold a sync
    Playwright page (the viewer), whose event loop runs in the test's thread."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, fn, *args).result()


def secret_file(where: Path, text: str = SECRET, mode: int = 0o600) -> Path:
    return write_secret(where, text, mode)


def keeper_log(b: Bay) -> str:
    path = b.home / "logs" / "keeper.log"
    return path.read_text() if path.exists() else ""


def keeper_id(b: Bay) -> str:
    return (b.home / "state" / "keeper-id").read_text().strip()


class Linked:
    """Keeper A with its link listening on ``address``."""

    def __init__(self, bay: Bay, address: str):
        self.bay = bay
        self.address = address
        self.host, port = address.rsplit(":", 1)
        self.port = int(port)

    @property
    def id(self) -> str:
        return keeper_id(self.bay)

    def refusals_logged(self) -> list[str]:
        return [line for line in keeper_log(self.bay).splitlines() if "fleet_link_refused" in line]


@pytest.fixture(scope="module")
def linked() -> Iterator[Linked]:
    secrets_dir = short_home("ls")
    address = f"127.0.0.1:{free_port()}"
    with keeper(
        "la",
        BAY_FLEET_LISTEN=address,
        BAY_FLEET_SECRET_FILE=str(secret_file(secrets_dir)),
    ) as b:
        b.keeper_pid()
        a = Linked(b, address)

        def listening() -> bool:
            with socket.socket() as s:
                return s.connect_ex((a.host, a.port)) == 0

        wait_for(listening, what="the fleet link to listen")
        yield a


def connect(a: Linked, secret: str = SECRET) -> link.LinkStream:
    """A proven link to keeper A, as keeper OTHER (blocking helper for anyio.run)."""

    async def go() -> link.LinkStream:
        return await link.connect_peer(a.address, secret.encode(), OTHER, a.id)

    return in_thread(go)


async def _tls(a: Linked) -> TLSStream:
    tcp = await anyio.connect_tcp(a.host, a.port)
    return await TLSStream.wrap(
        tcp, server_side=False, ssl_context=link.client_tls(), standard_compatible=False
    )


def _hello(nonce: str | None = None) -> bytes:
    return protocol.encode({"link": {"v": 1, "keeper": OTHER, "nonce": nonce or "ab" * 32}})


# -- attacks ------------------------------------------------------------------------------


def test_a_plain_tcp_client_gets_no_frame_and_is_logged(linked: Linked) -> None:
    before = len(linked.refusals_logged())
    with socket.create_connection((linked.host, linked.port), timeout=8) as s:
        s.sendall(protocol.encode(protocol.hello("cli")))
        s.sendall(
            protocol.encode(
                {"id": 1, "verb": "keeper", "args": {"action": "stop"}, "session": {"id": "x"}}
            )
        )
        got = b""
        try:
            while chunk := s.recv(4096):
                got += chunk
        except (ConnectionResetError, TimeoutError):
            pass
    assert b"{" not in got  # at most a TLS alert: no frame, no answer
    wait_for(lambda: len(linked.refusals_logged()) > before, what="the refusal in the log")
    assert "no TLS handshake" in linked.refusals_logged()[-1]
    assert linked.bay("keeper", "status", session=None).code == 0  # still serving


def test_a_peer_with_a_wrong_secret_is_refused_both_ways(linked: Linked) -> None:
    # As a client: the server's proof does not hold under our (wrong) secret.
    with pytest.raises(Refusal) as caught:
        connect(linked, "not-the-fleet-secret-at-all-0000")
    assert "proof is wrong" in assert_refused(caught.value, "fleet_link_refused")["message"]

    # As a client that does not check the server and answers with a proof of its own.
    async def go() -> dict[str, Any] | None:
        stream = await _tls(linked)
        await stream.send(_hello())
        hello = await read_frame(stream)
        assert hello is not None
        assert "proof" in hello["link"]
        await stream.send(protocol.encode({"link": {"proof": "00" * 32}}))
        return await read_frame(stream)

    answer = in_thread(go)
    assert answer is not None
    assert_refused(answer, "fleet_link_refused")
    wait_for(
        lambda: any("proof is wrong" in line for line in linked.refusals_logged()),
        what="the refusal in the log",
    )


def test_a_replayed_handshake_is_refused(linked: Linked) -> None:
    """A recorded client hello and proof (of a handshake that succeeded) proves nothing on
    a new connection: the server's nonce is new."""

    async def record() -> tuple[bytes, bytes]:
        stream = await _tls(linked)
        digest = link.hashlib.sha256(
            stream.extra(link.TLSAttribute.peer_certificate_binary) or b""
        ).digest()
        nonce = "cd" * 32
        hello = _hello(nonce)
        await stream.send(hello)
        server = await read_frame(stream)
        assert server is not None
        ours = link.proof(
            SECRET.encode(), "client", digest, linked.id, OTHER, nonce, server["link"]["nonce"]
        )
        answer = protocol.encode({"link": {"proof": ours}})
        await stream.send(answer)
        done = await read_frame(stream)
        assert done == {"link": {"ok": True}}  # the recording was of a good handshake
        await stream.aclose()
        return hello, answer

    async def replay(hello: bytes, answer: bytes) -> dict[str, Any] | None:
        stream = await _tls(linked)
        await stream.send(hello)
        assert await read_frame(stream) is not None
        await stream.send(answer)
        return await read_frame(stream)

    hello, answer = in_thread(record)
    refused = in_thread(replay, hello, answer)
    assert refused is not None
    assert_refused(refused, "fleet_link_refused")


def test_a_man_in_the_middle_with_its_own_certificate_is_refused(
    linked: Linked, tmp_path: Path
) -> None:
    """A relay that ends TLS with a certificate of its own and passes every byte on to A:
    the client's proof check sees the relay's certificate, A's proof is over A's — refused,
    and the relay never gets a client proof to pass on."""
    ensure_self_signed(tmp_path / "m.pem", tmp_path / "m.key", ["127.0.0.1"], "mitm")
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(str(tmp_path / "m.pem"), str(tmp_path / "m.key"))
    relayed: list[bytes] = []

    async def go() -> Refusal:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        port = listener.extra(anyio.abc.SocketAttribute.local_port)

        async def relay(tcp: anyio.abc.SocketStream) -> None:
            victim = await TLSStream.wrap(tcp, server_side=True, ssl_context=ctx)
            upstream = await _tls(linked)

            async def pump(src: TLSStream, dst: TLSStream) -> None:
                try:
                    while True:
                        data = await src.receive()
                        relayed.append(data)
                        await dst.send(data)
                except Exception:
                    await dst.aclose()

            async with anyio.create_task_group() as pumps:
                pumps.start_soon(pump, victim, upstream)
                pumps.start_soon(pump, upstream, victim)

        async with anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, relay)
            try:
                await link.connect_peer(f"127.0.0.1:{port}", SECRET.encode(), OTHER, linked.id)
            except Refusal as r:
                tg.cancel_scope.cancel()
                return r
        raise AssertionError("the relayed handshake was taken")

    refusal = in_thread(go)
    assert "man in the middle" in assert_refused(refusal, "fleet_link_refused")["message"]
    assert not any(b'"proof":"' in r and b'"nonce"' not in r for r in relayed)  # no client proof


def test_an_unproven_peer_gets_a_deadline_and_a_few_bytes(linked: Linked) -> None:
    async def oversized() -> dict[str, Any] | None:
        stream = await _tls(linked)
        await stream.send(b"x" * (link.HANDSHAKE_MAX * 64))
        return await read_frame(stream)

    answer = in_thread(oversized)
    assert answer is not None
    assert "longer than" in assert_refused(answer, "fleet_link_refused")["message"]

    async def slow() -> str:
        """Who ended the trickle: the keeper (its handshake deadline) or, if it never
        does, this test's own long bound — an order of events, not a wall-clock bound."""
        stream = await _tls(linked)
        with anyio.move_on_after(link.HANDSHAKE_TIMEOUT * 4 + 10):
            try:
                while True:  # one byte a second, never a line
                    await stream.send(b"{")
                    await anyio.sleep(1)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError, ssl.SSLError):
                return "the keeper cut it"
        return "never cut"

    assert in_thread(slow) == "the keeper cut it"
    assert any("within" in line for line in linked.refusals_logged())


def test_connections_cut_at_the_handshake_deadline_leave_the_link_serving(linked: Linked) -> None:
    """Peers that finish TLS and then say nothing are cut at the handshake deadline — and the
    connections after them are served. The keeper once closed such a connection's socket
    under its live TLS transport: the event loop kept a stale entry for the descriptor, and
    the next connection given that number was never read (its handshake hung)."""

    async def silent(n: int) -> int:
        streams = [await _tls(linked) for _ in range(n)]
        cut = 0
        with anyio.move_on_after(link.HANDSHAKE_TIMEOUT * 4 + 10):
            for stream in streams:
                try:
                    await stream.receive()  # the keeper sends nothing before the hello
                except (anyio.EndOfStream, anyio.BrokenResourceError, ssl.SSLError, OSError):
                    cut += 1
        return cut

    assert in_thread(silent, 4) == 4  # all four cut by the keeper's deadline

    async def hello() -> dict[str, Any] | None:
        stream = await link.connect_peer(linked.address, SECRET.encode(), OTHER, linked.id)
        try:
            await stream.send(protocol.encode(protocol.hello("fleet")))
            return await read_frame(stream)
        finally:
            await stream.aclose()

    for _ in range(6):  # the descriptors they had are given to these
        answer = in_thread(hello)
        assert answer is not None
        assert answer["hello"]["channel"] == "fleet"


def test_the_secret_is_never_logged(linked: Linked) -> None:
    assert linked.refusals_logged()  # the attacks above were logged
    assert SECRET not in keeper_log(linked.bay)


# -- a proven peer ------------------------------------------------------------------------


def test_a_proven_peer_cannot_stop_the_keeper(linked: Linked) -> None:
    async def go() -> list[dict[str, Any] | None]:
        stream = await link.connect_peer(linked.address, SECRET.encode(), OTHER, linked.id)
        answers = []
        await stream.send(protocol.encode(protocol.hello("fleet")))
        hello = await read_frame(stream)
        assert hello is not None
        assert hello["hello"]["channel"] == "fleet"
        for frame in (
            {"id": 1, "op": "shutdown"},
            {"id": 2, "verb": "keeper", "args": {"action": "stop"}, "session": {"id": "s"}},
        ):
            await stream.send(protocol.encode(frame))
            answers.append(await read_frame(stream))
        return answers

    pid = linked.bay.keeper_pid()
    shutdown, stop = in_thread(go)
    assert shutdown is not None
    assert shutdown["code"] == "owner_only"
    assert stop is not None
    assert stop["code"] == "owner_only"
    time.sleep(0.5)
    assert linked.bay.keeper_pid() == pid  # the same keeper, still serving


# -- the start -----------------------------------------------------------------------------


def test_a_listen_address_without_a_secret_is_refused_at_start() -> None:
    with keeper("ln", BAY_FLEET_LISTEN=f"127.0.0.1:{free_port()}") as b:
        r = b("open", "about:blank")
        assert "BAY_FLEET_SECRET_FILE" in assert_refused(r, "fleet_link_refused")["message"]


def test_a_secret_file_others_may_read_is_refused_at_start() -> None:
    where = short_home("lr")
    path = secret_file(where, mode=0o644)
    with keeper(
        "lm", BAY_FLEET_LISTEN=f"127.0.0.1:{free_port()}", BAY_FLEET_SECRET_FILE=str(path)
    ) as b:
        r = b("open", "about:blank")
        refused = assert_refused(r, "fleet_link_refused")
        assert "may be read by others" in refused["message"]
        assert SECRET not in r.stdout + r.stderr + keeper_log(b)
    os.unlink(path)


# -- sessions anywhere: verbs forwarded to the keeper that runs the browser -----------------


def _work_on_a(a: Member, demo: str, *flags: str) -> str:
    """Profile ``work`` made on A, its browser running there (A's session ``a``)."""
    pid = str(a.ok("new", "work", *flags, session=None)["id"])
    a.ok("use", pid)
    a.ok("open", f"{demo}/")
    return pid


def test_a_profile_made_on_a_is_usable_from_b_and_shares_its_login(
    postgres: PgServer, tmp_path: Path, demo: str
) -> None:
    with linked_fleet(postgres, tmp_path, secret=SECRET) as fleet:
        a, b = fleet["a"], fleet["b"]
        a.start()
        pid = _work_on_a(a, demo)
        a.ok("cookies", "set", "login", "yes-from-a", "--url", demo)
        b.ok("use", pid, session="b1")
        r = b("open", f"{demo}/", session="b1")
        assert r.code == 0, r
        assert r.frame["profile"]["host"] == "host-a"  # the answer says where
        assert "on host-a" in b("get", "url", session="b1", json_=False).stderr  # the footer
        cookies = str(b.ok("cookies", "get", "--name", "login", session="b1"))
        assert "yes-from-a" in cookies  # the same login
        b.ok("cookies", "set", "seen", "from-b", "--url", demo, session="b1")
        assert "from-b" in str(a.ok("cookies", "get", "--name", "seen"))
        # B started no browser and took no claim: A runs it.
        assert fleet.rows("SELECT keeper_id FROM profile_claims") == [(a.keeper_id(),)]
        assert fleet.rows("SELECT id FROM browsers WHERE keeper_id=%s", b.keeper_id()) == []
        # A audits B's verbs as the fleet's, by origin keeper and session: one row per
        # verb, A's (its session b1@<B>), none of B's (whose would say session b1).
        actors = {row["actor"] for row in a.ok("audit", "--last", "200")["audit"]}
        assert f"fleet:{b.keeper_id()}/b1" in actors
        bid = b.keeper_id()
        rows = fleet.rows(
            "SELECT verb, session, actor FROM audit WHERE session LIKE %s ORDER BY id", "b1%"
        )
        assert rows == [
            ("use", "b1", "owner"),  # use ran on B (the attachment: the registry's)
            ("open", f"b1@{bid}", f"fleet:{bid}/b1"),
            ("get", f"b1@{bid}", f"fleet:{bid}/b1"),
            ("cookies", f"b1@{bid}", f"fleet:{bid}/b1"),
            ("cookies", f"b1@{bid}", f"fleet:{bid}/b1"),
        ]
        opens = [r for r in b.ok("audit", "--last", "200")["audit"] if r["verb"] == "open"]
        assert [r["session"] for r in opens] == ["a", f"b1@{bid}"]  # bay audit: counted once


def test_bs_session_verbs_act_where_the_browser_runs_and_say_so(
    postgres: PgServer, tmp_path: Path, demo: str
) -> None:
    """use, status, close (a tab's lease, and the session) and detach of a session on B
    whose profile's browser runs on A: the tabs live on A, so they are read and closed
    there (each verb's one audit row A's, naming B's session; a close of the whole session
    is one row, B's, where the session ends — before, one at A and one at B); the
    attachments and holds are the registry's, changed by B. (Before, none was forwarded:
    B's status showed no tab, and A's tabs outlived B's close and detach.)"""
    with linked_fleet(postgres, tmp_path, secret=SECRET) as fleet:
        a, b = fleet["a"], fleet["b"]
        a.start()
        pid = _work_on_a(a, demo)
        used = b("use", pid, session="b1")
        assert used.frame["profile"]["host"] == "host-a", used  # use says where
        b.ok("open", f"{demo}/?one", session="b1")
        status = b.ok("status", session="b1")
        (lease,) = status["leases"]
        assert lease["profile"]["host"] == "host-a"
        assert [t["url"] for t in lease["tabs"]] == [f"{demo}/?one"]  # its tab, on A
        assert lease["browser"] is not None
        assert status["acts_on"]["host"] == "host-a"
        assert "on host-a" in b("status", session="b1", json_=False).stdout
        closed = b("close", "--profile", pid, session="b1")
        assert closed.code == 0, closed
        assert closed.frame["data"]["closed_tabs"] == 1
        assert closed.frame["profile"]["host"] == "host-a"
        assert b.ok("tab", "list", session="b1")["tabs"] == []  # closed there
        b.ok("open", f"{demo}/?two", session="b1")
        detached = b.ok("detach", session="b1")
        assert detached["closed_tabs"] == 1
        assert detached["attachments"] == []
        assert fleet.rows("SELECT profile FROM attachments WHERE session='b1'") == []
        b.ok("use", pid, session="b1")
        assert b.ok("tab", "list", session="b1")["tabs"] == []  # A's side ended with it
        b.ok("open", f"{demo}/?three", session="b1")
        whole = b.ok("close", session="b1")
        assert whole["closed_tabs"] == 1
        b.ok("use", pid, session="b1")
        assert b.ok("tab", "list", session="b1")["tabs"] == []
        bid = b.keeper_id()
        rows = fleet.rows(
            "SELECT verb, session FROM audit WHERE verb IN ('status', 'close', 'detach') "
            "AND session LIKE %s ORDER BY id",
            "b1%",
        )
        there = f"b1@{bid}"
        assert rows == [
            ("status", there),
            ("status", there),
            ("close", there),
            ("detach", there),
            ("close", "b1"),  # the whole session: one row, here (its lease on A a part of it)
        ]


def test_a_profile_made_on_a_after_b_started_is_found_by_b(
    postgres: PgServer, tmp_path: Path, demo: str
) -> None:
    """B read the registry's profiles once, at its start: one A made afterwards was
    ``profile_unknown`` on B until B restarted. A name B does not know is looked up in the
    shared registry again before it is refused."""
    with linked_fleet(postgres, tmp_path, secret=SECRET) as fleet:
        a, b = fleet["a"], fleet["b"]
        a.start()
        b.start()
        b.ok("open", "about:blank", session="b0")  # B is up and has read its book
        pid = _work_on_a(a, demo)
        b.ok("use", "work", session="b1")  # by label, as a human would
        opened = b("open", f"{demo}/", session="b1")
        assert opened.code == 0, opened
        assert opened.frame["profile"]["host"] == "host-a"  # served where its browser runs
        assert b("use", "no-such-profile", session="b1").frame["code"] == "profile_unknown"
        assert pid in {r["id"] for r in b.ok("profiles", session=None)["profiles"]}


def test_bs_session_never_sees_as_sessions_tabs(
    postgres: PgServer, tmp_path: Path, demo: str
) -> None:
    """Even a session of A with the same id as B's: at A, B's session is b1@<B's id>."""
    with linked_fleet(postgres, tmp_path, secret=SECRET) as fleet:
        a, b = fleet["a"], fleet["b"]
        a.start()
        pid = _work_on_a(a, demo)
        a.ok("use", pid, session="b1")
        a.ok("open", f"{demo}/?a", session="b1")
        a_tabs = [t["id"] for t in a.ok("tab", "list", session="b1")["tabs"]]
        assert a_tabs
        b.ok("use", pid, session="b1")
        b.ok("open", f"{demo}/?b", session="b1")
        b_listing = b.ok("tab", "list", session="b1")
        b_tabs = [t["id"] for t in b_listing["tabs"]]
        assert b_tabs
        assert not set(a_tabs) & set(b_tabs)  # its own tabs only
        assert "?a" not in str(b_listing)
        assert_refused(b("tab", a_tabs[0], session="b1"), "not_your_tab")
        assert "?b" not in str(a.ok("tab", "list", session="b1"))  # nor A's b1 B's
        # A's owner view says whose each tab is (the fleet campaign's oracle asks it so).
        owners: dict[str, list[str]] = {}
        for s in a.ok("keeper", "status", session=None)["sessions"]:
            for lease in s["leases"]:
                for tab in lease["tab_ids"]:
                    owners.setdefault(tab, []).append(s["session"]["id"])
        assert all(owners[t] == ["b1"] for t in a_tabs), owners
        assert all(owners[t] == [f"b1@{b.keeper_id()}"] for t in b_tabs), owners


def test_a_takeover_at_a_refuses_bs_forwarded_verb_browser_paused(
    postgres: PgServer, tmp_path: Path, demo: str, viewer: Any
) -> None:
    with linked_fleet(postgres, tmp_path, secret=SECRET) as fleet:
        a, b = fleet["a"], fleet["b"]
        a.start()
        pid = _work_on_a(a, demo)
        b.ok("use", pid, session="b1")
        b.ok("open", f"{demo}/", session="b1")
        # B's live link is A's live server (the browser's keeper).
        url_b = str(b.ok("live", session="b1")["url"])
        url_a = open_live_link(a, "a", viewer)
        assert urlsplit(url_b).netloc == urlsplit(url_a).netloc
        press_take_over(viewer)
        assert_refused(b("get", "title", session="b1"), "browser_paused")
        # The pause is A's: B's detach and close of the lease there are refused by A, and
        # nothing of the session's is changed here (its attachment stays).
        assert_refused(b("detach", session="b1"), "browser_paused")
        assert fleet.rows("SELECT profile FROM attachments WHERE session='b1'") == [(pid,)]
        assert_refused(b("close", "--profile", pid, session="b1"), "browser_paused")
        press_hand_back(viewer)
        wait_for(lambda: b("get", "title", session="b1").code == 0, what="B served again")


def test_the_fence_at_a_applies_to_bs_verbs(postgres: PgServer, tmp_path: Path, demo: str) -> None:
    with linked_fleet(postgres, tmp_path, secret=SECRET) as fleet:
        a, b = fleet["a"], fleet["b"]
        a.start()
        pid = _work_on_a(a, demo, "--allowed-domains", "127.0.0.1")
        b.ok("use", pid, session="b1")
        outside = demo.replace("127.0.0.1", "localhost")
        assert_refused(b("open", f"{outside}/", session="b1"), "domain_refused")
        rows = a.ok("audit", "--last", "200")["audit"]
        refused = [r for r in rows if r["actor"] == f"fleet:{b.keeper_id()}/b1" and not r["ok"]]
        assert [r["code"] for r in refused] == ["domain_refused"]  # judged at A


def test_without_the_secret_b_refuses_fleet_link_refused_naming_where(
    postgres: PgServer, tmp_path: Path, demo: str
) -> None:
    secrets_dir = tmp_path / "secret"
    secrets_dir.mkdir()
    member_env = {
        "a": {
            "BAY_FLEET_LISTEN": f"127.0.0.1:{free_port()}",
            "BAY_FLEET_SECRET_FILE": str(secret_file(secrets_dir)),
        }
    }
    with keeper_fleet(postgres, tmp_path, 2, member_env=member_env, start=False) as fleet:
        a, b = fleet["a"], fleet["b"]
        a.start()
        pid = _work_on_a(a, demo)
        b.ok("use", pid, session="b1")
        frame = assert_refused(b("open", f"{demo}/", session="b1"), "fleet_link_refused")
        assert "host-a" in frame["message"]
        assert "BAY_FLEET_SECRET_FILE" in frame["way_out"]


def test_a_forwarded_verb_stays_within_the_scope_its_keeper_sends(linked: Linked) -> None:
    """The origin keeper sends its session socket's grant (the profiles it may use); the
    keeper that runs the browser confines the request to them: a profile outside them is
    refused profile_not_granted there, whatever the frame names."""
    work = str(linked.bay.ok("new", "scoped-work", session=None)["id"])
    other = str(linked.bay.ok("new", "scoped-other", session=None)["id"])
    linked.bay.ok("use", work, session="g1")  # (as its keeper attached it: A reads that too)

    async def go() -> list[dict[str, Any] | None]:
        stream = await link.connect_peer(linked.address, SECRET.encode(), OTHER, linked.id)
        await stream.send(protocol.encode(protocol.hello("fleet")))
        assert await read_frame(stream) is not None
        answers = []
        for n, scope in enumerate(([other], [work])):
            frame = {
                "id": n,
                "verb": "tab",
                "args": {"action": "list"},
                "session": {"id": "g1", "origin": "socket"},
                "profile": work,
                "scope": scope,
                "actor": {"id": "someone-else", "origin": "flag"},  # dropped: not vouched
            }
            await stream.send(protocol.encode(frame))
            answers.append(await read_frame(stream))
        return answers

    outside, inside = in_thread(go)
    assert outside is not None
    assert_refused(outside, "profile_not_granted")
    assert inside is not None
    assert inside["ok"], inside
    assert inside["session"]["id"] == f"g1@{OTHER}"  # namespaced by its origin keeper


def _forward(a: Linked, frames: list[dict[str, Any]]) -> list[dict[str, Any] | None]:
    """``frames`` sent to keeper A over a proven link of the test's own (as keeper OTHER,
    holding the fleet's secret): A's answers, in order."""

    async def go() -> list[dict[str, Any] | None]:
        stream = await link.connect_peer(a.address, SECRET.encode(), OTHER, a.id)
        await stream.send(protocol.encode(protocol.hello("fleet")))
        assert await read_frame(stream) is not None
        answers = []
        for frame in frames:
            await stream.send(protocol.encode(frame))
            answers.append(await read_frame(stream))
        await stream.aclose()
        return answers

    return in_thread(go)


def _tab_list(n: int, session: str, profile: str, group: str | None = None) -> dict[str, Any]:
    frame: dict[str, Any] = {
        "id": n,
        "verb": "tab",
        "args": {"action": "list"},
        "session": {"id": session, "origin": "socket"},
        "profile": profile,
        "scope": None,
    }
    if group is not None:
        frame["group"] = group
    return frame


def test_a_peer_cannot_act_for_a_session_past_anothers_exclusive_hold(linked: Linked) -> None:
    """Attack: a peer holding the secret forwards a verb for session x (attached to the
    profile) while session h holds it exclusively. Only the origin keeper judged holds, so
    A ran whatever a peer forwarded; now A reads the hold itself and refuses profile_busy
    naming the holder — as the origin keeper would. The holder's own group still acts."""
    pid = str(linked.bay.ok("new", "held-work", session=None)["id"])
    linked.bay.ok("use", pid, session="x")
    linked.bay.ok("use", pid, "--exclusive", session="h")
    busy, own_group, holder = _forward(
        linked,
        [
            _tab_list(1, "x", pid),
            _tab_list(2, "x", pid, group="h"),  # its keeper says x is of the holder's group
            _tab_list(3, "h", pid),
        ],
    )
    assert busy is not None
    refused = assert_refused(busy, "profile_busy")
    assert refused["data"]["holder"] == "h"
    assert own_group is not None
    assert own_group["ok"], own_group
    assert holder is not None
    assert holder["ok"], holder
    assert holder["session"]["id"] == f"h@{OTHER}"
    linked.bay.ok("detach", session="h")
    (free,) = _forward(linked, [_tab_list(4, "x", pid)])
    assert free is not None
    assert free["ok"], free  # the hold is gone: x acts again


def test_a_peer_cannot_act_for_a_session_not_attached_to_the_profile(linked: Linked) -> None:
    """Attack: a peer forwards a verb naming a profile its session never attached (nor has
    as its last-used or its group's default): A, which ran it, refuses profile_unknown."""
    pid = str(linked.bay.ok("new", "unattached-work", session=None)["id"])
    (unknown,) = _forward(linked, [_tab_list(1, "stranger", pid)])
    assert unknown is not None
    refused = assert_refused(unknown, "profile_unknown")
    assert "stranger" in refused["message"]
    assert "bay use" in refused["way_out"]


def test_an_owner_sharing_profile_is_reachable_over_the_link_by_its_owner_only(
    linked: Linked,
) -> None:
    """A profile whose sharing is ``owner`` is the owner's, on every keeper's owner channel
    (one registry): a peer forwarding for its owner's caller reaches it; one forwarding for
    an agent (a session group) is refused profile_not_granted, as a session socket is. (It
    was unreachable from every other keeper: A took each forwarded request for an agent's.)"""
    pid = str(linked.bay.ok("new", "owners-own", "--sharing", "owner", session=None)["id"])
    linked.bay.ok("use", pid, session="o1")
    frames = [dict(_tab_list(n, "o1", pid), owner=owner) for n, owner in enumerate(OWNERS)]
    owners, agents, unsaid = _forward(linked, frames)
    assert owners is not None
    assert owners["ok"], owners
    for refused in (agents, unsaid):
        assert refused is not None
        frame = assert_refused(refused, "profile_not_granted")
        assert f"on keeper {OTHER}" in frame["way_out"]  # the grant is the origin keeper's
        assert "--socket fleet:" not in frame["way_out"]  # (it named a socket nobody has)


def test_a_forwarded_group_or_owner_that_is_no_name_is_a_bad_frame(linked: Linked) -> None:
    pid = str(linked.bay.ok("new", "named-work", session=None)["id"])
    linked.bay.ok("use", pid, session="n1")
    bad_group, bad_owner = _forward(
        linked,
        [_tab_list(1, "n1", pid, group="no such group!"), dict(_tab_list(2, "n1", pid), owner=7)],
    )
    for answer in (bad_group, bad_owner):
        assert answer is not None
        assert_refused(answer, "bad_frame")


#: Who the peer says the caller is: the owner, an agent's session group, nobody.
OWNERS = ("owner", "group:o1", None)


def test_bs_owner_uses_an_owner_sharing_profile_whose_browser_runs_on_a(
    postgres: PgServer, tmp_path: Path, demo: str
) -> None:
    with linked_fleet(postgres, tmp_path, secret=SECRET) as fleet:
        a, b = fleet["a"], fleet["b"]
        a.start()
        pid = _work_on_a(a, demo, "--sharing", "owner")
        b.ok("use", pid, session="b1")
        r = b("get", "url", session="b1")
        assert r.code == 0, r  # before: profile_not_granted at A
        assert r.frame["profile"]["host"] == "host-a"
        assert demo not in str(r.data)  # b1's own tab (none yet), never A's


UPLOAD_HTML = """<!doctype html><title>Upload</title><input id=one type=file>
<pre id=out>nothing yet</pre><script>
document.getElementById('one').onchange = async (e) => {
  const f = e.target.files[0];
  document.getElementById('out').textContent = f.name + ':' + (await f.text());
};</script>"""


def test_files_travel_through_the_link_both_ways(postgres: PgServer, tmp_path: Path) -> None:
    """B's caller's file goes to A in put frames (upload), A's answered file comes back in
    get frames (screenshot): no keeper opens a path the caller named."""
    cv = tmp_path / "cv.txt"
    cv.write_text("Ada, from B's caller")
    shot = tmp_path / "out" / "shot.png"
    shot.parent.mkdir()
    with (
        serve_pages({"/upload.html": UPLOAD_HTML}) as site,
        linked_fleet(postgres, tmp_path, secret=SECRET) as fleet,
    ):
        a, b = fleet["a"], fleet["b"]
        a.start()
        pid = _work_on_a(a, site)
        b.ok("use", pid, session="b1")
        b.ok("open", f"{site}/upload.html", session="b1")
        b.ok("upload", "#one", str(cv), session="b1")
        wait_for(
            lambda: b.ok("get", "text", "#out", session="b1")["value"] != "nothing yet",
            what="the page to read the file",
        )
        assert b.ok("get", "text", "#out", session="b1")["value"] == "cv.txt:Ada, from B's caller"
        b.ok("screenshot", str(shot), session="b1")
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert not (a.home / "out").exists()


def test_a_session_socket_agent_on_b_is_confined_to_its_grant_at_a(
    postgres: PgServer, tmp_path: Path, demo: str
) -> None:
    """B sends its agent's grant; A runs the agent's verb within it (and the agent's actor
    is its origin session's). A grant without the profile: refused before anything is sent."""
    with linked_fleet(postgres, tmp_path, secret=SECRET) as fleet:
        a, b = fleet["a"], fleet["b"]
        a.start()
        pid = _work_on_a(a, demo)
        b.start()
        sockets = short_home("lg")
        granted, bare = sockets / "g1.sock", sockets / "g2.sock"
        b.ok("session", "grant", "g1", "--socket", str(granted), "--profile", pid, session=None)
        b.ok("session", "grant", "g2", "--socket", str(bare), session=None)
        on_g1, on_g2 = {"BAY_SOCKET": str(granted)}, {"BAY_SOCKET": str(bare)}
        b.ok("use", pid, session=None, env=on_g1)
        r = b("open", f"{demo}/?g1", session=None, env=on_g1)
        assert r.code == 0, r
        assert r.frame["profile"]["host"] == "host-a"
        assert f"fleet:{b.keeper_id()}/g1" in {
            row["actor"] for row in a.ok("audit", "--last", "200")["audit"]
        }
        assert_refused(
            b("open", f"{demo}/?g2", "--profile", pid, session=None, env=on_g2),
            "profile_not_granted",
        )
        assert "?g2" not in str(a.ok("audit", "--last", "200"))  # nothing reached A


def test_a_placement_b_kept_is_placed_again_when_its_keeper_stopped(
    postgres: PgServer, tmp_path: Path, demo: str
) -> None:
    """B keeps where a profile's browser runs for a third of the TTL (no registry reads per
    forwarded verb). A stops meanwhile (its claim released, shared data): B's next verb
    does not answer the kept placement's failure (A's link is gone) — it places the
    profile again, once, and serves it here."""
    shared = tmp_path / "shared"
    shared.mkdir()
    secrets_dir = tmp_path / "secret"
    secrets_dir.mkdir()
    path = secret_file(secrets_dir)
    member_env = link_env("ab", BAY_FLEET_DATA=str(shared))
    with keeper_fleet(
        postgres,
        tmp_path,
        2,
        ttl=60.0,  # the placement is kept 20 s: longer than A's stop
        env={"BAY_FLEET_SECRET_FILE": str(path)},
        member_env=member_env,
        start=False,
    ) as fleet:
        a, b = fleet["a"], fleet["b"]
        a.start()
        pid = _work_on_a(a, demo)
        b.ok("use", pid, session="b1")
        r = b("get", "url", session="b1")
        assert r.code == 0, r
        assert r.frame["profile"]["host"] == "host-a"  # forwarded, its placement kept
        a.stop()
        r = b("open", f"{demo}/", session="b1")
        assert r.code == 0, r  # placed again: not fleet_link_refused from the kept one
        assert r.frame["profile"].get("host") != "host-a"
        (claim,) = fleet.rows("SELECT keeper_id, released_at FROM profile_claims")
        assert claim == (b.keeper_id(), None)


class IdleFlood:
    """An attacker that holds ``n`` TCP connections to a link open from ``source`` (a
    loopback address of its own), sending nothing, and (``reopen``) opens another whenever
    the keeper hangs one up — what a peer without the secret can do to the
    pre-authentication slots."""

    def __init__(self, address: str, source: str, n: int, reopen: bool = True):
        host, port = address.rsplit(":", 1)
        self.target = (host, int(port))
        self.source = source
        self.n = n
        self.reopen = reopen
        self.opened = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> IdleFlood:
        self._thread.start()
        wait_for(lambda: self.opened >= self.n, what="the idle connections open")
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _open(self) -> socket.socket:
        s = socket.socket()
        s.bind((self.source, 0))
        s.connect(self.target)
        s.setblocking(False)
        self.opened += 1
        return s

    def _run(self) -> None:
        held = [self._open() for _ in range(self.n)]
        try:
            while not self._stop.is_set():
                readable, _w, _x = select.select(held, [], [], 0.05)
                for s in readable:  # hung up on (or a TLS alert): another in its place
                    with contextlib.suppress(OSError):
                        if s.recv(4096):
                            continue
                    s.close()
                    held.remove(s)
                    if self.reopen:
                        time.sleep(0.01)
                        held.append(self._open())
        finally:
            for s in held:
                s.close()


def test_idle_unproven_connections_cannot_keep_a_member_from_linking(
    postgres: PgServer, tmp_path: Path, demo: str
) -> None:
    """128 idle connections from another address (the 64 connections the link served at
    once and as many in its listen backlog, each held up to the 5 s handshake deadline and
    opened again when cut), then B's first forwarded verb: served by A. Before, every slot
    and the backlog ahead of B were the attacker's: B's link never got its handshake."""
    with linked_fleet(postgres, tmp_path, secret=SECRET) as fleet:
        a, b = fleet["a"], fleet["b"]
        a.start()
        pid = _work_on_a(a, demo)
        with IdleFlood(a.env["BAY_FLEET_LISTEN"], "127.0.0.2", 128) as flood:
            b.ok("use", pid, session="b1")
            r = b("get", "url", session="b1")
            assert r.code == 0, r
            assert r.frame["profile"]["host"] == "host-a"
            assert flood.opened > 128  # the keeper hung up on some, and they came back
        # From the member's own address, 80 idle ones: the newest take the oldest's
        # places, and B's new connection one of theirs.
        b.stop()  # B's proven connections go with it: its next verb links anew
        with IdleFlood(a.env["BAY_FLEET_LISTEN"], "127.0.0.1", 80, reopen=False):
            r = b("get", "url", session="b1")
            assert r.code == 0, r
        assert any("went to a newer connection" in line for line in _refusals(a))


def _refusals(member: Member) -> list[str]:
    return [line for line in keeper_log(member).splitlines() if "fleet_link_refused" in line]


def test_a_profile_b_reaches_through_its_instance_default_is_served_by_a_and_rejudged(
    postgres: PgServer, tmp_path: Path, demo: str
) -> None:
    """B's BAY_DEFAULT_PROFILE names a profile whose browser runs on A; session b1 on B has
    nothing attached. B's verb travels to A as what its standing is — B's instance rung —
    and A serves it (before, A refused profile_unknown: it found no attachment); A still
    judges the holds itself: another group's exclusive hold refuses it profile_busy."""
    with linked_fleet(postgres, tmp_path, secret=SECRET) as fleet:
        a, b = fleet["a"], fleet["b"]
        a.start()
        pid = _work_on_a(a, demo)
        b.env["BAY_DEFAULT_PROFILE"] = pid
        r = b("get", "url", session="b1")
        assert r.code == 0, r
        assert r.frame["profile"]["host"] == "host-a"
        assert r.frame["profile"]["chosen"] == "instance"
        assert demo not in str(r.data)  # b1's own tab at A, not A's session's
        assert fleet.rows("SELECT profile FROM attachments WHERE session='b1'") == []
        rows = a.ok("audit", "--last", "200")["audit"]
        ran = [r for r in rows if r["actor"] == f"fleet:{b.keeper_id()}/b1"]
        assert [(r["verb"], r["ok"]) for r in ran] == [("get", True)]  # run and audited at A


def test_a_peers_instance_standing_is_still_held_to_the_holds_at_a(linked: Linked) -> None:
    """A peer that says its session reached the profile through its instance default
    (``standing: instance``, B's own setting, which A cannot read) gets no further past a
    hold than an attached session: another group's exclusive hold is refused profile_busy
    at A; a standing that is no known rung is a bad frame."""
    pid = str(linked.bay.ok("new", "instance-work", session=None)["id"])
    frame = dict(_tab_list(1, "y", pid), standing="instance")
    (served,) = _forward(linked, [frame])
    assert served is not None
    assert served["ok"], served
    linked.bay.ok("use", pid, "--exclusive", session="h2")
    busy, bad = _forward(
        linked, [dict(frame, id=2), dict(_tab_list(3, "y", pid), standing="attached")]
    )
    assert busy is not None
    assert assert_refused(busy, "profile_busy")["data"]["holder"] == "h2"
    assert bad is not None
    assert "standing" in assert_refused(bad, "bad_frame")["message"]
    linked.bay.ok("detach", session="h2")


def test_a_part_of_another_keepers_verb_is_a_close_only(linked: Linked) -> None:
    """A frame marked ``part`` (a whole-session close's lease here, audited by its keeper
    alone) is refused bad_frame on any verb but ``close``: a peer cannot run another verb
    here without its row."""
    pid = str(linked.bay.ok("new", "part-work", session=None)["id"])
    linked.bay.ok("use", pid, session="z")
    (bad,) = _forward(linked, [dict(_tab_list(1, "z", pid), part=True)])
    assert bad is not None
    assert "part" in assert_refused(bad, "bad_frame")["message"]


def test_a_change_made_before_the_frame_arrives_refuses_the_forwarded_verb(
    linked: Linked,
) -> None:
    """A's re-check is read after the frame arrived: a detach, and then another group's
    exclusive hold, made in the registry between two frames of one link connection each
    refuse the next verb — and a frame naming the profile by its label is judged by a read
    of the profile it resolves to."""
    pid = str(linked.bay.ok("new", "early-work", session=None)["id"])
    linked.bay.ok("use", pid, session="e1")

    async def go() -> list[dict[str, Any] | None]:
        stream = await link.connect_peer(linked.address, SECRET.encode(), OTHER, linked.id)
        await stream.send(protocol.encode(protocol.hello("fleet")))
        assert await read_frame(stream) is not None
        answers = []
        changes = [
            lambda: linked.bay.ok("detach", session="e1"),
            lambda: linked.bay.ok("use", pid, session="e1"),
            lambda: linked.bay.ok("use", pid, "--exclusive", session="e-holder"),
            lambda: linked.bay.ok("detach", session="e-holder"),
        ]
        frames = [_tab_list(n, "e1", pid) for n in range(4)]
        frames.append(dict(_tab_list(4, "e1", "early-work"), scope=[pid]))  # by its label
        for n, frame in enumerate(frames):
            await stream.send(protocol.encode(frame))
            answers.append(await read_frame(stream))
            if n < len(changes):
                await anyio.to_thread.run_sync(changes[n])
        await stream.aclose()
        return answers

    before, detached, attached, held, by_label = in_thread(go)
    assert before is not None
    assert before["ok"], before
    assert detached is not None
    assert "e1" in assert_refused(detached, "profile_unknown")["message"]
    assert attached is not None
    assert attached["ok"], attached
    assert held is not None
    assert assert_refused(held, "profile_busy")["data"]["holder"] == "e-holder"
    assert by_label is not None
    assert by_label["ok"], by_label


def test_a_registry_error_in_the_recheck_refuses_the_forwarded_verb(
    linked: Linked,
) -> None:
    """The re-check's read fails (the registry's holds table is gone from under the keeper):
    the forwarded verb is refused internal_error, as a failed read refused it when it was
    read after the choice; it does not act on what it could not read. Put back, it acts."""
    pid = str(linked.bay.ok("new", "broken-work", session=None)["id"])
    linked.bay.ok("use", pid, session="e2")
    (served,) = _forward(linked, [_tab_list(1, "e2", pid)])
    assert served is not None
    assert served["ok"], served
    (registry,) = linked.bay.home.rglob("registry.sqlite3")
    with sqlite3.connect(registry) as db:
        db.execute("ALTER TABLE holds RENAME TO holds_away")
    try:
        (failed,) = _forward(linked, [_tab_list(2, "e2", pid)])
    finally:
        with sqlite3.connect(registry) as db:
            db.execute("ALTER TABLE holds_away RENAME TO holds")
    assert failed is not None
    assert assert_refused(failed, "internal_error")["data"]["reason"] == "OperationalError"
    (again,) = _forward(linked, [_tab_list(3, "e2", pid)])
    assert again is not None
    assert again["ok"], again


def test_a_change_made_while_the_verb_waits_its_sessions_turn_refuses_it(
    linked: Linked,
) -> None:
    """Attack: a peer sends a second verb for session w while w's first one still runs at A
    (holding w's lock: its browser starts, then it waits 3 s), and w is detached while the
    second waits its turn: A reads the standing once the session's turn is the verb's, so
    refused profile_unknown (a read made when the frame arrived would have said "may")."""
    pid = str(linked.bay.ok("new", "turn-work", session=None)["id"])
    linked.bay.ok("use", pid, session="w")

    async def go() -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        streams = []
        for _ in range(2):
            stream = await link.connect_peer(linked.address, SECRET.encode(), OTHER, linked.id)
            await stream.send(protocol.encode(protocol.hello("fleet")))
            assert await read_frame(stream) is not None
            streams.append(stream)
        first, second = streams
        slow = dict(_tab_list(1, "w", pid), verb="wait", args={"what": "3000"}, timeout=60)
        await first.send(protocol.encode(slow))
        await anyio.sleep(0.5)  # (sequencing only: the first holds w's lock by now)
        await second.send(protocol.encode(_tab_list(2, "w", pid)))
        await anyio.sleep(0.3)  # (sequencing only: the second is waiting its turn)
        await anyio.to_thread.run_sync(lambda: linked.bay.ok("detach", session="w"))
        answers = (await read_frame(first), await read_frame(second))
        for stream in streams:
            await stream.aclose()
        return answers

    slow, waited = in_thread(go)
    assert slow is not None
    assert slow["ok"], slow
    assert waited is not None
    assert "w" in assert_refused(waited, "profile_unknown")["message"]
