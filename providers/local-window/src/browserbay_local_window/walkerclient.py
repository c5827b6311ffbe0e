"""The keeper's side of the AT-SPI walker: one child process per display, spoken to in JSON
lines, one request at a time, each under a deadline. A walker that does not answer in time is
killed (and started again by the next request): the keeper's event loop never waits on an
application's accessibility bus."""

from __future__ import annotations

import json
import logging
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

from browserbay_local_window import procs

log = logging.getLogger("browserbay.local_window")

WALKER = Path(__file__).with_name("walker.py")
START_TIMEOUT = 10.0
MAX_LINE = 64 * 1024 * 1024


class WalkerError(Exception):
    """The walker cannot answer: ``kind`` is ``unavailable`` (it cannot start or has no
    AT-SPI bus), ``timeout`` (it did not answer in time; it was ended), ``gone`` (the node or
    application is gone) or what the walker reported."""

    def __init__(self, kind: str, reason: str):
        super().__init__(f"{kind}: {reason}")
        self.kind = kind
        self.reason = reason


class WalkerClient:
    def __init__(self, python: str, env: dict[str, str], log_path: Path):
        self.python = python
        self.env = env
        self.log_path = log_path
        self.proc: anyio.abc.Process | None = None
        self.reader: BufferedByteReceiveStream | None = None
        self.lock = anyio.Lock()
        self.ids = 0
        self.restarts = 0

    async def _start(self) -> None:
        if not os.access(self.python, os.X_OK):
            raise WalkerError("unavailable", f"the walker's python {self.python} is not there")
        with open(self.log_path, "ab") as err:  # noqa: ASYNC230 - a local log file
            self.proc = await procs.spawn(
                [self.python, "-I", str(WALKER)],
                self.env,
                "AT-SPI walker",
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
            )
        assert self.proc.stdout is not None
        self.reader = BufferedByteReceiveStream(self.proc.stdout)
        try:
            with anyio.fail_after(START_TIMEOUT):
                line = await self.reader.receive_until(b"\n", MAX_LINE)
            ready = json.loads(line)
            if not ready.get("ready"):
                raise ValueError(line)
        except (TimeoutError, anyio.EndOfStream, anyio.IncompleteRead, ValueError) as exc:
            await self._kill()
            raise WalkerError("unavailable", self._last_error() or repr(exc)) from None

    def _last_error(self) -> str:
        """The last line the walker wrote on stderr (an ImportError when the python has no
        PyGObject or Atspi typelib)."""
        try:
            lines = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return lines[-1][-300:] if lines else ""

    async def _kill(self) -> None:
        proc, self.proc, self.reader = self.proc, None, None
        if proc is not None:
            with anyio.CancelScope(shield=True):
                await procs.end(proc, grace=0.5)

    async def request(self, op: str, timeout: float, **fields: Any) -> dict[str, Any]:
        """One request; its answer (``ok`` true) or :class:`WalkerError`. ``timeout`` bounds
        the whole exchange, the walker's start and the wait for an earlier request included.
        A walker interrupted mid-exchange is ended (its next answer could not be trusted)."""
        with anyio.fail_after(max(0.1, timeout)):
            async with self.lock:
                return await self._exchange(op, fields)

    async def _exchange(self, op: str, fields: dict[str, Any]) -> dict[str, Any]:
        try:
            if self.proc is None or self.proc.returncode is not None:
                if self.proc is not None:
                    self.restarts += 1
                    await self._kill()
                await self._start()
            assert self.proc is not None
            assert self.proc.stdin is not None
            assert self.reader is not None
            self.ids += 1
            frame = json.dumps({"id": self.ids, "op": op, **fields}).encode() + b"\n"
            await self.proc.stdin.send(frame)
            line = await self.reader.receive_until(b"\n", MAX_LINE)
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, OSError):
            await self._kill()
            raise WalkerError("unavailable", self._last_error() or "the walker exited") from None
        except WalkerError:
            raise
        except BaseException:
            await self._kill()
            raise
        answer: dict[str, Any] = json.loads(line)
        if not answer.get("ok"):
            raise WalkerError(str(answer.get("kind", "error")), str(answer.get("error", "")))
        return answer

    async def call(self, op: str, timeout: float, **fields: Any) -> dict[str, Any]:
        """:meth:`request`, with a timeout turned into ``WalkerError("timeout")``."""
        try:
            return await self.request(op, timeout, **fields)
        except TimeoutError:
            raise WalkerError(
                "timeout", f"the accessibility walker did not answer '{op}' within {timeout:.1f}s"
            ) from None

    async def close(self) -> None:
        if self.proc is not None and self.proc.stdin is not None:
            with anyio.move_on_after(0.5):
                await self.proc.stdin.aclose()
        await self._kill()
