"""Where the live view listens and how a browser reaches it: ``BAY_LIVE_BIND``,
``BAY_LIVE_PUBLIC_URL`` and TLS (``BAY_LIVE_TLS_CERT``/``BAY_LIVE_TLS_KEY`` or
``BAY_LIVE_TLS=self-signed``).

Read once, when the server starts (the first link). A bind that is not loopback without TLS
is refused ``no_tls``: a link, a credential cookie and every frame would cross the
network in clear. A certificate or key that cannot be loaded is refused
``tls_unreadable``. Nothing listens after a refusal.

The self-signed certificate (:mod:`browserbay.selfsigned`: an EC P-256 key, valid 90 days,
naming every host a link or a request may use), kept under the keeper's state (the key
0600 in a 0700 directory) and reused while it covers the names and has a week left, so a
browser's exception for it keeps holding across keeper restarts. Its SHA-256 fingerprint is
what a human compares with the browser's warning.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from browserbay.refusals import Refusal
from browserbay.selfsigned import ensure_self_signed, fingerprint

BIND_ENV = "BAY_LIVE_BIND"
PUBLIC_URL_ENV = "BAY_LIVE_PUBLIC_URL"
TLS_ENV = "BAY_LIVE_TLS"
CERT_ENV = "BAY_LIVE_TLS_CERT"
KEY_ENV = "BAY_LIVE_TLS_KEY"
SELF_SIGNED = "self-signed"
#: Seconds a TLS handshake may take (a silent peer holds a pre-auth slot no longer).
TLS_HANDSHAKE_TIMEOUT = 5.0


@dataclass(frozen=True)
class TlsFiles:
    cert: Path
    key: Path
    self_signed: bool


@dataclass(frozen=True)
class Listen:
    """The server's address and what browsers use to reach it."""

    host: str
    """The address bound (an IP literal; ``0.0.0.0`` or ``::`` for every address)."""
    port: int
    """0: an ephemeral port."""
    loopback: bool
    public_url: str | None
    """The base printed in links (a reverse proxy's address), without a trailing slash."""
    tls: TlsFiles | None

    @property
    def wildcard(self) -> bool:
        return ipaddress.ip_address(self.host).is_unspecified

    @property
    def scheme(self) -> str:
        return "https" if self.tls is not None else "http"

    @property
    def secure(self) -> bool:
        """Browsers reach it over TLS (here, or at the reverse proxy): cookies get Secure."""
        if self.public_url is not None:
            return urlsplit(self.public_url).scheme == "https"
        return self.tls is not None

    @property
    def prefix(self) -> str:
        """The public URL's path (a proxy that serves the view under ``/bay``): cookies are
        scoped under it, since that is the path the browser sees."""
        if self.public_url is None:
            return ""
        return urlsplit(self.public_url).path.rstrip("/")

    def host_names(self) -> list[str]:
        """The names (without port) this server is reached by directly."""
        if self.loopback:
            names = ["127.0.0.1", "localhost"]
            if self.host not in names:
                names.insert(0, self.host)
            return names
        if self.wildcard:
            return [socket.gethostname(), "127.0.0.1", "localhost"]
        return [self.host]

    def hosts(self, port: int) -> list[str]:
        """Every ``Host`` header a request may carry (DNS rebinding: any other is refused)."""
        hosts = [f"{_bracket(name)}:{port}" for name in self.host_names()]
        if self.public_url is not None:
            hosts.append(urlsplit(self.public_url).netloc)
        return hosts

    def origins(self, port: int) -> list[str]:
        """Every ``Origin`` a WebSocket of our own page may carry."""
        origins = [f"{self.scheme}://{h}" for h in self.hosts(port)[: len(self.host_names())]]
        if self.public_url is not None:
            public = urlsplit(self.public_url)
            origins.append(f"{public.scheme}://{public.netloc}")
        return origins

    def base(self, port: int) -> str:
        """What a link starts with: the public URL, else this server's own address."""
        if self.public_url is not None:
            return self.public_url
        return f"{self.scheme}://{_bracket(self.host_names()[0])}:{port}"

    @property
    def bind_words(self) -> str:
        return f"{_bracket(self.host)}:{self.port or '<ephemeral>'}"


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _usage(detail: str) -> Refusal:
    return Refusal("usage", detail=detail, verb="live")


def parse_bind(value: str) -> tuple[str, int]:
    """``HOST[:PORT]`` (``[v6]:PORT`` for IPv6); HOST an IP address or ``localhost``."""
    text = value.strip()
    port = 0
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        if rest and not rest.startswith(":"):
            raise _usage(f"{BIND_ENV}={value!r} is not HOST[:PORT] ([v6]:PORT for IPv6)")
        port_text = rest[1:]
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    else:
        host, port_text = text, ""
    if host == "localhost":
        host = "127.0.0.1"
    try:
        ipaddress.ip_address(host)
        if port_text:
            port = int(port_text)
        if not 0 <= port <= 65535:
            raise ValueError(port)
    except ValueError:
        raise _usage(
            f"{BIND_ENV}={value!r} is not HOST[:PORT] with HOST an IP address of this machine "
            "(or localhost) and PORT 0-65535"
        ) from None
    return host, port


def read_listen(env: Mapping[str, str], state: Path) -> Listen:
    """The live view's address and TLS from the keeper's environment (``state``: where a
    self-signed certificate is kept). Raises the refusal when they do not hold together."""
    host, port = parse_bind(env.get(BIND_ENV) or "127.0.0.1")
    loopback = ipaddress.ip_address(host).is_loopback
    public = (env.get(PUBLIC_URL_ENV) or "").strip().rstrip("/") or None
    if public is not None:
        parts = urlsplit(public)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.query:
            raise _usage(
                f"{PUBLIC_URL_ENV}={public!r} is not an http(s) base URL "
                "(https://host[:port][/prefix])"
            )
    cert, key = env.get(CERT_ENV) or "", env.get(KEY_ENV) or ""
    mode = (env.get(TLS_ENV) or "").strip().lower()
    if mode not in ("", "off", "0", SELF_SIGNED):
        raise _usage(f"{TLS_ENV}={mode!r}: the one value is {SELF_SIGNED} (or set {CERT_ENV})")
    tls: TlsFiles | None = None
    if cert or key:
        if not (cert and key):
            missing = KEY_ENV if cert else CERT_ENV
            raise Refusal(
                "tls_unreadable",
                what="certificate" if not cert else "key",
                reason=f"{missing} is not set ({CERT_ENV} and {KEY_ENV} go together)",
                fix=f"set {missing} too (PEM files), or unset both",
            )
        tls = TlsFiles(Path(cert), Path(key), self_signed=False)
    elif mode == SELF_SIGNED:
        where = state / "liveview-tls"
        tls = TlsFiles(where / "self-signed.pem", where / "self-signed.key", self_signed=True)
    listen = Listen(host, port, loopback, public, tls)
    if not loopback and tls is None:
        raise Refusal("no_tls", bind=listen.bind_words)
    return listen


def tls_context(listen: Listen) -> tuple[ssl.SSLContext, str] | None:
    """The server's TLS context and its certificate's SHA-256 fingerprint (``AB:CD:…``),
    making the self-signed certificate first if needed. Blocking: run it in a thread."""
    files = listen.tls
    if files is None:
        return None
    if files.self_signed:
        names = listen.host_names()
        if listen.public_url is not None:
            names.append(urlsplit(listen.public_url).hostname or "")
        _ensure_self_signed(files, [n for n in names if n])
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        pem = files.cert.read_bytes()
        context.load_cert_chain(str(files.cert), str(files.key))
        der = ssl.PEM_cert_to_DER_cert(pem.decode("ascii", "replace"))
    except (OSError, ssl.SSLError, ValueError) as exc:
        raise Refusal(
            "tls_unreadable",
            what=f"certificate {files.cert} and key {files.key}",
            reason=_why(exc),
            fix=(
                f"point {CERT_ENV} and {KEY_ENV} at a readable PEM certificate and its key"
                if not files.self_signed
                else f"remove {files.cert.parent} (it is made again)"
            ),
        ) from None
    return context, fingerprint(der)


def _why(exc: BaseException) -> str:
    if isinstance(exc, FileNotFoundError):
        return f"no such file: {exc.filename}"
    if isinstance(exc, PermissionError):
        return f"not readable: {exc.filename}"
    if isinstance(exc, ssl.SSLError):
        return f"not a PEM certificate and matching key ({exc.reason or exc})"
    return str(exc) or type(exc).__name__


def _ensure_self_signed(files: TlsFiles, names: list[str]) -> None:
    """Keep the certificate there if it covers ``names`` for a week more; else make one."""
    try:
        ensure_self_signed(files.cert, files.key, names, "browserbay live view")
    except OSError as exc:
        raise Refusal(
            "tls_unreadable",
            what=f"self-signed certificate in {files.cert.parent}",
            reason=f"it cannot be written: {exc.strerror or exc}",
            fix=f"make {files.cert.parent} writable by the keeper's user",
        ) from None
