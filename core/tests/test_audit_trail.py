"""The audit trail holds a verb's row until its answer has left, and nobody who reads the
trail after the answer misses it (browserbay.keeper.audit)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from browserbay.keeper.audit import PENDING_LIMIT, AuditTrail
from browserbay.model import SessionRef, VerbCall
from browserbay.registry import Audit, open_sqlite

T = TypeVar("T")


@pytest.fixture
def audit(tmp_path: Path) -> Iterator[Audit]:
    """The registry's real audit repository, in a SQLite file of the test's."""
    registry = open_sqlite(tmp_path / "registry.db")
    yield registry.audit
    registry.close()


def written(audit: Audit) -> list[str]:
    """The verbs of the rows the registry holds, oldest first."""
    return [row.verb for row in audit.rows(None, 1000)]


async def inline(fn: Callable[..., T], *args: Any) -> T:
    return fn(*args)


def call(verb: str) -> VerbCall:
    return VerbCall(verb, {}, SessionRef("a", "env"), None, "cli", "owner")


@pytest.mark.anyio
async def test_a_held_row_is_written_by_the_flush_after_the_answer(audit: Audit) -> None:
    trail = AuditTrail(audit, inline)
    await trail.later(call("get"), True, None)
    assert written(audit) == []  # the answer has not left yet
    await trail.flush()
    assert written(audit) == ["get"]


@pytest.mark.anyio
async def test_reading_the_trail_writes_the_held_rows_first(audit: Audit) -> None:
    trail = AuditTrail(audit, inline)
    await trail.later(call("open"), True, None)
    await trail.later(call("click"), False, "ref_stale")
    await trail.rows(None, 10)
    assert written(audit) == ["open", "click"]


@pytest.mark.anyio
async def test_rows_past_the_limit_are_written_at_once(audit: Audit) -> None:
    trail = AuditTrail(audit, inline)
    for _ in range(PENDING_LIMIT + 1):
        await trail.later(call("get"), True, None)
    assert len(written(audit)) == PENDING_LIMIT + 1
