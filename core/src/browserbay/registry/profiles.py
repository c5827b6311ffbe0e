"""Persistent profiles (migration 2) and their provider options (migration 4)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from browserbay.registry.db import Database


@dataclass(frozen=True)
class ProfileRow:
    id: str
    label: str
    provider: str
    dir: str
    proxy: str | None
    allowed_domains: tuple[str, ...]
    headed: bool
    adopted: bool
    created_at: float
    last_used: float | None
    options: Mapping[str, str] = field(default_factory=dict)
    """Provider options (migration 4): ``{"cdp_url": ...}`` for a ``cdp`` profile."""


class Profiles(Protocol):
    """The profiles the keeper made or adopted."""

    def create(self, row: ProfileRow) -> None: ...
    def delete(self, profile_id: str) -> None:
        """The profile and everything that names it (attachments, kept tabs, its hold,
        group defaults, its proposal and version record), in one write."""

    def used(self, profile_id: str) -> None: ...
    def all(self) -> list[ProfileRow]:
        """Every profile, oldest first."""

    def set_backend(self, profile_id: str, provider: str, options: Mapping[str, str]) -> None:
        """A switch: the profile's provider and options in one write; it settles the
        profile's proposal, if any."""


_COLS = (
    "id, label, provider, dir, proxy, allowed_domains, headed, adopted, created_at, last_used, "
    "options"
)


class SqliteProfiles:
    def __init__(self, db: Database):
        self.db = db

    def create(self, row: ProfileRow) -> None:
        self.db.execute(
            f"INSERT INTO profiles({_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",  # noqa: S608 - a constant
            (
                row.id,
                row.label,
                row.provider,
                row.dir,
                row.proxy,
                json.dumps(list(row.allowed_domains)),
                int(row.headed),
                int(row.adopted),
                row.created_at,
                row.last_used,
                json.dumps(dict(row.options)),
            ),
        )

    def delete(self, profile_id: str) -> None:
        self.db.tx(
            ("DELETE FROM attachments WHERE profile=?", (profile_id,)),
            ("DELETE FROM kept_tabs WHERE profile=?", (profile_id,)),
            ("DELETE FROM holds WHERE profile=?", (profile_id,)),
            ("DELETE FROM group_defaults WHERE profile=?", (profile_id,)),
            ("DELETE FROM backend_proposals WHERE profile=?", (profile_id,)),
            ("DELETE FROM profile_versions WHERE profile=?", (profile_id,)),
            ("DELETE FROM profiles WHERE id=?", (profile_id,)),
        )

    def used(self, profile_id: str) -> None:
        self.db.execute("UPDATE profiles SET last_used=? WHERE id=?", (time.time(), profile_id))

    def all(self) -> list[ProfileRow]:
        rows = self.db.execute(
            f"SELECT {_COLS} FROM profiles ORDER BY created_at"  # noqa: S608 - a constant
        ).fetchall()
        return [
            ProfileRow(
                r[0],
                r[1],
                r[2],
                r[3],
                r[4],
                tuple(json.loads(r[5])),
                bool(r[6]),
                bool(r[7]),
                r[8],
                r[9],
                json.loads(r[10] or "{}"),
            )
            for r in rows
        ]

    def set_backend(self, profile_id: str, provider: str, options: Mapping[str, str]) -> None:
        self.db.tx(
            (
                "UPDATE profiles SET provider=?, options=? WHERE id=?",
                (provider, json.dumps(dict(options)), profile_id),
            ),
            ("DELETE FROM backend_proposals WHERE profile=?", (profile_id,)),
        )
