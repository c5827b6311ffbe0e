"""The child process of ``bay run``: connects to the session-scoped endpoint (its URL, which
carries the lease's credential, is the first line of stdin: never on argv), binds ``page``
(the session's current tab), ``context`` and ``browser``, and runs the script with top-level
``await`` (Playwright's async API) under one deadline.

Every Playwright call the script makes through ``page``/``context``/``browser`` (and the
locators, frames and handles they return) is named while it is in flight, so a deadline says
which call it cut. The outcome goes to ``--status`` as JSON; exit 0 ok, 1 error, 124 deadline.
Never imported by the keeper.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import contextlib
import inspect
import json
import os
import sys
import threading
import time
import traceback
import types
from collections.abc import Awaitable, Callable
from typing import Any

#: Playwright classes whose calls are traced (their results are traced in turn).
TRACED = frozenset(
    {
        "Page",
        "Frame",
        "Locator",
        "FrameLocator",
        "ElementHandle",
        "JSHandle",
        "Keyboard",
        "Mouse",
        "Touchscreen",
        "BrowserContext",
        "Browser",
        "Response",
        "Request",
    }
)
IDLE = "(the script's own code, between Playwright calls)"
INFLIGHT: list[str] = ["(starting: Playwright's driver, then the session's endpoint)"]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _label(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    words = [_short(a) for a in args] + [f"{k}={_short(v)}" for k, v in kwargs.items()]
    return f"{name}({', '.join(words)})"


def _wrappable(value: Any) -> bool:
    cls = type(value)
    return cls.__name__ in TRACED and cls.__module__.startswith("playwright")


def unwrap(value: Any) -> Any:
    return value._bay_target if isinstance(value, Traced) else value


def wrap(value: Any, name: str) -> Any:
    if _wrappable(value):
        return Traced(value, name)
    if isinstance(value, list) and value and all(_wrappable(v) for v in value):
        return [Traced(v, f"{name}[{i}]") for i, v in enumerate(value)]
    return value


class Traced:
    """A Playwright object whose calls say their name while they run."""

    __slots__ = ("_bay_name", "_bay_target")

    def __init__(self, target: Any, name: str):
        object.__setattr__(self, "_bay_target", target)
        object.__setattr__(self, "_bay_name", name)

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._bay_target, attr)
        name = f"{self._bay_name}.{attr}"
        if callable(value) and not _wrappable(value):
            return _traced_call(value, name)
        return wrap(value, name)

    def __setattr__(self, attr: str, value: Any) -> None:
        setattr(self._bay_target, attr, value)

    def __repr__(self) -> str:
        return repr(self._bay_target)

    def __eq__(self, other: object) -> bool:
        return bool(self._bay_target == unwrap(other))

    def __hash__(self) -> int:
        return hash(self._bay_target)


def _traced_call(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        label = _label(name, args, kwargs)
        result = fn(*[unwrap(a) for a in args], **{k: unwrap(v) for k, v in kwargs.items()})
        if inspect.isawaitable(result) and type(result).__name__ != "EventContextManagerImpl":
            return _awaiting(result, label)
        return wrap(result, label)

    return call


async def _awaiting(awaitable: Awaitable[Any], label: str) -> Any:
    INFLIGHT[0] = label
    try:
        value = await awaitable
    except asyncio.CancelledError:
        raise  # cut by the deadline: it names this call
    except BaseException:
        INFLIGHT[0] = IDLE + f"; the last call was {label}"
        raise
    INFLIGHT[0] = IDLE + f"; the last call was {label}"
    return wrap(value, label)


def _script_line(exc: BaseException, script: str) -> int | None:
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == script:
            line = frame.lineno
    return line


def _write(path: str, status: dict[str, Any]) -> None:
    # 0600: the status can carry the page's own words (an error it raised).
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(status, f)


async def _find_page(context: Any, target: str) -> Any:
    for page in context.pages:
        session = await context.new_cdp_session(page)
        try:
            info = await session.send("Target.getTargetInfo")
        finally:
            await session.detach()
        if info["targetInfo"]["targetId"] == target:
            return page
    raise LookupError(f"the session's tab {target} is not visible through the endpoint")


async def run(args: argparse.Namespace) -> int:
    from playwright.async_api import async_playwright, expect

    script = args.script
    source = args.source
    try:
        code = compile(source, script, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except SyntaxError as exc:
        print(f"SyntaxError: {exc.msg} ({script}, line {exc.lineno})", file=sys.stderr)
        _write(
            args.status, {"status": "error", "error": f"SyntaxError: {exc.msg}", "line": exc.lineno}
        )
        return 1
    loop_deadline = asyncio.get_running_loop().time() + (args.deadline_at - time.time())
    # Never stopped: the process ends with os._exit as soon as the outcome is written.
    pw = await async_playwright().start()
    for fd in (1, 2):  # the Node driver shares our pipe and made it non-blocking
        with contextlib.suppress(OSError):
            os.set_blocking(fd, True)
    INFLIGHT[0] = "connecting to the session's endpoint"
    browser = await pw.chromium.connect_over_cdp(args.endpoint)
    context = browser.contexts[0]
    page = await _find_page(context, args.target)
    INFLIGHT[0] = IDLE
    namespace: dict[str, Any] = {
        "__name__": "__main__",
        "__file__": script,
        "page": Traced(page, "page"),
        "context": Traced(context, "context"),
        "browser": Traced(browser, "browser"),
        "expect": lambda actual, *a, **k: expect(unwrap(actual), *a, **k),
        "asyncio": asyncio,
    }
    left = max(0.1, loop_deadline - asyncio.get_running_loop().time())
    try:
        async with asyncio.timeout(left) as budget:
            outcome = types.FunctionType(code, namespace)()
            if inspect.iscoroutine(outcome):
                await outcome
    except TimeoutError:
        if budget.expired():
            _write(args.status, {"status": "deadline", "call": INFLIGHT[0]})
            return 124
        raise
    _write(args.status, {"status": "ok"})
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m browserbay_cdp.runner")
    parser.add_argument("--target", required=True)
    parser.add_argument("--deadline-at", type=float, required=True, help="time.time() to end by")
    parser.add_argument("--status", required=True)
    parser.add_argument("script")
    args = parser.parse_args()
    args.endpoint = sys.stdin.readline().strip()
    if not args.endpoint.startswith("ws://"):
        parser.error("the endpoint is the first line of stdin")
    # Line-buffered (never unbuffered: a raw pipe write may be partial and lose output).
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(line_buffering=True)
    args.script = os.path.abspath(args.script)
    with open(args.script, encoding="utf-8") as f:
        args.source = f.read()

    def watchdog() -> None:  # synchronous code that never yields cannot be cancelled
        _write(args.status, {"status": "deadline", "call": INFLIGHT[0] + " (it never yielded)"})
        sys.stdout.flush()
        os._exit(124)

    timer = threading.Timer(max(0.0, args.deadline_at - time.time()) + 1.5, watchdog)
    timer.daemon = True
    timer.start()
    try:
        code = asyncio.run(run(args))
    except Exception as exc:
        script = os.path.abspath(args.script)
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == script]
        print("Traceback (the script's frames):", file=sys.stderr)
        print("".join(traceback.format_list(frames)), end="", file=sys.stderr)
        first = (str(exc).strip().splitlines() or [""])[0]
        error = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
        print(error, file=sys.stderr)
        _write(
            args.status,
            {
                "status": "error",
                "error": error,
                "line": _script_line(exc, script),
                "call": INFLIGHT[0],
            },
        )
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
