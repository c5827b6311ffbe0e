"""The audit trail: one registry row per verb and per guarded action, whatever its road, with
who acted (the call's ``actor``: the channel it came in on, or the trigger intake)."""

from __future__ import annotations

import logging
from collections import deque

from browserbay.keeper.faults import is_disk_full
from browserbay.model import VerbCall
from browserbay.registry import Audit, AuditRow, Db

log = logging.getLogger("browserbay.keeper")

#: Verb rows held for after their answers left (:meth:`AuditTrail.later`) before one is
#: written inline instead: what a client that never reads its answers can pile up.
PENDING_LIMIT = 256


class AuditTrail:
    def __init__(self, audit: Audit, db: Db) -> None:
        self.audit = audit
        self.db = db
        self.failures = 0
        """Audit rows that could not be written (a full disk): logged, counted, never a
        verb's failure."""
        self._pending: deque[tuple[VerbCall, bool, str | None]] = deque()
        """Verbs answered whose rows are not written yet (see :meth:`later`)."""

    async def later(self, call: VerbCall, ok: bool, code: str | None) -> None:
        """The verb's row, held until its answer has left (:meth:`flush`, which the daemon
        calls once it sent the answer): a warm verb's answer does not wait for a registry
        hop (a worker thread and an SQLite commit, ~0.5-1 ms). Held before the answer leaves,
        so whoever reads the trail after it (:meth:`rows`, ``bay keeper status``) flushes
        it first and finds it; past :data:`PENDING_LIMIT` held rows it is written now."""
        self._pending.append((call, ok, code))
        if len(self._pending) > PENDING_LIMIT:
            await self.flush()

    async def flush(self) -> None:
        """Write every held row (in the order held); a keeper's stop flushes the rest."""
        while self._pending:
            await self.write(*self._pending.popleft())

    async def write(self, call: VerbCall, ok: bool, code: str | None) -> None:
        """The verb's audit row. A row that cannot be written (a full disk, a broken
        registry) is logged and counted (``audit_failures`` in ``bay keeper status``); it
        never changes the verb's answer, which is already decided."""
        profile = call.profile.id if call.profile else None
        try:
            await self.db(
                self.audit.record,
                call.session.id,
                profile,
                call.verb,
                ok,
                code,
                call.road,
                call.actor,
            )
        except Exception as exc:
            self.failures += 1
            log.warning(
                "audit row of %s not written (%d so far): %s",
                call.verb,
                self.failures,
                "disk full" if is_disk_full(exc) else type(exc).__name__,
            )

    async def rows(self, profile_id: str | None, last: int) -> list[AuditRow]:
        """The newest ``last`` rows, of one profile or of all (``bay audit``)."""
        await self.flush()
        return await self.db(self.audit.rows, profile_id, last)
