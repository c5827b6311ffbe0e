"""The audit trail holds a verb's row until its answer has left, and nobody who reads the
trail after the answer misses it (browserbay.keeper.audit)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from browserbay.keeper.audit import PENDING_LIMIT, AuditTrail
from browserbay.model import SessionRef, VerbCall
from browserbay.registry import AuditRow

T = TypeVar("T")


class Written:
    """An audit repository that keeps what it was given."""

    def __init__(self) -> None:
        self.verbs: list[str] = []

    def record(
        self,
        session: str,
        profile: str | None,
        verb: str,
        ok: bool,
        code: str | None,
        road: str | None = None,
        actor: str | None = None,
    ) -> None:
        self.verbs.append(verb)

    def rows(self, profile_id: str | None, limit: int) -> list[AuditRow]:
        return []


async def inline(fn: Callable[..., T], *args: Any) -> T:
    return fn(*args)


def call(verb: str) -> VerbCall:
    return VerbCall(verb, {}, SessionRef("a", "env"), None, "cli", "owner")


@pytest.mark.anyio
async def test_a_held_row_is_written_by_the_flush_after_the_answer() -> None:
    written = Written()
    trail = AuditTrail(written, inline)
    await trail.later(call("get"), True, None)
    assert written.verbs == []  # the answer has not left yet
    await trail.flush()
    assert written.verbs == ["get"]


@pytest.mark.anyio
async def test_reading_the_trail_writes_the_held_rows_first() -> None:
    written = Written()
    trail = AuditTrail(written, inline)
    await trail.later(call("open"), True, None)
    await trail.later(call("click"), False, "ref_stale")
    await trail.rows(None, 10)
    assert written.verbs == ["open", "click"]


@pytest.mark.anyio
async def test_rows_past_the_limit_are_written_at_once() -> None:
    written = Written()
    trail = AuditTrail(written, inline)
    for _ in range(PENDING_LIMIT + 1):
        await trail.later(call("get"), True, None)
    assert len(written.verbs) == PENDING_LIMIT + 1
