"""Progress lines: what a verb says while it still runs (a link a human must open before the
verb can end). The daemon installs a sink for a request whose frame asked for progress; a
verb's handler calls :func:`say_progress`. Standard library only."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar

Sink = Callable[[str], Awaitable[None]]

#: The sink of the request being served (set by the daemon per request).
SINK: ContextVar[Sink | None] = ContextVar("bay_progress_sink", default=None)


async def say_progress(text: str) -> bool:
    """Send ``text`` to the client now; False when the client asked for no progress."""
    sink = SINK.get()
    if sink is None:
        return False
    await sink(text)
    return True
