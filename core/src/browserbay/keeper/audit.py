"""The audit trail: one registry row per verb and per guarded action, whatever its road, with
who acted (the call's ``actor``: the channel it came in on, or the trigger intake)."""

from __future__ import annotations

import logging

from browserbay.keeper.faults import is_disk_full
from browserbay.model import VerbCall
from browserbay.registry import Audit, AuditRow, Db

log = logging.getLogger("browserbay.keeper")


class AuditTrail:
    def __init__(self, audit: Audit, db: Db) -> None:
        self.audit = audit
        self.db = db
        self.failures = 0
        """Audit rows that could not be written (a full disk): logged, counted, never a
        verb's failure."""

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
        return await self.db(self.audit.rows, profile_id, last)
