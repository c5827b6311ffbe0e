"""Playwright's connection over a driver that :mod:`browserbay.keeper.early` spawned before
Playwright was imported.

Playwright's public API always spawns its driver itself (``async_playwright()``); its client
(``playwright._impl.out_of_process.PlaywrightClient``) takes the pipe transport by name. So
this module, the one place that reaches into Playwright's ``_impl`` (pinned in uv.lock;
tests/test_keeper_start.py runs a keeper through it), gives the client a transport around
the running process: the same pipes (stdin/stdout, Playwright's length-prefixed JSON), the
same connection, the same ``Playwright`` object — no port, nothing another process can
reach.
"""

from __future__ import annotations

import asyncio
import subprocess
from typing import Any, cast

from playwright._impl.connection import Connection
from playwright._impl.out_of_process import PlaywrightClient
from playwright._impl.transport import PipeTransport
from playwright.async_api import Playwright

from browserbay.keeper.early import EarlyDriver


class _Process:
    """What :class:`PipeTransport` uses of an ``asyncio.subprocess.Process``: its two
    streams and ``communicate()`` (here: wait for the exit, without holding the loop)."""

    def __init__(
        self, proc: subprocess.Popen[bytes], stdout: asyncio.StreamReader, stdin: Any
    ) -> None:
        self.popen = proc
        self.stdout = stdout
        self.stdin = stdin

    async def communicate(self) -> None:
        await asyncio.to_thread(self.popen.wait)


class _EarlyTransport(PipeTransport):
    """Playwright's pipe transport, connected to a process that runs already."""

    def __init__(self, loop: asyncio.AbstractEventLoop, early: EarlyDriver) -> None:
        super().__init__(loop)
        self._early = early

    async def connect(self) -> None:
        self._stopped_future = asyncio.Future()
        proc = self._early.proc
        try:
            if proc.stdin is None or proc.stdout is None or proc.poll() is not None:
                raise RuntimeError(f"the early driver is gone (exit code {proc.returncode})")
            reader = asyncio.StreamReader(limit=32768, loop=self._loop)
            await self._loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader, loop=self._loop), proc.stdout
            )
            transport, protocol = await self._loop.connect_write_pipe(
                lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader(loop=self._loop)),
                proc.stdin,
            )
            writer = asyncio.StreamWriter(transport, protocol, None, self._loop)
        except Exception as exc:
            self.on_error_future.set_exception(exc)
            raise
        # Duck-typed: run() and request_stop() use only what _Process has.
        self._proc = cast("asyncio.subprocess.Process", _Process(proc, reader, writer))
        self._output = writer


class _EarlyClient(PlaywrightClient):
    """``PlaywrightClient`` with the transport above (its ``_run`` and ``stop`` as they are)."""

    def __init__(self, early: EarlyDriver) -> None:
        loop = asyncio.get_running_loop()
        self._close_promise = loop.create_future()
        connection = Connection(loop)
        self._transport = transport = _EarlyTransport(loop, early)
        self._connection = connection
        connection.onmessage = lambda message: transport.send(message)

        def on_message(message: Any) -> None:
            try:
                connection.dispatch(message)
            except Exception as error:
                connection._on_event_listener_error(error)

        transport.on_message = on_message
        self._playwright = asyncio.ensure_future(self._run(connection))


class EarlyManager:
    """Playwright's context manager (``async_playwright()``: ``start`` and ``__aexit__``)
    over an early driver."""

    def __init__(self, early: EarlyDriver) -> None:
        self.early = early
        self._client: _EarlyClient | None = None

    async def start(self) -> Playwright:
        self._client = _EarlyClient(self.early)
        impl = await self._client._playwright
        playwright = Playwright(impl)
        return playwright

    async def __aexit__(self, *_exc: object) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.stop()
