"""What the keeper's services share: the answer shape and the small services every part is
given — the registry runner, the restart gate and the keeper's own lifecycle (see
:mod:`browserbay.keeper.app`, which composes them)."""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio

from browserbay.refusals import Refusal

T = TypeVar("T")
Answer = tuple[dict[str, Any], str]


class RegistryRunner:
    """Runs registry calls in one thread at a time, off the event loop: one lane (the
    registry is one SQLite connection, so its calls never interleave). Call it as ``await
    db(fn, *args)`` (it is the :class:`browserbay.registry.Db` every service is given). On
    PostgreSQL the keeper has three (``Schema.lanes``): the verbs', the audit rows', the
    heartbeat's — a call on one never waits for a call on another."""

    def __init__(self) -> None:
        self._limiter = anyio.CapacityLimiter(1)

    async def __call__(self, fn: Callable[..., T], *args: Any) -> T:
        return await anyio.to_thread.run_sync(functools.partial(fn, *args), limiter=self._limiter)


class RestartGate:
    """The profiles whose browser is restarting for a backend switch: a verb on one is
    refused ``browser_restarting`` before anything of it runs. Only the switch opens and
    closes the gap (:class:`browserbay.keeper.switch.BackendSwitch`)."""

    def __init__(self) -> None:
        self._restarting: dict[str, str] = {}
        """profile id -> the provider its browser is restarting on."""

    def check(self, profile_id: str, handle: str) -> None:
        """Refuse a verb on a profile in a switch's gap (``handle``: as the answer names it)."""
        target = self._restarting.get(profile_id)
        if target is not None:
            raise Refusal("browser_restarting", profile=handle, provider=target)

    def is_restarting(self, profile_id: str) -> bool:
        return profile_id in self._restarting

    def begin(self, profile_id: str, provider: str) -> None:
        self._restarting[profile_id] = provider

    def end(self, profile_id: str) -> None:
        self._restarting.pop(profile_id, None)


class Lifecycle:
    """The keeper process's own state: when it started, what its start swept, the requests
    in flight, and the stop that every loop (serving, housekeeping, triggers) watches."""

    def __init__(self, socket: Path) -> None:
        self._socket = socket
        self.started = time.time()
        self.stop_event = anyio.Event()
        self.swept: list[str] = []
        """Orphaned browsers the daemon's start swept (``bay keeper status`` lists them)."""
        self.inflight = 0
        self.last_request = time.monotonic()

    def begin_stop(self) -> None:
        """Stop taking new connections at once (a client arriving now starts the next
        keeper, which waits for our lock), then let the daemon shut down gracefully."""
        if not self.stop_event.is_set():
            with contextlib.suppress(OSError):
                self._socket.unlink()
        self.stop_event.set()
