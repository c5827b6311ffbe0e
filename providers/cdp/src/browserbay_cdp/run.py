"""``bay run script.py``: a Python script with ``page`` bound to the session's current tab,
run in a child process that reaches the browser only through the session-scoped endpoint.

Its output (stdout and stderr, merged) is streamed to the caller as progress lines while it
runs; past :data:`STREAM_HEAD` characters streaming stops, and at the end either the rest is
said (:data:`MAX_OUTPUT` or less in all) or the full text is spilled to a file under the
outputs directory and the last :data:`TAIL` characters follow a marker that names it. A
caller that asked for no progress lines gets the same text in the answer.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process

from browserbay.model import VerbContext
from browserbay.refusals import Refusal

#: Output longer than this is cut (the same limit the ``bay`` client applies to answers).
MAX_OUTPUT = 50_000
#: Characters streamed live before the rest is held back.
STREAM_HEAD = 45_000
#: Characters shown after the marker when the output is cut.
TAIL = 5_000
#: Seconds kept back from the verb's deadline for the child to report and the answer.
MARGIN = 1.0


def outputs_dir() -> Path:
    from browserbay.paths import bay_paths

    return bay_paths().ensure().outputs


class Output:
    """The script's output: streamed line by line up to :data:`STREAM_HEAD` characters, the
    rest held back; past :data:`MAX_OUTPUT` the full text goes to a file and only the last
    :data:`TAIL` characters are said, after a marker that names the file."""

    def __init__(self, ctx: VerbContext):
        self.ctx = ctx
        self.total = 0
        self.said: list[str] = []
        self.raw: list[str] = []
        self.partial = ""
        self.held = ""
        self.head_done = False
        self.spill: Any = None
        self.spill_path: Path | None = None
        self.streaming = True
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")

    async def say(self, text: str) -> None:
        text = text.removesuffix("\n")
        if not text:
            return
        self.said.append(text)
        if self.streaming:
            self.streaming = await self.ctx.progress(text)

    async def feed(self, data: bytes, final: bool = False) -> None:
        text = self.decoder.decode(data, final)
        if not text:
            return
        if self.head_done:
            self.held += text
        else:
            room = STREAM_HEAD - self.total
            head, rest = text[:room], text[room:]
            buf = self.partial + head
            if rest:  # the head is full: say it all, hold the rest
                self.partial, self.head_done = "", True
                self.held += rest
                await self.say(buf)
            else:
                cut = buf.rfind("\n")
                self.partial = buf[cut + 1 :]
                if cut >= 0:
                    await self.say(buf[:cut])
        self.total += len(text)
        if self.spill is not None:
            self.spill.write(text)
        else:
            self.raw.append(text)
            if self.total > MAX_OUTPUT:
                self._open_spill()
        if self.spill is not None:
            self.held = self.held[-TAIL:]

    def _open_spill(self) -> None:
        path = outputs_dir() / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-run.txt"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        self.spill = os.fdopen(fd, "w", encoding="utf-8")
        self.spill.write("".join(self.raw))
        self.raw = []
        self.spill_path = path

    async def finish(self) -> None:
        await self.feed(b"", final=True)
        if self.partial:
            await self.say(self.partial)
            self.partial = ""
        if self.spill is not None:
            self.spill.close()
            shown = sum(len(s) for s in self.said)
            await self.say(
                f"… [cut: {self.total:,} characters of output; {shown:,} above, the last "
                f"{len(self.held):,} below; the full text is in {self.spill_path}]"
            )
        await self.say(self.held)
        self.held = ""

    def data(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "output_chars": self.total,
            "output_file": str(self.spill_path) if self.spill_path else None,
            "streamed": self.streaming,
        }
        if not self.streaming:
            out["output"] = "\n".join(self.said)
        return out


def _child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BAY_")}
    env.pop("PYTHONUNBUFFERED", None)  # the runner line-buffers (a raw pipe may lose output)
    return env


async def run_script(
    ctx: VerbContext, endpoint: str, target: str, timeout: float
) -> dict[str, Any]:
    """Run the script through ``endpoint`` (the lease's grant's URL); ``timeout`` is the
    verb's own (for the words of a deadline)."""
    from browserbay_cdp.proxy import RUN_ROAD  # the proxy made the endpoint already

    script = Path(str(ctx.args["script"]))
    if not script.is_absolute() or not await anyio.to_thread.run_sync(script.is_file):
        raise Refusal("usage", detail=f"{script} is not a script file (give its path)", verb="run")
    budget = ctx.deadline - time.monotonic() - MARGIN
    if budget <= 0.2:
        raise Refusal("usage", detail="--timeout leaves no time to run the script", verb="run")
    status_path = outputs_dir() / f"run-{os.getpid()}-{time.monotonic_ns()}.json"
    argv = [
        sys.executable,
        "-m",
        "browserbay_cdp.runner",
        "--target",
        target,
        "--deadline-at",
        f"{time.time() + budget:.3f}",
        "--status",
        str(status_path),
        str(script),
    ]
    output = Output(ctx)
    started = time.monotonic()
    # The endpoint carries the lease's credential: on the child's stdin (one line, then
    # EOF), never on its argv (every local user reads /proc/<pid>/cmdline) or environment.
    process: Process = await anyio.open_process(
        argv, stdin=-1, stdout=-1, stderr=-2, cwd=str(script.parent), env=_child_env()
    )
    try:
        assert process.stdin is not None
        assert process.stdout is not None
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.send(f"{endpoint}?{RUN_ROAD}\n".encode())
        await process.stdin.aclose()
        with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError):
            while True:
                await output.feed(await process.stdout.receive(65536))
        code = await process.wait()
    finally:
        if process.returncode is None:  # cut (a takeover, the keeper's deadline): end it
            with anyio.CancelScope(shield=True):
                process.kill()
                with anyio.move_on_after(5):
                    await process.wait()
        with anyio.CancelScope(shield=True):
            await output.finish()
    status = await anyio.to_thread.run_sync(_read_status, status_path)
    elapsed = round(time.monotonic() - started, 2)
    name = str(script)
    data = dict(output.data(), exit=code, elapsed_s=elapsed)
    if status.get("status") == "deadline" or code == 124:
        raise Refusal(
            "script_deadline",
            script=name,
            timeout=round(timeout, 1),
            longer=round(timeout * 2),
            call=status.get("call") or "(unknown)",
            **data,
        )
    if code != 0 or status.get("status") != "ok":
        raise Refusal(
            "script_failed",
            script=name,
            error=status.get("error") or f"it exited with status {code}",
            line=status.get("line") or "?",
            **data,
        )
    return dict(data, script=name)


def _read_status(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        value = {}
    finally:
        with contextlib.suppress(OSError):
            path.unlink()
    return value if isinstance(value, dict) else {}
