"""Connection caps for the keeper's loopback WebSocket listeners: the live view and the scoped
CDP endpoint (both ``websockets`` servers on 127.0.0.1, inside the keeper).

Any local user can connect to a loopback port, and on loopback every peer is 127.0.0.1: a
source address tells users apart no better than a port does. What an unauthenticated peer
can take is bounded instead: each connection must finish its opening handshake (the HTTP
request that carries its credential) within ``PREAUTH_TIMEOUT``, and at most
``MAX_PREAUTH`` connections of a listener may be in that state at once — more are closed as
they are accepted. A peer that holds a credential is the credential: each caps its own
connections (``MAX_PER_CREDENTIAL``), and a listener opens at most ``MAX_OPEN`` in all
(:func:`refusal`, checked by the listener before its handshake completes). Accept errors
(``EMFILE``) are asyncio's: it backs off 1 s and goes on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from websockets.asyncio.server import ServerConnection

#: Seconds a connection has to send its whole opening request.
PREAUTH_TIMEOUT = 5.0
#: Connections of one listener still in their opening handshake.
MAX_PREAUTH = 64
#: Open WebSocket connections one credential (a live-view link, a scoped CDP URL) may hold.
MAX_PER_CREDENTIAL = 16
#: Open WebSocket connections of one listener, whatever their credentials.
MAX_OPEN = 256


def capped_connection(max_preauth: int = MAX_PREAUTH) -> type[ServerConnection]:
    """A ``ServerConnection`` class (``serve(create_connection=...)``) that is closed as it
    is accepted when ``max_preauth`` others are still in their handshake."""
    from websockets.asyncio.connection import Connection
    from websockets.asyncio.server import ServerConnection

    class Capped(ServerConnection):
        def connection_made(self, transport: Any) -> None:
            server = self.server
            pending = len(server.handler_tasks) - len(server.all_connections)
            if pending >= max_preauth:
                Connection.connection_made(self, transport)
                transport.abort()
                return
            super().connection_made(transport)

    return Capped


def refusal(conn: ServerConnection, held: int) -> tuple[int, str] | None:
    """(status, text) when a connection whose credential already holds ``held`` others may
    not open (the credential's cap, or the listener's), else None."""
    if held >= MAX_PER_CREDENTIAL:
        return 429, f"this credential has {MAX_PER_CREDENTIAL} connections open already\n"
    if len(conn.server.all_connections) >= MAX_OPEN:
        return 503, f"this listener has {MAX_OPEN} connections open already\n"
    return None
