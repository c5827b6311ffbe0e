"""Site hints (migration 5): claims that a host needs another tier or backend."""

from __future__ import annotations

from typing import Protocol

from browserbay.model import SiteHint
from browserbay.registry.db import Sql


class SiteHints(Protocol):
    def add(self, hint: SiteHint) -> None: ...
    def of(self, host: str | None = None) -> list[SiteHint]:
        """A host's hints in the order they were recorded (every host's, by host, if None)."""

    def forget(self, host: str) -> int:
        """Drop a host's hints; answers how many went."""


class SqliteSiteHints:
    def __init__(self, db: Sql):
        self.db = db

    def add(self, hint: SiteHint) -> None:
        self.db.execute(
            "INSERT INTO site_hints(host, tier, backend, by, at, why) VALUES (?, ?, ?, ?, ?, ?)",
            (hint.host, hint.tier, hint.backend or None, hint.by, hint.at, hint.why),
        )

    def of(self, host: str | None = None) -> list[SiteHint]:
        sql = "SELECT host, tier, backend, by, at, why FROM site_hints"
        if host is None:
            rows = self.db.execute(sql + " ORDER BY host, id").fetchall()
        else:
            rows = self.db.execute(sql + " WHERE host=? ORDER BY id", (host,)).fetchall()
        return [SiteHint(r[0], r[1], r[2], r[3], r[4], r[5]) for r in rows]

    def forget(self, host: str) -> int:
        return self.db.execute("DELETE FROM site_hints WHERE host=?", (host,)).rowcount
