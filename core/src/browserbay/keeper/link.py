"""The fleet link (issue 22, item 3): keeper to keeper, so that a session on keeper B acts on
a profile whose browser runs on keeper A.

**Never plain.** A keeper listens on ``BAY_FLEET_LISTEN=HOST:PORT`` (off when unset) with TLS,
under a self-signed certificate it makes once (:mod:`browserbay.selfsigned`, kept in
``state/fleet-tls``). TLS alone proves nothing about the peer (nobody checks the certificate
against a CA), so both sides then prove that they hold ``BAY_FLEET_SECRET`` (read by
:func:`browserbay.keys.fleet_secret`: the 0600 file ``BAY_FLEET_SECRET_FILE`` names, or the
sealed variable) by an HMAC-SHA256 over:

- the server certificate's SHA-256 (tls-server-end-point: each side uses the certificate its
  own TLS saw, so a man in the middle with a certificate of its own makes the two sides
  compute different proofs, and cannot compute either without the secret);
- both keepers' ids (a proof for one pair is no proof for another);
- a fresh nonce from each side (a recorded handshake proves nothing on a new connection);
- the role (``server``/``client``: a proof is never reflected back as the other's).

The server proves first; the client proves only once the server's proof holds. Before both
proofs hold, a peer gets the TLS handshake and two lines of at most :data:`HANDSHAKE_MAX`
bytes, all within :data:`HANDSHAKE_TIMEOUT` seconds of its connect, then is hung up on and
logged (``fleet_link_refused``, never the secret); at most :data:`PREAUTH_SLOTS` wait at once
(:data:`PREAUTH_PER_ADDRESS` from one address), a newer one taking the oldest's place.
After it, the connection is served as the keeper's socket is (``browserbay.protocol``
frames, the daemon's frame size and time bounds) on a
:class:`~browserbay.keeper.channels.Channel` that names the origin keeper: see
:func:`forwarded` for what such a request may do.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import ipaddress
import logging
import secrets
import socket
import ssl
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from anyio.streams.tls import TLSAttribute

from browserbay import identity, keys, protocol, verbs
from browserbay.keeper.channels import Channel, Grant, LinkPeer
from browserbay.keeper.fleet import KEEPER_ID
from browserbay.refusals import Refusal
from browserbay.selfsigned import ensure_self_signed, fingerprint

log = logging.getLogger("browserbay.keeper")

LISTEN_ENV = "BAY_FLEET_LISTEN"
SECRET_FILE_ENV = keys.FLEET_SECRET_FILE_VAR
#: Seconds from a peer's connect to its proven handshake (TLS and both proofs).
HANDSHAKE_TIMEOUT = 5.0
#: Bytes of one handshake line (a JSON object of two ids, a nonce and a proof).
HANDSHAKE_MAX = 1024
#: Proven link connections served at once (a member keeps up to 8 to each keeper).
LINK_CONNECTIONS = 64
#: Connections not proven yet, at once: when they are all taken a new one takes the
#: oldest's place (hung up on), so idle connections that never prove anything cannot keep
#: a member from linking — it proves itself in milliseconds, they wait for the deadline.
PREAUTH_SLOTS = 32
#: Of them, from one address at once: one address's next connection takes the place of
#: that address's own oldest, never another address's.
PREAUTH_PER_ADDRESS = 8
_VERSION = 1
_LABEL = b"browserbay fleet link 1"


class LinkRefused(Exception):
    """A handshake that did not prove the peer (the reason names no secret)."""


def link_refused(link: str, reason: str, fix: str) -> Refusal:
    return Refusal("fleet_link_refused", link=link, reason=reason, fix=fix)


# -- configuration ------------------------------------------------------------------------


@dataclass(frozen=True)
class LinkConfig:
    """The link as this keeper runs it: the secret (never shown: not in its repr), and the
    address it listens on (None: it only forwards, nobody connects to it)."""

    secret: bytes = field(repr=False)
    host: str | None
    port: int
    tls_dir: Path

    @property
    def listen(self) -> str | None:
        return None if self.host is None else f"{self.host}:{self.port}"


def parse_listen(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` too), HOST an IP address or ``localhost``."""
    host, sep, port = value.strip().rpartition(":")
    host = host.strip("[]")
    if host == "localhost":
        host = "127.0.0.1"
    try:
        ipaddress.ip_address(host)
        number = int(port)
    except ValueError:
        number = -1
    if not sep or not 0 <= number <= 65535:
        raise link_refused(
            f"{LISTEN_ENV}={value!r}",
            "it is not HOST:PORT with HOST an IP address of this machine",
            f"set {LISTEN_ENV} to HOST:PORT (127.0.0.1:7441), or unset it",
        )
    return host, number


def link_config(listen: str, state: Path) -> LinkConfig | None:
    """The keeper's link from its settings; None without a secret and without a listen
    address (no fleet link at all). Blocking (the secret may be a file). A listen address
    without a secret, or a secret that cannot be used (:func:`browserbay.keys.fleet_secret`:
    a file others may read, too short), is refused: the link is never plain."""
    try:
        secret = keys.fleet_secret()
    except keys.FleetSecretError as exc:
        raise link_refused(
            f"secret ({SECRET_FILE_ENV})",
            str(exc),
            f"fix {SECRET_FILE_ENV} as said, or unset it and {LISTEN_ENV}",
        ) from None
    if secret is None:
        if listen:
            raise link_refused(
                f"{LISTEN_ENV}={listen}",
                f"{SECRET_FILE_ENV} is not set, and the link is never plain",
                f"write a secret (openssl rand -hex 32) into a 0600 file, set {SECRET_FILE_ENV} "
                f"to its path (the same secret on every keeper), or unset {LISTEN_ENV}",
            )
        return None
    host, port = parse_listen(listen) if listen else (None, 0)
    return LinkConfig(secret.reveal().encode(), host, port, state / "fleet-tls")


# -- TLS ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ServerTls:
    context: ssl.SSLContext
    digest: bytes
    """SHA-256 of the certificate's DER: what both proofs are bound to."""
    fingerprint: str


def server_tls(config: LinkConfig) -> ServerTls:
    """The listener's TLS context over its self-signed certificate (made once). Blocking."""
    cert, key = config.tls_dir / "link.pem", config.tls_dir / "link.key"
    names = [config.host] if config.host else []
    try:
        ensure_self_signed(cert, key, names, "browserbay fleet link")
    except OSError as exc:
        raise link_refused(
            f"{LISTEN_ENV}={config.listen}",
            f"its certificate cannot be written in {config.tls_dir}: {exc.strerror or exc}",
            f"make {config.tls_dir.parent} writable by the keeper's user",
        ) from None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    context.load_cert_chain(str(cert), str(key))
    der = ssl.PEM_cert_to_DER_cert(cert.read_text())
    return ServerTls(context, hashlib.sha256(der).digest(), fingerprint(der))


def client_tls() -> ssl.SSLContext:
    """TLS to another keeper. The certificate is not checked against a CA (each keeper's is
    self-signed): the proofs are bound to it instead (see the module's docstring)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


#: The most a receive asks of the stream (asyncio's own default reader limit).
READ_CHUNK = 65536


class LinkClosed(anyio.BrokenResourceError):
    """A send on a link connection the peer had closed already: nothing of it was written."""


class LinkStream(anyio.abc.ByteStream):
    """A link connection: TLS by asyncio's own transport, which runs the record layer in
    the event loop's protocol callbacks. anyio's ``TLSStream`` runs it in the awaiting task,
    a loop turn more per record: a 700-byte frame's round trip on loopback took 0.46-0.66 ms
    through it and 0.24-0.25 ms through this (2026-12-03, load 2.4-2.9), and a forwarded
    verb makes one. The keeper runs on anyio's asyncio backend; the link's callers see an
    anyio byte stream as before (its errors as anyio's)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._closed = False

    @classmethod
    async def connect(cls, host: str, port: int, context: ssl.SSLContext) -> LinkStream:
        reader, writer = await asyncio.open_connection(
            host, port, ssl=context, server_hostname="", limit=READ_CHUNK
        )
        return cls(reader, writer)

    @classmethod
    async def accept(cls, sock: socket.socket, context: ssl.SSLContext) -> LinkStream:
        """The server's side of an accepted connection (the caller bounds the time)."""
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=READ_CHUNK, loop=loop)
        protocol_ = asyncio.StreamReaderProtocol(reader, loop=loop)
        transport, _ = await loop.connect_accepted_socket(
            lambda: protocol_, sock=sock, ssl=context, ssl_handshake_timeout=HANDSHAKE_TIMEOUT
        )
        return cls(reader, asyncio.StreamWriter(transport, protocol_, reader, loop))

    async def receive(self, max_bytes: int = READ_CHUNK) -> bytes:
        if self._closed:
            raise anyio.ClosedResourceError
        try:
            data = await self._reader.read(max_bytes)
        except (OSError, ssl.SSLError) as exc:
            raise anyio.BrokenResourceError from exc
        if not data:
            raise anyio.EndOfStream
        return data

    async def send(self, item: bytes) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        if self._writer.is_closing():
            raise LinkClosed
        try:
            self._writer.write(item)
            await self._writer.drain()
        except (OSError, ssl.SSLError) as exc:
            raise anyio.BrokenResourceError from exc

    async def send_eof(self) -> None:
        raise NotImplementedError("a TLS link does not half-close")

    async def aclose(self) -> None:
        """Close: TLS's close_notify if the peer takes it within half a second, else the
        connection is dropped (never a wait on a peer that reads nothing)."""
        if self._closed:
            return
        self._closed = True
        self._writer.close()
        try:
            with anyio.move_on_after(0.5), contextlib.suppress(Exception):
                await self._writer.wait_closed()
        finally:  # cancelled while waiting too: the descriptor is let go of
            self._writer.transport.abort()

    def abort(self) -> None:
        """Drop the connection at once (no close_notify): the event loop stops watching
        its descriptor now, so closing the socket after it can never leave the loop a stale
        entry for a number the next connection may get."""
        self._closed = True
        self._writer.transport.abort()

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        transport = self._writer.transport

        def der() -> bytes | None:
            tls = transport.get_extra_info("ssl_object")
            return tls.getpeercert(binary_form=True) if tls is not None else None

        return {
            TLSAttribute.peer_certificate_binary: der,
            anyio.abc.SocketAttribute.remote_address: lambda: transport.get_extra_info("peername"),
        }


# -- the handshake ------------------------------------------------------------------------


def proof(
    secret: bytes,
    role: str,
    cert_digest: bytes,
    server: str,
    client: str,
    client_nonce: str,
    server_nonce: str,
) -> str:
    """The HMAC-SHA256 one side sends (``role``: ``server`` or ``client``)."""
    message = b"\n".join(
        (
            _LABEL,
            role.encode(),
            cert_digest.hex().encode(),
            server.encode(),
            client.encode(),
            client_nonce.encode(),
            server_nonce.encode(),
        )
    )
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def _nonce() -> str:
    return secrets.token_hex(32)


def _is_nonce(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and not value.strip("0123456789abcdef")


def _is_proof(value: object) -> bool:
    return _is_nonce(value)  # 32 bytes of hex, as a nonce


def _is_keeper(value: str) -> bool:
    return KEEPER_ID.fullmatch(value) is not None


async def _line(stream: anyio.abc.ByteStream, limit: int) -> dict[str, Any]:
    """One handshake line (the peer sends nothing past it before it is answered)."""
    buf = bytearray()
    while b"\n" not in buf:
        if len(buf) > limit:
            raise LinkRefused(f"a handshake line longer than {limit} bytes")
        try:
            buf += await stream.receive(limit + 1)
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            raise LinkRefused("the peer hung up during the handshake") from None
    line, _, rest = bytes(buf).partition(b"\n")
    if rest or len(line) > limit:
        raise LinkRefused("the peer sent more than the handshake before it was answered")
    try:
        frame = protocol.decode(line)
    except ValueError as exc:
        raise LinkRefused(f"a handshake line that is not a frame ({exc})") from None
    body = frame.get("link")
    if not isinstance(body, dict):
        raise LinkRefused("a frame that is not the link's handshake")
    return body


async def _say(stream: anyio.abc.ByteStream, body: dict[str, Any]) -> None:
    await stream.send(protocol.encode({"link": body}))


async def accept_peer(
    tcp: socket.socket, tls: ServerTls, secret: bytes, me: str
) -> tuple[LinkStream, str]:
    """The server's side of an accepted connection: TLS, the client's hello, our proof, the
    client's proof. Answers the proven stream and the origin keeper's id; raises
    :class:`LinkRefused` (a peer past TLS is told ``fleet_link_refused`` first). Under
    :data:`HANDSHAKE_TIMEOUT` (the caller's). The socket is the stream's from then on."""
    try:
        stream = await LinkStream.accept(tcp, tls.context)
    except (ssl.SSLError, OSError, anyio.BrokenResourceError, anyio.EndOfStream) as exc:
        raise LinkRefused(f"no TLS handshake ({type(exc).__name__})") from None
    try:
        hello = await _line(stream, HANDSHAKE_MAX)
        origin, client_nonce = hello.get("keeper"), hello.get("nonce")
        if (
            hello.get("v") != _VERSION
            or not isinstance(origin, str)
            or not _is_keeper(origin)
            or not isinstance(client_nonce, str)
            or not _is_nonce(client_nonce)
        ):
            raise LinkRefused("a hello without version 1, a keeper id and a nonce")
        if origin == me:
            raise LinkRefused("a peer that says it is this keeper")
        server_nonce = _nonce()
        ours = proof(secret, "server", tls.digest, me, origin, client_nonce, server_nonce)
        await _say(stream, {"keeper": me, "nonce": server_nonce, "proof": ours})
        answer = await _line(stream, HANDSHAKE_MAX)
        theirs = answer.get("proof")
        expected = proof(secret, "client", tls.digest, me, origin, client_nonce, server_nonce)
        if not _is_proof(theirs) or not hmac.compare_digest(str(theirs), expected):
            raise LinkRefused(
                f"keeper {origin}'s proof is wrong (another secret, a replayed handshake, or "
                "a man in the middle)"
            )
        await _say(stream, {"ok": True})
    except LinkRefused as exc:
        with contextlib.suppress(Exception), anyio.move_on_after(0.5):
            await stream.send(
                protocol.encode(link_refused("from a peer", str(exc), LINK_FIX).frame())
            )
        with contextlib.suppress(Exception):
            await stream.aclose()
        raise
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, ssl.SSLError, OSError):
        stream.abort()
        raise LinkRefused("the peer hung up during the handshake") from None
    except BaseException:  # the deadline, a newer connection's eviction: cancelled
        stream.abort()  # the transport lets go of the descriptor before it is closed
        raise
    return stream, origin


LINK_FIX = (
    f"give every keeper the same secret in {SECRET_FILE_ENV} (0600), and let it connect to "
    f"the address the other registered ({LISTEN_ENV}); bay keeper status lists the fleet"
)


async def connect_peer(
    address: str, secret: bytes, me: str, keeper: str, timeout: float = HANDSHAKE_TIMEOUT
) -> LinkStream:
    """The client's side, to ``keeper`` at ``address`` (``HOST:PORT``): answers the proven
    stream, or raises ``fleet_link_refused`` saying why (the server's proof is wrong: another
    secret or a man in the middle; the peer is another keeper than the registry says)."""
    link = f"to keeper {keeper} at {address}"
    host, port = parse_listen(address)
    try:
        with anyio.fail_after(timeout):
            stream = await LinkStream.connect(host, port, client_tls())
            try:
                der = stream.extra(TLSAttribute.peer_certificate_binary)  # noqa: S610 - anyio
                digest = hashlib.sha256(der or b"").digest()
                client_nonce = _nonce()
                await _say(stream, {"v": _VERSION, "keeper": me, "nonce": client_nonce})
                hello = await _line(stream, HANDSHAKE_MAX)
                server_nonce, theirs = hello.get("nonce"), hello.get("proof")
                if hello.get("keeper") != keeper:
                    raise LinkRefused(
                        f"the keeper there is {str(hello.get('keeper'))[:16]!r}, not {keeper}"
                    )
                if not isinstance(server_nonce, str) or not _is_nonce(server_nonce):
                    raise LinkRefused("its hello carries no nonce")
                if not _is_proof(theirs):
                    raise LinkRefused("its hello carries no proof")
                expected = proof(secret, "server", digest, keeper, me, client_nonce, server_nonce)
                if not hmac.compare_digest(str(theirs), expected):
                    raise LinkRefused(
                        "its proof is wrong (another secret, or a man in the middle with a "
                        "certificate of its own)"
                    )
                ours = proof(secret, "client", digest, keeper, me, client_nonce, server_nonce)
                await _say(stream, {"proof": ours})
                done = await _line(stream, HANDSHAKE_MAX)
                if done.get("ok") is not True:
                    raise LinkRefused("it did not take our proof (another secret?)")
            except BaseException:
                with contextlib.suppress(Exception):
                    await stream.aclose()
                raise
    except TimeoutError:
        raise link_refused(link, f"no proven handshake within {timeout:g}s", LINK_FIX) from None
    except LinkRefused as exc:
        raise link_refused(link, str(exc), LINK_FIX) from None
    except (OSError, ssl.SSLError, anyio.BrokenResourceError, anyio.EndOfStream) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise link_refused(link, f"it cannot be reached ({why})", LINK_FIX) from None
    return stream


# -- serving ------------------------------------------------------------------------------


class LinkServer:
    """``BAY_FLEET_LISTEN``: accepts peers, proves them, and hands each proven stream to
    ``serve`` with its :class:`Channel` (the daemon's connection code). An unproven peer is
    logged and hung up on."""

    def __init__(self, config: LinkConfig, me: str) -> None:
        self.config = config
        self.me = me
        self.tls: ServerTls | None = None
        self.refused = 0
        """Peers refused since the start (``bay keeper status`` may show it)."""

    async def run(
        self,
        serve: Callable[[anyio.abc.ByteStream, Channel], Awaitable[None]],
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        config = self.config
        assert config.host is not None
        self.tls = await anyio.to_thread.run_sync(server_tls, config)
        listening = _bound(config.host, config.port)
        listening.setblocking(False)
        proven = anyio.Semaphore(LINK_CONNECTIONS)
        #: The connections not proven yet, oldest first (each with its address), whose
        #: handshake a newer one may cut (:func:`_evictee`).
        waiting: dict[anyio.CancelScope, str] = {}
        log.info(
            "fleet link listening on %s (TLS certificate SHA-256 %s)",
            config.listen,
            self.tls.fingerprint,
        )
        task_status.started()

        def refused(peer: str, reason: str) -> None:
            self.refused += 1
            log.warning("fleet link: refused %s (fleet_link_refused): %s", peer, reason)

        async def one(tcp: socket.socket, where: tuple[Any, ...]) -> None:
            address, peer = str(where[0]), f"{where[0]}:{where[1]}"
            proved: tuple[anyio.abc.ByteStream, str] | None = None
            with anyio.CancelScope() as place:
                waiting[place] = address
                try:
                    with anyio.fail_after(HANDSHAKE_TIMEOUT):
                        proved = await accept_peer(tcp, tls, config.secret, self.me)
                except (LinkRefused, TimeoutError) as exc:
                    refused(
                        peer,
                        str(exc)
                        if isinstance(exc, LinkRefused)
                        else f"no proven handshake within {HANDSHAKE_TIMEOUT:g}s",
                    )
                finally:
                    waiting.pop(place, None)
            if place.cancelled_caught:
                refused(peer, "its unproven connection's place went to a newer connection")
            if proved is None:
                # No transport took it (TLS never began), or its transport was aborted
                # (accept_peer): closing the socket object then is safe either way.
                tcp.close()
                return
            stream, origin = proved
            try:
                proven.acquire_nowait()
            except anyio.WouldBlock:
                refused(peer, f"{LINK_CONNECTIONS} proven links are served already")
                with contextlib.suppress(Exception):
                    await stream.aclose()
                return
            try:
                log.info("fleet link: keeper %s connected from %s", origin, peer)
                await serve(stream, Channel(link=LinkPeer(origin)))
            finally:
                proven.release()

        tls = self.tls
        try:
            async with anyio.create_task_group() as tg:
                while True:
                    await anyio.wait_readable(listening)
                    try:
                        tcp, where = listening.accept()
                    except (BlockingIOError, InterruptedError):
                        continue  # another wake-up took it
                    except OSError:  # out of descriptors, a reset before accept: go on
                        await anyio.sleep(0.1)
                        continue
                    tcp.setblocking(False)
                    tcp.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    evictee = _evictee(waiting, str(where[0]))
                    if evictee is not None:
                        waiting.pop(evictee, None)
                        evictee.cancel()
                    tg.start_soon(one, tcp, where)
        finally:
            listening.close()


def _evictee(waiting: dict[anyio.CancelScope, str], address: str) -> anyio.CancelScope | None:
    """The unproven connection a new one from ``address`` takes the place of: that
    address's oldest when it has :data:`PREAUTH_PER_ADDRESS`, else the oldest of all when
    :data:`PREAUTH_SLOTS` are taken, else none."""
    own = [scope for scope, a in waiting.items() if a == address]
    if len(own) >= PREAUTH_PER_ADDRESS:
        return own[0]
    if len(waiting) >= PREAUTH_SLOTS:
        return next(iter(waiting))
    return None


def _bound(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(LINK_CONNECTIONS)
    except OSError:
        sock.close()
        raise
    return sock


# -- a forwarded request, where the browser runs ------------------------------------------


def namespaced(session: str, origin: str) -> str:
    """The id a session of keeper ``origin`` has on this keeper: its own id and its
    keeper's (``s1@kp-0a1b2c3d``), so it never is, nor sees the tabs of, a session of this
    keeper or of a third one. An id too long for both is replaced by its digest."""
    suffix = "@" + origin
    if len(session) + len(suffix) > 128:
        session = "h-" + hashlib.sha256(session.encode()).hexdigest()[:40]
    return session + suffix


def forwarded(frame: dict[str, Any], channel: Channel) -> tuple[dict[str, Any], Channel]:
    """A request that came over the link (``channel.link``: its origin keeper, proven),
    as this keeper runs it: on the origin session's namespaced id (:func:`namespaced`), with
    the profile it names, confined like a session socket to the profiles its scope names
    (its origin's grant when the agent there is on a session socket; else the one profile it
    forwards) — so :func:`~browserbay.keeper.channels.admit`, the owner-only conditions and
    the profile book enforce them here. A keeper verb never comes over the link. What the
    frame says of ``actor`` is dropped: the origin vouches for its session only (and its
    session's ``group``, shared by the fleet's holds: default the origin session's own id;
    and whose profiles are its caller's own, ``owner``: a profile whose sharing is ``owner``
    is reachable by its owner only, :meth:`ProfileBook.usable`).
    Whether that session may act on the profile now (its attachment, an exclusive hold) is
    read again here, from the registry (:meth:`LeaseChooser.forwarded_may`)."""
    peer = channel.link
    assert peer is not None
    name = frame.get("verb")
    verb = verbs.BY_NAME.get(name) if isinstance(name, str) else None
    if verb is not None and verb.scope == verbs.KEEPER:
        raise Refusal(
            "owner_only",
            what=f"{name} from keeper {peer.keeper}",
            command=f"bay {name} on this keeper's own machine",
        )
    session = frame.get("session")
    sid = session.get("id") if isinstance(session, dict) else None
    if not isinstance(sid, str) or not identity.is_session_id(sid):
        raise Refusal("bad_frame", reason=f"a session id is {identity.RULE}")
    profile = frame.get("profile")
    if not isinstance(profile, str) or not 0 < len(profile) <= 256:
        raise Refusal("bad_frame", reason="a forwarded verb names its profile")
    scope = frame.get("scope")
    if scope is None:
        profiles: tuple[str, ...] = (profile,)
    elif isinstance(scope, list) and all(isinstance(p, str) for p in scope) and len(scope) < 256:
        profiles = tuple(scope)
    else:
        raise Refusal("bad_frame", reason="scope must be a list of profile ids")
    owner = frame.get("owner")
    if owner is not None and (not isinstance(owner, str) or not 0 < len(owner) <= 256):
        raise Refusal("bad_frame", reason="owner must be an owner's name of 1-256 characters")
    group = frame.get("group")
    if group is None:
        group = sid  # a session's group is its own id unless its keeper says otherwise
    elif not isinstance(group, str) or not identity.is_session_id(group):
        raise Refusal("bad_frame", reason=f"group is {identity.RULE}")
    standing = frame.get("standing")
    if standing not in (None, "instance"):
        raise Refusal("bad_frame", reason="standing is 'instance' or absent")
    part = frame.get("part", False)
    if part is not False and (part is not True or name != "close"):
        raise Refusal("bad_frame", reason="part is true on a close only")
    clock = frame.get("clock")
    if clock is not None and (type(clock) is not int or clock < 0):
        raise Refusal("bad_frame", reason="clock is a whole number of 0 or more, or absent")
    here = namespaced(sid, peer.keeper)
    grant = Grant(here, Path(f"fleet:{peer.keeper}"), profiles)
    clean = {
        "verb": name,
        "args": frame.get("args", {}),
        "session": {"id": here, "origin": "socket"},
        "profile": profile,
        "timeout": frame.get("timeout", verbs.DEFAULT_TIMEOUT),
    }
    for key in ("id", "road", "progress"):
        if key in frame:
            clean[key] = frame[key]
    return clean, Channel(
        grant=grant, link=LinkPeer(peer.keeper, sid, group, owner, standing, part, clock)
    )
