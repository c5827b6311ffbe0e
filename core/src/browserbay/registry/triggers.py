"""Trigger requests (migrations 3 and 9): one record per request UUID, so that a request is
answered exactly once whatever happens — a repeated UUID, a ``kill -9`` at any step, a
result file that could not be written.

A record goes ``queued`` (admitted: its place in its session's FIFO, which a restart keeps)
→ ``claimed`` (taken off the queue; nothing of it has run) → ``acting`` (its action is about
to start: from here it may have taken effect) → ``done`` (its terminal result). A request
refused before admission is recorded ``done`` at once. The first terminal result is final:
nothing overwrites it. ``result_published`` says whether the result file was written.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Literal, Protocol, cast

from browserbay.registry.db import Sql

Phase = Literal["queued", "claimed", "acting", "done"]


@dataclass(frozen=True)
class TriggerRecord:
    uuid: str
    seq: int
    """Admission order (the FIFO of a session's requests)."""
    session: str | None
    request: str | None
    """The admitted request as validated (JSON); None for one refused before admission."""
    published_at: float | None
    """The request file's modification time (its age is measured from it)."""
    phase: Phase
    result: str | None
    """The terminal result (JSON), once ``done``."""
    result_published: bool


_SELECT = (
    "SELECT uuid, seq, session, request, published_at, phase, result, result_published "
    "FROM trigger_requests "
)


def _record(row: tuple[object, ...]) -> TriggerRecord:
    uuid, seq, session, request, published_at, phase, result, published = row
    return TriggerRecord(
        str(uuid),
        int(cast(int, seq)),
        cast("str | None", session),
        cast("str | None", request),
        cast("float | None", published_at),
        cast(Phase, phase),
        cast("str | None", result),
        bool(published),
    )


class TriggerClaims(Protocol):
    def record(self, uuid: str) -> TriggerRecord | None:
        """The UUID's record, or None for one never seen."""

    def admit(self, uuid: str, session: str, request: str, published_at: float) -> TriggerRecord:
        """Queue an admitted request (``queued``, after every earlier admission). A UUID
        already recorded is left as it is: its record is the answer."""

    def claim(self, uuid: str) -> TriggerRecord:
        """Take a ``queued`` request off its queue (``claimed``). Answers the record as it
        was before: ``queued`` means this call claimed it; any other phase is unchanged."""

    def acting(self, uuid: str) -> None:
        """A ``claimed`` request's action is about to start (``acting``): from now on an
        interruption may leave it done."""

    def finish(self, uuid: str, session: str | None, result: str) -> str:
        """The request's terminal result (``done``): the first one wins and is never
        overwritten — a UUID never admitted (refused while validating) is recorded here.
        Answers the result that stands."""

    def published(self, uuid: str) -> None:
        """Its result file was written."""

    def unsettled(self) -> list[TriggerRecord]:
        """Every record of this keeper not ``done`` or not published, in admission order:
        what its next start takes up before anything else (another keeper's are its own)."""


class SqliteTriggerClaims:
    """A keeper's trigger requests (migration 10: ``keeper_id``): they came through its
    home's intake directory, and only its own start takes up those left unsettled."""

    def __init__(self, db: Sql, keeper_id: str):
        self.db = db
        self.keeper_id = keeper_id

    def record(self, uuid: str) -> TriggerRecord | None:
        row = self.db.execute(_SELECT + "WHERE uuid=?", (uuid,)).fetchone()
        return _record(row) if row is not None else None

    def admit(self, uuid: str, session: str, request: str, published_at: float) -> TriggerRecord:
        self.db.execute(
            "INSERT INTO trigger_requests(uuid, session, request, published_at, phase, "
            "keeper_id) VALUES (?, ?, ?, ?, 'queued', ?) ON CONFLICT DO NOTHING",
            (uuid, session, request, published_at, self.keeper_id),
        )
        found = self.record(uuid)
        assert found is not None
        return found

    def claim(self, uuid: str) -> TriggerRecord:
        # One conditional update: of two claimers (two threads, two keepers on one server)
        # exactly one changes the row, on every backend, with no lock taken by hand.
        took = self.db.execute(
            "UPDATE trigger_requests SET phase='claimed', claimed_at=? "
            "WHERE uuid=? AND phase='queued'",
            (time.time(), uuid),
        ).rowcount
        now = self.record(uuid)
        if now is None:
            raise KeyError(uuid)
        return replace(now, phase="queued") if took else now

    def acting(self, uuid: str) -> None:
        self.db.execute(
            "UPDATE trigger_requests SET phase='acting' WHERE uuid=? AND phase='claimed'", (uuid,)
        )

    def finish(self, uuid: str, session: str | None, result: str) -> str:
        self.db.tx(
            (
                "INSERT INTO trigger_requests(uuid, session, phase, result, keeper_id) "
                "VALUES (?, ?, 'done', ?, ?) ON CONFLICT DO NOTHING",
                (uuid, session, result, self.keeper_id),
            ),
            (
                "UPDATE trigger_requests SET phase='done', result=? "
                "WHERE uuid=? AND result IS NULL",
                (result, uuid),
            ),
        )
        row = self.db.execute("SELECT result FROM trigger_requests WHERE uuid=?", (uuid,))
        return str(row.fetchone()[0])

    def published(self, uuid: str) -> None:
        self.db.execute("UPDATE trigger_requests SET result_published=1 WHERE uuid=?", (uuid,))

    def unsettled(self) -> list[TriggerRecord]:
        rows = self.db.execute(
            _SELECT + "WHERE (phase != 'done' OR result_published = 0) "
            "AND (keeper_id=? OR keeper_id IS NULL) ORDER BY seq",
            (self.keeper_id,),
        ).fetchall()
        return [_record(r) for r in rows]
